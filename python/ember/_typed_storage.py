"""ember.TypedStorage (Tensor.storage()): an UntypedStorage read as elements of one dtype, and
the legacy classes ember.FloatStorage, ember.LongStorage, ... (Tensor.storage_type()), as
PyTorch's deprecated torch.TypedStorage."""
import warnings

from . import _C
from ._creation import tensor as _tensor

_DEPRECATION = ("TypedStorage is deprecated. It will be removed in the future and UntypedStorage will be the only "
                "storage class. This should only matter to you if you are using storages directly.  To access "
                "UntypedStorage directly, use tensor.untyped_storage() instead of tensor.storage()")
_warned = False


def _warn_typed_storage_removal():
    global _warned  # once per process, as PyTorch's
    if not _warned:
        _warned = True
        warnings.warn(_DEPRECATION, UserWarning, stacklevel=3)


class TypedStorage:
    """Elements of `dtype` over the bytes of an UntypedStorage (shared, not copied)."""

    is_sparse = False

    def __init__(self, *, wrap_storage, dtype):
        if not isinstance(wrap_storage, _C.UntypedStorage):
            raise TypeError(f"expected wrap_storage to be an UntypedStorage, but got {type(wrap_storage).__name__}")
        self._untyped_storage = wrap_storage
        self.dtype = dtype

    @property
    def device(self):
        return self._untyped_storage.device

    def _tensor(self):
        """A 1-D tensor over every element (shared)."""
        n = self.size()
        return _C._tensor_from_storage(self._untyped_storage, 0, (n,), (1,), self.dtype)

    def element_size(self):
        return self.dtype.itemsize

    def size(self):
        return self._untyped_storage.nbytes() // self.element_size()

    __len__ = size

    def nbytes(self):
        return self._untyped_storage.nbytes()

    def data_ptr(self):
        return self._untyped_storage.data_ptr()

    def untyped(self):
        return self._untyped_storage

    def _index(self, idx):
        n = self.size()
        if not isinstance(idx, int):
            raise RuntimeError("slices are only supported in UntypedStorage.__getitem__")
        if not -n <= idx < n:
            raise IndexError(f"index {idx} out of range for storage of size {n}")
        return idx % n if n else idx

    def __getitem__(self, idx):
        return self._tensor()[self._index(idx)].item()

    def __setitem__(self, idx, value):
        if isinstance(idx, slice):
            self._tensor()[idx] = value
        else:
            self._tensor()[self._index(idx)] = value

    def __iter__(self):
        return iter(self.tolist())

    def tolist(self):
        return self._tensor().tolist()

    def fill_(self, value):
        self._tensor().fill_(value)
        return self

    def copy_(self, source, non_blocking=None):
        self._tensor().copy_(source._tensor() if isinstance(source, TypedStorage) else _bytes_as(source, self.dtype))
        return self

    def clone(self):
        return TypedStorage(wrap_storage=self._untyped_storage.clone(), dtype=self.dtype)

    def cpu(self):
        return self if self.device.type == "cpu" else TypedStorage(wrap_storage=self._untyped_storage.cpu(),
                                                                   dtype=self.dtype)

    def is_shared(self):
        return self._untyped_storage.is_shared()

    def share_memory_(self):
        self._untyped_storage.share_memory_()
        return self

    def type(self, dtype=None, non_blocking=False):
        if dtype is None:
            return f"ember.{_LEGACY_NAMES[self.dtype]}Storage"
        raise NotImplementedError("TypedStorage.type(dtype) is not supported; use tensor.to(dtype)")

    def __str__(self):
        body = "\n".join(f" {v}" for v in self.tolist())
        return (body + "\n" if body else " \n") + (f"[ember.storage.TypedStorage(dtype={self.dtype!r}, "
                                                   f"device={self.device}) of size {self.size()}]")

    __repr__ = __str__



def _bytes_as(untyped, dtype):
    return TypedStorage(wrap_storage=untyped, dtype=dtype)._tensor()


_LEGACY_NAMES = {_C.float32: "Float", _C.float64: "Double", _C.float16: "Half", _C.bfloat16: "BFloat16",
                 _C.int64: "Long", _C.int32: "Int", _C.int16: "Short", _C.int8: "Char", _C.uint8: "Byte",
                 _C.bool: "Bool"}


def _legacy_class(dtype, name):
    def __init__(self, *args, wrap_storage=None, dtype=None):
        # FloatStorage(n): n zeroed elements; FloatStorage([values]); FloatStorage(wrap_storage=...).
        if wrap_storage is None:
            data = _C.zeros(args[0] if args else 0, dtype=cls.dtype) if not args or isinstance(args[0], int) \
                else _tensor(list(args[0]), dtype=cls.dtype)
            wrap_storage = data.contiguous().untyped_storage()
        TypedStorage.__init__(self, wrap_storage=wrap_storage, dtype=cls.dtype)

    cls = type(name, (TypedStorage,), {"__init__": __init__, "__module__": "ember"})
    cls.dtype = dtype
    return cls


LEGACY_STORAGES = {f"{name}Storage": _legacy_class(dtype, f"{name}Storage") for dtype, name in _LEGACY_NAMES.items()}
_BY_DTYPE = {cls.dtype: cls for cls in LEGACY_STORAGES.values()}
globals().update(LEGACY_STORAGES)  # ember.FloatStorage, ... (ember binds them from here on first use)
TypedStorage.__module__ = "ember"


def tensor_storage(tensor):
    """Tensor.storage(): its memory as a TypedStorage of its dtype (deprecated, as in PyTorch)."""
    _warn_typed_storage_removal()
    return TypedStorage(wrap_storage=tensor.untyped_storage(), dtype=tensor.dtype)


def storage_type(tensor):
    """Tensor.storage_type(): the legacy storage class of its dtype (ember.FloatStorage, ...)."""
    return _BY_DTYPE[tensor.dtype]


def is_storage(obj):
    """Whether obj is a storage (typed or untyped)."""
    return isinstance(obj, (TypedStorage, _C.UntypedStorage))
