"""max/min along a dim, argmax/argmin, softmax/log_softmax: the CPU kernels
against NumPy, over dtypes, layouts (contiguous, transposed, strided), keepdim,
0-d and empty inputs, NaN and ties."""
import numpy as np
import pytest

import ember

ALL = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]
FLOATS = ["float16", "bfloat16", "float32", "float64"]
NP = {"bool": np.bool_, "uint8": np.uint8, "int8": np.int8, "int16": np.int16, "int32": np.int32,
      "int64": np.int64, "float16": np.float16, "bfloat16": np.float32, "float32": np.float32,
      "float64": np.float64}


def tensor(a, dtype):
    """An ember tensor of `dtype` holding `a` (bfloat16 goes in through float32)."""
    a = np.array(np.asarray(a).astype(NP[dtype]), order="C")
    t = ember.from_numpy(a)
    return t.to(ember.bfloat16) if dtype == "bfloat16" else t


def numpy(t):
    if t.dtype == ember.bfloat16:
        t = t.float()
    return np.array(t.numpy())


def round_bf16(a):
    """float32 values rounded to bfloat16 (nearest even), as float32."""
    a = np.asarray(a, dtype=np.float32)
    u = a.view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16 << 16
    return u.astype(np.uint32).view(np.float32)


def distinct_values(shape, dtype, rng):
    """Values without ties (ties are tested on their own), exact in `dtype`."""
    n = int(np.prod(shape))
    if dtype == "bool":
        return rng.integers(0, 2, size=shape).astype(bool)
    if dtype == "uint8":
        return rng.permutation(256)[:n].reshape(shape) if n <= 256 else rng.integers(0, 256, size=shape)
    if dtype == "int8":
        return (rng.permutation(256)[:n] - 128).reshape(shape) if n <= 256 else rng.integers(-128, 128, size=shape)
    return (rng.permutation(n) - n // 2).reshape(shape)  # small integers: exact in every dtype


def layout(a, dtype, kind):
    """An ember tensor holding `a`'s values: contiguous, or a non-contiguous view of a
    differently laid out base (transposed in memory, or every other row of a taller base)."""
    if kind == "contig":
        return tensor(a, dtype)
    if kind == "transposed":
        base = tensor(np.ascontiguousarray(np.swapaxes(a, -1, -2)), dtype)
        return ember.transpose(base, -1, -2)
    if kind == "strided":
        base = np.repeat(a, 2, axis=0)
        base[1::2] = 0 if base.dtype == np.bool_ else base[1::2] + 1   # filler rows
        return ember.slice(tensor(base, dtype), 0, None, None, 2)
    raise ValueError(kind)


# ---------------------------------------------------------------- max / min along a dim

@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("shape,dim", [((3, 4), 0), ((3, 4), 1), ((3, 4), -1), ((2, 3, 4), 1), ((2, 3, 4), 0),
                                       ((2, 3, 4), 2), ((5,), 0), ((0, 3), 1), ((4, 1, 3), 1)])
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("op", ["max", "min"])
def test_max_min_dim(dtype, shape, dim, keepdim, op):
    rng = np.random.default_rng(0)
    a = distinct_values(shape, dtype, rng)
    t = tensor(a, dtype)
    values, indices = getattr(ember, op)(t, dim, keepdim)
    npa = a.astype(np.float64) if dtype != "bool" else a
    ref_v = (np.amax if op == "max" else np.amin)(npa, axis=dim, keepdims=keepdim)
    assert values.dtype == getattr(ember, dtype)
    assert indices.dtype == ember.int64
    assert tuple(values.shape) == ref_v.shape and tuple(indices.shape) == ref_v.shape
    np.testing.assert_array_equal(numpy(values).astype(ref_v.dtype), ref_v)
    if dtype != "bool" and npa.size:
        ref_i = (np.argmax if op == "max" else np.argmin)(npa, axis=dim, keepdims=keepdim)
        np.testing.assert_array_equal(numpy(indices), ref_i)


@pytest.mark.parametrize("dtype", ["float32", "int32", "float16", "bfloat16", "float64", "int8"])
@pytest.mark.parametrize("kind", ["transposed", "strided"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_max_min_dim_noncontiguous(dtype, kind, dim):
    rng = np.random.default_rng(1)
    a = distinct_values((5, 6), dtype, rng)
    t = layout(a, dtype, kind)
    assert not t.is_contiguous()
    for op, npf, npa in (("max", np.amax, np.argmax), ("min", np.amin, np.argmin)):
        v, i = getattr(ember, op)(t, dim, True)
        np.testing.assert_array_equal(numpy(v).astype(np.float64), npf(a.astype(np.float64), axis=dim, keepdims=True))
        np.testing.assert_array_equal(numpy(i), npa(a, axis=dim, keepdims=True))


def test_max_dim_ties_take_first_index():
    a = np.array([[1, 3, 3, 0], [2, 2, 2, 2], [5, 1, 5, 5]], dtype=np.float32)
    v, i = ember.max(tensor(a, "float32"), 1)
    np.testing.assert_array_equal(numpy(i), [1, 0, 0])
    v, i = ember.min(tensor(a, "float32"), 0)
    np.testing.assert_array_equal(numpy(i), [0, 2, 1, 0])
    c = np.array([[2, 2, 7], [2, 1, 7], [2, 1, 7]], dtype=np.int16)   # ties down the columns
    v, i = ember.min(tensor(c, "int16"), 0)
    np.testing.assert_array_equal(numpy(i), [0, 1, 0])
    v, i = ember.max(tensor(c, "int16"), 0, True)
    np.testing.assert_array_equal(numpy(i), [[0, 0, 0]])
    b = np.array([[True, False, True], [False, False, True]])
    v, i = ember.max(tensor(b, "bool"), 1)
    np.testing.assert_array_equal(numpy(i), [0, 2])
    v, i = ember.min(tensor(b, "bool"), 1)
    np.testing.assert_array_equal(numpy(i), [1, 0])


@pytest.mark.parametrize("dtype", FLOATS)
def test_max_min_dim_nan_propagates(dtype):
    a = np.array([[1.0, np.nan, 5.0, np.nan], [7.0, -1.0, 2.0, 3.0], [np.nan, 9.0, -9.0, 0.0]], dtype=np.float32)
    t = tensor(a, dtype)
    for op in ("max", "min"):
        v, i = getattr(ember, op)(t, 1)
        vv = numpy(v)
        assert np.isnan(vv[0]) and np.isnan(vv[2])
        assert vv[1] == (7.0 if op == "max" else -1.0)
        np.testing.assert_array_equal(numpy(i), [1, 0 if op == "max" else 1, 0])
        # Along dim 0 (the column sweep path).
        v, i = getattr(ember, op)(t, 0)
        np.testing.assert_array_equal(numpy(i), [2, 0, 2 if op == "min" else 0, 0])
        assert np.isnan(numpy(v)[0]) and np.isnan(numpy(v)[1])
        assert (ember.argmax(t) if op == "max" else ember.argmin(t)).item() == 1


@pytest.mark.parametrize("op", ["max", "min"])
@pytest.mark.parametrize("dim", [0, -1])
@pytest.mark.parametrize("keepdim", [False, True])
def test_max_min_dim_zero_dim_input(op, dim, keepdim):
    v, i = getattr(ember, op)(tensor(np.array(2.5), "float32"), dim, keepdim)
    assert tuple(v.shape) == () and tuple(i.shape) == ()
    assert v.item() == 2.5 and i.item() == 0


@pytest.mark.parametrize("op", ["max", "min", "argmax", "argmin"])
def test_empty_reduced_dim_raises(op):
    t = tensor(np.zeros((0, 3)), "float32")
    with pytest.raises(IndexError, match=rf"{op}\(\): Expected reduction dim 0 to have non-zero size"):
        getattr(ember, op)(t, 0)
    r = getattr(ember, op)(t, 1)
    r = r[1] if isinstance(r, tuple) else r
    assert tuple(r.shape) == (0,)


@pytest.mark.parametrize("op", ["max", "argmax"])
def test_dim_out_of_range(op):
    with pytest.raises(IndexError):
        getattr(ember, op)(tensor(np.zeros((2, 3)), "float32"), 2)


def test_max_dim_large_parallel():
    rng = np.random.default_rng(2)
    a = rng.standard_normal((300, 2000)).astype(np.float32)
    t = tensor(a, "float32")
    for dim in (0, 1):
        v, i = ember.max(t, dim)
        np.testing.assert_array_equal(numpy(v), a.max(axis=dim))
        np.testing.assert_array_equal(numpy(i), a.argmax(axis=dim))
        v, i = ember.min(t, dim)
        np.testing.assert_array_equal(numpy(i), a.argmin(axis=dim))
    assert ember.argmax(t).item() == a.argmax()
    assert ember.argmin(t).item() == a.argmin()
    tt = ember.transpose(t, 0, 1)
    assert ember.argmax(tt).item() == a.T.argmax()
    np.testing.assert_array_equal(numpy(ember.argmin(tt, 1)), a.T.argmin(axis=1))


# ---------------------------------------------------------------- argmax / argmin

@pytest.mark.parametrize("dtype", [d for d in ALL if d != "bool"])
@pytest.mark.parametrize("shape", [(3, 4), (2, 3, 4), (7,), (1, 1)])
@pytest.mark.parametrize("dim", [None, 0, -1, 1])
@pytest.mark.parametrize("keepdim", [False, True])
def test_argmax_argmin(dtype, shape, dim, keepdim):
    if dim is not None and dim >= len(shape):
        return
    rng = np.random.default_rng(3)
    a = distinct_values(shape, dtype, rng)
    t = tensor(a, dtype)
    for op, npf in (("argmax", np.argmax), ("argmin", np.argmin)):
        r = getattr(ember, op)(t, dim, keepdim)
        assert r.dtype == ember.int64
        if dim is None:
            ref = np.asarray(npf(a.reshape(-1)))
            if keepdim:
                ref = ref.reshape((1,) * a.ndim)
        else:
            ref = npf(a, axis=dim, keepdims=keepdim)
        assert tuple(r.shape) == ref.shape
        np.testing.assert_array_equal(numpy(r), ref)


def test_argmax_bool_not_implemented():
    # As in PyTorch: argmax/argmin have no bool kernel (max/min along a dim do).
    t = tensor(np.array([False, True]), "bool")
    with pytest.raises(RuntimeError):
        ember.argmax(t)
    with pytest.raises(RuntimeError):
        ember.argmin(t, 0)


def test_argmax_defaults_and_zero_dim():
    t = tensor(np.array([[1, 9, 3], [4, 5, 9]]), "int64")
    r = ember.argmax(t)
    assert tuple(r.shape) == () and r.item() == 1
    assert ember.argmin(t).item() == 0
    z = tensor(np.array(7.0), "float64")
    for dim in (None, 0, -1):
        for keepdim in (False, True):
            r = ember.argmax(z, dim, keepdim)
            assert tuple(r.shape) == () and r.item() == 0
    r = t.argmax(1, True)
    np.testing.assert_array_equal(numpy(r), [[1], [2]])


def test_argmax_flat_empty_raises():
    with pytest.raises(IndexError, match="Expected reduction dim to be specified for input.numel\\(\\) == 0"):
        ember.argmax(tensor(np.zeros((0, 2)), "float32"))


def test_argmax_ties_and_nan_flat():
    a = np.array([3.0, 1.0, 3.0, np.nan, 2.0, np.nan], dtype=np.float64)
    t = tensor(a, "float64")
    assert ember.argmax(t).item() == 3
    assert ember.argmin(t).item() == 3
    assert ember.argmax(tensor(np.array([3, 1, 3]), "int32")).item() == 0
    big = np.zeros(100_000, dtype=np.float32)
    big[70_000] = big[90_000] = 1.0
    assert ember.argmax(tensor(big, "float32")).item() == 70_000
    assert ember.argmin(tensor(big, "float32")).item() == 0
    big[80_000] = np.nan
    assert ember.argmax(tensor(big, "float32")).item() == 80_000


# ---------------------------------------------------------------- softmax / log_softmax

def np_softmax(a, dim):
    a = np.asarray(a, dtype=np.float64)
    if a.ndim == 0:
        return np.exp(a - a)
    m = np.max(a, axis=dim, keepdims=True)
    e = np.exp(a - m)
    return e / e.sum(axis=dim, keepdims=True)


def np_log_softmax(a, dim):
    a = np.asarray(a, dtype=np.float64)
    if a.ndim == 0:
        return a - a
    m = np.max(a, axis=dim, keepdims=True)
    return (a - m) - np.log(np.exp(a - m).sum(axis=dim, keepdims=True))


TOL = {"float16": 2e-3, "bfloat16": 1.6e-2, "float32": 1e-5, "float64": 1e-12}


def check_softmax(t, a, dim, dtype):
    tol = TOL[dtype]
    s = ember.softmax(t, dim)
    assert s.dtype == getattr(ember, dtype) and tuple(s.shape) == a.shape
    np.testing.assert_allclose(numpy(s), np_softmax(a, dim), rtol=tol, atol=tol)
    ls = ember.log_softmax(t, dim)
    assert ls.dtype == getattr(ember, dtype) and tuple(ls.shape) == a.shape
    np.testing.assert_allclose(numpy(ls), np_log_softmax(a, dim), rtol=tol, atol=tol * 10)


def float_values(shape, dtype, rng, scale=3.0):
    a = (rng.standard_normal(shape) * scale).astype(np.float32)
    if dtype == "float16":
        a = a.astype(np.float16).astype(np.float32)
    elif dtype == "bfloat16":
        a = round_bf16(a)
    return a.astype(np.float64) if dtype == "float64" else a


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape,dim", [((2, 3, 4), 0), ((2, 3, 4), 1), ((2, 3, 4), 2), ((2, 3, 4), -1),
                                       ((2, 3), 1), ((5,), 0), ((1, 7), 0), ((7, 1), 1), ((3, 1, 5), 1)])
def test_softmax_contiguous(dtype, shape, dim):
    a = float_values(shape, dtype, np.random.default_rng(4))
    check_softmax(tensor(a, dtype), a, dim, dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("kind", ["transposed", "strided"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax_noncontiguous(dtype, kind, dim):
    a = float_values((6, 5), dtype, np.random.default_rng(5))
    t = layout(a, dtype, kind)
    assert not t.is_contiguous()
    check_softmax(t, a, dim, dtype)


def test_softmax_permuted_3d():
    a = float_values((3, 4, 5), "float64", np.random.default_rng(6))
    t = ember.permute(tensor(np.ascontiguousarray(a.transpose(2, 0, 1)), "float64"), [1, 2, 0])
    for dim in range(3):
        check_softmax(t, a, dim, "float64")


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("dim", [0, -1])
def test_softmax_zero_dim(dtype, dim):
    t = tensor(np.array(1.5), dtype)
    s = ember.softmax(t, dim)
    assert tuple(s.shape) == () and s.item() == 1.0
    ls = ember.log_softmax(t, dim)
    assert tuple(ls.shape) == () and ls.item() == 0.0


@pytest.mark.parametrize("shape,dim", [((0, 3), 1), ((0, 3), 0), ((2, 0), 1), ((2, 0, 3), 2)])
def test_softmax_empty(shape, dim):
    t = tensor(np.zeros(shape), "float32")
    for fn in (ember.softmax, ember.log_softmax):
        r = fn(t, dim)
        assert tuple(r.shape) == shape and r.dtype == ember.float32


def test_softmax_dtype_argument():
    a = float_values((3, 4), "float32", np.random.default_rng(7))
    t = tensor(a, "float32")
    s = ember.softmax(t, 1, dtype=ember.float64)
    assert s.dtype == ember.float64
    np.testing.assert_allclose(numpy(s), np_softmax(a, 1), rtol=1e-12)
    ls = ember.log_softmax(t, 0, dtype=ember.float16)
    assert ls.dtype == ember.float16
    np.testing.assert_allclose(numpy(ls), np_log_softmax(a.astype(np.float16), 0), rtol=5e-3, atol=5e-3)
    assert t.softmax(-1).dtype == ember.float32


def test_softmax_dim_out_of_range():
    with pytest.raises(IndexError):
        ember.softmax(tensor(np.zeros((2, 3)), "float32"), 2)
    with pytest.raises(IndexError):
        ember.log_softmax(tensor(np.zeros((2, 3)), "float32"), -3)


def test_softmax_stable_and_special_values():
    a = np.array([[1000.0, 1000.0, 999.0], [-1000.0, -1001.0, -1002.0]], dtype=np.float32)
    t = tensor(a, "float32")
    np.testing.assert_allclose(numpy(ember.softmax(t, 1)), np_softmax(a, 1), rtol=1e-5)
    np.testing.assert_allclose(numpy(ember.log_softmax(t, 1)), np_log_softmax(a, 1), rtol=1e-5, atol=1e-5)
    b = np.array([[1.0, np.nan, 2.0], [0.0, -np.inf, 1.0], [np.inf, 0.0, 1.0]], dtype=np.float32)
    s = numpy(ember.softmax(tensor(b, "float32"), 1))
    assert np.isnan(s[0]).all()
    np.testing.assert_allclose(s[1], np_softmax(b[1], 0), rtol=1e-6)
    assert np.isnan(s[2]).all()   # inf - inf
    ls = numpy(ember.log_softmax(tensor(b, "float32"), 1))
    assert np.isnan(ls[0]).all() and ls[1][1] == -np.inf
    # The same along dim 0 (column path).
    s0 = numpy(ember.softmax(tensor(np.ascontiguousarray(b.T), "float32"), 0))
    assert np.isnan(s0[:, 0]).all() and np.isnan(s0[:, 2]).all()
    np.testing.assert_allclose(s0[:, 1], np_softmax(b[1], 0), rtol=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
@pytest.mark.parametrize("shape,dim", [((64, 3000), 1), ((64, 3000), 0), ((3, 700, 300), 1), ((5, 10001), -1)])
def test_softmax_large_parallel(dtype, shape, dim):
    a = float_values(shape, dtype, np.random.default_rng(8))
    check_softmax(tensor(a, dtype), a, dim, dtype)
