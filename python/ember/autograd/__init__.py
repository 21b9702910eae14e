"""Reverse-mode automatic differentiation: grad mode switches, the engine's entry
points, custom Functions (autograd.function) and the graph's hooks (autograd.graph)."""
import functools
import sys
import types
import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING

from .. import _C
from . import anomaly_mode, function, graph  # noqa: F401
from .anomaly_mode import detect_anomaly, set_detect_anomaly  # noqa: F401
from .function import Function  # noqa: F401


class _GradModeContext:
    """A context manager that is also a decorator, like PyTorch's: both
    `@no_grad()` and a bare `@no_grad` work."""

    enabled = True

    def __new__(cls, orig_func=None, *args, **kwargs):
        self = super().__new__(cls)
        if callable(orig_func) and cls in (no_grad, enable_grad):
            return self(orig_func)
        return self

    def __enter__(self):
        self._prev = _C.is_grad_enabled()
        _C._set_grad_enabled(self.enabled)

    def __exit__(self, *exc):
        _C._set_grad_enabled(self._prev)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.__class__():
                return fn(*args, **kwargs)
        return wrapper


class no_grad(_GradModeContext):
    """Disables gradient recording inside its block or decorated function."""

    enabled = False


class enable_grad(_GradModeContext):
    """Enables gradient recording inside its block or decorated function."""

    enabled = True


class inference_mode(no_grad):
    """Like no_grad (ember has no separate inference tensors)."""

    def __init__(self, mode=True):
        self.enabled = not mode


class set_grad_enabled(_GradModeContext):
    """Sets grad mode now; as a context manager, restores it on exit."""

    def __init__(self, mode):
        self._prev = _C.is_grad_enabled()
        self.enabled = bool(mode)
        _C._set_grad_enabled(self.enabled)

    def __enter__(self):
        pass

    def __call__(self, fn):
        _C._set_grad_enabled(self._prev)
        mode = self.enabled

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with set_grad_enabled(mode):
                return fn(*args, **kwargs)
        return wrapper


def _tensor_tuple(tensors):
    """A tensor, or a sequence of them, as a tuple (PyTorch's convention)."""
    if isinstance(tensors, _C.TensorBase):
        return (tensors,)
    return tuple(tensors)


def _inputs_tuple(inputs, fn):
    """`inputs` of backward()/grad(): a tensor, a sequence, or a dict of them (its values)."""
    if isinstance(inputs, _C.TensorBase):
        return (inputs,)
    if type(inputs) is dict:
        return tuple(inputs.values())
    if isinstance(inputs, Mapping):
        raise TypeError(f"`inputs` argument to `{fn}()` must be a dict, not {type(inputs).__name__}. "
                        "Other Mapping types are not supported.")
    return tuple(inputs)


def _make_grads(outputs, grads):
    """The gradient each output starts from, checked against the output: a tensor of its shape,
    or None (ones for a scalar output that requires grad, which the engine makes)."""
    new_grads = []
    for i, (out, grad) in enumerate(zip(outputs, grads)):
        if isinstance(grad, _C.TensorBase):
            if tuple(grad.shape) != tuple(out.shape):
                raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of {grad.shape} and "
                                   f"output[{i}] has a shape of {out.shape}.")
            new_grads.append(grad)
        elif grad is None:
            if out.requires_grad:
                if out.numel() != 1:
                    raise RuntimeError("grad can be implicitly created only for scalar outputs")
                if not out.dtype.is_floating_point:
                    raise RuntimeError("grad can be implicitly created only for real scalar outputs "
                                       f"but got {out.dtype}")
            new_grads.append(None)
        else:
            raise TypeError(f"gradients can be either Tensors or None, but got {type(grad).__name__}")
    return new_grads


_warned_create_graph = False


def _warn_create_graph_cycle():
    """PyTorch warns once per process: backward(create_graph=True) stores .grad with a history
    that holds the parameter, a reference cycle."""
    global _warned_create_graph
    if not _warned_create_graph:
        _warned_create_graph = True
        warnings.warn("Using backward() with create_graph=True will create a reference cycle between the "
                      "parameter and its gradient which can cause a memory leak. We recommend using "
                      "autograd.grad when creating the graph to avoid this. If you have to use this function, "
                      "make sure to reset the .grad fields of your parameters to None after use to break the "
                      "cycle and avoid the leak.", UserWarning, stacklevel=3)


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, grad_variables=None, inputs=None):
    """Accumulates the gradients of `tensors` into the leaves' `.grad` (with `inputs`, only into
    those tensors' `.grad`, a non-leaf's included, running only the graph that leads to them)."""
    if grad_variables is not None:
        warnings.warn("`grad_variables` is deprecated. Use `grad_tensors` instead.", FutureWarning, stacklevel=2)
        if grad_tensors is not None:
            raise RuntimeError("`grad_tensors` and `grad_variables` (deprecated) arguments both passed to "
                               "`backward()`. Please only use `grad_tensors`.")
        grad_tensors = grad_variables
    inputs_tuple = () if inputs is None else _inputs_tuple(inputs, "backward")
    if inputs is not None and not inputs_tuple:
        raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
    tensors = _tensor_tuple(tensors)
    if grad_tensors is None:
        grad_tensors = (None,) * len(tensors)
    grads = _make_grads(tensors, _tensor_tuple(grad_tensors))
    if retain_graph is None:
        retain_graph = create_graph
    if create_graph and not inputs_tuple:
        _warn_create_graph_cycle()
    _C._backward(tensors, grads, retain_graph, create_graph, _retaining(tensors, inputs_tuple))


def _retaining(roots, inputs):
    """backward(inputs=): after the roots pass their check (as in PyTorch's engine), a non-leaf
    input keeps its gradient in .grad, through retain_grad (which refuses tensors without grad)."""
    if inputs:
        for i, t in enumerate(roots):
            if not t.requires_grad:
                raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
        for t in inputs:
            t.retain_grad()
    return inputs


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, only_inputs=True,
         allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """The gradients of `outputs` with respect to `inputs`, returned (`.grad` is left alone);
    only the graph leading to `inputs` runs."""
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads=True, "
                         "but got: allow_unused=False.")
    if allow_unused is None:
        allow_unused = materialize_grads
    outputs = _tensor_tuple(outputs)
    inputs_tuple = _inputs_tuple(inputs, "grad")
    if not inputs_tuple:
        raise RuntimeError("`inputs` argument to `grad()` cannot be empty.")
    if not only_inputs:
        warnings.warn("only_inputs argument is deprecated and is ignored now (defaults to True). To accumulate "
                      "gradient for other parts of the graph, please use ember.autograd.backward.",
                      FutureWarning, stacklevel=2)
    if is_grads_batched:
        raise NotImplementedError("ember.autograd.grad: is_grads_batched=True is not supported (it needs vmap); "
                                  "call grad once per grad_outputs instead")
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    grads = _make_grads(outputs, _tensor_tuple(grad_outputs))
    if retain_graph is None:
        retain_graph = create_graph
    result = _C._grad(outputs, grads, inputs_tuple, retain_graph, create_graph, allow_unused)
    if materialize_grads:
        from .._creation import zeros_like
        result = [r if r is not None else zeros_like(inp, requires_grad=create_graph)
                  for r, inp in zip(result, inputs_tuple)]
    if type(inputs) is dict:
        return dict(zip(inputs.keys(), result))
    return tuple(result)


class _VariableMeta(type):
    def __instancecheck__(cls, other):
        return isinstance(other, _C.TensorBase)  # every tensor is a Variable, as in PyTorch


class Variable(metaclass=_VariableMeta):
    """The pre-0.4 PyTorch wrapper. As PyTorch's: a new leaf that shares `data`'s
    storage, detached from its graph, requiring grad when asked."""

    def __new__(cls, data, requires_grad=False, volatile=False):
        if not isinstance(data, _C.TensorBase):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        leaf = data.detach()
        if requires_grad:
            leaf.requires_grad_(True)
        return leaf


from . import forward_ad  # noqa: E402,F401  (ember.autograd.forward_ad, as in PyTorch)

if TYPE_CHECKING:
    from . import functional  # noqa: F401
    from .gradcheck import gradcheck, gradgradcheck  # noqa: F401


class _AutogradModule(types.ModuleType):
    """ember.autograd, whose `gradcheck` is the function even once the submodule of that name loads (the
    import system then binds the module here): the function shadows the module, as in torch."""

    def __setattr__(self, name, value):
        if name == "gradcheck" and isinstance(value, types.ModuleType):
            super().__setattr__("gradgradcheck", value.gradgradcheck)
            value = value.gradcheck
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _AutogradModule


def __getattr__(name):
    # ember.autograd.functional (jacobian, hessian, ...) and gradcheck load on first use: `import ember` stays fast.
    if name in ("functional", "gradcheck", "gradgradcheck"):
        import importlib
        module = importlib.import_module(f"{__name__}.{'functional' if name == 'functional' else 'gradcheck'}")
        return module if name == "functional" else globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
