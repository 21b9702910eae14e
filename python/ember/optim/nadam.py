"""NAdam (PyTorch's torch.optim.NAdam): Adam with Nesterov momentum."""
from __future__ import annotations

from typing import Any, Optional

import ember

from .optimizer import (_BETAS_DOC, _DIFFERENTIABLE_DOC, _LOOP_FLAGS_DOC, _MAXIMIZE_DOC, _WEIGHT_DECAY_DOC,
                        _GroupStepOptimizer, _check_adam_args, _check_nonnegative, _docstring, _eps_doc, _get_value,
                        _fresh_state, _lr_doc)
from .adam import _decay_and_update_moments

__all__ = ["NAdam", "nadam"]


class NAdam(_GroupStepOptimizer):
    __doc__ = _docstring(
        "Implements the NAdam algorithm, as PyTorch's.", _lr_doc(2e-3), _BETAS_DOC, _eps_doc(1e-8), _WEIGHT_DECAY_DOC,
        "momentum_decay (float, optional): momentum momentum_decay (default: 4e-3)",
        "decoupled_weight_decay (bool, optional): whether to decouple the weight decay as in AdamW to obtain "
        "NAdamW (default: False)", _LOOP_FLAGS_DOC, _MAXIMIZE_DOC, _DIFFERENTIABLE_DOC)
    _group_defaults = dict(maximize=False, foreach=None, capturable=False, differentiable=False,
                           decoupled_weight_decay=False)
    _tensor_state_keys = ("step", "mu_product")

    def __init__(self, params: Any, lr: Any = 2e-3, betas: tuple = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, momentum_decay: float = 4e-3, decoupled_weight_decay: bool = False, *,
                 foreach: Optional[bool] = None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        _check_adam_args(lr, eps, betas, weight_decay)
        _check_nonnegative("momentum_decay", momentum_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable)
        super().__init__(params, defaults)

    def _update_group(self, group: dict) -> None:
        params, states = self._with_grads(group, lambda p: _fresh_state(
            p, "exp_avg", "exp_avg_sq", mu_product=ember.tensor(1.0, dtype=ember.float32)))
        beta1, beta2 = group["betas"]
        nadam(params, [p.grad for p in params], [s["exp_avg"] for s in states], [s["exp_avg_sq"] for s in states],
              [s["mu_product"] for s in states], [s["step"] for s in states], beta1=beta1, beta2=beta2,
              lr=group["lr"], weight_decay=group["weight_decay"], momentum_decay=group["momentum_decay"],
              eps=group["eps"], maximize=group["maximize"], decoupled_weight_decay=group["decoupled_weight_decay"],
              foreach=group["foreach"], capturable=group["capturable"], differentiable=group["differentiable"])


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
        grad = _decay_and_update_moments(param, grad, exp_avg, exp_avg_sq, lr=lr, weight_decay=weight_decay,
                                         decoupled=decoupled_weight_decay, beta1=beta1, beta2=beta2)
        # The momentum cache mu_t and mu_{t+1}; mu_product (a float32 tensor) is their running product.
        mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * momentum_decay)))
        mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * momentum_decay)))
        mu_product *= mu
        denom = exp_avg_sq.div(bias_correction2).sqrt()
        mu_product_next = _get_value(mu_product) * mu_next
        denom.add_(eps)
        param.addcdiv_(grad, denom, value=(-lr * (1.0 - mu) / (1.0 - _get_value(mu_product))))
        param.addcdiv_(exp_avg, denom, value=(-lr * mu_next) / (1.0 - mu_product_next))
