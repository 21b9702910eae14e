"""Stochastic gradient descent (PyTorch's torch.optim.SGD)."""
from __future__ import annotations

from typing import Any, Optional

import ember

from .. import _C
from .optimizer import (_DIFFERENTIABLE_DOC, _MAXIMIZE_DOC, _GroupStepOptimizer, _check_fused_foreach, _check_lr,
                        _check_nonnegative, _docstring, _lr_doc, _to_scalar, _use_multi_tensor)

__all__ = ["SGD", "sgd"]

_FUSED_DOC = ("foreach, fused (bool, optional): the C++ multi-tensor update of the group's CPU tensors, the default "
              "(None); foreach=False runs a loop of ember ops")


class SGD(_GroupStepOptimizer):
    __doc__ = _docstring(
        "Implements stochastic gradient descent (optionally with momentum), as PyTorch's.", _lr_doc(1e-3),
        "momentum (float, optional): momentum factor (default: 0)",
        "dampening (float, optional): dampening for momentum (default: 0)",
        "weight_decay (float, optional): weight decay (L2 penalty) (default: 0)",
        "nesterov (bool, optional): enables Nesterov momentum (default: False)", _MAXIMIZE_DOC, _FUSED_DOC,
        _DIFFERENTIABLE_DOC)
    _group_defaults = dict(nesterov=False, maximize=False, foreach=None, differentiable=False, fused=False)

    def __init__(self, params: Any, lr: Any = 1e-3, momentum: float = 0, dampening: float = 0,
                 weight_decay: float = 0, nesterov: bool = False, *, maximize: bool = False,
                 foreach: Optional[bool] = None, differentiable: bool = False, fused: Optional[bool] = None) -> None:
        _check_lr(lr)
        _check_nonnegative("momentum", momentum)
        _check_nonnegative("weight_decay", weight_decay)
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                        nesterov=nesterov, maximize=maximize, foreach=foreach, differentiable=differentiable,
                        fused=fused)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)
        _check_fused_foreach(fused, foreach, differentiable)
        if fused:
            self._step_supports_amp_scaling = True  # GradScaler leaves the unscaling to step (PyTorch's fused path)

    def _update_group(self, group: dict) -> None:
        params = [p for p in group["params"] if p.grad is not None]
        momentum_buffer_list = [self.state[p].get("momentum_buffer") for p in params] if group["momentum"] else []
        sgd(params, [p.grad for p in params], momentum_buffer_list, weight_decay=group["weight_decay"],
            momentum=group["momentum"], lr=group["lr"], dampening=group["dampening"], nesterov=group["nesterov"],
            maximize=group["maximize"], foreach=group["foreach"], fused=group["fused"],
            differentiable=group["differentiable"])
        for p, buf in zip(params, momentum_buffer_list):
            self.state[p]["momentum_buffer"] = buf


def sgd(params: list, d_p_list: list, momentum_buffer_list: list, *, weight_decay: float, momentum: float,
        lr: Any, dampening: float, nesterov: bool, maximize: bool, foreach: Optional[bool] = None,
        fused: Optional[bool] = None, differentiable: bool = False) -> None:
    r"""Functional API that performs SGD algorithm computation (fills `momentum_buffer_list`'s Nones)."""
    lr = _to_scalar(lr)
    if isinstance(lr, ember.Tensor):
        lr = lr.item()
    kwargs = dict(weight_decay=weight_decay, momentum=momentum, lr=lr, dampening=dampening, nesterov=nesterov,
                  maximize=maximize)
    if params and _use_multi_tensor("_fused_sgd", params + d_p_list, foreach, fused, differentiable):
        _multi_tensor_sgd(params, d_p_list, momentum_buffer_list, **kwargs)
    else:
        _single_tensor_sgd(params, d_p_list, momentum_buffer_list, **kwargs)


def _single_tensor_sgd(params: list, grads: list, momentum_buffer_list: list, *, weight_decay: float,
                       momentum: float, lr: float, dampening: float, nesterov: bool, maximize: bool) -> None:
    for i, param in enumerate(params):
        grad = grads[i] if not maximize else -grads[i]
        if weight_decay != 0:
            grad = grad.add(param, alpha=weight_decay)
        if momentum != 0:
            buf = momentum_buffer_list[i]
            if buf is None:
                buf = grad.detach().clone()
                momentum_buffer_list[i] = buf
            else:
                buf.mul_(momentum).add_(grad, alpha=1 - dampening)
            grad = grad.add(buf, alpha=momentum) if nesterov else buf
        param.add_(grad, alpha=-lr)


def _multi_tensor_sgd(params: list, grads: list, momentum_buffer_list: list, *, weight_decay: float,
                      momentum: float, lr: float, dampening: float, nesterov: bool, maximize: bool) -> None:
    # One C++ pass per tensor; a missing buffer is made here and filled with the step's gradient there.
    fresh = []
    if momentum != 0:
        for i, buf in enumerate(momentum_buffer_list):
            if buf is None:
                momentum_buffer_list[i] = ember.empty_like(params[i])
                fresh.append(i)
    _C._fused_sgd(params, grads, momentum_buffer_list if momentum != 0 else [], fresh,
                  weight_decay=weight_decay, momentum=momentum, lr=lr, dampening=dampening, nesterov=nesterov,
                  maximize=maximize)
