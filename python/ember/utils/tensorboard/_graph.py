"""add_graph: a model's forward pass as a TensorBoard GraphDef. PyTorch traces with the JIT; ember
records the op calls of one forward (ember.utils.trace) and the module each ran in (forward hooks),
naming nodes as PyTorch does: scopes `Net/Linear[fc1]`, ops `aten::<name>`, "IO Node" inputs/outputs."""
from __future__ import annotations

from typing import Any, Dict, List, Tuple

from tensorboardX.proto import (  # type: ignore[import-untyped,import-not-found]
    attr_value_pb2, graph_pb2, node_def_pb2, tensor_shape_pb2, versions_pb2)

from ... import _C
from ...autograd import no_grad
from ..trace import TraceMode


class _Recorder(TraceMode):
    """Keeps every op call of the program with the module scope it ran in (keeping the calls keeps
    their tensors alive, so a tensor's `_cdata` names one tensor for the whole recording)."""

    def __init__(self) -> None:
        super().__init__()
        self.scopes: List[str] = []
        self.calls: List[Tuple[Any, str]] = []

    def on_call(self, call: Any) -> None:
        if not call.in_backward:
            self.calls.append((call, self.scopes[-1]))


def _tensors(value: Any) -> List[Any]:
    """The tensors in a (nested) tuple/list/dict output, in order."""
    if isinstance(value, _C.TensorBase):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors(v)]
    return []


def _attrs(shapes: List[Tuple[int, ...]], text: str = "") -> Dict[str, Any]:
    dims = [tensor_shape_pb2.TensorShapeProto(dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=d) for d in s])
            for s in shapes]
    return {"_output_shapes": attr_value_pb2.AttrValue(list=attr_value_pb2.AttrValue.ListValue(shape=dims)),
            "attr": attr_value_pb2.AttrValue(s=text.encode())}


def _hook_scopes(model: Any, recorder: _Recorder) -> List[Any]:
    """Forward hooks that keep recorder.scopes[-1] the scope of the running module; returns their handles."""
    handles = []
    for name, module in model.named_modules():
        def enter(mod: Any, args: Any, name: str = name) -> None:
            parent = recorder.scopes[-1] if recorder.scopes else ""
            leaf = f"{type(mod).__name__}[{name.rsplit('.', 1)[-1]}]" if name else type(mod).__name__
            recorder.scopes.append(f"{parent}/{leaf}" if parent else leaf)

        def leave(mod: Any, args: Any, output: Any) -> None:
            recorder.scopes.pop()
        handles += [module.register_forward_pre_hook(enter), module.register_forward_hook(leave)]
    return handles


def graph(model: Any, args: Any, verbose: bool = False) -> Any:
    """(GraphDef, None): the graph of one `model(*args)` run without autograd."""
    inputs = list(args) if isinstance(args, (list, tuple)) else [args]
    recorder = _Recorder()
    handles = _hook_scopes(model, recorder)
    try:
        with no_grad(), recorder:
            output = model(*inputs)
    finally:
        for h in handles:
            h.remove()

    nodes: List[Any] = []
    producer: Dict[int, str] = {}  # tensor _cdata -> the node that made it
    counts: Dict[str, int] = {}

    def add_node(name: str, op: str, node_inputs: List[str], shapes: List[Tuple[int, ...]], text: str = "") -> str:
        counts[name] = counts.get(name, 0) + 1
        unique = f"{name}.{counts[name]}" if counts[name] > 1 or op not in ("IO Node", "prim::GetAttr") else name
        nodes.append(node_def_pb2.NodeDef(name=unique, op=op, input=node_inputs, attr=_attrs(shapes, text)))
        return unique

    for i, t in enumerate(_tensors(inputs)):
        producer[t._cdata] = add_node(f"input/input.{i + 1}", "IO Node", [], [tuple(t.shape)])
    owners = {p._cdata: (n, p) for n, p in list(model.named_parameters()) + list(model.named_buffers())}
    root = type(model).__name__
    for call, scope in recorder.calls:
        node_inputs = []
        for t in _tensors(list(call.args) + list(call.kwargs.values())):
            if t._cdata not in producer:
                if t._cdata in owners:
                    qualified, p = owners[t._cdata]
                    module_path, _, leaf = qualified.rpartition(".")
                    prefix = _scope_path(model, module_path, root) if module_path else root
                    producer[t._cdata] = add_node(f"{prefix}/{leaf}", "prim::GetAttr", [], [tuple(p.shape)])
                else:
                    value = f"{{ value : {t.item()} }}" if t.numel() == 1 else ""
                    producer[t._cdata] = add_node(f"{scope}/constant", "prim::Constant", [], [tuple(t.shape)], value)
            node_inputs.append(producer[t._cdata])
        outs = _tensors(list(call.outputs))
        others = [a for a in list(call.args) + list(call.kwargs.values()) if a is not None and not _tensors(a)]
        name = add_node(f"{scope}/{call.name}", f"aten::{call.full_name}", node_inputs, [tuple(t.shape) for t in outs],
                        "{ " + ", ".join(repr(a) for a in others) + " }" if others else "")
        for t in outs:
            producer[t._cdata] = name
    for i, t in enumerate(_tensors(output)):
        source = producer.get(t._cdata)
        add_node(f"output/output.{i + 1}", "IO Node", [source] if source else [], [tuple(t.shape)])
    graph_def = graph_pb2.GraphDef(node=nodes, versions=versions_pb2.VersionDef(producer=22))
    if verbose:
        print(graph_def)
    return graph_def


def _scope_path(model: Any, module_path: str, root: str) -> str:
    """The scope name of the submodule at `module_path` ("layer1.0" -> "Net/Sequential[layer1]/Block[0]")."""
    scope, module = root, model
    for part in module_path.split("."):
        module = getattr(module, part)
        scope += f"/{type(module).__name__}[{part}]"
    return scope
