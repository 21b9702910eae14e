"""Tensors from Python data and NumPy arrays, and the *_like constructors."""
from __future__ import annotations

import builtins
from typing import TYPE_CHECKING, Any, Optional, Union, cast

import numpy as np

from . import _C
from ._C import TensorBase

if TYPE_CHECKING:
    from ._C import device as _device, dtype as _dtype
    from ._tensor import Tensor

    DeviceLike = Union[str, _device, int, None]

_NP_TO_EMBER = {
    np.dtype(np.bool_): _C.bool, np.dtype(np.uint8): _C.uint8, np.dtype(np.int8): _C.int8,
    np.dtype(np.int16): _C.int16, np.dtype(np.int32): _C.int32, np.dtype(np.int64): _C.int64,
    np.dtype(np.float16): _C.float16, np.dtype(np.float32): _C.float32, np.dtype(np.float64): _C.float64,
}
EMBER_TO_NP = {v: k for k, v in _NP_TO_EMBER.items()}


# A tensor sharing memory with a NumPy array (kept alive by it), in C++ for the DataLoader's
# per-item cost; its checks, messages and the read-only warning are torch's.
from_numpy = _C.from_numpy


def _leaf_dtype(x):
    """The dtype one element of nested data stands for, as PyTorch infers it."""
    if isinstance(x, TensorBase):
        return x.dtype
    if isinstance(x, (np.ndarray, np.generic)):
        dt = _NP_TO_EMBER.get(x.dtype)
        if dt is None:
            raise TypeError(f"can't convert np.ndarray of type {x.dtype}. The only supported types are: "
                            "float64, float32, float16, int64, int32, int16, int8, uint8, and bool.")
        return dt
    if isinstance(x, builtins.bool):
        return _C.bool
    if isinstance(x, builtins.int):
        return _C.int64
    if isinstance(x, builtins.float):
        return _C.get_default_dtype()
    if isinstance(x, str):
        raise TypeError("new(): invalid data type 'str'")
    raise RuntimeError(f"Could not infer dtype of {type(x).__name__}")


def _infer_dtype(data):
    """PyTorch's inference for nested data: the promotion of every element's own dtype
    (bool -> bool, int -> int64, float -> the default dtype, NumPy scalars, arrays and
    tensors -> their dtype); an empty sequence gives the default dtype."""
    result = None
    stack = [data]
    while stack:
        x = stack.pop()
        if isinstance(x, (list, tuple)):
            stack.extend(x)
            continue
        dt = _leaf_dtype(x)
        result = dt if result is None else _C.promote_types(result, dt)
    return _C.get_default_dtype() if result is None else result


def _plain(data):
    # Nested lists of 0-d tensors become numbers so NumPy can read them.
    if isinstance(data, (list, tuple)):
        return [_plain(x) for x in data]
    if isinstance(data, TensorBase):
        return data.tolist()
    return data


def set_default_device(device: DeviceLike) -> None:
    """Factories called without `device=` (zeros, rand, arange, tensor, ...) allocate on `device`
    from now on, in this thread; None restores the CPU. `with ember.device(d):` does it for a block."""
    _C._set_default_device(None if device is None else _C.device(device))


def get_default_device() -> _device:
    """The device factories use when given none (a CUDA device with its index)."""
    d = _C._get_default_device()
    if d is None:
        return _C.device("cpu")
    if d.type == "cuda" and d.index is None:
        from . import cuda
        return _C.device("cuda", cuda.current_device())
    return d


def tensor(data: Any, dtype: Optional[_dtype] = None, device: DeviceLike = None, requires_grad: bool = False,
           pin_memory: bool = False) -> Tensor:
    """A new tensor holding a copy of `data` (a number, nested sequence, array or tensor)."""
    if isinstance(data, TensorBase):
        t = data.detach().clone()
    elif isinstance(data, np.ndarray):
        t = from_numpy(np.array(data, copy=True, order="C"))
    else:
        inferred = dtype or _infer_dtype(data)
        np_dtype = EMBER_TO_NP.get(inferred, np.dtype(np.float32))
        with np.errstate(over="ignore"):  # a float beyond float32's range becomes inf, as in PyTorch
            arr = np.array(_plain(data), dtype=np_dtype)
        t = from_numpy(arr)
        if inferred not in EMBER_TO_NP:
            t = t.to(inferred)
    if dtype is not None and t.dtype != dtype:
        t = t.to(dtype)
    if device is None:
        device = _C._get_default_device()
    if device is not None:
        t = t.to(device)
    if requires_grad:
        t.requires_grad_(True)
    return t


def as_tensor(data: Any, dtype: Optional[_dtype] = None, device: DeviceLike = None) -> Tensor:
    """`data` as a tensor, sharing memory when it already is one (or a NumPy array) of that dtype."""
    if isinstance(data, TensorBase):
        t = cast("Tensor", data)
    elif isinstance(data, np.ndarray) and data.dtype in _NP_TO_EMBER:
        t = from_numpy(data)  # as PyTorch: shares memory, so negative strides raise ValueError
    else:
        return tensor(data, dtype=dtype, device=device)
    if dtype is not None and t.dtype != dtype:
        t = t.to(dtype)
    if device is None:
        device = _C._get_default_device()
    if device is not None:
        t = t.to(device)
    return t


def _check_input(name, t):
    if not isinstance(t, TensorBase):
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {type(t).__name__}")


def _like(fn, t, dtype, device, requires_grad, *args):
    _check_input(fn.__name__ + "_like", t)
    return fn(*args, t.shape, dtype=dtype or t.dtype, device=device or t.device, requires_grad=requires_grad)


def zeros_like(input: Tensor, *, dtype: Optional[_dtype] = None, device: DeviceLike = None,
               requires_grad: bool = False, memory_format: Any = None) -> Tensor:
    return _like(_C.zeros, input, dtype, device, requires_grad)


def ones_like(input: Tensor, *, dtype: Optional[_dtype] = None, device: DeviceLike = None,
              requires_grad: bool = False, memory_format: Any = None) -> Tensor:
    return _like(_C.ones, input, dtype, device, requires_grad)


def empty_like(input: Tensor, *, dtype: Optional[_dtype] = None, device: DeviceLike = None,
               requires_grad: bool = False, memory_format: Any = None) -> Tensor:
    return _like(_C.empty, input, dtype, device, requires_grad)


def full_like(input: Tensor, fill_value: Union[int, float, bool], *, dtype: Optional[_dtype] = None,
              device: DeviceLike = None, requires_grad: bool = False, memory_format: Any = None) -> Tensor:
    _check_input("full_like", input)
    return _C.full(input.shape, fill_value, dtype=dtype or input.dtype, device=device or input.device,
                   requires_grad=requires_grad)


def rand_like(input: Tensor, *, dtype: Optional[_dtype] = None, device: DeviceLike = None,
              requires_grad: bool = False, memory_format: Any = None) -> Tensor:
    return _like(_C.rand, input, dtype, device, requires_grad)


def randn_like(input: Tensor, *, dtype: Optional[_dtype] = None, device: DeviceLike = None,
               requires_grad: bool = False, memory_format: Any = None) -> Tensor:
    return _like(_C.randn, input, dtype, device, requires_grad)


def randint_like(input: Tensor, low: int = 0, high: Optional[int] = None, *, dtype: Optional[_dtype] = None,
                 device: DeviceLike = None, requires_grad: bool = False) -> Tensor:
    _check_input("randint_like", input)
    if high is None:
        low, high = 0, low
    return _C.randint(low, high, input.shape, dtype=dtype or input.dtype, device=device or input.device,
                      requires_grad=requires_grad)


def is_tensor(obj: object) -> bool:
    return isinstance(obj, TensorBase)


def is_floating_point(input: Tensor) -> bool:
    _check_input("is_floating_point", input)
    return input.dtype.is_floating_point


def numel(input: Tensor) -> int:
    _check_input("numel", input)
    return input.numel()


def result_type(tensor1: Union[Tensor, int, float, bool], tensor2: Union[Tensor, int, float, bool]) -> _dtype:
    """The dtype an op on the two operands computes in (PyTorch's promotion rules)."""
    def probe(x):
        # An empty stand-in with the same rank class, so nothing is computed.
        return x.narrow(-1, 0, 0) if isinstance(x, TensorBase) and x.dim() > 0 else x
    if not isinstance(tensor1, TensorBase) and not isinstance(tensor2, TensorBase):
        # Two numbers: the first as a 0-d tensor of its inferred dtype gives the same answer.
        tensor1 = tensor(tensor1)
    a, b = probe(tensor1), probe(tensor2)
    return (_C.mul(cast("Tensor", a), b) if isinstance(a, TensorBase) else _C.mul(cast("Tensor", b), a)).dtype


_C._set_index_tensor_from(
    lambda data: tensor(data, dtype=_C.int64) if isinstance(data, (list, tuple)) and not data else tensor(data))
