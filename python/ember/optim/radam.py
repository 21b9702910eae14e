"""RAdam (PyTorch's torch.optim.RAdam): Adam with a rectified adaptive learning rate."""
from __future__ import annotations

from typing import Any, Optional

import ember

from .optimizer import (_BETAS_DOC, _DIFFERENTIABLE_DOC, _LOOP_FLAGS_DOC, _MAXIMIZE_DOC, _WEIGHT_DECAY_DOC,
                        _GroupStepOptimizer, _check_adam_args, _docstring, _eps_doc, _fresh_state, _get_value, _lr_doc)
from .adam import _decay_and_update_moments

__all__ = ["RAdam", "radam"]


class RAdam(_GroupStepOptimizer):
    __doc__ = _docstring(
        "Implements the RAdam algorithm, as PyTorch's.", _lr_doc(1e-3), _BETAS_DOC, _eps_doc(1e-8), _WEIGHT_DECAY_DOC,
        "decoupled_weight_decay (bool, optional): whether to decouple the weight decay as in AdamW to obtain "
        "RAdamW (default: False)", _LOOP_FLAGS_DOC, _MAXIMIZE_DOC, _DIFFERENTIABLE_DOC)
    _group_defaults = dict(foreach=None, maximize=False, differentiable=False, decoupled_weight_decay=False,
                           capturable=False)

    def __init__(self, params: Any, lr: Any = 1e-3, betas: tuple = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, decoupled_weight_decay: bool = False, *, foreach: Optional[bool] = None,
                 maximize: bool = False, capturable: bool = False, differentiable: bool = False) -> None:
        _check_adam_args(lr, eps, betas, weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, decoupled_weight_decay=decoupled_weight_decay,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def _update_group(self, group: dict) -> None:
        params, states = self._with_grads(group, lambda p: _fresh_state(p, "exp_avg", "exp_avg_sq"))
        beta1, beta2 = group["betas"]
        radam(params, [p.grad for p in params], [s["exp_avg"] for s in states], [s["exp_avg_sq"] for s in states],
              [s["step"] for s in states], beta1=beta1, beta2=beta2, lr=group["lr"],
              weight_decay=group["weight_decay"], eps=group["eps"], maximize=group["maximize"],
              foreach=group["foreach"], capturable=group["capturable"], differentiable=group["differentiable"],
              decoupled_weight_decay=group["decoupled_weight_decay"])


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
        grad = _decay_and_update_moments(param, grad, exp_avg, exp_avg_sq, lr=lr, weight_decay=weight_decay,
                                         decoupled=decoupled_weight_decay, beta1=beta1, beta2=beta2)
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
