"""RAdam (PyTorch's torch.optim.RAdam): Adam with a rectified adaptive learning rate."""
from __future__ import annotations

from typing import Any, Optional

import ember

from .optimizer import Optimizer, _check_betas, _check_lr, _check_nonnegative, _closure_loss, _get_value, \
    _restore_group_defaults, _use_grad_for_differentiable, _zero_step

__all__ = ["RAdam", "radam"]


class RAdam(Optimizer):
    r"""Implements the RAdam algorithm, as PyTorch's.

    Args:
        params (iterable): iterable of parameters or named_parameters to optimize or iterable of dicts
            defining parameter groups
        lr (float, Tensor, optional): learning rate (default: 1e-3)
        betas (tuple[float, float], optional): coefficients used for computing running averages of gradient
            and its square (default: (0.9, 0.999))
        eps (float, optional): term added to the denominator to improve numerical stability (default: 1e-8)
        weight_decay (float, optional): weight decay (L2 penalty) (default: 0)
        decoupled_weight_decay (bool, optional): whether to decouple the weight decay as in AdamW to obtain
            RAdamW (default: False)
        foreach, capturable (bool, optional): accepted; the update is a loop over the tensors
        maximize (bool, optional): maximize the objective instead of minimizing (default: False)
        differentiable (bool, optional): autograd records the step (default: False)
    """

    def __init__(self, params: Any, lr: Any = 1e-3, betas: tuple = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, decoupled_weight_decay: bool = False, *, foreach: Optional[bool] = None,
                 maximize: bool = False, capturable: bool = False, differentiable: bool = False) -> None:
        _check_lr(lr)
        _check_nonnegative("epsilon", eps)
        _check_betas(betas)
        _check_nonnegative("weight_decay", weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, decoupled_weight_decay=decoupled_weight_decay,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        _restore_group_defaults(self, foreach=None, maximize=False, differentiable=False,
                                decoupled_weight_decay=False, capturable=False)

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
                    state["exp_avg_sq"] = ember.zeros_like(p)
            states = [self.state[p] for p in params]
            beta1, beta2 = group["betas"]
            radam(params, [p.grad for p in params], [s["exp_avg"] for s in states],
                  [s["exp_avg_sq"] for s in states], [s["step"] for s in states], beta1=beta1, beta2=beta2,
                  lr=group["lr"], weight_decay=group["weight_decay"], eps=group["eps"],
                  maximize=group["maximize"], foreach=group["foreach"], capturable=group["capturable"],
                  differentiable=group["differentiable"], decoupled_weight_decay=group["decoupled_weight_decay"])
        return loss


def radam(params: list, grads: list, exp_avgs: list, exp_avg_sqs: list, state_steps: list,
          decoupled_weight_decay: bool = False, foreach: Optional[bool] = None, differentiable: bool = False,
          capturable: bool = False, maximize: bool = False, *, beta1: float, beta2: float, lr: Any,
          weight_decay: float, eps: float) -> None:
    r"""Functional API that performs RAdam algorithm computation."""
    lr = _get_value(lr)
    for i, param in enumerate(params):
        grad = grads[i] if not maximize else -grads[i]
        exp_avg, exp_avg_sq, step_t = exp_avgs[i], exp_avg_sqs[i], state_steps[i]
        step_t += 1
        step = _get_value(step_t)
        if weight_decay != 0:
            if decoupled_weight_decay:
                param.mul_(1 - lr * weight_decay)
            else:
                grad = grad.add(param, alpha=weight_decay)
        exp_avg.lerp_(grad, 1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        bias_correction1 = 1 - beta1 ** step
        bias_correction2 = 1 - beta2 ** step
        bias_corrected_exp_avg = exp_avg / bias_correction1
        # The length of the approximated SMA; the variance is rectified once it exceeds 5.
        rho_inf = 2 / (1 - beta2) - 1
        rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2
        if rho_t > 5.0:
            rect = ((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
            exp_avg_sq_sqrt = exp_avg_sq.sqrt()
            exp_avg_sq_sqrt = exp_avg_sq_sqrt.add(eps) if differentiable else exp_avg_sq_sqrt.add_(eps)
            adaptive_lr = (bias_correction2 ** 0.5) / exp_avg_sq_sqrt
            param.add_(bias_corrected_exp_avg * lr * adaptive_lr * rect, alpha=-1.0)
        else:
            param.add_(bias_corrected_exp_avg * lr, alpha=-1.0)
