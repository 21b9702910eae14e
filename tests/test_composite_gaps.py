"""torch.* composites and factories written in Python (ember/_composites.py, _quantile.py,
_factories.py, _legacy_linalg.py, _runtime_flags.py): against NumPy always, against PyTorch when installed,
with non-contiguous inputs and float64 gradchecks."""
import warnings

import numpy as np
import pytest

import ember

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
RNG = np.random.default_rng(0)


def arr(*shape, dtype=np.float64):
    return RNG.standard_normal(shape).astype(dtype)


def t(a, requires_grad=False):
    return ember.tensor(a, requires_grad=requires_grad)


def noncontig(a):
    """An ember tensor equal to a whose layout is transposed (2+ dims) or strided (1-D)."""
    if a.ndim >= 2:
        return ember.tensor(np.ascontiguousarray(np.swapaxes(a, -1, -2))).transpose(-1, -2)
    return ember.tensor(np.repeat(a, 2))[::2]


def close(x, expected, **kw):
    np.testing.assert_allclose(x.detach().numpy(), expected, **kw)


def gradcheck(fn, *arrays):
    inputs = [ember.tensor(a, requires_grad=True) for a in arrays]
    assert ember.autograd.gradcheck(fn, inputs, eps=1e-6, atol=1e-5, rtol=1e-3)


def test_inner_vdot_ravel():
    a, b = arr(2, 3), arr(4, 3)
    for x in (t(a), noncontig(a)):
        close(ember.inner(x, noncontig(b)), np.inner(a, b), rtol=1e-12)
        close(x.ravel(), a.ravel())
    close(ember.inner(t(np.float64(2.0)), t(a)), 2 * a)
    v, w = arr(5), arr(5)
    close(ember.vdot(noncontig(v), t(w)), np.vdot(v, w), rtol=1e-12)
    with pytest.raises(RuntimeError, match=r"inner\(\) the last dimension must match"):
        ember.inner(t(a), t(arr(4)))
    with pytest.raises(RuntimeError, match="1D tensors expected, but got 2D and 1D tensors"):
        ember.vdot(t(a), t(v))
    gradcheck(ember.inner, a, b)
    gradcheck(ember.vdot, v, w)
    contiguous = t(a)
    assert ember.ravel(contiguous).data_ptr() == contiguous.data_ptr()  # a view when the layout allows, as torch's


def test_splits_and_stacks():
    a = np.arange(24.0).reshape(2, 3, 4)
    x = t(a)
    for got, exp in zip(ember.dsplit(x, 2), np.dsplit(a, 2)):
        close(got, exp)
    for got, exp in zip(ember.vsplit(x, [1]), np.vsplit(a, [1])):
        close(got, exp)
    for got, exp in zip(x.hsplit([1, 2]), np.hsplit(a, [1, 2])):
        close(got, exp)
    for got, exp in zip(ember.hsplit(t(np.arange(6.0)), 3), np.hsplit(np.arange(6.0), 3)):
        close(got, exp)
    with pytest.raises(RuntimeError, match="torch.dsplit attempted to split along dimension 2, but the size of the "
                                           "dimension 4 is not divisible by the split_size 3!"):
        ember.dsplit(x, 3)
    with pytest.raises(RuntimeError, match="torch.vsplit requires a tensor with at least 2 dimension"):
        ember.vsplit(t(np.arange(4.0)), 2)
    close(ember.column_stack([t(np.float64(1.0)).expand(3), noncontig(np.ones((3, 2)))]),
          np.column_stack([np.ones(3), np.ones((3, 2))]))
    close(ember.column_stack([t(np.arange(3.0)), t(np.arange(3.0))]), np.column_stack([np.arange(3.0)] * 2))
    d = arr(2, 2)
    close(ember.diagflat(noncontig(d), 1), np.diagflat(d, 1))
    close(t(d).diagflat(-2), np.diagflat(d, -2))
    gradcheck(lambda y: ember.column_stack([y, y]), arr(3))


def test_block_diag():
    a, b, c = arr(2, 3), arr(1), np.float64(4.0)
    expected = np.zeros((4, 5))
    expected[:2, :3] = a
    expected[2, 3] = b[0]
    expected[3, 4] = c
    close(ember.block_diag(noncontig(a), t(b), t(c)), expected)
    mixed = ember.block_diag(ember.tensor([[1, 2]]), ember.tensor([0.5]))
    assert mixed.dtype == ember.float32 and mixed.tolist() == [[1, 2, 0], [0, 0, 0.5]]
    assert ember.block_diag().shape == (1, 0)
    with pytest.raises(RuntimeError, match="Input tensors must have 2 or fewer dimensions. Input 1 has 3 dimensions"):
        ember.block_diag(t(a), t(arr(1, 1, 1)))
    gradcheck(lambda x, y: ember.block_diag(x, y), a, arr(2, 2))


def test_broadcast_shapes():
    assert ember.broadcast_shapes((2, 1), (3,), 1) == ember.Size([2, 3])
    assert ember.broadcast_shapes() == ember.Size([])
    assert ember.broadcast_shapes((0, 1), (4,)) == (0, 4)
    assert ember.broadcast_shapes((5, 1, 3), (4, 1)) == np.broadcast_shapes((5, 1, 3), (4, 1))
    with pytest.raises(RuntimeError, match="Attempting to broadcast a dimension of length 3 at -1!"):
        ember.broadcast_shapes((2,), (3,))
    with pytest.raises(ValueError, match="negative length"):
        ember.broadcast_shapes((-1,))


@pytest.mark.parametrize("correction", [0, 1, 2])
def test_cov_corrcoef(correction):
    a = arr(3, 6)
    fw = RNG.integers(1, 4, 6)
    aw = RNG.uniform(0.5, 2, 6)
    close(ember.cov(noncontig(a), correction=correction), np.cov(a, ddof=correction), rtol=1e-12)
    close(ember.cov(t(a), correction=correction, fweights=ember.tensor(fw), aweights=t(aw)),
          np.cov(a, ddof=correction, fweights=fw, aweights=aw), rtol=1e-12)
    close(t(a).corrcoef(), np.corrcoef(a), rtol=1e-12)
    close(ember.cov(ember.tensor([1, 2, 4])), np.cov([1, 2, 4]), rtol=1e-6)
    gradcheck(lambda x: ember.cov(x, correction=correction), a)
    gradcheck(ember.corrcoef, a)
    with pytest.warns(UserWarning, match="degrees of freedom is <= 0"):
        assert ember.cov(t(arr(3)), correction=3).item() == float("inf")


def test_trapezoid():
    y, x = arr(3, 5), np.sort(arr(5))
    close(ember.trapezoid(noncontig(y), t(x)), np.trapezoid(y, x), rtol=1e-12)
    close(ember.trapezoid(t(y), dx=0.5, dim=0), np.trapezoid(y, dx=0.5, axis=0), rtol=1e-12)
    xs = np.sort(arr(3, 5), axis=1)
    close(ember.trapz(t(y), t(xs)), np.trapezoid(y, xs), rtol=1e-12)
    cum = ember.cumulative_trapezoid(t(y), t(x))
    expected = np.cumsum((y[:, 1:] + y[:, :-1]) * np.diff(x) / 2, axis=1)
    close(cum, expected, rtol=1e-12)
    assert ember.trapezoid(ember.tensor([1, 2, 3])).item() == 4.0
    assert ember.trapezoid(ember.ones(2, 0)).tolist() == [0.0, 0.0]
    with pytest.raises(RuntimeError, match="There must be one `x` value for each sample point"):
        ember.trapezoid(t(y), t(arr(4)))
    gradcheck(lambda a, b: ember.trapezoid(a, b), y, x)
    gradcheck(lambda a: ember.cumulative_trapezoid(a, dx=2.0), y)


def test_vander():
    x = np.array([1.0, 2.0, -3.0, 0.5])
    close(ember.vander(noncontig(x)), np.vander(x))
    close(ember.vander(t(x), N=3, increasing=True), np.vander(x, 3, increasing=True))
    ints = ember.vander(ember.tensor([1, 2, 3]), N=0)
    assert ints.shape == (3, 0) and ints.dtype == ember.int64
    assert ember.vander(ember.tensor([True, False])).tolist() == [[1, 1], [0, 1]]
    with pytest.raises(RuntimeError, match="x must be a one-dimensional tensor."):
        ember.vander(ember.ones(2, 2))
    with pytest.raises(RuntimeError, match="N must be non-negative."):
        ember.vander(ember.ones(2), N=-1)
    gradcheck(lambda a: ember.vander(a, 4), x)


def test_unravel_index_and_isin():
    idx = np.array([5, 13, -1, 0])
    for got, exp in zip(ember.unravel_index(ember.tensor(idx), (3, 5)), np.unravel_index(idx % 15, (3, 5))):
        assert got.tolist() == exp.tolist()
    assert ember.unravel_index(ember.tensor(1), ()) == ()
    with pytest.raises(TypeError, match="expected 'indices' to be integer dtype"):
        ember.unravel_index(ember.tensor(1.0), (3,))
    with pytest.raises(ValueError, match="'shape' cannot have negative values"):
        ember.unravel_index(ember.tensor(1), (3, -4))
    # As torch: indices wrap modulo the size (no bounds check).
    assert [c.item() for c in ember.unravel_index(ember.tensor(-16), (3, 5))] == [2, 4]
    e, pool = RNG.integers(0, 10, (4, 5)), RNG.integers(0, 10, 6)
    assert ember.isin(ember.tensor(e).t(), ember.tensor(pool)).tolist() == np.isin(e.T, pool).tolist()
    assert ember.isin(ember.tensor(e), ember.tensor(pool), invert=True).tolist() == np.isin(e, pool, invert=True).tolist()
    assert ember.isin(ember.tensor([1, 2, 3]), 2).tolist() == [False, True, False]
    assert ember.isin(3, ember.tensor([1, 2, 3])).item() is True
    assert ember.isin(ember.tensor([1.0, float("nan")]), ember.tensor([1, 2])).tolist() == [True, False]
    assert ember.isin(ember.tensor([1.0]), ember.tensor([])).tolist() == [False]


def test_chain_matmul_addr_renorm():
    m = [arr(2, 3), arr(3, 4), arr(4, 2)]
    with pytest.warns(UserWarning, match="chain_matmul is deprecated"):
        close(ember.chain_matmul(*[noncontig(a) for a in m]), m[0] @ m[1] @ m[2], rtol=1e-12)
    inp, v1, v2 = arr(3, 4), arr(3), arr(4)
    close(ember.addr(noncontig(inp), t(v1), noncontig(v2), beta=0.5, alpha=2), 0.5 * inp + 2 * np.outer(v1, v2))
    nan = t(np.full((3, 4), np.nan))
    close(ember.addr(nan, t(v1), t(v2), beta=0), np.outer(v1, v2))
    ints = ember.addr(ember.ones(2, 2, dtype=ember.int64), ember.ones(2, dtype=ember.int64),
                      ember.ones(2, dtype=ember.int64), beta=2, alpha=3)
    assert ints.tolist() == [[5, 5], [5, 5]] and ints.dtype == ember.int64
    with pytest.raises(RuntimeError, match="argument alpha must not be a floating point number"):
        ember.addr(ember.ones(2, 2, dtype=ember.int64), ember.ones(2, dtype=ember.int64),
                   ember.ones(2, dtype=ember.int64), alpha=0.5)
    y = t(inp.copy())
    y.addr_(t(v1), t(v2))
    close(y, inp + np.outer(v1, v2))
    gradcheck(lambda a, b, c: ember.addr(a, b, c, beta=0.5, alpha=2), inp, v1, v2)

    x = arr(3, 4) * 3
    norms = np.linalg.norm(x, 2, axis=1, keepdims=True)
    expected = np.where(norms > 1.5, x * 1.5 / (norms + 1e-7), x)
    close(ember.renorm(noncontig(x), 2, 0, 1.5), expected, rtol=1e-12)
    z = t(x.copy())
    z.renorm_(2, 0, 1.5)
    close(z, expected, rtol=1e-12)
    with pytest.raises(RuntimeError, match="renorm: non-positive-norm not supported"):
        ember.renorm(t(x), 0, 0, 1)
    with pytest.raises(RuntimeError, match="renorm: expected maxnorm to be >= 0 but got -1"):
        ember.renorm(t(x), 1, 0, -1)
    gradcheck(lambda a: ember.renorm(a, 2, 1, 1.0), x)
