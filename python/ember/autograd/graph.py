"""The backward graph as objects: `Node` (what `tensor.grad_fn` is) and the
saved-tensor hooks that decide how tensors saved for backward are kept. As
PyTorch's torch.autograd.graph; plus `to_dot` and `render`, which draw the graph."""
from __future__ import annotations

import abc
import contextlib
from typing import Any, Callable, Iterator, Optional

from .. import _C
from ..utils.hooks import RemovableHandle


class Node(abc.ABC):
    """A node of the backward graph (for isinstance checks: `grad_fn` objects
    are `_C.Node`s, or a custom Function's ctx)."""

    @abc.abstractmethod
    def name(self) -> str:
        """The node's name, e.g. 'MulBackward0'."""

    @property
    @abc.abstractmethod
    def next_functions(self) -> tuple[tuple[Optional[Node], int], ...]:
        """(node, input_nr) per input of the forward op; None where no gradient flows."""

    @property
    @abc.abstractmethod
    def metadata(self) -> dict:
        """A dict kept with the node for the user's own use."""

    @abc.abstractmethod
    def register_hook(self, fn: Callable[..., Any]) -> RemovableHandle:
        """fn(grad_inputs, grad_outputs) runs after the node; it may return replacement grad_inputs."""

    @abc.abstractmethod
    def register_prehook(self, fn: Callable[..., Any]) -> RemovableHandle:
        """fn(grad_outputs) runs before the node; it may return replacement grad_outputs."""

    @classmethod
    def __subclasshook__(cls, C: type) -> Any:
        if cls is Node:
            from .function import BackwardCFunction

            if issubclass(C, (_C.Node, BackwardCFunction)):
                return True
        return NotImplemented


class saved_tensors_hooks:
    """While active, every tensor saved for backward (by ops and by custom
    Functions' save_for_backward) is kept as `pack_hook(tensor)`, and backward
    gets `unpack_hook(packed)` in its place, which must be a tensor of the same
    value. The hooks apply on the thread that enters the context."""

    def __init__(self, pack_hook: Callable[[Any], Any], unpack_hook: Callable[[Any], Any]) -> None:
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self) -> None:
        _C._push_saved_tensors_default_hooks(self.pack_hook, self.unpack_hook)

    def __exit__(self, *args: object) -> None:
        _C._pop_saved_tensors_default_hooks()


class save_on_cpu(saved_tensors_hooks):
    """Saved tensors are kept on the CPU and moved back to their device for backward."""

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda") -> None:
        def pack_to_cpu(tensor: Any) -> tuple:
            if not pin_memory:
                return (tensor.device, tensor.cpu())
            packed = _C.empty(tuple(tensor.size()), dtype=tensor.dtype)  # ember has no pinned memory
            packed.copy_(tensor)
            return (tensor.device, packed)

        def unpack_from_cpu(packed: tuple) -> Any:
            device, tensor = packed
            return tensor.to(device, non_blocking=pin_memory)

        super().__init__(pack_to_cpu, unpack_from_cpu)


@contextlib.contextmanager
def disable_saved_tensors_hooks(error_message: str) -> Iterator[None]:
    """Inside, installing saved-tensor hooks raises RuntimeError(error_message)
    (and so does entering while hooks are installed)."""
    previous = _C._saved_tensors_hooks_get_disabled_error_message()
    try:
        _C._saved_tensors_hooks_disable(error_message)
        yield
    finally:
        if previous is None:
            _C._saved_tensors_hooks_enable()
        else:
            _C._saved_tensors_hooks_disable(previous)


def __getattr__(name: str) -> Any:
    # to_dot and render (the graph drawn with Graphviz) load on first use: `import ember` stays fast.
    if name in ("to_dot", "render"):
        from . import _graph_dot
        return getattr(_graph_dot, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
