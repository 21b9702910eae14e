"""ForkingPickler reductions: CPU tensors and storages travel through shared memory.

Sending a storage moves it into shared memory in place (as PyTorch does) and
sends a handle, so the receiver maps the same bytes: writes on either side are
seen by the other. Pickle's memo sees every view of one storage as one object,
so views sent together arrive as views of one shared storage.
"""
import multiprocessing
import os
import sys
from multiprocessing import util
from multiprocessing.reduction import ForkingPickler

from .. import _C, _utils
from .._tensor import Tensor
from . import _shared_memory

_NON_LEAF_ERROR = ("Cowardly refusing to serialize non-leaf tensor which requires_grad, since autograd does not "
                   "support crossing process boundaries.  If you just want to transfer the data, call detach() on "
                   "the tensor before serializing (e.g., putting it on the queue).")


def _check_cpu(device, what):
    if device.type != "cpu":
        raise RuntimeError(f"ember.multiprocessing cannot send a {what} on {device} to another process (no CUDA IPC "
                           f"in ember); move it to the CPU first with .cpu()")


def rebuild_tensor(cls, storage, metadata, grad=None):
    """A tensor of type cls over the received storage; its .grad, if one was sent."""
    storage_offset, size, stride, requires_grad, dtype = metadata
    t = _utils._rebuild_tensor(storage, storage_offset, size, stride, dtype)
    if cls is not Tensor:  # a Parameter (unpickling cls loaded ember.nn already)
        from ..nn.parameter import Parameter
        t = Parameter(t, requires_grad=requires_grad)  # a Parameter takes requires_grad at construction
    elif requires_grad:
        t.requires_grad_(True)
    if grad is not None:
        t.grad = grad
    return t


def reduce_tensor(tensor):
    if tensor.requires_grad and not tensor.is_leaf:
        raise RuntimeError(_NON_LEAF_ERROR)
    _check_cpu(tensor.device, "tensor")
    metadata = (tensor.storage_offset(), tuple(tensor.size()), tensor.stride(), tensor.requires_grad, tensor.dtype)
    # .grad is shared too (a leaf's only: reading it on a non-leaf warns).
    grad = tensor.grad if tensor.is_leaf else None
    return (rebuild_tensor, (type(tensor), tensor.untyped_storage(), metadata, grad))


# Storages this process sent or received, by segment (an fd's (st_dev, st_ino), a file's name), as torch's
# shared_cache: a storage received again (or coming back) is the one already mapped, so tensors that shared
# a storage in the sender share it here too. Values are segments; a dead one's entry is dropped when seen.
_storage_cache: dict = {}
_cache_sweep_at = 128


def _fd_key(fd):
    st = os.fstat(fd)
    return ("fd", st.st_dev, st.st_ino)


def _cached_storage(key):
    segment = _storage_cache.get(key)
    if segment is None:
        return None
    storage = _C._storage_over_buffer(segment.ptr) if segment.mapping() is not None else None
    if storage is None or _shared_memory.segment_of(storage) is not segment:
        del _storage_cache[key]
        return None
    return storage


def _cache_storage(key, storage):
    global _cache_sweep_at
    _storage_cache[key] = _shared_memory.segment_of(storage)
    if len(_storage_cache) >= _cache_sweep_at:  # drop the entries of storages that died since
        for k in [k for k, segment in _storage_cache.items() if segment is None or segment.mapping() is None]:
            del _storage_cache[k]
        _cache_sweep_at = max(128, 2 * len(_storage_cache))


def _clear_cache(_=None):
    _storage_cache.clear()  # a forked child holds none of its parent's segments (see _shared_memory)


util.register_after_fork(_clear_cache, _clear_cache)


def rebuild_storage_fd(cls, df, size):
    fd = df.detach()
    try:
        key = _fd_key(fd)
    except BaseException:
        os.close(fd)
        raise
    storage = _cached_storage(key)
    if storage is not None:
        os.close(fd)  # already mapped here
        return storage
    storage = _shared_memory.open_fd_storage(fd, size)
    _cache_storage(key, storage)
    return storage


def rebuild_storage_filename(cls, name, size):
    storage = _cached_storage(("file", name))
    if storage is not None:
        _shared_memory.adjust_refcount(name, size, -1)  # the message's reference: this mapping holds one
        return storage
    storage = _shared_memory.open_named_storage(name, size)
    _cache_storage(("file", name), storage)
    return storage


def rebuild_storage_empty(cls):
    return _C._storage_from_buffer(b"")


def reduce_storage(storage):
    _check_cpu(storage.device, "storage")
    if storage.nbytes() == 0:
        return (rebuild_storage_empty, (type(storage),))
    _shared_memory.share_storage_(storage)
    segment = _shared_memory.segment_of(storage)
    if segment.kind == "file_system":
        # The message holds a reference until the receiver maps the segment (the receiver takes it over).
        _shared_memory.adjust_refcount(segment.name, segment.nbytes, +1)
        _storage_cache[("file", segment.name)] = segment
        return (rebuild_storage_filename, (type(storage), segment.name, segment.nbytes))
    _storage_cache[_fd_key(segment.fd)] = segment
    # Duplicated for the child when starting a process, else handed over by the resource sharer.
    return (rebuild_storage_fd, (type(storage), multiprocessing.reduction.DupFd(segment.fd), segment.nbytes))


def init_reductions():
    from .. import UntypedStorage
    ForkingPickler.register(UntypedStorage, reduce_storage)
    ForkingPickler.register(Tensor, reduce_tensor)
    # nn.Parameter: now if ember.nn is loaded, else when it loads (ember.nn costs more than the rest of this).
    parameter = sys.modules.get("ember.nn.parameter")
    if parameter is not None and hasattr(parameter, "Parameter"):
        register_parameter(parameter.Parameter)


def register_parameter(cls):
    ForkingPickler.register(cls, reduce_tensor)
