"""Seeing every op call: the handler API over the trace hook in ember's op entries.

Subclass `TraceMode`, define `on_call`, and enter an instance: every op the
thread calls inside the block (every entry of ops.yaml, including the in-place
and out= forms, the ones Python operators and indexing run, and the ones the
backward pass runs) reaches `on_call` after it returns. Tensors made without
an op (`ember.tensor(data)`, `from_numpy`, `detach`) appear only as arguments.
For example::

    class Recorder(TraceMode):
        def __init__(self):
            super().__init__()
            self.calls = []

        def on_call(self, call):
            self.calls.append(call)

    with Recorder() as r:
        y = (x * 2).sum()
    [c.full_name for c in r.calls]  # ['mul', 'sum']

The rules (PyTorch's TorchDispatchMode is the model, but a mode observes and
cannot replace a call):

- A mode sees the calls of the thread that entered it, never another thread's.
- By default a mode sees the calls the program made (depth 0): `matmul`, not the
  `mm` it is made of. `TraceMode(nested=True)` also sees the calls made inside
  other calls (composites, derived in-place and out= forms), each reported when
  it returns, so a call comes after the calls it made; `call.depth` counts the
  calls it is inside.
- Calls the autograd engine makes during `backward()` and `autograd.grad` are
  program calls (depth 0) with `call.in_backward` set.
- A call that raises is not reported; the exception propagates as usual.
- Modes stack: each call goes to the innermost mode first, then outwards. While
  `on_call` runs, its own op calls reach only the modes entered before it (a
  handler never sees itself). An exception from `on_call` propagates from the
  op call that was being reported; leaving the `with` block removes the mode.
- Tensors are the program's own tensors (the same storage, autograd state and
  version), wrapped in Python objects the mode owns: within one `with` block a
  tensor is always the same object, so `calls[1].args[0] is calls[0].outputs[0]`
  when the second call used the first one's result. The objects are not the
  ones the program holds (ember makes a new Python object for each result it
  returns), and the mode holds them only through the calls it keeps. They are
  live: a later in-place op on a tensor shows in every call that holds it.
"""
from .. import _C

__all__ = ["OpCall", "TraceMode"]


class OpCall:
    """One op call, as a mode sees it after the call returned.

    - `name`: the op ("add", "add_" for the in-place form, "max").
    - `overload`: "" or the overload ("dim"); the out= form is "out" or "<overload>_out",
      as in PyTorch (`add.out`, `pow.Tensor_Scalar_out`).
    - `args`: the values of the positional parameters, `kwargs`: the keyword-only ones; every
      parameter is there, defaults included, in signature order (`out` comes last, in kwargs).
      Values are tensors, ints, floats, bools, strs, lists (`int[]`, `Tensor[]`), `ember.dtype`,
      `ember.device`, `ember.Generator` or None.
    - `outputs`: a tuple with one item per return (a list for a `Tensor[]` return; empty for an op
      returning nothing, `-> ()`, whose Python function returns None).
    - `depth`: 0 for a call the program made, n for a call made inside n other calls.
    - `in_backward`: the autograd engine made it.
    """

    __slots__ = ("name", "overload", "args", "kwargs", "outputs", "depth", "in_backward")

    def __init__(self, name, overload, args, kwargs, outputs, depth=0, in_backward=False):
        self.name, self.overload = name, overload
        self.args, self.kwargs, self.outputs = args, kwargs, outputs
        self.depth, self.in_backward = depth, in_backward

    @property
    def full_name(self):
        """The name PyTorch would print: `add`, `max.dim`, `add.out`."""
        return f"{self.name}.{self.overload}" if self.overload else self.name

    def __repr__(self):
        extra = (f", depth={self.depth}" if self.depth else "") + (", in_backward=True" if self.in_backward else "")
        return f"OpCall({self.full_name}, args={self.args!r}, kwargs={self.kwargs!r}{extra})"


class TraceMode:
    """Base class of op-call handlers: define `on_call(call)` and enter an instance
    (a context manager). `nested=True` (argument or class attribute) also reports the
    calls made inside other calls. See the module docstring for the rules."""

    nested = False

    def __init__(self, *, nested=False):
        self.nested = nested

    def on_call(self, call):
        """Receives each `OpCall` of this thread while the mode is entered."""
        raise NotImplementedError

    def __enter__(self):
        if type(self).on_call is TraceMode.on_call:
            raise TypeError(f"{type(self).__name__} must define on_call(self, call)")
        _C._trace_push(self, bool(self.nested))
        return self

    def __exit__(self, exc_type, exc, tb):
        _C._trace_pop(self)
        return False

    def _receive(self, name, overload, args, kwargs, outputs, depth, in_backward):
        self.on_call(OpCall(name, overload, args, kwargs, outputs, depth, in_backward))
