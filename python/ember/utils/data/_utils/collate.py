"""default_collate and default_convert, as torch.utils.data._utils.collate:
samples -> batches (stacking tensors, NumPy arrays and numbers, recursing into
mappings and sequences) and single samples -> tensors (NumPy to ember)."""
import collections
import copy
import math
import re

import numpy as np

import ember

from .worker import get_worker_info

np_str_obj_array_pattern = re.compile(r"[SaUO]")  # NumPy dtypes of strings and objects: no tensor

default_collate_err_msg_format = (
    "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}")


def _like_mapping(template, values):
    """A mapping of template's type (when that type allows) holding `values` (a dict)."""
    try:
        if isinstance(template, collections.abc.MutableMapping):
            clone = copy.copy(template)  # keeps the type and its other attributes (e.g. a defaultdict's factory)
            clone.update(values)
            return clone
        return type(template)(values)
    except TypeError:  # the type cannot be built from a dict
        return values


def _rebuild_sequence(data, items):
    """A sequence like `data` (same type when it allows) holding `items`."""
    try:
        if isinstance(data, collections.abc.MutableSequence):
            clone = copy.copy(data)
            for i, item in enumerate(items):
                clone[i] = item
            return clone
        return type(data)(items)
    except TypeError:
        return list(items)


def default_convert(data):
    """Converts each NumPy array or scalar in `data` to a tensor, keeping the
    structure (mappings, named tuples, sequences); the DataLoader's collate_fn
    when automatic batching is off."""
    elem_type = type(data)
    if isinstance(data, ember.Tensor):
        return data
    if elem_type.__module__ == "numpy" and elem_type.__name__ not in ("str_", "string_"):
        if elem_type.__name__ == "ndarray" and np_str_obj_array_pattern.search(data.dtype.str) is not None:
            return data
        return ember.as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        return _like_mapping(data, {key: default_convert(data[key]) for key in data})
    if isinstance(data, tuple) and hasattr(data, "_fields"):  # namedtuple
        return elem_type(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]  # a list, as PyTorch (backwards compatibility)
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        return _rebuild_sequence(data, [default_convert(d) for d in data])
    return data


def collate(batch, *, collate_fn_map=None):
    """Collates a list of samples, dispatching on the first sample's type: to
    collate_fn_map's function for it (exact type, then isinstance), else
    recursing into mappings, named tuples and sequences."""
    elem = batch[0]
    elem_type = type(elem)
    if collate_fn_map is not None:
        if elem_type in collate_fn_map:
            return collate_fn_map[elem_type](batch, collate_fn_map=collate_fn_map)
        for collate_type in collate_fn_map:
            if isinstance(elem, collate_type):
                return collate_fn_map[collate_type](batch, collate_fn_map=collate_fn_map)
    if isinstance(elem, collections.abc.Mapping):
        return _like_mapping(elem, {key: collate([d[key] for d in batch], collate_fn_map=collate_fn_map)
                                    for key in elem})
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # namedtuple
        return elem_type(*(collate(samples, collate_fn_map=collate_fn_map) for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        it = iter(batch)
        elem_size = len(next(it))
        if not all(len(e) == elem_size for e in it):
            raise RuntimeError("each element in list of batch should be of equal size")
        columns = [collate(samples, collate_fn_map=collate_fn_map) for samples in zip(*batch)]
        if isinstance(elem, tuple):
            return columns  # a list, as PyTorch (backwards compatibility)
        return _rebuild_sequence(elem, columns)
    raise TypeError(default_collate_err_msg_format.format(elem_type))


def _shared_empty(shape, dtype):
    """An uninitialized contiguous CPU tensor in shared memory (sent to another process without a copy)."""
    storage = ember.UntypedStorage._new_shared(math.prod(shape) * dtype.itemsize)
    strides = [1] * len(shape)
    for d in range(len(shape) - 2, -1, -1):
        strides[d] = strides[d + 1] * shape[d + 1]
    return ember._C._tensor_from_storage(storage, 0, tuple(shape), tuple(strides), dtype)


def collate_tensor_fn(batch, *, collate_fn_map=None):
    elem = batch[0]
    out = None
    if get_worker_info() is not None and elem.device.type == "cpu":
        # In a worker: stack straight into shared memory, so that sending the batch copies nothing.
        out = _shared_empty((len(batch), *elem.shape), elem.dtype)
    return ember.stack(batch, 0, out=out)


def collate_numpy_array_fn(batch, *, collate_fn_map=None):
    elem = batch[0]
    if np_str_obj_array_pattern.search(elem.dtype.str) is not None:
        raise TypeError(default_collate_err_msg_format.format(elem.dtype))
    return collate([ember.as_tensor(b) for b in batch], collate_fn_map=collate_fn_map)


def collate_numpy_scalar_fn(batch, *, collate_fn_map=None):
    return ember.as_tensor(batch)


def _numbers(batch, np_dtype):
    """A 1-d tensor of a list of Python numbers all of one type, read by NumPy in C (ember.tensor infers
    each element's dtype in Python: 20x slower on a batch of labels); None for anything else."""
    first = type(batch[0])
    if not all(type(x) is first for x in batch):
        return None
    try:
        return ember.from_numpy(np.array(batch, dtype=np_dtype))
    except OverflowError:  # beyond int64: ember.tensor raises its own error
        return None


def collate_float_fn(batch, *, collate_fn_map=None):
    out = _numbers(batch, np.float64) if type(batch[0]) is float else None
    return ember.tensor(batch, dtype=ember.float64) if out is None else out  # Python floats are doubles


def collate_int_fn(batch, *, collate_fn_map=None):
    out = _numbers(batch, _INT_NP_DTYPES[type(batch[0])]) if type(batch[0]) in _INT_NP_DTYPES else None
    return ember.tensor(batch) if out is None else out


_INT_NP_DTYPES = {int: np.int64, bool: np.bool_}


def collate_str_fn(batch, *, collate_fn_map=None):
    return batch


default_collate_fn_map = {
    ember.Tensor: collate_tensor_fn,
    np.ndarray: collate_numpy_array_fn,
    (np.bool_, np.number, np.object_): collate_numpy_scalar_fn,
    float: collate_float_fn,
    int: collate_int_fn,
    str: collate_str_fn,
    bytes: collate_str_fn,
}


def default_collate(batch):
    """Puts each data field into a tensor with an outer batch dimension: tensors
    and NumPy arrays are stacked, Python floats become float64, ints int64, bools
    bool; strings and bytes stay lists; mappings, named tuples and sequences are
    collated field by field (a tuple gives a list)."""
    return collate(batch, collate_fn_map=default_collate_fn_map)
