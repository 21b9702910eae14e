"""Optimizer trajectories: 20 steps of every ember.optim optimizer, in each option combination and
update path (default multi-tensor, foreach=False loop, fused=True), equal PyTorch's from the same
initial parameters and the same loss; without torch, SGD and Adam against NumPy updates."""
import math

import numpy as np
import pytest

import ember

try:
    import torch
except ImportError:  # pragma: no cover - CI has no torch
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")

STEPS = 20
SHAPES = [(3, 4), (4,), (2, 3, 2)]


def initial_arrays(dtype=np.float64):
    rng = np.random.default_rng(0)
    return [rng.uniform(-1, 1, size=s).astype(dtype) for s in SHAPES]


def loss_fn(params, x):
    """The same loss for both libraries (x is the library's tensor of inputs): a least-squares layer,
    a quartic and a coupling term. Convex, so the ulp-level differences between the two libraries'
    gradients shrink along the trajectory instead of growing."""
    w, b, v = params
    r = x @ w + b - 0.5
    return (r ** 2).mean() + 0.1 * (v ** 4).sum() + 0.5 * (v ** 2).sum() + 0.1 * (v.sum() - b.sum()) ** 2


def run(lib, make_opt, dtype, steps=STEPS, skip=None):
    """Params after each of `steps` steps; `skip` (index) leaves that parameter without a gradient."""
    arrays = initial_arrays(dtype)
    params = [lib.tensor(a, requires_grad=True) for a in arrays]
    x = lib.tensor(np.linspace(-1, 1, 12).reshape(4, 3).astype(dtype))
    opt = make_opt(lib, params)
    history = []
    for _ in range(steps):
        opt.zero_grad()
        loss_fn(params, x).backward()
        if skip is not None:
            params[skip].grad = None
        opt.step()
        history.append([p.detach().numpy().copy() for p in params])
    return history, opt


def compare(ours, theirs, rtol, atol):
    for step, (a, b) in enumerate(zip(ours, theirs)):
        for i, (pa, pb) in enumerate(zip(a, b)):
            np.testing.assert_allclose(pa, pb, rtol=rtol, atol=atol, err_msg=f"step {step + 1}, param {i}")


TOL = {np.float64: (1e-10, 1e-12), np.float32: (2e-5, 2e-6)}

CONFIGS = {
    "SGD": [dict(lr=0.1), dict(lr=0.1, momentum=0.9), dict(lr=0.05, momentum=0.9, dampening=0.3),
            dict(lr=0.05, momentum=0.8, nesterov=True), dict(lr=0.01, weight_decay=0.1, maximize=True),
            dict(lr=0.005, momentum=0.5, nesterov=True, weight_decay=0.05, maximize=True)],
    "Adam": [dict(lr=0.05), dict(lr=0.05, amsgrad=True), dict(lr=0.05, weight_decay=0.1),
             dict(lr=0.05, betas=(0.8, 0.9), eps=1e-6, maximize=True),
             dict(lr=0.05, amsgrad=True, weight_decay=0.1, maximize=True),
             dict(lr=0.05, weight_decay=0.1, decoupled_weight_decay=True)],
    "AdamW": [dict(lr=0.05), dict(lr=0.05, amsgrad=True, weight_decay=0.2), dict(lr=0.05, maximize=True)],
    "RMSprop": [dict(lr=0.01), dict(lr=0.01, centered=True), dict(lr=0.01, momentum=0.9),
                dict(lr=0.01, centered=True, momentum=0.5, weight_decay=0.1, alpha=0.9),
                dict(lr=0.01, maximize=True)],
    "Adagrad": [dict(lr=0.1), dict(lr=0.1, lr_decay=0.05), dict(lr=0.1, initial_accumulator_value=0.5),
                dict(lr=0.1, weight_decay=0.1, maximize=True, eps=1e-6)],
    "Adadelta": [dict(), dict(lr=0.5, rho=0.8), dict(weight_decay=0.1, maximize=True)],
    "Adamax": [dict(lr=0.05), dict(lr=0.05, weight_decay=0.1), dict(lr=0.05, betas=(0.8, 0.95), maximize=True)],
    "NAdam": [dict(lr=0.05), dict(lr=0.05, weight_decay=0.1), dict(lr=0.05, weight_decay=0.1, decoupled_weight_decay=True),
              dict(lr=0.05, momentum_decay=0.01, maximize=True)],
    "RAdam": [dict(lr=0.05), dict(lr=0.05, weight_decay=0.1), dict(lr=0.05, weight_decay=0.1, decoupled_weight_decay=True),
              dict(lr=0.05, betas=(0.9, 0.9), maximize=True)],
}
# The update paths each ember optimizer takes: the default (the C++ multi-tensor kernel where one
# exists), the loop of ember ops (foreach=False), and fused=True where PyTorch accepts it.
FUSED = {"SGD", "Adam", "AdamW", "Adagrad"}
CASES = [(name, kw, path) for name, kws in CONFIGS.items() for kw in kws
         for path in ["default", "loop"] + (["fused"] if name in FUSED else [])]


def path_kwargs(path):
    return {"default": {}, "loop": {"foreach": False}, "fused": {"fused": True}}[path]


@needs_torch
@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["float64", "float32"])
@pytest.mark.parametrize("name,kw,path", CASES, ids=[f"{n}-{i}-{p}" for i, (n, _, p) in enumerate(CASES)])
def test_trajectory_matches_torch(name, kw, path, dtype):
    ours, opt = run(ember, lambda lib, ps: getattr(lib.optim, name)(ps, **kw, **path_kwargs(path)), dtype)
    theirs, topt = run(torch, lambda lib, ps: getattr(lib.optim, name)(ps, **kw), dtype)
    compare(ours, theirs, *TOL[dtype])
    # The state holds the same entries, step counters as 0-d float32 tensors.
    for p_state, t_state in zip(opt.state.values(), topt.state.values()):
        assert list(p_state) == list(t_state)
        for key, value in p_state.items():
            np.testing.assert_allclose(value.numpy(), t_state[key].numpy(), *TOL[dtype])
            if key in ("step", "mu_product"):
                assert value.dtype == ember.float32 and value.dim() == 0


@needs_torch
@pytest.mark.parametrize("name", ["SGD", "Adam", "RMSprop", "NAdam"])
def test_parameter_without_grad_is_skipped_as_in_torch(name):
    kw = CONFIGS[name][1]
    ours, opt = run(ember, lambda lib, ps: getattr(lib.optim, name)(ps, **kw), np.float64, steps=5, skip=1)
    theirs, _ = run(torch, lambda lib, ps: getattr(lib.optim, name)(ps, **kw), np.float64, steps=5, skip=1)
    compare(ours, theirs, *TOL[np.float64])
    np.testing.assert_array_equal(ours[-1][1], initial_arrays()[1])


@needs_torch
@pytest.mark.parametrize("name", ["SGD", "Adam"])
def test_param_groups_with_their_own_options(name):
    def make(lib, ps):
        return getattr(lib.optim, name)([{"params": ps[:2]}, {"params": ps[2:], "lr": 0.01, "weight_decay": 0.3}],
                                        lr=0.05, **({"momentum": 0.9} if name == "SGD" else {}))

    ours, _ = run(ember, make, np.float32)
    theirs, _ = run(torch, make, np.float32)
    compare(ours, theirs, *TOL[np.float32])


@needs_torch
@pytest.mark.parametrize("kw", [dict(), dict(history_size=3), dict(line_search_fn="strong_wolfe"),
                                dict(lr=0.5, max_iter=5, line_search_fn="strong_wolfe", history_size=2)])
def test_lbfgs_matches_torch(kw):
    def run_lbfgs(lib):
        params = [lib.tensor(a, requires_grad=True) for a in initial_arrays()]
        x = lib.tensor(np.linspace(-1, 1, 12).reshape(4, 3))
        opt = lib.optim.LBFGS(params, **kw)

        def closure():
            opt.zero_grad()
            loss = loss_fn(params, x)
            loss.backward()
            return loss

        losses = [opt.step(closure).item() for _ in range(4)]
        return losses, [p.detach().numpy() for p in params], opt.state[params[0]]

    losses, params, state = run_lbfgs(ember)
    t_losses, t_params, t_state = run_lbfgs(torch)
    np.testing.assert_allclose(losses, t_losses, rtol=1e-9, atol=1e-15)
    for a, b in zip(params, t_params):
        np.testing.assert_allclose(a, b, rtol=1e-8, atol=1e-10)
    assert state["func_evals"] == t_state["func_evals"] and state["n_iter"] == t_state["n_iter"]
    assert sorted(state) == sorted(t_state)


# ---------------------------------------------------------------- without torch: NumPy updates
def numpy_grads(params, x):
    """The gradient of loss_fn, by hand."""
    w, b, v = params
    dr = 2 * (x @ w + b - 0.5) / (x.shape[0] * w.shape[1])
    c = 0.2 * (v.sum() - b.sum())
    return [x.T @ dr, dr.sum(0) - c, 0.4 * v ** 3 + v + c]


def numpy_trajectory(update, steps=STEPS):
    params = initial_arrays()
    x = np.linspace(-1, 1, 12).reshape(4, 3)
    state = [dict() for _ in params]
    history = []
    for t in range(1, steps + 1):
        grads = numpy_grads(params, x)
        params = [update(p, g, s, t) for p, g, s in zip(params, grads, state)]
        history.append(params)
    return history


def numpy_sgd(lr, momentum=0.0, dampening=0.0, nesterov=False, weight_decay=0.0, maximize=False):
    def update(p, g, s, t):
        g = -g if maximize else g
        g = g + weight_decay * p
        if momentum:
            s["buf"] = g.copy() if t == 1 else momentum * s["buf"] + (1 - dampening) * g
            g = g + momentum * s["buf"] if nesterov else s["buf"]
        return p - lr * g
    return update


def numpy_adam(lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False, maximize=False, decoupled=False):
    b1, b2 = betas

    def update(p, g, s, t):
        g = -g if maximize else g
        if decoupled:
            p = p * (1 - lr * weight_decay)
        else:
            g = g + weight_decay * p
        s["m"] = b1 * s.get("m", 0) + (1 - b1) * g
        s["v"] = b2 * s.get("v", 0) + (1 - b2) * g * g
        v = s["v"]
        if amsgrad:
            v = s["vmax"] = np.maximum(s.get("vmax", 0), v)
        return p - lr / (1 - b1 ** t) * s["m"] / (np.sqrt(v) / math.sqrt(1 - b2 ** t) + eps)
    return update


NUMPY_CASES = [
    ("SGD", dict(lr=0.1), numpy_sgd(0.1)),
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.3), numpy_sgd(0.05, 0.9, 0.3)),
    ("SGD", dict(lr=0.005, momentum=0.5, nesterov=True, weight_decay=0.05, maximize=True),
     numpy_sgd(0.005, 0.5, nesterov=True, weight_decay=0.05, maximize=True)),
    ("Adam", dict(lr=0.05), numpy_adam(0.05)),
    ("Adam", dict(lr=0.05, amsgrad=True, weight_decay=0.1, maximize=True),
     numpy_adam(0.05, amsgrad=True, weight_decay=0.1, maximize=True)),
    ("AdamW", dict(lr=0.05, betas=(0.8, 0.9), weight_decay=0.2), numpy_adam(0.05, (0.8, 0.9), weight_decay=0.2,
                                                                             decoupled=True)),
]


@pytest.mark.parametrize("path", ["default", "loop", "fused"])
@pytest.mark.parametrize("name,kw,update", NUMPY_CASES, ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(NUMPY_CASES)])
def test_trajectory_matches_numpy(name, kw, update, path):
    ours, _ = run(ember, lambda lib, ps: getattr(lib.optim, name)(ps, **kw, **path_kwargs(path)), np.float64)
    compare(ours, numpy_trajectory(update), rtol=1e-9, atol=1e-12)


def test_adam_first_step_moves_each_weight_by_lr():
    # Adam's first step is lr * sign(grad) (up to eps): a hand-checkable fact.
    p = ember.tensor([1.0, -2.0, 3.0], dtype=ember.float64, requires_grad=True)
    opt = ember.optim.Adam([p], lr=0.1)
    (p * ember.tensor([2.0, -5.0, 0.5], dtype=ember.float64)).sum().backward()
    opt.step()
    np.testing.assert_allclose(p.detach().numpy(), [0.9, -1.9, 2.9], rtol=1e-7)
