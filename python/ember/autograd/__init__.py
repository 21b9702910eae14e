"""Reverse-mode automatic differentiation: grad mode switches, the engine's entry
points, custom Functions (autograd.function) and the graph's hooks (autograd.graph)."""
import functools

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


def _as_list(x):
    if x is None:
        return []
    if isinstance(x, (list, tuple)):
        return list(x)
    return [x]


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulates gradients of `tensors` into the leaves' `.grad`."""
    tensors = _as_list(tensors)
    grads = _as_list(grad_tensors) or [None] * len(tensors)
    if retain_graph is None:
        retain_graph = create_graph
    _C._backward(tensors, grads, retain_graph, create_graph)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, allow_unused=False):
    """The gradients of `outputs` with respect to `inputs`, without touching `.grad`."""
    outputs, inputs = _as_list(outputs), _as_list(inputs)
    grad_outputs = _as_list(grad_outputs) or [None] * len(outputs)
    if retain_graph is None:
        retain_graph = create_graph
    return tuple(_C._grad(outputs, grad_outputs, inputs, retain_graph, create_graph, allow_unused))


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
