"""Adadelta (PyTorch's torch.optim.Adadelta)."""
from __future__ import annotations

from typing import Any, Optional

import ember

from .optimizer import (_DIFFERENTIABLE_DOC, _LOOP_FLAGS_DOC, _MAXIMIZE_DOC, _WEIGHT_DECAY_DOC, _GroupStepOptimizer,
                        _check_lr, _check_nonnegative, _docstring, _eps_doc, _fresh_state, _get_value)

__all__ = ["Adadelta", "adadelta"]


class Adadelta(_GroupStepOptimizer):
    __doc__ = _docstring(
        "Implements the Adadelta algorithm, as PyTorch's.",
        "lr (float, Tensor, optional): coefficient that scale delta before it is applied to the parameters "
        "(default: 1.0)",
        "rho (float, optional): coefficient used for computing a running average of squared gradients (default: 0.9)",
        _eps_doc(1e-6), _WEIGHT_DECAY_DOC, _LOOP_FLAGS_DOC, _MAXIMIZE_DOC, _DIFFERENTIABLE_DOC)
    _group_defaults = dict(foreach=None, maximize=False, differentiable=False, capturable=False)

    def __init__(self, params: Any, lr: Any = 1.0, rho: float = 0.9, eps: float = 1e-6, weight_decay: float = 0,
                 foreach: Optional[bool] = None, *, capturable: bool = False, maximize: bool = False,
                 differentiable: bool = False) -> None:
        _check_lr(lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        _check_nonnegative("epsilon", eps)
        _check_nonnegative("weight_decay", weight_decay)
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize,
                        capturable=capturable, foreach=foreach, differentiable=differentiable)
        super().__init__(params, defaults)

    def _update_group(self, group: dict) -> None:
        params, states = self._with_grads(group, lambda p: _fresh_state(p, "square_avg", "acc_delta"))
        adadelta(params, [p.grad for p in params], [s["square_avg"] for s in states], [s["acc_delta"] for s in states],
                 [s["step"] for s in states], lr=group["lr"], rho=group["rho"], eps=group["eps"],
                 weight_decay=group["weight_decay"], foreach=group["foreach"], maximize=group["maximize"],
                 differentiable=group["differentiable"], capturable=group["capturable"])


def adadelta(params: list, grads: list, square_avgs: list, acc_deltas: list, state_steps: list,
             capturable: bool = False, foreach: Optional[bool] = None, differentiable: bool = False, *,
             lr: Any, rho: float, eps: float, weight_decay: float, maximize: bool) -> None:
    r"""Functional API that performs Adadelta algorithm computation."""
    lr = _get_value(lr)
    for param, grad, square_avg, acc_delta, step in zip(params, grads, square_avgs, acc_deltas, state_steps):
        step += 1
        grad = grad if not maximize else -grad
        if weight_decay != 0:
            grad = grad.add(param, alpha=weight_decay)
        square_avg.mul_(rho).addcmul_(grad, grad, value=1 - rho)
        std = square_avg.add(eps).sqrt_()
        delta = acc_delta.add(eps).sqrt_()
        if differentiable:
            delta = delta.clone()
        delta.div_(std).mul_(grad)
        acc_delta.mul_(rho).addcmul_(delta, delta, value=1 - rho)
        param.add_(delta, alpha=-lr)
