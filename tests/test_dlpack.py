"""DLPack: ember.from_dlpack, Tensor.__dlpack__/__dlpack_device__ and ember.utils.dlpack, checked
against NumPy (np.from_dlpack), a hand-made ctypes producer and, when installed, PyTorch."""
import gc
import sys
import warnings
from contextlib import nullcontext

import numpy as np
import pytest

import ember
from child_process import run_isolated
from dlpack_capsules import IS_COPIED, READ_ONLY, Producer, versioned_flags, versioned_version
from ember.utils.dlpack import DLDeviceType, to_dlpack

NUMPY_DTYPES = [np.bool_, np.uint8, np.int8, np.int16, np.int32, np.int64, np.float16, np.float32, np.float64]
EMBER_DTYPES = [ember.bool, ember.uint8, ember.int8, ember.int16, ember.int32, ember.int64, ember.float16,
                ember.bfloat16, ember.float32, ember.float64]


def sample(dtype, shape=(3, 4)):
    """Distinct values of `dtype` (alternating for bool)."""
    t = ember.arange(int(np.prod(shape))).reshape(shape) % 7 - 3
    return t.remainder(2).bool() if dtype == ember.bool else t.to(dtype)


# ------------------------------------------------------------ NumPy, both ways

def test_numpy_reads_and_writes_ember_memory():
    t = ember.arange(6.0).reshape(2, 3)
    a = np.from_dlpack(t)
    np.testing.assert_array_equal(a, [[0, 1, 2], [3, 4, 5]])
    a[1, 2] = 50.0
    assert t[1, 2].item() == 50.0
    t[0, 0] = -7.0
    assert a[0, 0] == -7.0


def test_ember_reads_and_writes_numpy_memory():
    a = np.arange(12, dtype=np.int32).reshape(3, 4)
    t = ember.from_dlpack(a)
    assert t.dtype == ember.int32 and t.shape == (3, 4) and t.data_ptr() == a.ctypes.data
    t[2, 3] = 99
    assert a[2, 3] == 99
    a[0, 1] = -5
    assert t[0, 1].item() == -5


@pytest.mark.parametrize("np_dtype", NUMPY_DTYPES)
def test_every_numpy_dtype_round_trips(np_dtype):
    src = sample(ember.from_numpy(np.zeros(1, np_dtype)).dtype)
    a = np.from_dlpack(src)
    assert a.dtype == np_dtype
    np.testing.assert_array_equal(a, src.numpy())
    back = ember.from_dlpack(a)
    assert back.dtype == src.dtype and back.data_ptr() == src.data_ptr()
    assert ember.equal(back, src)


@pytest.mark.parametrize("dtype", EMBER_DTYPES)
def test_every_ember_dtype_round_trips_through_a_capsule(dtype):
    src = sample(dtype)
    for capsule in (src.__dlpack__(max_version=(1, 0)), to_dlpack(src)):
        out = ember.from_dlpack(capsule)
        assert out.dtype == dtype and out.data_ptr() == src.data_ptr() and ember.equal(out, src)


def test_numpy_cannot_read_bfloat16_but_gets_a_clear_error():
    with pytest.raises((RuntimeError, BufferError)):
        np.from_dlpack(ember.ones(2, dtype=ember.bfloat16))


@pytest.mark.parametrize("make", [
    lambda t: t.t(),                                   # transposed
    lambda t: t[:, ::2],                               # stepped
    lambda t: t[1:, 1:],                               # offset into the storage
    lambda t: t[0].expand(5, 4),                       # zero stride
    lambda t: t[1, 2],                                 # 0-d view
    lambda t: t[:0],                                   # empty
    lambda t: t.reshape(2, 2, 3).permute(2, 0, 1),     # 3-d permuted
], ids=["transposed", "stepped", "offset", "expanded", "0d", "empty", "permuted"])
def test_views_keep_their_strides_both_ways(make):
    base = ember.arange(12.0).reshape(3, 4)
    view = make(base)
    a = np.from_dlpack(view)
    assert a.shape == tuple(view.shape)
    assert a.strides == tuple(s * view.element_size() for s in view.stride()) or a.size <= 1
    np.testing.assert_array_equal(a, view.numpy())
    back = ember.from_dlpack(a)
    assert back.shape == view.shape and ember.equal(back, view)
    if view.numel() > 1:
        assert back.stride() == view.stride() and back.data_ptr() == view.data_ptr()


def test_numpy_views_with_offsets_and_zero_strides():
    a = np.arange(20.0).reshape(4, 5)
    for view in (a[1:, 2:], a[::2, ::-1][:, ::-1], np.broadcast_to(a[2], (3, 5)), a.T[1:3]):
        with pytest.warns(UserWarning, match="read-only") if not view.flags.writeable else nullcontext():
            t = ember.from_dlpack(view)  # broadcast_to's result is read-only
        np.testing.assert_array_equal(t.numpy(), view)
        assert t.stride() == tuple(s // 8 for s in view.strides)
        assert t.data_ptr() == view.__array_interface__["data"][0]


def test_negative_strides_are_refused_clearly():
    with pytest.raises(BufferError, match="negative strides"):
        ember.from_dlpack(np.arange(5.0)[::-1])


@pytest.mark.parametrize("np_dtype", [np.uint16, np.uint32, np.complex64])
def test_dtypes_ember_lacks_are_refused_clearly(np_dtype):
    with pytest.raises(BufferError, match="ember does not support the DLPack dtype"):
        ember.from_dlpack(np.zeros(3, np_dtype))


# ------------------------------------------------------------ lifetime and ownership

def test_producer_dropped_memory_stays_valid():
    a = np.arange(1000.0)
    t = ember.from_dlpack(a)
    del a
    gc.collect()
    _ = [np.full(1000, 123.0) for _ in range(20)]  # would reuse a freed block
    assert t.sum().item() == sum(range(1000))

    s = ember.arange(1000.0)
    b = np.from_dlpack(s)
    del s
    gc.collect()
    _ = [ember.full((1000,), 5.0) for _ in range(20)]
    assert b.sum() == sum(range(1000))


def test_importing_holds_the_producer_until_the_storage_dies():
    a = np.arange(10.0)
    before = sys.getrefcount(a)
    t = ember.from_dlpack(a)
    view = t[2:5]
    del t
    assert sys.getrefcount(a) > before  # the view's storage keeps the producer
    del view
    gc.collect()
    assert sys.getrefcount(a) == before


def test_an_unconsumed_capsule_frees_its_reference():
    a = np.arange(10.0)
    before = sys.getrefcount(a)
    t = ember.from_dlpack(a)
    capsules = [t.__dlpack__(), t.__dlpack__(max_version=(1, 0)), to_dlpack(t)]
    del t
    assert sys.getrefcount(a) > before
    del capsules  # never consumed: their destructors run the deleters
    gc.collect()
    assert sys.getrefcount(a) == before


def test_a_capsule_is_consumed_once():
    for capsule in (to_dlpack(ember.ones(3)), ember.ones(3).__dlpack__(max_version=(1, 0))):
        name = repr(capsule).split('"')[1]
        ember.from_dlpack(capsule)
        assert f'"used_{name}"' in repr(capsule)
        with pytest.raises(RuntimeError, match="DLTensor capsules can be consumed only once"):
            ember.from_dlpack(capsule)


def test_not_a_capsule_raises():
    with pytest.raises(RuntimeError, match="invalid capsule"):
        ember.from_dlpack(object())


def test_legacy_and_versioned_capsules():
    t = ember.arange(4)
    assert '"dltensor"' in repr(t.__dlpack__()) and '"dltensor"' in repr(t.__dlpack__(max_version=(0, 8)))
    versioned = t.__dlpack__(max_version=(1, 0))
    assert '"dltensor_versioned"' in repr(versioned)
    assert versioned_version(versioned) == (1, 1) and versioned_flags(versioned) == 0
    assert '"dltensor_versioned"' in repr(t.__dlpack__(max_version=(2, 0)))
    assert ember.equal(ember.from_dlpack(versioned), t)


# ------------------------------------------------------------ a hand-made producer

def test_byte_offset_null_strides_and_the_deleter():
    buffer = np.arange(10, dtype=np.float32)
    for versioned in (True, False):
        p = Producer(buffer, shape=(2, 3), byte_offset=2 * 4, versioned=versioned)
        t = ember.from_dlpack(p.capsule)
        assert t.stride() == (3, 1) and t.data_ptr() == buffer.ctypes.data + 8
        np.testing.assert_array_equal(t.numpy(), buffer[2:8].reshape(2, 3))
        t[0, 0] = 100.0
        assert buffer[2] == 100.0
        assert p.deleted == 0
        del t
        gc.collect()
        assert p.deleted == 1


def test_explicit_strides_from_a_producer():
    buffer = np.arange(24, dtype=np.int64)
    p = Producer(buffer, shape=(3, 2), strides=(1, 12), byte_offset=8)
    t = ember.from_dlpack(p.capsule)
    np.testing.assert_array_equal(t.numpy(), [[1, 13], [2, 14], [3, 15]])
    del t  # before the producer, whose deleter it calls
    assert p.deleted == 1


def test_overflowing_sizes_are_refused_before_consuming():
    p = Producer(np.zeros(1), shape=(2**40, 2**40), strides=(0, 0))
    with pytest.raises(RuntimeError, match="overflow"):
        ember.from_dlpack(p.capsule)
    assert '"dltensor_versioned"' in repr(p.capsule) and p.deleted == 0
    p.release()
    p = Producer(np.zeros(1), shape=(2**31, 3), strides=(0, 0))  # lives longer than the tensor (its deleter)
    huge = ember.from_dlpack(p.capsule)
    assert huge.shape == (2**31, 3) and huge.stride() == (0, 0)
    del huge
    assert p.deleted == 1


def test_read_only_capsules_warn():
    p = Producer(np.arange(3.0), shape=(3,), flags=READ_ONLY)
    with pytest.warns(UserWarning, match="read-only"):
        t = ember.from_dlpack(p.capsule)
    assert t.tolist() == [0.0, 1.0, 2.0]
    del t
    assert p.deleted == 1


@pytest.mark.parametrize("kwargs, match", [
    (dict(version=(2, 0)), "unsupported DLPack capsule major version: 2"),
    (dict(device=(2, 0)), "imports only CPU memory"),
    (dict(code_bits_lanes=(2, 32, 4)), "lanes != 1"),
    (dict(code_bits_lanes=(1, 16, 1)), "dtype uint16"),
    (dict(code_bits_lanes=(4, 32, 1)), "dtype bfloat32"),
])
def test_capsules_ember_cannot_take_stay_unconsumed(kwargs, match):
    p = Producer(np.zeros(4, np.float32), shape=(4,), **kwargs)
    with pytest.raises(BufferError, match=match):
        ember.from_dlpack(p.capsule)
    assert '"dltensor_versioned"' in repr(p.capsule) and p.deleted == 0  # still the producer's
    p.release()


# ------------------------------------------------------------ __dlpack__ and from_dlpack options

def test_dlpack_device():
    assert ember.ones(2).__dlpack_device__() == (DLDeviceType.kDLCPU, 0)
    assert isinstance(ember.ones(2).__dlpack_device__()[0], DLDeviceType)


def test_copy_true_exports_a_flagged_copy():
    t = ember.arange(6.0).reshape(2, 3).t()
    capsule = t.__dlpack__(max_version=(1, 0), copy=True)
    assert versioned_flags(capsule) == IS_COPIED
    out = ember.from_dlpack(capsule)
    assert out.data_ptr() != t.data_ptr() and ember.equal(out, t)
    out[0, 0] = 9.0
    assert t[0, 0].item() == 0.0
    shared = ember.from_dlpack(t.__dlpack__(max_version=(1, 0), copy=False))
    assert shared.data_ptr() == t.data_ptr()


def test_from_dlpack_copy_and_device():
    a = np.arange(4.0)
    copied = ember.from_dlpack(a, copy=True)
    copied[0] = 5.0
    assert a[0] == 0.0
    shared = ember.from_dlpack(a, copy=False, device="cpu")
    shared[0] = 7.0
    assert a[0] == 7.0
    with pytest.raises(ValueError, match="without copying"):
        ember.from_dlpack(a, device="cuda", copy=False)
    with pytest.raises(AssertionError, match="already a DLPack capsule"):
        ember.from_dlpack(to_dlpack(ember.ones(1)), copy=True)


def test_a_producer_without_the_new_keywords():
    class OldProducer:
        def __init__(self, array):
            self.array = array

        def __dlpack__(self, stream=None):
            return self.array.__dlpack__(stream=stream)

        def __dlpack_device__(self):
            return self.array.__dlpack_device__()

    a = np.arange(3.0)
    shared = ember.from_dlpack(OldProducer(a))
    copied = ember.from_dlpack(OldProducer(a), copy=True)
    shared[0] = 4.0
    assert a[0] == 4.0 and copied[0].item() == 0.0


def test_export_errors_as_pytorch():
    t = ember.ones(2, requires_grad=True)
    with pytest.raises(BufferError, match=r"Can't export tensors that require gradient, use tensor.detach\(\)"):
        t.__dlpack__()
    assert ember.from_dlpack(to_dlpack(t)).requires_grad is False  # the legacy function exports it, as PyTorch
    u = ember.ones(2)
    with pytest.raises(TypeError, match="stream must be"):
        u.__dlpack__(stream="0")
    with pytest.raises(AssertionError, match="stream should be None on cpu"):
        u.__dlpack__(stream=5)
    with pytest.raises(BufferError, match="cannot export a cpu tensor to DLPack device"):
        u.__dlpack__(dl_device=(DLDeviceType.kDLCUDA, 0))
    assert ember.equal(ember.from_dlpack(u.__dlpack__(stream=None, dl_device=(1, 0))), u)


def test_ember_to_ember_shares_memory():
    t = ember.zeros(3)
    u = ember.from_dlpack(t)
    u[1] = 2.0
    assert t.tolist() == [0.0, 2.0, 0.0]


@pytest.mark.skipif(not ember.cuda.is_available(), reason="needs a CUDA GPU")
def test_cuda_tensors_report_their_device_and_refuse_export():
    t = ember.ones(3, device="cuda")
    assert t.__dlpack_device__() == (DLDeviceType.kDLCUDA, t.device.index)
    with pytest.raises(BufferError, match="cannot export cuda tensors"):
        t.__dlpack__()
    with pytest.raises(BufferError, match="exports only CPU tensors"):
        to_dlpack(t)
    with pytest.raises(BufferError, match="imports CPU memory only"):
        ember.from_dlpack(t)


# ------------------------------------------------------------ leaks and interpreter exit

def _rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def test_round_trips_do_not_leak():
    def round_trips(n):
        for _ in range(n):
            a = np.ones(16384, np.float32)  # 64 KiB: a leak of each shows as hundreds of MB
            b = np.from_dlpack(ember.from_dlpack(a))
            c = ember.from_dlpack(to_dlpack(ember.from_dlpack(b)))
            t = ember.full((16384,), 2.0)
            np.from_dlpack(t).sum()
            t.__dlpack__(max_version=(1, 0))  # dropped unconsumed
            del a, b, c, t
    round_trips(2000)
    gc.collect()
    before = _rss_bytes()
    round_trips(10000)
    gc.collect()
    assert _rss_bytes() - before < 32 * 2**20


def test_tensors_and_capsules_alive_at_interpreter_exit():
    result = run_isolated("""
        import numpy as np, ember
        keep = [ember.from_dlpack(np.arange(100.0))]
        unconsumed = ember.arange(5).__dlpack__(max_version=(1, 0))
        exported = np.from_dlpack(ember.arange(7.0))
        cycle = [keep]; cycle.append(cycle)
        print(float(keep[0].sum()), exported.sum())
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["4950.0", "21.0"] and result.stderr == ""


# ------------------------------------------------------------ PyTorch

@pytest.mark.parametrize("dtype", EMBER_DTYPES)
def test_pytorch_shares_memory_both_ways(dtype):
    torch = pytest.importorskip("torch")
    e = sample(dtype)
    t = torch.from_dlpack(e)
    assert str(t.dtype).split(".")[1] == str(e.dtype).split(".")[1] and t.data_ptr() == e.data_ptr()
    assert t.tolist() == e.tolist()
    t2 = torch.arange(12).reshape(3, 4).to(t.dtype).t()
    e2 = ember.from_dlpack(t2)
    assert e2.data_ptr() == t2.data_ptr() and e2.stride() == t2.stride() and e2.tolist() == t2.tolist()
    if dtype != ember.bool:
        t[0, 0] = 5
        assert e[0, 0].item() == 5
        e2[1, 1] = 3
        assert t2[1, 1].item() == 3


def test_pytorch_legacy_capsules_and_errors_match():
    torch = pytest.importorskip("torch")
    t = torch.arange(5.0)
    e = ember.from_dlpack(torch.utils.dlpack.to_dlpack(t))
    assert e.tolist() == t.tolist() and e.data_ptr() == t.data_ptr()
    back = torch.from_dlpack(ember.utils.dlpack.to_dlpack(e))
    assert back.data_ptr() == t.data_ptr()
    with pytest.raises(BufferError) as theirs:
        torch.ones(1, requires_grad=True).__dlpack__()
    with pytest.raises(BufferError) as ours:
        ember.ones(1, requires_grad=True).__dlpack__()
    assert str(ours.value) == str(theirs.value)
    assert ember.ones(1).__dlpack_device__() == torch.ones(1).__dlpack_device__()


def test_pytorch_producer_dropped():
    torch = pytest.importorskip("torch")
    t = torch.arange(1000.0)
    e = ember.from_dlpack(t)
    del t
    gc.collect()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert e.sum().item() == sum(range(1000))


def test_imported_memory_released_inside_backward():
    # backward() runs without the GIL; freeing the saved imported tensor there calls NumPy's deleter,
    # which must take the GIL back (a child process: a deadlock fails the test instead of hanging the run).
    result = run_isolated("""
        import gc, sys, numpy as np, ember
        a = np.arange(6.0)
        before = sys.getrefcount(a)
        w = ember.ones(6, dtype=ember.float64, requires_grad=True)
        x = ember.from_dlpack(a)
        loss = (w * x).sum()
        del x
        loss.backward()  # frees the graph's saved x
        del loss
        gc.collect()
        print(w.grad.tolist() == list(range(6)), sys.getrefcount(a) == before)
    """, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True", "True"]
