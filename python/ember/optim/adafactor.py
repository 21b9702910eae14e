"""Adafactor (PyTorch's torch.optim.Adafactor): Adam-like steps whose second moment of a matrix is
kept factored, as a row and a column average, and whose step is relative to the parameter's scale."""
from __future__ import annotations

from typing import Any, Optional

import ember

from ._no_grad_step import _NoGradStepOptimizer
from .optimizer import _MAXIMIZE_DOC, _docstring, _get_value, _lr_doc, _zero_step

__all__ = ["Adafactor", "adafactor"]

# torch.finfo(dtype).eps, epsilon1's default (ember has no finfo yet)
_MACHINE_EPS = {ember.float64: 2.0 ** -52, ember.float32: 2.0 ** -23, ember.float16: 2.0 ** -10,
                ember.bfloat16: 2.0 ** -7}


class Adafactor(_NoGradStepOptimizer):
    __doc__ = _docstring("Implements the Adafactor algorithm, as PyTorch's.", _lr_doc(1e-2),
                         "beta2_decay (float, optional): the decay rate of beta2 (default: -0.8)",
                         "eps (Tuple[float, float], optional): epsilon1, added to the denominator of the update "
                         "(None: the dtype's eps), and epsilon2, the least relative step (default: (None, 1e-3))",
                         "d (float, optional): the clipping threshold of the update's RMS (default: 1.0)",
                         "weight_decay (float, optional): weight decay coefficient (default: 0.0)",
                         "foreach (bool, optional): accepted; the update is a loop of ember ops over the tensors",
                         _MAXIMIZE_DOC)
    _group_defaults = dict(foreach=None)

    def __init__(self, params: Any, lr: Any = 1e-2, beta2_decay: float = -0.8, eps: tuple = (None, 1e-3),
                 d: float = 1.0, weight_decay: float = 0.0, *, foreach: Optional[bool] = None,
                 maximize: bool = False) -> None:
        if isinstance(lr, ember.Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        defaults = dict(lr=lr, beta2_decay=beta2_decay, eps=eps, d=d, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize)
        super().__init__(params, defaults)

    def _update_group(self, group: dict) -> None:
        params, states = self._with_grads(group, _first_state)
        eps1, eps2 = group["eps"]
        adafactor(params, [p.grad for p in params], [s.get("row_var") for s in states],
                  [s.get("col_var") for s in states], [s.get("variance") for s in states],
                  [s["step"] for s in states], d=group["d"], lr=group["lr"], beta2_decay=group["beta2_decay"],
                  weight_decay=group["weight_decay"], eps1=eps1, eps2=eps2, foreach=group["foreach"],
                  maximize=group["maximize"], grad_scale=getattr(self, "grad_scale", None),
                  found_inf=getattr(self, "found_inf", None))


def _first_state(p: ember.Tensor) -> dict:
    # PyTorch sizes these from p.grad, which has p's shape and dtype
    if p.dim() > 1:  # the factored second moment: row and column means
        return dict(step=_zero_step(), row_var=p.new_zeros(list(p.shape[:-1]) + [1]),
                    col_var=p.new_zeros(list(p.shape[:-2]) + [1, p.shape[-1]]))
    return dict(step=_zero_step(), variance=ember.zeros_like(p))


def adafactor(params: list, grads: list, row_vars: list, col_vars: list, variances: list, state_steps: list,
              foreach: Optional[bool] = None, grad_scale: Any = None, found_inf: Any = None,
              has_complex: bool = False, *, d: float, lr: Any, beta2_decay: float, weight_decay: float,
              eps1: Optional[float], eps2: float, maximize: bool) -> None:
    r"""Functional API that performs Adafactor algorithm computation."""
    if grad_scale is not None or found_inf is not None:
        raise AssertionError("Grad scaling should occur outside of optimizer.step()")
    lr = _get_value(lr)
    for param, grad, row_var, col_var, variance, step_t in zip(params, grads, row_vars, col_vars, variances,
                                                                state_steps):
        grad = grad if not maximize else -grad
        if eps1 is None:
            eps1 = _MACHINE_EPS[param.dtype]
        step_t += 1
        step_float = step_t.item()
        one_minus_beta2_t = step_float ** beta2_decay
        rho_t = min(lr, 1 / (step_float ** 0.5))
        alpha = max(eps2, param.norm(2).item() / (param.numel() ** 0.5)) * rho_t
        if weight_decay != 0:
            param.mul_(1 - lr * weight_decay)
        if grad.dim() > 1:
            row_var.lerp_(_mean_square(grad, -1), one_minus_beta2_t)
            col_var.lerp_(_mean_square(grad, -2), one_minus_beta2_t)
            var_estimate = row_var @ col_var
            var_estimate.div_(row_var.mean(dim=-2, keepdim=True).clamp_(min=eps1))
        else:
            variance.lerp_(grad * grad, one_minus_beta2_t)
            var_estimate = variance.clone()
        update = var_estimate.clamp_(min=eps1 * eps1).rsqrt_()
        update.mul_(grad)
        denom = max(1.0, update.norm(2).item() / ((update.numel() ** 0.5) * d))
        param.add_(update, alpha=-alpha / denom)


def _mean_square(grad: ember.Tensor, dim: int) -> ember.Tensor:
    """The mean of grad**2 along dim, as PyTorch computes it: the squared norm over the size."""
    norm = ember.linalg.vector_norm(grad, dim=dim, keepdim=True)
    return norm.mul_(norm).div_(grad.size(dim))
