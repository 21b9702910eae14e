"""safetensors files for ember tensors, with the API of `safetensors.torch`.

A safetensors file is an 8-byte little-endian header length, a JSON header (per tensor: `dtype`
such as "F32"/"BF16", `shape`, `data_offsets` into the data section; optional `__metadata__`),
then the raw little-endian bytes. Writing and header validation go through the `safetensors`
package (its Rust core, which torch users' files come from); ember reads tensor bytes straight into
its own storages, so every dtype (bfloat16 too) travels bit for bit, never through float32.
"""
import json
import os
import struct
from collections import defaultdict

from .. import _C

__all__ = ["save_file", "load_file", "save", "load", "save_model", "load_model", "safe_open"]

_TYPES = {"F64": _C.float64, "F32": _C.float32, "F16": _C.float16, "BF16": _C.bfloat16, "I64": _C.int64,
          "I32": _C.int32, "I16": _C.int16, "I8": _C.int8, "U8": _C.uint8, "BOOL": _C.bool}
_FRAMEWORKS = ("ember", "pt", "pytorch", "torch")


def _package():
    try:
        import safetensors
    except ImportError:
        raise ImportError("ember.utils.safetensors needs the `safetensors` package: pip install safetensors "
                          "(or pip install ember[safetensors])") from None
    return safetensors


def _dtype_name(dtype):
    return str(dtype).rpartition(".")[2]


# ---------------------------------------------------------------------------- shared tensors (as safetensors.torch)
def _storage_ptr(t):
    return t.untyped_storage().data_ptr()


def _end_ptr(t):
    return t.data_ptr() + t.numel() * t.element_size() if t.numel() else t.data_ptr()


def _find_shared_tensors(state_dict):
    """Groups of names whose tensors overlap in memory (names alone in their storage form groups of one)."""
    by_storage = defaultdict(set)
    for name, t in state_dict.items():
        if _storage_ptr(t) != 0 and t.untyped_storage().nbytes() != 0:
            by_storage[(str(t.device), _storage_ptr(t), t.untyped_storage().nbytes())].add(name)
    groups = []
    for shared in sorted(by_storage.values(), key=sorted):
        if len(shared) < 2:
            groups.append(shared)
            continue
        # Within one storage, only tensors whose byte ranges overlap are shared.
        areas = sorted((state_dict[n].data_ptr(), _end_ptr(state_dict[n]), n) for n in shared)
        _, last_stop, first = areas[0]
        groups.append({first})
        for start, stop, name in areas[1:]:
            if start >= last_stop:
                groups.append({name})
            else:
                groups[-1].add(name)
            last_stop = max(last_stop, stop)
    return groups


def _is_complete(t):
    return t.data_ptr() == _storage_ptr(t) and t.numel() * t.element_size() == t.untyped_storage().nbytes()


def _remove_duplicate_names(state_dict, *, preferred_names=None, discard_names=None):
    preferred_names, discard_names = set(preferred_names or []), set(discard_names or [])
    to_remove = defaultdict(list)
    for shared in _find_shared_tensors(state_dict):
        complete = {name for name in shared if _is_complete(state_dict[name])}
        if not complete:
            raise RuntimeError(
                "Error while trying to find names to remove to save state dict, but found no suitable name to keep"
                f" for saving amongst: {shared}. None is covering the entire storage.Refusing to save/load the model"
                " since you could be storing much more memory than needed. Please refer to"
                " https://huggingface.co/docs/safetensors/torch_shared_tensors for more information. Or open an"
                " issue.")
        keep = sorted(complete)[0]
        if complete - discard_names:
            keep = sorted(complete - discard_names)[0]
        if preferred_names & complete:
            keep = sorted(preferred_names & complete)[0]
        to_remove[keep] = [name for name in sorted(shared) if name != keep]
    return to_remove


# ---------------------------------------------------------------------------- saving
def _check_tensors(tensors):
    if not isinstance(tensors, dict):
        raise ValueError(f"Expected a dict of [str, torch.Tensor] but received {type(tensors)}")
    for k, v in tensors.items():
        if not isinstance(v, _C.TensorBase):
            raise ValueError(f"Key `{k}` is invalid, expected torch.Tensor but received {type(v)}")
    failing = [names for names in _find_shared_tensors(tensors) if len(names) > 1]
    if failing:
        raise RuntimeError(f"""
            Some tensors share memory, this will lead to duplicate memory on disk and potential differences when loading them again: {failing}.
            A potential way to correctly save your model is to use `save_model`.
            More information at https://huggingface.co/docs/safetensors/torch_shared_tensors
            """)


def _flatten(tensors, keep_alive):
    """TensorSpecs pointing at each tensor's bytes (a CPU copy for GPU tensors, kept alive in keep_alive)."""
    safetensors = _package()
    _check_tensors(tensors)
    specs = {}
    for k, v in tensors.items():
        if not v.is_contiguous():
            raise ValueError(
                f"You are trying to save a non contiguous tensor: `{k}` which is not allowed. It either means you"
                " are trying to save tensors which are reference of each other in which case it's recommended to save"
                " only the full tensors, and reslice at load time, or simply call `.contiguous()` on your tensor to"
                " pack it before saving.")
        if v.device.type != "cpu":
            v = v.cpu()
        keep_alive.append(v)
        specs[k] = safetensors.TensorSpec(dtype=_dtype_name(v.dtype), shape=list(v.shape), data_ptr=v.data_ptr(),
                                          data_len=v.numel() * v.element_size())
    return specs


def save(tensors, metadata=None):
    """Saves a dictionary of tensors into raw bytes in safetensors format."""
    keep_alive = []
    return bytes(_package().serialize(_flatten(tensors, keep_alive), metadata=metadata))


def save_file(tensors, filename, metadata=None):
    """Saves a dictionary of tensors into `filename` in safetensors format."""
    keep_alive = []
    _package().serialize_file(_flatten(tensors, keep_alive), os.fspath(filename), metadata=metadata)


def save_model(model, filename, metadata=None, force_contiguous=True):
    """Saves a model's state_dict to `filename`, keeping one name for tensors that share memory
    (tied weights); each dropped name is recorded in the metadata as pointing to the kept one."""
    state_dict = model.state_dict()
    for kept, removed in _remove_duplicate_names(state_dict).items():
        for name in removed:
            metadata = {} if metadata is None else metadata
            metadata.setdefault(name, kept)
            del state_dict[name]
    if force_contiguous:
        state_dict = {k: v.contiguous() for k, v in state_dict.items()}
    try:
        save_file(state_dict, filename, metadata=metadata)
    except ValueError as e:
        raise ValueError(str(e) + " Or use save_model(..., force_contiguous=True), read the docs for potential "
                         "caveats.") from None


# ---------------------------------------------------------------------------- loading
def _device(device):
    if isinstance(device, int):
        return _C.device("cuda", device)
    return _C.device(device)


def _tensor_over(storage, dtype_code, shape, device):
    """A contiguous `dtype_code` tensor of `shape` over `storage` (raw little-endian bytes), on `device`."""
    dtype = _TYPES.get(dtype_code)
    if dtype is None:
        raise TypeError(f"ember has no dtype for the safetensors type {dtype_code}")
    tensor = _C._tensor_from_storage(storage, 0, tuple(shape), _contiguous_strides(shape), dtype)
    return tensor if device.type == "cpu" else tensor.to(device)


def _contiguous_strides(shape):
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


class _Slice:
    """A tensor of the file not yet read: its shape and dtype, and indexing that reads only the
    rows the first index selects."""

    def __init__(self, opened, name):
        self._opened, self._name = opened, name
        self._info = opened._header[name]

    def get_shape(self):
        return list(self._info["shape"])

    def get_dtype(self):
        return self._info["dtype"]

    def __getitem__(self, index):
        index = index if isinstance(index, tuple) else (index,)
        shape = self._info["shape"]
        first = index[0] if index else slice(None)
        if shape and isinstance(first, slice) and first.step in (None, 1):
            start, stop, _ = first.indices(shape[0])
            rows = self._opened._read(self._name, start, max(stop, start))
            return rows[(slice(None),) + index[1:]].contiguous()
        return self._opened.get_tensor(self._name)[index].contiguous()


class safe_open:
    """Opens a safetensors file lazily: tensors are read when asked for.

    Args:
        filename (`str`, or `os.PathLike`): the file to open
        framework (`str`): "ember" (or "pt", for code written against safetensors.torch)
        device (`str`, defaults to `"cpu"`): the device the tensors are put on
    """

    def __init__(self, filename, framework, device="cpu"):
        if framework not in _FRAMEWORKS:
            raise ValueError(f"framework {framework!r} is invalid: ember.utils.safetensors gives ember tensors "
                             f"(framework='ember' or 'pt')")
        self._filename = os.fspath(filename)
        self._device = _device(device)
        # The package validates the header (lengths, offsets, overlaps) and raises its SafetensorError.
        _package().safe_open(self._filename, framework="numpy")
        self._file = open(self._filename, "rb")
        (n,) = struct.unpack("<Q", self._file.read(8))
        header = json.loads(self._file.read(n))
        self._metadata = header.pop("__metadata__", None)
        self._header, self._data_start = header, 8 + n

    def __enter__(self):
        return self

    def __exit__(self, *args):
        self.close()

    def close(self):
        self._file.close()

    def keys(self):
        """The names of the tensors in the file, sorted."""
        return sorted(self._header)

    def offset_keys(self):
        """The names of the tensors, in the order of their data in the file."""
        return sorted(self._header, key=lambda k: self._header[k]["data_offsets"][0])

    def metadata(self):
        """The free-form (str -> str) metadata of the header, or None."""
        return self._metadata

    def _read(self, name, row_start=0, row_stop=None):
        info = self._header[name]
        shape, (begin, end) = list(info["shape"]), info["data_offsets"]
        if row_stop is not None:  # a range of rows along the first dimension
            row_bytes = (end - begin) // shape[0] if shape[0] else 0
            begin, end = begin + row_start * row_bytes, begin + row_stop * row_bytes
            shape[0] = row_stop - row_start
        storage = _C.empty(end - begin, dtype=_C.uint8).untyped_storage()  # read straight into it
        self._file.seek(self._data_start + begin)
        if end > begin and self._file.readinto(memoryview(storage)) != end - begin:
            raise OSError(f"{self._filename}: file is shorter than its header says")
        return _tensor_over(storage, info["dtype"], shape, self._device)

    def get_tensor(self, name):
        """The tensor `name`, read from the file."""
        if name not in self._header:
            raise _package().SafetensorError(f"File does not contain tensor {name}")
        return self._read(name)

    def get_tensors(self):
        """Every tensor in the file, keyed by name (in file order)."""
        return {name: self._read(name) for name in self.offset_keys()}

    def get_slice(self, name):
        """An object to slice into (`f.get_slice("emb")[:10]`) that reads only what the slice needs."""
        if name not in self._header:
            raise _package().SafetensorError(f"File does not contain tensor {name}")
        return _Slice(self, name)


def load_file(filename, device="cpu"):
    """Loads a safetensors file into a dict of ember tensors (name -> tensor) on `device`."""
    with safe_open(filename, framework="ember", device=device) as f:
        return f.get_tensors()


def load(data):
    """Loads the bytes of a safetensors file into a dict of ember tensors on the CPU."""
    return {name: _tensor_over(_C._storage_from_buffer(v["data"]), v["dtype"], v["shape"], _C.device("cpu"))
            for name, v in _package().deserialize(data)}


def load_model(model, filename, strict=True, device="cpu"):
    """Loads a file written by save_model into `model`; returns (missing, unexpected) names. Names
    dropped on save because they shared memory with a kept one count as neither."""
    state_dict = load_file(filename, device=device)
    to_removes = _remove_duplicate_names(model.state_dict(), preferred_names=state_dict.keys())
    missing, unexpected = model.load_state_dict(state_dict, strict=False)
    missing = set(missing)
    for removed in to_removes.values():
        for name in removed:
            if name not in missing:
                unexpected.append(name)
            else:
                missing.remove(name)
    if strict and (missing or unexpected):
        error = f"Error(s) in loading state_dict for {model.__class__.__name__}:"
        if missing:
            error += "\n    Missing key(s) in state_dict: " + ", ".join(f'"{k}"' for k in sorted(missing))
        if unexpected:
            error += "\n    Unexpected key(s) in state_dict: " + ", ".join(f'"{k}"' for k in sorted(unexpected))
        raise RuntimeError(error)
    return missing, unexpected
