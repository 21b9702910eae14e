"""The advanced-indexing kernels, called directly: ember.index(self, indices) and
Tensor.index_put_(indices, values, accumulate), against NumPy's advanced indexing
(same rules as PyTorch: broadcast indices; adjacent indexed dims stay in place,
separated ones go first)."""
import numpy as np
import pytest

import ember

ALL = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]
NP = {"bool": np.bool_, "uint8": np.uint8, "int8": np.int8, "int16": np.int16, "int32": np.int32,
      "int64": np.int64, "float16": np.float16, "bfloat16": np.float32, "float32": np.float32,
      "float64": np.float64}


def tensor(a, dtype=None):
    a = np.asarray(a)
    if dtype is not None:
        a = a.astype(NP[dtype])
    t = ember.from_numpy(np.array(a, order="C"))
    return t.to(ember.bfloat16) if dtype == "bfloat16" else t


def numpy(t):
    if t.dtype == ember.bfloat16:
        t = t.float()
    return np.array(t.numpy())


def ember_indices(indices, index_dtype="int64"):
    return [None if i is None else tensor(i, index_dtype if np.asarray(i).dtype.kind in "iu" else None)
            for i in indices]


def numpy_key(indices):
    return tuple(slice(None) if i is None else np.asarray(i) for i in indices)


def sample(shape, dtype, rng):
    if dtype == "bool":
        return rng.integers(0, 2, size=shape).astype(bool)
    return rng.integers(-50, 50, size=shape).astype(NP[dtype]) if dtype != "uint8" else \
        rng.integers(0, 100, size=shape).astype(np.uint8)


A = np.array
CASES = {
    "single": [A([2, 0, 3, 3])],
    "single-2d": [A([[1, 2], [0, 3]])],
    "second-dim": [None, A([4, 0, -1])],
    "last-dim": [None, None, A([5, -6, 2])],
    "adjacent-pair": [A([0, 3, 1]), A([4, 4, 0])],
    "adjacent-middle": [None, A([[0], [2]]), A([1, 5, 3])],
    "separated": [A([1, 2]), None, A([0, 5])],
    "separated-bcast": [A([[1], [2], [3]]), None, A([0, 5])],
    "all-three": [A([0, 1]), A([2, 3]), A([4, 5])],
    "zero-d": [A(2)],
    "zero-d-and-vector": [A(1), None, A([0, 2, 4])],
    "negative": [A([-1, -4]), A([-5, 4])],
    "empty-index": [A([], dtype=np.int64)],
    "empty-index-middle": [None, A([], dtype=np.int64)],
    "none-only": [None, None],
}


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("dtype", ["float32", "int64", "bool", "float16"])
def test_index_cases(name, dtype):
    rng = np.random.default_rng(0)
    x = sample((4, 5, 6), dtype, rng)
    idx = CASES[name]
    r = ember.index(tensor(x, dtype), ember_indices(idx))
    ref = x[numpy_key(idx)]
    assert r.dtype == getattr(ember, dtype)
    assert tuple(r.shape) == ref.shape
    np.testing.assert_array_equal(numpy(r), ref)


@pytest.mark.parametrize("dtype", ALL)
def test_index_all_dtypes(dtype):
    rng = np.random.default_rng(1)
    x = sample((3, 4), dtype, rng)
    for idx in ([A([2, 0, 2])], [None, A([3, 1])], [A([0, 2]), A([1, 3])]):
        r = ember.index(tensor(x, dtype), ember_indices(idx))
        np.testing.assert_array_equal(numpy(r), x[numpy_key(idx)].astype(np.float32 if dtype == "bfloat16" else x.dtype))


def test_index_noncontiguous_self_and_indices():
    x = np.arange(60.0).reshape(3, 4, 5)
    t = ember.permute(tensor(np.ascontiguousarray(x.transpose(2, 0, 1))), [1, 2, 0])   # values of x, strided
    assert not t.is_contiguous()
    i = ember.slice(tensor(A([0, 9, 2, 9, 1, 9])), 0, None, None, 2)                 # [0, 2, 1], stride 2
    for idx_np, idx_em in (([A([0, 2, 1])], [i]), ([None, A([0, 2, 1])], [None, i]),
                           ([None, None, A([0, 2, 1])], [None, None, i]),
                           ([A([0, 2, 1]), None, A([0, 2, 1])], [i, None, i])):
        np.testing.assert_array_equal(numpy(ember.index(t, idx_em)), x[numpy_key(idx_np)])
    # An expanded (stride-0) index.
    e = tensor(A([[2], [0]])).expand([2, 3])
    np.testing.assert_array_equal(numpy(ember.index(t, [None, e])), x[:, np.array([[2, 2, 2], [0, 0, 0]])])


def test_index_int32_indices():
    x = np.arange(20).reshape(4, 5)
    r = ember.index(tensor(x), [tensor(A([3, -1], dtype=np.int32)), None])
    np.testing.assert_array_equal(numpy(r), x[[3, -1]])
    r = ember.index(tensor(x), [tensor(A([0, 1], dtype=np.int32)), tensor(A([4, 2]))])
    np.testing.assert_array_equal(numpy(r), x[[0, 1], [4, 2]])


@pytest.mark.parametrize("mask_dtype", ["bool", "uint8"])
def test_index_masks(mask_dtype):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((4, 5, 3)).astype(np.float32)
    m1 = A([True, False, True, True])
    m2 = rng.integers(0, 2, size=(4, 5)).astype(bool)
    m3 = A([False, True, True, False, True])
    for idx, key in (([m1], (m1,)), ([m2], (m2,)), ([None, m3], (slice(None), m3))):
        em = [None if i is None else tensor(i.astype(NP[mask_dtype])) for i in idx]
        np.testing.assert_array_equal(numpy(ember.index(tensor(x), em)), x[key])
    # A mask followed by an integer index.
    k = np.arange(int(m2.sum())) % 3
    r = ember.index(tensor(x), [tensor(m2.astype(NP[mask_dtype])), tensor(k)])
    np.testing.assert_array_equal(numpy(r), x[m2, k])
    # All-false mask.
    r = ember.index(tensor(x), [tensor(np.zeros(4, dtype=NP[mask_dtype]))])
    assert tuple(r.shape) == (0, 5, 3)


def test_index_errors():
    t = tensor(np.zeros((3, 4)))
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 0 with size 3"):
        ember.index(t, [tensor(A([0, 5]))])
    with pytest.raises(IndexError, match="index -4 is out of bounds for dimension 0 with size 3"):
        ember.index(t, [tensor(A([-4]))])
    with pytest.raises(IndexError, match="with size 4"):
        ember.index(t, [None, tensor(A([4]))])
    with pytest.raises(IndexError, match="too many indices for tensor of dimension 2"):
        ember.index(t, [tensor(A([0])), tensor(A([0])), tensor(A([0]))])
    with pytest.raises(IndexError, match="shape mismatch: indexing tensors could not be broadcast together"):
        ember.index(t, [tensor(A([0, 1])), tensor(A([0, 1, 2]))])
    with pytest.raises(IndexError, match="tensors used as indices must be long, int, byte or bool tensors"):
        ember.index(t, [tensor(A([0.0]))])
    with pytest.raises(IndexError, match=r"The shape of the mask \[2\] at index 0 does not match"):
        ember.index(t, [tensor(A([True, False]))])
    with pytest.raises(IndexError):
        ember.index(tensor(np.zeros((0, 2))), [tensor(A([0]))])


def test_index_zero_size_self_dims():
    x = np.zeros((0, 3))
    r = ember.index(tensor(x), [None, tensor(A([2, 0]))])
    assert tuple(r.shape) == (0, 2)


def test_index_large_parallel():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2000, 64)).astype(np.float32)
    i = rng.integers(-2000, 2000, size=5000)
    np.testing.assert_array_equal(numpy(ember.index(tensor(x), [tensor(i)])), x[i])
    j = rng.integers(0, 64, size=(100, 1))
    np.testing.assert_array_equal(numpy(ember.index(tensor(x), [None, tensor(j)])), x[:, j])


# ---------------------------------------------------------------- index_put_

PUT_CASES = {k: v for k, v in CASES.items() if k not in ("none-only",)}


def unique_positions(idx, shape):
    """Whether the index names every element at most once (NumPy and PyTorch differ on duplicates)."""
    probe = np.arange(int(np.prod(shape))).reshape(shape)
    sel = probe[numpy_key(idx)].reshape(-1)
    return len(np.unique(sel)) == len(sel)


@pytest.mark.parametrize("name", list(PUT_CASES))
@pytest.mark.parametrize("dtype", ["float32", "int32", "float64"])
def test_index_put_cases(name, dtype):
    rng = np.random.default_rng(4)
    x = sample((4, 5, 6), dtype, rng)
    idx = PUT_CASES[name]
    shape = x[numpy_key(idx)].shape
    v = sample(shape, dtype, rng)
    t = tensor(x, dtype)
    v0 = t._version
    r = t.index_put_(ember_indices(idx), tensor(v, dtype))
    np.testing.assert_array_equal(numpy(r), numpy(t))
    assert t._version > v0
    if unique_positions(idx, x.shape):
        ref = x.copy()
        ref[numpy_key(idx)] = v
        np.testing.assert_array_equal(numpy(t), ref)
    # Accumulate: duplicates add up (np.add.at).
    t = tensor(x, dtype)
    t.index_put_(ember_indices(idx), tensor(v, dtype), accumulate=True)
    ref = x.copy()
    np.add.at(ref, numpy_key(idx), v)
    np.testing.assert_array_equal(numpy(t), ref)


@pytest.mark.parametrize("dtype", ALL)
def test_index_put_all_dtypes(dtype):
    rng = np.random.default_rng(5)
    x = sample((3, 4), dtype, rng)
    v = sample((2, 4), dtype, rng)
    t = tensor(x, dtype)
    t.index_put_([tensor(A([2, 0]))], tensor(v, dtype))
    ref = x.copy()
    ref[[2, 0]] = v
    np.testing.assert_array_equal(numpy(t), ref.astype(np.float32) if dtype == "bfloat16" else ref)
    t = tensor(x, dtype)
    t.index_put_([tensor(A([1, 1])), tensor(A([3, 3]))], tensor(v[0, :2], dtype), accumulate=True)
    ref = x.copy()
    if dtype == "bool":
        ref[1, 3] = ref[1, 3] | v[0, 0] | v[0, 1]
    else:
        np.add.at(ref, (np.array([1, 1]), np.array([3, 3])), v[0, :2])
    np.testing.assert_array_equal(numpy(t), ref.astype(np.float32) if dtype == "bfloat16" else ref)


def test_index_put_broadcast_values_and_cast():
    x = np.zeros((4, 5))
    t = tensor(x, "float32")
    t.index_put_([tensor(A([0, 2]))], tensor(np.arange(5.0), "float64"))   # broadcast over rows, cast to float
    ref = x.copy()
    ref[[0, 2]] = np.arange(5.0)
    np.testing.assert_array_equal(numpy(t), ref)
    t.index_put_([None, tensor(A([1, 3]))], tensor(A(7), "int64"))         # a 0-d value everywhere
    ref[:, [1, 3]] = 7
    np.testing.assert_array_equal(numpy(t), ref)
    assert t.dtype == ember.float32
    t.index_put_([tensor(A([1]))], tensor(np.ones((1, 1, 5)), "float32"))  # leading size-1 dims of values
    ref[[1]] = 1
    np.testing.assert_array_equal(numpy(t), ref)
    # Accumulate with broadcast values and duplicates.
    t = tensor(np.zeros((3, 2)), "float64")
    t.index_put_([tensor(A([0, 0, 2, 0]))], tensor(A([1.0, 10.0]), "float64"), accumulate=True)
    np.testing.assert_array_equal(numpy(t), [[3, 30], [0, 0], [1, 10]])


def test_index_put_noncontiguous_self_and_values():
    x = np.arange(24.0).reshape(4, 6)
    base = tensor(np.ascontiguousarray(x.T))
    t = ember.transpose(base, 0, 1)                # a view with x's values
    v = ember.transpose(tensor(np.arange(8.0).reshape(2, 4)), 0, 1)    # (4, 2), not contiguous
    t.index_put_([None, tensor(A([5, 0]))], v)
    ref = x.copy()
    ref[:, [5, 0]] = np.arange(8.0).reshape(2, 4).T
    np.testing.assert_array_equal(numpy(t), ref)
    np.testing.assert_array_equal(numpy(base), ref.T)   # written through the view
    # A strided slice of a larger tensor.
    big = tensor(np.zeros((6, 3)))
    s = ember.slice(big, 0, None, None, 2)
    s.index_put_([tensor(A([2, 0]))], tensor(A([[1.0, 2.0, 3.0]])))
    np.testing.assert_array_equal(numpy(big), [[1, 2, 3], [0, 0, 0], [0, 0, 0], [0, 0, 0], [1, 2, 3], [0, 0, 0]])


def test_index_put_masks_and_self_values():
    x = np.arange(12.0).reshape(3, 4)
    t = tensor(x)
    m = x > 5
    t.index_put_([tensor(m)], tensor(A(0.0)))
    ref = x.copy()
    ref[m] = 0
    np.testing.assert_array_equal(numpy(t), ref)
    # Values aliasing self: read before written.
    t = tensor(x)
    t.index_put_([tensor(A([1, 0, 2]))], t)
    np.testing.assert_array_equal(numpy(t), x[[1, 0, 2]])


def test_index_put_errors():
    t = tensor(np.zeros((3, 4)))
    with pytest.raises(IndexError, match="index 3 is out of bounds for dimension 0 with size 3"):
        t.index_put_([tensor(A([3]))], tensor(A(1.0)))
    with pytest.raises(RuntimeError, match=r"shape mismatch: value tensor of shape \[3\] cannot be broadcast to "
                                           r"indexing result of shape \[2, 4\]"):
        t.index_put_([tensor(A([0, 1]))], tensor(np.ones(3)))


def test_index_put_empty():
    t = tensor(np.zeros((3, 4)))
    t.index_put_([tensor(A([], dtype=np.int64))], tensor(A(1.0)))
    np.testing.assert_array_equal(numpy(t), np.zeros((3, 4)))
    t.index_put_([tensor(A([], dtype=np.int64))], tensor(np.ones((0, 4))), accumulate=True)
    np.testing.assert_array_equal(numpy(t), np.zeros((3, 4)))


def test_index_put_large_parallel():
    rng = np.random.default_rng(6)
    x = np.zeros((3000, 32), dtype=np.float32)
    i = rng.permutation(3000)[:2000]
    v = rng.standard_normal((2000, 32)).astype(np.float32)
    t = tensor(x)
    t.index_put_([tensor(i)], tensor(v))
    ref = x.copy()
    ref[i] = v
    np.testing.assert_array_equal(numpy(t), ref)
    j = rng.integers(0, 3000, size=50000)
    t = tensor(x)
    t.index_put_([tensor(j)], tensor(A(1.0), "float32"), accumulate=True)
    ref = x.copy()
    np.add.at(ref, j, 1.0)
    np.testing.assert_array_equal(numpy(t), ref)
