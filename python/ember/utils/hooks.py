"""Handles that remove hooks (PyTorch's torch.utils.hooks.RemovableHandle), and
BackwardHook, the machinery of nn.Module's full backward hooks."""
from __future__ import annotations

import warnings
import weakref
from collections import OrderedDict
from typing import Any, Callable, Optional


class RemovableHandle:
    """Removes one hook: `handle.remove()`, or leaving a `with handle:` block.

    `hooks_dict` holds the hook under `handle.id`; the handle refers to it weakly,
    so a handle never keeps a hook (or the graph it is registered on) alive.
    `extra_dict` (a dict or a list of them) loses the same key on removal."""

    id: int
    next_id: int = 0

    def __init__(self, hooks_dict: Any, *, extra_dict: Any = None) -> None:
        self.hooks_dict_ref = weakref.ref(hooks_dict)
        self.id = RemovableHandle.next_id
        RemovableHandle.next_id += 1
        self.extra_dict_ref: tuple = ()
        if isinstance(extra_dict, dict):
            self.extra_dict_ref = (weakref.ref(extra_dict),)
        elif isinstance(extra_dict, list):
            self.extra_dict_ref = tuple(weakref.ref(d) for d in extra_dict)

    def remove(self) -> None:
        """Unregisters the hook; removing twice is harmless."""
        for ref in (self.hooks_dict_ref, *self.extra_dict_ref):
            hooks = ref()
            if hooks is not None and self.id in hooks:
                del hooks[self.id]

    def __getstate__(self) -> tuple:
        return (self.hooks_dict_ref(), self.id, tuple(ref() for ref in self.extra_dict_ref))

    def __setstate__(self, state: tuple) -> None:
        # A dict that is gone leaves a dead reference.
        self.hooks_dict_ref = weakref.ref(OrderedDict() if state[0] is None else state[0])
        self.id = state[1]
        RemovableHandle.next_id = max(RemovableHandle.next_id, self.id + 1)
        extra = state[2] if len(state) > 2 and state[2] is not None else ()
        self.extra_dict_ref = tuple(weakref.ref(d) for d in extra if d is not None)

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, type: Any, value: Any, tb: Any) -> None:
        self.remove()


class BackwardHook:
    """Runs a module's full backward (pre-)hooks, as PyTorch's.

    The module's tensor inputs and outputs each pass through one BackwardHookFunction
    (identity) node: the output node's hook sees grad_output (and runs the pre-hooks),
    the input node's hook then sees grad_input and runs the user hooks with both.
    Non-tensor positions are None in what the hooks get."""

    def __init__(self, module: Any, user_hooks: list, user_pre_hooks: list) -> None:
        self.user_hooks = user_hooks
        self.user_pre_hooks = user_pre_hooks
        self.module = module
        self.grad_outputs: Optional[tuple] = None
        self.n_outputs = -1
        self.output_tensors_index: Optional[list] = None
        self.n_inputs = -1
        self.input_tensors_index: Optional[list] = None

    # The index lists are set (not None) whenever the hooks using them are registered.
    @staticmethod
    def _pack_with_none(indices: Optional[list], values: Any, size: int) -> tuple:
        res: list = [None] * size
        for idx, val in zip(indices or (), values):
            res[idx] = val
        return tuple(res)

    @staticmethod
    def _unpack_none(indices: Optional[list], values: Any) -> tuple:
        return tuple(values[idx] for idx in indices or ())

    def _set_user_hook(self, grad_fn: Any) -> None:
        def hook(grad_input: tuple, _: Any) -> Optional[tuple]:
            if self.grad_outputs is None:
                # The gradient reached the inputs without passing through the outputs (double backward).
                return None
            res = self._pack_with_none(self.input_tensors_index, grad_input, self.n_inputs)
            for user_hook in self.user_hooks:
                out = user_hook(self.module, res, self.grad_outputs)
                if out is None:
                    continue
                if len(out) != len(res):
                    raise RuntimeError("Backward hook returned an invalid number of grad_input, "
                                       f"got {len(out)}, but expected {len(res)}")
                res = out
            self.grad_outputs = None
            return self._unpack_none(self.input_tensors_index, res)

        grad_fn.register_hook(hook)

    def _apply_on_tensors(self, fn: Callable[[Any], None], args: Any) -> tuple:
        # Passes the tensors of `args` through one BackwardHookFunction; fn gets its node.
        from .. import _C
        from ..nn.modules._functions import BackwardHookFunction

        tensors_idx = [i for i, arg in enumerate(args) if isinstance(arg, _C.TensorBase)]
        tensors = [args[i] for i in tensors_idx]
        if not (any(t.requires_grad for t in tensors) and _C.is_grad_enabled()):
            return args, None
        new_tensors = BackwardHookFunction.apply(*tensors)
        if len(new_tensors) == 0:
            raise RuntimeError("Cannot set Module backward hook for a Module with no input Tensors.")
        grad_fns = [t.grad_fn for t in new_tensors
                    if t.grad_fn is not None and t.grad_fn.name() == "BackwardHookFunctionBackward"]
        if not grad_fns:
            raise RuntimeError("Error while setting up backward hooks. Please open "
                               "an issue with a code sample to reproduce this.")
        fn(grad_fns[0])
        arg_list = list(args)
        for idx, val in zip(tensors_idx, new_tensors):
            arg_list[idx] = val
        out = tuple(arg_list) if type(args) is tuple else type(args)(*arg_list)
        return out, tensors_idx

    def setup_input_hook(self, args: Any) -> Any:
        res, input_idx = self._apply_on_tensors(self._set_user_hook, args)
        self.n_inputs = len(args)
        self.input_tensors_index = input_idx
        return res

    def _output_hook(self, _: Any, grad_output: tuple) -> Optional[tuple]:
        self.grad_outputs = self._pack_with_none(self.output_tensors_index, grad_output, self.n_outputs)
        expected_len = len(self.grad_outputs)
        for user_pre_hook in self.user_pre_hooks:
            hook_grad_outputs = user_pre_hook(self.module, self.grad_outputs)
            if hook_grad_outputs is None:
                continue
            if len(hook_grad_outputs) != expected_len:
                raise RuntimeError("Backward pre hook returned an invalid number of grad_output, "
                                   f"got {len(hook_grad_outputs)}, but expected {expected_len}")
            self.grad_outputs = hook_grad_outputs
        local_grad_outputs = self.grad_outputs
        if self.input_tensors_index is None:
            # No input requires grad: the user hooks run now, with no grad_input.
            warnings.warn("Full backward hook is firing when gradients are computed "
                          "with respect to module outputs since no inputs require gradients. See "
                          "https://docs.pytorch.org/docs/main/generated/torch.nn.Module.html"
                          "#torch.nn.Module.register_full_backward_hook for more details.", stacklevel=3)
            grad_inputs = self._pack_with_none([], [], self.n_inputs)
            for user_hook in self.user_hooks:
                res = user_hook(self.module, grad_inputs, self.grad_outputs)
                if res is not None and not (isinstance(res, tuple) and all(el is None for el in res)):
                    raise RuntimeError("Backward hook for Modules where no input requires "
                                       "gradient should always return None or None for all gradients.")
            self.grad_outputs = None
        if local_grad_outputs is None:
            return None
        return self._unpack_none(self.output_tensors_index, local_grad_outputs)

    def setup_output_hook(self, args: Any) -> Any:
        is_tuple = isinstance(args, tuple)
        if not is_tuple:
            args = (args,)
        res, output_idx = self._apply_on_tensors(lambda grad_fn: grad_fn.register_hook(self._output_hook), args)
        self.n_outputs = len(args)
        self.output_tensors_index = output_idx
        return res if is_tuple else res[0]
