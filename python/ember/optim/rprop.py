"""Rprop (PyTorch's torch.optim.Rprop): resilient backpropagation, a per-element step size grown
while the gradient keeps its sign and shrunk when it flips."""
from __future__ import annotations

from typing import Any, Optional

import ember

from .optimizer import (_DIFFERENTIABLE_DOC, _LOOP_FLAGS_DOC, _MAXIMIZE_DOC, _GroupStepOptimizer, _check_lr,
                        _docstring, _get_value, _lr_doc, _zero_step)

__all__ = ["Rprop", "rprop"]


class Rprop(_GroupStepOptimizer):
    __doc__ = _docstring("Implements the resilient backpropagation algorithm, as PyTorch's.", _lr_doc(1e-2),
                         "etas (Tuple[float, float], optional): pair of (etaminus, etaplus), that are multiplicative "
                         "increase and decrease factors (default: (0.5, 1.2))",
                         "step_sizes (Tuple[float, float], optional): a pair of minimal and maximal allowed step "
                         "sizes (default: (1e-6, 50))", _LOOP_FLAGS_DOC, _MAXIMIZE_DOC, _DIFFERENTIABLE_DOC)
    _group_defaults = dict(foreach=None, maximize=False, differentiable=False, capturable=False)

    def __init__(self, params: Any, lr: Any = 1e-2, etas: tuple = (0.5, 1.2), step_sizes: tuple = (1e-6, 50), *,
                 capturable: bool = False, foreach: Optional[bool] = None, maximize: bool = False,
                 differentiable: bool = False) -> None:
        _check_lr(lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = dict(lr=lr, etas=etas, step_sizes=step_sizes, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def _update_group(self, group: dict) -> None:
        params, states = self._with_grads(group, lambda p: dict(
            step=_zero_step(), prev=ember.zeros_like(p), step_size=ember.full_like(p, _get_value(group["lr"]))))
        etaminus, etaplus = group["etas"]
        step_size_min, step_size_max = group["step_sizes"]
        rprop(params, [p.grad for p in params], [s["prev"] for s in states], [s["step_size"] for s in states],
              [s["step"] for s in states], step_size_min=step_size_min, step_size_max=step_size_max,
              etaminus=etaminus, etaplus=etaplus, foreach=group["foreach"], maximize=group["maximize"],
              differentiable=group["differentiable"], capturable=group["capturable"])


def rprop(params: list, grads: list, prevs: list, step_sizes: list, state_steps: list,
          foreach: Optional[bool] = None, capturable: bool = False, maximize: bool = False,
          differentiable: bool = False, has_complex: bool = False, *, step_size_min: float, step_size_max: float,
          etaminus: float, etaplus: float) -> None:
    r"""Functional API that performs rprop algorithm computation."""
    for param, grad, prev, step_size, step_t in zip(params, grads, prevs, step_sizes, state_steps):
        grad = grad if not maximize else -grad
        step_t += 1
        sign = grad.mul(prev.clone() if differentiable else prev).sign()
        # the factor of each element: etaplus where the sign held, etaminus where it flipped, else 1
        factor = ember.where(sign > 0, ember.full_like(sign, etaplus),
                             ember.where(sign < 0, ember.full_like(sign, etaminus), ember.ones_like(sign)))
        step_size.mul_(factor).clamp_(step_size_min, step_size_max)
        grad = ember.where(sign < 0, ember.zeros_like(grad), grad)  # a flip skips this step's update
        param.addcmul_(grad.sign(), step_size, value=-1)
        prev.copy_(grad)
