"""RMSprop (PyTorch's torch.optim.RMSprop)."""
from __future__ import annotations

from typing import Any, Optional

import ember

from .optimizer import Optimizer, _check_lr, _check_nonnegative, _closure_loss, _get_value, \
    _restore_group_defaults, _use_grad_for_differentiable, _zero_step

__all__ = ["RMSprop", "rmsprop"]


class RMSprop(Optimizer):
    r"""Implements the RMSprop algorithm, as PyTorch's.

    Args:
        params (iterable): iterable of parameters or named_parameters to optimize or iterable of dicts
            defining parameter groups
        lr (float, Tensor, optional): learning rate (default: 1e-2)
        alpha (float, optional): smoothing constant (default: 0.99)
        eps (float, optional): term added to the denominator to improve numerical stability (default: 1e-8)
        weight_decay (float, optional): weight decay (L2 penalty) (default: 0)
        momentum (float, optional): momentum factor (default: 0)
        centered (bool, optional): if ``True``, compute the centered RMSProp, the gradient is normalized by an
            estimation of its variance
        capturable, foreach (bool, optional): accepted; the update is a loop over the tensors
        maximize (bool, optional): maximize the objective instead of minimizing (default: False)
        differentiable (bool, optional): autograd records the step (default: False)
    """

    def __init__(self, params: Any, lr: Any = 1e-2, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0, momentum: float = 0, centered: bool = False, capturable: bool = False,
                 foreach: Optional[bool] = None, maximize: bool = False, differentiable: bool = False) -> None:
        _check_lr(lr)
        _check_nonnegative("epsilon", eps)
        _check_nonnegative("momentum", momentum)
        _check_nonnegative("weight_decay", weight_decay)
        _check_nonnegative("alpha", alpha)
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                        weight_decay=weight_decay, capturable=capturable, foreach=foreach, maximize=maximize,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        _restore_group_defaults(self, momentum=0, centered=False, foreach=None, maximize=False,
                                differentiable=False, capturable=False)

    def _init_group(self, group: dict, params: list, grads: list, square_avgs: list, momentum_buffer_list: list,
                    grad_avgs: list, state_steps: list) -> None:
        for p in group["params"]:
            if p.grad is None:
                continue
            params.append(p)
            grads.append(p.grad)
            state = self.state[p]
            if len(state) == 0:
                state["step"] = _zero_step()
                state["square_avg"] = ember.zeros_like(p)
                if group["momentum"] > 0:
                    state["momentum_buffer"] = ember.zeros_like(p)
                if group["centered"]:
                    state["grad_avg"] = ember.zeros_like(p)
            square_avgs.append(state["square_avg"])
            state_steps.append(state["step"])
            if group["momentum"] > 0:
                momentum_buffer_list.append(state["momentum_buffer"])
            if group["centered"]:
                grad_avgs.append(state["grad_avg"])

    @_use_grad_for_differentiable
    def step(self, closure: Any = None) -> Any:
        """Performs a single optimization step.

        Args:
            closure (Callable, optional): A closure that reevaluates the model and returns the loss.
        """
        loss = _closure_loss(closure)
        for group in self.param_groups:
            params: list = []
            grads: list = []
            square_avgs: list = []
            grad_avgs: list = []
            momentum_buffer_list: list = []
            state_steps: list = []
            self._init_group(group, params, grads, square_avgs, momentum_buffer_list, grad_avgs, state_steps)
            rmsprop(params, grads, square_avgs, grad_avgs, momentum_buffer_list, state_steps, lr=group["lr"],
                    alpha=group["alpha"], eps=group["eps"], weight_decay=group["weight_decay"],
                    momentum=group["momentum"], centered=group["centered"], foreach=group["foreach"],
                    maximize=group["maximize"], differentiable=group["differentiable"],
                    capturable=group["capturable"])
        return loss


def rmsprop(params: list, grads: list, square_avgs: list, grad_avgs: list, momentum_buffer_list: list,
            state_steps: list, foreach: Optional[bool] = None, maximize: bool = False, differentiable: bool = False,
            capturable: bool = False, *, lr: Any, alpha: float, eps: float, weight_decay: float, momentum: float,
            centered: bool) -> None:
    r"""Functional API that performs RMSprop algorithm computation."""
    lr = _get_value(lr)
    for i, param in enumerate(params):
        grad = grads[i] if not maximize else -grads[i]
        square_avg = square_avgs[i]
        state_steps[i] += 1
        if weight_decay != 0:
            grad = grad.add(param, alpha=weight_decay)
        square_avg.mul_(alpha).addcmul_(grad, grad, value=1 - alpha)
        if centered:
            grad_avg = grad_avgs[i]
            grad_avg.lerp_(grad, 1 - alpha)
            avg = square_avg.addcmul(grad_avg, grad_avg, value=-1).sqrt_()
        else:
            avg = square_avg.sqrt()
        avg = avg.add(eps) if differentiable else avg.add_(eps)
        if momentum > 0:
            buf = momentum_buffer_list[i]
            buf.mul_(momentum).addcdiv_(grad, avg)
            param.add_(buf, alpha=-lr)
        else:
            param.addcdiv_(grad, avg, value=-lr)
