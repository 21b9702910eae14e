"""The storage hooks shared memory and mmap loading build on: `_C._storage_from_buffer(buf, copy=False)`
views a buffer's memory (keeping the buffer alive), and `_C._storage_set_data_` moves a storage's bytes
into other memory in place."""
import gc
import mmap
import threading
import weakref

import numpy as np
import pytest

import ember
from ember import _C


def _float_view(storage, n):
    return _C._tensor_from_storage(storage, 0, (n,), (1,), ember.float32)


def test_copy_true_copies():
    buf = bytearray(np.arange(4, dtype=np.float32).tobytes())
    t = _float_view(_C._storage_from_buffer(buf), 4)
    buf[:4] = np.float32(9).tobytes()
    assert t.tolist() == [0.0, 1.0, 2.0, 3.0]
    t[1] = 7
    assert np.frombuffer(buf, np.float32).tolist() == [9.0, 1.0, 2.0, 3.0]


def test_zero_copy_numpy_both_ways():
    a = np.arange(6, dtype=np.float32)
    storage = _C._storage_from_buffer(a, copy=False)
    assert storage.nbytes() == 24 and storage.data_ptr() == a.ctypes.data
    t = _float_view(storage, 6)
    a[2] = 40
    assert t[2].item() == 40
    t.mul_(2)
    np.testing.assert_array_equal(a, np.array([0, 2, 80, 6, 8, 10], np.float32))


def test_zero_copy_bytearray_and_keyword():
    buf = bytearray(8)
    t = _C._tensor_from_storage(_C._storage_from_buffer(buffer=buf, copy=False), 0, (8,), (1,), ember.uint8)
    t.fill_(3)
    assert bytes(buf) == b"\x03" * 8
    buf[0] = 200
    assert t[0].item() == 200
    # An exported bytearray cannot be resized under the storage.
    with pytest.raises(BufferError):
        buf.append(1)


def test_zero_copy_mmap_writes_reach_the_file(tmp_path):
    path = tmp_path / "data.bin"
    path.write_bytes(np.arange(5, dtype=np.int64).tobytes())
    with open(path, "r+b") as f:
        m = mmap.mmap(f.fileno(), 0)
    t = _C._tensor_from_storage(_C._storage_from_buffer(m, copy=False), 0, (5,), (1,), ember.int64)
    assert t.tolist() == [0, 1, 2, 3, 4]
    t[4] = -1
    m[:8] = np.int64(100).tobytes()
    assert t[0].item() == 100
    del t
    gc.collect()
    m.close()  # possible again once the storage is gone
    assert np.frombuffer(path.read_bytes(), np.int64).tolist() == [100, 1, 2, 3, -1]


def test_read_only_buffers_are_shared(tmp_path):
    # Accepted as torch.frombuffer accepts them; the storage reads the memory in place.
    data = np.arange(3, dtype=np.float32).tobytes()
    storage = _C._storage_from_buffer(data, copy=False)
    assert _float_view(storage, 3).tolist() == [0.0, 1.0, 2.0]
    frozen = np.arange(3, dtype=np.float32)
    frozen.flags.writeable = False
    assert _C._storage_from_buffer(frozen, copy=False).data_ptr() == frozen.ctypes.data
    path = tmp_path / "ro.bin"
    path.write_bytes(np.arange(4, dtype=np.float32).tobytes())
    with open(path, "rb") as f:
        m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    t = _float_view(_C._storage_from_buffer(m, copy=False), 4)
    assert t.sum().item() == 6.0
    # Copy-on-write maps (what a writable mmap load uses) take writes without touching the file.
    with open(path, "rb") as f:
        cow = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY)
    c = _float_view(_C._storage_from_buffer(cow, copy=False), 4)
    c.fill_(5)
    assert t.tolist() == [0.0, 1.0, 2.0, 3.0] and c.tolist() == [5.0] * 4


def test_buffer_lives_as_long_as_the_storage(tmp_path):
    a = np.arange(1000, dtype=np.float64)
    alive = weakref.ref(a)
    t = _C._tensor_from_storage(_C._storage_from_buffer(a, copy=False), 0, (1000,), (1,), ember.float64)
    del a
    gc.collect()
    assert alive() is not None and t.sum().item() == 999 * 1000 / 2
    view = t[10:20]
    del t
    gc.collect()
    assert alive() is not None and view[0].item() == 10
    del view
    gc.collect()
    assert alive() is None
    # An mmap whose every name is gone stays mapped while the storage lives.
    path = tmp_path / "m.bin"
    path.write_bytes(np.full(4, 2.5, np.float32).tobytes())
    with open(path, "r+b") as f:
        t = _float_view(_C._storage_from_buffer(mmap.mmap(f.fileno(), 0), copy=False), 4)
    gc.collect()
    assert t.tolist() == [2.5] * 4


def test_storage_releases_the_buffer_when_it_dies():
    buf = bytearray(16)
    storage = _C._storage_from_buffer(buf, copy=False)
    t = _C._tensor_from_storage(storage, 4, (2,), (1,), ember.uint8)
    del storage
    with pytest.raises(BufferError):
        buf.extend(b"x")  # still exported: the view holds the storage
    del t
    gc.collect()
    buf.extend(b"x")  # released
    assert len(buf) == 17


def test_storage_dies_on_another_thread():
    # The deleter takes the GIL itself: a storage may die where Python code is not running.
    buf = bytearray(32)
    box = [_C._tensor_from_storage(_C._storage_from_buffer(buf, copy=False), 0, (32,), (1,), ember.uint8)]

    def drop():
        box.pop()
    th = threading.Thread(target=drop)
    th.start()
    th.join()
    gc.collect()
    buf.extend(b"ok")
    assert len(buf) == 34


def test_storage_dies_inside_backward_without_the_gil():
    # The engine frees saved tensors with the GIL released: the deleter must take it to release the buffer.
    buf = bytearray(np.full(4, 3.0, np.float32).tobytes())
    z = _float_view(_C._storage_from_buffer(buf, copy=False), 4)
    x = ember.ones(4, requires_grad=True)
    y = (x * z).sum()  # mul saves z for x's gradient
    del z
    gc.collect()
    with pytest.raises(BufferError):
        buf.extend(b"x")  # the graph holds the storage
    y.backward()  # frees the saved z: released here, y still alive
    buf.extend(b"x")
    assert len(buf) == 17 and x.grad.tolist() == [3.0] * 4


def test_non_contiguous_and_bad_buffers():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)[:, ::2]
    with pytest.raises(ValueError, match="not C-contiguous"):
        _C._storage_from_buffer(a, copy=False)
    with pytest.raises(TypeError):
        _C._storage_from_buffer(3, copy=False)
    with pytest.raises(TypeError):
        _C._storage_from_buffer(object())


def test_set_data_moves_memory_under_every_view():
    base = ember.arange(12, dtype=ember.float32)
    view = base.view(3, 4)[1:, ::2]
    storage = base.untyped_storage()
    old_ptr = storage.data_ptr()
    target = np.zeros(12, dtype=np.float32)
    holder = _C._storage_from_buffer(target, copy=False)
    _C._storage_set_data_(storage, holder)
    assert storage.data_ptr() == target.ctypes.data and holder.data_ptr() == old_ptr
    np.testing.assert_array_equal(target, np.arange(12, dtype=np.float32))
    base[4] = -4
    assert target[4] == -4 and view[0, 0].item() == -4
    target[6] = 60
    assert view[0, 1].item() == 60
    del holder  # the old memory goes back to the allocator; the tensors keep the new memory
    gc.collect()
    assert base.tolist()[:7] == [0, 1, 2, 3, -4, 5, 60]


def test_set_data_errors():
    a = ember.zeros(4).untyped_storage()
    with pytest.raises(RuntimeError, match="differ in size"):
        _C._storage_set_data_(a, ember.zeros(5).untyped_storage())
    with pytest.raises(TypeError, match="UntypedStorage"):
        _C._storage_set_data_(a, bytearray(16))
    _C._storage_set_data_(a, a)  # a no-op
    assert a.nbytes() == 16


def test_storages_alive_at_interpreter_exit():
    # Storages over buffers that live until shutdown (in globals, in cycles) must not crash the exit.
    import subprocess
    import sys
    code = ("import mmap, numpy as np, ember\nfrom ember import _C\n"
            "a = _C._storage_from_buffer(np.arange(10.), copy=False)\n"
            "t = _C._tensor_from_storage(_C._storage_from_buffer(mmap.mmap(-1, 4096), copy=False), 0, (8,), (1,),"
            " ember.uint8)\ncycle = [t]\ncycle.append(cycle)\nprint('exiting')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "exiting"
