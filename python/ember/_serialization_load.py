"""ember.load: PyTorch's zip (and legacy) files back to objects (see ember.serialization)."""
import io
import os
import pickle
import sys
from collections import OrderedDict

from . import _C, _weights_only_unpickler
from ._size import Size
from ._tensor import Tensor
from ._zip_records import ZipRecordReader
from ._serialization_save import _STORAGE_NAMES, _is_path

UNSAFE_MESSAGE = (
    "In PyTorch 2.6, we changed the default value of the `weights_only` argument in `torch.load` "
    "from `False` to `True`. Re-running `torch.load` with `weights_only` set to `False` will likely succeed, "
    "but it can result in arbitrary code execution. Do it only if you got the file from a "
    "trusted source."
)
_DOCS_MESSAGE = ("\n\nCheck the documentation of torch.load to learn more about types accepted by default with "
                 "weights_only https://pytorch.org/docs/stable/generated/torch.load.html.")

# torch dtypes (and their storages) that ember lacks: a file holding them fails with a clear error.
_FOREIGN_DTYPES = ["complex32", "complex64", "complex128", "uint16", "uint32", "uint64", "float8_e4m3fn",
                   "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu", "quint8", "qint8", "qint32",
                   "quint4x2", "quint2x4", "bits8", "bits16", "bits1x8", "bits2x4", "bits4x2"]
_FOREIGN_STORAGES = ["ComplexFloatStorage", "ComplexDoubleStorage", "QUInt8Storage", "QInt8Storage",
                     "QInt32Storage", "QUInt4x2Storage", "QUInt2x4Storage"]



class _StorageType:
    """torch.FloatStorage and its kin, as named in a file: they stand for a dtype."""

    def __init__(self, name, dtype):
        self.name, self.dtype = name, dtype

    def __repr__(self):
        return f"StorageType(dtype={self.dtype})"


class TypedStorage:
    """A loaded storage with the element type a file gave it (what torch.load returns for a
    bare typed storage; tensors are rebuilt over its untyped storage)."""

    def __init__(self, untyped_storage, dtype):
        self._untyped_storage, self.dtype = untyped_storage, dtype

    def untyped(self):
        return self._untyped_storage

    def size(self):
        return self._untyped_storage.nbytes() // self.dtype.itemsize

    __len__ = size

    @property
    def device(self):
        return self._untyped_storage.device

    def __repr__(self):
        return f"ember.TypedStorage(dtype={self.dtype}, device={self.device}) of size {self.size()}"


def _storage_and_dtype(storage, dtype=None):
    if isinstance(storage, TypedStorage):
        return storage._untyped_storage, dtype or storage.dtype
    if isinstance(storage, _C.UntypedStorage):
        return storage, dtype or _C.uint8
    raise RuntimeError(f"_rebuild_tensor: expected a storage, got {type(storage).__name__}")


def _set_obj_state(obj, state):
    if isinstance(state, tuple):
        if len(state) != 2:
            raise RuntimeError(f"Invalid serialized state: {state}")
        dict_state, slots_state = state
    else:
        dict_state, slots_state = state, None
    for k, v in (dict_state or {}).items():
        setattr(obj, k, v)
    for k, v in (slots_state or {}).items():
        setattr(obj, k, v)
    return obj


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def _tensor_over(storage, storage_offset, size, stride, dtype=None):
    untyped, dtype = _storage_and_dtype(storage, dtype)
    if not (_is_int(storage_offset) and isinstance(size, (tuple, list)) and isinstance(stride, (tuple, list))
            and all(_is_int(v) for v in size) and all(_is_int(v) for v in stride)):
        raise RuntimeError(f"_rebuild_tensor: malformed tensor in the checkpoint (storage offset {storage_offset!r}, "
                           f"size {size!r}, stride {stride!r})")
    return _C._tensor_from_storage(untyped, storage_offset, tuple(size), tuple(stride), dtype)


def _rebuild_tensor(storage, storage_offset, size, stride):
    return _tensor_over(storage, storage_offset, size, stride)


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks, metadata=None):
    tensor = _tensor_over(storage, storage_offset, size, stride)
    if requires_grad:
        tensor.requires_grad_(True)
    return tensor


def _rebuild_tensor_v3(storage, storage_offset, size, stride, requires_grad, backward_hooks, dtype, metadata=None):
    tensor = _tensor_over(storage, storage_offset, size, stride, dtype)
    if requires_grad:
        tensor.requires_grad_(True)
    return tensor


def _rebuild_parameter(data, requires_grad, backward_hooks):
    from .nn.parameter import Parameter
    return Parameter(data, requires_grad)


def _rebuild_parameter_with_state(data, requires_grad, backward_hooks, state):
    return _set_obj_state(_rebuild_parameter(data, requires_grad, backward_hooks), state)


def _rebuild_from_type_v2(func, new_type, args, state):
    ret = func(*args)
    if type(ret) is not new_type:
        ret = _C.TensorBase._make_subclass(new_type, ret, ret.requires_grad)
    setstate = getattr(type(ret), "__setstate__", None)
    if setstate is not None and setstate is not getattr(Tensor, "__setstate__", None):
        ret.__setstate__(state)
        return ret
    return _set_obj_state(ret, state)


class _ForeignDtype:
    """A torch dtype or storage ember does not have; using it to rebuild a tensor fails clearly."""

    def __init__(self, name):
        self.name = name

    @property
    def dtype(self):
        raise RuntimeError(f"This checkpoint holds a tensor of torch.{self.name}, a type ember does not support")


def _torch_globals():
    """The globals of torch's format a file may name, mapped to ember's objects (built per load:
    cheap, and ember.nn's Parameter is only imported when a file needs it)."""
    from . import _legacy  # noqa: F401  (the legacy Tensor types)
    lazy = _weights_only_unpickler.LazyGlobal
    rc = {
        "collections.OrderedDict": OrderedDict,
        "collections.Counter": __import__("collections").Counter,
        "torch.nn.parameter.Parameter": lazy("ember.nn.parameter", "Parameter"),
        "torch.Size": Size,
        "torch.Tensor": Tensor,
        "torch.device": _C.device,
        "_codecs.encode": _weights_only_unpickler.encode_latin1,
        "builtins.bytearray": bytearray,
        "builtins.set": set,
        "builtins.complex": complex,
        "torch.storage.UntypedStorage": _C.UntypedStorage,
        "torch.UntypedStorage": _C.UntypedStorage,
        "torch._tensor._rebuild_from_type_v2": _rebuild_from_type_v2,
    }
    for name, fn in [("_rebuild_tensor", _rebuild_tensor), ("_rebuild_tensor_v2", _rebuild_tensor_v2),
                     ("_rebuild_tensor_v3", _rebuild_tensor_v3), ("_rebuild_parameter", _rebuild_parameter),
                     ("_rebuild_parameter_with_state", _rebuild_parameter_with_state)]:
        rc[f"torch._utils.{name}"] = fn
    for dtype_name, storage_name in _STORAGE_NAMES.items():
        dtype = getattr(_C, dtype_name)
        rc[f"torch.{dtype_name}"] = dtype
        rc[f"torch.{storage_name}"] = _StorageType(storage_name, dtype)
        tensor_name = storage_name.replace("Storage", "Tensor")
        rc[f"torch.{tensor_name}"] = getattr(sys.modules["ember"], tensor_name)
    for name in _FOREIGN_DTYPES + _FOREIGN_STORAGES:
        rc[f"torch.{name}"] = _ForeignDtype(name)
    return rc


def get_unsafe_globals_in_checkpoint(f):
    """The names of the globals in an ember/torch checkpoint that weights_only loading does not allow."""
    allowed = _torch_globals()
    user = _weights_only_unpickler._get_user_allowed_globals()
    with _open_for_read(f) as opened:
        if not _is_zipfile(opened):
            raise ValueError("Expected input to be a checkpoint returned by torch.save")
        reader = ZipRecordReader(opened)
        names = _weights_only_unpickler.globals_in_pickle(io.BytesIO(reader.get_record("data.pkl")))
    return sorted(n for n in names
                  if n not in allowed and not _weights_only_unpickler._lookup_user_global(n, user)[0])


# ---------------------------------------------------------------------------- loading: locations
def default_restore_location(storage, location):
    """`storage` (a CPU UntypedStorage) moved to the device named by `location` ('cpu', 'cuda:1')."""
    if location == "cpu" or location.startswith("cpu:"):
        return storage
    if location.startswith("cuda"):
        from . import cuda
        device = _C.device(location)
        index = device.index or 0
        if not cuda.is_available():
            raise RuntimeError("Attempting to deserialize object on a CUDA device but torch.cuda.is_available() "
                               "is False. If you are running on a CPU-only machine, please use torch.load with "
                               "map_location=torch.device('cpu') to map your storages to the CPU.")
        if index >= cuda.device_count():
            raise RuntimeError(f"Attempting to deserialize object on CUDA device {index} but "
                               f"torch.cuda.device_count() is {cuda.device_count()}. Please use torch.load with "
                               "map_location to map your storages to an existing device.")
        return _C._storage_bytes(storage).to(device).untyped_storage()
    raise RuntimeError(f"don't know how to restore data location of ember.UntypedStorage (tagged with {location})")


def _restore_location_fn(map_location):
    if map_location is None:
        return default_restore_location
    if isinstance(map_location, dict):
        return lambda storage, location: default_restore_location(storage, map_location.get(location, location))
    if isinstance(map_location, (str, bytes)):
        target = map_location.decode() if isinstance(map_location, bytes) else map_location
        return lambda storage, location: default_restore_location(storage, target)
    if isinstance(map_location, _C.device):
        return lambda storage, location: default_restore_location(storage, str(map_location))

    def restore(storage, location):
        result = map_location(storage, location)
        if result is None:
            result = default_restore_location(storage, location)
        elif isinstance(result, TypedStorage):
            result = result._untyped_storage
        return result
    return restore


# ---------------------------------------------------------------------------- loading
class _open_for_read:
    def __init__(self, f):
        self._owned = _is_path(f)
        if self._owned:
            self.file = open(os.fspath(f), "rb")
        else:
            for attr in ("read", "seek", "tell"):
                if not hasattr(f, attr):
                    raise AttributeError(f"'{type(f).__name__}' object has no attribute '{attr}'. You can only "
                                         "torch.load from a file that is seekable. Please pre-load the data into a "
                                         "buffer like io.BytesIO and try to load from it instead.")
            self.file = f

    def __enter__(self):
        return self.file

    def __exit__(self, *args):
        if self._owned:
            self.file.close()


def _is_zipfile(f):
    start = f.tell()
    magic = f.read(4)
    f.seek(start)
    return magic == b"PK\x03\x04"


def _decode(value):
    return value.decode("ascii") if isinstance(value, bytes) else value


class _StorageLoader:
    """Reads (or maps) the storages a pickle refers to, once per key, and places them."""

    def __init__(self, reader, restore_location, mapped=None):
        self._reader, self._restore, self._mapped = reader, restore_location, mapped
        self._loaded = {}
        swap = reader.has_record("byteorder") and reader.get_record("byteorder") != sys.byteorder.encode()
        if reader.has_record("byteorder") and reader.get_record("byteorder") not in (b"little", b"big"):
            raise ValueError("Unknown endianness type: " + reader.get_record("byteorder").decode(errors="replace"))
        self._swap = swap

    def persistent_load(self, saved_id):
        if not isinstance(saved_id, tuple) or len(saved_id) != 5 or _decode(saved_id[0]) != "storage":
            raise pickle.UnpicklingError(f"Unknown persistent id in this checkpoint: {saved_id!r}")
        storage_type, key, location, numel = saved_id[1:]
        if storage_type is _C.UntypedStorage:
            dtype = _C.uint8
        elif isinstance(storage_type, (_StorageType, _ForeignDtype)):
            dtype = storage_type.dtype
        else:
            raise pickle.UnpicklingError(f"Unknown storage type in this checkpoint: {storage_type!r}")
        key, location = _decode(key), _decode(location)
        if not (isinstance(key, str) and isinstance(location, str) and _is_int(numel) and numel >= 0):
            raise pickle.UnpicklingError(f"Malformed storage id in this checkpoint: {saved_id!r}")
        if key not in self._loaded:
            storage = self._read(f"data/{key}", numel * dtype.itemsize, dtype)
            self._loaded[key] = self._restore(storage, location)
        storage = self._loaded[key]
        return storage if storage_type is _C.UntypedStorage else TypedStorage(storage, dtype)

    def _read(self, name, nbytes, dtype):
        if self._reader.record_size(name) != nbytes:
            raise RuntimeError(f"PytorchStreamReader failed reading file {name}: the checkpoint's record has "
                               f"{self._reader.record_size(name)} bytes, its pickle expects {nbytes}")
        if self._mapped is not None and nbytes:
            start = self._reader.record_offset(name)
            storage = _C._storage_from_buffer(self._mapped[start:start + nbytes], copy=False)
        else:
            storage = _C.empty(nbytes, dtype=_C.uint8).untyped_storage()
            if nbytes:
                self._reader.read_into(name, storage)
        if self._swap and dtype.itemsize > 1 and nbytes:
            import numpy as np
            np.frombuffer(memoryview(storage), dtype=f"u{dtype.itemsize}").byteswap(inplace=True)
        return storage


def _unpickler_class(pickle_module):
    class TorchFormatUnpickler(pickle_module.Unpickler):
        # torch's names resolve to ember's objects; any other torch.X is looked up as ember.X.
        def find_class(self, module, name):
            full = f"{module}.{name}"
            if full in self._torch_globals:
                value = self._torch_globals[full]
                return value.resolve() if isinstance(value, _weights_only_unpickler.LazyGlobal) else value
            if module == "torch" or module.startswith("torch."):
                module = "ember" + module[len("torch"):].replace("ember.tensor", "ember._tensor")
            return super().find_class(module, name)
    return TorchFormatUnpickler


def _load_zip(reader, map_location, unpickler_factory, mapped):
    loader = _StorageLoader(reader, _restore_location_fn(map_location), mapped)
    unpickler = unpickler_factory(io.BytesIO(reader.get_record("data.pkl")))
    unpickler.persistent_load = loader.persistent_load
    return unpickler.load()


def _weights_only_message(message):
    import re
    if re.search(r"GLOBAL (\S+) was not an allowed global by default.", message):
        return ("Weights only load failed. This file can still be loaded, to do so you have two options, "
                "\033[1mdo those steps only if you trust the source of the checkpoint\033[0m. "
                f"\n\t(1) {UNSAFE_MESSAGE}\n\t(2) Alternatively, to load with `weights_only=True` please check "
                "the recommended steps in the following error message.\n\tWeightsUnpickler error: "
                + message + _DOCS_MESSAGE)
    updated = f"Weights only load failed. {UNSAFE_MESSAGE}\n"
    if not re.search(r"whose module (\S+) is blocked", message):
        updated += ("Please file an issue with the following so that we can make `weights_only=True` compatible "
                    "with your use case: WeightsUnpickler error: ")
    return updated + "\n\n" + message + _DOCS_MESSAGE


def _resolve_weights_only(weights_only, pickle_module):
    not_set = weights_only is None
    if not_set:
        weights_only = pickle_module is None
    true_values = ["1", "y", "yes", "true"]
    force = os.getenv("TORCH_FORCE_WEIGHTS_ONLY_LOAD", "0").lower() in true_values
    force_no = os.getenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "0").lower() in true_values
    if force and force_no:
        raise RuntimeError("Only one of `TORCH_FORCE_WEIGHTS_ONLY_LOAD` or `TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD` "
                           "should be set, but both were set.")
    if force:
        weights_only = True
    elif force_no and not_set:  # overrides only when the call did not pass weights_only
        import warnings
        warnings.warn("Environment variable TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD detected, since the`weights_only` "
                      "argument was not explicitly passed to `torch.load`, forcing weights_only=False.",
                      UserWarning, stacklevel=3)
        weights_only = False
    return weights_only


def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None, **pickle_load_args):
    """load(f, map_location=None, pickle_module=pickle, *, weights_only=True, mmap=None, **pickle_load_args)

    Loads an object saved with :func:`ember.save` or :func:`torch.save` from a file.

    Args:
        f: a file-like object (has to implement read, readline, tell, and seek), or a string or
            os.PathLike object containing a file name
        map_location: a function, ember.device, string or a dict specifying how to remap storage locations
        pickle_module: module used for unpickling metadata and objects (has to match the
            pickle_module used to serialize file)
        weights_only: whether the unpickler is restricted to tensors, primitive types, dictionaries
            and the types added via ember.serialization.add_safe_globals
        mmap: map the file's tensor data instead of reading it into memory (f must be a path)
        pickle_load_args: keyword arguments for pickle_module.Unpickler (weights_only=False only)
    """
    weights_only = _resolve_weights_only(weights_only, pickle_module)
    if weights_only:
        if pickle_module is not None:
            raise RuntimeError("Can not safely load weights when explicit pickle_module is specified")
    elif pickle_module is None:
        pickle_module = pickle
    if pickle_load_args and weights_only:
        import warnings
        warnings.warn("pickle_load_args only works if `weights_only=False`.")
    pickle_load_args.setdefault("encoding", "utf-8")
    if _is_path(f) and os.fspath(f).endswith(".safetensors"):
        return _load_safetensors(os.fspath(f), map_location)
    globals_map = _torch_globals()
    if weights_only:
        def factory(file):
            return _weights_only_unpickler.Unpickler(file, allowed_globals=globals_map,
                                                     encoding=pickle_load_args["encoding"])
    else:
        unpickler_class = _unpickler_class(pickle_module)
        unpickler_class._torch_globals = globals_map

        def factory(file):
            return unpickler_class(file, **pickle_load_args)
    with _open_for_read(f) as opened:
        if not _is_zipfile(opened):
            if mmap:
                name = f"{f}, " if isinstance(f, str) else ""
                raise RuntimeError("mmap can only be used with files saved with "
                                   f"`torch.save({name}_use_new_zipfile_serialization=True), please torch.save your "
                                   "checkpoint with this option in order to use mmap.")
            from ._legacy_serialization import legacy_load
            return _guarded(weights_only, lambda: legacy_load(opened, _restore_location_fn(map_location), factory))
        reader = ZipRecordReader(opened)
        if reader.has_record("constants.pkl"):
            raise RuntimeError("ember.load received a TorchScript archive (torch.jit.save): ember cannot run "
                               "TorchScript. Save the model's state_dict with torch.save instead.")
        mapped = None
        if mmap:
            if not _is_path(f):
                raise ValueError("f must be a file path in order to use the mmap argument")
            mapped = _map_file(os.fspath(f))
        return _guarded(weights_only, lambda: _load_zip(reader, map_location, factory, mapped))


def _guarded(weights_only, run):
    if not weights_only:
        return run()
    try:
        return run()
    except pickle.UnpicklingError as e:
        raise pickle.UnpicklingError(_weights_only_message(str(e))) from None


_MMAP_FLAGS = ["MAP_PRIVATE"]  # the flag ember.load(mmap=True) maps with (set_default_mmap_options)


def get_default_mmap_options():
    """Get default mmap options for ember.load with ``mmap=True``. Defaults to ``mmap.MAP_PRIVATE``."""
    import mmap as _mmap
    return getattr(_mmap, _MMAP_FLAGS[0])


class set_default_mmap_options:
    """Context manager or function to set default mmap options for ember.load with ``mmap=True`` to flags:
    ``mmap.MAP_PRIVATE`` (writes to loaded tensors stay in memory) or ``mmap.MAP_SHARED`` (they reach the file)."""

    def __init__(self, flags):
        import mmap as _mmap
        if flags != _mmap.MAP_PRIVATE and flags != _mmap.MAP_SHARED:
            raise ValueError("Invalid argument in function set_default_mmap_options, expected mmap.MAP_PRIVATE or "
                             f"mmap.MAP_SHARED, but got {flags}")
        self.prev = _MMAP_FLAGS[0]
        _MMAP_FLAGS[0] = "MAP_SHARED" if flags == _mmap.MAP_SHARED else "MAP_PRIVATE"

    def __enter__(self):
        pass

    def __exit__(self, exc_type, exc_value, traceback):
        _MMAP_FLAGS[0] = self.prev


def _map_file(path):
    """The whole file mapped: pages are read when touched. MAP_PRIVATE (the default) is copy-on-write,
    MAP_SHARED writes through to the file. The mapping lives as long as a storage over it."""
    import mmap as _mmap
    shared = _MMAP_FLAGS[0] == "MAP_SHARED"
    with open(path, "r+b" if shared else "rb") as f:
        if os.fstat(f.fileno()).st_size == 0:
            return None
        return memoryview(_mmap.mmap(f.fileno(), 0, access=_mmap.ACCESS_WRITE if shared else _mmap.ACCESS_COPY))


def _load_safetensors(path, map_location):
    device = "cpu"
    if map_location is not None:
        if isinstance(map_location, dict):
            raise RuntimeError("Loading safetensors file with dict map_location is not supported. "
                               "Use a device string or torch.device instead.")
        if callable(map_location) and not isinstance(map_location, _C.device):
            raise RuntimeError("Loading safetensors file with callable map_location is not supported. "
                               "Use a device string or torch.device instead.")
        device = str(map_location)
    from .utils.safetensors import load_file
    return load_file(path, device=device)
