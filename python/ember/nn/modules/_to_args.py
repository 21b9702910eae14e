"""The arguments of Module.to: (device=None, dtype=None, non_blocking=False),
(dtype, non_blocking=False) or (tensor, non_blocking=False), as PyTorch's _parse_to."""
from __future__ import annotations

from typing import Any, Optional

from ... import _C

_SIGNATURES = ("to(Device device=None, ScalarType dtype=None, bool non_blocking=False, bool copy=False, *, "
               "MemoryFormat? memory_format=None)",
               "to(ScalarType dtype, bool non_blocking=False, bool copy=False, *, MemoryFormat? memory_format=None)",
               "to(Tensor tensor, bool non_blocking=False, bool copy=False, *, MemoryFormat? memory_format=None)")


def _invalid(args: tuple, kwargs: dict) -> TypeError:
    got = ", ".join([type(a).__name__ for a in args] + [f"{k}={type(v).__name__}" for k, v in kwargs.items()])
    return TypeError(f"to() received an invalid combination of arguments - got ({got}), but expected one of:\n"
                     + "\n".join(" * " + s for s in _SIGNATURES))


def _is_device(value: Any) -> bool:
    return isinstance(value, (str, _C.device)) or (isinstance(value, int) and not isinstance(value, bool))


def parse_to(*args: Any, **kwargs: Any) -> tuple[Optional[_C.device], Optional[_C.dtype], bool]:
    """(device, dtype, non_blocking) of a Module.to call."""
    allowed = {"device", "dtype", "non_blocking", "copy", "memory_format", "tensor"}
    if not set(kwargs) <= allowed:
        raise _invalid(args, kwargs)
    rest = list(args)
    device = kwargs.get("device")
    dtype = kwargs.get("dtype")
    non_blocking = kwargs.get("non_blocking", False)
    tensor = kwargs.get("tensor")
    if rest and isinstance(rest[0], _C.TensorBase):
        tensor = rest.pop(0)
    elif rest and isinstance(rest[0], _C.dtype):
        dtype = rest.pop(0)
    elif rest and (_is_device(rest[0]) or rest[0] is None):
        device = rest.pop(0)
        if rest and (isinstance(rest[0], _C.dtype) or rest[0] is None):
            dtype = rest.pop(0)
    if rest and isinstance(rest[0], bool):
        non_blocking = rest.pop(0)
    if rest and isinstance(rest[0], bool):
        rest.pop(0)  # copy: the module converts its tensors in place anyway
    if rest or not isinstance(non_blocking, bool) or not (dtype is None or isinstance(dtype, _C.dtype)):
        raise _invalid(args, kwargs)
    if tensor is not None:
        if not isinstance(tensor, _C.TensorBase):
            raise _invalid(args, kwargs)
        device, dtype = tensor.device, tensor.dtype
    if device is not None:
        if not _is_device(device):
            raise _invalid(args, kwargs)
        device = _C.device("cuda", device) if isinstance(device, int) else _C.device(device)
    return device, dtype, non_blocking
