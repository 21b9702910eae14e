"""Factories PyTorch has beyond ember's generated ones: empty_strided, empty_permuted, scalar_tensor,
asarray, frombuffer, logspace, the deprecated range, and the signal windows (hann, hamming,
blackman, bartlett, kaiser). Windows and logspace are computed in float64 and rounded once to the dtype."""
import math
import warnings

import numpy as np

from . import _C
import builtins

from ._creation import from_numpy, tensor


def _finish(t, requires_grad):
    return t.requires_grad_(True) if requires_grad else t


def empty_strided(size, stride, *, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False):
    """An uninitialized tensor of the given size and strides (its own storage, just large enough)."""
    size, stride = tuple(size), tuple(stride)
    if len(size) != len(stride):
        raise RuntimeError(f"mismatch in length of strides and shape")
    if any(s < 0 for s in stride):
        raise RuntimeError(f"Storage size calculation overflowed with sizes={list(size)} and strides={list(stride)}")
    if any(n < 0 for n in size):
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(size)}: {list(size)}")
    dtype = dtype or _C.get_default_dtype()
    elements = 0 if 0 in size else 1 + sum((n - 1) * s for n, s in zip(size, stride))
    storage = _C.empty(elements, dtype=dtype, device=device).untyped_storage()
    return _finish(_C._tensor_from_storage(storage, 0, size, stride, dtype), requires_grad)


def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None, requires_grad=False,
                   pin_memory=False):
    """An uninitialized tensor of `size` whose dims lie in memory in the order `physical_layout`
    (outermost first): empty(size permuted) viewed back in logical order."""
    size, order = tuple(size), tuple(physical_layout)
    if len(size) != len(order):
        raise RuntimeError("Number of dimensions in size does not match the length of the physical_layout; i.e. "
                           f"len(size) = {len(size)} is not equal to len(physical_layout) = {len(order)}")
    if sorted(order) != list(builtins.range(len(size))):
        raise RuntimeError(f"Dimension out of range or repeated in physical_layout {list(order)}")
    physical = _C.empty([size[d] for d in order], dtype=dtype, device=device)
    inverse = [order.index(d) for d in builtins.range(len(size))]
    return empty_strided(size, [physical.stride()[i] for i in inverse], dtype=physical.dtype, device=device,
                         requires_grad=requires_grad)


def scalar_tensor(s, *, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False):
    """A 0-d tensor holding s, of the default dtype unless one is given."""
    return _C.full((), s, dtype=dtype or _C.get_default_dtype(), device=device, requires_grad=requires_grad)


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False):
    """obj as a tensor, sharing its memory when it can (a tensor or NumPy array of the same dtype and
    device) unless copy=True; copy=False raises when a copy is needed."""
    source = obj
    if isinstance(obj, np.ndarray) and copy is not True:
        try:
            source = from_numpy(obj)
        except TypeError:  # a dtype ember lacks: copied below
            pass
    if isinstance(source, _C.TensorBase):
        shared = source.to(device or source.device, dtype or source.dtype)
        if shared.data_ptr() != source.data_ptr() or copy:
            if copy is False:
                raise ValueError("can't alias tensor with the given dtype and device (copy=False)")
            shared = shared.clone() if shared.data_ptr() == source.data_ptr() else shared
        return _finish(shared.detach() if requires_grad else shared, requires_grad)
    if copy is False and not hasattr(obj, "__array_interface__"):
        raise ValueError(f"can't alias Python sequence without copying it (copy=False)")
    return tensor(obj, dtype=dtype, device=device, requires_grad=requires_grad)


def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False):
    """A 1-D tensor over the memory of an object with the buffer protocol (shared, not copied)."""
    length = memoryview(buffer).nbytes
    item = dtype.itemsize
    if length == 0 or count == 0:
        raise ValueError(f"both buffer length ({length}) and count ({count}) must not be 0")
    if not 0 <= offset < length:
        raise ValueError(f"offset ({offset} bytes) must be non-negative and no greater than buffer length "
                         f"({length} bytes) minus 1")
    if count < 0:
        if (length - offset) % item:
            raise ValueError(f"buffer length ({length - offset} bytes) after offset ({offset} bytes) must be a "
                             "multiple "
                             f"of element size ({item})")
        count = (length - offset) // item
    elif offset + count * item > length:
        raise ValueError(f"requested buffer length ({count} * {item} bytes) after offset ({offset} bytes) must not be "
                         f"greater than actual buffer length ({length} bytes)")
    storage = _C._storage_from_buffer(buffer, copy=False)
    if offset % item:  # element-aligned views only: this one starts at a byte offset
        storage = _C._storage_from_buffer(memoryview(buffer).cast("B")[offset:offset + count * item], copy=False)
        offset = 0
    return _finish(_C._tensor_from_storage(storage, offset // item, (count,), (1,), dtype), requires_grad)


def logspace(start, end, steps, base=10.0, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """steps values from base ** start to base ** end, evenly spaced in the exponent."""
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    values = np.power(float(base), np.linspace(float(start), float(end), steps))
    return _from_float64(values, dtype, device, requires_grad, out)


def _from_float64(values, dtype, device, requires_grad, out=None):
    dtype = dtype or _C.get_default_dtype()
    if not dtype.is_floating_point:
        values = np.trunc(values)
    result = tensor(values, dtype=dtype, device=device)
    if out is not None:
        return out.resize_(result.shape).copy_(result)
    return _finish(result, requires_grad)


def range(start=0, end=None, step=1, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """Deprecated: the values start, start + step, ... up to and including end (of the default dtype)."""
    warnings.warn("torch.range is deprecated and will be removed in a future release because its behavior is "
                  "inconsistent with Python's range builtin. Instead, use torch.arange, which produces values in "
                  "[start, end).", UserWarning, stacklevel=2)
    if end is None:
        start, end = 0, start
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (step > 0 and end < start) or (step < 0 and end > start):
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    count = int(math.floor((end - start) / step)) + 1
    return _from_float64(start + step * np.arange(count, dtype=np.float64), dtype, device, requires_grad, out)


def _window(name, window_length, periodic, dtype, device, requires_grad, formula):
    dtype = dtype or _C.get_default_dtype()
    if not dtype.is_floating_point:
        raise RuntimeError(f"{name} expects floating point dtypes, got: {dtype}")
    if window_length < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got window_length={window_length}")
    if window_length <= 1:
        return _C.ones(window_length, dtype=dtype, device=device, requires_grad=requires_grad)
    n = window_length + 1 if periodic else window_length
    values = formula(np.arange(n, dtype=np.float64), n)[:window_length]
    return _from_float64(values, dtype, device, requires_grad)


def hann_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False):
    """The Hann window 0.5 - 0.5 cos(2 pi n / (N - 1)) (N = window_length + 1 when periodic)."""
    return hamming_window(window_length, periodic, 0.5, 0.5, dtype=dtype, device=device, requires_grad=requires_grad,
                          _name="hann_window")


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None, layout=None, device=None,
                   requires_grad=False, _name="hamming_window"):
    """The Hamming window alpha - beta cos(2 pi n / (N - 1))."""
    return _window(_name, window_length, periodic, dtype, device, requires_grad,
                   lambda n, N: alpha - beta * np.cos(2 * math.pi * n / (N - 1)))


def blackman_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False):
    """The Blackman window 0.42 - 0.5 cos(2 pi n / (N - 1)) + 0.08 cos(4 pi n / (N - 1))."""
    return _window("blackman_window", window_length, periodic, dtype, device, requires_grad,
                   lambda n, N: 0.42 - 0.5 * np.cos(2 * math.pi * n / (N - 1))
                   + 0.08 * np.cos(4 * math.pi * n / (N - 1)))


def bartlett_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False):
    """The triangular window 1 - |2n / (N - 1) - 1|."""
    return _window("bartlett_window", window_length, periodic, dtype, device, requires_grad,
                   lambda n, N: 1 - np.abs(2 * n / (N - 1) - 1))


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, layout=None, device=None,
                  requires_grad=False):
    """The Kaiser window I0(beta sqrt(1 - ((n - a) / a)^2)) / I0(beta), a = (N - 1) / 2."""
    return _window("kaiser_window", window_length, periodic, dtype, device, requires_grad,
                   lambda n, N: np.i0(beta * np.sqrt(np.clip(1 - ((n - (N - 1) / 2) / ((N - 1) / 2)) ** 2, 0, None)))
                   / np.i0(beta))
