"""ember.save: objects to PyTorch's zip file format (see ember.serialization)."""
import io
import os
import pickle
import sys
from collections import OrderedDict

from . import _C
from ._size import Size
from ._tensor import Tensor
from ._zip_records import ZipRecordWriter, archive_name_for

DEFAULT_PROTOCOL = 2
# dtype name -> the legacy storage class torch names it by in a file.
_STORAGE_NAMES = {"float64": "DoubleStorage", "float32": "FloatStorage", "float16": "HalfStorage",
                  "bfloat16": "BFloat16Storage", "int64": "LongStorage", "int32": "IntStorage",
                  "int16": "ShortStorage", "int8": "CharStorage", "uint8": "ByteStorage", "bool": "BoolStorage"}


def _dtype_name(dtype):
    return str(dtype).rpartition(".")[2]


class _TorchName:
    """A global of torch's pickle format, written by name (torch need not be importable)."""
    __slots__ = ("module", "name")

    def __init__(self, module, name):
        self.module, self.name = module, name

    def __call__(self, *args):  # pickle's save_reduce insists on a callable; never called
        raise TypeError(f"{self.module}.{self.name} is a name in a file, not a function")


_NAMES: dict = {}


def _torch_name(module, name):
    key = (module, name)
    if key not in _NAMES:
        _NAMES[key] = _TorchName(module, name)
    return _NAMES[key]


class _StorageRef:
    """What a tensor's pickle holds in place of its storage: the storage and the element type
    it is read as (torch's TypedStorage); the pickler turns it into a persistent id."""
    __slots__ = ("storage", "dtype")

    def __init__(self, storage, dtype):
        self.storage, self.dtype = storage, dtype


def location_tag(storage):
    """'cpu', or 'cuda:N' for memory on GPU N."""
    device = storage.device
    return "cpu" if device.type == "cpu" else f"{device.type}:{device.index or 0}"


def _tensor_reduction(t):
    """A tensor as torch pickles it: _rebuild_tensor_v2, wrapped in _rebuild_from_type_v2 for a
    subclass or a tensor carrying attributes; a Parameter through _rebuild_parameter."""
    state = t.__dict__ or None
    params = sys.modules.get("ember.nn.parameter")  # no Parameter can exist before ember.nn loads
    if params is not None and isinstance(t, params.Parameter) and type(t) is not Tensor:
        hooks = OrderedDict()
        if not state:
            return (_torch_name("torch._utils", "_rebuild_parameter"), (t.detach(), t.requires_grad, hooks))
        return (_torch_name("torch._utils", "_rebuild_parameter_with_state"),
                (t.detach(), t.requires_grad, hooks, state))
    rebuild = _torch_name("torch._utils", "_rebuild_tensor_v2")
    args = (_StorageRef(t.untyped_storage(), t.dtype), t.storage_offset(), tuple(t.size()), t.stride(),
            t.requires_grad, OrderedDict())
    if type(t) is Tensor and not state:
        return (rebuild, args)
    cls = _torch_name("torch", "Tensor") if type(t) is Tensor else type(t)
    return (_torch_name("torch._tensor", "_rebuild_from_type_v2"), (rebuild, cls, args, state))


def _pickler_class(pickle_module):
    # The pure-Python pickler: its save_global can write torch's names without importing torch
    # (the C pickler checks that a global imports). data.pkl is small: tensor data goes elsewhere.
    base = getattr(pickle_module, "_Pickler", pickle._Pickler)

    class TorchFormatPickler(base):
        def __init__(self, file, protocol, storages):
            super().__init__(file, protocol)
            self._storages = storages  # key -> storage, in the order they are met
            self._keys = {}            # id(storage) -> (key, dtype)

        def persistent_id(self, obj):
            if type(obj) is _StorageRef:
                storage, dtype, storage_type = obj.storage, obj.dtype, _storage_type_name(obj.dtype)
            elif type(obj) is _C.UntypedStorage:
                storage, dtype, storage_type = obj, _C.uint8, _torch_name("torch.storage", "UntypedStorage")
            else:
                return None
            key, first_dtype = self._keys.setdefault(id(storage), (str(len(self._keys)), dtype))
            if first_dtype != dtype and storage.nbytes():
                raise RuntimeError("Cannot save multiple tensors or storages that view the same data as different "
                                   "types")
            self._storages[key] = storage
            numel = storage.nbytes() // dtype.itemsize
            return ("storage", storage_type, key, location_tag(storage), numel)

        def save(self, obj, save_persistent_id=True):
            t = type(obj)
            if t in _ATOMIC:  # most objects: no persistent id, no memo, no reduction to look for
                self.framer.commit_frame()
                self.dispatch[t](self, obj)
                return
            if t is _C.dtype:
                obj = _torch_name("torch", _dtype_name(obj))  # torch.float32 is a global of module torch
            super().save(obj, save_persistent_id)

        def reducer_override(self, obj):
            t = type(obj)
            if t is _TorchName:
                return obj.name  # save_global below writes it
            if isinstance(obj, _C.TensorBase):
                return _tensor_reduction(obj)
            if t is _C.device:
                args = (obj.type,) if obj.index is None else (obj.type, obj.index)
                return (_torch_name("torch", "device"), args)
            if t is Size:
                return (_torch_name("torch", "Size"), (tuple(obj),))
            return NotImplemented

        def save_global(self, obj, name=None):
            if type(obj) is not _TorchName:
                return super().save_global(obj, name)
            if self.proto >= 4:
                self.save(obj.module)
                self.save(obj.name)
                self.write(pickle.STACK_GLOBAL)
            else:
                self.write(pickle.GLOBAL + f"{obj.module}\n{obj.name}\n".encode("utf-8"))
            self.memoize(obj)

    return TorchFormatPickler


_ATOMIC = (int, float, bool, type(None))


def _storage_type_name(dtype):
    return _torch_name("torch", _STORAGE_NAMES[_dtype_name(dtype)])


def _is_path(f):
    return isinstance(f, (str, os.PathLike))


def save(obj, f, pickle_module=pickle, pickle_protocol=DEFAULT_PROTOCOL, _use_new_zipfile_serialization=True,
         _disable_byteorder_record=False):
    """save(obj, f, pickle_module=pickle, pickle_protocol=2, _use_new_zipfile_serialization=True)

    Saves an object to a disk file, in PyTorch's format (torch.load reads it).

    Args:
        obj: saved object
        f: a file-like object (has to implement write and flush) or a string or
           os.PathLike object containing a file name
        pickle_module: module used for pickling metadata and objects
        pickle_protocol: can be specified to override the default protocol
    """
    if not _is_path(f) and not hasattr(f, "write"):
        raise AttributeError("expected 'f' to be string, path, or a file-like object with a 'write' attribute")
    if not _use_new_zipfile_serialization:
        from ._legacy_serialization import legacy_save
        if _is_path(f):
            with _open_for_write(os.fspath(f)) as opened:
                legacy_save(obj, opened, _pickler_class(pickle_module), pickle_protocol)
                opened.truncate()
                return
        return legacy_save(obj, f, _pickler_class(pickle_module), pickle_protocol)
    storages = {}
    data = io.BytesIO()
    _pickler_class(pickle_module)(data, pickle_protocol, storages).dump(obj)
    if _is_path(f):
        path = os.fspath(f)
        with _open_for_write(path) as opened:
            _write_archive(opened, archive_name_for(path), data.getvalue(), storages, _disable_byteorder_record)
            opened.truncate()
    else:
        _write_archive(f, "archive", data.getvalue(), storages, _disable_byteorder_record)
        if hasattr(f, "flush"):
            f.flush()


def _open_for_write(path):
    """An existing regular file is overwritten in place (then truncated where the new content ends):
    the kernel reuses its cached pages instead of freeing and zeroing new ones, which made writing
    500 MB over an old checkpoint ~3x faster here. (The zip format pickles everything before it opens the file.)"""
    return open(path, "r+b" if os.path.isfile(path) else "wb")


def _write_archive(file, archive_name, pickled, storages, disable_byteorder):
    from . import _storage
    writer = ZipRecordWriter(file, archive_name)
    writer.write_record("data.pkl", pickled)
    writer.write_record(".format_version", "1")
    writer.write_record(".storage_alignment", "64")
    if not disable_byteorder:
        writer.write_record("byteorder", sys.byteorder)
    for key, storage in storages.items():
        writer.write_record(f"data/{key}", _storage.cpu(storage))
    writer.write_record("version", "3\n")
    writer.finish()
