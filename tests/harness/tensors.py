"""Moving values between NumPy and ember, through public API only."""
import contextlib

import numpy as np

import ember

from .dtypes import NUMPY_STORAGE, round_to
from .samples import Arg
from .spec import ALL_DTYPES


_NAMES = None

# Where make_tensor puts the tensors it makes; tests/test_cuda_ops.py runs the
# same cases with "cuda" (layouts are then views of a device tensor).
DEVICE = "cpu"


@contextlib.contextmanager
def on_device(device):
    global DEVICE
    previous, DEVICE = DEVICE, device
    try:
        yield
    finally:
        DEVICE = previous


def dtype_name(dtype):
    """'float32' for ember.float32 (and for 'float32')."""
    global _NAMES
    if isinstance(dtype, str):
        return dtype
    if _NAMES is None:
        _NAMES = {getattr(ember, n): n for n in ALL_DTYPES}
    try:
        return _NAMES[dtype]
    except (KeyError, TypeError):
        for n in ALL_DTYPES:
            if getattr(ember, n) == dtype:
                return n
        raise


def make_tensor(np_array, dtype):
    """A new ember tensor holding `np_array`'s values as `dtype` (an ember dtype or its name).

    bfloat16 has no NumPy type: its values go in as float32 and are converted.
    """
    name = dtype_name(dtype)
    if name == "bfloat16":
        t = ember.from_numpy(np.array(np_array, dtype=np.float32)).to(ember.bfloat16)
    else:
        t = ember.from_numpy(np.array(np_array, dtype=NUMPY_STORAGE[name]))
    return t if DEVICE == "cpu" else t.to(DEVICE)


def to_numpy(t):
    """A NumPy copy of a tensor's values; bfloat16 comes back as float32."""
    if getattr(t, "requires_grad", False):
        with ember.no_grad():
            t = t.clone()
    if t.device.type != "cpu":
        t = t.cpu()
    if t.dtype == ember.bfloat16:
        t = t.float()
    return np.array(t.numpy())


def exact_values(arg):
    """The values an Arg's tensor holds, in NumPy (bfloat16 as rounded float32)."""
    return round_to(arg.values, arg.dtype)


def storage_array(arg, values=None):
    """The contiguous array an Arg's tensor is made from, before its layout view."""
    v = round_to(arg.values if values is None else values, arg.dtype)
    if arg.layout == "transposed":
        return np.ascontiguousarray(np.swapaxes(v, -1, -2))
    if arg.layout == "strided":
        base = np.repeat(v, 2, axis=0)
        base[1::2] = base[1::2] == 0 if v.dtype == np.bool_ else base[1::2] + 1   # filler rows
        return base
    return v


def apply_layout(arg, base):
    if arg.layout == "transposed":
        return base.transpose(-2, -1)
    if arg.layout == "strided":
        return base[::2]
    return base


def layout_back(arg, base_values):
    """Maps values laid out like the storage array back to the Arg's logical shape."""
    if arg.layout == "transposed":
        return np.swapaxes(base_values, -1, -2)
    if arg.layout == "strided":
        return base_values[::2]
    return base_values


def build(arg, values=None, requires_grad=False):
    """(tensor, leaf): the input tensor with its layout, and the leaf that owns the storage."""
    base = make_tensor(storage_array(arg, values), arg.dtype)
    if requires_grad:
        base.requires_grad_()
    return apply_layout(arg, base), base


def build_inputs(sample, overrides=None, requires_grad=()):
    """role -> tensor | number | [tensor]; plus {(role, index): leaf} for requires_grad args.

    overrides: {(role, index): values} replaces an Arg's values (for finite differences).
    """
    overrides = overrides or {}
    inputs, leaves = {}, {}
    for role, value in sample.inputs.items():
        if isinstance(value, list):
            items = []
            for i, arg in enumerate(value):
                t, leaf = build(arg, overrides.get((role, i)), (role, i) in requires_grad)
                items.append(t)
                leaves[(role, i)] = leaf
            inputs[role] = items
        elif isinstance(value, Arg):
            t, leaf = build(value, overrides.get((role, 0)), (role, 0) in requires_grad)
            inputs[role] = t
            leaves[(role, 0)] = leaf
        else:
            inputs[role] = value
    return inputs, leaves
