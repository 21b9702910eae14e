"""nn.Module, the base class of every layer and model (as PyTorch's
torch.nn.modules.module). Assigning a Parameter, a Buffer or a Module to an
attribute registers it; the module then lists, saves, loads, converts and moves
what it registered, recursively."""
from __future__ import annotations

import warnings
from collections import OrderedDict, namedtuple
from typing import Any, Callable, Iterator, Mapping, Optional, TypeVar, Union

from ... import _C
from ..._tensor import Tensor
from ...utils.hooks import RemovableHandle
from ..parameter import Buffer, Parameter
from . import _global_hooks as _g
from ._global_hooks import (  # noqa: F401  (public here, as in PyTorch)
    _global_backward_hooks, _global_backward_pre_hooks, _global_buffer_registration_hooks,
    _global_forward_hooks, _global_forward_hooks_always_called, _global_forward_hooks_with_kwargs,
    _global_forward_pre_hooks, _global_module_registration_hooks, _global_parameter_registration_hooks,
    _has_any_global_hook, _WrappedHook, register_module_backward_hook, register_module_buffer_registration_hook,
    register_module_forward_hook, register_module_forward_pre_hook, register_module_full_backward_hook,
    register_module_full_backward_pre_hook, register_module_module_registration_hook,
    register_module_parameter_registration_hook,
)
from ._call import call_with_hooks
from ._load_state import load_own_state, load_state_dict as load_whole_state_dict
from ._to_args import parse_to

__all__ = [
    "register_module_forward_pre_hook", "register_module_forward_hook", "register_module_full_backward_pre_hook",
    "register_module_backward_hook", "register_module_full_backward_hook", "register_module_buffer_registration_hook",
    "register_module_module_registration_hook", "register_module_parameter_registration_hook", "Module",
]

T = TypeVar("T", bound="Module")
_EXTRA_STATE_KEY_SUFFIX = "_extra_state"


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What load_state_dict returns: the keys it missed and the ones it did not expect."""

    __slots__ = ()

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def _addindent(s_: str, num_spaces: int) -> str:
    # Indents every line but the first (blank lines stay empty), as PyTorch's reprs.
    s = s_.split("\n")
    if len(s) == 1:
        return s_
    first = s.pop(0)
    return first + "\n" + "\n".join((num_spaces * " ") + line if line.strip() else "" for line in s)


def _typename(obj: Any) -> str:
    # PyTorch's torch.typename: a tensor's legacy type name, else the qualified class name.
    if isinstance(obj, Tensor):
        return str(obj.type())
    module = getattr(obj, "__module__", "") or ""
    if hasattr(obj, "__qualname__"):
        qualname = obj.__qualname__
    elif hasattr(obj, "__name__"):
        qualname = obj.__name__
    else:
        module = obj.__class__.__module__ or ""
        qualname = obj.__class__.__qualname__
    return qualname if module in ("", "builtins") else f"{module}.{qualname}"


def _forward_unimplemented(self: Module, *input: Any) -> None:
    """Defines the computation performed at every call. Should be overridden by all subclasses."""
    raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')


class Module:
    """Base class for all neural network modules.

    Your models should subclass this class; modules can contain other modules,
    assigned as attributes, which nests them in a tree::

        class Model(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.conv1 = nn.Conv2d(1, 20, 5)

            def forward(self, x):
                return F.relu(self.conv1(x))

    ``super().__init__()`` must be called before assigning to the child.
    """

    dump_patches: bool = False
    _version: int = 1
    call_super_init: bool = False
    training: bool
    _parameters: dict[str, Optional[Parameter]]
    _buffers: dict[str, Optional[Tensor]]
    _non_persistent_buffers_set: set[str]
    _modules: dict[str, Optional[Module]]
    _is_full_backward_hook: Optional[bool]
    _backward_pre_hooks: OrderedDict[int, Callable]
    _backward_hooks: OrderedDict[int, Callable]
    _forward_hooks: OrderedDict[int, Callable]
    _forward_hooks_with_kwargs: OrderedDict[int, bool]  # used as sets of hook ids
    _forward_hooks_always_called: OrderedDict[int, bool]
    _forward_pre_hooks: OrderedDict[int, Callable]
    _forward_pre_hooks_with_kwargs: OrderedDict[int, bool]
    _state_dict_hooks: OrderedDict[int, Callable]
    _state_dict_pre_hooks: OrderedDict[int, Callable]
    _load_state_dict_pre_hooks: OrderedDict[int, Callable]
    _load_state_dict_post_hooks: OrderedDict[int, Callable]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if self.call_super_init is False and bool(kwargs):
            raise TypeError(f"{type(self).__name__}.__init__() got an unexpected keyword argument "
                            f"'{next(iter(kwargs))}'")
        if self.call_super_init is False and bool(args):
            raise TypeError(f"{type(self).__name__}.__init__() takes 1 positional argument but {len(args) + 1} were"
                            " given")
        # object.__setattr__: our __setattr__ reads these dicts.
        setattr_ = super().__setattr__
        setattr_("training", True)
        setattr_("_parameters", {})
        setattr_("_buffers", {})
        setattr_("_non_persistent_buffers_set", set())
        setattr_("_backward_pre_hooks", OrderedDict())
        setattr_("_backward_hooks", OrderedDict())
        setattr_("_is_full_backward_hook", None)
        setattr_("_forward_hooks", OrderedDict())
        setattr_("_forward_hooks_with_kwargs", OrderedDict())
        setattr_("_forward_hooks_always_called", OrderedDict())
        setattr_("_forward_pre_hooks", OrderedDict())
        setattr_("_forward_pre_hooks_with_kwargs", OrderedDict())
        setattr_("_state_dict_hooks", OrderedDict())
        setattr_("_state_dict_pre_hooks", OrderedDict())
        setattr_("_load_state_dict_pre_hooks", OrderedDict())
        setattr_("_load_state_dict_post_hooks", OrderedDict())
        setattr_("_modules", {})
        if self.call_super_init:
            super().__init__(*args, **kwargs)

    forward: Callable[..., Any] = _forward_unimplemented

    # ------------------------------------------------------------------ registration
    def _check_member_name(self, kind: str, name: Any, registry: dict) -> None:
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string. Got {_typename(name)}")
        if "." in name:
            raise KeyError(f'{kind} name can\'t contain "."' + (f", got: {name}" if kind == "module" else ""))
        if name == "":
            raise KeyError(f'{kind} name can\'t be empty string ""')
        if hasattr(self, name) and name not in registry:
            raise KeyError(f"attribute '{name}' already exists")

    def register_buffer(self, name: str, tensor: Optional[Tensor], persistent: bool = True) -> None:
        """Adds a buffer to the module: state that is not a parameter (BatchNorm's running_mean).
        A non-persistent buffer is left out of the state_dict."""
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        self._check_member_name("buffer", name, self._buffers)
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{_typename(tensor)}' object to buffer '{name}' "
                            "(ember Tensor or None required)")
        self._buffers[name] = self._run_registration_hooks(_global_buffer_registration_hooks, name, tensor)
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name: str, param: Optional[Parameter]) -> None:
        """Adds a parameter to the module (None marks a parameter that is absent, as a bias=False)."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        self._check_member_name("parameter", name, self._parameters)
        if param is None:
            self._parameters[name] = None
            return
        if not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{_typename(param)}' object to parameter '{name}' "
                            "(ember.nn.Parameter or None required)")
        if param.grad_fn:
            raise ValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model "
                             f"parameters must be created explicitly. To express '{name}' "
                             "as a function of another Tensor, compute the value in "
                             "the forward() method.")
        self._parameters[name] = self._run_registration_hooks(_global_parameter_registration_hooks, name, param)

    def add_module(self, name: str, module: Optional[Module]) -> None:
        """Adds a child module, reachable as the attribute `name`."""
        if not isinstance(module, Module) and module is not None:
            raise TypeError(f"{_typename(module)} is not a Module subclass")
        if not isinstance(name, str):
            raise TypeError(f"module name should be a string. Got {_typename(name)}")
        self._check_member_name("module", name, self._modules)
        self._modules[name] = self._run_registration_hooks(_global_module_registration_hooks, name, module)

    def register_module(self, name: str, module: Optional[Module]) -> None:
        """Alias for add_module."""
        self.add_module(name, module)

    def _run_registration_hooks(self, hooks: dict, name: str, value: Any) -> Any:
        # The global registration hooks may replace what is registered.
        for hook in hooks.values():
            output = hook(self, name, value)
            if output is not None:
                value = output
        return value

    # ------------------------------------------------------------------ lookup by dotted name
    def get_submodule(self, target: str) -> Module:
        """The submodule at the dotted path `target` ("" is the module itself)."""
        if target == "":
            return self
        mod: Module = self
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(mod._get_name() + " has no attribute `" + item + "`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError("`" + item + "` is not an nn.Module")
        return mod

    def set_submodule(self, target: str, module: Module, strict: bool = False) -> None:
        """Replaces (or, unless strict, adds) the submodule at the dotted path `target`."""
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        atoms = target.split(".")
        if not isinstance(module, Module):
            raise ValueError("`" + "module" + f"` is not an nn.Module, found {type(module)}")
        parent = self if len(atoms) == 1 else self.get_submodule(".".join(atoms[:-1]))
        if strict and not hasattr(parent, atoms[-1]):
            raise AttributeError(parent._get_name() + " has no attribute `" + atoms[-1] + "`")
        if hasattr(parent, atoms[-1]) and not isinstance(getattr(parent, atoms[-1]), Module):
            raise AttributeError("`" + atoms[-1] + "` is not an nn.Module")
        setattr(parent, atoms[-1], module)

    def _get_leaf(self, target: str) -> tuple[Module, str, Any]:
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, name):
            raise AttributeError(mod._get_name() + " has no attribute `" + name + "`")
        return mod, name, getattr(mod, name)

    def get_parameter(self, target: str) -> Parameter:
        """The parameter at the dotted path `target`."""
        _, name, param = self._get_leaf(target)
        if not isinstance(param, Parameter):
            raise AttributeError("`" + name + "` is not an nn.Parameter")
        return param

    def get_buffer(self, target: str) -> Tensor:
        """The buffer at the dotted path `target`."""
        mod, name, buffer = self._get_leaf(target)
        if name not in mod._buffers:
            raise AttributeError("`" + name + "` is not a buffer")
        return buffer

    def get_extra_state(self) -> Any:
        """Override (with set_extra_state) to save non-tensor state in the state_dict."""
        raise RuntimeError("Reached a code path in Module.get_extra_state() that should never be called.")

    def set_extra_state(self, state: Any) -> None:
        """Override (with get_extra_state) to load what get_extra_state saved."""
        raise RuntimeError("Reached a code path in Module.set_extra_state() that should never be called.")

    # ------------------------------------------------------------------ conversions
    def _apply(self: T, fn: Callable[[Tensor], Tensor], recurse: bool = True) -> T:
        """Replaces every parameter, gradient and buffer by fn of it. A parameter stays the
        same object (its data is swapped), so optimizers and shared references follow."""
        if recurse:
            for module in self.children():
                module._apply(fn)
        for key, param in self._parameters.items():
            if param is None:
                continue
            with _no_grad():
                param_applied = fn(param)
            param.data = param_applied
            grad = param.grad
            if grad is not None:
                with _no_grad():
                    grad_applied = fn(grad)
                grad.data = grad_applied
        for key, buf in self._buffers.items():
            if buf is not None:
                self._buffers[key] = fn(buf)
        return self

    def apply(self: T, fn: Callable[[Module], None]) -> T:
        """Calls fn on every submodule (children first) and then on self, e.g. to initialize weights."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    def cuda(self: T, device: Union[int, _C.device, None] = None) -> T:
        """Moves all parameters and buffers to the GPU."""
        return self._apply(lambda t: t.cuda(device))

    def cpu(self: T) -> T:
        """Moves all parameters and buffers to the CPU."""
        return self._apply(lambda t: t.cpu())

    def share_memory(self: T) -> T:
        """Moves all parameters, gradients and buffers to shared memory (see Tensor.share_memory_)."""
        return self._apply(lambda t: t.share_memory_())

    def type(self: T, dst_type: Any) -> T:
        """Casts all parameters and buffers to `dst_type`."""
        return self._apply(lambda t: _as_tensor(t.type(dst_type)))

    def float(self: T) -> T:
        """Casts all floating point parameters and buffers to float32."""
        return self._apply(lambda t: t.float() if t.is_floating_point() else t)

    def double(self: T) -> T:
        """Casts all floating point parameters and buffers to float64."""
        return self._apply(lambda t: t.double() if t.is_floating_point() else t)

    def half(self: T) -> T:
        """Casts all floating point parameters and buffers to float16."""
        return self._apply(lambda t: t.half() if t.is_floating_point() else t)

    def bfloat16(self: T) -> T:
        """Casts all floating point parameters and buffers to bfloat16."""
        return self._apply(lambda t: t.bfloat16() if t.is_floating_point() else t)

    def to_empty(self: T, *, device: Any, recurse: bool = True) -> T:
        """Moves the parameters and buffers to `device` without copying their values."""
        from ... import empty_like
        return self._apply(lambda t: empty_like(t, device=device), recurse=recurse)

    def to(self: T, *args: Any, **kwargs: Any) -> T:
        """Moves and/or casts the parameters and buffers: to(device=None, dtype=None,
        non_blocking=False), to(dtype, non_blocking=False) or to(tensor, non_blocking=False).
        Only floating point tensors take the dtype."""
        device, dtype, non_blocking = parse_to(*args, **kwargs)
        # ember has no complex dtypes, so "floating point or complex" is floating point here.
        if dtype is not None and not dtype.is_floating_point:
            raise TypeError("nn.Module.to only accepts floating point or complex "
                            f"dtypes, but got desired dtype={dtype}")

        def convert(t: Tensor) -> Tensor:
            target: dict = {} if device is None else {"device": device}
            if dtype is not None and t.is_floating_point():
                target["dtype"] = dtype
            return t.to(**target, non_blocking=non_blocking) if target else t

        return self._apply(convert)

    # ------------------------------------------------------------------ hooks
    def register_full_backward_pre_hook(self, hook: Callable[..., Any], prepend: bool = False) -> RemovableHandle:
        """hook(module, grad_output) runs when the gradients of the module's outputs are
        computed; it may return a new grad_output (a tuple)."""
        return _add_hook(self._backward_pre_hooks, hook, prepend)

    def _set_backward_kind(self, full: bool) -> None:
        if self._is_full_backward_hook is (not full):
            raise RuntimeError("Cannot use both regular backward hooks and full backward hooks on a "
                               "single Module. Please use only one of them.")
        self._is_full_backward_hook = full

    def register_backward_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """Deprecated (hook of the last op's node only): use register_full_backward_hook."""
        self._set_backward_kind(False)
        return _add_hook(self._backward_hooks, hook, False)

    def register_full_backward_hook(self, hook: Callable[..., Any], prepend: bool = False) -> RemovableHandle:
        """hook(module, grad_input, grad_output) runs when the gradients of the module's
        inputs are computed; it may return a new grad_input (a tuple)."""
        self._set_backward_kind(True)
        return _add_hook(self._backward_hooks, hook, prepend)

    def _get_backward_hooks(self) -> tuple[list, list]:
        full_backward_hooks: list = []
        non_full_backward_hooks: list = []
        if _g._global_is_full_backward_hook is True:
            full_backward_hooks += _global_backward_hooks.values()
        elif _g._global_is_full_backward_hook is False:
            non_full_backward_hooks += _global_backward_hooks.values()
        if self._is_full_backward_hook is True:
            full_backward_hooks += self._backward_hooks.values()
        elif self._is_full_backward_hook is False:
            non_full_backward_hooks += self._backward_hooks.values()
        return full_backward_hooks, non_full_backward_hooks

    def _get_backward_pre_hooks(self) -> list:
        return [*_global_backward_pre_hooks.values(), *self._backward_pre_hooks.values()]

    def register_forward_pre_hook(self, hook: Callable[..., Any], *, prepend: bool = False,
                                  with_kwargs: bool = False) -> RemovableHandle:
        """hook(module, args) runs before forward and may return new args (a tuple, or one
        value); with_kwargs: hook(module, args, kwargs) may return (new_args, new_kwargs)."""
        handle = _add_hook(self._forward_pre_hooks, hook, prepend, extra_dict=self._forward_pre_hooks_with_kwargs)
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[handle.id] = True
        return handle

    def register_forward_hook(self, hook: Callable[..., Any], *, prepend: bool = False, with_kwargs: bool = False,
                              always_call: bool = False) -> RemovableHandle:
        """hook(module, args, output) runs after forward and may return a new output;
        with_kwargs: hook(module, args, kwargs, output). always_call: it runs even when
        forward raised."""
        handle = _add_hook(self._forward_hooks, hook, prepend,
                           extra_dict=[self._forward_hooks_with_kwargs, self._forward_hooks_always_called])
        if with_kwargs:
            self._forward_hooks_with_kwargs[handle.id] = True
        if always_call:
            self._forward_hooks_always_called[handle.id] = True
        return handle

    def _call_impl(self, *args: Any, **kwargs: Any) -> Any:
        if not (self._backward_hooks or self._backward_pre_hooks or self._forward_hooks or self._forward_pre_hooks
                or _global_backward_pre_hooks or _global_backward_hooks
                or _global_forward_hooks or _global_forward_pre_hooks):
            return self.forward(*args, **kwargs)
        return call_with_hooks(self, args, kwargs)

    __call__: Callable[..., Any] = _call_impl

    # ------------------------------------------------------------------ pickling
    def __getstate__(self) -> dict:
        return self.__dict__.copy()

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        # Old pickles may lack the newer hook dicts.
        for name in ("_forward_pre_hooks", "_forward_pre_hooks_with_kwargs", "_forward_hooks_with_kwargs",
                     "_forward_hooks_always_called", "_state_dict_hooks", "_state_dict_pre_hooks",
                     "_load_state_dict_pre_hooks", "_load_state_dict_post_hooks", "_backward_pre_hooks"):
            if name not in self.__dict__:
                setattr(self, name, OrderedDict())
        if "_non_persistent_buffers_set" not in self.__dict__:
            self._non_persistent_buffers_set = set()
        if "_is_full_backward_hook" not in self.__dict__:
            self._is_full_backward_hook = None

    # ------------------------------------------------------------------ attributes
    def __getattr__(self, name: str) -> Any:
        # Only reached when normal lookup fails: parameters, buffers and modules live in their dicts.
        d = self.__dict__
        if "_parameters" in d and name in d["_parameters"]:
            return d["_parameters"][name]
        if "_buffers" in d and name in d["_buffers"]:
            return d["_buffers"][name]
        if "_modules" in d and name in d["_modules"]:
            return d["_modules"][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name: str, value: Any) -> None:
        def remove_from(*dicts_or_sets: Any) -> None:
            for d in dicts_or_sets:
                if name in d:
                    if isinstance(d, dict):
                        del d[name]
                    else:
                        d.discard(name)

        params = self.__dict__.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            remove_from(self.__dict__, self._buffers, self._modules, self._non_persistent_buffers_set)
            self.register_parameter(name, value)
            return
        if params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as parameter '{name}' "
                                "(ember.nn.Parameter or None expected)")
            self.register_parameter(name, value)
            return
        modules = self.__dict__.get("_modules")
        if isinstance(value, Module):
            if modules is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            remove_from(self.__dict__, self._parameters, self._buffers, self._non_persistent_buffers_set)
            modules[name] = self._run_registration_hooks(_global_module_registration_hooks, name, value)
            return
        if modules is not None and name in modules:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as child module '{name}' "
                                "(ember.nn.Module or None expected)")
            modules[name] = self._run_registration_hooks(_global_module_registration_hooks, name, value)
            return
        buffers = self.__dict__.get("_buffers")
        if isinstance(value, Buffer) or (buffers is not None and name in buffers):
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{_typename(value)}' as buffer '{name}' "
                                "(ember.nn.Buffer, ember.Tensor or None expected)")
            if isinstance(value, Buffer):
                persistent = value.persistent
            else:
                persistent = name not in self._non_persistent_buffers_set
            self.register_buffer(name, value, persistent)
            return
        super().__setattr__(name, value)

    def __delattr__(self, name: str) -> None:
        if name in self._parameters:
            del self._parameters[name]
        elif name in self._buffers:
            del self._buffers[name]
            self._non_persistent_buffers_set.discard(name)
        elif name in self._modules:
            del self._modules[name]
        else:
            super().__delattr__(name)

    # ------------------------------------------------------------------ state_dict
    def _register_state_dict_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        # The old form: the root module's hook may return a new state_dict.
        if getattr(hook, "_from_public_api", False):
            raise RuntimeError("Cannot register the same function as the state dict post hook that was "
                               "previously registered via register_state_dict_post_hook")
        return _add_hook(self._state_dict_hooks, hook, False)

    def register_state_dict_post_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """hook(module, state_dict, prefix, local_metadata) runs after state_dict saved this
        module (and its children); it may modify state_dict in place."""
        hook._from_public_api = True  # type: ignore[attr-defined]
        return _add_hook(self._state_dict_hooks, hook, False)

    def register_state_dict_pre_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """hook(module, prefix, keep_vars) runs before state_dict saves this module."""
        return _add_hook(self._state_dict_pre_hooks, hook, False)

    def _save_to_state_dict(self, destination: dict, prefix: str, keep_vars: bool) -> None:
        """Saves this module's own parameters and persistent buffers (not its children's) into destination."""
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if keep_vars else buf.detach()
        if type(self).get_extra_state is not Module.get_extra_state:
            destination[prefix + _EXTRA_STATE_KEY_SUFFIX] = self.get_extra_state()

    def state_dict(self, *args: Any, destination: Any = None, prefix: str = "", keep_vars: bool = False) -> Any:
        """The module's whole state: an OrderedDict from dotted names to parameters and persistent
        buffers (detached unless keep_vars), own entries first, then each child's."""
        if args:
            warnings.warn("Positional args are being deprecated, use kwargs instead. Refer to "
                          "https://pytorch.org/docs/main/generated/torch.nn.Module.html#torch.nn.Module.state_dict"
                          " for details.", FutureWarning, stacklevel=2)
            if destination is None:
                destination = args[0]
            if len(args) > 1 and prefix == "":
                prefix = args[1]
            if len(args) > 2 and keep_vars is False:
                keep_vars = args[2]
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        local_metadata = dict(version=self._version)
        if hasattr(destination, "_metadata"):
            destination._metadata[prefix[:-1]] = local_metadata
        for hook in self._state_dict_pre_hooks.values():
            hook(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
        for hook in self._state_dict_hooks.values():
            hook_result = hook(self, destination, prefix, local_metadata)
            if not getattr(hook, "_from_public_api", False):
                if hook_result is not None:
                    destination = hook_result
            elif hook_result is not None:
                raise RuntimeError("state_dict post-hook must return None")
        return destination

    def _register_load_state_dict_pre_hook(self, hook: Callable[..., Any],
                                           with_module: bool = False) -> RemovableHandle:
        return _add_hook(self._load_state_dict_pre_hooks, _WrappedHook(hook, self if with_module else None), False)

    def register_load_state_dict_pre_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """hook(module, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
        error_msgs) runs before this module loads its part of a state_dict."""
        return self._register_load_state_dict_pre_hook(hook, with_module=True)

    def register_load_state_dict_post_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """hook(module, incompatible_keys) runs after load_state_dict loaded this module; it
        may modify incompatible_keys in place."""
        return _add_hook(self._load_state_dict_post_hooks, hook, False)

    def _load_from_state_dict(self, state_dict: Mapping[str, Any], prefix: str, local_metadata: dict, strict: bool,
                              missing_keys: list, unexpected_keys: list, error_msgs: list) -> None:
        """Loads this module's own parameters and buffers (not its children's) from state_dict;
        override to convert old formats (the metadata holds the saving module's _version)."""
        load_own_state(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs)

    def load_state_dict(self, state_dict: Mapping[str, Any], strict: bool = True, assign: bool = False) -> Any:
        """Copies parameters and buffers from state_dict into this module and its descendants
        (assign=True: makes the state_dict's tensors the module's). With strict, the keys must
        match state_dict()'s. Returns (missing_keys, unexpected_keys)."""
        return load_whole_state_dict(self, state_dict, strict, assign)

    # ------------------------------------------------------------------ iteration
    def _named_members(self, get_members_fn: Callable[[Module], Any], prefix: str = "", recurse: bool = True,
                       remove_duplicate: bool = True) -> Iterator[tuple[str, Any]]:
        memo: set = set()
        modules = (self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse
                   else [(prefix, self)])
        for module_prefix, module in modules:
            for k, v in get_members_fn(module):
                if v is None or v in memo:
                    continue
                if remove_duplicate:
                    memo.add(v)
                yield module_prefix + ("." if module_prefix else "") + k, v

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        """The module's parameters (with recurse, its descendants' too), each once."""
        for _name, param in self.named_parameters(recurse=recurse):
            yield param

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True) -> Iterator[tuple[str, Parameter]]:
        """(dotted name, parameter) pairs; a parameter shared by several modules comes once
        unless remove_duplicate=False."""
        yield from self._named_members(lambda module: module._parameters.items(), prefix=prefix, recurse=recurse,
                                       remove_duplicate=remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        """The module's buffers (with recurse, its descendants' too)."""
        for _, buf in self.named_buffers(recurse=recurse):
            yield buf

    def named_buffers(self, prefix: str = "", recurse: bool = True,
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Tensor]]:
        """(dotted name, buffer) pairs."""
        yield from self._named_members(lambda module: module._buffers.items(), prefix=prefix, recurse=recurse,
                                       remove_duplicate=remove_duplicate)

    def children(self) -> Iterator[Module]:
        """The immediate child modules."""
        for _name, module in self.named_children():
            yield module

    def named_children(self) -> Iterator[tuple[str, Module]]:
        """(name, module) for the immediate children, each module once."""
        memo: set = set()
        for name, module in self._modules.items():
            if module is not None and module not in memo:
                memo.add(module)
                yield name, module

    def modules(self, remove_duplicate: bool = True) -> Iterator[Module]:
        """This module and all its descendants, depth first."""
        for _, module in self.named_modules(remove_duplicate=remove_duplicate):
            yield module

    def named_modules(self, memo: Optional[set] = None, prefix: str = "",
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Module]]:
        """(dotted name, module) for this module ("" or prefix) and all its descendants."""
        if memo is None:
            memo = set()
        if self in memo:
            return
        if remove_duplicate:
            memo.add(self)
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            submodule_prefix = prefix + ("." if prefix else "") + name
            yield from module.named_modules(memo, submodule_prefix, remove_duplicate)

    # ------------------------------------------------------------------ modes and gradients
    def train(self: T, mode: bool = True) -> T:
        """Sets training mode (Dropout, BatchNorm, ...) on this module and its descendants."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self: T) -> T:
        """Sets evaluation mode: the same as train(False)."""
        return self.train(False)

    def requires_grad_(self: T, requires_grad: bool = True) -> T:
        """Sets requires_grad of every parameter (e.g. False to freeze a part of a model)."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Resets the gradients of all parameters: to None (the default), or to zeros."""
        if getattr(self, "_is_replica", False):
            warnings.warn("Calling .zero_grad() from a module created with nn.DataParallel() has no effect. "
                          "The parameters are copied (in a differentiable manner) from the original module. "
                          "This means they are not leaf nodes in autograd and so don't accumulate gradients. "
                          "If you need gradients in your forward method, consider using autograd.grad instead.",
                          stacklevel=2)
        for p in self.parameters():
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                grad = p.grad
                if grad.grad_fn is not None:
                    grad.detach_()
                else:
                    grad.requires_grad_(False)
                grad.zero_()

    # ------------------------------------------------------------------ printing
    def _get_name(self) -> str:
        return self.__class__.__name__

    def extra_repr(self) -> str:
        """The module's own settings for its repr (one line, or several); override it."""
        return ""

    def __repr__(self) -> str:
        # The extra repr's lines, then one "(name): repr" per child, indented.
        extra_repr = self.extra_repr()
        extra_lines = extra_repr.split("\n") if extra_repr else []
        child_lines = ["(" + key + "): " + _addindent(repr(module), 2) for key, module in self._modules.items()]
        lines = extra_lines + child_lines
        main_str = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                main_str += extra_lines[0]
            else:
                main_str += "\n  " + "\n  ".join(lines) + "\n"
        return main_str + ")"

    def __dir__(self) -> list[str]:
        keys = [*dir(self.__class__), *self.__dict__, *self._parameters, *self._modules, *self._buffers]
        return sorted(key for key in keys if not key[0].isdigit())

    def _replicate_for_data_parallel(self: T) -> T:
        replica = self.__new__(type(self))
        replica.__dict__ = self.__dict__.copy()
        # Replicas have no parameters of their own: they reference the original module's.
        replica._parameters = {}
        replica._buffers = replica._buffers.copy()
        replica._modules = replica._modules.copy()
        replica._is_replica = True
        return replica


def _add_hook(hooks: OrderedDict, hook: Callable[..., Any], prepend: bool, **handle_kwargs: Any) -> RemovableHandle:
    handle = RemovableHandle(hooks, **handle_kwargs)
    hooks[handle.id] = hook
    if prepend:
        hooks.move_to_end(handle.id, last=False)
    return handle


def _as_tensor(value: Union[str, Tensor]) -> Tensor:
    # Tensor.type(dtype) returns a tensor (only type() with no argument returns the name).
    assert isinstance(value, Tensor)
    return value


def _no_grad() -> Any:
    from ...autograd import no_grad
    return no_grad()

