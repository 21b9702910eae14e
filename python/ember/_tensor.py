"""The Python-level part of ember.Tensor: conversions, printing, autograd entry."""
import copy
import numbers

import numpy as np

from . import _C, _utils
from ._C import Tensor
from ._creation import EMBER_TO_NP, tensor as _new_tensor
from ._tensor_str import tensor_repr


class _ArrayView:
    """Exposes a CPU tensor's memory to NumPy; keeps the tensor alive."""

    def __init__(self, t):
        self._t = t
        dt = EMBER_TO_NP[t.dtype]
        item = t.element_size()
        self.__array_interface__ = {
            "shape": tuple(t.shape), "typestr": dt.str, "version": 3,
            "data": (t.data_ptr(), False),
            # A one-element dim never steps; its stride (from a slice step past the end) may not fit in bytes.
            "strides": tuple(s * item if n > 1 or abs(s * item) < 2**63 else 0 for s, n in zip(t.stride(), t.shape)),
        }


def numpy(self, *, force=False):
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


def tolist(self):
    t = self.detach()
    if t.device.type != "cpu":
        t = t.cpu()
    if t.dtype == _C.bfloat16:
        t = t.float()
    return numpy(t).tolist()


def __array__(self, dtype=None, copy=None):
    # As PyTorch: a tensor that requires grad is refused (numpy() raises).
    # NumPy 2 passes copy=True from np.array(t) and trusts the result to be a copy.
    a = numpy(self)
    if dtype is not None:
        return a.astype(dtype, copy=bool(copy))
    return a.copy() if copy else a


def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
    """Computes the gradient of this tensor with respect to graph leaves."""
    if retain_graph is None:
        retain_graph = create_graph
    _C._backward([self], [gradient], retain_graph, create_graph)


def __iter__(self):
    if self.dim() == 0:
        raise TypeError("iteration over a 0-d tensor")
    return iter(self.unbind(0))


def __reversed__(self):
    return iter(reversed(self.unbind(0)))


def __format__(self, spec):
    if self.dim() == 0:
        return self.item().__format__(spec)
    return object.__format__(self, spec)


def __contains__(self, element):
    if not isinstance(element, (Tensor, numbers.Number)):
        raise RuntimeError(f"Tensor.__contains__ only supports Tensor or scalar, but you passed in a "
                           f"{type(element)}.")
    return bool((self == element).any().item())


def _converter(dt):
    def convert(self, memory_format=None):
        # As in PyTorch, a tensor already of that dtype is returned as it is.
        return self if self.dtype == dt else self.to(dt)
    convert.__name__ = str(dt).split(".")[-1]
    return convert


def cpu(self, memory_format=None):
    return self if self.device.type == "cpu" else self.to("cpu")


def cuda(self, device=None, non_blocking=False, memory_format=None):
    return self.to("cuda" if device is None else device, non_blocking=non_blocking)


def type_as(self, other):
    if not isinstance(other, Tensor):
        raise TypeError(f"type_as(): argument 'other' (position 1) must be Tensor, not {type(other).__name__}")
    return self.to(other.dtype)


def new_tensor(self, data, dtype=None, device=None, requires_grad=False):
    return _new_tensor(data, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)


def _new_factory(fn):
    def new(self, *size, dtype=None, device=None, requires_grad=False):
        if len(size) == 1 and isinstance(size[0], (list, tuple)):
            size = tuple(size[0])
        return fn(size, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)
    return new


def new_full(self, size, fill_value, dtype=None, device=None, requires_grad=False):
    return _C.full(size, fill_value, dtype=dtype or self.dtype, device=device or self.device,
                   requires_grad=requires_grad)


def _instance_state(self):
    """The attributes set on this tensor object (what pickling carries besides the data)."""
    return self.__dict__ or None


def __reduce_ex__(self, protocol):
    # The storage object is one per storage, so pickle's memo writes it once
    # per pickle and views of it unpickle as views of one storage.
    args = (self.untyped_storage(), self.storage_offset(), tuple(self.size()), self.stride(), self.dtype,
            self.requires_grad)
    state = _instance_state(self)
    if type(self) is Tensor and not state:
        return (_utils._rebuild_tensor_v2, args)
    return (_utils._rebuild_from_type, (_utils._rebuild_tensor_v2, type(self), args, state))


def __deepcopy__(self, memo):
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
    state = _instance_state(self)
    if state:
        new.__dict__.update(copy.deepcopy(state, memo))
    memo[id(self)] = new
    return new


_METHODS = dict(
    numpy=numpy, tolist=tolist, __array__=__array__, backward=backward, __iter__=__iter__,
    __reversed__=__reversed__, __format__=__format__, __contains__=__contains__, __repr__=tensor_repr,
    __str__=tensor_repr, cpu=cpu, cuda=cuda, type_as=type_as, new_tensor=new_tensor, new_full=new_full,
    new_zeros=_new_factory(_C.zeros), new_ones=_new_factory(_C.ones), new_empty=_new_factory(_C.empty),
    float=_converter(_C.float32), double=_converter(_C.float64), half=_converter(_C.float16),
    bfloat16=_converter(_C.bfloat16), long=_converter(_C.int64), int=_converter(_C.int32),
    short=_converter(_C.int16), char=_converter(_C.int8), byte=_converter(_C.uint8), bool=_converter(_C.bool),
    __deepcopy__=__deepcopy__, __reduce_ex__=__reduce_ex__, __array_priority__=1000,
)
for _name, _fn in _METHODS.items():
    setattr(Tensor, _name, _fn)
Tensor.__module__ = "ember"
