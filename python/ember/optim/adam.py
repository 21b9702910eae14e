"""Adam (PyTorch's torch.optim.Adam); AdamW is Adam with decoupled weight decay."""
from __future__ import annotations

from typing import Any, Optional

import ember

from .. import _C
from .optimizer import (_BETAS_DOC, _DIFFERENTIABLE_DOC, _MAXIMIZE_DOC, _WEIGHT_DECAY_DOC, _GroupStepOptimizer,
                        _check_adam_args, _check_fused_foreach, _docstring, _eps_doc, _fresh_state, _get_value, _lr_doc,
                        _to_scalar, _use_multi_tensor)
from .sgd import _FUSED_DOC

__all__ = ["Adam", "adam"]


def _as_number(x: Any) -> Any:
    """A hyperparameter given as a one-element tensor, as a Python number for the update."""
    x = _to_scalar(x)
    return x.item() if isinstance(x, ember.Tensor) else x


class Adam(_GroupStepOptimizer):
    __doc__ = _docstring(
        "Implements the Adam algorithm, as PyTorch's.", _lr_doc(1e-3), _BETAS_DOC, _eps_doc(1e-8), _WEIGHT_DECAY_DOC,
        "decoupled_weight_decay (bool, optional): if True, this optimizer is equivalent to AdamW",
        "amsgrad (bool, optional): whether to use the AMSGrad variant of this algorithm (default: False)",
        _FUSED_DOC, _MAXIMIZE_DOC, "capturable (bool, optional): accepted (default: False)", _DIFFERENTIABLE_DOC)
    _group_defaults = dict(amsgrad=False, maximize=False, foreach=None, capturable=False, differentiable=False,
                           decoupled_weight_decay=False, fused=None)

    def __init__(self, params: Any, lr: Any = 1e-3, betas: tuple = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, amsgrad: bool = False, *, foreach: Optional[bool] = None,
                 maximize: bool = False, capturable: bool = False, differentiable: bool = False,
                 fused: Optional[bool] = None, decoupled_weight_decay: bool = False) -> None:
        if isinstance(lr, ember.Tensor) and foreach and not capturable:
            raise ValueError("lr as a Tensor is not supported for capturable=False and foreach=True")
        _check_adam_args(lr, eps, betas, weight_decay)
        if not (all(isinstance(b, float) for b in betas[:2]) or all(isinstance(b, ember.Tensor) for b in betas[:2])):
            raise ValueError("betas must be either both floats or both Tensors")
        for i, beta in enumerate(betas[:2]):
            if isinstance(beta, ember.Tensor):
                if not capturable and foreach:
                    raise ValueError(f"betas[{i}] as a Tensor is not supported for capturable=False and foreach=True")
                if beta.numel() != 1:
                    raise ValueError(f"Tensor betas[{i}] must be 1-element")
        betas = tuple(map(_to_scalar, betas))
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad, maximize=maximize,
                        foreach=foreach, capturable=capturable, differentiable=differentiable, fused=fused,
                        decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)
        _check_fused_foreach(fused, foreach, differentiable)
        if fused:
            self._step_supports_amp_scaling = True  # GradScaler leaves the unscaling to step (PyTorch's fused path)

    def _init_group_state(self, group: dict) -> tuple[list, list]:
        moments = ("exp_avg", "exp_avg_sq", "max_exp_avg_sq") if group["amsgrad"] else ("exp_avg", "exp_avg_sq")
        return self._with_grads(group, lambda p: _fresh_state(p, *moments))

    def _update_group(self, group: dict) -> None:
        params, states = self._init_group_state(group)
        if group["differentiable"] and any(s["step"].requires_grad for s in states):
            raise RuntimeError("`requires_grad` is not supported for `step` in differentiable mode")
        if params and group["foreach"] and isinstance(group["lr"], ember.Tensor) and not group["capturable"]:
            raise RuntimeError("lr as a Tensor is not supported for capturable=False and foreach=True")
        beta1, beta2 = group["betas"]
        adam(params, [p.grad for p in params], [s["exp_avg"] for s in states], [s["exp_avg_sq"] for s in states],
             [s["max_exp_avg_sq"] for s in states] if group["amsgrad"] else [], [s["step"] for s in states],
             amsgrad=group["amsgrad"], beta1=beta1, beta2=beta2, lr=group["lr"], weight_decay=group["weight_decay"],
             eps=group["eps"], maximize=group["maximize"], foreach=group["foreach"], capturable=group["capturable"],
             differentiable=group["differentiable"], fused=group["fused"],
             decoupled_weight_decay=group["decoupled_weight_decay"])


def adam(params: list, grads: list, exp_avgs: list, exp_avg_sqs: list, max_exp_avg_sqs: list, state_steps: list,
         foreach: Optional[bool] = None, capturable: bool = False, differentiable: bool = False,
         fused: Optional[bool] = None, *, amsgrad: bool, beta1: Any, beta2: Any, lr: Any, weight_decay: float,
         eps: float, maximize: bool, decoupled_weight_decay: bool = False) -> None:
    r"""Functional API that performs Adam algorithm computation."""
    if not all(isinstance(t, ember.Tensor) for t in state_steps):
        raise RuntimeError("API has changed, `state_steps` argument must contain a list of singleton tensors")
    kwargs = dict(amsgrad=amsgrad, beta1=_as_number(beta1), beta2=_as_number(beta2), lr=_as_number(lr),
                  weight_decay=weight_decay, eps=eps, maximize=maximize,
                  decoupled_weight_decay=decoupled_weight_decay)
    if params and _use_multi_tensor("_fused_adam", params + grads, foreach, fused, differentiable):
        _C._fused_adam(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs if amsgrad else [], state_steps,
                       **kwargs)
    else:
        _single_tensor_adam(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, **kwargs)


def _decay_and_update_moments(param: ember.Tensor, grad: ember.Tensor, exp_avg: ember.Tensor,
                              exp_avg_sq: ember.Tensor, *, lr: float, weight_decay: float, decoupled: bool,
                              beta1: float, beta2: float) -> ember.Tensor:
    """The Adam family's weight decay (decoupled: on the parameter; else added to the gradient, which is
    returned) and moving averages of the gradient and its square, op for op as PyTorch's."""
    if weight_decay != 0:
        if decoupled:
            param.mul_(1 - lr * weight_decay)
        else:
            grad = grad.add(param, alpha=weight_decay)
    exp_avg.lerp_(grad, 1 - beta1)
    exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
    return grad


def _single_tensor_adam(params: list, grads: list, exp_avgs: list, exp_avg_sqs: list, max_exp_avg_sqs: list,
                        state_steps: list, *, amsgrad: bool, beta1: float, beta2: float, lr: float,
                        weight_decay: float, eps: float, maximize: bool, decoupled_weight_decay: bool) -> None:
    # PyTorch's single-tensor update, op for op (so float32 results round alike).
    for i, param in enumerate(params):
        grad = grads[i] if not maximize else -grads[i]
        exp_avg, exp_avg_sq, step_t = exp_avgs[i], exp_avg_sqs[i], state_steps[i]
        step_t += 1
        _decay_and_update_moments(param, grad, exp_avg, exp_avg_sq, lr=lr, weight_decay=weight_decay,
                                  decoupled=decoupled_weight_decay, beta1=beta1, beta2=beta2)
        step = _get_value(step_t)
        bias_correction1 = 1 - beta1 ** step
        bias_correction2 = 1 - beta2 ** step
        step_size = lr / bias_correction1
        bias_correction2_sqrt = bias_correction2 ** 0.5
        if amsgrad:
            ember.maximum(max_exp_avg_sqs[i], exp_avg_sq, out=max_exp_avg_sqs[i])
            denom = (max_exp_avg_sqs[i].sqrt() / bias_correction2_sqrt).add_(eps)
        else:
            denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
        param.addcdiv_(exp_avg, denom, value=-step_size)
