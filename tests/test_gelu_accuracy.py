"""gelu (approximate='none') and its derivative kernel against float64 references over the whole float
range: a dense grid of [-20, 20] (the far negative tail keeps its relative accuracy down to the subnormal
results), special values, sizes around the pointwise grain, strided inputs and 1/2/3 threads. The float32
CPU path is math_gelu.h's own formula, not libm's erfc, so it is checked here beyond the harness's samples."""
import math

import numpy as np
import pytest

import ember
import ember.nn.functional as F

try:
    import torch
except ImportError:  # the comparisons with PyTorch skip; the rest runs
    torch = None

TINY = float(np.finfo(np.float32).tiny)  # the smallest normal float32
RTOL, ATOL = 4e-6, 1e-6  # ops.yaml's float32 tolerances of _gelu_erf and _gelu_erf_backward
_erfc = np.vectorize(math.erfc, otypes=[np.float64])


def ref_gelu(x):
    x = np.asarray(x, dtype=np.float64)
    return x * 0.5 * _erfc(-x / math.sqrt(2))


def ref_gelu_grad(x):
    x = np.asarray(x, dtype=np.float64)
    return 0.5 * _erfc(-x / math.sqrt(2)) + x * np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)


def gelu(x):
    return F.gelu(ember.from_numpy(np.ascontiguousarray(x))).numpy()


def gelu_grad(x, g=None):
    g = np.ones_like(x) if g is None else g
    return ember._gelu_erf_backward(ember.from_numpy(np.ascontiguousarray(x)), ember.from_numpy(g)).numpy()


def check_gelu(x, y):
    """Relative accuracy wherever the result is a normal float, a few units of the last subnormal place below."""
    ref = ref_gelu(x)
    y = y.astype(np.float64)
    normal = np.abs(ref) >= TINY
    rel = np.abs(y - ref)[normal] / np.abs(ref)[normal]
    assert rel.max() <= RTOL, f"relative error {rel.max():.3g} at x = {x[normal][rel.argmax()]!r}"
    assert np.abs(y - ref)[~normal].max(initial=0.0) <= 8 * 2.0 ** -149


def check_grad(x, y, g=1.0):
    ref = ref_gelu_grad(x) * g
    err = np.abs(y.astype(np.float64) - ref)
    assert np.all(err <= ATOL + RTOL * np.abs(ref)), f"error {err.max():.3g} at x = {x[err.argmax()]!r}"
    # away from its zero (x = -0.75, where only absolute accuracy holds) the derivative is relatively accurate,
    # in the tail too (phi(-13) ~ 1e-37)
    far = (np.abs(x) > 2) & (np.abs(ref) >= TINY)
    rel = err[far] / np.abs(ref[far])
    assert rel.max(initial=0.0) <= RTOL, f"relative error {rel.max():.3g} at x = {x[far][rel.argmax()]!r}"


GRID = np.linspace(-20, 20, 800001, dtype=np.float32)
# every float32 between -14.5 and -12.5: where Phi(x) turns subnormal while x Phi(x) and phi(x) stay normal
TAIL = np.arange(np.float32(-14.5).view(np.int32), np.float32(-12.5).view(np.int32), -7, dtype=np.int32).view(np.float32)


@pytest.mark.parametrize("x", [GRID, TAIL], ids=["grid", "tail"])
def test_float32_over_the_range(x):
    check_gelu(x, gelu(x))
    check_grad(x, gelu_grad(x))


def test_float32_near_zero_and_subnormal_inputs():
    x = np.concatenate([np.geomspace(1e-45, 1e-3, 2000, dtype=np.float32), [0.0]]).astype(np.float32)
    x = np.concatenate([x, -x])
    check_gelu(x, gelu(x))
    check_grad(x, gelu_grad(x))
    assert np.signbit(gelu(np.array([-0.0], np.float32)))[0]  # -0 * Phi(0)


def test_float32_special_values():
    x = np.array([-np.inf, np.inf, np.nan, -13, -20, 20, -21, 21, -1e30, 1e30, -3.4e38, 3.4e38], np.float32)
    y, dy = gelu(x), gelu_grad(x)
    with np.errstate(invalid="ignore", over="ignore"):
        ref, dref = ref_gelu(x), ref_gelu_grad(x)
    # as x * Phi(x): NaN at -inf (inf * 0), inf at inf; the derivative Phi(x) + x phi(x) is NaN at both
    np.testing.assert_array_equal(np.isnan(y), [True, False, True] + [False] * 9)
    np.testing.assert_array_equal(np.isnan(dy), [True, True, True] + [False] * 9)
    assert y[1] == np.inf and y[5] == 20 and y[7] == 21 and y[9] == 1e30 and y[11] == np.float32(3.4e38)
    np.testing.assert_allclose(y[3], ref[3], rtol=RTOL)  # -7.95e-38: x * Phi(x) with Phi(x) subnormal
    assert np.all(y[[4, 6, 8, 10]] == 0) and np.all(np.signbit(y[[4, 6, 8, 10]]))  # -0.0, as x * 0
    np.testing.assert_array_equal(dy[3:], np.float32(dref[3:]))


@pytest.mark.parametrize("n", [32767, 32768, 32769, 65537, 98311])  # around the pointwise grain (32768)
def test_float32_sizes_and_threads(n, threads):
    assert ember._C._thresholds()["grain_size"] == 32768
    rng = np.random.default_rng(n)
    x = (rng.standard_normal(n) * 6).astype(np.float32)
    g = rng.standard_normal(n).astype(np.float32)
    check_gelu(x, gelu(x))
    check_grad(x, gelu_grad(x, g), g.astype(np.float64))


def test_float32_strided_inputs(threads):
    rng = np.random.default_rng(0)
    a = (rng.standard_normal((300, 257)) * 5).astype(np.float32)
    for view in (lambda t: t.t(), lambda t: t[:, ::3], lambda t: t[::2].t()[5:]):
        x = view(ember.from_numpy(a))
        xn = x.numpy()
        check_gelu(xn.ravel(), F.gelu(x).numpy().ravel())
        g = ember.ones(x.shape).expand(*x.shape)
        check_grad(xn.ravel(), ember._gelu_erf_backward(x, g).numpy().ravel())


def test_autograd_uses_the_derivative_kernel():
    x = np.linspace(-15, 6, 1001, dtype=np.float32)
    t = ember.from_numpy(x).requires_grad_()
    F.gelu(t).sum().backward()
    check_grad(x, t.grad.numpy())


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_types_round_the_float32_result(dtype):
    x = ember.linspace(-12, 12, 2001).to(getattr(ember, dtype))
    want = F.gelu(x.float()).to(getattr(ember, dtype))
    assert ember.equal(F.gelu(x), want)


def test_float64_unchanged():
    x = np.linspace(-8, 8, 20001)
    y = F.gelu(ember.from_numpy(x)).numpy()
    # erfc's argument x / sqrt(2) rounds: a relative error of ~x^2 ulps in the tail (1e-14 at -8)
    np.testing.assert_allclose(y, ref_gelu(x), rtol=2e-14, atol=1e-300)
    dy = ember._gelu_erf_backward(ember.from_numpy(x), ember.ones(x.shape, dtype=ember.float64)).numpy()
    np.testing.assert_allclose(dy, ref_gelu_grad(x), rtol=1e-14, atol=1e-15)


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
def test_matches_torch_where_torch_is_accurate():
    # PyTorch's float kernel (1 + erf) rounds Phi(x) to 0 below x ~ -5.5: compare above
    x = np.linspace(-5, 12, 100001, dtype=np.float32)
    want = torch.nn.functional.gelu(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(gelu(x), want, rtol=2e-5, atol=1e-6)
    dwant = torch.ops.aten.gelu_backward(torch.ones(x.shape), torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(gelu_grad(x), dwant, rtol=2e-5, atol=1e-6)
