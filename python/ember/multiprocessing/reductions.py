"""ForkingPickler reductions: CPU tensors and storages travel through shared memory.

Sending a storage moves it into shared memory in place (as PyTorch does) and
sends a handle, so the receiver maps the same bytes: writes on either side are
seen by the other. Pickle's memo sees every view of one storage as one object,
so views sent together arrive as views of one shared storage.
"""
import multiprocessing
import sys
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


def rebuild_storage_fd(cls, df, size):
    return _shared_memory.open_fd_storage(df.detach(), size)


def rebuild_storage_filename(cls, name, size):
    return _shared_memory.open_named_storage(name, size)


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
        return (rebuild_storage_filename, (type(storage), segment.name, segment.nbytes))
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
