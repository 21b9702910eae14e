"""Adamax (PyTorch's torch.optim.Adamax): Adam with the infinity norm."""
from __future__ import annotations

from typing import Any, Optional

import ember

from .optimizer import Optimizer, _check_betas, _check_lr, _check_nonnegative, _closure_loss, _get_value, \
    _restore_group_defaults, _use_grad_for_differentiable, _zero_step

__all__ = ["Adamax", "adamax"]


class Adamax(Optimizer):
    r"""Implements the Adamax algorithm (a variant of Adam based on infinity norm), as PyTorch's.

    Args:
        params (iterable): iterable of parameters or named_parameters to optimize or iterable of dicts
            defining parameter groups
        lr (float, Tensor, optional): learning rate (default: 2e-3)
        betas (tuple[float, float], optional): coefficients used for computing running averages of gradient
            and its square (default: (0.9, 0.999))
        eps (float, optional): term added to the denominator to improve numerical stability (default: 1e-8)
        weight_decay (float, optional): weight decay (L2 penalty) (default: 0)
        foreach, capturable (bool, optional): accepted; the update is a loop over the tensors
        maximize (bool, optional): maximize the objective instead of minimizing (default: False)
        differentiable (bool, optional): autograd records the step (default: False)
    """

    def __init__(self, params: Any, lr: Any = 2e-3, betas: tuple = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, foreach: Optional[bool] = None, *, maximize: bool = False,
                 differentiable: bool = False, capturable: bool = False) -> None:
        _check_lr(lr)
        _check_nonnegative("epsilon", eps)
        _check_betas(betas)
        _check_nonnegative("weight_decay", weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        _restore_group_defaults(self, foreach=None, maximize=False, differentiable=False, capturable=False)

    @_use_grad_for_differentiable
    def step(self, closure: Any = None) -> Any:
        """Performs a single optimization step.

        Args:
            closure (Callable, optional): A closure that reevaluates the model and returns the loss.
        """
        loss = _closure_loss(closure)
        for group in self.param_groups:
            params = [p for p in group["params"] if p.grad is not None]
            for p in params:
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _zero_step()
                    state["exp_avg"] = ember.zeros_like(p)
                    state["exp_inf"] = ember.zeros_like(p)
            states = [self.state[p] for p in params]
            beta1, beta2 = group["betas"]
            adamax(params, [p.grad for p in params], [s["exp_avg"] for s in states], [s["exp_inf"] for s in states],
                   [s["step"] for s in states], eps=group["eps"], beta1=beta1, beta2=beta2, lr=group["lr"],
                   weight_decay=group["weight_decay"], foreach=group["foreach"], maximize=group["maximize"],
                   differentiable=group["differentiable"], capturable=group["capturable"])
        return loss


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
