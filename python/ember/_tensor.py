"""ember.Tensor: the Python class of every tensor, deriving from the C type
_C.TensorBase (ops, operators, indexing and attributes) as torch.Tensor from
torch._C.TensorBase. Its own methods are the ones written in Python:
conversions, printing, pickling, the autograd entry."""
from __future__ import annotations

import copy
import numbers
from builtins import bool as _bool, float as _float, int as _int
from typing import Any, Callable, Iterator, Optional, Sequence, SupportsIndex, Union

import numpy as np

from . import _C, _comparison, _legacy, _utils, functional as _functional
from ._creation import EMBER_TO_NP, tensor as _new_tensor
from ._tensor_str import tensor_repr

DeviceLike = Union[str, _C.device, _int, None]


class _ArrayView:
    """Exposes a CPU tensor's memory to NumPy; keeps the tensor alive."""

    def __init__(self, t: Tensor) -> None:
        self._t = t
        dt = EMBER_TO_NP[t.dtype]
        item = t.element_size()
        self.__array_interface__ = {
            "shape": tuple(t.shape), "typestr": dt.str, "version": 3,
            "data": (t.data_ptr(), False),
            # A one-element dim never steps; its stride (from a slice step past the end) may not fit in bytes.
            "strides": tuple(s * item if n > 1 or abs(s * item) < 2**63 else 0 for s, n in zip(t.stride(), t.shape)),
        }


class Tensor(_C.TensorBase):
    """A multi-dimensional array of one dtype on one device, recording autograd history.

    Subclasses work as in PyTorch (`class MyTensor(ember.Tensor)`), made with
    `Tensor._make_subclass(cls, data, requires_grad)` or `t.as_subclass(cls)`;
    ops on them return plain Tensors (ember has no __torch_function__)."""

    __module__ = "ember"
    __array_priority__ = 1000  # t + ndarray and ndarray + t are ember's

    def __new__(cls, *args: Any, **kwargs: Any) -> Tensor:
        """PyTorch's legacy constructor: Tensor(2, 3) is uninitialized, Tensor(data) a copy of data,
        both of the default dtype; Tensor() is empty."""
        if not kwargs and all(isinstance(a, _int) for a in args):
            return super().__new__(cls, *(args or (0,)))
        if len(args) != 1 or "dtype" in kwargs:
            raise TypeError("Tensor(): expected sizes or one data argument, made in the default dtype "
                            "(ember.tensor(data, dtype=) takes a dtype)")
        t = _new_tensor(args[0], dtype=_C.get_default_dtype(), **kwargs)
        return t if cls is Tensor else Tensor._make_subclass(cls, t, False)

    def nonzero(self, *, out: Optional[Tensor] = None, as_tuple: _bool = False) -> Any:
        """The indices of the non-zero elements (ember.nonzero); `as_tuple=True` gives one tensor per dim."""
        from .functional import nonzero
        return nonzero(self, out=out, as_tuple=as_tuple)

    # ------------------------------------------------------------ NumPy and Python values
    def numpy(self, *, force: _bool = False) -> np.ndarray:
        """A NumPy array sharing this tensor's memory."""
        if self.requires_grad and not force:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.")
        if self.device.type != "cpu":
            raise TypeError(f"can't convert {self.device} device type tensor to numpy. Use Tensor.cpu() to copy the "
                            "tensor to host memory first.")
        if self.dtype not in EMBER_TO_NP:
            name = "BFloat16" if self.dtype == _C.bfloat16 else str(self.dtype)
            raise TypeError(f"Got unsupported ScalarType {name}")
        return np.asarray(_ArrayView(self.detach()))

    def tolist(self) -> Any:
        """The elements as (nested lists of) Python numbers."""
        t = self.detach()
        if t.device.type != "cpu":
            t = t.cpu()
        if t.dtype == _C.bfloat16:
            t = t.float()
        return t.numpy().tolist()

    def __array__(self, dtype: Any = None, copy: Optional[_bool] = None) -> np.ndarray:
        # As PyTorch: a tensor that requires grad is refused (numpy() raises).
        # NumPy 2 passes copy=True from np.array(t) and trusts the result to be a copy.
        a = self.numpy()
        if dtype is not None:
            return a.astype(dtype, copy=_bool(copy))
        return a.copy() if copy else a

    def __dlpack__(self, *, stream: Optional[_int] = -1, max_version: Optional[tuple] = None,
                   dl_device: Optional[tuple] = None, copy: Optional[_bool] = None) -> Any:
        """A DLPack capsule sharing this tensor's memory, for another library's `from_dlpack`
        ("dltensor_versioned" when `max_version` >= (1, 0), else the legacy "dltensor")."""
        from .utils import dlpack  # loaded on first use: `import ember` stays fast
        return dlpack._export(self, stream, max_version, dl_device, copy)

    def __dlpack_device__(self) -> tuple:
        from .utils import dlpack
        return dlpack._dlpack_device(self)

    def __repr__(self) -> str:
        return tensor_repr(self)

    def __format__(self, spec: str) -> str:
        if self.dim() == 0:
            return self.item().__format__(spec)
        return object.__format__(self, spec)

    # ------------------------------------------------------------ autograd
    def backward(self, gradient: Optional[Tensor] = None, retain_graph: Optional[_bool] = None,
                 create_graph: _bool = False, inputs: Union[Tensor, Sequence[Tensor], None] = None) -> None:
        """Computes the gradient of this tensor with respect to graph leaves (with `inputs`, only
        with respect to those tensors, as ember.autograd.backward)."""
        if inputs is not None or create_graph or not (gradient is None or isinstance(gradient, _C.TensorBase)):
            from . import autograd
            autograd.backward(self, gradient, retain_graph, create_graph, inputs=inputs)
            return
        _C._backward([self], [gradient], bool(retain_graph), False)

    def register_hook(self, hook: Callable[[Tensor], Optional[Tensor]]) -> Any:
        """hook(grad) runs when this tensor's gradient is computed (before a leaf's
        .grad is updated, before the op that made a non-leaf runs backward); a tensor
        it returns replaces the gradient. Returns a handle with remove()."""
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        return _C._register_tensor_hook(self, hook)

    def register_post_accumulate_grad_hook(self, hook: Callable[[Tensor], None]) -> Any:
        """hook(tensor) runs on a leaf after backward updated its .grad. Returns a handle with remove()."""
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self.grad_fn is not None:
            raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
        return _C._register_post_accumulate_grad_hook(self, hook)

    # ------------------------------------------------------------ iteration
    def __iter__(self) -> Iterator[Tensor]:
        if self.dim() == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def __reversed__(self) -> Iterator[Tensor]:
        return iter(reversed(self.unbind(0)))

    def __contains__(self, element: object) -> _bool:
        if not isinstance(element, (Tensor, numbers.Number)):
            raise RuntimeError(f"Tensor.__contains__ only supports Tensor or scalar, but you passed in a "
                               f"{type(element)}.")
        return _bool((self == element).any().item())

    # ------------------------------------------------------------ devices and dtypes
    def cpu(self, memory_format: Any = None) -> Tensor:
        return self if self.device.type == "cpu" else self.to("cpu")

    def cuda(self, device: DeviceLike = None, non_blocking: _bool = False, memory_format: Any = None) -> Tensor:
        return self.to("cuda" if device is None else device, non_blocking=non_blocking)

    def allclose(self, other: Tensor, rtol: _float = 1e-05, atol: _float = 1e-08, equal_nan: _bool = False) -> _bool:
        return _comparison.allclose(self, other, rtol, atol, equal_nan)

    def equal(self, other: Tensor) -> _bool:
        return _comparison.equal(self, other)

    def square(self) -> Tensor:
        """self ** 2 (pow(self, 2), whose grad_fn is PowBackward0)."""
        return self.pow(2)

    def square_(self) -> Tensor:
        """In-place square."""
        return self.pow_(2)

    def unique(self, sorted: _bool = True, return_inverse: _bool = False, return_counts: _bool = False,
               dim: Optional[_int] = None) -> Any:
        return _functional.unique(self, sorted, return_inverse, return_counts, dim)

    def unique_consecutive(self, return_inverse: _bool = False, return_counts: _bool = False,
                           dim: Optional[_int] = None) -> Any:
        return _functional.unique_consecutive(self, return_inverse, return_counts, dim)

    def histogram(self, bins: Any = 100, *, range: Optional[Sequence[_float]] = None,  # type: ignore[override]
                  weight: Optional[Tensor] = None, density: _bool = False) -> Any:
        return _functional.histogram(self, bins, range=range, weight=weight, density=density)

    def type(self, dtype: Any = None, non_blocking: _bool = False) -> Union[str, Tensor]:
        """The legacy type name ('ember.FloatTensor'), or the tensor converted to `dtype` (a dtype,
        a legacy type or its name)."""
        if dtype is None:
            return _legacy.type_name(self)
        return _legacy.convert(self, dtype, non_blocking)

    def type_as(self, other: Tensor) -> Tensor:
        if not isinstance(other, _C.TensorBase):
            raise TypeError(f"type_as(): argument 'other' (position 1) must be Tensor, not {type(other).__name__}")
        return self.to(other.dtype)

    def _converted(self, dtype: _C.dtype) -> Tensor:
        # As in PyTorch, a tensor already of that dtype is returned as it is.
        return self if self.dtype == dtype else self.to(dtype)

    def float(self, memory_format: Any = None) -> Tensor:
        return self._converted(_C.float32)

    def double(self, memory_format: Any = None) -> Tensor:
        return self._converted(_C.float64)

    def half(self, memory_format: Any = None) -> Tensor:
        return self._converted(_C.float16)

    def bfloat16(self, memory_format: Any = None) -> Tensor:
        return self._converted(_C.bfloat16)

    def long(self, memory_format: Any = None) -> Tensor:
        return self._converted(_C.int64)

    def int(self, memory_format: Any = None) -> Tensor:
        return self._converted(_C.int32)

    def short(self, memory_format: Any = None) -> Tensor:
        return self._converted(_C.int16)

    def char(self, memory_format: Any = None) -> Tensor:
        return self._converted(_C.int8)

    def byte(self, memory_format: Any = None) -> Tensor:
        return self._converted(_C.uint8)

    def bool(self, memory_format: Any = None) -> Tensor:
        return self._converted(_C.bool)

    # ------------------------------------------------------------ new tensors like this one
    def new_tensor(self, data: Any, dtype: Optional[_C.dtype] = None, device: DeviceLike = None,
                   requires_grad: _bool = False) -> Tensor:
        return _new_tensor(data, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)

    def _new(self, factory: Any, size: tuple, dtype: Optional[_C.dtype], device: DeviceLike,
             requires_grad: _bool) -> Tensor:
        if len(size) == 1 and isinstance(size[0], (list, tuple)):
            size = tuple(size[0])
        return factory(size, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)

    def new_zeros(self, *size: Any, dtype: Optional[_C.dtype] = None, device: DeviceLike = None,
                  requires_grad: _bool = False) -> Tensor:
        return self._new(_C.zeros, size, dtype, device, requires_grad)

    def new_ones(self, *size: Any, dtype: Optional[_C.dtype] = None, device: DeviceLike = None,
                 requires_grad: _bool = False) -> Tensor:
        return self._new(_C.ones, size, dtype, device, requires_grad)

    def new_empty(self, *size: Any, dtype: Optional[_C.dtype] = None, device: DeviceLike = None,
                  requires_grad: _bool = False) -> Tensor:
        return self._new(_C.empty, size, dtype, device, requires_grad)

    def new_full(self, size: Sequence[_int], fill_value: Union[_int, _float, _bool], dtype: Optional[_C.dtype] = None,
                 device: DeviceLike = None, requires_grad: _bool = False) -> Tensor:
        return _C.full(size, fill_value, dtype=dtype or self.dtype, device=device or self.device,
                       requires_grad=requires_grad)

    # ------------------------------------------------------------ pickling and copies
    def share_memory_(self) -> Tensor:
        """Moves the underlying storage to shared memory (a no-op if it is there already)."""
        self.untyped_storage().share_memory_()
        return self

    def is_shared(self) -> _bool:
        """Checks if tensor is in shared memory."""
        return self.untyped_storage().is_shared()

    def _instance_state(self) -> Optional[dict]:
        """The attributes set on this tensor object (what pickling carries besides the data)."""
        return self.__dict__ or None

    def __reduce_ex__(self, protocol: SupportsIndex) -> tuple:
        # The storage object is one per storage, so pickle's memo writes it once
        # per pickle and views of it unpickle as views of one storage.
        args = (self.untyped_storage(), self.storage_offset(), tuple(self.size()), self.stride(), self.dtype,
                self.requires_grad)
        state = self._instance_state()
        if type(self) is Tensor and not state:
            return (_utils._rebuild_tensor_v2, args)
        return (_utils._rebuild_from_type, (_utils._rebuild_tensor_v2, type(self), args, state))

    def __deepcopy__(self, memo: dict) -> Tensor:
        # As PyTorch: the data is copied once per storage (the memo holds the
        # storage), so tensors sharing memory (tied weights) share the copy.
        if not self.is_leaf:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) support the deepcopy "
                               "protocol at the moment.")
        if id(self) in memo:
            return memo[id(self)]
        storage = copy.deepcopy(self.untyped_storage(), memo)
        new = _C._tensor_from_storage(storage, self.storage_offset(), tuple(self.size()), self.stride(), self.dtype)
        if type(self) is not Tensor:
            new = Tensor._make_subclass(type(self), new, False)
        if self.requires_grad:
            new.requires_grad_(True)
        if self.grad is not None:
            new.grad = copy.deepcopy(self.grad, memo)
        state = self._instance_state()
        if state:
            new.__dict__.update(copy.deepcopy(state, memo))
        memo[id(self)] = new
        return new


_C._set_tensor_class(Tensor)
