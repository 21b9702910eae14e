"""Parameter and Buffer: the tensors a Module registers when they are assigned
to its attributes. As PyTorch's torch.nn.parameter."""
from __future__ import annotations

import sys
from collections import OrderedDict
from typing import Any, Optional

from .. import _C, _utils
from .._tensor import Tensor

__all__ = ["Parameter", "UninitializedParameter", "is_lazy", "Buffer", "UninitializedBuffer",
           "UninitializedTensorMixin"]


class _FlagMeta(type(Tensor)):  # type: ignore[misc]
    # As PyTorch's _ParameterMeta and _BufferMeta: a tensor carrying the class's own flag
    # attribute (`_is_param`, `_is_buffer`) counts as an instance.
    def __instancecheck__(cls, instance: Any) -> bool:
        flag = cls.__dict__.get("_instance_flag")
        if flag and isinstance(instance, Tensor) and getattr(instance, flag, False):
            return True
        return super().__instancecheck__(instance)


class Parameter(Tensor, metaclass=_FlagMeta):
    """A kind of Tensor that is to be considered a module parameter: assigned as a
    Module attribute, it is added to the module's parameters.

    Args:
        data (Tensor): parameter tensor.
        requires_grad (bool, optional): if the parameter requires gradient (even
            in no_grad mode). Default: `True`
    """

    def __new__(cls, data: Optional[Tensor] = None, requires_grad: bool = True) -> Parameter:
        if data is None:
            data = _C.empty(0)
        return Tensor._make_subclass(cls, data, requires_grad)

    def __deepcopy__(self, memo: dict) -> Parameter:
        # As PyTorch: a copy of the data, without its grad.
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self.data.clone(), self.requires_grad)
        memo[id(self)] = result
        return result

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    def __reduce_ex__(self, proto: Any) -> tuple:
        state = self._instance_state()
        hooks: OrderedDict = OrderedDict()
        if not state:
            return (_utils._rebuild_parameter, (self.data, self.requires_grad, hooks))
        return (_utils._rebuild_parameter_with_state, (self.data, self.requires_grad, hooks, state))


class Buffer(Tensor, metaclass=_FlagMeta):
    """A kind of Tensor that is module state but not a parameter (as BatchNorm's
    running_mean): assigned as a Module attribute, it is added to the module's buffers.

    Args:
        data (Tensor): buffer tensor.
        persistent (bool, optional): whether the buffer is part of the module's
            :attr:`state_dict`. Default: ``True``
    """

    _instance_flag = "_is_buffer"  # Buffer(t) returns a plain Tensor with this flag set
    persistent: bool

    def __new__(cls, data: Optional[Tensor] = None, *, persistent: bool = True) -> Tensor:  # type: ignore[misc]
        if data is None:
            data = _C.empty(0)
        t = data.detach().requires_grad_(data.requires_grad)
        t.__dict__.update(persistent=persistent, _is_buffer=True)
        return t


class UninitializedTensorMixin:
    """What an uninitialized (lazy) parameter or buffer does: it holds no data until
    `materialize(shape)` gives it some and turns it into `cls_to_become`."""

    cls_to_become: type
    data: Tensor
    requires_grad: bool

    def materialize(self, shape: Any, device: Any = None, dtype: Any = None) -> None:
        """Gives the tensor `shape` (uninitialized memory), on its device and of its dtype
        unless `device`/`dtype` say otherwise, and makes it a `cls_to_become`."""
        if device is None:
            device = self.data.device
        if dtype is None:
            dtype = self.data.dtype
        self.data = _C.empty(shape, device=device, dtype=dtype)
        self.__class__ = self.cls_to_become

    @property
    def shape(self) -> Any:
        raise RuntimeError(
            "Can't access the shape of an uninitialized parameter or buffer. "
            "This error usually happens in `load_state_dict` when trying to load "
            "an uninitialized parameter into an initialized one. "
            "Call `forward` to initialize the parameters before accessing their attributes.")

    def share_memory_(self) -> Any:
        raise RuntimeError(
            "Can't share memory on an uninitialized parameter or buffer. "
            "Call `forward` to initialize the parameters before calling "
            "`module.share_memory()`.")

    def __repr__(self) -> str:
        return f"<{self.__class__.__name__}>"

    def __reduce_ex__(self, proto: Any) -> tuple:
        return (self.__class__, (self.requires_grad,))


def is_lazy(param: Any) -> bool:
    """Returns whether ``param`` is an ``UninitializedParameter`` or ``UninitializedBuffer``."""
    return isinstance(param, UninitializedTensorMixin)


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """A parameter whose shape is not known yet (of the Lazy* modules); `materialize`
    turns it into a Parameter."""

    cls_to_become = Parameter

    def __new__(cls, requires_grad: bool = True, device: Any = None, dtype: Any = None) -> UninitializedParameter:
        data = _C.empty(0, device=device, dtype=dtype)
        return Tensor._make_subclass(cls, data, requires_grad)

    def __deepcopy__(self, memo: dict) -> UninitializedParameter:
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self.requires_grad, self.data.device, self.data.dtype)
        memo[id(self)] = result
        return result


class _MaterializedBuffer(Tensor):
    """What an UninitializedBuffer becomes (PyTorch: a Tensor). ember.Tensor's own objects are
    allocated outside the cyclic GC, so a subclass object cannot take Tensor as __class__."""


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    """A buffer whose shape is not known yet; `materialize` turns it into a Tensor."""

    cls_to_become = _MaterializedBuffer

    def __new__(cls, requires_grad: bool = False, device: Any = None, dtype: Any = None,
                persistent: bool = True) -> UninitializedBuffer:
        data = _C.empty(0, device=device, dtype=dtype)
        ret = Tensor._make_subclass(cls, data, requires_grad)
        ret.__dict__.update(persistent=persistent, _is_buffer=True)
        return ret


if "ember.multiprocessing.reductions" in sys.modules:  # loaded first: Parameters travel through shared memory too
    sys.modules["ember.multiprocessing.reductions"].register_parameter(Parameter)
