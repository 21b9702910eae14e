"""NAdam (PyTorch's torch.optim.NAdam): Adam with Nesterov momentum."""
from __future__ import annotations

from typing import Any, Optional

import ember

from .optimizer import Optimizer, _check_betas, _check_lr, _check_nonnegative, _closure_loss, _get_value, \
    _restore_group_defaults, _use_grad_for_differentiable, _zero_step

__all__ = ["NAdam", "nadam"]


class NAdam(Optimizer):
    r"""Implements the NAdam algorithm, as PyTorch's.

    Args:
        params (iterable): iterable of parameters or named_parameters to optimize or iterable of dicts
            defining parameter groups
        lr (float, Tensor, optional): learning rate (default: 2e-3)
        betas (tuple[float, float], optional): coefficients used for computing running averages of gradient
            and its square (default: (0.9, 0.999))
        eps (float, optional): term added to the denominator to improve numerical stability (default: 1e-8)
        weight_decay (float, optional): weight decay (L2 penalty) (default: 0)
        momentum_decay (float, optional): momentum momentum_decay (default: 4e-3)
        decoupled_weight_decay (bool, optional): whether to decouple the weight decay as in AdamW to obtain
            NAdamW (default: False)
        foreach, capturable (bool, optional): accepted; the update is a loop over the tensors
        maximize (bool, optional): maximize the objective instead of minimizing (default: False)
        differentiable (bool, optional): autograd records the step (default: False)
    """

    def __init__(self, params: Any, lr: Any = 2e-3, betas: tuple = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, momentum_decay: float = 4e-3, decoupled_weight_decay: bool = False, *,
                 foreach: Optional[bool] = None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        _check_lr(lr)
        _check_nonnegative("epsilon", eps)
        _check_betas(betas)
        _check_nonnegative("weight_decay", weight_decay)
        _check_nonnegative("momentum_decay", momentum_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable)
        super().__init__(params, defaults)

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        _restore_group_defaults(self, ("step", "mu_product"), maximize=False, foreach=None, capturable=False,
                                differentiable=False, decoupled_weight_decay=False)

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
                    state["mu_product"] = ember.tensor(1.0, dtype=ember.float32)
                    state["exp_avg"] = ember.zeros_like(p)
                    state["exp_avg_sq"] = ember.zeros_like(p)
            states = [self.state[p] for p in params]
            beta1, beta2 = group["betas"]
            nadam(params, [p.grad for p in params], [s["exp_avg"] for s in states],
                  [s["exp_avg_sq"] for s in states], [s["mu_product"] for s in states], [s["step"] for s in states],
                  beta1=beta1, beta2=beta2, lr=group["lr"], weight_decay=group["weight_decay"],
                  momentum_decay=group["momentum_decay"], eps=group["eps"], maximize=group["maximize"],
                  decoupled_weight_decay=group["decoupled_weight_decay"], foreach=group["foreach"],
                  capturable=group["capturable"], differentiable=group["differentiable"])
        return loss


def nadam(params: list, grads: list, exp_avgs: list, exp_avg_sqs: list, mu_products: list, state_steps: list,
          decoupled_weight_decay: bool = False, foreach: Optional[bool] = None, capturable: bool = False,
          differentiable: bool = False, maximize: bool = False, *, beta1: float, beta2: float, lr: Any,
          weight_decay: float, momentum_decay: float, eps: float) -> None:
    r"""Functional API that performs NAdam algorithm computation."""
    lr = _get_value(lr)
    for i, param in enumerate(params):
        grad = grads[i] if not maximize else -grads[i]
        exp_avg, exp_avg_sq, mu_product, step_t = exp_avgs[i], exp_avg_sqs[i], mu_products[i], state_steps[i]
        step_t += 1
        step = _get_value(step_t)
        bias_correction2 = 1 - beta2 ** step
        if weight_decay != 0:
            if decoupled_weight_decay:
                param.mul_(1 - lr * weight_decay)
            else:
                grad = grad.add(param, alpha=weight_decay)
        # The momentum cache mu_t and mu_{t+1}; mu_product (a float32 tensor) is their running product.
        mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * momentum_decay)))
        mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * momentum_decay)))
        mu_product *= mu
        exp_avg.lerp_(grad, 1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        denom = exp_avg_sq.div(bias_correction2).sqrt()
        mu_product_next = _get_value(mu_product) * mu_next
        denom.add_(eps)
        param.addcdiv_(grad, denom, value=(-lr * (1.0 - mu) / (1.0 - _get_value(mu_product))))
        param.addcdiv_(exp_avg, denom, value=(-lr * mu_next) / (1.0 - mu_product_next))
