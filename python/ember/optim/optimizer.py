"""The base class of every optimizer (PyTorch's torch.optim.Optimizer)."""
from __future__ import annotations

import functools
import warnings
from collections import OrderedDict, defaultdict
from collections.abc import Iterable
from copy import deepcopy
from itertools import chain
from typing import Any, Callable, Optional

import ember

from ..utils.hooks import RemovableHandle

__all__ = ["Optimizer", "register_optimizer_step_pre_hook", "register_optimizer_step_post_hook"]


class _RequiredParameter:
    """Singleton class representing a required parameter for an Optimizer."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _RequiredParameter()

_global_optimizer_pre_hooks: dict = OrderedDict()
_global_optimizer_post_hooks: dict = OrderedDict()

# The dtypes ember's multi-tensor C++ kernels (_fused_adam, _fused_sgd) update.
_FUSED_DTYPES = (ember.float32, ember.float64, ember.float16, ember.bfloat16)


def _typename(obj: Any) -> str:
    """torch.typename: a tensor's legacy type ('ember.FloatTensor'), else the qualified class name."""
    if isinstance(obj, ember.Tensor):
        return str(obj.type())
    cls = type(obj)
    module = getattr(cls, "__module__", "") or ""
    name = getattr(cls, "__qualname__", cls.__name__)
    return name if module in ("", "builtins") else f"{module}.{name}"


def _use_grad_for_differentiable(func: Callable) -> Callable:
    """Runs `step` with grad mode on only when the optimizer is `differentiable` (else no_grad)."""

    @functools.wraps(func)
    def _use_grad(self: Optimizer, *args: Any, **kwargs: Any) -> Any:
        with ember.set_grad_enabled(self.defaults["differentiable"]):
            return func(self, *args, **kwargs)

    return _use_grad


def _get_value(x: Any) -> Any:
    """A 0-d tensor's Python number (state steps are tensors, as in PyTorch)."""
    return x.item() if isinstance(x, ember.Tensor) else x


def _to_scalar(x: Any) -> Any:
    """A one-element tensor hyperparameter (lr=ember.tensor(0.01)) as a Python number."""
    if isinstance(x, ember.Tensor) and x.dim() != 0:
        return x.squeeze()
    return x


def _check_lr(lr: Any) -> None:
    if isinstance(lr, ember.Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")


def _check_nonnegative(name: str, value: Any) -> None:
    """PyTorch's 'Invalid <name> value: v' for a negative eps or weight_decay."""
    if not 0.0 <= value:
        raise ValueError(f"Invalid {name} value: {value}")


def _check_betas(betas: Any) -> None:
    for i, beta in enumerate(betas[:2]):
        if not 0.0 <= beta < 1.0:
            raise ValueError(f"Invalid beta parameter at index {i}: {beta}")


def _check_fused_foreach(fused: Optional[bool], foreach: Optional[bool], differentiable: bool) -> None:
    if fused:
        if differentiable:
            raise RuntimeError("`fused` does not support `differentiable`")
        if foreach:
            raise RuntimeError("`fused` and `foreach` cannot be `True` together.")


def _use_multi_tensor(kernel: str, tensors: list, foreach: Optional[bool], fused: Optional[bool],
                      differentiable: bool) -> bool:
    """Whether one call of the C++ multi-tensor `kernel` updates the group: the default (foreach None),
    foreach=True and fused=True do, on CPU floating tensors; CUDA or differentiable=True run the loop
    (as does a build of ember older than the kernel)."""
    if differentiable or foreach is False and not fused or not hasattr(ember._C, kernel):
        return False
    return all(t.device.type == "cpu" and t.dtype in _FUSED_DTYPES for t in tensors)


def _zero_step() -> ember.Tensor:
    """A new `state['step']`: a 0-d float32 tensor, as PyTorch keeps it."""
    return ember.tensor(0.0, dtype=ember.float32)


def _fresh_state(p: ember.Tensor, *names: str, **extra: Any) -> dict:
    """A parameter's first state, in PyTorch's key order: a zero step, `extra`, then zeros like `p`
    under each name."""
    return dict(step=_zero_step(), **extra, **{name: ember.zeros_like(p) for name in names})


def register_optimizer_step_pre_hook(hook: Callable) -> RemovableHandle:
    """Registers a pre hook run before every optimizer's step: hook(optimizer, args, kwargs)."""
    handle = RemovableHandle(_global_optimizer_pre_hooks)
    _global_optimizer_pre_hooks[handle.id] = hook
    return handle


def register_optimizer_step_post_hook(hook: Callable) -> RemovableHandle:
    """Registers a post hook run after every optimizer's step: hook(optimizer, args, kwargs)."""
    handle = RemovableHandle(_global_optimizer_post_hooks)
    _global_optimizer_post_hooks[handle.id] = hook
    return handle


def _hooked_step(func: Callable) -> Callable:
    """Wraps a class's `step` so the step pre/post hooks (global, then the optimizer's) run around it."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        self = args[0]
        for pre_hook in chain(_global_optimizer_pre_hooks.values(), self._optimizer_step_pre_hooks.values()):
            result = pre_hook(self, args, kwargs)
            if result is not None:
                if isinstance(result, tuple) and len(result) == 2:
                    args, kwargs = result
                else:
                    raise RuntimeError(
                        f"{func} must return None or a tuple of (new_args, new_kwargs), but got {result}.")
        out = func(*args, **kwargs)
        for post_hook in chain(self._optimizer_step_post_hooks.values(), _global_optimizer_post_hooks.values()):
            post_hook(self, args, kwargs)
        return out

    wrapper.hooked = True  # type: ignore[attr-defined]
    return wrapper


_HOOK_DICTS = ("_optimizer_step_pre_hooks", "_optimizer_step_post_hooks", "_optimizer_state_dict_pre_hooks",
               "_optimizer_state_dict_post_hooks", "_optimizer_load_state_dict_pre_hooks",
               "_optimizer_load_state_dict_post_hooks")


class Optimizer:
    r"""Base class for all optimizers.

    Args:
        params (iterable): an iterable of :class:`ember.Tensor` s or :class:`dict` s. Specifies what Tensors
            should be optimized.
        defaults (dict): a dict containing default values of optimization options (used when a parameter
            group doesn't specify them).
    """

    _optimizer_step_pre_hooks: OrderedDict
    _optimizer_step_post_hooks: OrderedDict
    _optimizer_state_dict_pre_hooks: OrderedDict
    _optimizer_state_dict_post_hooks: OrderedDict
    _optimizer_load_state_dict_pre_hooks: OrderedDict
    _optimizer_load_state_dict_post_hooks: OrderedDict

    def __init__(self, params: Any, defaults: dict[str, Any]) -> None:
        self.defaults = defaults
        for name in _HOOK_DICTS:
            setattr(self, name, OrderedDict())
        self._patch_step_function()
        if isinstance(params, ember.Tensor):
            raise TypeError("params argument given to the optimizer should be "
                            "an iterable of Tensors or dicts, but got " + _typename(params))
        self.state: defaultdict = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for param_group in param_groups:
            self.add_param_group(param_group)

    def __getstate__(self) -> dict[str, Any]:
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        for name in _HOOK_DICTS:
            if name not in self.__dict__:
                setattr(self, name, OrderedDict())
        self._patch_step_function()
        self.defaults.setdefault("differentiable", False)

    def __repr__(self) -> str:
        format_string = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            format_string += f"\nParameter Group {i}\n"
            for key in sorted(group.keys()):
                if key != "params":
                    format_string += f"    {key}: {group[key]}\n"
        return format_string + ")"

    def _patch_step_function(self) -> None:
        if not getattr(self.__class__.step, "hooked", None):
            self.__class__.step = _hooked_step(self.__class__.step)  # type: ignore[method-assign]

    # ---------------------------------------------------------------- hooks
    def _add_hook(self, hooks: OrderedDict, hook: Callable, prepend: bool = False) -> RemovableHandle:
        handle = RemovableHandle(hooks)
        hooks[handle.id] = hook
        if prepend:
            hooks.move_to_end(handle.id, last=False)
        return handle

    def register_step_pre_hook(self, hook: Callable) -> RemovableHandle:
        """Registers hook(optimizer, args, kwargs) -> None or (new_args, new_kwargs), run before `step`."""
        return self._add_hook(self._optimizer_step_pre_hooks, hook)

    def register_step_post_hook(self, hook: Callable) -> RemovableHandle:
        """Registers hook(optimizer, args, kwargs) -> None, run after `step`."""
        return self._add_hook(self._optimizer_step_post_hooks, hook)

    def register_state_dict_pre_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """Registers hook(optimizer) -> None, run before `state_dict`."""
        return self._add_hook(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """Registers hook(optimizer, state_dict) -> state_dict or None, run after `state_dict`."""
        return self._add_hook(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """Registers hook(optimizer, state_dict) -> state_dict or None, run before `load_state_dict`."""
        return self._add_hook(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """Registers hook(optimizer) -> None, run after `load_state_dict`."""
        return self._add_hook(self._optimizer_load_state_dict_post_hooks, hook, prepend)

    # ---------------------------------------------------------------- state dicts
    def state_dict(self) -> dict[str, Any]:
        r"""Returns the state of the optimizer as a :class:`dict`: ``state`` (per parameter id) and
        ``param_groups`` (the options of each group, its parameters as integer ids)."""
        for pre_hook in self._optimizer_state_dict_pre_hooks.values():
            pre_hook(self)
        param_mappings: dict[int, int] = {}
        start_index = 0

        def pack_group(group: dict[str, Any]) -> dict[str, Any]:
            nonlocal start_index
            packed = {k: v for k, v in group.items() if k != "params"}
            param_mappings.update({id(p): i for i, p in enumerate(group["params"], start_index)
                                   if id(p) not in param_mappings})
            packed["params"] = [param_mappings[id(p)] for p in group["params"]]
            start_index += len(packed["params"])
            return packed

        param_groups = [pack_group(g) for g in self.param_groups]
        packed_state = {(param_mappings[id(k)] if isinstance(k, ember.Tensor) else k): v
                        for k, v in self.state.items()}
        state_dict = {"state": packed_state, "param_groups": param_groups}
        for post_hook in self._optimizer_state_dict_post_hooks.values():
            hook_result = post_hook(self, state_dict)
            if hook_result is not None:
                state_dict = hook_result
        return state_dict

    @staticmethod
    def _process_value_according_to_param_policy(param: ember.Tensor, value: ember.Tensor, param_id: Any,
                                                 param_groups: list, key: Any = None) -> ember.Tensor:
        # Steps stay as saved (float32 on CPU); other state takes the parameter's dtype and device.
        fused = capturable = False
        for pg in param_groups:
            if param_id in pg["params"]:
                fused = pg.get("fused", False)
                capturable = pg.get("capturable", False)
                break
        if key == "step":
            return value.to(dtype=ember.float32, device=param.device) if capturable or fused else value
        if param.is_floating_point():
            return value.to(dtype=param.dtype, device=param.device)
        return value.to(device=param.device)

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        r"""Loads the optimizer state from a dict returned by :meth:`state_dict` (ember's or PyTorch's layout)."""
        state_dict = state_dict.copy()
        for pre_hook in self._optimizer_load_state_dict_pre_hooks.values():
            hook_result = pre_hook(self, state_dict)
            if hook_result is not None:
                state_dict = hook_result
        groups = self.param_groups
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError("loaded state dict contains a parameter group "
                             "that doesn't match the size of optimizer's group")
        id_map = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                          chain.from_iterable(g["params"] for g in groups)))

        def _cast(param: ember.Tensor, value: Any, param_id: Any = None, key: Any = None) -> Any:
            if isinstance(value, ember.Tensor):
                return Optimizer._process_value_according_to_param_policy(
                    param, value, param_id, state_dict["param_groups"], key)
            if isinstance(value, dict):
                return {k: _cast(param, v, param_id=param_id, key=k) for k, v in value.items()}
            if isinstance(value, Iterable) and not isinstance(value, str):
                return type(value)(_cast(param, v, param_id=param_id) for v in value)  # type: ignore[call-arg]
            return value

        state: defaultdict = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                param = id_map[k]
                state[param] = _cast(param, v, param_id=k)
            else:
                state[k] = v

        def update_group(group: dict[str, Any], new_group: dict[str, Any]) -> dict[str, Any]:
            new_group["params"] = group["params"]
            if "param_names" in group and "param_names" not in new_group:
                new_group["param_names"] = group["param_names"]
            return new_group

        param_groups = [update_group(g, ng) for g, ng in zip(groups, saved_groups)]
        self.__setstate__({"state": state, "param_groups": param_groups})
        for post_hook in self._optimizer_load_state_dict_post_hooks.values():
            post_hook(self)

    # ---------------------------------------------------------------- the step
    def zero_grad(self, set_to_none: bool = True) -> None:
        r"""Resets the gradients of all optimized tensors: to None (default) or to zeros."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    if p.grad.grad_fn is not None:
                        p.grad.detach_()
                    else:
                        p.grad.requires_grad_(False)
                    p.grad.zero_()

    def step(self, closure: Optional[Callable[[], float]] = None) -> Optional[float]:
        r"""Performs a single optimization step (parameter update).

        Args:
            closure (Callable): A closure that reevaluates the model and returns the loss. Optional for most
                optimizers.
        """
        raise NotImplementedError

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        r"""Adds a param group to the :class:`Optimizer` s `param_groups` (e.g. layers unfrozen while
        fine-tuning), with the optimizer's defaults for the options it does not set."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, ember.Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but "
                            "the ordering of tensors in sets will change between runs. Please use a list instead.")
        else:
            param_group["params"] = list(params)
        # named_parameters() gives (name, tensor) pairs: the names are kept as 'param_names'.
        names = [p[0] for p in param_group["params"] if isinstance(p, tuple)]
        param_group["params"] = [p[1] if isinstance(p, tuple) else p for p in param_group["params"]]
        if names:
            if len(names) != len(param_group["params"]):
                raise ValueError("all optimizer params should be with/without names. Some param names are missing")
            param_group["param_names"] = names
        for param in param_group["params"]:
            if not isinstance(param, ember.Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is " + _typename(param))
            if not self.defaults.get("differentiable", None) and not (param.is_leaf or param.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(
                    f"parameter group didn't specify a value of required optimization parameter {name}")
            param_group.setdefault(name, default)
        params = param_group["params"]
        if len(params) != len(set(params)):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; "
                          "in future, this will cause an error; "
                          "see github.com/pytorch/pytorch/issues/40967 for more information", stacklevel=3)
        param_set: set = set()
        for group in self.param_groups:
            param_set.update(set(group["params"]))
            if ("param_names" in param_group) != ("param_names" in group):
                current = "with names" if "param_names" in param_group else "without names"
                raise ValueError("all optimizer param groups should be with/without names. "
                                 f"cannot add param group {current} to the optimizer")
        if not param_set.isdisjoint(set(param_group["params"])):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)


def _closure_loss(closure: Optional[Callable[[], Any]]) -> Any:
    """Runs a step's closure with grad mode on (the step itself runs under no_grad)."""
    if closure is None:
        return None
    with ember.enable_grad():
        return closure()


class _GroupStepOptimizer(Optimizer):
    """An optimizer whose step updates each parameter group in turn (`_update_group`). `_group_defaults`
    fill options an older pickle lacks; numbers under `_tensor_state_keys` become 0-d float32 tensors."""

    _group_defaults: dict = {}
    _tensor_state_keys: tuple = ("step",)

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            for key, value in self._group_defaults.items():
                group.setdefault(key, value)
            for p in group["params"]:
                p_state = self.state.get(p, {})
                for key in self._tensor_state_keys:
                    if key in p_state and not isinstance(p_state[key], ember.Tensor):
                        p_state[key] = ember.tensor(float(p_state[key]), dtype=ember.float32)

    @_use_grad_for_differentiable
    def step(self, closure: Optional[Callable[[], Any]] = None) -> Any:
        """Performs a single optimization step.

        Args:
            closure (Callable, optional): A closure that reevaluates the model and returns the loss.
        """
        loss = _closure_loss(closure)
        for group in self.param_groups:
            if not self._amp_skips(group):
                self._update_group(group)
        return loss

    def _update_group(self, group: dict[str, Any]) -> None:
        raise NotImplementedError

    def _init_group_state(self, group: dict[str, Any]) -> Any:
        """Creates the states of the group's parameters with gradients (an optimizer with state says how)."""

    def _amp_skips(self, group: dict[str, Any]) -> bool:
        """A fused group under GradScaler (PyTorch's `_step_supports_amp_scaling`): GradScaler.step set
        `grad_scale` (None when the gradients were unscaled already) and `found_inf`. As PyTorch's fused
        kernels, the gradients are divided by the scale in place, and after an inf the update is skipped
        (the states are created all the same)."""
        grad_scale, found_inf = getattr(self, "grad_scale", None), getattr(self, "found_inf", None)
        if not group.get("fused") or (grad_scale is None and found_inf is None):
            return False
        if found_inf is not None and found_inf.item() != 0:
            self._init_group_state(group)
            return True
        if grad_scale is not None:
            with ember.no_grad():
                for p in group["params"]:
                    if p.grad is not None:
                        p.grad.div_(grad_scale.to(p.grad.device))
        return False

    def _with_grads(self, group: dict[str, Any], init: Callable[[ember.Tensor], dict]) -> tuple[list, list]:
        """The group's parameters that have a gradient and their states (filled by init(p) when empty)."""
        params = [p for p in group["params"] if p.grad is not None]
        states = [self.state[p] for p in params]
        for p, state in zip(params, states):
            if len(state) == 0:
                state.update(init(p))
        return params, states


# Docstrings: the arguments every optimizer shares, worded as PyTorch's.
_PARAMS_DOC = ("params (iterable): iterable of parameters or named_parameters to optimize or iterable of dicts "
               "defining parameter groups")
_BETAS_DOC = ("betas (tuple[float, float], optional): coefficients used for computing running averages of gradient "
              "and its square (default: (0.9, 0.999))")
_WEIGHT_DECAY_DOC = "weight_decay (float, optional): weight decay (L2 penalty) (default: 0)"
_LOOP_FLAGS_DOC = "foreach, capturable (bool, optional): accepted; the update is a loop of ember ops over the tensors"
_MAXIMIZE_DOC = "maximize (bool, optional): maximize the objective with respect to the params, instead of minimizing"
_DIFFERENTIABLE_DOC = "differentiable (bool, optional): whether autograd should occur through the optimizer step"


def _lr_doc(default: float) -> str:
    return f"lr (float, Tensor, optional): learning rate (default: {default})"


def _eps_doc(default: float) -> str:
    return f"eps (float, optional): term added to the denominator to improve numerical stability (default: {default})"


def _docstring(summary: str, *args: str) -> str:
    """An optimizer's docstring: the summary, then `params` and the given arguments."""
    return "\n".join([summary, "", "Args:"] + ["    " + a for a in (_PARAMS_DOC,) + args])


def _check_adam_args(lr: Any, eps: float, betas: Any, weight_decay: float) -> None:
    """The checks of the Adam family, in PyTorch's order."""
    _check_lr(lr)
    _check_nonnegative("epsilon", eps)
    _check_betas(betas)
    _check_nonnegative("weight_decay", weight_decay)
