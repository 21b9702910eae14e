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
