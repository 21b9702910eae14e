"""Muon (PyTorch's torch.optim.Muon): SGD-momentum for 2-D parameters whose update is
orthogonalized by a quintic Newton-Schulz iteration (in bfloat16, as PyTorch's)."""
from __future__ import annotations

import math
from typing import Any, Optional

import ember

from ._no_grad_step import _NoGradStepOptimizer
from .optimizer import _PARAMS_DOC, _get_value

__all__ = ["Muon"]

EPS = 1e-7
DEFAULT_A = 3.4445
DEFAULT_B = -4.7750
DEFAULT_C = 2.0315
DEFAULT_NS_STEPS = 5


def _zeropower_via_newtonschulz(grad: ember.Tensor, ns_coefficients: tuple, ns_steps: int,
                                eps: float) -> ember.Tensor:
    """An approximate orthogonalization U S' V^T of grad = U S V^T (S'_ii near 1), PyTorch's
    quintic Newton-Schulz iteration in bfloat16."""
    if ns_steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if len(grad.shape) != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(ns_coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    a, b, c = ns_coefficients
    ortho_grad = grad.bfloat16()
    if grad.size(0) > grad.size(1):
        ortho_grad = ortho_grad.T
    ortho_grad = ortho_grad / ortho_grad.norm().clamp(min=eps)
    for _ in range(ns_steps):
        gram_matrix = ortho_grad @ ortho_grad.T
        gram_update = _addmm_bfloat16(gram_matrix, gram_matrix, gram_matrix, beta=b, alpha=c)
        ortho_grad = _addmm_bfloat16(ortho_grad, gram_update, ortho_grad, beta=a)
    if grad.size(0) > grad.size(1):
        ortho_grad = ortho_grad.T
    return ortho_grad


def _addmm_bfloat16(input: ember.Tensor, mat1: ember.Tensor, mat2: ember.Tensor, beta: float,
                    alpha: float = 1.0) -> ember.Tensor:
    """beta * input + alpha * mat1 @ mat2 of bfloat16 matrices rounded once, as PyTorch's bfloat16
    addmm (float32 accumulation); ember's bfloat16 addmm rounds the product first."""
    return ember.addmm(input.float(), mat1.float(), mat2.float(), beta=beta, alpha=alpha).bfloat16()


def _adjust_lr(lr: float, adjust_lr_fn: Optional[str], param_shape: Any) -> float:
    """Muon's learning-rate scale for a parameter's (A, B) shape."""
    rows, cols = param_shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        adjusted_ratio = math.sqrt(max(1, rows / cols))
    elif adjust_lr_fn == "match_rms_adamw":
        adjusted_ratio = 0.2 * math.sqrt(max(rows, cols))
    else:
        adjusted_ratio = 1.0
    return lr * adjusted_ratio


class Muon(_NoGradStepOptimizer):
    __doc__ = "\n".join([
        "Implements Muon (MomentUm Orthogonalized by Newton-schulz), as PyTorch's; 2-D parameters only.", "",
        "Args:", "    " + _PARAMS_DOC,
        "    lr (float, Tensor, optional): learning rate (default: 1e-3)",
        "    weight_decay (float, optional): weight decay (decoupled, as AdamW's) (default: 0.1)",
        "    momentum (float, optional): momentum factor (default: 0.95)",
        "    nesterov (bool, optional): enables Nesterov momentum (default: True)",
        "    ns_coefficients (tuple of three floats, optional): the Newton-Schulz coefficients a, b, c "
        "(default: (3.4445, -4.775, 2.0315))",
        "    eps (float, optional): term added to the norm before normalizing (default: 1e-7)",
        "    ns_steps (int, optional): number of Newton-Schulz steps (default: 5)",
        "    adjust_lr_fn (str, optional): 'original' (the default: sqrt(max(1, A/B))) or 'match_rms_adamw' "
        "(0.2 * sqrt(max(A, B)))"])

    def __init__(self, params: Any, lr: float = 1e-3, weight_decay: float = 0.1, momentum: float = 0.95,
                 nesterov: bool = True, ns_coefficients: tuple = (DEFAULT_A, DEFAULT_B, DEFAULT_C), eps: float = EPS,
                 ns_steps: int = DEFAULT_NS_STEPS, adjust_lr_fn: Optional[str] = None) -> None:
        if isinstance(lr, ember.Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 <= momentum:
            raise ValueError(f"momentum should be >= 0 but is: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight decay should be >= 0 but is: {weight_decay}")
        if adjust_lr_fn is not None and adjust_lr_fn not in ["original", "match_rms_adamw"]:
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        defaults = dict(lr=lr, weight_decay=weight_decay, momentum=momentum, nesterov=nesterov,
                        ns_coefficients=ns_coefficients, eps=eps, ns_steps=ns_steps, adjust_lr_fn=adjust_lr_fn)
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if p.ndim != 2:
                    raise ValueError(f"Muon only supports 2D parameters whereas we found a parameter with size: "
                                     f"{p.size()}")

    def _update_group(self, group: dict) -> None:
        params, states = self._with_grads(group, lambda p: dict(momentum_buffer=ember.zeros_like(p)))
        lr = _get_value(group["lr"])
        for param, state in zip(params, states):
            grad = param.grad
            if grad.ndim != 2:
                raise ValueError("Param gradient must be a 2D matrix")
            buf = state["momentum_buffer"]
            buf.lerp_(grad, 1 - group["momentum"])
            update = grad.lerp(buf, group["momentum"]) if group["nesterov"] else buf
            update = _zeropower_via_newtonschulz(update, group["ns_coefficients"], group["ns_steps"], group["eps"])
            param.mul_(1 - lr * group["weight_decay"])
            param.add_(update, alpha=-_adjust_lr(lr, group["adjust_lr_fn"], param.shape))
