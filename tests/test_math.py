"""Math ops of issue 11 that the generic harness cannot sample (three tensor arguments, a
rounding op's gradient) and checks against PyTorch where its semantics are subtle."""
import math

import numpy as np
import pytest

import ember
from ember.autograd import gradcheck, gradgradcheck
from test_forward_ad import check_against_finite_differences

try:
    import torch
except ImportError:
    torch = None

F64 = ember.float64
needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")


def t64(values, requires_grad=False):
    return ember.tensor(values, dtype=F64, requires_grad=requires_grad)


def rand(*shape, requires_grad=False):
    return ember.randn(*shape, dtype=F64).requires_grad_(requires_grad)


# ---------------------------------------------------------------- lerp

def test_lerp_tensor_weight():
    a, b, w = rand(2, 3), rand(3), rand(2, 1)
    want = np.where(np.abs(w.numpy()) < 0.5, a.numpy() + w.numpy() * (b.numpy() - a.numpy()),
                    b.numpy() - (b.numpy() - a.numpy()) * (1 - w.numpy()))
    np.testing.assert_allclose(ember.lerp(a, b, w).numpy(), want, rtol=1e-12)
    np.testing.assert_allclose(a.lerp(b, w).numpy(), want, rtol=1e-12)
    out = ember.empty(2, 3, dtype=F64)
    assert ember.lerp(a, b, w, out=out) is out
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-12)
    a.lerp_(b, w)
    np.testing.assert_allclose(a.numpy(), want, rtol=1e-12)


def test_lerp_is_exact_at_the_ends():
    a, b = t64([1e8, -3.0, 0.1]), t64([1.0, 7.0, 0.3])
    assert ember.lerp(a, b, 1.0).tolist() == b.tolist()
    assert ember.lerp(a, b, 0.0).tolist() == a.tolist()


def test_lerp_gradients():
    args = (rand(2, 3, requires_grad=True), rand(3, requires_grad=True), rand(2, 1, requires_grad=True))
    assert gradcheck(ember.lerp, args)
    assert gradgradcheck(ember.lerp, args)
    assert gradcheck(lambda a, b: ember.lerp(a, b, 0.3), args[:2])
    check_against_finite_differences(ember.lerp, [rand(2, 3), rand(3), rand(2, 1)], [rand(2, 3), rand(3), rand(2, 1)])


def test_lerp_needs_end_and_weight_of_self_dtype():
    # As PyTorch: `end` always, a tensor `weight` unless it is 0-d (then it is converted).
    h, f = ember.ones(3, dtype=ember.float16), ember.ones(3)
    with pytest.raises(RuntimeError, match="lerp: expected dtype Half for `end` but got dtype BFloat16"):
        ember.lerp(h, h.bfloat16(), 0.5)
    with pytest.raises(RuntimeError, match="expected dtype Float for `end` but got dtype Double"):
        ember.lerp(f, ember.tensor(2.0, dtype=F64), 0.5)
    with pytest.raises(RuntimeError, match="expected dtype Float for `weight` but got dtype Double"):
        ember.lerp(f, f, ember.ones(3, dtype=F64))
    with pytest.raises(RuntimeError, match="expected dtype Float for `end` but got dtype Half"):
        f.lerp_(h, 0.5)
    assert ember.lerp(f, f * 3, ember.tensor(0.5, dtype=F64)).tolist() == [2.0] * 3
    assert ember.lerp(f, f * 3, ember.tensor(1)).dtype == ember.float32


@needs_torch
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_lerp_matches_pytorch(dtype):
    a, b, w = (np.random.default_rng(i).standard_normal((4, 5)).astype(np.float32) for i in range(3))
    got = ember.lerp(ember.tensor(a).to(getattr(ember, dtype)), ember.tensor(b).to(getattr(ember, dtype)),
                     ember.tensor(w).to(getattr(ember, dtype)))
    want = torch.lerp(torch.tensor(a).to(getattr(torch, dtype)), torch.tensor(b).to(getattr(torch, dtype)),
                      torch.tensor(w).to(getattr(torch, dtype)))
    assert str(got.dtype).split(".")[-1] == dtype
    np.testing.assert_allclose(got.float().numpy(), want.float().numpy(), rtol=1e-2 if dtype != "float32" else 1e-6,
                               atol=1e-2 if dtype != "float32" else 1e-6)


# ---------------------------------------------------------------- addcmul, addcdiv

@pytest.mark.parametrize("value", [1, 0.5, -2])
def test_addcmul_addcdiv_forward(value):
    a, b, c = rand(3, 1), rand(1, 4), rand(4) + 3
    np.testing.assert_allclose(ember.addcmul(a, b, c, value=value).numpy(),
                               a.numpy() + value * b.numpy() * c.numpy(), rtol=1e-12)
    np.testing.assert_allclose(ember.addcdiv(a, b, c, value=value).numpy(),
                               a.numpy() + value * b.numpy() / c.numpy(), rtol=1e-12)
    x = rand(3, 4)
    want = x.numpy() + value * b.numpy() * c.numpy()
    x.addcmul_(b, c, value=value)
    np.testing.assert_allclose(x.numpy(), want, rtol=1e-12)
    out = ember.empty(0, dtype=F64)
    ember.addcdiv(a, b, c, value=value, out=out)
    assert out.shape == (3, 4)


def test_addcmul_integers_and_addcdiv_refuses_them():
    a, b, c = ember.tensor([1, 2]), ember.tensor([3, 4]), ember.tensor([5, 6])
    assert ember.addcmul(a, b, c, value=2).tolist() == [31, 50]
    assert ember.addcmul(a, b, c).dtype == ember.int64
    with pytest.raises(RuntimeError, match="addcdiv"):
        ember.addcdiv(a, b, c)


def test_addcmul_addcdiv_gradients():
    for op in (ember.addcmul, ember.addcdiv):
        fn = lambda a, b, c: op(a, b, c, value=0.5)  # noqa: E731
        args = (rand(3, 1, requires_grad=True), rand(1, 4, requires_grad=True), (rand(4) + 3).requires_grad_())
        assert gradcheck(fn, args)
        assert gradgradcheck(fn, args)
        check_against_finite_differences(fn, [rand(3, 1), rand(1, 4), rand(4) + 3], [rand(3, 1), rand(1, 4), rand(4)])


# ---------------------------------------------------------------- fmod, copysign, atan2, hypot

def test_fmod_has_the_sign_of_the_dividend():
    a, b = t64([5.5, -5.5, 5.5, -5.5]), t64([2.0, 2.0, -2.0, -2.0])
    assert ember.fmod(a, b).tolist() == [1.5, -1.5, 1.5, -1.5]
    assert ember.fmod(ember.tensor([7, -7]), 3).tolist() == [1, -1]
    assert a.fmod(2.0).tolist() == [1.5, -1.5, 1.5, -1.5]
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):  # PyTorch's class and words
        ember.fmod(ember.tensor([7, -7]), ember.tensor([0, 1]))


def test_fmod_gradient_and_jvp():
    a, b = t64([1.3, -2.6], True), t64([0.7, -1.9], True)
    assert gradcheck(ember.fmod, (a, b))
    check_against_finite_differences(ember.fmod, [t64([1.3, -2.6]), t64([0.7, -1.9])], [rand(2), rand(2)])


@needs_torch
@pytest.mark.parametrize("name", ["fmod", "copysign", "atan2", "arctan2", "hypot", "xlogy", "logaddexp"])
def test_binary_ops_match_pytorch_on_special_values(name):
    vals = [0.0, -0.0, 1.5, -2.5, math.inf, -math.inf, math.nan, 3.0]
    a = np.array([[x] * len(vals) for x in vals], dtype=np.float64)
    b = a.T.copy()
    got = getattr(ember, name)(ember.tensor(a), ember.tensor(b)).numpy()
    want = getattr(torch, name)(torch.tensor(a), torch.tensor(b)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-12, equal_nan=True)


@needs_torch
def test_result_dtypes_match_pytorch():
    i, f = ember.tensor([1, 2]), ember.tensor([1.5, 2.5], dtype=ember.float16)
    ti, tf = torch.tensor([1, 2]), torch.tensor([1.5, 2.5], dtype=torch.float16)
    for name in ["atan2", "copysign", "xlogy", "fmod"]:
        for x, y, tx, ty in [(i, i, ti, ti), (i, f, ti, tf)]:
            got, want = getattr(ember, name)(x, y), getattr(torch, name)(tx, ty)
            assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1], name
    assert ember.xlogy(2, ember.tensor([3.0])).tolist() == pytest.approx([2 * math.log(3)])


def test_logaddexp_is_stable():
    a, b = t64([1000.0, -1000.0, -math.inf, math.inf]), t64([1000.0, -1001.0, -math.inf, math.inf])
    got = ember.logaddexp(a, b).tolist()
    assert got[0] == pytest.approx(1000 + math.log(2))
    assert got[1] == pytest.approx(-1000 + math.log1p(math.exp(-1)))
    assert got[2:] == [-math.inf, math.inf]


# ---------------------------------------------------------------- logit, nan_to_num

def test_logit_eps_and_its_gradient():
    x = t64([0.05, 0.3, 0.9], True)
    assert ember.logit(x, eps=0.1).tolist() == pytest.approx([math.log(1 / 9), math.log(3 / 7), math.log(9)])
    ember.logit(x, 0.1).sum().backward()
    assert x.grad.tolist() == pytest.approx([0.0, 1 / (0.3 * 0.7), 1 / (0.9 * 0.1)])
    assert ember.logit(ember.tensor([0, 1])).tolist() == [-math.inf, math.inf]
    assert ember.logit(ember.tensor([0, 1])).dtype == ember.float32


@needs_torch
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64", "int32"])
def test_nan_to_num_matches_pytorch(dtype):
    vals = [math.nan, math.inf, -math.inf, 1.5, -2.0] if dtype != "int32" else [1, -2, 3]
    x, tx = ember.tensor(vals).to(getattr(ember, dtype)), torch.tensor(vals).to(getattr(torch, dtype))
    for kwargs in [{}, {"nan": 2.0}, {"posinf": 5.0, "neginf": -7.0}]:
        got, want = ember.nan_to_num(x, **kwargs), torch.nan_to_num(tx, **kwargs)
        assert str(got.dtype).split(".")[-1] == dtype
        np.testing.assert_array_equal(got.float().numpy(), want.float().numpy())
    y = x.clone()
    y.nan_to_num_(nan=4.0)
    np.testing.assert_array_equal(y.float().numpy(), torch.nan_to_num(tx, nan=4.0).float().numpy())


def test_nan_to_num_gradient_passes_where_kept():
    x = t64([math.nan, 2.0, math.inf, -3.0], True)
    (ember.nan_to_num(x) * 2).sum().backward()
    assert x.grad.tolist() == [0.0, 2.0, 0.0, 2.0]


# ---------------------------------------------------------------- lgamma, digamma

@needs_torch
def test_lgamma_digamma_match_pytorch_over_the_line():
    x = np.concatenate([np.linspace(-7.75, 30.25, 153), [0.0, -0.0, -1.0, -3.0, 1e-8, 1e5, math.inf, math.nan]])
    for name in ["lgamma", "digamma"]:
        got = getattr(ember, name)(ember.tensor(x)).numpy()
        want = getattr(torch, name)(torch.tensor(x)).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12, equal_nan=True, err_msg=name)
        got32 = getattr(ember, name)(ember.tensor(x, dtype=ember.float32)).numpy()
        np.testing.assert_allclose(got32, want.astype(np.float32), rtol=2e-5, atol=2e-5, equal_nan=True, err_msg=name)


@needs_torch
def test_digamma_gradient_is_trigamma():
    x = np.array([-2.5, -0.3, 0.2, 1.0, 4.5, 12.0])
    got = ember._C._trigamma(ember.tensor(x)).numpy()
    # Both series stop near 1e-10 relative (PyTorch's trigamma gives pi^2/6 to 6e-10).
    np.testing.assert_allclose(got, torch.polygamma(1, torch.tensor(x)).numpy(), rtol=2e-9)
    assert got[3] == pytest.approx(math.pi ** 2 / 6, rel=2e-10)
    t = t64(x.tolist(), True)
    ember.digamma(t).sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), got, rtol=1e-12)


@pytest.mark.parametrize("name", ["lerp", "addcmul", "addcdiv"])
def test_inplace_forms_on_a_non_leaf(name):
    def fn(a, b, c):
        return getattr(a * 1, name + "_")(b, c.abs() + 1) * a
    args = (rand(2, 3, requires_grad=True), rand(3, requires_grad=True), rand(2, 3, requires_grad=True))
    assert gradcheck(fn, args)
    assert gradgradcheck(fn, args)


# ---------------------------------------------------------------- logsumexp

def test_logsumexp_is_stable_and_handles_infinities():
    x = t64([[1000.0, 1000.0], [-1000.0, -1000.0], [-math.inf, -math.inf], [math.inf, 1.0], [-math.inf, 2.0]])
    got = ember.logsumexp(x, 1).tolist()
    want = [1000 + math.log(2), -1000 + math.log(2), -math.inf, math.inf, 2.0]
    assert got[2] == -math.inf and got[3] == math.inf
    np.testing.assert_allclose([got[i] for i in (0, 1, 4)], [want[i] for i in (0, 1, 4)], rtol=1e-15)
    assert math.isnan(ember.logsumexp(t64([1.0, math.nan]), 0).item())
    assert ember.logsumexp(ember.empty(0, 3), 0).tolist() == [-math.inf] * 3


def test_logsumexp_dims_dtypes_and_out():
    x = rand(2, 3, 4)
    want = np.log(np.exp(x.numpy()).sum(axis=(0, 2), keepdims=True))
    np.testing.assert_allclose(ember.logsumexp(x, (0, 2), keepdim=True).numpy(), want, rtol=1e-14)
    np.testing.assert_allclose(x.logsumexp(-1).numpy(), np.log(np.exp(x.numpy()).sum(-1)), rtol=1e-14)
    out = ember.empty(3, dtype=F64)
    assert ember.logsumexp(x, [0, 2], out=out) is out
    np.testing.assert_allclose(out.numpy(), want.reshape(3), rtol=1e-14)
    ints = ember.tensor([[1, 2], [3, 4]])
    assert ember.logsumexp(ints, 1).dtype == ember.float32      # integers in the default float dtype
    np.testing.assert_allclose(ember.logsumexp(ints, 1).numpy(), np.log(np.exp([[1, 2], [3, 4]]).sum(1)), rtol=1e-6)
    with pytest.raises(TypeError):
        ember.logsumexp(x)                                       # dim is required, as in PyTorch


def test_logsumexp_gradients():
    for args, kw in (((2, 3), {"dim": 1}), ((2, 3, 4), {"dim": (0, 2), "keepdim": True})):
        x = rand(*args, requires_grad=True)
        assert gradcheck(lambda t: ember.logsumexp(t, **kw), (x,))
        assert gradgradcheck(lambda t: ember.logsumexp(t, **kw), (x,))
        check_against_finite_differences(lambda t: ember.logsumexp(t, **kw), [rand(*args)], [rand(*args)])
    x = t64([[1.0, 2.0, 3.0]], True)
    ember.logsumexp(x, 1).sum().backward()
    e = np.exp([1.0, 2.0, 3.0])
    np.testing.assert_allclose(x.grad.numpy()[0], e / e.sum(), rtol=1e-14)   # softmax


@needs_torch
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64"])
def test_logsumexp_matches_pytorch(dtype):
    a = np.random.default_rng(3).standard_normal((5, 7)).astype(np.float32) * 20
    got = ember.logsumexp(ember.tensor(a).to(getattr(ember, dtype)), 1)
    want = torch.logsumexp(torch.tensor(a).to(getattr(torch, dtype)), 1)
    assert str(got.dtype) == str(want.dtype).replace("torch", "ember")
    tol = {"float16": 2e-3, "bfloat16": 1e-2}.get(dtype, 1e-6)
    np.testing.assert_allclose(got.float().numpy(), want.float().numpy(), rtol=tol)


# ---------------------------------------------------------------- isclose, allclose, equal

ISCLOSE_DTYPES = ["float64", "float32", "float16", "bfloat16", "int64", "int32", "uint8", "bool"]


@needs_torch
@pytest.mark.parametrize("dtype", ISCLOSE_DTYPES)
@pytest.mark.parametrize("kwargs", [{}, {"rtol": 0.1, "atol": 0.5}, {"equal_nan": True}, {"rtol": 0, "atol": 0}])
def test_isclose_matches_pytorch(dtype, kwargs):
    values = [0.0, 1.0, 2.0, 3.0, -1.0, math.inf, -math.inf, math.nan, 1.00001, 1.5]
    if dtype in ("bool",):
        values = [0, 1]
    elif not dtype.startswith(("float", "bfloat")):
        values = [0, 1, 2, 3, 5] if dtype == "uint8" else [0, 1, -2, 3, -5]
    a, b = (np.array(g.ravel()) for g in np.meshgrid(values, values, indexing="ij"))
    ea, eb = (ember.tensor(v.tolist()).to(getattr(ember, dtype)) for v in (a, b))
    ta, tb = (torch.tensor(v.tolist()).to(getattr(torch, dtype)) for v in (a, b))
    got = ember.isclose(ea, eb, **kwargs)
    assert got.dtype == ember.bool
    assert got.tolist() == torch.isclose(ta, tb, **kwargs).tolist()
    assert ea.isclose(eb, **kwargs).tolist() == got.tolist()
    assert ember.allclose(ea, eb, **kwargs) is torch.allclose(ta, tb, **kwargs)
    assert ember.allclose(ea, ea, **kwargs) is torch.allclose(ta, ta, **kwargs)
    assert ea.allclose(ea, **kwargs) is torch.allclose(ta, ta, **kwargs)


def test_isclose_against_numpy_and_broadcasting():
    a, b = rand(3, 1), rand(4)
    want = np.isclose(a.numpy(), b.numpy(), rtol=0.3, atol=0.2)
    assert ember.isclose(a, b, rtol=0.3, atol=0.2).numpy().tolist() == want.tolist()
    assert ember.isclose(a, b, rtol=0.3, atol=0.2).shape == (3, 4)


def test_isclose_errors():
    x = ember.ones(2)
    with pytest.raises(RuntimeError, match="Float did not match Double"):
        ember.isclose(x, x.double())
    with pytest.raises(RuntimeError, match="rtol must be greater than or equal to zero, but got -1"):
        ember.isclose(x, x, rtol=-1)
    with pytest.raises(RuntimeError, match="atol must be greater than or equal to zero"):
        ember.allclose(x, x, atol=-1)
    with pytest.raises(RuntimeError, match=r"^The size of tensor a \(2\) must match the size of tensor b \(3\) at non-singleton dimension 0$"):
        ember.allclose(x, ember.ones(3))
    with pytest.raises(TypeError, match=r"allclose\(\): argument 'other' \(position 2\) must be Tensor, not int"):
        ember.allclose(x, 1)
    with pytest.raises(TypeError, match=r"equal\(\): argument 'other' \(position 2\) must be Tensor, not float"):
        ember.equal(x, 1.0)


def test_equal():
    x = ember.tensor([1.0, 2.0])
    assert ember.equal(x, ember.tensor([1.0, 2.0])) is True
    assert x.equal(ember.tensor([1, 2])) is True               # compared after promotion, as PyTorch
    assert ember.equal(x, ember.tensor([1.0, 3.0])) is False
    assert ember.equal(x, ember.tensor([[1.0, 2.0]])) is False  # shapes differ: no broadcasting
    assert ember.equal(ember.tensor([math.nan]), ember.tensor([math.nan])) is False
    assert ember.equal(ember.empty(0), ember.empty(0)) is True


# ---------------------------------------------------------------- clamp with tensor bounds, clip, clamp_min/max

@needs_torch
def test_clamp_tensor_matches_pytorch():
    vals = [-2.0, -0.5, 0.0, 0.5, 2.0, math.nan, math.inf, -math.inf]
    x = np.array(vals)[:, None, None]
    lo = np.array([-1.0, 0.0, math.nan, 1.0])[None, :, None]
    hi = np.array([1.0, -1.0, math.nan])[None, None, :]       # -1 < some lows: max wins, as PyTorch
    for kw in ({"min": lo, "max": hi}, {"min": lo}, {"max": hi}):
        got = ember.clamp(ember.tensor(x), **{k: ember.tensor(v) for k, v in kw.items()})
        want = torch.clamp(torch.tensor(x), **{k: torch.tensor(v) for k, v in kw.items()})
        np.testing.assert_array_equal(got.numpy(), want.numpy())
        np.testing.assert_array_equal(ember.clip(ember.tensor(x), **{k: ember.tensor(v) for k, v in kw.items()}).numpy(),
                                      want.numpy())
    for a, b in ((ember.int64, ember.float32), (ember.float16, ember.float64), (ember.int32, ember.int64)):
        got = ember.clamp(ember.ones(3, dtype=a), ember.zeros(3, dtype=b))
        want = torch.clamp(torch.ones(3, dtype=getattr(torch, str(a)[6:])), torch.zeros(3, dtype=getattr(torch, str(b)[6:])))
        assert str(got.dtype)[6:] == str(want.dtype)[6:]
    got = ember.clamp(ember.ones(3, dtype=ember.int64), ember.tensor(1.5))  # a 0-d bound promotes by category
    assert got.dtype == ember.float32 and got.tolist() == [1.5] * 3


def test_clamp_tensor_forms():
    x, lo, hi = rand(3, 4), rand(4) - 1, rand(3, 1) + 1
    want = np.minimum(np.maximum(x.numpy(), lo.numpy()), hi.numpy())
    np.testing.assert_array_equal(x.clamp(lo, hi).numpy(), want)
    np.testing.assert_array_equal(x.clip(lo, hi).numpy(), want)
    out = ember.empty(3, 4, dtype=F64)
    assert ember.clamp(x, lo, hi, out=out) is out
    np.testing.assert_array_equal(out.numpy(), want)
    y = x.clone()
    y.clamp_(min=lo, max=hi)
    np.testing.assert_array_equal(y.numpy(), want)
    y = x.clone()
    y.clip_(lo, hi)
    np.testing.assert_array_equal(y.numpy(), want)
    np.testing.assert_array_equal(ember.clamp_min(x, lo).numpy(), np.maximum(x.numpy(), lo.numpy()))
    np.testing.assert_array_equal(x.clamp_max(hi).numpy(), np.minimum(x.numpy(), hi.numpy()))
    np.testing.assert_array_equal(x.clamp_min(0.25).numpy(), np.maximum(x.numpy(), 0.25))
    np.testing.assert_array_equal(ember.clamp_max(x, 0.25).numpy(), np.minimum(x.numpy(), 0.25))
    y = x.clone()
    y.clamp_min_(lo)
    np.testing.assert_array_equal(y.numpy(), np.maximum(x.numpy(), lo.numpy()))
    with pytest.raises(RuntimeError, match="At least one of 'min' or 'max' must not be None"):
        ember.clamp(x, None, None)
    with pytest.raises(RuntimeError, match="At least one of 'min' or 'max' must not be None"):
        ember.clip(x)


def _clamp3(x, lo, hi):
    return ember.clamp(x, lo, hi)


def test_clamp_tensor_gradients():
    # Values away from the bounds: the gradient jumps there.
    x = t64([[-2.0, -0.3, 0.4, 2.5], [0.1, 1.7, -1.4, 0.9]], True)
    lo = t64([-1.0, -0.5, 0.2, 0.0], True)
    hi = t64([[1.5], [0.6]], True)
    assert gradcheck(_clamp3, (x, lo, hi))
    assert gradgradcheck(_clamp3, (x, lo, hi))
    assert gradcheck(lambda a, b: ember.clamp_min(a, b), (x, lo))
    assert gradgradcheck(lambda a, b: ember.clamp_max(a, b), (x, hi))
    check_against_finite_differences(_clamp3, [x.detach(), lo.detach(), hi.detach()],
                                     [rand(2, 4), rand(4), rand(2, 1)])
    # A tie passes the gradient to self, as PyTorch's clamp_backward; min > max sends it to max.
    a, b, c = t64([0.5, 0.0], True), t64([0.5, 1.0], True), t64([2.0, -1.0], True)
    ember.clamp(a, b, c).sum().backward()
    assert a.grad.tolist() == [1.0, 0.0] and b.grad.tolist() == [0.0, 0.0] and c.grad.tolist() == [0.0, 1.0]


def test_clamp_tensor_inplace_gradients_on_a_non_leaf():
    def fn(a, lo, hi):
        return (a * 1).clamp_(lo, hi) * a
    args = (t64([[-2.0, -0.3, 0.4, 2.5]], True), t64([-1.0, -0.5, 0.2, 0.0], True), t64([1.5], True))
    assert gradcheck(fn, args)
    assert gradgradcheck(fn, args)


# ---------------------------------------------------------------- var_mean, std_mean, aminmax, nansum, nanmean, count_nonzero

@needs_torch
@pytest.mark.parametrize("name", ["var_mean", "std_mean"])
@pytest.mark.parametrize("kwargs", [{}, {"dim": 1}, {"dim": (0, 2), "keepdim": True}, {"dim": 1, "unbiased": False},
                                    {"dim": 1, "correction": 0}, {"correction": 2}])
def test_var_mean_std_mean_match_pytorch(name, kwargs):
    a = np.random.default_rng(5).standard_normal((3, 4, 5))
    got = getattr(ember, name)(ember.tensor(a), **kwargs)
    want = getattr(torch, name)(torch.tensor(a), **kwargs)
    assert isinstance(got, tuple) and len(got) == 2
    for g, w in zip(got, want):
        assert tuple(g.shape) == tuple(w.shape)
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-13)


def test_var_mean_gradients():
    x = rand(3, 4, requires_grad=True)
    for name in ("var_mean", "std_mean"):
        fn = lambda t, f=getattr(ember, name): f(t, 1)   # noqa: E731
        assert gradcheck(fn, (x,))
        assert gradgradcheck(fn, (x,))


@needs_torch
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "uint8", "bool", "bfloat16"])
def test_aminmax_matches_pytorch(dtype):
    a = np.random.default_rng(6).integers(0, 9, (3, 4)).astype(np.float64)
    x, t = ember.tensor(a).to(getattr(ember, dtype)), torch.tensor(a).to(getattr(torch, dtype))
    for kw in ({}, {"dim": 0}, {"dim": -1, "keepdim": True}, {"keepdim": True}):
        got, want = ember.aminmax(x, **kw), torch.aminmax(t, **kw)
        assert type(got).__name__ == "aminmax"
        assert got.min.tolist() == want.min.tolist() and got.max.tolist() == want.max.tolist()
        assert got.min.dtype == x.dtype
    assert x.aminmax(dim=1).max.tolist() == t.aminmax(dim=1).max.tolist()
    with pytest.raises(IndexError, match="Expected reduction dim 0 to have non-zero size"):
        ember.aminmax(ember.empty(0, 3), dim=0)
    with pytest.raises(RuntimeError, match="cannot compute aminmax over an empty dimension"):
        ember.aminmax(ember.empty(0, 3))


def test_aminmax_gradients():
    x = t64([[1.0, -2.0, 0.5], [3.0, 0.25, -1.5]], True)
    fn = lambda t: ember.aminmax(t, dim=1)   # noqa: E731
    assert gradcheck(fn, (x,))
    assert gradgradcheck(fn, (x,))


def test_nansum_nanmean():
    a = np.array([[1.0, math.nan, 3.0], [math.nan, math.nan, math.nan]])
    x = ember.tensor(a)
    np.testing.assert_array_equal(ember.nansum(x, 1).numpy(), np.nansum(a, 1))
    np.testing.assert_array_equal(x.nansum().numpy(), np.nansum(a))
    np.testing.assert_array_equal(ember.nanmean(x, 1).numpy(), [2.0, math.nan])
    np.testing.assert_array_equal(x.nanmean(dim=0, keepdim=True).numpy(), [[1.0, math.nan, 3.0]])
    assert ember.nansum(ember.tensor([1, 2], dtype=ember.int8)).dtype == ember.int64
    assert ember.nansum(x.float(), dtype=ember.float64).dtype == ember.float64
    out = ember.empty(2, dtype=F64)
    assert ember.nanmean(x, 1, out=out) is out
    with pytest.raises(RuntimeError, match="nanmean\\(\\): expected input to have floating point or complex dtype but got Long"):
        ember.nanmean(ember.tensor([1, 2]))
    # NaN elements get no gradient.
    t = t64([1.0, math.nan, 3.0], True)
    ember.nanmean(t).backward()
    np.testing.assert_array_equal(t.grad.numpy(), [0.5, 0.0, 0.5])
    t = t64([[1.0, 2.0], [0.5, -1.0]], True)
    assert gradcheck(lambda v: ember.nanmean(v, 0), (t,)) and gradgradcheck(lambda v: ember.nansum(v, 1), (t,))


@needs_torch
def test_nansum_nanmean_match_pytorch_for_half_types():
    a = np.random.default_rng(7).standard_normal((4, 300)).astype(np.float32)
    a[a > 1.5] = np.nan
    for dtype in ("float16", "bfloat16"):
        x, t = ember.tensor(a).to(getattr(ember, dtype)), torch.tensor(a).to(getattr(torch, dtype))
        for name in ("nansum", "nanmean"):
            got, want = getattr(ember, name)(x, 1), getattr(torch, name)(t, 1)
            assert str(got.dtype)[6:] == str(want.dtype)[6:]
            np.testing.assert_allclose(got.float().numpy(), want.float().numpy(), rtol=1e-2, atol=1e-2)


def test_count_nonzero():
    a = np.array([[0, 1, 2], [0, 0, 3]])
    x = ember.tensor(a)
    assert ember.count_nonzero(x).item() == 3 and ember.count_nonzero(x).dtype == ember.int64
    assert ember.count_nonzero(x, 0).tolist() == [0, 1, 2]
    assert x.count_nonzero(dim=(0, 1)).item() == 3
    assert ember.count_nonzero(x, dim=[]).item() == 3     # an empty list counts everything, as PyTorch
    assert ember.count_nonzero(x.float(), [-1]).tolist() == [2, 1]
    assert ember.count_nonzero(ember.tensor([True, False, True])).item() == 2
    assert ember.count_nonzero(ember.tensor([math.nan, 0.0, -0.0])).item() == 1
    with pytest.raises(IndexError):
        ember.count_nonzero(x, 2)


def test_isclose_keeps_the_graph_of_what_it_selects():
    fn = lambda a, b: ember.where(ember.isclose(a, b, atol=0.1), a * a, a * b)   # noqa: E731
    check_against_finite_differences(fn, [t64([1.0, -2.0, 0.5]), t64([1.05, 2.0, 0.0])],
                                     [t64([0.3, 1.0, -0.5]), t64([1.0, 0.5, 2.0])])
    check_against_finite_differences(lambda a, lo: ember.clip(a, lo), [t64([1.3, -0.4]), t64([0.25, 0.5])],
                                     [t64([0.3, 1.0]), t64([1.0, 0.5])])


def test_count_nonzero_is_a_constant_to_forward_ad():
    # no zero in `a`: finite differences would move it off zero and change the count
    check_against_finite_differences(lambda a: ember.count_nonzero(a) * a * a, [t64([1.3, -0.7, 0.2])],
                                     [t64([0.5, 1.0, -2.0])])
    check_against_finite_differences(lambda a: ember.count_nonzero(a, [1]) * a, [t64([[1.3, -0.7, 0.2]])],
                                     [t64([[0.5, 1.0, -2.0]])])


def test_a_differentiable_0d_bound_reaches_clamp_tensor():
    # As PyTorch's parser: a 0-d tensor needing a gradient (or carrying a tangent) is no Scalar.
    lo = t64(0.5, True)
    x = t64([0.0, 1.0])
    ember.clamp(x, lo).sum().backward()
    assert lo.grad.item() == 1.0
    with pytest.raises(RuntimeError, match="fill_ only supports 0-dimension value tensor"):
        ember.zeros(2).fill_(ember.tensor([2.5]))

