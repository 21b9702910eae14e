"""Tensor methods that change a tensor's geometry in place: squeeze_, unsqueeze_, transpose_,
swapaxes_/swapdims_, as_strided_ (each makes the out-of-place view, whose checks and derivative
it reuses, then takes its geometry and history: Tensor._adopt_view_), and resize_, resize_as_, set_
(new sizes or another storage under the same tensor object)."""
from __future__ import annotations

import math
from typing import Any, Optional

from . import _C


def squeeze_(self: Any, dim: Any = None) -> Any:
    """In-place squeeze: drops the size-1 dims (or those of `dim` that have size 1)."""
    return self._adopt_view_(self.squeeze() if dim is None else self.squeeze(dim), "squeeze_")


def unsqueeze_(self: Any, dim: int) -> Any:
    """In-place unsqueeze: inserts a size-1 dim at `dim`."""
    return self._adopt_view_(self.unsqueeze(dim), "unsqueeze_")


def transpose_(self: Any, dim0: int, dim1: int) -> Any:
    """In-place transpose of dims dim0 and dim1."""
    return self._adopt_view_(self.transpose(dim0, dim1), "transpose_")


def swapaxes_(self: Any, axis0: int, axis1: int) -> Any:
    """In-place swapaxes (transpose_)."""
    return self._adopt_view_(self.transpose(axis0, axis1), "swapaxes_")


def swapdims_(self: Any, dim0: int, dim1: int) -> Any:
    """In-place swapdims (transpose_)."""
    return self._adopt_view_(self.transpose(dim0, dim1), "swapdims_")


def as_strided_(self: Any, size: Any, stride: Any, storage_offset: Optional[int] = None) -> Any:
    """In-place as_strided: this tensor now has the given size, strides and offset in its storage."""
    return self._adopt_view_(self.as_strided(size, stride, storage_offset), "as_strided_")


def _contiguous_strides(sizes: tuple) -> tuple:
    strides, step = [], 1
    for n in reversed(sizes):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def resize_(self: Any, *sizes: Any, memory_format: Any = None) -> Any:
    """Gives the tensor the new sizes (contiguous strides unless they are unchanged), growing its storage
    when it is too small; the values are whatever the storage holds there."""
    if len(sizes) == 1 and not isinstance(sizes[0], int):
        sizes = tuple(sizes[0])
    if self.requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    if any(n < 0 for n in sizes):
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(sizes)}: {list(sizes)}")
    strides = self.stride() if tuple(sizes) == tuple(self.shape) else _contiguous_strides(sizes)
    storage = self.untyped_storage()
    numel = math.prod(sizes)
    needed = (self.storage_offset() + numel) * self.element_size() if numel else 0
    if needed > storage.nbytes():
        _C._storage_resize_(storage, needed)
    return _C._tensor_from_storage(storage, self.storage_offset(), sizes, strides, self.dtype, self)


def resize_as_(self: Any, the_template: Any, memory_format: Any = None) -> Any:
    """resize_ to the template's sizes."""
    return resize_(self, tuple(the_template.shape))


def set_(self: Any, source: Any = None, storage_offset: int = 0, size: Any = None, stride: Any = None) -> Any:
    """Makes this tensor view `source`: another tensor (its storage and geometry), or a storage (all of it
    as 1-D, or `size`/`stride` from `storage_offset`); without source, an empty storage."""
    from ._typed_storage import TypedStorage
    if source is None:
        return _C._tensor_from_storage(_C.empty(0, dtype=_C.uint8, device=self.device).untyped_storage(), 0, (0,),
                                       (1,), self.dtype, self)
    if isinstance(source, _C.TensorBase):
        if source.dtype != self.dtype:
            raise RuntimeError(f"Could not set tensor of type {source.dtype} to a tensor of type {self.dtype}")
        return _C._tensor_from_storage(source.untyped_storage(), source.storage_offset(), tuple(source.shape),
                                       source.stride(), self.dtype, self)
    if isinstance(source, TypedStorage):
        if source.dtype != self.dtype:
            raise RuntimeError(f"Expected a Storage of type {self.dtype} or an UntypedStorage, but got type "
                               f"{source.dtype} for argument 1 'storage'")
        source = source.untyped()
    if size is None:
        size = (source.nbytes() // self.element_size() - storage_offset,)
    size = tuple(size)
    stride = _contiguous_strides(size) if stride is None or len(stride) == 0 else tuple(stride)
    return _C._tensor_from_storage(source, storage_offset, size, stride, self.dtype, self)


METHODS = dict(squeeze_=squeeze_, unsqueeze_=unsqueeze_, transpose_=transpose_, swapaxes_=swapaxes_,
               swapdims_=swapdims_, as_strided_=as_strided_, resize_=resize_, resize_as_=resize_as_, set_=set_)
