r"""Stochastic Weight Averaging, as torch.optim.swa_utils: AveragedModel (SWA or EMA of a model's
parameters), SWALR (anneal to a fixed lr) and update_bn (recompute BatchNorm statistics)."""
from __future__ import annotations

import itertools
import math
import warnings
from copy import deepcopy

import ember

from ..nn.modules.module import Module
from .lr_scheduler import LRScheduler, _format_param

__all__ = [
    "AveragedModel",
    "update_bn",
    "SWALR",
    "get_ema_multi_avg_fn",
    "get_swa_multi_avg_fn",
    "get_ema_avg_fn",
    "get_swa_avg_fn",
]


def _check_decay(decay):
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in [0,1] range.")


def _lerps(tensors):
    # lerp takes floating tensors (PyTorch's also complex ones; ember has no complex dtype).
    return tensors[0].is_floating_point()


def get_ema_multi_avg_fn(decay=0.999):
    """Get the function applying exponential moving average (EMA) across multiple params."""
    _check_decay(decay)

    @ember.no_grad()
    def ema_update(ema_param_list, current_param_list, _):
        if _lerps(ema_param_list):
            for p_ema, p_model in zip(ema_param_list, current_param_list, strict=True):
                p_ema.lerp_(p_model, 1 - decay)
        else:
            for p_ema, p_model in zip(ema_param_list, current_param_list, strict=True):
                p_ema.copy_(p_ema * decay + p_model * (1 - decay))

    return ema_update


def get_swa_multi_avg_fn():
    """Get the function applying stochastic weight average (SWA) across multiple params."""

    @ember.no_grad()
    def swa_update(averaged_param_list, current_param_list, num_averaged):
        if _lerps(averaged_param_list):
            weight = 1 / (num_averaged + 1)
            if isinstance(weight, ember.Tensor):
                weight = weight.item()
            for p_avg, p_model in zip(averaged_param_list, current_param_list, strict=True):
                p_avg.lerp_(p_model, weight)
        else:
            for p_avg, p_model in zip(averaged_param_list, current_param_list, strict=True):
                diff = p_model - p_avg
                if isinstance(num_averaged, ember.Tensor):
                    p_avg.addcdiv_(diff, num_averaged + 1)
                else:
                    p_avg.add_(diff, alpha=1.0 / (num_averaged + 1))

    return swa_update


def get_ema_avg_fn(decay=0.999):
    """Get the function applying exponential moving average (EMA) across a single param."""
    _check_decay(decay)

    @ember.no_grad()
    def ema_update(ema_param, current_param, num_averaged):
        return decay * ema_param + (1 - decay) * current_param

    return ema_update


def get_swa_avg_fn():
    """Get the function applying stochastic weight average (SWA) across a single param."""

    @ember.no_grad()
    def swa_update(averaged_param, current_param, num_averaged):
        return averaged_param + (current_param - averaged_param) / (num_averaged + 1)

    return swa_update


def _group_by_device_and_dtype(averaged, current):
    """{(device, dtype): ([averaged...], [current...])}, in first-seen order."""
    groups = {}
    for a, c in zip(averaged, current):
        lists = groups.setdefault((a.device, a.dtype), ([], []))
        lists[0].append(a)
        lists[1].append(c)
    return groups


class AveragedModel(Module):
    r"""Implements averaged model for Stochastic Weight Averaging (SWA) and Exponential Moving Average (EMA).

    Args:
        model (ember.nn.Module): model to use with SWA/EMA
        device (ember.device, optional): if provided, the averaged model will be stored on the device
        avg_fn (function, optional): the averaging function used to update parameters; it takes the
            averaged parameter, the model's parameter and the number of models already averaged
        multi_avg_fn (function, optional): the same in place, on lists of parameters
        use_buffers (bool): if ``True``, it will compute running averages for both the parameters
            and the buffers of the model. (default: ``False``)
    """

    def __init__(self, model, device=None, avg_fn=None, multi_avg_fn=None, use_buffers=False):
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", ember.tensor(0, dtype=ember.long, device=device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args, **kwargs):
        """Forward pass."""
        return self.module(*args, **kwargs)

    def update_parameters(self, model):
        """Update model parameters."""
        if self.use_buffers:
            own = itertools.chain(self.module.parameters(), self.module.buffers())
            theirs = itertools.chain(model.parameters(), model.buffers())
        else:
            own, theirs = self.parameters(), model.parameters()
        averaged, current = [], []
        first = bool(self.n_averaged == 0)
        for p_averaged, p_model in zip(own, theirs):
            p_model_ = p_model.detach().to(p_averaged.device)
            averaged.append(p_averaged.detach())
            current.append(p_model_)
            if first:
                p_averaged.detach().copy_(p_model_)
        if self.n_averaged > 0:
            self._average(averaged, current)
        if not self.use_buffers:
            # Buffers are not averaged: keep them in sync with the source model.
            for b_swa, b_model in zip(self.module.buffers(), model.buffers(), strict=True):
                b_swa.detach().copy_(b_model.detach().to(b_swa.device))
        self.n_averaged += 1

    def _average(self, averaged, current):
        if self.avg_fn is not None and self.multi_avg_fn is None:
            for p_averaged, p_model in zip(averaged, current, strict=True):
                n_averaged = self.n_averaged.to(p_averaged.device)
                p_averaged.detach().copy_(self.avg_fn(p_averaged.detach(), p_model, n_averaged))
            return
        for (device, _), (own, theirs) in _group_by_device_and_dtype(averaged, current).items():
            n_averaged = self.n_averaged.to(device)
            if self.multi_avg_fn is not None:
                self.multi_avg_fn(own, theirs, n_averaged)
            elif device.type == "cuda":  # PyTorch's multi-tensor path where foreach kernels run
                get_swa_multi_avg_fn()(own, theirs, n_averaged)
            else:
                avg_fn = get_swa_avg_fn()
                for p_averaged, p_model in zip(own, theirs, strict=True):
                    p_averaged.copy_(avg_fn(p_averaged, p_model, n_averaged))


@ember.no_grad()
def update_bn(loader, model, device=None):
    r"""Update BatchNorm running_mean, running_var buffers in the model.

    It performs one pass over data in `loader` to estimate the activation statistics for BatchNorm
    layers in the model; each batch is a tensor or a list/tuple whose first element is one.

    Args:
        loader (ember.utils.data.DataLoader): dataset loader to compute the activation statistics on.
        model (ember.nn.Module): model for which we seek to update BatchNorm statistics.
        device (ember.device, optional): If set, data will be transferred to :attr:`device` before
            being passed into :attr:`model`.
    """
    from ..nn.modules.batchnorm import _BatchNorm

    momenta = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None  # a cumulative average over the whole pass
    for input in loader:
        if isinstance(input, (list, tuple)):
            input = input[0]
        if device is not None:
            input = input.to(device)
        model(input)
    for bn_module in momenta:
        bn_module.momentum = momenta[bn_module]
    model.train(was_training)


class SWALR(LRScheduler):
    r"""Anneals the learning rate in each parameter group to a fixed value.

    Args:
        optimizer (ember.optim.Optimizer): wrapped optimizer
        swa_lrs (float or list): the learning rate value for all param groups together or
            separately for each group.
        annealing_epochs (int): number of epochs in the annealing phase (default: 10)
        annealing_strategy (str): "cos" or "linear" (default: "cos")
        last_epoch (int): the index of the last epoch (default: -1)
    """

    def __init__(self, optimizer, swa_lr, anneal_epochs=10, anneal_strategy="cos", last_epoch=-1):
        swa_lrs = _format_param("swa_lr", optimizer, swa_lr)
        for group_swa_lr, group in zip(swa_lrs, optimizer.param_groups, strict=True):
            group["swa_lr"] = group_swa_lr
        if anneal_strategy not in ["cos", "linear"]:
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        self._set_anneal_func(anneal_strategy)
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t):
        return t

    @staticmethod
    def _cosine_anneal(t):
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr, swa_lr, alpha):
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self):
        """Compute the next learning rate for each of the optimizer's param_groups."""
        if not self._get_lr_called_within_step:
            warnings.warn("To get the last learning rate computed by the scheduler, please use `get_last_lr()`.",
                          UserWarning, stacklevel=2)
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        # Recover the lr the annealing started from (the previous step's alpha), then anneal it.
        prev_t = max(0, min(1, (step - 1) / max(1, self.anneal_epochs)))
        prev_alpha = self.anneal_func(prev_t)
        prev_lrs = [self._get_initial_lr(group["lr"], group["swa_lr"], prev_alpha)
                    for group in self.optimizer.param_groups]
        t = max(0, min(1, step / max(1, self.anneal_epochs)))
        alpha = self.anneal_func(t)
        return [group["swa_lr"] * alpha + lr * (1 - alpha)
                for group, lr in zip(self.optimizer.param_groups, prev_lrs, strict=True)]

    def _set_anneal_func(self, anneal_strategy):
        self._anneal_strategy = anneal_strategy
        self.anneal_func = self._cosine_anneal if anneal_strategy == "cos" else self._linear_anneal

    def state_dict(self):
        """The scheduler's state: every entry of ``self.__dict__`` but the optimizer and anneal_func."""
        return {key: value for key, value in self.__dict__.items() if key not in ("optimizer", "anneal_func")}

    def load_state_dict(self, state_dict):
        """Load the scheduler's state."""
        self.__dict__.update(state_dict)
        self._set_anneal_func(self._anneal_strategy)
