"""The base of the learning rate schedulers (ember.optim.lr_scheduler): LRScheduler, its initial
step and step-order check, and the helpers that read and write the param groups' values."""
from __future__ import annotations

import warnings
from functools import wraps
from weakref import ref

from .._tensor import Tensor
from .optimizer import Optimizer

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
