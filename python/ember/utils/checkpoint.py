"""Activation checkpointing: keep a region's inputs instead of the tensors its
backward needs, and recompute the region's forward in backward. As PyTorch's
torch.utils.checkpoint.

`use_reentrant=False` (recommended) runs the forward under saved-tensor hooks:
each tensor an op saves is kept as a small handle, and the first handle unpacked
in backward reruns the forward (same inputs, same RNG state) to fill the handles
with the recomputed tensors. `use_reentrant=True` is a custom Function whose
backward reruns the forward and calls `backward()` inside the outer backward.
"""
from __future__ import annotations

import contextlib
import traceback
import warnings
import weakref
from typing import Any, Callable, ContextManager, Iterable, Iterator, Optional

from .. import _C
from ..autograd import backward, enable_grad
from ..autograd.function import Function
from ..autograd.graph import saved_tensors_hooks

__all__ = [
    "checkpoint", "checkpoint_sequential", "CheckpointError", "CheckpointFunction",
    "set_checkpoint_debug_enabled", "set_checkpoint_early_stop", "noop_context_fn",
    "detach_variable", "check_backward_validity", "get_device_states", "set_device_states",
]


def _is_tensor(x: Any) -> bool:
    return isinstance(x, _C.TensorBase)


class CheckpointError(RuntimeError):
    """The recomputation did not save what the original forward saved."""


_DEBUG_TIP = """
Tip: To see a more detailed error message, either pass `debug=True` to
`ember.utils.checkpoint.checkpoint(...)` or wrap the code block
with `with ember.utils.checkpoint.set_checkpoint_debug_enabled(True):` to
enable checkpoint-debug mode globally.
"""

_checkpoint_debug_enabled: Optional[bool] = None
_checkpoint_early_stop: Optional[bool] = None


@contextlib.contextmanager
def set_checkpoint_debug_enabled(enabled: Optional[bool]) -> Iterator[None]:
    """Overrides checkpoint's `debug` argument inside the block (None: use the argument)."""
    global _checkpoint_debug_enabled
    previous = _checkpoint_debug_enabled
    _checkpoint_debug_enabled = enabled
    try:
        yield
    finally:
        _checkpoint_debug_enabled = previous


@contextlib.contextmanager
def set_checkpoint_early_stop(enable: bool) -> Iterator[None]:
    """Whether a non-reentrant recomputation stops once it has recomputed every saved
    tensor (the default) or runs the whole function; overrides `early_stop`."""
    global _checkpoint_early_stop
    previous = _checkpoint_early_stop
    _checkpoint_early_stop = enable
    try:
        yield
    finally:
        _checkpoint_early_stop = previous


def noop_context_fn() -> tuple[ContextManager, ContextManager]:
    return contextlib.nullcontext(), contextlib.nullcontext()


def detach_variable(inputs: tuple) -> tuple:
    """The tensors of `inputs` detached, each requiring grad as its original does."""
    if not isinstance(inputs, tuple):
        raise RuntimeError(
            f"Only tuple of tensors is supported. Got Unsupported input type: {type(inputs).__name__}")
    out = []
    for inp in inputs:
        if not _is_tensor(inp):
            out.append(inp)
            continue
        x = inp.detach()
        x.requires_grad = inp.requires_grad
        out.append(x)
    return tuple(out)


def check_backward_validity(inputs: Iterable[Any]) -> None:
    if not any(inp.requires_grad for inp in inputs if _is_tensor(inp)):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None", stacklevel=2)


# ---------------------------------------------------------------- RNG state

def _cuda_generator(index: int) -> Any:
    return _C._cuda_default_generator(index)


def get_device_states(*args: Any) -> tuple[list[int], list[Any]]:
    """The GPUs of the tensor arguments and their generators' states."""
    devices = sorted({arg.device.index for arg in args if _is_tensor(arg) and arg.device.type == "cuda"})
    return devices, [_cuda_generator(index).get_state() for index in devices]


def set_device_states(devices: list[int], states: list[Any], *, device_type: Optional[str] = None) -> None:
    for index, state in zip(devices, states):
        _cuda_generator(index).set_state(state)


class _RngSnapshot:
    """The CPU generator's state and the states of the GPUs the arguments live on,
    taken at the forward, so the recomputation draws the same random numbers."""

    def __init__(self, args: tuple) -> None:
        self.cpu_state = _C.default_generator.get_state()
        self.devices, self.device_states = get_device_states(*args)

    @contextlib.contextmanager
    def replayed(self) -> Iterator[None]:
        """Inside, the generators are as at the forward; on exit, as before the block."""
        outer_cpu = _C.default_generator.get_state()
        outer_devices = [_cuda_generator(index).get_state() for index in self.devices]
        _C.default_generator.set_state(self.cpu_state)
        set_device_states(self.devices, self.device_states)
        try:
            yield
        finally:
            _C.default_generator.set_state(outer_cpu)
            set_device_states(self.devices, outer_devices)


def _rng_context(snapshot: Optional[_RngSnapshot]) -> ContextManager:
    return snapshot.replayed() if snapshot is not None else contextlib.nullcontext()


# ---------------------------------------------------------------- use_reentrant=True

class CheckpointFunction(Function):
    """The reentrant variant: forward runs without grad; backward reruns it with
    grad on detached inputs and backpropagates through that graph."""

    @staticmethod
    def forward(ctx: Any, run_function: Callable[..., Any], preserve_rng_state: bool, *args: Any) -> Any:
        check_backward_validity(args)
        ctx.run_function = run_function
        ctx.rng = _RngSnapshot(args) if preserve_rng_state else None
        # Non-tensor arguments stay on ctx; tensors are saved (version-checked).
        ctx.inputs = [None if _is_tensor(arg) else arg for arg in args]
        ctx.tensor_indices = [i for i, arg in enumerate(args) if _is_tensor(arg)]
        ctx.save_for_backward(*(args[i] for i in ctx.tensor_indices))
        return run_function(*args)  # Function.apply runs forward without grad

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:
        inputs = list(ctx.inputs)
        for index, tensor in zip(ctx.tensor_indices, ctx.saved_tensors):
            inputs[index] = tensor
        with _rng_context(ctx.rng):
            detached = detach_variable(tuple(inputs))
            with enable_grad():
                outputs = ctx.run_function(*detached)
        if _is_tensor(outputs):
            outputs = (outputs,)
        outputs_with_grad, grads_of_outputs = [], []
        for output, grad in zip(outputs, grads):
            if _is_tensor(output) and output.requires_grad:
                outputs_with_grad.append(output)
                grads_of_outputs.append(grad)
        if not outputs_with_grad:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is not necessary")
        backward(outputs_with_grad, grads_of_outputs)
        return (None, None) + tuple(inp.grad if _is_tensor(inp) else None for inp in detached)


# ---------------------------------------------------------------- use_reentrant=False

class _Holder:
    """What the forward's pack hook keeps for a saved tensor: a key whose value
    the recomputation fills in."""

    __slots__ = ("__weakref__",)


class _StopRecomputation(Exception):
    """Raised by the recomputation's pack hook once every saved tensor is back."""


class _SaveInputs(Function):
    """Saves the checkpoint's tensor inputs as a node's saved tensors, so they go
    through the saved-tensor hooks active around the checkpoint (an outer
    checkpoint keeps only handles for them) and are version-checked."""

    @staticmethod
    def forward(ctx: Any, dummy: Any, *tensors: Any) -> Any:
        ctx.save_for_backward(*tensors)
        return _C.empty((0,))

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:
        raise AssertionError("checkpoint's input saver is never differentiated")


def _default_meta_extractor(x: Any) -> dict[str, Any]:
    return {"shape": x.shape, "dtype": x.dtype, "device": x.device}


_metadata_fns: dict[str, Callable[[Any], Any]] = {
    "default": _default_meta_extractor,
    "none": lambda _: None,
}


class _CheckpointFrame:
    """One non-reentrant checkpoint call: the handles of what its forward saved
    and how to recompute them."""

    def __init__(self, recompute_fn: Callable[..., None], early_stop: bool,
                 metadata_fn: Callable[[Any], Any], unpack_error_cb: Optional[Callable[[CheckpointError], Any]]) -> None:
        self.recompute_fn = recompute_fn
        self.early_stop = early_stop
        self.metadata_fn = metadata_fn
        self.unpack_error_cb = unpack_error_cb
        self.weak_holders: list[weakref.ref] = []
        self.x_metadatas: list[Any] = []
        self.recomputed: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self.recomp_counter = 0
        self.forward_completed = False
        self.ignore_saved_mismatch = False
        self.input_saver: Any = None  # the _SaveInputs output; holds its node alive
        self.args: list[Any] = []  # the non-tensor args; None where a tensor goes
        self.tensor_positions: list[int] = []

    def save_inputs(self, args: tuple) -> None:
        self.tensor_positions = [i for i, arg in enumerate(args) if _is_tensor(arg)]
        self.args = [None if _is_tensor(arg) else arg for arg in args]
        dummy = _C.empty((0,), requires_grad=True)
        self.input_saver = _SaveInputs.apply(dummy, *(args[i] for i in self.tensor_positions))

    def get_inputs(self) -> list[Any]:
        args = list(self.args)
        for position, tensor in zip(self.tensor_positions, self.input_saver.grad_fn.saved_tensors):
            args[position] = tensor
        return args

    def recompute(self) -> None:
        """Reruns the forward; its pack hook hands each saved tensor to the holder
        of the same position. Every live holder gets a fresh value."""
        args = self.get_inputs()
        self.recomp_counter = 0
        self.ignore_saved_mismatch = False
        try:
            with _recomputation_hook(weakref.ref(self)), enable_grad():
                self.recompute_fn(*args)
        except _StopRecomputation:
            pass
        self.check_recomputed_tensors_match()

    def check_recomputed_tensors_match(self) -> None:
        if self.ignore_saved_mismatch:
            return
        if len(self.weak_holders) != self.recomp_counter:
            raise CheckpointError(
                "ember.utils.checkpoint: A different number of tensors was saved during the original forward "
                "and recomputation.\n"
                f"Number of tensors saved during forward: {len(self.weak_holders)}\n"
                f"Number of tensors saved during recomputation: {self.recomp_counter}.\n{_DEBUG_TIP}")
        mismatched = ""
        for index, weak_holder in enumerate(self.weak_holders):
            holder = weak_holder()
            if holder is None:
                continue
            saved_meta = self.x_metadatas[index]
            recomputed_meta = self.metadata_fn(self.recomputed[holder])
            if saved_meta != recomputed_meta:
                mismatched += (f"tensor at position {index}:\nsaved metadata: {saved_meta}\n"
                               f"recomputed metadata: {recomputed_meta}\n")
        if mismatched:
            raise CheckpointError(
                "ember.utils.checkpoint: Recomputed values for the following tensors have different metadata "
                f"than during the forward pass.\n{mismatched}.\n{_DEBUG_TIP}")

    def unpack(self, holder: _Holder) -> Any:
        # A holder with no value: the first unpack of this backward (or of a later
        # one, after retain_graph), so recompute; each value is handed out once.
        if holder not in self.recomputed:
            self.recompute()
        return self.recomputed.pop(holder)


class _recomputation_hook(saved_tensors_hooks):
    def __init__(self, frame_ref: weakref.ref) -> None:
        def pack_hook(x: Any) -> Any:
            x = x.detach() if x.requires_grad else x
            frame = frame_ref()
            assert frame is not None, "checkpoint: the frame of a running recomputation is gone"
            index = frame.recomp_counter
            frame.recomp_counter += 1
            if index >= len(frame.weak_holders):
                if not frame.forward_completed:
                    # backward inside the checkpointed forward recomputes a partial forward
                    frame.ignore_saved_mismatch = True
                    return x
                raise CheckpointError(
                    "ember.utils.checkpoint: trying to save more tensors during recomputation than during the "
                    f"original forward pass.\n{_DEBUG_TIP}")
            holder = frame.weak_holders[index]()
            if holder is not None:
                frame.recomputed[holder] = x
            if frame.early_stop and frame.recomp_counter == len(frame.weak_holders):
                raise _StopRecomputation
            return x

        def unpack_hook(x: Any) -> Any:
            return x

        super().__init__(pack_hook, unpack_hook)


class _checkpoint_hook(saved_tensors_hooks):
    def __init__(self, frame: _CheckpointFrame) -> None:
        def pack_hook(x: Any) -> _Holder:
            holder = _Holder()
            frame.weak_holders.append(weakref.ref(holder))
            frame.x_metadatas.append(frame.metadata_fn(x))
            return holder

        def unpack_hook(holder: _Holder) -> Any:
            try:
                return frame.unpack(holder)
            except CheckpointError as error:
                if frame.unpack_error_cb is None:
                    raise
                frame.unpack_error_cb(error)
                raise

        super().__init__(pack_hook, unpack_hook)


class _OpLog:
    """debug=True: the ops of the forward and of the recomputation, with where
    each was called from, for the error message."""

    def __init__(self) -> None:
        self.forward: list[tuple[str, str]] = []
        self.recompute: list[tuple[str, str]] = []

    def recorder(self, into: list[tuple[str, str]]) -> ContextManager:
        from .trace import TraceMode

        class Recorder(TraceMode):
            def on_call(self, call: Any) -> None:
                into.append((call.full_name, "".join(traceback.format_stack()[:-2])))

        return Recorder()

    def context_fn(self) -> tuple[ContextManager, ContextManager]:
        self.forward.clear()
        self.recompute.clear()
        return self.recorder(self.forward), self.recorder(self.recompute)

    def raise_with_logs(self, error: CheckpointError) -> None:
        def traces(log: list[tuple[str, str]]) -> str:
            return "\n".join(f"{name} ran at:\n{stack}" for name, stack in log)

        def names(log: list[tuple[str, str]]) -> str:
            return "\n".join(name for name, _ in log)

        raise CheckpointError(
            "An error happened while unpacking tensors; dumping logs of latest computation because you passed "
            "`debug=True` to `ember.utils.checkpoint.checkpoint()`.\n\n"
            f"1. Stack traces of the operators that ran in the original forward\n\n{traces(self.forward)}\n\n"
            f"2. Stack traces of the operators that ran during recomputation\n\n{traces(self.recompute)}\n\n"
            f"3. Operations executed during the original forward:\n\n{names(self.forward)}\n\n"
            f"Operations executed during recomputation:\n\n{names(self.recompute)}\n\n"
            "ERROR: Detected non-determinism while running activation checkpointing\n\n"
            f"{error}") from error


def _checkpoint_without_reentrant(function: Callable[..., Any], preserve_rng_state: bool,
                                  context_fn: Callable[[], tuple[ContextManager, ContextManager]],
                                  determinism_check: str, debug: bool, early_stop: bool,
                                  args: tuple, kwargs: dict) -> Any:
    unpack_error_cb = None
    if _checkpoint_debug_enabled if _checkpoint_debug_enabled is not None else debug:
        if context_fn is not noop_context_fn:
            raise ValueError("debug=True is incompatible with non-default context_fn")
        log = _OpLog()
        context_fn, unpack_error_cb = log.context_fn, log.raise_with_logs
    if determinism_check not in _metadata_fns:
        raise ValueError(f"determinism_check should be one of {list(_metadata_fns.keys())}, "
                         f"but got {determinism_check}")
    metadata_fn = _metadata_fns[determinism_check]
    forward_context, recompute_context = context_fn()
    rng = _RngSnapshot(args) if preserve_rng_state else None

    def recompute_fn(*inputs: Any) -> None:
        with _rng_context(rng), recompute_context:
            function(*inputs, **kwargs)

    if not _C.is_grad_enabled():
        return function(*args, **kwargs)
    frame = _CheckpointFrame(recompute_fn, _checkpoint_early_stop if _checkpoint_early_stop is not None
                             else early_stop, metadata_fn, unpack_error_cb)
    frame.save_inputs(args)
    with _checkpoint_hook(frame), forward_context:
        result = function(*args, **kwargs)
    frame.forward_completed = True
    return result


# ---------------------------------------------------------------- the entry points

def checkpoint(function: Callable[..., Any], *args: Any, use_reentrant: Optional[bool] = None,
               context_fn: Callable[[], tuple[ContextManager, ContextManager]] = noop_context_fn,
               determinism_check: str = "default", debug: bool = False, early_stop: bool = True,
               **kwargs: Any) -> Any:
    """Runs `function(*args, **kwargs)` without keeping the tensors its backward
    needs; backward recomputes them. `preserve_rng_state=True` (a keyword) replays
    the forward's random numbers. Pass `use_reentrant` explicitly (False is
    recommended); left out, it warns and is True, as in PyTorch."""
    if use_reentrant is None:
        warnings.warn(
            "ember.utils.checkpoint: the use_reentrant parameter should be passed explicitly. Starting in "
            "PyTorch 2.9, calling checkpoint without use_reentrant will raise an exception. use_reentrant=False "
            "is recommended, but if you need to preserve the current default behavior, you can pass "
            "use_reentrant=True. Refer to docs for more details on the differences between the two variants.",
            stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs and use_reentrant:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    if use_reentrant:
        if context_fn is not noop_context_fn or debug is not False:
            raise ValueError("Passing `context_fn` or `debug` is only supported when use_reentrant=False.")
        return CheckpointFunction.apply(function, preserve, *args)
    return _checkpoint_without_reentrant(function, preserve, context_fn, determinism_check, debug, early_stop,
                                         args, kwargs)


def checkpoint_sequential(functions: Any, segments: int, input: Any, use_reentrant: Optional[bool] = None,
                          **kwargs: Any) -> Any:
    """Runs `functions` (a list, or a module's children) one after another in
    `segments` chunks, checkpointing all but the last chunk."""
    if use_reentrant is None:
        warnings.warn(
            "ember.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should be passed "
            "explicitly. In version 2.9 we will raise an exception if use_reentrant is not passed. "
            "use_reentrant=False is recommended, but if you need to preserve the current default behavior, you "
            "can pass use_reentrant=True. Refer to docs for more details on the differences between the two "
            "variants.", stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    if callable(getattr(functions, "children", None)):
        functions = list(functions.children())

    def run_function(start: int, end: int) -> Callable[[Any], Any]:
        def forward(x: Any) -> Any:
            for j in range(start, end + 1):
                x = functions[j](x)
            return x
        return forward

    segment_size = len(functions) // segments
    end = -1
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1
        input = checkpoint(run_function(start, end), input, use_reentrant=use_reentrant,
                           preserve_rng_state=preserve)
    return run_function(end + 1, len(functions) - 1)(input)
