"""The Python-level part of ember.UntypedStorage: copies and pickling.

A storage is the memory a tensor and its views share. `Tensor.untyped_storage()`
returns the one live Python object of that memory, so pickle's memo (and
deepcopy's) meets views of one storage as one object: it is written, or
copied, once, and the views come back as views of one storage.
"""
import pickle

from . import _C, _utils
from ._C import UntypedStorage


def clone(self):
    """A copy of the bytes, on the same device."""
    return _C._storage_bytes(self).clone().untyped_storage()


def cpu(self):
    """This storage when it is on the CPU, else a CPU copy."""
    if self.device.type == "cpu":
        return self
    return _C._storage_bytes(self).cpu().untyped_storage()


def __reduce_ex__(self, protocol):
    # Through the CPU: a GPU storage is rebuilt on its device from the bytes.
    host = cpu(self)
    # Protocol 5 hands pickle the memory itself (written without an extra copy, or out of band).
    data = pickle.PickleBuffer(host) if protocol >= 5 else bytes(host)
    return (_utils._rebuild_storage, (data, str(self.device)))


def __deepcopy__(self, memo):
    # copy.deepcopy memoizes by id: every view's storage is this one object, copied once.
    return clone(self)


def share_memory_(self):
    """Moves the storage to shared memory (in place: every tensor over it follows); a no-op when it is
    there already. The strategy is ember.multiprocessing's (get_sharing_strategy). Returns self."""
    from .multiprocessing import _shared_memory
    return _shared_memory.share_storage_(self)


def is_shared(self):
    """Whether the storage is in shared memory (made by share_memory_ or received from another process)."""
    if self.device.type != "cpu":
        return False
    from .multiprocessing import _shared_memory
    return _shared_memory.segment_of(self) is not None


def _new_shared(cls, size, *, device=None):
    """A new storage of size bytes in shared memory (what a DataLoader worker collates a batch into)."""
    if device is not None and _C.device(device).type != "cpu":
        raise RuntimeError(f"_new_shared: ember shares only CPU memory between processes, not {device}")
    from .multiprocessing import _shared_memory
    return _shared_memory.new_shared_storage(size)


def __repr__(self):
    return f"ember.UntypedStorage(nbytes={self.nbytes()}, device='{self.device}')"


_METHODS = dict(clone=clone, cpu=cpu, __reduce_ex__=__reduce_ex__, __deepcopy__=__deepcopy__, __copy__=clone,
                __repr__=__repr__, share_memory_=share_memory_, is_shared=is_shared)
for _name, _fn in _METHODS.items():
    setattr(UntypedStorage, _name, _fn)
setattr(UntypedStorage, "_new_shared", classmethod(_new_shared))
UntypedStorage.__module__ = "ember"
