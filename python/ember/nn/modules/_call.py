"""Module.__call__ when hooks are registered: forward pre-hooks, forward, forward
hooks, and the setup of backward hooks around them (as PyTorch's _call_impl)."""
from __future__ import annotations

import warnings
from typing import Any

from ... import _C
from ...utils.hooks import BackwardHook
from . import _global_hooks as _g
from ._global_hooks import _WrappedHook


def _run_forward_pre_hooks(module: Any, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    for hook_id, hook in (*_g._global_forward_pre_hooks.items(), *module._forward_pre_hooks.items()):
        if hook_id in module._forward_pre_hooks_with_kwargs:
            args_kwargs_result = hook(module, args, kwargs)
            if args_kwargs_result is not None:
                if isinstance(args_kwargs_result, tuple) and len(args_kwargs_result) == 2:
                    args, kwargs = args_kwargs_result
                else:
                    raise RuntimeError("forward pre-hook must return None or a tuple "
                                       f"of (new_args, new_kwargs), but got {args_kwargs_result}.")
        else:
            args_result = hook(module, args)
            if args_result is not None:
                args = args_result if isinstance(args_result, tuple) else (args_result,)
    return args, kwargs


def _first_tensor(value: Any) -> Any:
    while not isinstance(value, _C.TensorBase):
        value = next(v for v in value.values() if isinstance(v, _C.TensorBase)) if isinstance(value, dict) \
            else value[0]
    return value


def call_with_hooks(module: Any, args: tuple, kwargs: dict) -> Any:
    result = None
    called_always_called_hooks: set = set()
    try:
        full_backward_hooks, non_full_backward_hooks = [], []
        backward_pre_hooks = []
        if module._backward_pre_hooks or _g._global_backward_pre_hooks:
            backward_pre_hooks = module._get_backward_pre_hooks()
        if module._backward_hooks or _g._global_backward_hooks:
            full_backward_hooks, non_full_backward_hooks = module._get_backward_hooks()
        if _g._global_forward_pre_hooks or module._forward_pre_hooks:
            args, kwargs = _run_forward_pre_hooks(module, args, kwargs)

        bw_hook = None
        if full_backward_hooks or backward_pre_hooks:
            bw_hook = BackwardHook(module, full_backward_hooks, backward_pre_hooks)
            args = bw_hook.setup_input_hook(args)

        result = module.forward(*args, **kwargs)
        for hook_id, hook in (*_g._global_forward_hooks.items(), *module._forward_hooks.items()):
            if hook_id in module._forward_hooks_always_called or hook_id in _g._global_forward_hooks_always_called:
                called_always_called_hooks.add(hook_id)
            if hook_id in module._forward_hooks_with_kwargs or hook_id in _g._global_forward_hooks_with_kwargs:
                hook_result = hook(module, args, kwargs, result)
            else:
                hook_result = hook(module, args, result)
            if hook_result is not None:
                result = hook_result

        if bw_hook:
            if not isinstance(result, (_C.TensorBase, tuple)):
                warnings.warn("For backward hooks to be called, module output should be a Tensor or a tuple of "
                              f"Tensors but received {type(result)}", stacklevel=3)
            result = bw_hook.setup_output_hook(result)

        if non_full_backward_hooks:
            # The deprecated kind: a hook on the node that made the (first) output.
            grad_fn = _first_tensor(result).grad_fn
            if grad_fn is not None:
                for hook in non_full_backward_hooks:
                    grad_fn.register_hook(_WrappedHook(hook, module))
        return result
    except Exception:
        # The always_call forward hooks that did not run yet run now; their own errors only warn.
        for hooks, always, with_kwargs, kind in (
                (_g._global_forward_hooks, _g._global_forward_hooks_always_called, {}, "global module forward hook"),
                (module._forward_hooks, module._forward_hooks_always_called, module._forward_hooks_with_kwargs,
                 "module forward hook")):
            for hook_id, hook in hooks.items():
                if hook_id not in always or hook_id in called_always_called_hooks:
                    continue
                try:
                    hook_result = (hook(module, args, kwargs, result) if hook_id in with_kwargs
                                   else hook(module, args, result))
                    if hook_result is not None:
                        result = hook_result
                except Exception as e:
                    warnings.warn(f"{kind} with ``always_call=True`` raised an exception "
                                  f"that was silenced as another error was raised in forward: {str(e)}",
                                  stacklevel=2)
        raise
