"""Custom differentiable operations: subclass `Function` with static `forward`
and `backward`, call `MyFunc.apply(...)`. As PyTorch's torch.autograd.function.

Each call makes one node of the C++ engine's graph (python/src/python_function.cpp):
the ctx that forward and backward receive is that node's Python object, an
instance of `<MyFunc>Backward`, and `output.grad_fn` returns it."""
from __future__ import annotations

import functools
import inspect
import itertools
from typing import Any, Callable

from .. import _C

_function_ids = itertools.count()


class FunctionCtx:
    """What forward (or setup_context) tells backward through ctx."""

    def save_for_backward(self, *tensors: Any) -> None:
        """Keeps tensors (or None) for backward, read back as `ctx.saved_tensors`, where
        they are checked against in-place changes. Inputs and outputs saved this way
        support double backward; saving them as ctx attributes does not."""
        self.to_save = tensors

    def save_for_forward(self, *tensors: Any) -> None:
        """Keeps tensors for a forward-mode `jvp`."""
        for tensor in tensors:
            if not (isinstance(tensor, _C.TensorBase) or tensor is None):
                raise AssertionError("save_for_forward expects all arguments to be tensors; you should "
                                     "save non-tensors as attributes on ctx.")
        self.saved_for_forward = tensors

    def mark_dirty(self, *args: Any) -> None:
        """Declares inputs that forward modified in place (and returns): they take this
        node as their history, as after a built-in in-place op."""
        self.dirty_tensors = args

    def mark_non_differentiable(self, *args: Any) -> None:
        """Declares outputs that need no gradient: they do not require grad, and
        backward still gets a gradient for them (zeros)."""
        self.non_differentiable = args

    def set_materialize_grads(self, value: bool) -> None:
        """Whether backward gets zeros (True, the default) or None for the outputs
        no gradient reached."""
        self.materialize_grads = value

    def mark_shared_storage(self, *pairs: Any) -> None:
        import warnings

        warnings.warn("`mark_shared_storage` is deprecated. Tensors with shared storages are automatically tracked. "
                      "Note that calls to `set_()` are not tracked", FutureWarning, stacklevel=2)


class BackwardCFunction(_C._FunctionBase, FunctionCtx):
    """The class of ctx objects (each Function gets a subclass `<Name>Backward`).
    A ctx is also the autograd node of its call: it has the Node API."""

    _forward_cls: Any
    # What forward named through FunctionCtx; apply reads and clears them.
    to_save: Any = None
    dirty_tensors: Any = None
    non_differentiable: Any = None
    saved_for_forward: Any = None

    def apply(self, *grads: Any) -> Any:
        """Runs the user's backward (the engine calls this, holding the GIL)."""
        forward_cls = self._forward_cls
        backward_fn, vjp_fn = forward_cls.backward, forward_cls.vjp
        if backward_fn is not Function.backward and vjp_fn is not Function.vjp:
            raise RuntimeError("Implementing both 'backward' and 'vjp' for a custom Function is not allowed. "
                               "You should only implement one of them.")
        user_fn = vjp_fn if vjp_fn is not Function.vjp else backward_fn
        return user_fn(self, *grads)

    def name(self) -> str:
        return type(self).__name__

    @property
    def next_functions(self) -> tuple:
        return self._cdata.next_functions

    @property
    def metadata(self) -> dict:
        return self._cdata.metadata

    def register_hook(self, fn: Callable[..., Any]) -> Any:
        """fn(grad_inputs, grad_outputs) runs after backward; it may return replacement grad_inputs."""
        return self._cdata.register_hook(fn)

    def register_prehook(self, fn: Callable[..., Any]) -> Any:
        """fn(grad_outputs) runs before backward; it may return replacement grad_outputs."""
        return self._cdata.register_prehook(fn)

    def __repr__(self) -> str:
        return f"<{type(self).__module__}.{type(self).__qualname__} object at {hex(id(self))}>"


class FunctionMeta(type):
    """Gives each Function subclass its ctx class, `<Name>Backward` (`_backward_cls`)."""

    def __init__(cls, name: str, bases: tuple, attrs: dict) -> None:
        backward_cls = type(name + "Backward", (BackwardCFunction,), {"_forward_cls": cls})
        backward_cls.__module__ = __name__
        backward_cls._autograd_function_id = next(_function_ids)  # type: ignore[attr-defined]
        cls._backward_cls = backward_cls
        super().__init__(name, bases, attrs)


def _bind_default_args(func: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[tuple, dict]:
    bound = inspect.signature(func).bind(*args, **kwargs)
    bound.apply_defaults()
    return bound.args, bound.kwargs


class Function(FunctionCtx, metaclass=FunctionMeta):
    """Base class of custom differentiable operations.

    Either `forward(ctx, *args)` sets ctx up itself, or `forward(*args)` leaves that
    to `setup_context(ctx, inputs, output)`. `backward(ctx, *grad_outputs)` gets
    one gradient per forward output and returns one per forward argument (None
    for non-tensors and for tensors that need none). Call `MyFunc.apply(*args)`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        import warnings

        warnings.warn(f"{self.__class__} should not be instantiated. Methods on autograd functions are all static, "
                      "so you should invoke them on the class itself. Instantiating an autograd function will raise "
                      "an error in a future version of PyTorch.", DeprecationWarning, stacklevel=2)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("Legacy autograd function with non-static forward method is deprecated. Please use "
                           "new-style autograd function with static forward method. (Example: "
                           "https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)")

    @staticmethod
    def forward(*args: Any, **kwargs: Any) -> Any:
        """The computation, run with grad mode off. Override it."""
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple, output: Any) -> Any:
        """Sets ctx up from the inputs and the output, for a `forward` without ctx."""
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx: Any, *grad_outputs: Any) -> Any:
        """The gradients of the forward arguments from those of its outputs. Override it."""
        raise NotImplementedError("You must implement either the backward or vjp method for your custom "
                                  "autograd.Function to use it with backward mode AD.")

    vjp = backward

    @staticmethod
    def jvp(ctx: Any, *grad_inputs: Any) -> Any:
        raise NotImplementedError("You must implement the jvp function for custom autograd.Function to use it with "
                                  "forward mode AD.")

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        """Runs forward and records one node for backward (when grad mode is on and
        a tensor argument requires grad)."""
        has_setup_context = cls.setup_context is not Function.setup_context
        if has_setup_context:
            args, kwargs = _bind_default_args(cls.forward, *args, **kwargs)
        elif kwargs:
            # As PyTorch: arguments passed by keyword count as forward's positional ones.
            bound = inspect.signature(cls.forward).bind(None, *args, **kwargs)
            args, kwargs = bound.args[1:], bound.kwargs
        ctx = cls._backward_cls()
        node = _C._function_node(ctx, args)  # held here until the outputs hold it
        prev = _C.is_grad_enabled()
        _C._set_grad_enabled(False)
        try:
            if has_setup_context:
                outputs = cls.forward(*args, **kwargs)
                cls.setup_context(ctx, args, outputs)
            else:
                outputs = cls.forward(ctx, *args, **kwargs)
        finally:
            _C._set_grad_enabled(prev)
        return _C._function_finish(node, args, outputs)


class InplaceFunction(Function):
    """Kept for old code: a Function with an `inplace` flag."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace


def once_differentiable(fn: Callable[..., Any]) -> Callable[..., Any]:
    """For a backward that is not itself differentiable: it runs in no_grad, and
    differentiating its results (create_graph) raises when that backward is reached."""

    @functools.wraps(fn)
    def wrapper(ctx: Any, *args: Any, **kwargs: Any) -> Any:
        prev = _C.is_grad_enabled()
        _C._set_grad_enabled(False)
        try:
            outputs = fn(ctx, *args, **kwargs)
        finally:
            _C._set_grad_enabled(prev)
        if not prev:
            return outputs
        # As PyTorch: the results require grad when an incoming gradient does, through
        # a node that raises (it cannot know whether backward used ctx.saved_tensors).
        if not any(isinstance(arg, _C.TensorBase) and arg.requires_grad for arg in args):
            return outputs
        is_tuple = isinstance(outputs, tuple)

        def fake_requires_grad(var: Any) -> Any:
            if isinstance(var, _C.TensorBase):
                var = var.detach()
                var.requires_grad = True
            return var

        faked = tuple(fake_requires_grad(v) for v in (outputs if is_tuple else (outputs,)))
        errors = _C._delayed_error("trying to differentiate twice a function that was marked with "
                                   "@once_differentiable", faked)
        return errors if is_tuple else errors[0]

    return wrapper
