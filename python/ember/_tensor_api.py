"""Tensor methods and attributes PyTorch has beyond the ops: the layout and device flags, the
predicates (is_signed, is_nonzero, ...), conj/resolve_* of real tensors, the legacy `new`,
fill_diagonal_, apply_/map_/map2_, dim_order and pin_memory, and the methods of the Python
composites. `install` copies them into ember.Tensor (whose bases stay torch's: TensorBase, object)."""
from __future__ import annotations

from builtins import bool as _bool
from typing import TYPE_CHECKING, Any, Callable, Optional

from . import _C, _layout
from ._creation import tensor as _tensor


def _signed(dtype: _C.dtype) -> _bool:
    return dtype not in (_C.uint8, _C.bool)


def _flag(value: _bool) -> property:
    return property(lambda self: value)


# For mypy the mixin is a TensorBase (its methods use the tensor's); at run time a plain base of ember.Tensor.
if TYPE_CHECKING:
    from ._C import TensorBase as _Base
else:
    _Base = object


class TensorApi(_Base):
    """The definitions install() copies into ember.Tensor (nothing here shadows TensorBase's own names)."""

    layout = property(lambda self: _layout.strided, doc="The memory layout: always ember.strided.")
    is_cpu = property(lambda self: self.device.type == "cpu", doc="Is True if the Tensor is stored on the CPU.")
    # ember has only dense strided tensors on CPU (and CUDA): every other kind is False, as torch's are for these.
    is_sparse = is_sparse_csr = is_quantized = is_meta = is_mkldnn = is_nested = _flag(False)
    is_xla = is_xpu = is_mps = is_vulkan = is_ipu = is_maia = is_mtia = _flag(False)

    def is_signed(self) -> _bool:
        """Whether the dtype is signed (floating types and int8..int64)."""
        return _signed(self.dtype)

    def is_nonzero(self) -> _bool:
        """The value of a one-element tensor as a bool."""
        n = self.numel()
        if n == 0:
            raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
        if n > 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return _bool(self.item() != 0)

    def is_same_size(self, other: Any) -> _bool:
        return tuple(self.shape) == tuple(other.shape)

    def is_set_to(self, tensor: Any) -> _bool:
        """Whether both tensors view the same storage with the same offset, sizes and strides."""
        return (self.untyped_storage() is tensor.untyped_storage() and self.storage_offset() == tensor.storage_offset()
                and tuple(self.shape) == tuple(tensor.shape) and self.stride() == tensor.stride())

    def is_inference(self) -> _bool:
        """ember has no inference tensors (inference_mode works as no_grad): always False."""
        return False

    def is_conj(self) -> _bool:
        return False

    def is_neg(self) -> _bool:
        return False

    def is_pinned(self, device: Any = None) -> _bool:
        return False

    # Real tensors: conjugation is the identity, and torch returns the tensor itself.
    def conj(self) -> Any:
        return self

    def conj_physical(self) -> Any:
        return self

    def conj_physical_(self) -> Any:
        return self

    def resolve_conj(self) -> Any:
        return self

    def resolve_neg(self) -> Any:
        return self

    def pin_memory(self, device: Any = None) -> Any:
        # As torch without an accelerator: pinned memory needs one.
        raise RuntimeError("Cannot access accelerator device when none is available.")

    def dim_order(self, *, ambiguity_check: Any = False) -> tuple:
        """The dims from outermost to innermost in memory, as torch orders them: by stride, size-1 and
        stride-0 dims left where they are (an insertion sort whose ambiguous comparisons do not swap)."""
        if not isinstance(ambiguity_check, (_bool, list)):
            raise ValueError("ambiguity_check should be a bool or a list of memory formats")
        ndim = self.dim()
        if ndim <= 1 or self.is_contiguous():
            return tuple(range(ndim))
        shape, strides = self.shape, self.stride()

        def should_swap(a: int, b: int) -> int:
            if strides[a] == 0 or strides[b] == 0:
                return 0
            if strides[a] != strides[b]:
                return -1 if strides[a] < strides[b] else 1
            return 1 if shape[a] > shape[b] else 0

        perm = list(reversed(range(ndim)))  # innermost first
        for i in range(1, ndim):
            j = i
            for k in reversed(range(i)):
                order = should_swap(perm[k], perm[j])
                if order > 0:
                    perm[k], perm[j] = perm[j], perm[k]
                    j = k
                elif order < 0:
                    break
        return tuple(reversed(perm))

    def new(self, *args: Any, device: Any = None) -> Any:
        """The legacy constructor: new() is empty, new(2, 3) uninitialized, new(data) a copy of data,
        new(tensor) an alias of tensor, new(storage) a 1-D tensor over it; all of self's dtype."""
        device = self.device if device is None else _C.device(device)
        if len(args) == 1 and isinstance(args[0], _C.TensorBase):
            other = args[0]
            if other.dtype != self.dtype or other.device != device:
                raise TypeError(f"new(): expected a tensor of dtype {self.dtype} on {device}, got {other.dtype} "
                                f"on {other.device}")
            return _C._tensor_from_storage(other.untyped_storage(), other.storage_offset(), tuple(other.shape),
                                           other.stride(), other.dtype)
        if len(args) == 1 and isinstance(args[0], _C.UntypedStorage):
            storage = args[0]
            return _C._tensor_from_storage(storage, 0, (storage.nbytes() // self.element_size(),), (1,), self.dtype)
        if len(args) == 1 and not isinstance(args[0], int) and not _is_size(args[0]):
            return _tensor(args[0], dtype=self.dtype, device=device)
        size = tuple(args[0]) if len(args) == 1 and _is_size(args[0]) else (args or (0,))
        return _C.empty(size, dtype=self.dtype, device=device)

    def new_empty_strided(self, size: Any, stride: Any, *, dtype: Optional[_C.dtype] = None, device: Any = None,
                          requires_grad: _bool = False, **kwargs: Any) -> Any:
        from ._factories import empty_strided
        return empty_strided(size, stride, dtype=dtype or self.dtype, device=device or self.device,
                             requires_grad=requires_grad)

    def fill_diagonal_(self, fill_value: Any, wrap: _bool = False) -> Any:
        """Fills the main diagonal (every dim equal for > 2 dims); with wrap, a tall matrix's diagonal
        restarts every n + 1 rows, as NumPy's fill_diagonal."""
        if self.dim() < 2:
            raise RuntimeError("dimensions must larger than 1")
        rows, cols = self.shape[0], self.shape[1]
        if self.dim() > 2:
            if any(n != rows for n in self.shape):
                raise RuntimeError("all dimensions of input must be of equal length")
            idx = _C.arange(rows, device=self.device)
            return self.index_put_([idx] * self.dim(), _C.full((), fill_value, dtype=self.dtype, device=self.device))
        if wrap and rows > cols + 1:
            flat = _C.arange(0, rows * cols, cols + 1, device=self.device)
            row, col = flat // cols, flat % cols
        else:
            row = col = _C.arange(min(rows, cols), device=self.device)
        return self.index_put_([row, col], _C.full((), fill_value, dtype=self.dtype, device=self.device))

    def apply_(self, callable: Callable[[Any], Any]) -> Any:
        """Replaces each element x by callable(x) (a Python call per element; CPU only)."""
        return _map_python(self, "apply_", callable)

    def map_(self, tensor: Any, callable: Callable[[Any, Any], Any]) -> Any:
        """Replaces each element x by callable(x, y), y the element of `tensor` (broadcast to self)."""
        return _map_python(self, "map_", callable, tensor)

    def map2_(self, x: Any, y: Any, callable: Callable[[Any, Any, Any], Any]) -> Any:
        """Replaces each element s by callable(s, a, b), a and b from x and y (broadcast to self)."""
        return _map_python(self, "map2_", callable, x, y)


def _is_size(value: Any) -> _bool:
    return isinstance(value, tuple) and type(value).__name__ == "Size"


def _map_python(self: Any, name: str, fn: Callable, *others: Any) -> Any:
    if self.device.type != "cpu":
        raise TypeError(f"{name} is only implemented on CPU tensors")
    if self.requires_grad:
        raise RuntimeError(f"Can't call {name}() on Variable that requires grad. Use var.detach().{name}() instead.")
    columns = [self.reshape(-1).tolist()] + [o.expand(self.shape).reshape(-1).tolist() for o in others]
    values = [fn(*args) for args in zip(*columns)]
    # Each result is converted to self's dtype as PyTorch's does (a float into an int tensor truncates).
    self.copy_(_tensor(values, dtype=_C.float64 if self.is_floating_point() else None).reshape(self.shape)
               if values else self)
    return self


def _method(fn: Callable, name: str) -> Callable:
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        return fn(self, *args, **kwargs)
    method.__name__ = method.__qualname__ = name
    method.__doc__ = fn.__doc__
    return method


def _in_place(fn: Callable, name: str) -> Callable:
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        return self.copy_(fn(self, *args, **kwargs))
    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"In-place {name[:-1]}."
    return method


class _LazyMethod:
    """A Tensor method made from a function of an api-gaps module, which loads on the method's first
    access (keeping `import ember` fast); the method then replaces this descriptor in ember.Tensor."""

    def __init__(self, module: str, function: str, make: Optional[Callable] = _method) -> None:
        self.module, self.function, self.make = module, function, make
        self.method: Optional[Callable] = None

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        if self.method is None:
            import importlib
            from ._tensor import Tensor
            fn = getattr(importlib.import_module(f"ember.{self.module}"), self.function)
            self.method = fn if self.make is None else self.make(fn, self.name)
            setattr(Tensor, self.name, self.method)
        return self.method if obj is None else self.method.__get__(obj, objtype)


def _from(module: str, names: str, make: Optional[Callable] = _method) -> dict:
    return {name: _LazyMethod(module, name, make) for name in names.split()}


# The methods of the Python composites: x.cov() is ember.cov(x), x.addr_(...) writes addr's result into x
# (recorded by autograd as a copy_); _tensor_view_ops' functions are methods already.
_LAZY_METHODS = {
    **_from("_composites", "dsplit hsplit vsplit addr"),
    **_from("_quantile", "quantile nanquantile"),
    **_from("_scatter_composites", "index_put index_reduce index_reduce_ select_scatter slice_scatter diagonal_scatter "
                                   "as_strided_scatter"),
    **_from("_legacy_linalg", "matrix_exp cholesky_solve cholesky_inverse triangular_solve svd qr orgqr ormqr solve "
                              "lstsq eig symeig"),
    **_from("_aliases", "adjoint split_with_sizes unsafe_chunk unsafe_split unsafe_split_with_sizes narrow_copy"),
    **_from("_typed_storage", "storage_type"),
    **_from("_tensor_view_ops", "squeeze_ unsqueeze_ transpose_ swapaxes_ swapdims_ as_strided_ resize_ resize_as_ "
                                "set_", None),
    "addr_": _LazyMethod("_composites", "addr", _in_place),
    "storage": _LazyMethod("_typed_storage", "tensor_storage"),
}


def _attach_function_methods() -> None:
    """Puts the lazy methods and every TensorApi member into ember.Tensor."""
    from ._tensor import Tensor
    for name, method in _LAZY_METHODS.items():
        method.__set_name__(Tensor, name)
        setattr(TensorApi, name, method)
    for name, member in vars(TensorApi).items():
        if not name.startswith("__"):
            assert name not in vars(Tensor), name  # Tensor's own Python methods win; none should collide
            setattr(Tensor, name, member)
