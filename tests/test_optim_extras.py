"""Rprop, ASGD and Adafactor (i12-extras): trajectories equal PyTorch's (each option combination),
NumPy transcriptions of their update rules, state layout, reprs, state_dict round trips and
PyTorch's argument errors."""
import copy
import pickle

import numpy as np
import pytest

import ember

try:
    import torch
except ImportError:  # CI has no torch
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
SHAPES = [(3, 4), (4,), (2, 3, 2)]


def initial_arrays():
    rng = np.random.default_rng(0)
    return [rng.uniform(-1, 1, size=s) for s in SHAPES]


def loss_fn(params, x):
    w, b, v = params
    r = x @ w + b - 0.5
    return (r ** 2).mean() + 0.1 * (v ** 4).sum() + 0.5 * (v ** 2).sum() + 0.1 * (v.sum() - b.sum()) ** 2


def run(lib, make_opt, steps=15):
    params = [lib.tensor(a, requires_grad=True) for a in initial_arrays()]
    x = lib.tensor(np.linspace(-1, 1, 12).reshape(4, 3))
    opt = make_opt(lib, params)
    history = []
    for _ in range(steps):
        opt.zero_grad()
        loss_fn(params, x).backward()
        opt.step()
        history.append([p.detach().numpy().copy() for p in params])
    return history, opt


CONFIGS = [
    ("Rprop", {}),
    ("Rprop", {"lr": 0.05, "etas": (0.3, 1.5), "step_sizes": (1e-3, 0.1), "maximize": True}),
    ("ASGD", {}),
    ("ASGD", {"lr": 0.05, "lambd": 1e-2, "alpha": 0.5, "t0": 5, "weight_decay": 0.1}),
    ("ASGD", {"lr": 0.05, "t0": 0, "maximize": True}),
    ("Adafactor", {}),
    ("Adafactor", {"lr": 0.05, "beta2_decay": -0.5, "eps": (1e-6, 1e-2), "d": 1.5, "weight_decay": 0.1}),
    ("Adafactor", {"maximize": True, "eps": (None, 0.0)}),
]


@needs_torch
@pytest.mark.parametrize("name,kwargs", CONFIGS)
def test_trajectory_matches_torch(name, kwargs):
    ours, opt = run(ember, lambda lib, ps: getattr(lib.optim, name)(ps, **kwargs))
    theirs, topt = run(torch, lambda lib, ps: getattr(lib.optim, name)(ps, **kwargs))
    for step, (a, b) in enumerate(zip(ours, theirs)):
        for pa, pb in zip(a, b):
            np.testing.assert_allclose(pa, pb, rtol=1e-10, atol=1e-12, err_msg=f"step {step + 1}")
    sd, tsd = opt.state_dict(), topt.state_dict()
    assert sd["param_groups"] == tsd["param_groups"]
    for i in tsd["state"]:
        assert list(sd["state"][i]) == list(tsd["state"][i])  # PyTorch's state keys, in its order
        for key, value in tsd["state"][i].items():
            np.testing.assert_allclose(sd["state"][i][key].numpy(), value.numpy(), rtol=1e-10, atol=1e-12)
            assert str(sd["state"][i][key].dtype).split(".")[-1] == str(value.dtype).split(".")[-1]
    assert repr(opt) == repr(topt)


def test_rprop_matches_numpy():
    p0 = np.array([1.0, -2.0, 3.0])
    grads = [np.array([1.0, 1.0, 0.0]), np.array([2.0, -1.0, 1.0]), np.array([-1.0, -1.0, 1.0])]
    p = ember.tensor(p0, requires_grad=True)
    opt = ember.optim.Rprop([p], lr=0.1, etas=(0.5, 2.0), step_sizes=(0.01, 0.3))
    ref, prev, size = p0.copy(), np.zeros(3), np.full(3, 0.1)
    for g in grads:
        p.grad = ember.tensor(g)
        opt.step()
        sign = np.sign(g * prev)
        size = np.clip(size * np.where(sign > 0, 2.0, np.where(sign < 0, 0.5, 1.0)), 0.01, 0.3)
        g = np.where(sign < 0, 0.0, g)
        ref -= np.sign(g) * size
        prev = g
        np.testing.assert_allclose(p.detach().numpy(), ref, rtol=1e-15)
    np.testing.assert_allclose(opt.state[p]["step_size"].numpy(), size)
    assert float(opt.state[p]["step"]) == 3.0


def test_asgd_matches_numpy():
    p = ember.tensor([1.0, -2.0], requires_grad=True)
    lr, lambd, alpha, t0 = 0.1, 0.01, 0.75, 2
    opt = ember.optim.ASGD([p], lr=lr, lambd=lambd, alpha=alpha, t0=t0)
    ref, ax, eta, mu = np.array([1.0, -2.0]), np.zeros(2), lr, 1.0
    for step in range(1, 6):
        g = np.array([0.5, -1.0]) * step
        p.grad = ember.tensor(g)
        opt.step()
        ref = ref * (1 - lambd * eta) - eta * g
        ax = ref.copy() if mu == 1 else ax + (ref - ax) * mu
        eta = lr / (1 + lambd * lr * step) ** alpha
        mu = 1 / max(1, step - t0)
        np.testing.assert_allclose(p.detach().numpy(), ref, rtol=1e-6)  # eta and mu are float32, as PyTorch's
        np.testing.assert_allclose(opt.state[p]["ax"].numpy(), ax, rtol=1e-6)
    assert opt.state[p]["eta"].dtype == ember.float32 and opt.state[p]["mu"].dim() == 0


def test_adafactor_matches_numpy():
    rng = np.random.default_rng(1)
    w0 = rng.standard_normal((3, 4))
    w = ember.tensor(w0, requires_grad=True)
    opt = ember.optim.Adafactor([w], lr=0.1)
    ref, row, col = w0.copy(), np.zeros((3, 1)), np.zeros((1, 4))
    eps1, eps2 = np.finfo(np.float64).eps, 1e-3
    for step in range(1, 4):
        g = rng.standard_normal((3, 4))
        w.grad = ember.tensor(g)
        opt.step()
        beta = step ** -0.8
        alpha = max(eps2, np.sqrt((ref ** 2).mean())) * min(0.1, step ** -0.5)
        row += ((g ** 2).mean(1, keepdims=True) - row) * beta
        col += ((g ** 2).mean(0, keepdims=True) - col) * beta
        update = g / np.sqrt(np.maximum(row @ col / max(row.mean(), eps1), eps1 * eps1))
        ref -= alpha / max(1.0, np.sqrt((update ** 2).mean())) * update
        np.testing.assert_allclose(w.detach().numpy(), ref, rtol=1e-12)
    assert list(opt.state[w]) == ["step", "row_var", "col_var"]
    assert opt.state[w]["row_var"].shape == (3, 1) and opt.state[w]["col_var"].shape == (1, 4)


@pytest.mark.parametrize("name", ["Rprop", "ASGD", "Adafactor"])
def test_state_dict_round_trip_and_pickle(name):
    history, opt = run(ember, lambda lib, ps: getattr(lib.optim, name)(ps, lr=0.05), steps=3)
    params = [ember.tensor(a, requires_grad=True) for a in history[-1]]
    fresh = getattr(ember.optim, name)(params, lr=0.05)
    fresh.load_state_dict(copy.deepcopy(opt.state_dict()))
    assert repr(fresh) == repr(opt)
    for key, value in opt.state_dict()["state"][0].items():
        np.testing.assert_array_equal(fresh.state_dict()["state"][0][key].numpy(), value.numpy())
    clone = pickle.loads(pickle.dumps(opt))
    assert clone.param_groups[0]["lr"] == 0.05 and len(clone.state) == 3


@pytest.mark.parametrize("make,message", [
    (lambda ps: ember.optim.Rprop(ps, lr=-1), "Invalid learning rate: -1"),
    (lambda ps: ember.optim.Rprop(ps, etas=(1.5, 1.2)), "Invalid eta values: 1.5, 1.2"),
    (lambda ps: ember.optim.Rprop(ps, etas=(0.5, 0.9)), "Invalid eta values: 0.5, 0.9"),
    (lambda ps: ember.optim.ASGD(ps, lr=-0.1), "Invalid learning rate: -0.1"),
    (lambda ps: ember.optim.ASGD(ps, weight_decay=-1), "Invalid weight_decay value: -1"),
    (lambda ps: ember.optim.Adafactor(ps, lr=-1), "Learning rate should be >= 0 but is: -1"),
    (lambda ps: ember.optim.Adafactor(ps, beta2_decay=0.5), "beta2_decay should be <= 0 but is: 0.5"),
    (lambda ps: ember.optim.Adafactor(ps, eps=(-1, 1e-3)), "epsilon1 should be >= 0 but is: -1"),
    (lambda ps: ember.optim.Adafactor(ps, eps=(None, -1)), "epsilon2 should be >= 0 but is: -1"),
    (lambda ps: ember.optim.Adafactor(ps, d=0.5), "Clipping threshold d should be >= 1 but is: 0.5"),
    (lambda ps: ember.optim.Adafactor(ps, weight_decay=-1), "weight_decay should be >= 0 but is: -1"),
])
def test_argument_errors(make, message):
    with pytest.raises(ValueError) as got:
        make([ember.zeros(2, requires_grad=True)])
    assert str(got.value) == message


@pytest.mark.filterwarnings("ignore:The .grad attribute of a Tensor that is not a leaf")
def test_rprop_differentiable_step_records_the_update():
    w = ember.tensor([1.0, 2.0], requires_grad=True)
    p = w.clone()
    p.grad = ember.tensor([0.5, -0.5])
    ember.optim.Rprop([p], lr=0.1, differentiable=True).step()
    p.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), [1.0, 1.0])


def np_newton_schulz(g, steps, a=3.4445, b=-4.7750, c=2.0315):
    """Muon's iteration in float64 (PyTorch's runs it in bfloat16)."""
    x = g.T if g.shape[0] > g.shape[1] else g
    x = x / max(np.linalg.norm(x), 1e-7)
    for _ in range(steps):
        gram = x @ x.T
        x = a * x + (b * gram + c * gram @ gram) @ x
    return x.T if g.shape[0] > g.shape[1] else x


@pytest.mark.parametrize("shape", [(6, 4), (4, 6)])
def test_muon_matches_numpy(shape):
    rng = np.random.default_rng(3)
    w0, g = rng.standard_normal(shape), rng.standard_normal(shape)
    w = ember.tensor(w0, requires_grad=True)
    w.grad = ember.tensor(g)
    ember.optim.Muon([w], lr=0.02, weight_decay=0.1, momentum=0.9).step()
    update = np_newton_schulz(g * 0.1 + 0.9 * (g * 0.1), 5)  # nesterov: grad.lerp(buf, m), buf = (1 - m) * grad
    ref = w0 * (1 - 0.02 * 0.1) - 0.02 * np.sqrt(max(1, shape[0] / shape[1])) * update
    np.testing.assert_allclose(w.detach().numpy(), ref, atol=0.02 * 0.05)  # bfloat16 iterations
    # the orthogonalized update has singular values near 1 (in [0.5, 1.5], as PyTorch documents)
    assert np.all(np.abs(np.linalg.svd(np_newton_schulz(g, 5), compute_uv=False) - 1) < 0.5)


@needs_torch
@pytest.mark.parametrize("kwargs", [{}, {"lr": 0.02, "nesterov": False, "weight_decay": 0.0},
                                    {"adjust_lr_fn": "match_rms_adamw", "momentum": 0.5, "ns_steps": 3}])
def test_muon_matches_torch(kwargs):
    rng = np.random.default_rng(4)
    shapes = [(6, 4), (4, 6), (5, 5)]
    ours = [ember.tensor(rng.standard_normal(s), requires_grad=True) for s in shapes]
    theirs = [torch.tensor(p.detach().numpy(), requires_grad=True) for p in ours]
    opt, ref = ember.optim.Muon(ours, **kwargs), torch.optim.Muon(theirs, **kwargs)
    assert repr(opt) == repr(ref)
    for _ in range(5):
        for p, q, s in zip(ours, theirs, shapes):
            g = rng.standard_normal(s)
            p.grad, q.grad = ember.tensor(g), torch.tensor(g)
        opt.step()
        ref.step()
    for p, q in zip(ours, theirs):  # bit for bit: PyTorch's bfloat16 rounding reproduced
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())
    assert list(opt.state_dict()["state"][0]) == ["momentum_buffer"]


@pytest.mark.parametrize("make,message", [
    (lambda ps: ember.optim.Muon(ps, lr=-1), "Learning rate should be >= 0 but is: -1"),
    (lambda ps: ember.optim.Muon(ps, momentum=-1), "momentum should be >= 0 but is: -1"),
    (lambda ps: ember.optim.Muon(ps, weight_decay=-1), "weight decay should be >= 0 but is: -1"),
    (lambda ps: ember.optim.Muon(ps, adjust_lr_fn="x"), "Adjust learning rate function x is not supported"),
    (lambda ps: ember.optim.Muon([ember.zeros(3, requires_grad=True)]),
     "Muon only supports 2D parameters whereas we found a parameter with size: ember.Size([3])"),
])
def test_muon_errors(make, message):
    with pytest.raises(ValueError) as got:
        make([ember.zeros(2, 2, requires_grad=True)])
    assert str(got.value) == message
