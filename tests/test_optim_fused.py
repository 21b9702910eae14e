"""The C++ multi-tensor optimizer kernels (_fused_adam, _fused_sgd): equal to the loop of ember ops
(foreach=False) for tensors around the chunk size, 1-3 threads, non-contiguous tensors and every
floating dtype; taken by default; checked arguments; the CUDA slot."""
import numpy as np
import pytest

import ember
from ember import optim
from ember.utils.trace import TraceMode

CHUNK = 32768  # kGrainSize: the kernels cut tensors into chunks of this many elements
SIZES = [0, 1, 7, CHUNK - 1, CHUNK, CHUNK + 1, 3 * CHUNK + 5]


class Recorder(TraceMode):
    def __init__(self):
        super().__init__()
        self.names = []

    def on_call(self, call):
        self.names.append(call.name)


def make_params(dtype=ember.float32, sizes=SIZES, seed=0):
    rng = np.random.default_rng(seed)
    return [ember.tensor(rng.standard_normal(n), dtype=dtype, requires_grad=True) for n in sizes]


def run(make_opt, params, steps=4, seed=1, grad_layout=None):
    """`steps` steps with fixed random gradients; `grad_layout` may give each gradient another layout."""
    rng = np.random.default_rng(seed)
    opt = make_opt(params)
    for _ in range(steps):
        for p in params:
            g = ember.tensor(rng.standard_normal(tuple(p.shape)), dtype=p.dtype)
            p.grad = grad_layout(g) if grad_layout else g
        opt.step()
    return opt


def twin(params):
    return [p.detach().clone().requires_grad_() for p in params]


def assert_same(ours, ref, dtype):
    tol = {ember.float64: 1e-13, ember.float32: 2e-6}[dtype]
    for a, b in zip(ours, ref):
        np.testing.assert_allclose(a.detach().float().numpy(), b.detach().float().numpy(), rtol=tol, atol=tol)


OPTIMIZERS = {
    "adam": lambda ps, **kw: optim.Adam(ps, lr=0.01, **kw),
    "adam-amsgrad-wd-max": lambda ps, **kw: optim.Adam(ps, lr=0.01, amsgrad=True, weight_decay=0.1, maximize=True, **kw),
    "adamw": lambda ps, **kw: optim.AdamW(ps, lr=0.01, weight_decay=0.5, **kw),
    "sgd": lambda ps, **kw: optim.SGD(ps, lr=0.1, **kw),
    "sgd-momentum-dampening": lambda ps, **kw: optim.SGD(ps, lr=0.1, momentum=0.9, dampening=0.2, **kw),
    "sgd-nesterov-wd-max": lambda ps, **kw: optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.1,
                                                      maximize=True, **kw),
}


@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_kernel_equals_the_loop(name, threads):
    make = OPTIMIZERS[name]
    params = make_params()
    ref = twin(params)
    opt = run(lambda ps: make(ps), params)
    ref_opt = run(lambda ps: make(ps, foreach=False), ref)
    assert_same(params, ref, ember.float32)
    for p, q in zip(params, ref):
        for key, value in ref_opt.state[q].items():
            np.testing.assert_allclose(opt.state[p][key].numpy(), value.numpy(), rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("name", ["adam-amsgrad-wd-max", "sgd-nesterov-wd-max"])
def test_kernel_float64(name):
    make = OPTIMIZERS[name]
    params = make_params(ember.float64, sizes=[5, CHUNK + 3])
    ref = twin(params)
    run(lambda ps: make(ps, fused=True), params)
    run(lambda ps: make(ps, foreach=False), ref)
    assert_same(params, ref, ember.float64)


@pytest.mark.parametrize("name", ["adam-amsgrad-wd-max", "sgd-nesterov-wd-max"])
@pytest.mark.parametrize("dtype", [ember.float16, ember.bfloat16], ids=str)
def test_kernel_half_types_compute_in_float32(name, dtype):
    """float16/bfloat16 states update in float32 and round once per step (the loop of half ops can
    underflow to 0/0 in Adam's denominator): the result is the float32 update of the same (rounded)
    values to the half type's precision."""
    make = OPTIMIZERS[name]
    params = make_params(dtype, sizes=[5, CHUNK + 3])
    ref = [p.detach().float().requires_grad_() for p in params]
    run(lambda ps: make(ps, fused=True), params)
    run(lambda ps: make(ps, foreach=False), ref, grad_layout=lambda g: g.to(dtype).float())
    tol = 4e-3 if dtype == ember.float16 else 3e-2
    for a, b in zip(params, ref):
        assert a.dtype == dtype
        np.testing.assert_allclose(a.detach().float().numpy(), b.detach().numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("name", ["adam-amsgrad-wd-max", "sgd-momentum-dampening"])
def test_non_contiguous_params_and_grads(name):
    make = OPTIMIZERS[name]
    rng = np.random.default_rng(3)

    def fresh():
        base = ember.tensor(rng.standard_normal((40, 30)), dtype=ember.float32)
        return [base.t().requires_grad_(), ember.tensor(rng.standard_normal((6, 50)), dtype=ember.float32)[:, ::2]
                .requires_grad_()]

    params = fresh()
    assert not any(p.is_contiguous() for p in params)
    ref = twin(params)
    layouts = lambda g: g.t().contiguous().t() if g.dim() == 2 else g  # noqa: E731  (a transposed gradient)
    run(lambda ps: make(ps), params, grad_layout=layouts)
    run(lambda ps: make(ps, foreach=False), ref, grad_layout=layouts)
    assert_same(params, ref, ember.float32)
    expanded = ember.ones(1, 40).expand(30, 40)  # an expanded (stride 0) gradient is read, not written
    p = params[0]
    p.grad = expanded
    make([p], fused=True).step()
    assert not p.is_contiguous()


@pytest.mark.parametrize("name,op", [("adam", "_fused_adam"), ("sgd-momentum-dampening", "_fused_sgd"),
                                     ("adamw", "_fused_adam")])
def test_the_default_and_fused_take_the_kernel_the_loop_does_not(name, op):
    make = OPTIMIZERS[name]
    for kw, expected in (({}, True), ({"fused": True}, True), ({"foreach": True}, True), ({"foreach": False}, False)):
        params = make_params(sizes=[3, 4])
        opt = make(params, **kw)
        for p in params:
            p.grad = ember.ones_like(p)
        with Recorder() as r:
            opt.step()
        assert (op in r.names) is expected, (kw, r.names)
        if expected:
            assert r.names.count(op) == 1  # one call for the whole group


def test_adam_kernel_counts_steps_and_matches_numpy():
    p = ember.tensor([[1.0, -2.0], [0.5, 4.0]], dtype=ember.float64)
    g = ember.tensor([[0.3, -1.0], [2.0, 0.0]], dtype=ember.float64)
    m, v, step = ember.zeros_like(p), ember.zeros_like(p), ember.tensor(0.0)
    out = ember._fused_adam([p], [g], [m], [v], [], [step], lr=0.1, beta1=0.9, beta2=0.99, weight_decay=0.0,
                            eps=1e-8, amsgrad=False, maximize=False)
    assert out is None and step.item() == 1.0  # `-> ()`, as PyTorch's in-place _fused_adam_
    gn, pn = g.numpy(), np.array([[1.0, -2.0], [0.5, 4.0]])
    mn, vn = 0.1 * gn, 0.01 * gn ** 2
    expected = pn - 0.1 / 0.1 * mn / (np.sqrt(vn) / np.sqrt(0.01) + 1e-8)
    np.testing.assert_allclose(p.numpy(), expected, rtol=1e-12)
    np.testing.assert_allclose(m.numpy(), mn, rtol=1e-12)
    np.testing.assert_allclose(v.numpy(), vn, rtol=1e-12)


def test_sgd_kernel_fresh_buffers_start_as_the_gradient():
    p = ember.tensor([1.0, 2.0], dtype=ember.float64)
    g = ember.tensor([0.5, -1.0], dtype=ember.float64)
    fresh, old = ember.full_like(p, 123.0), ember.tensor([1.0, 1.0], dtype=ember.float64)
    q = p.clone()
    assert ember._fused_sgd([p, q], [g, g], [fresh, old], [0], weight_decay=0.0, momentum=0.9, lr=0.1,
                            dampening=0.5, nesterov=False, maximize=False) is None
    np.testing.assert_allclose(fresh.numpy(), [0.5, -1.0])
    np.testing.assert_allclose(old.numpy(), [0.9 + 0.25, 0.9 - 0.5])
    np.testing.assert_allclose(p.numpy(), [1.0 - 0.05, 2.0 + 0.1])
    np.testing.assert_allclose(q.numpy(), [1.0 - 0.115, 2.0 - 0.04])


def test_kernel_argument_errors():
    p, g = ember.zeros(3), ember.zeros(3)
    kw = dict(lr=0.1, beta1=0.9, beta2=0.99, weight_decay=0.0, eps=1e-8, amsgrad=False, maximize=False)
    with pytest.raises(RuntimeError, match="_fused_adam: expected 1 tensors in grads \\(one per parameter\\), got 0"):
        ember._fused_adam([p], [], [p], [p], [], [ember.tensor(0.0)], **kw)
    with pytest.raises(RuntimeError, match="_fused_adam: exp_avgs\\[0\\] of shape \\[2\\] does not match"):
        ember._fused_adam([p], [g], [ember.zeros(2)], [p.clone()], [], [ember.tensor(0.0)], **kw)
    with pytest.raises(RuntimeError, match="_fused_adam: grads\\[0\\] has dtype float64 but the parameter has float32"):
        ember._fused_adam([p], [g.double()], [p.clone()], [p.clone()], [], [ember.tensor(0.0)], **kw)
    with pytest.raises(RuntimeError, match="max_exp_avg_sqs"):
        ember._fused_adam([p], [g], [p.clone()], [p.clone()], [], [ember.tensor(0.0)], **dict(kw, amsgrad=True))
    with pytest.raises(NotImplementedError, match="\"_fused_sgd\" not implemented for 'Long'"):
        ember._fused_sgd([ember.zeros(2, dtype=ember.int64)], [ember.zeros(2, dtype=ember.int64)], [], [],
                         weight_decay=0.0, momentum=0.0, lr=0.1, dampening=0.0, nesterov=False, maximize=False)
    with pytest.raises(IndexError, match="fresh buffer index 5 out of range"):
        ember._fused_sgd([p], [g], [g.clone()], [5], weight_decay=0.0, momentum=0.9, lr=0.1, dampening=0.0,
                         nesterov=False, maximize=False)
    with pytest.raises(RuntimeError, match="expected a non-empty list of Tensors"):
        ember._fused_sgd([], [], [], [], weight_decay=0.0, momentum=0.0, lr=0.1, dampening=0.0, nesterov=False,
                         maximize=False)


@pytest.mark.skipif(not ember.cuda.is_available(), reason="needs a CUDA GPU")
def test_cuda_slots_name_the_op_and_device():
    p = ember.zeros(3).cuda()
    with pytest.raises(NotImplementedError, match="_fused_adam: .*not implemented on cuda"):
        ember._fused_adam([p], [p], [p], [p], [], [ember.tensor(0.0)], lr=0.1, beta1=0.9, beta2=0.99,
                          weight_decay=0.0, eps=1e-8, amsgrad=False, maximize=False)
    with pytest.raises(NotImplementedError, match="_fused_sgd: .*not implemented on cuda"):
        ember._fused_sgd([p], [p], [], [], weight_decay=0.0, momentum=0.0, lr=0.1, dampening=0.0, nesterov=False,
                         maximize=False)
    # The optimizers fall back to the loop of ember ops on a GPU.
    q = ember.ones(3, device="cuda", requires_grad=True)
    q.grad = ember.ones(3, device="cuda")
    optim.Adam([q], lr=0.1, fused=True).step()
    np.testing.assert_allclose(q.detach().cpu().numpy(), [0.9] * 3, rtol=1e-5)
