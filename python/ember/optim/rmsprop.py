"""RMSprop (PyTorch's torch.optim.RMSprop)."""
from __future__ import annotations

from typing import Any, Optional

import ember

from .optimizer import (_DIFFERENTIABLE_DOC, _LOOP_FLAGS_DOC, _MAXIMIZE_DOC, _WEIGHT_DECAY_DOC, _GroupStepOptimizer,
                        _check_lr, _check_nonnegative, _docstring, _eps_doc, _get_value, _lr_doc, _zero_step)

__all__ = ["RMSprop", "rmsprop"]


class RMSprop(_GroupStepOptimizer):
    __doc__ = _docstring(
        "Implements the RMSprop algorithm, as PyTorch's.", _lr_doc(1e-2),
        "alpha (float, optional): smoothing constant (default: 0.99)", _eps_doc(1e-8), _WEIGHT_DECAY_DOC,
        "momentum (float, optional): momentum factor (default: 0)",
        "centered (bool, optional): if True, compute the centered RMSProp, the gradient is normalized by an "
        "estimation of its variance", _LOOP_FLAGS_DOC, _MAXIMIZE_DOC, _DIFFERENTIABLE_DOC)
    _group_defaults = dict(momentum=0, centered=False, foreach=None, maximize=False, differentiable=False,
                           capturable=False)

    def __init__(self, params: Any, lr: Any = 1e-2, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0, momentum: float = 0, centered: bool = False, capturable: bool = False,
                 foreach: Optional[bool] = None, maximize: bool = False, differentiable: bool = False) -> None:
        _check_lr(lr)
        _check_nonnegative("epsilon", eps)
        _check_nonnegative("momentum", momentum)
        _check_nonnegative("weight_decay", weight_decay)
        _check_nonnegative("alpha", alpha)
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                        weight_decay=weight_decay, capturable=capturable, foreach=foreach, maximize=maximize,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def _update_group(self, group: dict) -> None:
        def init(p: ember.Tensor) -> dict:
            state = {"step": _zero_step(), "square_avg": ember.zeros_like(p)}
            if group["momentum"] > 0:
                state["momentum_buffer"] = ember.zeros_like(p)
            if group["centered"]:
                state["grad_avg"] = ember.zeros_like(p)
            return state

        params, states = self._with_grads(group, init)
        rmsprop(params, [p.grad for p in params], [s["square_avg"] for s in states],
                [s["grad_avg"] for s in states] if group["centered"] else [],
                [s["momentum_buffer"] for s in states] if group["momentum"] > 0 else [],
                [s["step"] for s in states], lr=group["lr"], alpha=group["alpha"], eps=group["eps"],
                weight_decay=group["weight_decay"], momentum=group["momentum"], centered=group["centered"],
                foreach=group["foreach"], maximize=group["maximize"], differentiable=group["differentiable"],
                capturable=group["capturable"])


def rmsprop(params: list, grads: list, square_avgs: list, grad_avgs: list, momentum_buffer_list: list,
            state_steps: list, foreach: Optional[bool] = None, maximize: bool = False, differentiable: bool = False,
            capturable: bool = False, *, lr: Any, alpha: float, eps: float, weight_decay: float, momentum: float,
            centered: bool) -> None:
    r"""Functional API that performs RMSprop algorithm computation."""
    lr = _get_value(lr)
    for i, param in enumerate(params):
        grad = grads[i] if not maximize else -grads[i]
        square_avg = square_avgs[i]
        state_steps[i] += 1
        if weight_decay != 0:
            grad = grad.add(param, alpha=weight_decay)
        square_avg.mul_(alpha).addcmul_(grad, grad, value=1 - alpha)
        if centered:
            grad_avg = grad_avgs[i]
            grad_avg.lerp_(grad, 1 - alpha)
            avg = square_avg.addcmul(grad_avg, grad_avg, value=-1).sqrt_()
        else:
            avg = square_avg.sqrt()
        avg = avg.add(eps) if differentiable else avg.add_(eps)
        if momentum > 0:
            buf = momentum_buffer_list[i]
            buf.mul_(momentum).addcdiv_(grad, avg)
            param.add_(buf, alpha=-lr)
        else:
            param.addcdiv_(grad, avg, value=-lr)
