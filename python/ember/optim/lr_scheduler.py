r"""Learning rate schedulers, as torch.optim.lr_scheduler.

Each scheduler sets its optimizer's ``param_groups[i]["lr"]`` on every ``step()``. The chainable
ones update the current lr recursively, evaluating the same expressions in the same order as
PyTorch, so the lr sequences (and state_dict layouts) are PyTorch's bit for bit.
"""
from __future__ import annotations

import math
import types
import warnings
from bisect import bisect_right
from collections import Counter
from functools import partial, wraps
from weakref import ref

from .._tensor import Tensor
from .optimizer import Optimizer

__all__ = [
    "LambdaLR",
    "MultiplicativeLR",
    "StepLR",
    "MultiStepLR",
    "ConstantLR",
    "LinearLR",
    "ExponentialLR",
    "SequentialLR",
    "CosineAnnealingLR",
    "ChainedScheduler",
    "ReduceLROnPlateau",
    "CyclicLR",
    "CosineAnnealingWarmRestarts",
    "OneCycleLR",
    "PolynomialLR",
    "LRScheduler",
]

EPOCH_DEPRECATION_WARNING = (
    "The epoch parameter in `scheduler.step()` was not necessary and is being "
    "deprecated where possible. Please use `scheduler.step()` to step the "
    "scheduler. During the deprecation, if epoch is different from None, the "
    "closed form is used instead of the new chainable form, where available. "
    "Please open an issue if you are unable to replicate your use case: "
    "https://github.com/pytorch/pytorch/issues/new/choose."
)

_ADJUST_LR_DOCS = "https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate"


def _format_param(name, optimizer, param):
    """One copy of `param` per param group (a list/tuple must already have one per group)."""
    if isinstance(param, (list, tuple)):
        if len(param) != len(optimizer.param_groups):
            raise ValueError(
                f"{name} must have the same length as optimizer.param_groups. "
                f"{name} has {len(param)} values, param_groups has {len(optimizer.param_groups)}."
            )
    else:
        param = [param] * len(optimizer.param_groups)
    return [p.clone() if isinstance(p, Tensor) else p for p in param]


def _param_groups_val_list(optimizer, key):
    """group[key] of every param group; tensors are cloned so callers cannot alias them."""
    return [g[key].clone() if isinstance(g[key], Tensor) else g[key] for g in optimizer.param_groups]


def _update_param_group_val(param_group, key, val):
    """Store val in param_group[key]; a tensor entry is filled in place (it may be captured)."""
    if isinstance(param_group[key], Tensor):
        if isinstance(val, Tensor) and val.dim() != 0:
            val = val.squeeze()
        param_group[key].fill_(val)
    else:
        param_group[key] = val


def _set_momentum(group, use_beta1, momentum):
    if use_beta1:
        group["betas"] = (momentum, *group["betas"][1:])
    else:
        group["momentum"] = momentum


def _track_optimizer_step(optimizer):
    """Wrap optimizer.step once so that step() can warn when the scheduler steps first."""
    if hasattr(optimizer.step, "_wrapped_by_lr_sched"):
        return
    step_fn = optimizer.step.__func__
    optimizer_ref = ref(optimizer)  # the wrapper lives on the optimizer: no reference cycle

    @wraps(step_fn)
    def wrapper(*args, **kwargs):
        opt = optimizer_ref()
        opt._opt_called = True
        return step_fn.__get__(opt, opt.__class__)(*args, **kwargs)

    wrapper._wrapped_by_lr_sched = True
    optimizer.step = wrapper


class _enable_get_lr_call:
    """Marks get_lr() as called by step() (elsewhere it warns to use get_last_lr())."""

    def __init__(self, o):
        self.o = o

    def __enter__(self):
        self.o._get_lr_called_within_step = True
        return self

    def __exit__(self, type, value, traceback):
        self.o._get_lr_called_within_step = False


class _initial_mode:
    """Marks the step made by the constructor (chainable schedulers keep the lr then)."""

    def __init__(self, o):
        self.o = o

    def __enter__(self):
        self.o._is_initial = True

    def __exit__(self, type, value, traceback):
        self.o._is_initial = False


def _warn_get_lr_called_within_step(lr_scheduler):
    if not lr_scheduler._get_lr_called_within_step:
        warnings.warn(
            "To get the last learning rate computed by the scheduler, please use `get_last_lr()`.",
            UserWarning,
            stacklevel=3,
        )


class LRScheduler:
    r"""Base class for all learning rate schedulers.

    Subclasses implement :meth:`get_lr` and optionally override :meth:`step`.

    Args:
        optimizer (Optimizer): The optimizer this scheduler will adjust the learning rates of.
        last_epoch (int): Index of the last epoch seen by the scheduler. Use ``-1`` (default) to
            initialize the scheduler; other values only to resume from a checkpoint.
    """

    _get_lr_called_within_step = False
    _is_initial = False

    def __init__(self, optimizer, last_epoch=-1):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                lr = group["lr"]
                group.setdefault("initial_lr", lr.clone() if isinstance(lr, Tensor) else lr)
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(
                        f"param 'initial_lr' is not specified in param_groups[{i}] when resuming "
                        "scheduler with last_epoch >= 0.\n"
                        "This typically happens when:\n"
                        "1. You're trying to resume training from a checkpoint but haven't properly "
                        "loaded the optimizer state\n"
                        "2. You're using last_epoch >= 0 for a fresh training run (not recommended)"
                    )
        self.base_lrs = _param_groups_val_list(optimizer, "initial_lr")
        self.last_epoch = last_epoch
        _track_optimizer_step(optimizer)
        self._initial_step()

    def _initial_step(self):
        """Initialize step counts and perform a step."""
        self._step_count = 0
        with _initial_mode(self):
            self.step()

    def state_dict(self):
        """Return the state of the scheduler as a :class:`dict`: every entry of ``self.__dict__``
        but the optimizer."""
        return {key: value for key, value in self.__dict__.items() if key != "optimizer"}

    def load_state_dict(self, state_dict):
        """Load the scheduler's state (an object returned by :meth:`state_dict`)."""
        self.__dict__.update(state_dict)

    def get_last_lr(self):
        """Return the last learning rates computed by the scheduler, one per param group."""
        return self._last_lr

    def get_lr(self):
        """Compute the next learning rate for each of the optimizer's param_groups."""
        raise NotImplementedError

    def step(self, epoch=None):
        """Step the scheduler (call it after the optimizer's ``step()``)."""
        if self._step_count == 1:
            if not hasattr(self.optimizer.step, "_wrapped_by_lr_sched"):
                warnings.warn(
                    "Seems like `optimizer.step()` has been overridden after learning rate scheduler "
                    "initialization. Please, make sure to call `optimizer.step()` before "
                    f"`lr_scheduler.step()`. See more details at {_ADJUST_LR_DOCS}",
                    UserWarning,
                    stacklevel=2,
                )
            elif not getattr(self.optimizer, "_opt_called", False):
                warnings.warn(
                    "Detected call of `lr_scheduler.step()` before `optimizer.step()`. "
                    "In PyTorch 1.1.0 and later, you should call them in the opposite order: "
                    "`optimizer.step()` before `lr_scheduler.step()`.  Failure to do this "
                    "will result in PyTorch skipping the first value of the learning rate schedule. "
                    f"See more details at {_ADJUST_LR_DOCS}",
                    UserWarning,
                    stacklevel=2,
                )
        self._step_count += 1
        if epoch is not None:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self._update_lr(epoch)

    def _update_lr(self, epoch=None):
        with _enable_get_lr_call(self):
            if epoch is None:
                self.last_epoch += 1
                values = self.get_lr()
            else:
                # An explicit epoch uses the closed form where the scheduler has one.
                self.last_epoch = epoch
                closed_form = getattr(self, "_get_closed_form_lr", None)
                values = closed_form() if closed_form is not None else self.get_lr()
        for param_group, lr in zip(self.optimizer.param_groups, values, strict=True):
            _update_param_group_val(param_group, "lr", lr)
        self._last_lr = _param_groups_val_list(self.optimizer, "lr")

    # Helpers of the chainable schedulers: the current lrs, unchanged or times one factor.
    def _current_lrs(self):
        return _param_groups_val_list(self.optimizer, "lr")

    def _scaled_lrs(self, factor):
        return [group["lr"] * factor for group in self.optimizer.param_groups]


# A subclass, not an alias, so that its __name__ is _LRScheduler (as in PyTorch).
class _LRScheduler(LRScheduler):
    pass


class _LambdaScheduler(LRScheduler):
    """LambdaLR and MultiplicativeLR: one lr function per param group, saved in state_dict only
    when it is a callable object (its ``__dict__``), not a function or lambda."""

    _check_callable = False  # MultiplicativeLR checks (as PyTorch), LambdaLR fails on the first call

    def __init__(self, optimizer, lr_lambda, last_epoch=-1):
        self.optimizer = optimizer
        if not isinstance(lr_lambda, (list, tuple)):
            self.lr_lambdas = [lr_lambda] * len(optimizer.param_groups)
        elif len(lr_lambda) != len(optimizer.param_groups):
            raise ValueError(f"Expected {len(optimizer.param_groups)} lr_lambdas, but got {len(lr_lambda)}")
        else:
            self.lr_lambdas = list(lr_lambda)
        if self._check_callable:
            for fn in self.lr_lambdas:
                if not callable(fn):
                    raise TypeError(f"lr_lambda should be a function, but got {type(fn).__name__}")
        super().__init__(optimizer, last_epoch)

    def state_dict(self):
        """The scheduler's state; the lr lambdas are saved only if they are callable objects."""
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambdas")}
        state["lr_lambdas"] = [None if isinstance(fn, types.FunctionType) else fn.__dict__.copy()
                               for fn in self.lr_lambdas]
        return state

    def load_state_dict(self, state_dict):
        """Load the scheduler's state."""
        saved = state_dict.pop("lr_lambdas")
        self.__dict__.update(state_dict)
        state_dict["lr_lambdas"] = saved  # leave the caller's dict as it was
        for fn, fn_state in zip(self.lr_lambdas, saved):
            if fn_state is not None:
                fn.__dict__.update(fn_state)


class LambdaLR(_LambdaScheduler):
    """Sets the learning rate of each parameter group to the initial lr times a given function.

    Args:
        optimizer (Optimizer): Wrapped optimizer.
        lr_lambda (function or list): A function which computes a multiplicative factor given an
            integer parameter epoch, or a list of such functions, one for each group.
        last_epoch (int): The index of last epoch. Default: -1.
    """

    def get_lr(self):
        """Compute the next learning rate for each of the optimizer's param_groups."""
        _warn_get_lr_called_within_step(self)
        return [base_lr * lmbda(self.last_epoch)
                for lmbda, base_lr in zip(self.lr_lambdas, self.base_lrs, strict=True)]


class MultiplicativeLR(_LambdaScheduler):
    """Multiply the learning rate of each parameter group by the factor given in the specified
    function (arguments as :class:`LambdaLR`'s)."""

    _check_callable = True

    def get_lr(self):
        """Compute the next learning rate for each of the optimizer's param_groups."""
        _warn_get_lr_called_within_step(self)
        if self._is_initial:
            return self._current_lrs()
        return [group["lr"] * lmbda(self.last_epoch)
                for lmbda, group in zip(self.lr_lambdas, self.optimizer.param_groups, strict=True)]


class StepLR(LRScheduler):
    """Decays the learning rate of each parameter group by gamma every step_size epochs.

    Args:
        optimizer (Optimizer): Wrapped optimizer.
        step_size (int): Period of learning rate decay.
        gamma (float): Multiplicative factor of learning rate decay. Default: 0.1.
        last_epoch (int): The index of last epoch. Default: -1.
    """

    def __init__(self, optimizer, step_size, gamma=0.1, last_epoch=-1):
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        """Compute the next learning rate for each of the optimizer's param_groups."""
        _warn_get_lr_called_within_step(self)
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return self._current_lrs()
        return self._scaled_lrs(self.gamma)

    def _get_closed_form_lr(self):
        return [base_lr * self.gamma ** (self.last_epoch // self.step_size) for base_lr in self.base_lrs]


class MultiStepLR(LRScheduler):
    """Decays the learning rate of each parameter group by gamma once the number of epoch reaches
    one of the milestones.

    Args:
        optimizer (Optimizer): Wrapped optimizer.
        milestones (list): List of epoch indices. Must be increasing.
        gamma (float): Multiplicative factor of learning rate decay. Default: 0.1.
        last_epoch (int): The index of last epoch. Default: -1.
    """

    def __init__(self, optimizer, milestones, gamma=0.1, last_epoch=-1):
        self.milestones = Counter(milestones)  # a repeated milestone decays once per repeat
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        """Compute the next learning rate for each of the optimizer's param_groups."""
        _warn_get_lr_called_within_step(self)
        if self.last_epoch not in self.milestones:
            return self._current_lrs()
        return self._scaled_lrs(self.gamma ** self.milestones[self.last_epoch])

    def _get_closed_form_lr(self):
        milestones = sorted(self.milestones.elements())
        return [base_lr * self.gamma ** bisect_right(milestones, self.last_epoch) for base_lr in self.base_lrs]


class ConstantLR(LRScheduler):
    """Multiply the learning rate of each parameter group by a small constant factor until the
    number of epoch reaches a pre-defined milestone: total_iters.

    Args:
        optimizer (Optimizer): Wrapped optimizer.
        factor (float): The number we multiply learning rate until the milestone. Default: 1./3.
        total_iters (int): The number of steps that the scheduler multiplies the learning rate by
            the factor. Default: 5.
        last_epoch (int): The index of the last epoch. Default: -1.
    """

    def __init__(self, optimizer, factor=1.0 / 3, total_iters=5, last_epoch=-1):
        if factor > 1.0 or factor < 0:
            raise ValueError("Constant multiplicative factor expected to be between 0 and 1.")
        self.factor = factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        """Compute the next learning rate for each of the optimizer's param_groups."""
        _warn_get_lr_called_within_step(self)
        if self.last_epoch == 0:
            return self._scaled_lrs(self.factor)
        if self.last_epoch != self.total_iters:
            return self._current_lrs()
        return self._scaled_lrs(1.0 / self.factor)

    def _get_closed_form_lr(self):
        return [base_lr * (self.factor + (self.last_epoch >= self.total_iters) * (1 - self.factor))
                for base_lr in self.base_lrs]


class LinearLR(LRScheduler):
    """Decays the learning rate of each parameter group by linearly changing small multiplicative
    factor until the number of epoch reaches a pre-defined milestone: total_iters.

    Args:
        optimizer (Optimizer): Wrapped optimizer.
        start_factor (float): The number we multiply learning rate in the first epoch. Default: 1./3.
        end_factor (float): The number we multiply learning rate at the end of linear changing
            process. Default: 1.0.
        total_iters (int): The number of iterations that multiplicative factor reaches to 1. Default: 5.
        last_epoch (int): The index of the last epoch. Default: -1.
    """

    def __init__(self, optimizer, start_factor=1.0 / 3, end_factor=1.0, total_iters=5, last_epoch=-1):
        if start_factor > 1.0 or start_factor <= 0:
            raise ValueError(
                "Starting multiplicative factor expected to be greater than 0 and less or equal to 1."
            )
        if end_factor > 1.0 or end_factor < 0:
            raise ValueError("Ending multiplicative factor expected to be between 0 and 1.")
        self.start_factor = start_factor
        self.end_factor = end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        """Compute the next learning rate for each of the optimizer's param_groups."""
        _warn_get_lr_called_within_step(self)
        if self.last_epoch == 0:
            return self._scaled_lrs(self.start_factor)
        if self._is_initial or self.last_epoch > self.total_iters:
            return self._current_lrs()
        # The ratio of consecutive factors start + (end - start) * epoch / total_iters.
        delta = self.end_factor - self.start_factor
        return self._scaled_lrs(
            1.0 + delta / (self.total_iters * self.start_factor + (self.last_epoch - 1) * delta))

    def _get_closed_form_lr(self):
        return [base_lr * (self.start_factor + (self.end_factor - self.start_factor)
                           * min(self.total_iters, self.last_epoch) / self.total_iters)
                for base_lr in self.base_lrs]


class ExponentialLR(LRScheduler):
    """Decays the learning rate of each parameter group by gamma every epoch.

    Args:
        optimizer (Optimizer): Wrapped optimizer.
        gamma (float): Multiplicative factor of learning rate decay.
        last_epoch (int): The index of last epoch. Default: -1.
    """

    def __init__(self, optimizer, gamma, last_epoch=-1):
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        """Compute the next learning rate for each of the optimizer's param_groups."""
        _warn_get_lr_called_within_step(self)
        # Resuming from a checkpoint must not move the lr a step ahead of itself.
        if self._is_initial:
            return self._current_lrs()
        return self._scaled_lrs(self.gamma)

    def _get_closed_form_lr(self):
        return [base_lr * self.gamma ** self.last_epoch for base_lr in self.base_lrs]


class PolynomialLR(LRScheduler):
    """Decays the learning rate of each parameter group using a polynomial function in the given
    total_iters.

    Args:
        optimizer (Optimizer): Wrapped optimizer.
        total_iters (int): The number of steps that the scheduler decays the learning rate. Default: 5.
        power (float): The power of the polynomial. Default: 1.0.
        last_epoch (int): The index of the last epoch. Default: -1.
    """

    def __init__(self, optimizer, total_iters=5, power=1.0, last_epoch=-1):
        self.total_iters = total_iters
        self.power = power
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        """Compute the next learning rate for each of the optimizer's param_groups."""
        _warn_get_lr_called_within_step(self)
        if self._is_initial or self.last_epoch > self.total_iters:
            return self._current_lrs()
        decay_factor = ((1.0 - self.last_epoch / self.total_iters)
                        / (1.0 - (self.last_epoch - 1) / self.total_iters)) ** self.power
        return self._scaled_lrs(decay_factor)

    def _get_closed_form_lr(self):
        return [base_lr * (1.0 - min(self.total_iters, self.last_epoch) / self.total_iters) ** self.power
                for base_lr in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    r"""Set the learning rate of each parameter group using a cosine annealing schedule.

    The lr follows :math:`\eta_t = \eta_{min} + \frac{1}{2}(\eta_{max} - \eta_{min})(1 +
    \cos(\frac{T_{cur}}{T_{max}}\pi))`, computed recursively from the current lr (so that other
    changes to the lr compose with it), without restarts.

    Args:
        optimizer (Optimizer): Wrapped optimizer.
        T_max (int): Maximum number of iterations.
        eta_min (float): Minimum learning rate. Default: 0.
        last_epoch (int): The index of the last epoch. Default: -1.
    """

    def __init__(self, optimizer, T_max, eta_min=0.0, last_epoch=-1):
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        """Compute the next learning rate for each of the optimizer's param_groups."""
        _warn_get_lr_called_within_step(self)
        groups = self.optimizer.param_groups
        if self._is_initial:
            return self._current_lrs()
        if self._step_count == 1 and self.last_epoch > 0:
            # First step after resuming: nothing to recurse from, use the closed form.
            return [self.eta_min + (base_lr - self.eta_min) * (1 + math.cos(self.last_epoch * math.pi / self.T_max)) / 2
                    for base_lr in self.base_lrs]
        if (self.last_epoch - 1 - self.T_max) % (2 * self.T_max) == 0:
            # Leaving the minimum (the recursion's ratio would divide by zero): add the first rise.
            return [group["lr"] + (base_lr - self.eta_min) * (1 - math.cos(math.pi / self.T_max)) / 2
                    for base_lr, group in zip(self.base_lrs, groups, strict=True)]
        return [(1 + math.cos(math.pi * self.last_epoch / self.T_max))
                / (1 + math.cos(math.pi * (self.last_epoch - 1) / self.T_max))
                * (group["lr"] - self.eta_min) + self.eta_min
                for group in groups]

    def _get_closed_form_lr(self):
        return [self.eta_min + (base_lr - self.eta_min) * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
                for base_lr in self.base_lrs]


def _check_composable(owner, optimizer, schedulers):
    """SequentialLR/ChainedScheduler: schedulers of one optimizer, none a ReduceLROnPlateau."""
    name = type(owner).__name__
    for index, scheduler in enumerate(schedulers):
        if not hasattr(scheduler, "optimizer"):
            raise TypeError(f"{name} at index {index} should have `optimizer` as its attribute.")
        if isinstance(scheduler, ReduceLROnPlateau):
            raise ValueError(
                f"{name} does not support `ReduceLROnPlateau` scheduler as it "
                "requires additional kwargs to be specified when calling `step`, "
                f"but got one at index {index} in the given schedulers sequence."
            )
        if optimizer != scheduler.optimizer:
            raise ValueError(
                f"{name} expects all schedulers to belong to the same optimizer, but "
                f"got scheduler {type(scheduler).__name__} at index {index} has {scheduler.optimizer}, "
                f"which is different from {type(optimizer).__name__}."
            )


class _ComposedState:
    """state_dict/load_state_dict of a scheduler made of others (saved under `_schedulers`)."""

    def state_dict(self):
        """The scheduler's state, with the state of each wrapped scheduler."""
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "_schedulers")}
        state["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return state

    def load_state_dict(self, state_dict):
        """Load the scheduler's state, and that of each wrapped scheduler."""
        saved = state_dict.pop("_schedulers")
        self.__dict__.update(state_dict)
        state_dict["_schedulers"] = saved  # leave the caller's dict as it was
        for scheduler, state in zip(self._schedulers, saved):
            scheduler.load_state_dict(state)


class SequentialLR(_ComposedState, LRScheduler):
    """Contains a list of schedulers expected to be called sequentially during the optimization process.

    Args:
        optimizer (Optimizer): Wrapped optimizer.
        schedulers (list): List of chained schedulers.
        milestones (list): List of integers that reflects milestone points.
        last_epoch (int): The index of last epoch. Default: -1.
    """

    def __init__(self, optimizer, schedulers, milestones, last_epoch=-1):
        if len(schedulers) < 1:
            raise ValueError(f"{type(self).__name__} expects at least one scheduler, but got no scheduler.")
        _check_composable(self, optimizer, schedulers)
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(
                "Sequential Schedulers expects number of schedulers provided to be one more "
                f"than the number of milestone points, but got number of schedulers {len(schedulers)} and the "
                f"number of milestones to be equal to {len(milestones)}"
            )
        self._schedulers = schedulers
        self._milestones = milestones
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        # Undo the initial steps the schedulers made when built, then make only the first one's.
        for group in optimizer.param_groups:
            _update_param_group_val(group, "lr", group["initial_lr"])
        self.recursive_undo()
        idx = bisect_right(self._milestones, 0)
        self._schedulers[idx]._initial_step()
        self._last_lr = schedulers[idx].get_last_lr()

    def recursive_undo(self, sched=None):
        """Recursively undo any step performed by the initialization of schedulers."""
        scheds = self if sched is None else sched
        if hasattr(scheds, "_schedulers"):
            for s in scheds._schedulers:
                self.recursive_undo(s)
        elif hasattr(scheds, "last_epoch"):
            scheds.last_epoch -= 1

    def step(self):
        """Perform a step."""
        self.last_epoch += 1
        idx = bisect_right(self._milestones, self.last_epoch)
        scheduler = self._schedulers[idx]
        if idx > 0 and self._milestones[idx - 1] == self.last_epoch:
            scheduler._update_lr(0)  # a scheduler starts from its epoch 0 at its milestone
        else:
            scheduler.step()
        self._last_lr = scheduler.get_last_lr()


class ChainedScheduler(_ComposedState, LRScheduler):
    """Chains a list of learning rate schedulers: one step() steps each of them in turn.

    Args:
        schedulers (sequence): sequence of chained schedulers.
        optimizer (Optimizer, optional): Wrapped optimizer. Default: None.
    """

    def __init__(self, schedulers, optimizer=None):
        if len(schedulers) < 1:
            raise ValueError(
                f"{type(self).__name__} expects at least one scheduler to be chained, but got no scheduler."
            )
        optimizer = optimizer or schedulers[0].optimizer
        _check_composable(self, optimizer, schedulers)
        self._schedulers = schedulers
        self.optimizer = optimizer
        self._last_lr = _param_groups_val_list(self._schedulers[-1].optimizer, "lr")

    def step(self):
        """Perform a step."""
        for scheduler in self._schedulers:
            scheduler.step()
        self._last_lr = _param_groups_val_list(self._schedulers[-1].optimizer, "lr")


class ReduceLROnPlateau(LRScheduler):
    """Reduce learning rate when a metric has stopped improving.

    Args:
        optimizer (Optimizer): Wrapped optimizer.
        mode (str): One of `min`, `max`. Default: 'min'.
        factor (float): Factor by which the learning rate will be reduced. new_lr = lr * factor.
            Default: 0.1.
        patience (int): The number of allowed epochs with no improvement after which the learning
            rate will be reduced. Default: 10.
        threshold (float): Threshold for measuring the new optimum. Default: 1e-4.
        threshold_mode (str): One of `rel`, `abs`. Default: 'rel'.
        cooldown (int): Number of epochs to wait before resuming normal operation after lr has been
            reduced. Default: 0.
        min_lr (float or list): A lower bound on the learning rate of all param groups or each group
            respectively. Default: 0.
        eps (float): Minimal decay applied to lr. If the difference between new and old lr is
            smaller than eps, the update is ignored. Default: 1e-8.
    """

    def __init__(self, optimizer, mode="min", factor=0.1, patience=10, threshold=1e-4,
                 threshold_mode="rel", cooldown=0, min_lr=0, eps=1e-8):
        if factor >= 1.0:
            raise ValueError("Factor should be < 1.0.")
        self.factor = factor
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if isinstance(min_lr, (list, tuple)):
            if len(min_lr) != len(optimizer.param_groups):
                raise ValueError(f"expected {len(optimizer.param_groups)} min_lrs, got {len(min_lr)}")
            self.default_min_lr = None
            self.min_lrs = list(min_lr)
        else:
            self.default_min_lr = min_lr
            self.min_lrs = [min_lr] * len(optimizer.param_groups)
        self.patience = patience
        self.cooldown = cooldown
        self.eps = eps
        self.last_epoch = 0
        self._last_lr = _param_groups_val_list(self.optimizer, "lr")
        self._init_is_better(mode=mode, threshold=threshold, threshold_mode=threshold_mode)
        self._reset()

    def _reset(self):
        """Reset num_bad_epochs counter and cooldown counter."""
        self.best = self.mode_worse
        self.cooldown_counter = 0
        self.num_bad_epochs = 0

    def step(self, metrics, epoch=None):
        """Perform a step."""
        current = float(metrics)  # a 0-dim tensor is accepted too
        if epoch is None:
            epoch = self.last_epoch + 1
        else:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self.last_epoch = epoch
        if self._is_better(current, self.best):
            self.best = current
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1
        if self.in_cooldown:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0  # bad epochs during cooldown do not count
        if self.num_bad_epochs > self.patience:
            self._reduce_lr(epoch)
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = _param_groups_val_list(self.optimizer, "lr")

    def _reduce_lr(self, epoch):
        groups = self.optimizer.param_groups
        if len(groups) != len(self.min_lrs):
            if self.default_min_lr is None:
                raise RuntimeError(
                    "The number of param groups in the `optimizer` "
                    f"({len(groups)}) differs "
                    f"from when `ReduceLROnPlateau` was initialized "
                    f"({len(self.min_lrs)}), usually due to a new "
                    "param group being added to the optimizer. Please "
                    "modify the `min_lrs` field to match the length "
                    "of the `optimizer` param groups."
                )
            self.min_lrs = [self.default_min_lr] * len(groups)
        for i, param_group in enumerate(groups):
            old_lr = float(param_group["lr"])
            new_lr = max(old_lr * self.factor, self.min_lrs[i])
            if old_lr - new_lr > self.eps:
                _update_param_group_val(param_group, "lr", new_lr)

    @property
    def in_cooldown(self):
        return self.cooldown_counter > 0

    def _is_better(self, a, best):
        if self.mode == "min" and self.threshold_mode == "rel":
            return a < best * (1.0 - self.threshold)
        if self.mode == "min":
            return a < best - self.threshold
        if self.threshold_mode == "rel":
            return a > best * (self.threshold + 1.0)
        return a > best + self.threshold

    def _init_is_better(self, mode, threshold, threshold_mode):
        if mode not in {"min", "max"}:
            raise ValueError("mode " + mode + " is unknown!")
        if threshold_mode not in {"rel", "abs"}:
            raise ValueError("threshold mode " + threshold_mode + " is unknown!")
        self.mode_worse = math.inf if mode == "min" else -math.inf
        self.mode = mode
        self.threshold = threshold
        self.threshold_mode = threshold_mode

    def load_state_dict(self, state_dict):
        """Load the scheduler's state."""
        self.__dict__.update(state_dict)
        self._init_is_better(mode=self.mode, threshold=self.threshold, threshold_mode=self.threshold_mode)


def _init_cycled_momentum(scheduler, optimizer, base_momentum, max_momentum, last_epoch):
    """CyclicLR/OneCycleLR with cycle_momentum: the bounds per group; a fresh start sets the
    momentum (or beta1) to its upper bound. Returns (base_momentums, max_momentums)."""
    if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
        raise ValueError("optimizer must support momentum or beta1 with `cycle_momentum` option enabled")
    scheduler.use_beta1 = "betas" in optimizer.defaults
    base_momentums = _format_param("base_momentum", optimizer, base_momentum)
    max_momentums = _format_param("max_momentum", optimizer, max_momentum)
    if last_epoch == -1:
        for m_momentum, b_momentum, group in zip(max_momentums, base_momentums, optimizer.param_groups, strict=True):
            _set_momentum(group, scheduler.use_beta1, m_momentum)
            group["max_momentum"] = m_momentum
            group["base_momentum"] = b_momentum
    return base_momentums, max_momentums


class CyclicLR(LRScheduler):
    r"""Sets the learning rate of each parameter group according to cyclical learning rate policy (CLR).

    Args:
        optimizer (Optimizer): Wrapped optimizer.
        base_lr (float or list): Initial learning rate which is the lower boundary in the cycle
            for each parameter group.
        max_lr (float or list): Upper learning rate boundaries in the cycle for each parameter group.
        step_size_up (int): Number of training iterations in the increasing half of a cycle.
            Default: 2000
        step_size_down (int): Number of training iterations in the decreasing half of a cycle.
            If step_size_down is None, it is set to step_size_up. Default: None
        mode (str): One of {triangular, triangular2, exp_range}. Ignored if scale_fn is given.
            Default: 'triangular'
        gamma (float): Constant in 'exp_range' scaling function: gamma**(cycle iterations).
            Default: 1.0
        scale_fn (function): Custom scaling policy defined by a single argument lambda function,
            where 0 <= scale_fn(x) <= 1 for all x >= 0. Default: None
        scale_mode (str): {'cycle', 'iterations'}. Whether scale_fn is evaluated on cycle number
            or cycle iterations. Default: 'cycle'
        cycle_momentum (bool): If ``True``, momentum is cycled inversely to learning rate between
            'base_momentum' and 'max_momentum'. Default: True
        base_momentum (float or list): Lower momentum boundaries in the cycle. Default: 0.8
        max_momentum (float or list): Upper momentum boundaries in the cycle. Default: 0.9
        last_epoch (int): The index of the last batch. Default: -1
    """

    def __init__(self, optimizer, base_lr, max_lr, step_size_up=2000, step_size_down=None,
                 mode="triangular", gamma=1.0, scale_fn=None, scale_mode="cycle", cycle_momentum=True,
                 base_momentum=0.8, max_momentum=0.9, last_epoch=-1):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        base_lrs = _format_param("base_lr", optimizer, base_lr)
        if last_epoch == -1:
            for lr, group in zip(base_lrs, optimizer.param_groups, strict=True):
                _update_param_group_val(group, "lr", lr)
        self.max_lrs = _format_param("max_lr", optimizer, max_lr)
        step_size_up = float(step_size_up)
        step_size_down = float(step_size_down) if step_size_down is not None else step_size_up
        self.total_size = step_size_up + step_size_down
        self.step_ratio = step_size_up / self.total_size
        if mode not in ["triangular", "triangular2", "exp_range"] and scale_fn is None:
            raise ValueError("mode is invalid and scale_fn is None")
        self.mode = mode
        self.gamma = gamma
        self._scale_fn_custom = scale_fn
        self.scale_mode = scale_mode
        self._init_scale_fn()
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            self.base_momentums, self.max_momentums = _init_cycled_momentum(
                self, optimizer, base_momentum, max_momentum, last_epoch)
        super().__init__(optimizer, last_epoch)
        self.base_lrs = base_lrs

    def _init_scale_fn(self):
        # The built-in modes fix scale_mode; a custom scale_fn keeps the one given.
        if self._scale_fn_custom is not None:
            return
        if self.mode == "triangular":
            self._scale_fn_ref = self._triangular_scale_fn
            self.scale_mode = "cycle"
        elif self.mode == "triangular2":
            self._scale_fn_ref = self._triangular2_scale_fn
            self.scale_mode = "cycle"
        elif self.mode == "exp_range":
            self._scale_fn_ref = partial(self._exp_range_scale_fn, self.gamma)
            self.scale_mode = "iterations"

    def scale_fn(self, x):
        """Get the scaling policy."""
        if self._scale_fn_custom is not None:
            return self._scale_fn_custom(x)
        return self._scale_fn_ref(x)

    @staticmethod
    def _triangular_scale_fn(x):
        return 1.0

    @staticmethod
    def _triangular2_scale_fn(x):
        return 1 / (2.0 ** (x - 1))

    @staticmethod
    def _exp_range_scale_fn(gamma, x):
        return gamma**x

    def get_lr(self):
        """Compute the next learning rate for each of the optimizer's param_groups (and, with
        cycle_momentum, set their momentum)."""
        _warn_get_lr_called_within_step(self)
        cycle = math.floor(1 + self.last_epoch / self.total_size)
        x = 1.0 + self.last_epoch / self.total_size - cycle
        if x <= self.step_ratio:
            scale_factor = x / self.step_ratio
        else:
            scale_factor = (x - 1) / (self.step_ratio - 1)
        scale = self.scale_fn(cycle if self.scale_mode == "cycle" else self.last_epoch)
        lrs = [base_lr + (max_lr - base_lr) * scale_factor * scale
               for base_lr, max_lr in zip(self.base_lrs, self.max_lrs, strict=True)]
        if self.cycle_momentum:
            momentums = [max_m - (max_m - base_m) * scale_factor * scale
                         for base_m, max_m in zip(self.base_momentums, self.max_momentums, strict=True)]
            for group, momentum in zip(self.optimizer.param_groups, momentums, strict=True):
                _set_momentum(group, self.use_beta1, momentum)
        return lrs

    def state_dict(self):
        """The scheduler's state; a custom scale_fn is saved only if it is a callable object."""
        state = super().state_dict()
        state.pop("_scale_fn_ref", None)  # a bound function or partial: rebuilt on load
        fn = state.pop("_scale_fn_custom")
        state["_scale_fn_custom"] = None
        if fn is not None and not isinstance(fn, types.FunctionType):
            state["_scale_fn_custom"] = fn.__dict__.copy()
        return state

    def load_state_dict(self, state_dict):
        """Load the scheduler's state."""
        fn_state = state_dict.pop("_scale_fn_custom")
        super().load_state_dict(state_dict)
        if fn_state is not None:
            self._scale_fn_custom.__dict__.update(fn_state)
        self._init_scale_fn()


class CosineAnnealingWarmRestarts(LRScheduler):
    r"""Set the learning rate of each parameter group using a cosine annealing schedule with
    warm restarts (SGDR): :math:`\eta_t = \eta_{min} + \frac{1}{2}(\eta_{max} - \eta_{min})
    (1 + \cos(\frac{T_{cur}}{T_{i}}\pi))`, where :math:`T_i` grows by T_mult at each restart.

    Args:
        optimizer (Optimizer): Wrapped optimizer.
        T_0 (int): Number of iterations until the first restart.
        T_mult (int, optional): A factor by which :math:`T_{i}` increases after a restart. Default: 1.
        eta_min (float, optional): Minimum learning rate. Default: 0.
        last_epoch (int, optional): The index of the last epoch. Default: -1.
    """

    def __init__(self, optimizer, T_0, T_mult=1, eta_min=0.0, last_epoch=-1):
        if T_0 <= 0 or not isinstance(T_0, int):
            raise ValueError(f"Expected positive integer T_0, but got {T_0}")
        if T_mult < 1 or not isinstance(T_mult, int):
            raise ValueError(f"Expected integer T_mult >= 1, but got {T_mult}")
        if not isinstance(eta_min, (float, int)):
            raise ValueError(f"Expected float or int eta_min, but got {eta_min} of type {type(eta_min)}")
        self.T_0 = T_0
        self.T_i = T_0
        self.T_mult = T_mult
        self.eta_min = eta_min
        self.T_cur = last_epoch
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        """Compute the next learning rate for each of the optimizer's param_groups."""
        _warn_get_lr_called_within_step(self)
        return [self.eta_min + (base_lr - self.eta_min) * (1 + math.cos(math.pi * self.T_cur / self.T_i)) / 2
                for base_lr in self.base_lrs]

    def step(self, epoch=None):
        """Step could be called after every batch update, with a fractional epoch
        (``scheduler.step(epoch + i / iters)``), interleaved with calls without one."""
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur = self.T_cur + 1
            if self.T_cur >= self.T_i:
                self.T_cur = self.T_cur % self.T_i
                self.T_i = self.T_i * self.T_mult
        else:
            if epoch < 0:
                raise ValueError(f"Expected non-negative epoch, but got {epoch}")
            if epoch >= self.T_0:
                if self.T_mult == 1:
                    self.T_cur = epoch % self.T_0
                else:
                    # The restart n whose period holds epoch: T_0 * (T_mult**n - 1) / (T_mult - 1) <= epoch.
                    n = int(math.log((epoch / self.T_0 * (self.T_mult - 1) + 1), self.T_mult))
                    self.T_cur = epoch - self.T_0 * (self.T_mult**n - 1) / (self.T_mult - 1)
                    self.T_i = self.T_0 * self.T_mult ** (n)
            else:
                self.T_i = self.T_0
                self.T_cur = epoch
        self.last_epoch = math.floor(epoch)
        with _enable_get_lr_call(self):
            for param_group, lr in zip(self.optimizer.param_groups, self.get_lr(), strict=True):
                _update_param_group_val(param_group, "lr", lr)
        self._last_lr = _param_groups_val_list(self.optimizer, "lr")


def _one_cycle_phases(total_steps, pct_start, three_phase):
    """The phases of OneCycleLR: each ends at a step and anneals between named group entries."""

    def phase(end_step, start_lr, end_lr, start_momentum, end_momentum):
        return {"end_step": end_step, "start_lr": start_lr, "end_lr": end_lr,
                "start_momentum": start_momentum, "end_momentum": end_momentum}

    warmup = phase(float(pct_start * total_steps) - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum")
    if three_phase:
        return [warmup,
                phase(float(2 * pct_start * total_steps) - 2, "max_lr", "initial_lr", "base_momentum", "max_momentum"),
                phase(total_steps - 1, "initial_lr", "min_lr", "max_momentum", "max_momentum")]
    return [warmup, phase(total_steps - 1, "max_lr", "min_lr", "base_momentum", "max_momentum")]


class OneCycleLR(LRScheduler):
    r"""Sets the learning rate of each parameter group according to the 1cycle learning rate policy.

    Args:
        optimizer (Optimizer): Wrapped optimizer.
        max_lr (float or list): Upper learning rate boundaries in the cycle for each parameter group.
        total_steps (int): The total number of steps in the cycle. If not given, it is
            epochs * steps_per_epoch. Default: None
        epochs (int): The number of epochs to train for. Default: None
        steps_per_epoch (int): The number of steps per epoch to train for. Default: None
        pct_start (float): The percentage of the cycle spent increasing the learning rate. Default: 0.3
        anneal_strategy (str): {'cos', 'linear'}. Default: 'cos'
        cycle_momentum (bool): If ``True``, momentum is cycled inversely to learning rate between
            'base_momentum' and 'max_momentum'. Default: True
        base_momentum (float or list): Lower momentum boundaries in the cycle. Default: 0.85
        max_momentum (float or list): Upper momentum boundaries in the cycle. Default: 0.95
        div_factor (float): Determines the initial learning rate via initial_lr = max_lr/div_factor.
            Default: 25
        final_div_factor (float): Determines the minimum learning rate via
            min_lr = initial_lr/final_div_factor. Default: 1e4
        three_phase (bool): If ``True``, use a third phase of the schedule to annihilate the
            learning rate according to 'final_div_factor'. Default: False
        last_epoch (int): The index of the last batch. Default: -1
    """

    def __init__(self, optimizer, max_lr, total_steps=None, epochs=None, steps_per_epoch=None,
                 pct_start=0.3, anneal_strategy="cos", cycle_momentum=True, base_momentum=0.85,
                 max_momentum=0.95, div_factor=25.0, final_div_factor=1e4, three_phase=False,
                 last_epoch=-1):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if total_steps is not None:
            if total_steps <= 0 or not isinstance(total_steps, int):
                raise ValueError(f"Expected positive integer total_steps, but got {total_steps}")
            self.total_steps = total_steps
        elif epochs is not None and steps_per_epoch is not None:
            if not isinstance(epochs, int) or epochs <= 0:
                raise ValueError(f"Expected positive integer epochs, but got {epochs}")
            if not isinstance(steps_per_epoch, int) or steps_per_epoch <= 0:
                raise ValueError(f"Expected positive integer steps_per_epoch, but got {steps_per_epoch}")
            self.total_steps = epochs * steps_per_epoch
        else:
            raise ValueError("You must define either total_steps OR (epochs AND steps_per_epoch)")
        self._schedule_phases = _one_cycle_phases(self.total_steps, pct_start, three_phase)
        if pct_start < 0 or pct_start > 1 or not isinstance(pct_start, float):
            raise ValueError(f"Expected float between 0 and 1 pct_start, but got {pct_start}")
        if anneal_strategy not in ["cos", "linear"]:
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        self._anneal_func_type = anneal_strategy
        max_lrs = _format_param("max_lr", self.optimizer, max_lr)
        if last_epoch == -1:
            for group, group_max_lr in zip(self.optimizer.param_groups, max_lrs):
                group["initial_lr"] = group_max_lr / div_factor
                group["max_lr"] = group_max_lr
                group["min_lr"] = group["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            _init_cycled_momentum(self, optimizer, base_momentum, max_momentum, last_epoch)
        super().__init__(optimizer, last_epoch)

    def _anneal_func(self, *args, **kwargs):
        strategy = getattr(self, "_anneal_func_type", None)
        if strategy is None:  # a state_dict of an older PyTorch holds the function itself
            return self.anneal_func(*args, **kwargs)
        if strategy == "cos":
            return self._annealing_cos(*args, **kwargs)
        if strategy == "linear":
            return self._annealing_linear(*args, **kwargs)
        raise ValueError(f"Unknown _anneal_func_type: {strategy}")

    @staticmethod
    def _annealing_cos(start, end, pct):
        """Cosine anneal from `start` to `end` as pct goes from 0.0 to 1.0."""
        cos_out = math.cos(math.pi * pct) + 1
        return end + (start - end) / 2.0 * cos_out

    @staticmethod
    def _annealing_linear(start, end, pct):
        """Linearly anneal from `start` to `end` as pct goes from 0.0 to 1.0."""
        return (end - start) * pct + start

    def get_lr(self):
        """Compute the next learning rate for each of the optimizer's param_groups (and, with
        cycle_momentum, set their momentum)."""
        _warn_get_lr_called_within_step(self)
        step_num = self.last_epoch
        if step_num > self.total_steps:
            raise ValueError(
                f"Tried to step {step_num} times. The specified number of total steps is {self.total_steps}"
            )
        # The phase holding step_num (the last one takes any step past its end).
        start_step = 0.0
        for i, phase in enumerate(self._schedule_phases):
            if step_num <= phase["end_step"] or i == len(self._schedule_phases) - 1:
                break
            start_step = phase["end_step"]
        pct = (step_num - start_step) / (phase["end_step"] - start_step)
        lrs = []
        for group in self.optimizer.param_groups:
            lrs.append(self._anneal_func(group[phase["start_lr"]], group[phase["end_lr"]], pct))
            if self.cycle_momentum:
                momentum = self._anneal_func(group[phase["start_momentum"]], group[phase["end_momentum"]], pct)
                _set_momentum(group, self.use_beta1, momentum)
        return lrs
