"""ASGD (PyTorch's torch.optim.ASGD): SGD with a decaying step size and a running average of the
parameters (state 'ax') that starts after t0 steps."""
from __future__ import annotations

from typing import Any, Optional

import ember

from .optimizer import (_DIFFERENTIABLE_DOC, _LOOP_FLAGS_DOC, _MAXIMIZE_DOC, _WEIGHT_DECAY_DOC, _GroupStepOptimizer,
                        _check_lr, _check_nonnegative, _docstring, _get_value, _lr_doc, _zero_step)

__all__ = ["ASGD", "asgd"]


class ASGD(_GroupStepOptimizer):
    __doc__ = _docstring("Implements Averaged Stochastic Gradient Descent, as PyTorch's.", _lr_doc(1e-2),
                         "lambd (float, optional): decay term (default: 1e-4)",
                         "alpha (float, optional): power for eta update (default: 0.75)",
                         "t0 (float, optional): point at which to start averaging (default: 1e6)", _WEIGHT_DECAY_DOC,
                         _LOOP_FLAGS_DOC, _MAXIMIZE_DOC, _DIFFERENTIABLE_DOC)
    _group_defaults = dict(foreach=None, maximize=False, differentiable=False, capturable=False)
    _tensor_state_keys = ("step", "eta", "mu")

    def __init__(self, params: Any, lr: Any = 1e-2, lambd: float = 1e-4, alpha: float = 0.75, t0: float = 1e6,
                 weight_decay: float = 0, foreach: Optional[bool] = None, maximize: bool = False,
                 differentiable: bool = False, capturable: bool = False) -> None:
        _check_lr(lr)
        _check_nonnegative("weight_decay", weight_decay)
        defaults = dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def _update_group(self, group: dict) -> None:
        params, states = self._with_grads(group, lambda p: dict(
            step=_zero_step(), eta=ember.tensor(float(_get_value(group["lr"])), dtype=ember.float32),
            mu=ember.ones((), dtype=ember.float32), ax=ember.zeros_like(p)))
        asgd(params, [p.grad for p in params], [s["ax"] for s in states], [s["mu"] for s in states],
             [s["eta"] for s in states], [s["step"] for s in states], lambd=group["lambd"], lr=group["lr"],
             t0=group["t0"], alpha=group["alpha"], weight_decay=group["weight_decay"], foreach=group["foreach"],
             maximize=group["maximize"], differentiable=group["differentiable"], capturable=group["capturable"])


def asgd(params: list, grads: list, axs: list, mus: list, etas: list, state_steps: list,
         foreach: Optional[bool] = None, maximize: bool = False, differentiable: bool = False,
         capturable: bool = False, has_complex: bool = False, *, lambd: float, lr: Any, t0: float, alpha: float,
         weight_decay: float) -> None:
    r"""Functional API that performs asgd algorithm computation."""
    lr = _get_value(lr)
    for param, grad, ax, mu, eta, step_t in zip(params, grads, axs, mus, etas, state_steps):
        grad = grad if not maximize else -grad
        step_t += 1
        if weight_decay != 0:
            grad = grad.add(param, alpha=weight_decay)
        eta_value = _get_value(eta)
        param.mul_(1 - lambd * eta_value)  # decay term
        param.add_(grad, alpha=-eta_value)
        if mu.item() != 1:
            ax.add_(param.sub(ax).mul_(mu))
        else:
            ax.copy_(param)
        step = _get_value(step_t)
        eta.fill_(lr / ((1 + lambd * lr * step) ** alpha))
        mu.fill_(1 / max(1, step - t0))
