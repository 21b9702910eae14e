"""ember.from_numpy (C++, over NumPy's __array_struct__): every dtype ember has, strides as NumPy's,
torch's errors in torch's order, the read-only warning (once), the array kept alive exactly as long
as the tensor's storage."""
import gc
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import ember

SUPPORTED = {np.bool_: ember.bool, np.uint8: ember.uint8, np.int8: ember.int8, np.int16: ember.int16,
             np.int32: ember.int32, np.int64: ember.int64, np.intc: ember.int32, np.longlong: ember.int64,
             np.float16: ember.float16, np.float32: ember.float32, np.float64: ember.float64}
# NumPy dtypes ember has no tensor dtype for (torch has some of them: complex, uint16-64).
UNSUPPORTED = [np.complex64, np.complex128, np.uint16, np.uint32, np.uint64, np.longdouble, "datetime64[s]",
               "timedelta64[s]", object, "U3", "S2", [("a", "i1"), ("b", "f4")]]
ONLY = ("The only supported types are: float64, float32, float16, int64, int32, int16, int8, uint8, and bool.")
NEGATIVE = ("At least one stride in the given numpy array is negative, and tensors with negative strides are not "
            "currently supported. (You can probably work around this by making a copy of your array  with "
            "array.copy().) ")
BYTE_ORDER = ("given numpy array has byte order different from the native byte order. Conversion between byte "
              "orders is currently not supported.")
NOT_MULTIPLE = ("given numpy array strides not a multiple of the element byte size. Copy the numpy array to "
                "reallocate the memory.")


def _sample(dtype, shape=(2, 3, 4)):
    a = np.arange(int(np.prod(shape))).reshape(shape)
    return (a % 3 == 0) if dtype is np.bool_ else a.astype(dtype)


@pytest.mark.parametrize("dtype", list(SUPPORTED), ids=lambda d: np.dtype(d).name + np.dtype(d).char)
def test_every_dtype_shares_memory_with_numpy_strides(dtype):
    base = _sample(dtype, (4, 5, 6))
    for a in (base, base[1:, ::2, 1::3], base.transpose(2, 0, 1), base[:, None, 2], base[2, 3, 4, ...]):
        t = ember.from_numpy(a)
        assert t.dtype == SUPPORTED[dtype]
        assert tuple(t.shape) == a.shape
        assert tuple(t.stride()) == tuple(s // a.itemsize for s in a.strides)
        assert t.data_ptr() == a.ctypes.data
        np.testing.assert_array_equal(t.numpy(), a)
    view = ember.from_numpy(base[1:, ::2])
    view[0, 0, 0] = True if dtype is np.bool_ else 9
    assert base[1, 0, 0] == (True if dtype is np.bool_ else 9)


def test_zero_strides_empty_and_subclasses():
    b = np.broadcast_to(np.arange(3.0), (4, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # read-only: warns once per program (tested in a process of its own)
        t = ember.from_numpy(b)
    assert tuple(t.stride()) == (0, 1) and t.tolist() == [[0.0, 1.0, 2.0]] * 4
    e = ember.from_numpy(np.zeros((3, 0, 2), np.float32)[::2])
    assert tuple(e.shape) == (2, 0, 2) and e.numel() == 0
    e = ember.from_numpy(np.zeros((0,), np.int16))
    assert e.dtype == ember.int16 and e.numel() == 0
    masked = np.ma.masked_array(np.arange(4.0), mask=[0, 1, 0, 0])
    assert ember.from_numpy(masked).tolist() == [0.0, 1.0, 2.0, 3.0]  # the data, as torch (the mask is ignored)

    class Sub(np.ndarray):
        pass
    s = np.arange(6, dtype=np.int32).reshape(2, 3).view(Sub)
    assert ember.from_numpy(s).tolist() == [[0, 1, 2], [3, 4, 5]]


@pytest.mark.parametrize("dtype", UNSUPPORTED, ids=str)
def test_unsupported_dtypes_raise_type_error_naming_the_scalar_type(dtype):
    a = np.zeros(3, dtype=dtype)
    name = np.dtype(dtype).type.__module__ + "." + np.dtype(dtype).type.__name__
    with pytest.raises(TypeError) as info:
        ember.from_numpy(a)
    assert str(info.value) == f"can't convert np.ndarray of type {name}. {ONLY}"


def test_non_arrays_raise_type_error():
    for obj, name in ([1, 2], "list"), (np.float32(3), "numpy.float32"), (ember.zeros(2), "Tensor"), \
            (memoryview(b"ab"), "memoryview"), (None, "NoneType"):
        with pytest.raises(TypeError, match=f"^expected np.ndarray \\(got {name}\\)$"):
            ember.from_numpy(obj)


def test_negative_strides_byte_order_and_odd_strides_raise_value_error():
    for a in (np.arange(4.0)[::-1], np.arange(12).reshape(3, 4)[:, ::-2], np.zeros((2, 3), np.float16)[::-1, 1:]):
        with pytest.raises(ValueError) as info:
            ember.from_numpy(a)
        assert str(info.value) == NEGATIVE
    for dtype in (">f4", ">i2", ">i8", ">f8", ">f2"):
        with pytest.raises(ValueError) as info:
            ember.from_numpy(np.zeros(3, dtype=dtype))
        assert str(info.value) == BYTE_ORDER
    assert ember.from_numpy(np.arange(3, dtype=">i1")).tolist() == [0, 1, 2]  # one byte: no byte order
    fields = np.zeros(4, dtype=[("a", "i1"), ("b", "f4")])
    with pytest.raises(ValueError) as info:
        ember.from_numpy(fields["b"])  # a stride of 5 bytes over 4-byte floats
    assert str(info.value) == NOT_MULTIPLE
    # torch's order: strides first, then byte order, then dtype.
    with pytest.raises(ValueError) as info:
        ember.from_numpy(np.zeros(3, dtype=">c8")[::-1])
    assert str(info.value) == NEGATIVE
    with pytest.raises(ValueError) as info:
        ember.from_numpy(np.zeros(3, dtype=">c8"))
    assert str(info.value) == BYTE_ORDER


CASES = {
    "float32": lambda: np.ones((2, 3), np.float32), "strided": lambda: np.arange(24.0).reshape(4, 6)[::2, 1::3],
    "reversed": lambda: np.arange(4)[::-1], "big endian": lambda: np.zeros(2, ">f8"),
    "big endian int8": lambda: np.zeros(2, ">i1"), "uint16": lambda: np.zeros(2, np.uint16),
    "complex reversed": lambda: np.zeros(3, np.complex64)[::-1], "longdouble": lambda: np.zeros(2, np.longdouble),
    "object": lambda: np.array([None, 1], dtype=object), "str": lambda: np.array(["a"]),
    "field": lambda: np.zeros(4, dtype=[("a", "i1"), ("b", "f4")])["b"], "list": lambda: [1.0],
    "scalar": lambda: np.float64(1), "0-d": lambda: np.array(7, np.int16), "new axis": lambda: np.ones(3)[:, None],
}


@pytest.mark.parametrize("case", list(CASES))
def test_matches_torch(case):
    torch = pytest.importorskip("torch")
    if case in ("uint16",):
        pytest.skip("torch has uint16 tensors, ember does not")

    def run(mod):
        try:
            t = mod.from_numpy(CASES[case]())
        except (TypeError, ValueError, RuntimeError) as e:
            return type(e).__name__, str(e).split(". The only supported types")[0]
        return str(t.dtype).split(".")[1], tuple(t.shape), tuple(t.stride()), t.tolist()
    assert run(ember) == run(torch)


def test_array_kept_alive_exactly_as_long_as_the_storage():
    a = np.arange(10.0)
    before = sys.getrefcount(a)
    t = ember.from_numpy(a)
    assert sys.getrefcount(a) == before + 1
    view = t[2:5]
    del t
    gc.collect()
    assert sys.getrefcount(a) == before + 1  # the view's storage still holds it
    del view
    gc.collect()
    assert sys.getrefcount(a) == before
    t = ember.from_numpy(np.arange(1000, dtype=np.int64) * 3)  # the only reference to the array is the tensor's
    gc.collect()
    assert t.sum().item() == 3 * 999 * 1000 // 2
    t = ember.from_numpy(a)
    with pytest.raises(ValueError, match="cannot resize"):
        a.resize(20)  # NumPy refuses: the tensor holds a reference, so the memory stays put
    del t
    gc.collect()
    a.resize(20)  # and allows it once the tensor is gone


def test_read_only_array_warns_once_and_shares_memory(tmp_path):
    script = tmp_path / "readonly.py"
    script.write_text(
        "import warnings, numpy as np, ember\n"
        "a = np.arange(4.0); a.flags.writeable = False\n"
        "with warnings.catch_warnings(record=True) as w:\n"
        "    warnings.simplefilter('always')\n"
        "    t = ember.from_numpy(a)\n"
        "    u = ember.from_numpy(a)\n"
        "    ember.from_numpy(np.arange(2.0))\n"
        "print(len(w), w[0].category.__name__, w[0].filename.endswith('readonly.py'))\n"
        "print(w[0].message)\n"
        "print(t.data_ptr() == u.data_ptr() == a.ctypes.data, t.tolist())\n")
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=dict(os.environ),
                         timeout=120)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "1 UserWarning True"
    assert lines[1] == ("The given NumPy array is not writable, and PyTorch does not support non-writable tensors. "
                        "This means writing to this tensor will result in undefined behavior. You may want to copy "
                        "the array to protect its data or make it writable before converting it to a tensor. This "
                        "type of warning will be suppressed for the rest of this program.")
    assert lines[2] == "True [0.0, 1.0, 2.0, 3.0]"


def test_as_tensor_and_tensor_of_arrays():
    a = np.arange(6, dtype=np.int16).reshape(2, 3)
    shared = ember.as_tensor(a)
    assert shared.data_ptr() == a.ctypes.data and shared.dtype == ember.int16
    copy = ember.tensor(a[:, ::-1])  # a copy: negative strides are fine
    assert copy.tolist() == [[2, 1, 0], [5, 4, 3]] and copy.data_ptr() != a.ctypes.data
