"""DLPack interchange with other array libraries (NumPy, PyTorch, JAX, CuPy, ...), as torch.utils.dlpack.

`from_dlpack(x)` makes a tensor sharing `x`'s memory; `Tensor.__dlpack__` lets the other library do the
same with an ember tensor. Only CPU memory crosses for now (see docs/ARCHITECTURE.md, "DLPack")."""
from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Any, Optional, Tuple, Union

from .. import _C

if TYPE_CHECKING:
    from .._tensor import Tensor

__all__ = ["DLDeviceType", "from_dlpack", "to_dlpack"]

# The DLPack version ember reads and writes (python/src/dlpack.h).
_DLPACK_VERSION = (1, 1)
_KDLCPU = 1  # DLDeviceType.kDLCPU without the enum's attribute lookup (from_dlpack's fast path)


class DLDeviceType(enum.IntEnum):
    # Enums as in the DLPack specification (python/src/dlpack.h)
    kDLCPU = 1
    kDLCUDA = 2
    kDLCUDAHost = 3
    kDLOpenCL = 4
    kDLVulkan = 7
    kDLMetal = 8
    kDLVPI = 9
    kDLROCM = 10
    kDLROCMHost = 11
    kDLExtDev = 12
    kDLCUDAManaged = 13
    kDLOneAPI = 14
    kDLWebGPU = 15
    kDLHexagon = 16
    kDLMAIA = 17


def to_dlpack(tensor: Tensor) -> Any:
    """to_dlpack(tensor) -> PyCapsule

    Returns an opaque object (a legacy "dltensor" DLPack capsule) sharing the tensor's memory.
    Consume it once, with `from_dlpack` of any library. As PyTorch's, it exports a tensor that
    requires grad (without its autograd record), which `__dlpack__` refuses."""
    return _C._to_dlpack(tensor, False)


def _dl_device_of(device: _C.device) -> Tuple[DLDeviceType, int]:
    if device.type == "cuda":
        return DLDeviceType.kDLCUDA, device.index if device.index is not None else 0
    return DLDeviceType.kDLCPU, 0


def _export(tensor: Tensor, stream: Optional[int] = -1, max_version: Optional[Tuple[int, int]] = None,
            dl_device: Optional[Tuple[int, int]] = None, copy: Optional[bool] = None) -> Any:
    """Tensor.__dlpack__: a "dltensor_versioned" capsule when the consumer takes DLPack >= 1.0, else "dltensor"."""
    # A capsule carries no autograd record: exporting would silently drop it, as PyTorch refuses to.
    if tensor.requires_grad:
        raise BufferError("Can't export tensors that require gradient, use tensor.detach()")
    if stream is not None and type(stream) is not int:
        raise TypeError("stream must be ``int`` or ``none``")
    if tensor.device.type != "cpu":
        # Handing CUDA memory over needs the stream handshake (an event between the streams), not built yet.
        raise BufferError(f"ember cannot export {tensor.device.type} tensors through DLPack yet; "
                          "copy the tensor to the CPU first (tensor.cpu())")
    if stream is not None and stream != -1:
        raise AssertionError("stream should be None on cpu.")
    if dl_device is not None and int(dl_device[0]) != DLDeviceType.kDLCPU:
        raise BufferError(f"ember cannot export a cpu tensor to DLPack device {tuple(int(d) for d in dl_device)}; "
                          f"only {(int(DLDeviceType.kDLCPU), 0)} (the tensor's own device) is supported")
    if copy:
        tensor = tensor.clone()
    versioned = max_version is not None and max_version[0] >= 1
    return _C._to_dlpack(tensor, versioned, bool(copy))


def _dlpack_device(tensor: Tensor) -> Tuple[DLDeviceType, int]:
    """Tensor.__dlpack_device__: (DLDeviceType, device index)."""
    return _dl_device_of(tensor.device)


def _call_dlpack(ext_tensor: Any, kwargs: dict) -> Tuple[Any, bool]:
    """ext_tensor.__dlpack__(**kwargs), dropping the keywords an older producer does not take, as PyTorch does.
    Also returns whether the producer took `copy`."""
    for drop in ("max_version", "copy"):
        try:
            return ext_tensor.__dlpack__(**kwargs), "copy" in kwargs
        except TypeError:
            kwargs.pop(drop, None)
    try:
        return ext_tensor.__dlpack__(**kwargs), False
    except TypeError:
        kwargs.pop("dl_device", None)
    return ext_tensor.__dlpack__(**kwargs), False


def from_dlpack(ext_tensor: Any, *, device: Union[str, _C.device, None] = None,
                copy: Optional[bool] = None) -> Tensor:
    """from_dlpack(ext_tensor) -> Tensor

    Converts a tensor from an external library into an ``ember.Tensor`` sharing its memory (in-place
    changes show in both). `ext_tensor` is an object with ``__dlpack__`` (a NumPy array, a torch tensor,
    ...) or a DLPack capsule. `device` places the result (a copy when it differs from the source's);
    `copy=True` always copies, `copy=False` never does."""
    if not hasattr(ext_tensor, "__dlpack__"):
        if device is not None or copy is not None:
            raise AssertionError("device and copy kwargs not supported when ext_tensor is already a DLPack capsule.")
        return _C._from_dlpack(ext_tensor)

    ext_device = ext_tensor.__dlpack_device__()
    if ext_device[0] != _KDLCPU:
        ext_device = (int(ext_device[0]), int(ext_device[1]))
        raise BufferError(f"ember.from_dlpack imports CPU memory only; the producer is on DLPack device {ext_device} "
                          "(move it to the CPU first)")
    kwargs: dict = {"max_version": _DLPACK_VERSION}
    if copy is not None:
        kwargs["copy"] = copy
    target_device = None  # set when the tensor must move after import
    if device is not None:
        if isinstance(device, str):
            device = _C.device(device)
        if not isinstance(device, _C.device):
            raise AssertionError(f"from_dlpack: unsupported device type: {type(device)}")
        target = tuple(int(d) for d in _dl_device_of(device))
        ext_device = (int(ext_device[0]), int(ext_device[1]))
        if target == ext_device:
            kwargs["dl_device"] = target
        elif copy is False:
            raise ValueError(f"cannot move DLPack tensor from device {ext_device} to {target} without copying. "
                             "Set copy=None or copy=True.")
        else:
            target_device = device
    capsule, producer_copied = _call_dlpack(ext_tensor, kwargs)
    tensor = _C._from_dlpack(capsule)
    if target_device is not None:
        return tensor.to(target_device)
    if copy and not producer_copied:
        tensor = tensor.clone()
    return tensor
