"""Composite ops: div rounding modes, matmul, mean/var/std, max/min, cat/stack/split/chunk/unbind."""
import re

import numpy as np
import pytest

import ember


def t_(a):
    return ember.from_numpy(np.array(a, order="C"))


def np_(t):
    return np.array(t.detach().numpy())


def rnd(*shape, dtype=np.float32, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


# ---------------------------------------------------------------- div

def test_div_true():
    a = np.array([7.0, -7.0, 5.5, -0.5], dtype=np.float32)
    b = np.array([2.0, 2.0, -2.0, 3.0], dtype=np.float32)
    np.testing.assert_allclose(np_(ember.div(t_(a), t_(b))), a / b, rtol=1e-6)
    r = ember.div(t_(np.array([7, -7, 3])), t_(np.array([2, 2, -4])))
    assert r.dtype == ember.float32
    np.testing.assert_allclose(np_(r), [3.5, -3.5, -0.75])


def test_div_python_number():
    a = np.array([7.0, -7.0, 5.5], dtype=np.float32)
    np.testing.assert_allclose(np_(t_(a).div(2)), a / 2)
    np.testing.assert_allclose(np_(ember.div(t_(a), 2, rounding_mode="floor")), np.floor_divide(a, 2))
    r = ember.div(t_(np.array([7, -7])), 2, rounding_mode="trunc")
    assert r.dtype == ember.int64
    np.testing.assert_array_equal(np_(r), [3, -3])


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.int32])
def test_div_rounding_modes(dtype):
    a = np.array([7, -7, 7, -7, 9, 0], dtype=dtype)
    b = np.array([2, 2, -2, -2, 3, 5], dtype=dtype)
    x, y = t_(a), t_(b)
    trunc = ember.div(x, y, rounding_mode="trunc")
    floor = ember.div(x, y, rounding_mode="floor")
    assert trunc.dtype == x.dtype and floor.dtype == x.dtype
    np.testing.assert_array_equal(np_(trunc), np.trunc(a / b).astype(dtype))
    np.testing.assert_array_equal(np_(floor), np.floor_divide(a, b))
    np.testing.assert_array_equal(np_(x.div(y, rounding_mode="floor")), np.floor_divide(a, b))


def test_div_fractional_floats():
    a = rnd(50, seed=1) * 10
    b = rnd(50, seed=2) + 3
    x, y = t_(a), t_(b)
    np.testing.assert_allclose(np_(ember.div(x, y, rounding_mode="trunc")), np.trunc(a / b), atol=1e-5)
    np.testing.assert_allclose(np_(ember.div(x, y, rounding_mode="floor")), np.floor_divide(a, b), atol=1e-5)


def test_div_inplace_and_out():
    a = np.array([5.0, -5.0], dtype=np.float32)
    x = t_(a.copy())
    x.div_(t_(np.array([2.0, 2.0], dtype=np.float32)), rounding_mode="floor")
    np.testing.assert_array_equal(np_(x), [2.0, -3.0])
    out = ember.empty(2)
    ember.div(t_(a), t_(np.array([4.0, 4.0], dtype=np.float32)), out=out)
    np.testing.assert_array_equal(np_(out), [1.25, -1.25])


def test_div_bad_rounding_mode():
    x = t_(np.array([1.0], dtype=np.float32))
    with pytest.raises(ValueError, match=re.escape("div expected rounding_mode to be one of None, 'trunc', or "
                                                   "'floor' but found 'x'")):
        ember.div(x, x, rounding_mode="x")


def test_div_grad():
    a = ember.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = ember.tensor([2.0, 4.0, 5.0], requires_grad=True)
    ember.div(a, b).sum().backward()
    np.testing.assert_allclose(np_(a.grad), 1 / np.array([2.0, 4.0, 5.0]), rtol=1e-6)
    np.testing.assert_allclose(np_(b.grad), -np.array([1.0, 2.0, 3.0]) / np.array([2.0, 4.0, 5.0]) ** 2, rtol=1e-6)


# ---------------------------------------------------------------- matmul

@pytest.mark.parametrize("sa,sb", [
    ((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)),
    ((5, 2, 3), (3, 4)), ((5, 2, 3), (3,)), ((3,), (5, 3, 4)), ((2, 3), (5, 3, 4)),
    ((5, 2, 3), (5, 3, 4)), ((5, 1, 2, 3), (4, 3, 2)), ((1, 2, 3), (6, 3, 4)), ((2, 1, 4, 3), (1, 5, 3, 2)),
    ((4, 3), (2, 3, 1)), ((0, 3), (3, 4)), ((2, 0), (0, 3)), ((7, 2, 3), (3,)), ((2, 2, 3), (3, 2)),
])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matmul(sa, sb, dtype):
    a, b = rnd(*sa, dtype=dtype, seed=3), rnd(*sb, dtype=dtype, seed=4)
    r = ember.matmul(t_(a), t_(b))
    ref = np.matmul(a, b)
    assert tuple(r.shape) == ref.shape
    assert r.dtype == t_(a).dtype
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(np_(r), ref, rtol=tol, atol=tol)


def test_matmul_noncontiguous_and_method():
    a = rnd(4, 3, seed=5)
    b = rnd(5, 4, seed=6)
    r = t_(a).t().matmul(t_(b).t())
    np.testing.assert_allclose(np_(r), a.T @ b.T, rtol=1e-5, atol=1e-6)
    x = rnd(2, 3, 4, seed=7)
    r = ember.matmul(t_(x).transpose(1, 2), t_(rnd(3, 2, seed=8)))
    np.testing.assert_allclose(np_(r), np.swapaxes(x, 1, 2) @ rnd(3, 2, seed=8), rtol=1e-5, atol=1e-6)


def test_matmul_out():
    a, b = rnd(2, 3), rnd(3, 2)
    out = ember.empty(2, 2)
    ember.matmul(t_(a), t_(b), out=out)
    np.testing.assert_allclose(np_(out), a @ b, rtol=1e-5)


def test_matmul_errors():
    with pytest.raises(RuntimeError, match=re.escape("mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)")):
        ember.matmul(t_(rnd(2, 3)), t_(rnd(4, 5)))
    with pytest.raises(RuntimeError, match="inconsistent tensor size"):
        ember.matmul(t_(rnd(3)), t_(rnd(4)))
    with pytest.raises(RuntimeError, match=re.escape("size mismatch, got input (2), mat (2x3), vec (4)")):
        ember.matmul(t_(rnd(2, 3)), t_(rnd(4)))
    with pytest.raises(RuntimeError, match=re.escape("(1x3 and 4x5)")):
        ember.matmul(t_(rnd(3)), t_(rnd(4, 5)))
    with pytest.raises(RuntimeError, match="^" + re.escape("Expected size for first two dimensions of batch2 tensor to "
                                                          "be: [2, 3] but got: [2, 4].")):
        ember.matmul(t_(rnd(2, 2, 3)), t_(rnd(2, 4, 5)))
    with pytest.raises(RuntimeError, match="must match the size"):
        ember.matmul(t_(rnd(2, 2, 3)), t_(rnd(3, 3, 5)))
    with pytest.raises(RuntimeError, match="both arguments to matmul need to be at least 1D, but they are 0D and 2D"):
        ember.matmul(t_(np.array(2.0, dtype=np.float32)), t_(rnd(2, 2)))


def test_matmul_grad():
    a_np, b_np = rnd(4, 2, 3, seed=9), rnd(3, 5, seed=10)
    a = ember.tensor(a_np, requires_grad=True)
    b = ember.tensor(b_np, requires_grad=True)
    ember.matmul(a, b).sum().backward()
    g = np.ones((4, 2, 5), dtype=np.float32)
    np.testing.assert_allclose(np_(a.grad), g @ b_np.T, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np_(b.grad), np.einsum("bij,bik->jk", a_np, g), rtol=1e-5, atol=1e-5)
    # Batched with broadcasting: gradients sum over the broadcast batch dims.
    c_np, d_np = rnd(2, 1, 2, 3, seed=11), rnd(4, 3, 2, seed=12)
    c = ember.tensor(c_np, requires_grad=True)
    d = ember.tensor(d_np, requires_grad=True)
    ember.matmul(c, d).sum().backward()
    g = np.ones((2, 4, 2, 2), dtype=np.float32)
    np.testing.assert_allclose(np_(c.grad), (g @ np.swapaxes(d_np, -1, -2)).sum(1, keepdims=True), rtol=1e-5,
                               atol=1e-5)
    np.testing.assert_allclose(np_(d.grad), (np.swapaxes(c_np, -1, -2) @ g).sum(0), rtol=1e-5, atol=1e-5)
    # Vector cases.
    v = ember.tensor(rnd(3, seed=13), requires_grad=True)
    m_np = rnd(3, 4, seed=14)
    ember.matmul(v, t_(m_np)).sum().backward()
    np.testing.assert_allclose(np_(v.grad), m_np.sum(1), rtol=1e-5)


# ---------------------------------------------------------------- mean / var / std

DIMS = [None, 0, 1, -1, (0, 2), (0, 1, 2), [1]]


@pytest.mark.parametrize("dim", DIMS)
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_mean(dim, keepdim, dtype):
    a = rnd(3, 4, 5, dtype=dtype, seed=15)
    axis = tuple(dim) if isinstance(dim, (list, tuple)) else dim
    if dim is None:
        r = ember.mean(t_(a)) if not keepdim else ember.mean(t_(a), None, True)
    else:
        r = t_(a).mean(dim, keepdim=keepdim)
    ref = np.mean(a, axis=axis, keepdims=keepdim)
    assert tuple(r.shape) == np.shape(ref)
    assert r.dtype == t_(a).dtype
    np.testing.assert_allclose(np_(r), ref, rtol=1e-5, atol=1e-6)


def test_mean_dtypes():
    a = np.arange(6, dtype=np.int64).reshape(2, 3)
    with pytest.raises(RuntimeError, match="mean\\(\\): could not infer output dtype. Input dtype must be either a "
                                           "floating point or complex dtype. Got: Long"):
        ember.mean(t_(a))
    r = ember.mean(t_(a), dtype=ember.float64)
    assert r.dtype == ember.float64
    assert r.item() == 2.5
    r = ember.mean(t_(a.astype(np.float32)), 1, dtype=ember.float64)
    assert r.dtype == ember.float64
    np.testing.assert_allclose(np_(r), [1.0, 4.0])
    h = ember.mean(t_(np.array([1, 2, 3, 4], dtype=np.float16)))
    assert h.dtype == ember.float16 and h.item() == 2.5
    with pytest.raises(RuntimeError, match="Optional dtype must be either a floating point"):
        ember.mean(t_(a), dtype=ember.int32)


def test_mean_empty_and_scalar():
    r = ember.mean(ember.zeros(0))
    assert np.isnan(r.item())
    s = ember.mean(t_(np.array(3.0, dtype=np.float32)))
    assert s.dim() == 0 and s.item() == 3.0
    np.testing.assert_array_equal(np_(ember.mean(ember.zeros(0, 3), 1)), np.zeros(0))


@pytest.mark.parametrize("fn,npfn", [(ember.var, np.var), (ember.std, np.std)])
@pytest.mark.parametrize("dim", [None, 0, -1, (0, 2)])
@pytest.mark.parametrize("keepdim", [False, True])
def test_var_std(fn, npfn, dim, keepdim):
    a = rnd(3, 4, 5, dtype=np.float64, seed=16)
    axis = tuple(dim) if isinstance(dim, tuple) else dim
    x = t_(a)
    np.testing.assert_allclose(np_(fn(x, dim, keepdim=keepdim)), npfn(a, axis=axis, keepdims=keepdim, ddof=1),
                               rtol=1e-10)
    for corr in [0, 1, 2, 0.5]:
        np.testing.assert_allclose(np_(fn(x, dim, keepdim=keepdim, correction=corr)),
                                   npfn(a, axis=axis, keepdims=keepdim, ddof=corr), rtol=1e-10)
    np.testing.assert_allclose(np_(fn(x, dim, unbiased=False, keepdim=keepdim)),
                               npfn(a, axis=axis, keepdims=keepdim, ddof=0), rtol=1e-10)
    np.testing.assert_allclose(np_(fn(x, dim, True, keepdim)), npfn(a, axis=axis, keepdims=keepdim, ddof=1),
                               rtol=1e-10)


def test_var_std_methods_and_float32():
    a = rnd(6, 7, seed=17)
    x = t_(a)
    np.testing.assert_allclose(np_(x.var()), np.var(a, ddof=1), rtol=1e-5)
    np.testing.assert_allclose(np_(x.std(1)), np.std(a, axis=1, ddof=1), rtol=1e-5)
    assert x.var().dtype == ember.float32
    for dt in [ember.float16, ember.bfloat16]:
        h = x.to(dt)
        ref = np.array(h.float().numpy(), dtype=np.float64)
        assert h.var().dtype == dt and h.std(0).dtype == dt
        np.testing.assert_allclose(np_(h.var(1).float()), np.var(ref, axis=1, ddof=1), rtol=1e-2)
        np.testing.assert_allclose(np_(h.std(0).float()), np.std(ref, axis=0, ddof=1), rtol=1e-2)


def test_var_std_edge_cases():
    one = t_(np.array([3.0], dtype=np.float32))
    assert np.isnan(ember.var(one).item())  # 0 / 0
    assert ember.var(one, correction=0).item() == 0
    two = t_(np.array([1.0, 3.0], dtype=np.float32))
    assert np.isinf(ember.var(two, correction=2).item())  # 2 / 0
    assert np.isinf(ember.var(two, correction=5).item())  # divisor clamps at 0
    with pytest.raises(RuntimeError, match="std and var only support floating point and complex dtypes"):
        ember.var(t_(np.array([1, 2, 3])))
    with pytest.raises(RuntimeError, match="only one of"):
        ember.var(two, unbiased=True, correction=1)


def test_mean_var_grads():
    a_np = rnd(3, 4, seed=18).astype(np.float64)
    x = ember.tensor(a_np, requires_grad=True)
    x.mean().backward()
    np.testing.assert_allclose(np_(x.grad), np.full((3, 4), 1 / 12))
    x = ember.tensor(a_np, requires_grad=True)
    ember.var(x, 1).sum().backward()
    expect = 2 * (a_np - a_np.mean(1, keepdims=True)) / 3
    np.testing.assert_allclose(np_(x.grad), expect, rtol=1e-10)
    x = ember.tensor(a_np, requires_grad=True)
    ember.std(x).backward()
    expect = (a_np - a_np.mean()) / (11 * np.std(a_np, ddof=1))
    np.testing.assert_allclose(np_(x.grad), expect, rtol=1e-10)


# ---------------------------------------------------------------- max / min

@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.uint8, np.bool_, np.float64])
def test_max_min_all(dtype):
    a = (np.abs(rnd(4, 5, seed=19)) * 10).astype(dtype)
    x = t_(a)
    assert ember.max(x).item() == a.max()
    assert ember.min(x).item() == a.min()
    assert x.max().dim() == 0
    assert x.max().dtype == x.dtype


def test_max_min_nan_and_errors():
    x = t_(np.array([1.0, np.nan, 3.0], dtype=np.float32))
    assert np.isnan(ember.max(x).item()) and np.isnan(ember.min(x).item())
    with pytest.raises(RuntimeError, match=re.escape("max(): Expected reduction dim to be specified for "
                                                     "input.numel() == 0. Specify the reduction dim with the 'dim' "
                                                     "argument.")):
        ember.max(ember.zeros(0))
    with pytest.raises(RuntimeError, match="min\\(\\): Expected reduction dim"):
        ember.zeros(2, 0).min()


def test_max_min_other():
    a, b = rnd(3, 4, seed=20), rnd(4, seed=21)
    np.testing.assert_array_equal(np_(ember.max(t_(a), t_(b))), np.maximum(a, b))
    np.testing.assert_array_equal(np_(ember.min(t_(a), t_(b))), np.minimum(a, b))
    np.testing.assert_array_equal(np_(t_(a).max(t_(b))), np.maximum(a, b))


def test_max_grad_ties():
    x = ember.tensor([1.0, 3.0, 3.0, 2.0], requires_grad=True)
    ember.max(x).backward()
    np.testing.assert_array_equal(np_(x.grad), [0, 0.5, 0.5, 0])


# ---------------------------------------------------------------- cat / stack

@pytest.mark.parametrize("shapes,dim", [
    ([(2, 3), (4, 3)], 0), ([(2, 3), (2, 1), (2, 5)], 1), ([(2, 3), (2, 3)], -1), ([(3,), (0,), (2,)], 0),
    ([(2, 0), (2, 3)], 1), ([(1, 2, 3), (1, 2, 3), (1, 2, 3)], 2), ([(5,)], 0),
])
def test_cat(shapes, dim):
    arrs = [rnd(*s, seed=i) for i, s in enumerate(shapes)]
    r = ember.cat([t_(a) for a in arrs], dim)
    np.testing.assert_array_equal(np_(r), np.concatenate(arrs, axis=dim))
    r = ember.cat(tuple(t_(a) for a in arrs), dim=dim)
    np.testing.assert_array_equal(np_(r), np.concatenate(arrs, axis=dim))


def test_cat_promotes_and_skips_legacy_empty():
    a = np.array([[1, 2]], dtype=np.int32)
    b = np.array([[0.5, 1.5]], dtype=np.float64)
    r = ember.cat([t_(a), t_(b)])
    assert r.dtype == ember.float64
    np.testing.assert_array_equal(np_(r), np.concatenate([a, b]))
    r = ember.cat([t_(np.array([True])), t_(np.array([3], dtype=np.uint8))])
    assert r.dtype == ember.uint8
    # A 1-D empty tensor is skipped whatever the others' rank.
    r = ember.cat([ember.zeros(0), t_(rnd(2, 3)), ember.zeros(0)], 1)
    np.testing.assert_array_equal(np_(r), rnd(2, 3))
    r = ember.cat([ember.zeros(0), ember.zeros(0)])
    assert tuple(r.shape) == (0,)


def test_cat_noncontiguous_inputs():
    a = rnd(3, 4, seed=22)
    r = ember.cat([t_(a).t(), t_(a).t()], 1)
    np.testing.assert_array_equal(np_(r), np.concatenate([a.T, a.T], 1))


def test_cat_out():
    out = ember.empty(4)
    ember.cat([t_(np.array([1.0, 2.0], dtype=np.float32)), t_(np.array([3.0, 4.0], dtype=np.float32))], out=out)
    np.testing.assert_array_equal(np_(out), [1, 2, 3, 4])


def test_cat_errors():
    with pytest.raises(ValueError, match="expected a non-empty list of Tensors"):  # torch's class
        ember.cat([])
    with pytest.raises(RuntimeError, match=re.escape("Sizes of tensors must match except in dimension 1. Expected "
                                                     "size 2 but got size 3 for tensor number 1 in the list.")):
        ember.cat([ember.zeros(2, 4), ember.zeros(3, 4)], 1)
    with pytest.raises(RuntimeError, match="Tensors must have same number of dimensions: got 2 and 1"):
        ember.cat([ember.zeros(2, 4), ember.zeros(3)])
    with pytest.raises(RuntimeError, match="zero-dimensional tensor"):
        ember.cat([ember.zeros([]), ember.zeros([])])
    with pytest.raises(IndexError, match="Dimension out of range"):
        ember.cat([ember.zeros(2, 4)], 2)


def test_cat_grad():
    a = ember.tensor(rnd(2, 3, seed=23), requires_grad=True)
    b = ember.tensor(rnd(2, 2, seed=24), requires_grad=True)
    c = ember.zeros(2, 1)  # no grad needed
    w = rnd(2, 6, seed=25)
    r = ember.cat([a, c, b], 1)
    assert r.requires_grad
    (r * t_(w)).sum().backward()
    np.testing.assert_array_equal(np_(a.grad), w[:, :3])
    np.testing.assert_array_equal(np_(b.grad), w[:, 4:])


@pytest.mark.parametrize("dim", [0, 1, 2, -1, -3])
def test_stack(dim):
    arrs = [rnd(2, 3, seed=i) for i in range(4)]
    r = ember.stack([t_(a) for a in arrs], dim)
    np.testing.assert_array_equal(np_(r), np.stack(arrs, axis=dim))


def test_stack_errors_and_grad():
    with pytest.raises(RuntimeError, match=re.escape("stack expects each tensor to be equal size, but got [2] at "
                                                     "entry 0 and [3] at entry 1")):
        ember.stack([ember.zeros(2), ember.zeros(3)])
    with pytest.raises(RuntimeError, match="non-empty"):
        ember.stack([])
    a = ember.tensor([1.0, 2.0], requires_grad=True)
    b = ember.tensor([3.0, 4.0], requires_grad=True)
    (ember.stack([a, b], 1) * ember.tensor([[1.0, 2.0], [3.0, 4.0]])).sum().backward()
    np.testing.assert_array_equal(np_(a.grad), [1, 3])
    np.testing.assert_array_equal(np_(b.grad), [2, 4])
    s = ember.stack([ember.tensor(1.0), ember.tensor(2.0)])
    np.testing.assert_array_equal(np_(s), [1, 2])


# ---------------------------------------------------------------- split / chunk / unbind

def np_split_size(a, size, dim=0):
    n = a.shape[dim]
    idx = list(range(size, n, size))
    return np.split(a, idx, axis=dim)


@pytest.mark.parametrize("shape,size,dim", [((5, 2), 2, 0), ((4, 6), 3, 1), ((4, 6), 6, 1), ((4, 6), 10, 0),
                                            ((3, 4), 1, -1)])
def test_split(shape, size, dim):
    a = rnd(*shape, seed=26)
    parts = ember.split(t_(a), size, dim)
    ref = np_split_size(a, size, dim)
    assert len(parts) == len(ref)
    for p, r in zip(parts, ref):
        np.testing.assert_array_equal(np_(p), r)
    assert len(t_(a).split(size, dim)) == len(ref)


def test_split_sizes():
    a = rnd(5, 2, seed=27)
    parts = ember.split(t_(a), [1, 4])
    assert [tuple(p.shape) for p in parts] == [(1, 2), (4, 2)]
    np.testing.assert_array_equal(np_(parts[1]), a[1:])
    parts = t_(a).split([2, 0, 3], 0)
    assert [p.shape[0] for p in parts] == [2, 0, 3]
    parts = ember.split(t_(a), [1, 1], 1)
    np.testing.assert_array_equal(np_(parts[1]), a[:, 1:])
    with pytest.raises(RuntimeError, match=re.escape("split_with_sizes expects split_sizes to sum exactly to 5 "
                                                     "(input tensor's size at dimension 0), but got "
                                                     "split_sizes=[1, 2]")):
        ember.split(t_(a), [1, 2])


def test_split_edge_cases():
    parts = ember.split(ember.zeros(0, 3), 2)
    assert len(parts) == 1 and tuple(parts[0].shape) == (0, 3)
    with pytest.raises(RuntimeError, match="split expects at least a 1-dimensional tensor"):
        ember.split(ember.zeros([]), 1)
    with pytest.raises(RuntimeError, match="split_size can only be 0 if dimension size is 0"):
        ember.split(ember.zeros(3), 0)


@pytest.mark.parametrize("n,chunks", [(5, 2), (6, 3), (6, 4), (3, 5), (7, 7), (0, 3), (1, 1)])
def test_chunk(n, chunks):
    a = np.arange(n * 2, dtype=np.float32).reshape(n, 2)
    parts = ember.chunk(t_(a), chunks)
    size = -(-n // chunks)
    if n == 0:
        ref = [a] * chunks
    else:
        ref = np_split_size(a, size, 0)
    assert len(parts) == len(ref)
    for p, r in zip(parts, ref):
        np.testing.assert_array_equal(np_(p), r)
    with pytest.raises(RuntimeError, match="chunk expects `chunks` to be greater than 0, got: 0"):
        ember.chunk(t_(a), 0)


def test_chunk_dim():
    a = rnd(4, 6, seed=28)
    parts = t_(a).chunk(3, 1)
    for p, r in zip(parts, np.split(a, 3, axis=1)):
        np.testing.assert_array_equal(np_(p), r)


def test_unbind():
    a = rnd(3, 2, seed=29)
    parts = ember.unbind(t_(a))
    assert len(parts) == 3
    for i, p in enumerate(parts):
        np.testing.assert_array_equal(np_(p), a[i])
    parts = t_(a).unbind(1)
    assert len(parts) == 2
    np.testing.assert_array_equal(np_(parts[1]), a[:, 1])
    assert len(ember.unbind(ember.zeros(0, 2))) == 0
    with pytest.raises(RuntimeError, match="tensor has no dimensions"):
        ember.unbind(ember.zeros([]))


def test_split_grads():
    x = ember.tensor(rnd(6, 2, seed=30), requires_grad=True)
    a, b, c = ember.split(x, 2)
    (a.sum() + 2 * b.sum() + 3 * c.sum()).backward()
    np.testing.assert_array_equal(np_(x.grad), np.repeat([1.0, 2.0, 3.0], 2)[:, None] * np.ones((1, 2)))
    x = ember.tensor(rnd(3, 2, seed=31), requires_grad=True)
    u = ember.unbind(x, 1)
    (u[0] * 5).sum().backward()
    np.testing.assert_array_equal(np_(x.grad), [[5, 0], [5, 0], [5, 0]])


# ---------------------------------------------------------------- conversions

def test_to_dtype_and_copy():
    a = np.array([1.7, -2.2, 0.0], dtype=np.float32)
    x = t_(a)
    y = x.to(ember.int64)
    assert y.dtype == ember.int64
    np.testing.assert_array_equal(np_(y), [1, -2, 0])
    assert x.to(ember.float32).data_ptr() == x.data_ptr()  # itself: no copy
    z = x.to(ember.float32, copy=True)
    assert z.data_ptr() != x.data_ptr()
    z.fill_(5)
    np.testing.assert_array_equal(np_(x), a)
    assert x.to("cpu").data_ptr() == x.data_ptr()
    w = x.to(t_(np.zeros(1, dtype=np.float64)))
    assert w.dtype == ember.float64
    np.testing.assert_allclose(np_(w), a.astype(np.float64))


def test_zero_():
    x = t_(np.ones((2, 3), dtype=np.float32))
    r = x.zero_()
    np.testing.assert_array_equal(np_(x), np.zeros((2, 3)))
    np.testing.assert_array_equal(np_(r), np.zeros((2, 3)))


# ---------------------------------------------------------------- autograd records of composites

@pytest.mark.parametrize("name,expr", [
    ("CloneBackward0", lambda a: a.clone()),
    ("ToCopyBackward0", lambda a: a.double()),
    ("ToCopyBackward0", lambda a: a.to(ember.float16)),
    ("MeanBackward0", lambda a: a.mean()),
    ("MeanBackward1", lambda a: a.mean(0)),
    ("CatBackward0", lambda a: ember.cat([a, a])),
    ("StackBackward0", lambda a: ember.stack([a, a], 1)),
    ("MmBackward0", lambda a: ember.matmul(a, a)),
])
def test_composite_grad_fn_names(name, expr):
    a = ember.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    assert expr(a).grad_fn.name() == name


def test_conversion_grads():
    a = ember.tensor([1.5, -2.0], requires_grad=True)
    d = a.double()
    assert d.requires_grad and d.dtype == ember.float64
    (d * d).sum().backward()
    assert a.grad.dtype == ember.float32
    np.testing.assert_array_equal(np_(a.grad), [3.0, -4.0])
    assert not a.to(ember.int64).requires_grad
    assert a.to(ember.float32) is a or a.to(ember.float32).data_ptr() == a.data_ptr()
    c = a.clone()
    assert c.requires_grad and not c.is_leaf
    (c * 3).sum().backward()
    np.testing.assert_array_equal(np_(a.grad), [6.0, -1.0])
    with ember.no_grad():
        assert not a.clone().requires_grad
        assert not a.double().requires_grad
        assert not ember.cat([a, a]).requires_grad
        assert not a.mean().requires_grad


def test_double_backward_through_composites():
    x = ember.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = ember.stack([x * x, x], 0)  # [[x^2], [x]]
    z = ember.cat([y.mean(1), ember.clone(x * x * x)]).double().sum()
    (g,) = ember.autograd.grad(z, [x], create_graph=True)
    # z = mean(x^2) + mean(x) + sum(x^3): dz/dx = 2x/3 + 1/3 + 3x^2
    xs = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(np_(g), 2 * xs / 3 + 1 / 3 + 3 * xs ** 2, rtol=1e-6)
    (g2,) = ember.autograd.grad(g.sum(), [x])
    np.testing.assert_allclose(np_(g2), 2 / 3 + 6 * xs, rtol=1e-6)


def test_mean_dtype_grad():
    a = ember.tensor([[1.0, 2.0], [3.0, 5.0]], requires_grad=True)
    m = ember.mean(a, 1, keepdim=True, dtype=ember.float64)
    assert m.dtype == ember.float64 and tuple(m.shape) == (2, 1)
    m.sum().backward()
    assert a.grad.dtype == ember.float32
    np.testing.assert_array_equal(np_(a.grad), np.full((2, 2), 0.5))
