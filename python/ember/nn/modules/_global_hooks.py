"""Hooks that apply to every Module (ember.nn.modules.module.register_module_*_hook,
as PyTorch's), and _WrappedHook, a hook that gets its module passed first."""
from __future__ import annotations

import functools
import weakref
from collections import OrderedDict
from typing import Any, Callable, Optional

from ...utils.hooks import RemovableHandle

_global_buffer_registration_hooks: dict[int, Callable] = OrderedDict()
_global_module_registration_hooks: dict[int, Callable] = OrderedDict()
_global_parameter_registration_hooks: dict[int, Callable] = OrderedDict()
_global_backward_pre_hooks: dict[int, Callable] = OrderedDict()
_global_backward_hooks: dict[int, Callable] = OrderedDict()
_global_is_full_backward_hook: Optional[bool] = None
_global_forward_pre_hooks: dict[int, Callable] = OrderedDict()
_global_forward_hooks: dict[int, Callable] = OrderedDict()
_global_forward_hooks_always_called: dict[int, bool] = OrderedDict()
_global_forward_hooks_with_kwargs: dict[int, bool] = OrderedDict()


def _has_any_global_hook() -> bool:
    return bool(_global_backward_pre_hooks or _global_backward_hooks or _global_forward_pre_hooks
                or _global_forward_hooks or _global_forward_hooks_always_called or _global_forward_hooks_with_kwargs)


def _add(hooks: dict, hook: Callable, **handle_kwargs: Any) -> RemovableHandle:
    handle = RemovableHandle(hooks, **handle_kwargs)
    hooks[handle.id] = hook
    return handle


def register_module_buffer_registration_hook(hook: Callable[..., None]) -> RemovableHandle:
    """hook(module, name, buffer) runs in every module's register_buffer; a tensor it returns is registered instead."""
    return _add(_global_buffer_registration_hooks, hook)


def register_module_module_registration_hook(hook: Callable[..., None]) -> RemovableHandle:
    """hook(module, name, submodule) runs whenever a submodule is registered; a module it returns is registered
    instead."""
    return _add(_global_module_registration_hooks, hook)


def register_module_parameter_registration_hook(hook: Callable[..., None]) -> RemovableHandle:
    """hook(module, name, param) runs in every module's register_parameter; a parameter it returns is registered
    instead."""
    return _add(_global_parameter_registration_hooks, hook)


def register_module_forward_pre_hook(hook: Callable[..., None]) -> RemovableHandle:
    """A forward pre-hook of every module, run before the module's own."""
    return _add(_global_forward_pre_hooks, hook)


def register_module_forward_hook(hook: Callable[..., None], *, with_kwargs: bool = False,
                                 always_call: bool = False) -> RemovableHandle:
    """A forward hook of every module, run before the module's own."""
    handle = _add(_global_forward_hooks, hook, extra_dict=_global_forward_hooks_always_called)
    if with_kwargs:
        _global_forward_hooks_with_kwargs[handle.id] = True
    if always_call:
        _global_forward_hooks_always_called[handle.id] = True
    return handle


def _set_global_backward_kind(full: bool) -> None:
    global _global_is_full_backward_hook
    if _global_is_full_backward_hook is (not full):
        raise RuntimeError("Cannot use both regular backward hooks and full backward hooks as a "
                           "global Module hook. Please use only one of them.")
    _global_is_full_backward_hook = full


def register_module_backward_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """Deprecated: use register_module_full_backward_hook."""
    _set_global_backward_kind(False)
    return _add(_global_backward_hooks, hook)


def register_module_full_backward_pre_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """A full backward pre-hook of every module, run before the module's own."""
    return _add(_global_backward_pre_hooks, hook)


def register_module_full_backward_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """A full backward hook of every module, run before the module's own."""
    _set_global_backward_kind(True)
    return _add(_global_backward_hooks, hook)


class _WrappedHook:
    """Calls hook(module, *args), holding the module weakly (as PyTorch's)."""

    def __init__(self, hook: Callable, module: Any = None) -> None:
        self.hook: Callable = hook
        functools.update_wrapper(self, hook)
        self.with_module: bool = False
        if module is not None:
            self.module = weakref.ref(module)
            self.with_module = True

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.with_module:
            module = self.module()
            if module is None:
                raise RuntimeError("You are trying to call the hook of a dead Module!")
            return self.hook(module, *args, **kwargs)
        return self.hook(*args, **kwargs)

    def __getstate__(self) -> dict:
        result = {"hook": self.hook, "with_module": self.with_module}
        if self.with_module:
            result["module"] = self.module()
        return result

    def __setstate__(self, state: dict) -> None:
        self.hook = state["hook"]
        self.with_module = state["with_module"]
        if self.with_module:
            if state["module"] is None:
                raise RuntimeError("You are trying to revive the hook of a dead Module!")
            self.module = weakref.ref(state["module"])
