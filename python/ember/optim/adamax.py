"""Adamax (PyTorch's torch.optim.Adamax): Adam with the infinity norm."""
from __future__ import annotations

from typing import Any, Optional

import ember

from .optimizer import (_BETAS_DOC, _DIFFERENTIABLE_DOC, _LOOP_FLAGS_DOC, _MAXIMIZE_DOC, _WEIGHT_DECAY_DOC,
                        _GroupStepOptimizer, _check_adam_args, _docstring, _eps_doc, _fresh_state, _get_value, _lr_doc)

__all__ = ["Adamax", "adamax"]


class Adamax(_GroupStepOptimizer):
    __doc__ = _docstring("Implements the Adamax algorithm (a variant of Adam based on infinity norm), as PyTorch's.",
                         _lr_doc(2e-3), _BETAS_DOC, _eps_doc(1e-8), _WEIGHT_DECAY_DOC, _LOOP_FLAGS_DOC, _MAXIMIZE_DOC,
                         _DIFFERENTIABLE_DOC)
    _group_defaults = dict(foreach=None, maximize=False, differentiable=False, capturable=False)

    def __init__(self, params: Any, lr: Any = 2e-3, betas: tuple = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, foreach: Optional[bool] = None, *, maximize: bool = False,
                 differentiable: bool = False, capturable: bool = False) -> None:
        _check_adam_args(lr, eps, betas, weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def _update_group(self, group: dict) -> None:
        params, states = self._with_grads(group, lambda p: _fresh_state(p, "exp_avg", "exp_inf"))
        beta1, beta2 = group["betas"]
        adamax(params, [p.grad for p in params], [s["exp_avg"] for s in states], [s["exp_inf"] for s in states],
               [s["step"] for s in states], eps=group["eps"], beta1=beta1, beta2=beta2, lr=group["lr"],
               weight_decay=group["weight_decay"], foreach=group["foreach"], maximize=group["maximize"],
               differentiable=group["differentiable"], capturable=group["capturable"])


def adamax(params: list, grads: list, exp_avgs: list, exp_infs: list, state_steps: list,
           foreach: Optional[bool] = None, maximize: bool = False, differentiable: bool = False,
           capturable: bool = False, *, eps: float, beta1: float, beta2: float, lr: Any, weight_decay: float) -> None:
    r"""Functional API that performs adamax algorithm computation."""
    lr = _get_value(lr)
    for param, grad, exp_avg, exp_inf, step_t in zip(params, grads, exp_avgs, exp_infs, state_steps):
        grad = grad if not maximize else -grad
        step_t += 1
        if weight_decay != 0:
            grad = grad.add(param, alpha=weight_decay)
        exp_avg.lerp_(grad, 1 - beta1)
        if differentiable:  # out= is not recorded by autograd
            exp_inf.copy_(ember.maximum(exp_inf.mul_(beta2), grad.abs().add(eps)))
        else:
            ember.maximum(exp_inf.mul_(beta2), grad.abs().add_(eps), out=exp_inf)
        clr = lr / (1 - beta1 ** _get_value(step_t))
        param.addcdiv_(exp_avg, exp_inf, value=-clr)
