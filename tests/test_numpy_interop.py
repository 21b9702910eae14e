"""NumPy interop as in PyTorch: from_numpy / .numpy() / as_tensor share memory,
ember.tensor copies (with PyTorch's dtype inference), np.asarray(tensor),
tolist() and item()."""
import numpy as np
import pytest

import ember

NP_DTYPES = [np.bool_, np.uint8, np.int8, np.int16, np.int32, np.int64, np.float16, np.float32, np.float64]
EMBER = {np.bool_: "bool", np.uint8: "uint8", np.int8: "int8", np.int16: "int16", np.int32: "int32",
         np.int64: "int64", np.float16: "float16", np.float32: "float32", np.float64: "float64"}


def sample(dtype, shape=(3, 4)):
    a = np.arange(int(np.prod(shape))).reshape(shape)
    return (a % 2 == 0) if dtype == np.bool_ else a.astype(dtype)


def one(dtype):
    """A Python number of the dtype's kind (PyTorch refuses to assign NumPy float scalars)."""
    if dtype == np.bool_:
        return True
    return 7.0 if np.dtype(dtype).kind == "f" else 7


# ---------------------------------------------------------------- from_numpy

@pytest.mark.parametrize("dtype", NP_DTYPES, ids=[EMBER[d] for d in NP_DTYPES])
def test_from_numpy_shares_memory_both_ways(dtype):
    a = sample(dtype)
    t = ember.from_numpy(a)
    assert t.dtype == getattr(ember, EMBER[dtype])
    assert tuple(t.shape) == a.shape
    assert tuple(t.stride()) == (4, 1)
    assert t.data_ptr() == a.ctypes.data
    np.testing.assert_array_equal(t.numpy(), a)
    # numpy -> tensor
    a[1, 2] = one(dtype)
    assert t[1, 2].item() == one(dtype)
    # tensor -> numpy
    t[0, 3] = one(dtype)
    assert a[0, 3] == one(dtype)
    t.zero_()
    assert not a.any()


@pytest.mark.parametrize("dtype", NP_DTYPES, ids=[EMBER[d] for d in NP_DTYPES])
def test_from_numpy_non_contiguous(dtype):
    base = sample(dtype, (4, 6))
    a = base[::2, 1::2]  # positive, non-unit strides
    t = ember.from_numpy(a)
    item = a.itemsize
    assert tuple(t.stride()) == (a.strides[0] // item, a.strides[1] // item) == (12, 2)
    assert not t.is_contiguous()
    np.testing.assert_array_equal(t.numpy(), a)
    t[1, 1] = one(dtype)
    assert base[2, 3] == one(dtype)
    base[0, 5] = one(dtype)
    assert t[0, 2].item() == one(dtype)


def test_from_numpy_transposed_and_fortran():
    a = np.arange(6.0).reshape(2, 3).T
    t = ember.from_numpy(a)
    assert tuple(t.stride()) == (1, 3)
    assert t.tolist() == [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]
    f = np.asfortranarray(np.arange(6, dtype=np.int32).reshape(2, 3))
    tf = ember.from_numpy(f)
    assert tuple(tf.stride()) == (1, 2)
    assert tf.tolist() == [[0, 1, 2], [3, 4, 5]]
    tf[1, 2] = 50
    assert f[1, 2] == 50


def test_from_numpy_0d_and_empty():
    t = ember.from_numpy(np.array(3.5))
    assert t.dim() == 0 and t.dtype == ember.float64 and t.item() == 3.5
    e = ember.from_numpy(np.zeros((0, 3), dtype=np.float32))
    assert tuple(e.shape) == (0, 3) and e.numel() == 0


def test_from_numpy_keeps_array_alive():
    t = ember.from_numpy(np.arange(1000, dtype=np.int64))
    import gc
    gc.collect()
    assert t.sum().item() == 999 * 1000 // 2
    a = np.arange(5.0)
    t = ember.from_numpy(a)
    del a
    gc.collect()
    assert t.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]


def test_from_numpy_negative_strides_raise():
    with pytest.raises(ValueError, match="negative"):
        ember.from_numpy(np.arange(4)[::-1])
    with pytest.raises(ValueError, match="negative"):
        ember.from_numpy(np.arange(12.0).reshape(3, 4)[:, ::-2])


def test_from_numpy_bad_inputs():
    with pytest.raises(TypeError, match="expected np.ndarray"):
        ember.from_numpy([1, 2])
    with pytest.raises(TypeError, match="can't convert np.ndarray of type"):
        ember.from_numpy(np.array(["a", "b"]))
    with pytest.raises(ValueError, match="byte order"):
        ember.from_numpy(np.zeros(2, dtype=">f4"))


def test_from_numpy_int_default():
    assert ember.from_numpy(np.array([1, 2])).dtype == ember.int64
    assert ember.from_numpy(np.array([1.0])).dtype == ember.float64


# ---------------------------------------------------------------- .numpy()

@pytest.mark.parametrize("dtype", NP_DTYPES, ids=[EMBER[d] for d in NP_DTYPES])
def test_numpy_shares_memory(dtype):
    t = ember.zeros(2, 3, dtype=getattr(ember, EMBER[dtype]))
    a = t.numpy()
    assert isinstance(a, np.ndarray)
    assert a.dtype == np.dtype(dtype)
    assert a.shape == (2, 3)
    assert a.ctypes.data == t.data_ptr()
    a[1, 1] = one(dtype)
    assert t[1, 1].item() == one(dtype)
    t[0, 0] = one(dtype)
    assert a[0, 0] == one(dtype)


def test_numpy_of_views_keeps_strides():
    t = ember.arange(12.0).reshape(3, 4)
    a = t.t().numpy()
    assert a.strides == (4, 16)
    np.testing.assert_array_equal(a, np.arange(12.0).reshape(3, 4).T)
    v = t[1:, ::2].numpy()
    assert v.strides == (16, 8)
    v[0, 0] = -1
    assert t[1, 0].item() == -1


def test_numpy_0d():
    a = ember.tensor(2.0).numpy()
    assert isinstance(a, np.ndarray)
    assert a.shape == () and a.dtype == np.float32 and a == 2.0


def test_numpy_requires_grad_raises():
    t = ember.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"Can't call numpy\(\) on Tensor that requires grad"):
        t.numpy()
    with pytest.raises(RuntimeError, match="requires grad"):
        np.asarray(t)
    assert t.detach().numpy().tolist() == [1.0, 1.0]
    assert t.numpy(force=True).tolist() == [1.0, 1.0]
    y = t * 2
    with pytest.raises(RuntimeError, match="requires grad"):
        y.numpy()


def test_numpy_bfloat16_raises():
    t = ember.ones(2, dtype=ember.bfloat16)
    with pytest.raises(TypeError, match="Got unsupported ScalarType BFloat16"):
        t.numpy()
    with pytest.raises(TypeError, match="BFloat16"):
        np.asarray(t)
    assert t.float().numpy().tolist() == [1.0, 1.0]


# ---------------------------------------------------------------- np.asarray / np.array

def test_np_asarray():
    t = ember.tensor([[1, 2], [3, 4]])
    a = np.asarray(t)
    assert a.dtype == np.int64
    np.testing.assert_array_equal(a, [[1, 2], [3, 4]])
    a[0, 0] = 10  # asarray shares
    assert t[0, 0].item() == 10
    b = np.array(t)  # np.array copies
    b[0, 1] = 20
    assert t[0, 1].item() == 2
    f = np.asarray(t, dtype=np.float32)
    assert f.dtype == np.float32 and f.tolist() == [[10.0, 2.0], [3.0, 4.0]]


def test_numpy_functions_accept_tensors():
    t = ember.tensor([1.0, 2.0, 3.0])
    assert np.sum(np.asarray(t)) == 6.0
    np.testing.assert_allclose(np.sqrt(np.asarray(t)), np.sqrt([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(np.asarray(ember.tensor([True, False])), [True, False])


# ---------------------------------------------------------------- ember.tensor

def test_tensor_copies_numpy():
    a = np.array([1.0, 2.0])
    t = ember.tensor(a)
    assert t.dtype == ember.float64
    assert t.data_ptr() != a.ctypes.data
    a[0] = 100
    assert t.tolist() == [1.0, 2.0]
    t[1] = 50
    assert a[1] == 2.0


def test_tensor_copies_tensor():
    s = ember.tensor([1, 2])
    t = ember.tensor(s)
    t[0] = 9
    assert s.tolist() == [1, 2]


@pytest.mark.parametrize("data,expected", [
    ([1, 2, 3], "int64"),
    ([1.0, 2.0], "float32"),
    ([True, False], "bool"),
    ([1, 2.5], "float32"),
    ([True, 2], "int64"),
    ([True, 2.5], "float32"),
    ([[1, 2], [3, 4.0]], "float32"),
    (5, "int64"),
    (2.5, "float32"),
    (True, "bool"),
    ([], "float32"),
    ([[], []], "float32"),
    ((1, 2, 3), "int64"),
], ids=repr)
def test_tensor_infers_python_dtypes(data, expected):
    assert ember.tensor(data).dtype == getattr(ember, expected)


@pytest.mark.parametrize("make,expected", [
    (lambda: np.array([1.0, 2.0]), "float64"),
    (lambda: np.array([1, 2], dtype=np.int32), "int32"),
    (lambda: np.ones(2, dtype=np.float16), "float16"),
    (lambda: np.array(2), "int64"),
    (lambda: np.float64(1.5), "float64"),
    (lambda: np.float32(1.5), "float32"),
    (lambda: np.int32(1), "int32"),
    (lambda: np.bool_(True), "bool"),
    (lambda: [np.int32(1), np.int32(2)], "int32"),
    (lambda: [np.float64(1), 2], "float64"),
    (lambda: [np.int32(1), 2], "int64"),
    (lambda: [np.float16(1), 2], "float16"),
    (lambda: [np.float16(1), 2.0], "float32"),
    (lambda: [np.uint8(1), np.int8(2)], "int16"),
    (lambda: [[np.float64(1)], [True]], "float64"),
    (lambda: [ember.tensor(1, dtype=ember.int8), ember.tensor(2, dtype=ember.uint8)], "int16"),
    (lambda: [ember.tensor(1.0, dtype=ember.float64), 2], "float64"),
    (lambda: [ember.tensor(1, dtype=ember.int32), 2.5], "float32"),
    (lambda: [ember.tensor(1.0, dtype=ember.bfloat16), 2.5], "float32"),
], ids=lambda v: v if isinstance(v, str) else "")
def test_tensor_infers_numpy_and_tensor_dtypes(make, expected):
    assert ember.tensor(make()).dtype == getattr(ember, expected)


def test_tensor_values_and_shapes():
    t = ember.tensor([[1, 2], [3, 4]])
    assert tuple(t.shape) == (2, 2) and t.tolist() == [[1, 2], [3, 4]]
    assert tuple(ember.tensor([[], []]).shape) == (2, 0)
    assert tuple(ember.tensor([]).shape) == (0,)
    assert ember.tensor([ember.tensor(1.0), ember.tensor(2.0)]).tolist() == [1.0, 2.0]
    big = ember.tensor([2 ** 62])
    assert big.tolist() == [2 ** 62]
    assert ember.tensor([1.5e300]).tolist() == [float("inf")]  # float32
    assert ember.tensor([1.5e300], dtype=ember.float64).tolist() == [1.5e300]
    assert ember.tensor([0.1]).tolist() == [float(np.float32(0.1))]


def test_tensor_with_dtype_argument():
    t = ember.tensor([1, 2], dtype=ember.float16)
    assert t.dtype == ember.float16 and t.tolist() == [1.0, 2.0]
    t = ember.tensor([1.7, -1.7], dtype=ember.int32)
    assert t.tolist() == [1, -1]
    t = ember.tensor([1.0, 2.5], dtype=ember.bfloat16)
    assert t.dtype == ember.bfloat16 and t.tolist() == [1.0, 2.5]
    assert ember.tensor(np.float64(2), dtype=ember.float16).dtype == ember.float16


def test_tensor_default_dtype():
    prev = ember.get_default_dtype()
    try:
        ember.set_default_dtype(ember.float64)
        assert ember.tensor([1.5]).dtype == ember.float64
        assert ember.tensor([1]).dtype == ember.int64
        assert ember.tensor([]).dtype == ember.float64
    finally:
        ember.set_default_dtype(prev)
    assert ember.tensor([1.5]).dtype == ember.float32


def test_tensor_bad_data():
    with pytest.raises(ValueError):
        ember.tensor([[1, 2], [3]])
    with pytest.raises(RuntimeError, match="Could not infer dtype of NoneType"):
        ember.tensor(None)
    with pytest.raises(RuntimeError, match="Could not infer dtype of NoneType"):
        ember.tensor([1, None])
    with pytest.raises(RuntimeError, match="Could not infer dtype of dict"):
        ember.tensor({1: 2})
    with pytest.raises((TypeError, ValueError)):
        ember.tensor(["a"])


def test_tensor_0d():
    t = ember.tensor(3)
    assert tuple(t.shape) == () and t.dim() == 0 and t.numel() == 1
    assert t.item() == 3
    assert ember.tensor(3.5).item() == 3.5
    assert ember.tensor(True).dtype == ember.bool


# ---------------------------------------------------------------- as_tensor

def test_as_tensor_shares():
    t = ember.ones(2)
    assert ember.as_tensor(t) is t
    a = np.ones(3)
    s = ember.as_tensor(a)
    assert s.dtype == ember.float64
    assert s.data_ptr() == a.ctypes.data
    s[0] = 5
    assert a[0] == 5
    # a dtype change copies
    c = ember.as_tensor(a, dtype=ember.float32)
    assert c.dtype == ember.float32
    assert c.data_ptr() != a.ctypes.data
    # a tensor converted to another dtype is a new tensor
    i = ember.as_tensor(t, dtype=ember.int64)
    assert i.dtype == ember.int64 and i.tolist() == [1, 1]


def test_as_tensor_from_python():
    t = ember.as_tensor([1, 2])
    assert t.dtype == ember.int64 and t.tolist() == [1, 2]
    assert ember.as_tensor(np.float64(1.5)).dtype == ember.float64
    assert ember.as_tensor([1.5], dtype=ember.float64).dtype == ember.float64


# ---------------------------------------------------------------- tolist / item

@pytest.mark.parametrize("dtype", ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
                                   "float32", "float64"])
def test_tolist_types(dtype):
    t = ember.ones(2, 2, dtype=getattr(ember, dtype))
    lst = t.tolist()
    assert isinstance(lst, list) and isinstance(lst[0], list)
    py = bool if dtype == "bool" else (float if "float" in dtype else int)
    assert type(lst[0][0]) is py
    assert lst == [[py(1)] * 2] * 2
    x = t[0, 0].item()
    assert type(x) is py and x == py(1)


def test_tolist_values():
    assert ember.tensor([[1, 2], [3, 4]]).tolist() == [[1, 2], [3, 4]]
    assert ember.tensor(2.5).tolist() == 2.5
    assert ember.tensor([1.5], dtype=ember.bfloat16).tolist() == [1.5]
    assert ember.tensor([-3], dtype=ember.int8).tolist() == [-3]
    assert ember.arange(6).reshape(2, 3).t().tolist() == [[0, 3], [1, 4], [2, 5]]
    assert ember.zeros(0, 2).tolist() == []
    assert ember.tensor([1.0], requires_grad=True).tolist() == [1.0]


def test_item():
    assert [type(ember.tensor(x).item()) for x in (1, 1.5, True)] == [int, float, bool]
    assert ember.tensor([[3]]).item() == 3
    assert ember.tensor(1.5, dtype=ember.bfloat16).item() == 1.5
    assert ember.tensor(2.0, requires_grad=True).item() == 2.0
    with pytest.raises(RuntimeError, match="a Tensor with 2 elements cannot be converted to Scalar"):
        ember.tensor([1, 2]).item()
    with pytest.raises(RuntimeError, match="a Tensor with 0 elements cannot be converted to Scalar"):
        ember.tensor([]).item()
