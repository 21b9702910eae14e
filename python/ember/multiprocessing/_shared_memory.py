"""Shared-memory segments under CPU storages.

A shared storage is an ordinary UntypedStorage whose memory is an mmap of a
shared segment (viewed without a copy through `_C._storage_from_buffer`). The
registry maps each such storage's data_ptr to its segment, which says how to
send it to another process; the segment's cleanup runs when the mmap dies,
which is when the last storage over it dies.

Two kinds, one per sharing strategy:
- "file_descriptor": an anonymous memfd, sent by passing the fd (SCM_RIGHTS).
  Nothing is named, so nothing can leak; each shared storage keeps one fd open.
- "file_system": a named file in /dev/shm with a reference count after the data
  (one per mapping in any process plus one per message in flight, changed under
  flock); whoever drops it to 0 unlinks the name. The resource tracker unlinks
  names that processes dying abnormally leave behind.
"""
import fcntl
import mmap
import os
import secrets
import struct
import threading
import weakref
from multiprocessing import util

from .. import _C

SHM_DIR = "/dev/shm"
_COUNT = struct.Struct("q")

_strategy = "file_descriptor" if hasattr(os, "memfd_create") else "file_system"
_segments: dict = {}  # data_ptr -> _Segment, for every shared storage mapped in this process
_share_lock = threading.Lock()  # a Queue's feeder thread shares storages beside the main thread


class _Segment:
    __slots__ = ("kind", "nbytes", "fd", "name", "ptr", "pid", "mapping", "released")

    def __init__(self, kind, nbytes, fd=None, name=None):
        self.kind, self.nbytes, self.fd, self.name = kind, nbytes, fd, name
        self.ptr = self.pid = self.mapping = None  # set by _map; mapping: a weak reference to the mmap
        self.released = False


def _count_offset(nbytes):
    return (nbytes + 7) // 8 * 8  # the reference count sits, aligned, after the data


def _path(name):
    return os.path.join(SHM_DIR, name)


def _map(fd, length, nbytes, segment, populate=False):
    """A storage over the first nbytes of an mmap of fd, registered under its data_ptr. populate: fault
    the pages in now (a new segment about to be filled: faster than a fault per page)."""
    flags = mmap.MAP_SHARED | (getattr(mmap, "MAP_POPULATE", 0) if populate else 0)
    mapping = mmap.mmap(fd, length, flags=flags)
    storage = _C._storage_from_buffer(memoryview(mapping)[:nbytes], copy=False)
    segment.ptr, segment.pid = storage.data_ptr(), os.getpid()
    # The mapping dies with the last storage over it (the storage holds it through the buffer).
    segment.mapping = weakref.ref(mapping, lambda _, segment=segment: _release(segment))
    _segments[segment.ptr] = segment
    return storage


def _release(segment):
    """Gives back this process's reference to the segment: when its mapping dies, or at exit."""
    if _segments.get(segment.ptr) is segment:
        del _segments[segment.ptr]
    if segment.released or segment.pid != os.getpid():  # a forked copy's: the parent holds that reference
        return
    segment.released = True
    if segment.kind == "file_descriptor":
        os.close(segment.fd)
    else:
        adjust_refcount(segment.name, segment.nbytes, -1)


def _release_all():
    for segment in list(_segments.values()):
        _release(segment)


def _install_exit_hook(_=None):
    # multiprocessing runs its exit finalizers in children too (after joining theirs), but a forked
    # child starts with none (its arguments' mappings are made before that), so the hook goes in again.
    util.Finalize(None, _release_all, exitpriority=-10)


_install_exit_hook()
util.register_after_fork(_release_all, _install_exit_hook)


def adjust_refcount(name, nbytes, delta):
    """Adds delta to a named segment's reference count; unlinks it when the count reaches 0."""
    try:
        fd = os.open(_path(name), os.O_RDWR)
    except FileNotFoundError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        offset = _count_offset(nbytes)
        count = _COUNT.unpack(os.pread(fd, _COUNT.size, offset))[0] + delta
        os.pwrite(fd, _COUNT.pack(count), offset)
        if count <= 0:
            os.unlink(_path(name))
            _untrack(name)
    finally:
        os.close(fd)  # releases the lock


def _fresh_tracker_lock():
    # A fork while another thread of the parent holds the resource tracker's lock (a queue's feeder
    # thread registering a segment) leaves it held forever in the child, whose first tracker call hangs
    # (seen: a DataLoader worker stuck in ensure_running). The child is single-threaded: a new lock is safe.
    from multiprocessing import resource_tracker
    resource_tracker._resource_tracker._lock = threading.RLock()


os.register_at_fork(after_in_child=_fresh_tracker_lock)


def start_tracker():
    """Starts the resource tracker now, so that processes forked from here on share it: a name is then
    unregistered from the tracker that registered it, whichever process unlinks it."""
    from multiprocessing import resource_tracker
    resource_tracker.ensure_running()


def _track(name):
    from multiprocessing import resource_tracker
    resource_tracker.register("/" + name, "shared_memory")


def _untrack(name):
    from multiprocessing import resource_tracker
    resource_tracker.unregister("/" + name, "shared_memory")


def new_shared_storage(nbytes, strategy=None):
    """A new storage of nbytes in a fresh segment of the given (or current) strategy."""
    strategy = strategy or _strategy
    if strategy == "file_descriptor":
        fd = os.memfd_create("ember_shared", os.MFD_CLOEXEC)
        try:
            os.ftruncate(fd, max(nbytes, 1))  # mmap cannot map 0 bytes
            return _map(fd, max(nbytes, 1), nbytes, _Segment(strategy, nbytes, fd=fd), populate=True)
        except BaseException:
            os.close(fd)
            raise
    name = f"ember_{os.getpid()}_{secrets.token_hex(8)}"
    length = _count_offset(nbytes) + _COUNT.size
    fd = os.open(_path(name), os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    tracked = False
    try:
        os.ftruncate(fd, length)
        os.pwrite(fd, _COUNT.pack(1), _count_offset(nbytes))  # this process's mapping
        _track(name)
        tracked = True
        return _map(fd, length, nbytes, _Segment(strategy, nbytes, name=name), populate=True)
    except BaseException:
        os.unlink(_path(name))
        if tracked:
            _untrack(name)
        raise
    finally:
        os.close(fd)


def open_fd_storage(fd, nbytes):
    """A storage over a segment received as an fd (which it takes)."""
    try:
        size = os.fstat(fd).st_size
        if size < nbytes:
            raise RuntimeError(f"received a shared memory segment of {size} bytes for a storage of {nbytes} bytes")
        return _map(fd, max(nbytes, 1), nbytes, _Segment("file_descriptor", nbytes, fd=fd))
    except BaseException:
        os.close(fd)
        raise


def open_named_storage(name, nbytes):
    """A storage over a named segment; it takes over the reference its message held."""
    if os.sep in name or name.startswith("."):
        raise RuntimeError(f"invalid shared memory segment name {name!r}")
    try:
        fd = os.open(_path(name), os.O_RDWR)
    except FileNotFoundError:
        raise RuntimeError(f"shared memory segment {name!r} no longer exists: the tensor was freed before "
                           "this process received it") from None
    try:
        return _map(fd, _count_offset(nbytes) + _COUNT.size, nbytes, _Segment("file_system", nbytes, name=name))
    finally:
        os.close(fd)


def segment_of(storage):
    """The segment of a shared CPU storage, or None."""
    if storage.device.type != "cpu":
        return None
    segment = _segments.get(storage.data_ptr())
    # A forked child inherits the registry but not the finalizers: an entry whose mapping died there is
    # stale, and new memory may since have come at its address.
    if segment is None or segment.mapping() is None:
        return None
    return segment


def share_storage_(storage):
    """Moves a CPU storage's bytes into a new shared segment in place (every view follows)."""
    if storage.device.type != "cpu":
        raise RuntimeError(f"share_memory_(): ember cannot share {storage.device.type} memory between processes "
                           "(no CUDA IPC); move the tensor to the CPU first")
    with _share_lock:
        if segment_of(storage) is None:
            shared = new_shared_storage(storage.nbytes())
            _C._storage_set_data_(storage, shared)  # `shared` now holds the old memory, freed as it dies here
    return storage
