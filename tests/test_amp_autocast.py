"""ember.autocast (CPU): the state functions, the context manager / decorator, and each policy class of
ops.yaml's `autocast:` key (lower, fp32, promote, untouched), against PyTorch's CPU autocast and
hand-computed values. CUDA autocast is only checked as state: nothing can run on a GPU here."""
import time
import warnings

import numpy as np
import pytest

import ember
import ember.nn.functional as F

try:
    import torch
    import torch.nn.functional as TF
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")


@pytest.fixture(autouse=True)
def autocast_left_off():
    yield
    assert not ember.is_autocast_enabled("cpu") and not ember.is_autocast_enabled("cuda")
    assert ember.get_autocast_dtype("cpu") == ember.bfloat16 and ember.get_autocast_dtype("cuda") == ember.float16


def rand(*shape, dtype=None, seed=0):
    values = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return ember.tensor(values) if dtype is None else ember.tensor(values).to(dtype)


def as_torch(t):
    return torch.from_numpy(t.float().numpy()).to(getattr(torch, str(t.dtype).split(".")[-1]))


def test_state_defaults_and_setters():
    assert not ember.is_autocast_enabled("cpu") and not ember.is_autocast_enabled()
    assert ember.get_autocast_dtype("cpu") == ember.bfloat16
    assert ember.get_autocast_dtype("cuda") == ember.float16
    assert ember.is_autocast_cache_enabled()
    ember.set_autocast_enabled("cpu", True)
    try:
        assert ember.is_autocast_enabled("cpu") and not ember.is_autocast_enabled("cuda")
    finally:
        ember.set_autocast_enabled("cpu", False)
    ember.set_autocast_enabled(True)  # no device type: CUDA's, as PyTorch's legacy form
    assert ember.is_autocast_enabled("cuda") and ember.is_autocast_enabled()
    ember.set_autocast_enabled("cuda", False)
    ember.set_autocast_dtype("cpu", ember.float16)
    assert ember.get_autocast_dtype("cpu") == ember.float16
    ember.set_autocast_dtype("cpu", ember.bfloat16)
    assert ember.autocast_increment_nesting() == 1 and ember.autocast_increment_nesting() == 2
    assert ember.autocast_decrement_nesting() == 1 and ember.autocast_decrement_nesting() == 0
    ember.set_autocast_cache_enabled(False)
    assert not ember.is_autocast_cache_enabled()
    ember.set_autocast_cache_enabled(True)


def test_deprecated_state_functions_warn():
    for name, args in [("is_autocast_cpu_enabled", ()), ("get_autocast_cpu_dtype", ()),
                       ("get_autocast_gpu_dtype", ()), ("set_autocast_cpu_dtype", (ember.bfloat16,)),
                       ("set_autocast_gpu_dtype", (ember.float16,)), ("set_autocast_cpu_enabled", (False,))]:
        with pytest.warns(DeprecationWarning, match=rf"torch\.{name}\(\) is deprecated"):
            getattr(ember, name)(*args)
    with pytest.warns(DeprecationWarning):
        assert ember.get_autocast_cpu_dtype() == ember.bfloat16


def test_context_manager_sets_and_restores_the_state():
    with ember.autocast("cpu") as region:
        assert isinstance(region, ember.autocast)
        assert ember.is_autocast_enabled("cpu") and ember.get_autocast_dtype("cpu") == ember.bfloat16
        with ember.autocast("cpu", dtype=ember.float16):
            assert ember.get_autocast_dtype("cpu") == ember.float16
            with ember.autocast("cpu", enabled=False):
                assert not ember.is_autocast_enabled("cpu")
                assert ember.mm(rand(2, 3), rand(3, 2)).dtype == ember.float32
            assert ember.is_autocast_enabled("cpu")
            assert ember.mm(rand(2, 3), rand(3, 2)).dtype == ember.float16
        assert ember.get_autocast_dtype("cpu") == ember.bfloat16
    with pytest.raises(ZeroDivisionError):  # restored on an exception too
        with ember.amp.autocast("cpu"):
            1 / 0
    assert ember.autocast is ember.amp.autocast
    assert ember.amp.is_autocast_available("cpu") and ember.amp.is_autocast_available("cuda")


def test_decorator_and_deprecated_cpu_alias():
    @ember.autocast("cpu")
    def product(a, b):
        """doc kept"""
        return ember.mm(a, b)

    assert product(rand(2, 3), rand(3, 2)).dtype == ember.bfloat16
    assert product.__doc__ == "doc kept" and not ember.is_autocast_enabled("cpu")
    with pytest.warns(FutureWarning, match=r"`torch\.cpu\.amp\.autocast\(args\.\.\.\)` is deprecated"):
        region = ember.cpu.amp.autocast()
    with region:
        assert ember.mm(rand(2, 3), rand(3, 2)).dtype == ember.bfloat16
    with pytest.raises(TypeError, match=r"autocast\(\)\(func\) requires a callable, but got int"):
        ember.autocast("cpu")(3)


def test_unsupported_dtype_and_devices():
    with pytest.warns(UserWarning, match="In CPU autocast, but the target dtype is not supported. Disabling autocast.\n"
                                         "CPU Autocast only supports dtypes of ember.bfloat16, ember.float16"):
        region = ember.autocast("cpu", dtype=ember.float32)
    with region:
        assert not ember.is_autocast_enabled("cpu")
    with pytest.raises(ValueError, match="Expected `device_type` of type `str`, got: `<class 'int'>`"):
        ember.autocast(1)
    with pytest.warns(UserWarning, match="CUDA is not available or torch_xla is imported. Disabling autocast."):
        region = ember.autocast("cuda")
    with region:
        assert not ember.is_autocast_enabled("cuda")
    with pytest.warns(FutureWarning, match=r"torch\.cuda\.amp\.autocast"), warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        ember.cuda.amp.autocast()


@needs_torch
def test_unsupported_dtype_warning_matches_torch():
    with pytest.warns(UserWarning) as theirs:
        torch.autocast("cpu", dtype=torch.float32)
    with pytest.warns(UserWarning) as ours:
        ember.autocast("cpu", dtype=ember.float32)
    assert str(ours[0].message).replace("ember.", "torch.") == str(theirs[0].message)


def test_cuda_state_is_separate_from_cpu():
    ember.set_autocast_enabled("cuda", True)  # the state works without a GPU; CPU tensors are not cast
    try:
        assert ember.mm(rand(2, 3), rand(3, 2)).dtype == ember.float32
    finally:
        ember.set_autocast_enabled("cuda", False)


# op, its ember and torch calls (same argument values), and the policy class it belongs to
def _cases(lib, fn):
    x, w, b = rand(4, 3, seed=1), rand(5, 3, seed=2), rand(5, seed=3)
    img, kernel = rand(1, 2, 6, 6, seed=4), rand(3, 2, 3, 3, seed=5)
    vol, kernel3 = rand(1, 2, 4, 4, 4, seed=6), rand(3, 2, 2, 2, 2, seed=7)
    target = ember.tensor([1, 0, 4, 2])
    conv = lambda t: t if lib is ember else as_torch(t)  # noqa: E731
    L = {k: conv(v) for k, v in dict(x=x, w=w, b=b, img=img, kernel=kernel, vol=vol, kernel3=kernel3,
                                     target=target, xb=x.bfloat16(), big=rand(4, 5, seed=8),
                                     sq=rand(3, 3, seed=9) + 3 * ember.eye(3)).items()}
    t = lib
    return {
        "mm": ("lower", lambda: t.mm(L["x"], L["w"].t())),
        "addmm": ("lower", lambda: t.addmm(L["b"], L["x"], L["w"].t())),
        "bmm": ("lower", lambda: t.bmm(L["x"][None], L["w"].t()[None])),
        "baddbmm": ("lower", lambda: t.baddbmm(L["b"][None, None], L["x"][None], L["w"].t()[None])),
        "addbmm": ("lower", lambda: t.addbmm(L["b"][None], L["x"][None], L["w"].t()[None])),
        "matmul": ("lower", lambda: t.matmul(L["x"], L["w"].t())),
        "matmul_1d": ("lower", lambda: t.matmul(L["x"][0], L["w"][0])),
        "linear": ("lower", lambda: fn.linear(L["x"], L["w"], L["b"])),
        "linear_3d": ("lower", lambda: fn.linear(L["x"][None], L["w"], L["b"])),
        "conv2d": ("lower", lambda: fn.conv2d(L["img"], L["kernel"])),
        "conv1d": ("lower", lambda: fn.conv1d(L["img"][0][:, :3], L["kernel"][0])),
        "conv3d": ("lower", lambda: fn.conv3d(L["vol"], L["kernel3"])),
        "prelu": ("lower", lambda: fn.prelu(L["img"], L["b"][:1])),
        "sdpa": ("lower", lambda: fn.scaled_dot_product_attention(L["x"][None], L["x"][None], L["x"][None])),
        "einsum": ("lower", lambda: t.einsum("ij,kj->ik", L["x"], L["w"])),
        "cross_entropy": ("fp32", lambda: fn.cross_entropy(L["big"].bfloat16(), L["target"])),
        "nll_loss": ("fp32", lambda: fn.nll_loss(L["big"].bfloat16(), L["target"])),
        "mse_loss": ("fp32", lambda: fn.mse_loss(L["xb"], L["xb"] * 2)),
        "l1_loss": ("fp32", lambda: fn.l1_loss(L["xb"], L["xb"] * 2)),
        "multi_margin": ("fp32", lambda: fn.multi_margin_loss(L["big"].bfloat16(), L["target"])),
        "prod": ("fp32", lambda: t.prod(L["xb"])),
        "cdist": ("fp32", lambda: t.cdist(L["xb"], L["xb"])),
        "inv": ("fp32", lambda: t.linalg.inv(L["sq"].bfloat16())),
        "max_pool3d": ("fp32", lambda: fn.max_pool3d(L["vol"].bfloat16(), 2)),
        "cat": ("promote", lambda: t.cat([L["x"], L["xb"]])),
        "cat_low": ("promote", lambda: t.cat([L["xb"], L["xb"]])),
        "stack": ("promote", lambda: t.stack([L["xb"], L["x"]])),
        "index_copy": ("promote", lambda: L["xb"].index_copy(0, t.tensor([0, 2]), L["x"][:2])),
        "add": ("none", lambda: L["x"] + L["xb"]),
        "relu": ("none", lambda: fn.relu(L["xb"])),
        "softmax": ("none", lambda: t.softmax(L["xb"], 0)),
        "exp": ("none", lambda: t.exp(L["xb"])),
        "sum": ("none", lambda: L["xb"].sum()),
        "layer_norm": ("none", lambda: fn.layer_norm(L["xb"], (3,))),
        "mm_float64": ("lower", lambda: t.mm(L["x"].double(), L["w"].t().double())),
    }


@pytest.mark.parametrize("name", list(_cases(ember, F)))
def test_policy_dtype(name):
    policy, call = _cases(ember, F)[name]
    with ember.autocast("cpu"):
        inside = call()
    expected = {"lower": ember.bfloat16, "fp32": ember.float32}.get(policy)
    if name == "mm_float64":
        expected = ember.float64  # float64 is never cast
    if name in ("cat_low",):
        expected = ember.bfloat16
    if expected is not None:
        assert inside.dtype == expected
    if policy == "none":
        assert inside.dtype == call().dtype
    if torch is not None:
        _, tcall = _cases(torch, TF)[name]
        with torch.autocast("cpu"):
            theirs = tcall()
        assert str(inside.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
        tol = 2e-2 if inside.dtype == ember.bfloat16 else 1e-2
        np.testing.assert_allclose(inside.float().numpy(), theirs.float().numpy(), rtol=tol, atol=tol)


def test_lower_values_are_those_of_the_cast_inputs():
    a, b = rand(8, 16, seed=1), rand(16, 4, seed=2)
    with ember.autocast("cpu"):
        got = ember.mm(a, b)
    want = ember.mm(a.bfloat16(), b.bfloat16())
    assert got.dtype == ember.bfloat16 and ember.equal(got, want)
    with ember.autocast("cpu", dtype=ember.float16):
        half = a @ b
    assert half.dtype == ember.float16 and ember.equal(half, a.half() @ b.half())


def test_integer_inputs_are_not_cast():
    a = ember.ones(2, 2, dtype=ember.int64)
    with ember.autocast("cpu"):
        assert ember.mm(a, a).dtype == ember.int64
        assert ember.cat([a, a]).dtype == ember.int64


def test_inplace_and_out_forms_do_not_autocast():
    a, b = rand(3, 4, seed=1), rand(4, 2, seed=2)
    out = ember.empty(3, 2)
    with ember.autocast("cpu"):
        ember.mm(a, b, out=out)
        c = ember.zeros(3, 2).addmm_(a, b)
    np.testing.assert_allclose(out.numpy(), (a @ b).numpy(), rtol=1e-6)
    np.testing.assert_allclose(c.numpy(), (a @ b).numpy(), rtol=1e-6)


def test_gradients_reach_float32_parameters_in_float32():
    x = rand(4, 3, seed=1)
    w = rand(5, 3, seed=2).requires_grad_()
    b = rand(5, seed=3).requires_grad_()
    with ember.autocast("cpu"):
        y = F.linear(x, w, b)
        loss = F.mse_loss(y, ember.zeros(4, 5))
    assert y.dtype == ember.bfloat16 and loss.dtype == ember.float32
    loss.backward()
    assert w.grad.dtype == ember.float32 and b.grad.dtype == ember.float32
    assert y.grad_fn.name() == "AddmmBackward0"
    if torch is not None:
        tw, tb = as_torch(w.detach()).requires_grad_(), as_torch(b.detach()).requires_grad_()
        with torch.autocast("cpu"):
            ty = TF.linear(as_torch(x), tw, tb)
            tloss = TF.mse_loss(ty, torch.zeros(4, 5))
        tloss.backward()
        np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-2, atol=1e-3)
        np.testing.assert_allclose(b.grad.numpy(), tb.grad.numpy(), rtol=1e-2, atol=1e-3)
        assert loss.item() == pytest.approx(tloss.item(), rel=1e-2)


def test_weight_cast_cache_is_per_region():
    x = rand(2, 3, seed=1)
    w = rand(3, 3, seed=2).requires_grad_()
    with ember.autocast("cpu"):
        first = ember.mm(x, w)
        second = ember.mm(x, w)
        shared = first.grad_fn.next_functions[1][0] is second.grad_fn.next_functions[1][0]
        assert shared  # one cast of the weight (its ToCopyBackward0 node) serves both
        assert first.grad_fn.next_functions[1][0].name() == "ToCopyBackward0"
    with ember.autocast("cpu", cache_enabled=False):
        a, b = ember.mm(x, w), ember.mm(x, w)
        assert a.grad_fn.next_functions[1][0] is not b.grad_fn.next_functions[1][0]
    with ember.autocast("cpu"):
        third = ember.mm(x, w)  # the cache was cleared when the first region ended
    assert third.grad_fn.next_functions[1][0] is not first.grad_fn.next_functions[1][0]
    (first.sum() + second.sum()).float().backward()
    np.testing.assert_allclose(w.grad.numpy(), 2 * (x.bfloat16().float().t() @ ember.ones(2, 3)).numpy(), rtol=1e-2)


def test_backward_inside_the_region():
    w = rand(3, 2, seed=2).requires_grad_()
    with ember.autocast("cpu"):
        loss = (rand(4, 3, seed=1) @ w).float().sum()
        loss.backward()
    assert w.grad.dtype == ember.float32
    np.testing.assert_allclose(w.grad.numpy(), np.repeat(rand(4, 3, seed=1).bfloat16().float().numpy().sum(0)[:, None],
                                                          2, 1), rtol=1e-2)


def test_autocast_is_thread_local():
    import threading
    seen = []
    with ember.autocast("cpu"):
        thread = threading.Thread(target=lambda: seen.append((ember.is_autocast_enabled("cpu"),
                                                              ember.mm(rand(2, 2), rand(2, 2)).dtype)))
        thread.start()
        thread.join()
    assert seen == [(False, ember.float32)]


def test_a_thread_ending_inside_a_region_leaves_the_flag_clear():
    import threading
    before = ember._C._autocast_active_threads()
    thread = threading.Thread(target=lambda: ember.autocast("cpu").__enter__())  # never exited
    thread.start()
    thread.join()
    deadline = time.monotonic() + 5  # the OS thread runs its thread_local destructors after join() returns
    while ember._C._autocast_active_threads() != before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert ember._C._autocast_active_threads() == before == 0


def _harness_cases():
    """One float32 sample of every op whose ops.yaml entry has a CPU `autocast:` policy and a harness test."""
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).parent))
    from harness.collect import collect
    from harness.spec import load_spec
    seen = {}
    for case in collect(load_spec()).forward:
        if case.op.autocast.get("cpu") and case.dtype == "float32" and case.op.full_name not in seen:
            seen[case.op.full_name] = case
    return seen


HARNESS_CASES = _harness_cases()


@pytest.mark.parametrize("name", sorted(HARNESS_CASES))
def test_every_declared_cpu_policy_through_the_harness_samples(name):
    from harness.gradcheck import op_function
    case = HARNESS_CASES[name]
    func, tensors = op_function(case.op, case.sample)
    with ember.autocast("cpu"):
        results = func(*tensors)
    want = {"lower": ember.bfloat16, "fp32": ember.float32, "promote": ember.float32}[case.op.autocast["cpu"]]
    floating = [r for r in results if isinstance(r, ember.Tensor) and r.is_floating_point()]
    assert floating and all(r.dtype == want for r in floating), [r.dtype for r in floating]


def test_state_function_argument_errors():
    with pytest.raises(TypeError, match=r"^set_autocast_enabled\(\): argument 'enabled' \(position 2\) must be bool, "
                                        r"not str$"):
        ember.set_autocast_enabled("cpu", "x")
    with pytest.raises(TypeError, match=r"^set_autocast_dtype\(\): argument 'dtype' \(position 2\) must be "
                                        r"torch.dtype, not int$"):
        ember.set_autocast_dtype("cpu", 3)
    with pytest.raises(TypeError, match=r"argument 'device_type' \(position 1\) must be str, not int"):
        ember.set_autocast_enabled(1, True)
    with pytest.raises(RuntimeError, match="device type at start of device string: tpu"):
        ember.get_autocast_dtype("tpu")


def test_cpu_fp32_list_ctc_loss_and_quantile():
    """PyTorch's CPU autocast fp32 list: ctc_loss and quantile/nanquantile run in float32 on bfloat16 input."""
    F = ember.nn.functional
    lp = ember.randn(6, 2, 5).log_softmax(2)
    targets, lengths, target_lengths = ember.tensor([[1, 2], [3, 3]]), [6, 5], [2, 2]
    x = ember.tensor([[0.5, 2.0, -1.0, 4.0]])
    with ember.autocast("cpu", dtype=ember.bfloat16):
        loss = F.ctc_loss(lp.bfloat16(), targets, lengths, target_lengths)
        q = ember.quantile(x.bfloat16(), 0.25, dim=1)
        nq = ember.nanquantile(x.bfloat16(), ember.tensor([0.5]).bfloat16())
    assert loss.dtype == q.dtype == nq.dtype == ember.float32
    expected = F.ctc_loss(lp.bfloat16().float(), targets, lengths, target_lengths)
    assert loss.item() == expected.item()
    np.testing.assert_allclose(q.numpy(), np.quantile(x.numpy(), 0.25, axis=1))
    np.testing.assert_allclose(nq.numpy(), [np.quantile(x.numpy(), 0.5)])
    torch = pytest.importorskip("torch")
    with torch.autocast("cpu", dtype=torch.bfloat16):
        t_loss = torch.nn.functional.ctc_loss(torch.tensor(lp.numpy()).bfloat16(), torch.tensor([[1, 2], [3, 3]]),
                                              lengths, target_lengths)
        t_q = torch.quantile(torch.tensor(x.numpy()).bfloat16(), 0.25, dim=1)
    assert t_loss.dtype == t_q.dtype == torch.float32
    np.testing.assert_allclose(loss.item(), t_loss.item(), rtol=1e-5)
