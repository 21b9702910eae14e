"""Adagrad (PyTorch's torch.optim.Adagrad)."""
from __future__ import annotations

from typing import Any, Optional

import ember

from .optimizer import (_DIFFERENTIABLE_DOC, _MAXIMIZE_DOC, _WEIGHT_DECAY_DOC, _GroupStepOptimizer,
                        _check_fused_foreach, _check_lr, _check_nonnegative, _docstring, _eps_doc, _get_value, _lr_doc,
                        _zero_step)

__all__ = ["Adagrad", "adagrad"]


class Adagrad(_GroupStepOptimizer):
    __doc__ = _docstring(
        "Implements the Adagrad algorithm, as PyTorch's.", _lr_doc(1e-2),
        "lr_decay (float, optional): learning rate decay (default: 0)", _WEIGHT_DECAY_DOC,
        "initial_accumulator_value (float, optional): initial value of the sum of squares of gradients "
        "(default: 0)", _eps_doc(1e-10),
        "foreach, fused (bool, optional): accepted; the update is a loop of ember ops over the tensors",
        _MAXIMIZE_DOC, _DIFFERENTIABLE_DOC)
    _group_defaults = dict(foreach=None, maximize=False, differentiable=False, fused=None)

    def __init__(self, params: Any, lr: Any = 1e-2, lr_decay: float = 0, weight_decay: float = 0,
                 initial_accumulator_value: float = 0, eps: float = 1e-10, foreach: Optional[bool] = None, *,
                 maximize: bool = False, differentiable: bool = False, fused: Optional[bool] = None) -> None:
        _check_lr(lr)
        _check_nonnegative("lr_decay", lr_decay)
        _check_nonnegative("weight_decay", weight_decay)
        _check_nonnegative("initial_accumulator_value", initial_accumulator_value)
        _check_nonnegative("epsilon", eps)
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)
        _check_fused_foreach(fused, foreach, differentiable)
        # Adagrad's state exists from the start (its sum starts at initial_accumulator_value).
        for group in self.param_groups:
            for p in group["params"]:
                self.state[p].update(step=_zero_step(), sum=ember.full_like(p, initial_accumulator_value))

    def share_memory(self) -> None:
        """Calls tensor.share_memory_() on the state sum tensors."""
        for group in self.param_groups:
            for p in group["params"]:
                self.state[p]["sum"].share_memory_()

    def _update_group(self, group: dict) -> None:
        params, states = self._with_grads(group, lambda p: {})  # made in __init__
        adagrad(params, [p.grad for p in params], [s["sum"] for s in states], [s["step"] for s in states],
                lr=group["lr"], weight_decay=group["weight_decay"], lr_decay=group["lr_decay"], eps=group["eps"],
                foreach=group["foreach"], maximize=group["maximize"], differentiable=group["differentiable"],
                fused=group["fused"])


def adagrad(params: list, grads: list, state_sums: list, state_steps: list, fused: Optional[bool] = None,
            foreach: Optional[bool] = None, differentiable: bool = False, maximize: bool = False, *, lr: Any,
            weight_decay: float, lr_decay: float, eps: float) -> None:
    r"""Functional API that performs Adagrad algorithm computation."""
    lr = _get_value(lr)
    for param, grad, state_sum, step_t in zip(params, grads, state_sums, state_steps):
        step_t += 1
        step = _get_value(step_t)
        grad = grad if not maximize else -grad
        if weight_decay != 0:
            grad = grad.add(param, alpha=weight_decay)
        clr = lr / (1 + (step - 1) * lr_decay)
        state_sum.addcmul_(grad, grad, value=1)
        std = state_sum.sqrt() + eps if differentiable else state_sum.sqrt().add_(eps)
        param.addcdiv_(grad, std, value=-clr)
