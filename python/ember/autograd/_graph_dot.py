"""Graph export: the backward graph of tensors as Graphviz DOT source (to_dot),
and rendered to SVG/PNG through the `graphviz` package (render). Exported from
ember.autograd.graph; docs/autograd_graph.md has an example and its picture."""
from __future__ import annotations

import os
from typing import Any, Iterable, Mapping, Optional, Union

from .. import _C

__all__ = ["to_dot", "render"]

_SAVED_PREFIX = "_saved_"
_GRAPH_ATTRIBUTES = (
    '  node [shape=box style="rounded,filled" fillcolor=white fontname=monospace fontsize=10]\n'
    "  edge [fontname=monospace fontsize=9]\n"
)
_LEAF_COLOR = "lightblue"
_OUTPUT_COLOR = "darkolivegreen1"


def _describe_tensor(t: Any) -> str:
    dtype = str(t.dtype).replace("ember.", "")
    return f"{tuple(t.shape)} {dtype}"


def _describe_value(value: Any) -> str:
    if isinstance(value, _C.TensorBase):
        return _describe_tensor(value)
    if isinstance(value, tuple) and value and all(isinstance(v, _C.TensorBase) for v in value):
        return "[" + ", ".join(_describe_tensor(v) for v in value) + "]"
    return repr(value)


def _saved_lines(fn: Any) -> list[str]:
    """One line per value the node keeps for backward; 'freed' once backward released it."""
    from .function import BackwardCFunction

    if isinstance(fn, BackwardCFunction):  # a custom Function's ctx: its save_for_backward
        try:
            saved = fn.saved_tensors
        except RuntimeError:
            return ["saved_tensors: freed"]
        return [f"saved_tensors[{i}]: {_describe_value(t)}" for i, t in enumerate(saved)]
    lines = []
    for attribute in dir(fn):
        if not attribute.startswith(_SAVED_PREFIX):
            continue
        name = attribute[len(_SAVED_PREFIX):]
        try:
            value = getattr(fn, attribute)
        except RuntimeError:  # read after backward freed it, as PyTorch raises
            lines.append(f"{name}: freed")
            continue
        lines.append(f"{name}: {_describe_value(value)}")
    return lines


def _quote(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def _as_tensors(tensor_or_tensors: Any) -> list:
    if isinstance(tensor_or_tensors, _C.TensorBase):
        return [tensor_or_tensors]
    if isinstance(tensor_or_tensors, Iterable):
        tensors = list(tensor_or_tensors)
        if tensors and all(isinstance(t, _C.TensorBase) for t in tensors):
            return tensors
    raise TypeError(f"to_dot(): expected a Tensor or a sequence of Tensors, got {type(tensor_or_tensors).__name__}")


def _param_names(params: Optional[Mapping[str, Any]]) -> dict[int, str]:
    """Names by tensor identity (ember makes a new Python object per returned tensor)."""
    if params is None:
        return {}
    if not isinstance(params, Mapping):
        raise TypeError(f"to_dot(): params must be a dict of name -> Tensor, got {type(params).__name__}")
    return {t._cdata: name for name, t in params.items()}


def to_dot(tensor_or_tensors: Any, params: Optional[Mapping[str, Any]] = None,
           path: Union[str, os.PathLike, None] = None) -> str:
    """Graphviz DOT source of the backward graph that produced `tensor_or_tensors`.

    One box per node (`grad_fn`), named as `grad_fn.name()`, with a line per value
    it keeps for backward (`grad_fn._saved_<name>`: tensors as shape and dtype,
    other values as Python shows them, `freed` after backward released them; a
    custom Function's `saved_tensors`). Leaves (AccumulateGrad) are blue, labelled
    with their name in `params` (a dict name -> tensor, as torchviz's make_dot) and
    their shape and dtype; the given tensors are green. Edges run from a node's
    inputs to the node, in the forward direction. With `path`, the source is also
    written to that file."""
    tensors = _as_tensors(tensor_or_tensors)
    names = _param_names(params)
    ids: dict[int, str] = {}
    keep_alive: list[Any] = []  # ember may make a new Python object per access: ids stay unique while held
    lines = ["digraph {", _GRAPH_ATTRIBUTES.rstrip("\n")]

    def node_id(fn: Any) -> tuple[str, bool]:
        key = id(fn)
        if key in ids:
            return ids[key], False
        keep_alive.append(fn)
        ids[key] = f"n{len(ids)}"
        return ids[key], True

    def add_node(fn: Any) -> str:
        identifier, new = node_id(fn)
        if not new:
            return identifier
        if type(fn).__name__ == "AccumulateGrad":
            leaf = fn.variable
            label = f"{names.get(leaf._cdata, 'AccumulateGrad')}\n{_describe_tensor(leaf)}"
            lines.append(f"  {identifier} [label={_quote(label)} fillcolor={_LEAF_COLOR}]")
            return identifier
        label = "\n".join([type(fn).__name__] + _saved_lines(fn))  # as torchviz: CopySlices, not torch::autograd::
        lines.append(f"  {identifier} [label={_quote(label)}]")
        for next_fn, _ in fn.next_functions:
            if next_fn is not None:
                lines.append(f"  {add_node(next_fn)} -> {identifier}")
        return identifier

    for i, t in enumerate(tensors):
        output = f"out{i}"
        name = names.get(t._cdata, "output" if len(tensors) == 1 else f"output {i}")
        lines.append(f"  {output} [label={_quote(name + chr(10) + _describe_tensor(t))} fillcolor={_OUTPUT_COLOR}]")
        if t.grad_fn is not None:
            lines.append(f"  {add_node(t.grad_fn)} -> {output}")
    lines.append("}")
    source = "\n".join(lines) + "\n"
    if path is not None:
        with open(path, "w", encoding="utf-8") as f:
            f.write(source)
    return source


def render(tensor_or_tensors: Any, path: Union[str, os.PathLike], format: str = "svg",
           params: Optional[Mapping[str, Any]] = None) -> str:
    """Draws the graph of to_dot into `path` as `format` ("svg", "png", ... any
    format Graphviz's dot writes) and returns the file's path. Needs the `graphviz`
    Python package and Graphviz's `dot` program."""
    try:
        import graphviz  # type: ignore  # optional and untyped
    except ImportError as e:
        raise ImportError("ember.autograd.graph.render needs the graphviz Python package "
                          "(pip install graphviz) and Graphviz's dot program") from e
    source = graphviz.Source(to_dot(tensor_or_tensors, params))
    try:
        data = source.pipe(format=format)
    except graphviz.ExecutableNotFound as e:
        raise RuntimeError("ember.autograd.graph.render needs Graphviz's dot program on PATH "
                           "(e.g. apt-get install graphviz)") from e
    with open(path, "wb") as f:
        f.write(data)
    return os.fspath(path)
