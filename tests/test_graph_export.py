"""Graph export (ember.autograd.graph.to_dot / render) and what it reads: the
values nodes keep for backward as grad_fn._saved_<name> (PyTorch's names, checked
against PyTorch 2.13 when it is installed), custom Functions' saved_tensors,
parameter names, multiple outputs, and saved tensors freed by backward."""
import re
import shutil

import pytest

import ember
from ember.autograd import Function
from ember.autograd.graph import render, to_dot

try:
    import torch
except ImportError:  # the comparisons are skipped
    torch = None

try:
    import graphviz
except ImportError:  # the rendering tests are skipped
    graphviz = None


def parse_dot(source):
    """{node id: (label lines, attributes)} and [(from, to)] of to_dot's output."""
    assert source.startswith("digraph {\n") and source.endswith("}\n")
    nodes, edges = {}, []
    for line in source.splitlines()[1:-1]:
        line = line.strip()
        if line.startswith(("node ", "edge ")):
            continue
        edge = re.fullmatch(r"(\w+) -> (\w+)", line)
        if edge:
            edges.append(edge.groups())
            continue
        node = re.fullmatch(r'(\w+) \[label="((?:[^"\\]|\\.)*)"(.*)\]', line)
        assert node, f"unexpected DOT line: {line!r}"
        identifier, label, attributes = node.groups()
        nodes[identifier] = (label.split("\\n"), attributes.strip())
    for a, b in edges:
        assert a in nodes and b in nodes
    return nodes, edges


def by_first_line(nodes, first):
    return [ident for ident, (label, _) in nodes.items() if label[0] == first]


def mlp_step():
    ember.manual_seed(0)
    params = {"W1": ember.randn(4, 8, requires_grad=True), "b1": ember.zeros(8, requires_grad=True),
              "W2": ember.randn(8, 3, requires_grad=True), "b2": ember.zeros(3, requires_grad=True)}
    x = ember.randn(5, 4)
    h = (x @ params["W1"] + params["b1"]).relu()
    loss = ((h @ params["W2"] + params["b2"]) ** 2).sum()
    return loss, params


# ---------------------------------------------------------------- _saved_ attributes
def test_saved_attributes_of_generated_nodes():
    x = ember.randn(3, 4, requires_grad=True)
    w = ember.randn(4, 5, requires_grad=True)
    product = x * x
    assert product.grad_fn._saved_self.shape == (3, 4) and product.grad_fn._saved_other.shape == (3, 4)
    assert product.grad_fn._saved_self.tolist() == x.tolist()
    scaled = x * 2
    assert scaled.grad_fn._saved_self is None  # not needed: x's gradient needs only the 2
    assert x.add(x, alpha=2).grad_fn._saved_alpha == 2
    summed = x.sum(0)
    assert summed.grad_fn._saved_dim == (0,) and summed.grad_fn._saved_keepdim is False
    assert summed.grad_fn._saved_self_sym_sizes == (3, 4)
    assert x.clamp(min=0.1).grad_fn._saved_min == 0.1 and x.clamp(min=0.1).grad_fn._saved_max is None
    assert (x @ w).grad_fn._saved_mat2.shape == (4, 5)
    assert x.permute(1, 0).grad_fn._saved_dims == (1, 0)
    assert x[1].grad_fn._saved_index == 1
    indexed = x[ember.tensor([0, 2])]
    (index,) = indexed.grad_fn._saved_indices
    assert index.tolist() == [0, 2]


def test_a_saved_output_comes_back_attached_to_its_node():
    x = ember.randn(3, requires_grad=True)
    y = x.exp()
    result = y.grad_fn._saved_result
    assert result.tolist() == y.tolist()
    assert result.grad_fn.name() == "ExpBackward0"


def test_dir_lists_the_saved_attributes_and_unknown_names_raise():
    x = ember.randn(3, requires_grad=True)
    fn = (x * x).grad_fn
    assert {"_saved_self", "_saved_other", "name", "next_functions"} <= set(dir(fn))
    with pytest.raises(AttributeError, match="'MulBackward0' object has no attribute '_saved_nothing'"):
        fn._saved_nothing
    with pytest.raises(AttributeError, match="'MulBackward0' object has no attribute 'foo'"):
        fn.foo
    assert not hasattr(fn, "variable")
    assert [a for a in dir((x + 1).grad_fn) if a.startswith("_saved_")] == ["_saved_alpha"]


FREED = ("Trying to backward through the graph a second time (or directly access saved tensors after they have "
         "already been freed).")


def test_reading_a_saved_tensor_after_backward_freed_it_raises_as_pytorch():
    x = ember.randn(3, requires_grad=True)
    y = x.exp()
    y.sum().backward(retain_graph=True)
    assert y.grad_fn._saved_result.shape == (3,)  # retained
    y.sum().backward()
    with pytest.raises(RuntimeError, match=re.escape(FREED)):
        y.grad_fn._saved_result
    scaled = x * 2  # its unsaved self reads None until backward, then raises too, as PyTorch
    assert scaled.grad_fn._saved_self is None
    scaled.sum().backward()
    with pytest.raises(RuntimeError, match=re.escape(FREED)):
        scaled.grad_fn._saved_self


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
def test_saved_attributes_match_pytorch():
    """Every value ember shows is PyTorch's, by the same name; the saved tensors are the same set
    (PyTorch also shows sizes and strides some of ember's nodes do not keep)."""
    def saved(lib):
        lib.manual_seed(0)
        x = lib.randn(3, 4, requires_grad=True)
        w = lib.randn(4, 5, requires_grad=True)
        out = []
        for y in [x * 2, x * x, x.add(x, alpha=2), x.exp(), x.relu(), x @ w, x[1], x.view(12), x.permute(1, 0),
                  x.pow(2), x.amax(1), x.softmax(1), x.sigmoid(), x.tanh(), x.clamp(min=0.1), x.sum(1)]:
            fn, values = y.grad_fn, {}
            for attribute in (a for a in dir(fn) if a.startswith("_saved_")):
                value = getattr(fn, attribute)
                is_tensor = isinstance(value, (ember.Tensor, torch.Tensor))
                values[attribute] = ("tensor", tuple(value.shape)) if is_tensor else value
            out.append(values)
        return out

    for ours, theirs in zip(saved(ember), saved(torch)):
        assert ours.items() <= theirs.items()
        assert {k for k, v in ours.items() if isinstance(v, tuple) and v[:1] == ("tensor",)} == \
            {k for k, v in theirs.items() if isinstance(v, tuple) and v[:1] == ("tensor",)}


# ---------------------------------------------------------------- to_dot
def test_mlp_graph_structure():
    loss, params = mlp_step()
    nodes, edges = parse_dot(to_dot(loss, params=params))
    names = sorted(label[0] for label, _ in nodes.values())
    assert names == sorted(["output", "SumBackward0", "PowBackward0", "AddBackward0", "MmBackward0",
                            "ReluBackward0", "AddBackward0", "MmBackward0", "W1", "b1", "W2", "b2"])
    assert len(edges) == 11  # a tree here: every box but the output feeds exactly one other
    (w1,) = by_first_line(nodes, "W1")
    label, attributes = nodes[w1]
    assert label == ["W1", "(4, 8) float32"] and "lightblue" in attributes
    assert nodes[by_first_line(nodes, "b2")[0]][0] == ["b2", "(3,) float32"]
    (relu,) = by_first_line(nodes, "ReluBackward0")
    assert nodes[relu][0] == ["ReluBackward0", "result: (5, 8) float32"]
    mm_labels = sorted(nodes[i][0] for i in by_first_line(nodes, "MmBackward0"))
    # mat2's strides pick the layout of its gradient (PyTorch saves them too).
    assert mm_labels == [["MmBackward0", "mat2: (8, 3) float32", "mat2_sym_strides: (3, 1)", "self: (5, 8) float32"],
                         ["MmBackward0", "mat2: None", "mat2_sym_strides: (8, 1)", "self: (5, 4) float32"]]
    (power,) = by_first_line(nodes, "PowBackward0")
    assert nodes[power][0] == ["PowBackward0", "exponent: 2", "self: (5, 3) float32"]
    (output,) = by_first_line(nodes, "output")
    assert nodes[output][0] == ["output", "() float32"]
    (sum_node,) = by_first_line(nodes, "SumBackward0")
    assert (sum_node, output) in edges
    (first_mm,) = [m for m in by_first_line(nodes, "MmBackward0") if "mat2: None" in nodes[m][0]]
    (second_mm,) = [m for m in by_first_line(nodes, "MmBackward0") if m != first_mm]
    assert (w1, first_mm) in edges and (relu, second_mm) in edges
    assert (by_first_line(nodes, "W2")[0], second_mm) in edges


def test_without_params_leaves_are_accumulate_grad():
    x = ember.randn(2, 3, dtype=ember.float64, requires_grad=True)
    nodes, edges = parse_dot(to_dot(x.sin()))
    (leaf,) = by_first_line(nodes, "AccumulateGrad")
    assert nodes[leaf][0] == ["AccumulateGrad", "(2, 3) float64"]
    (sin,) = by_first_line(nodes, "SinBackward0")
    assert nodes[sin][0] == ["SinBackward0", "self: (2, 3) float64"]
    assert edges == [(leaf, sin), (sin, by_first_line(nodes, "output")[0])]


def test_shared_inputs_are_one_node():
    x = ember.randn(3, requires_grad=True)
    y = x.exp()
    nodes, edges = parse_dot(to_dot(y * y + x))
    assert len(by_first_line(nodes, "ExpBackward0")) == 1 and len(by_first_line(nodes, "AccumulateGrad")) == 1
    (exp,) = by_first_line(nodes, "ExpBackward0")
    (mul,) = by_first_line(nodes, "MulBackward0")
    assert edges.count((exp, mul)) == 2  # self and other both come from exp


def test_multiple_outputs():
    x = ember.randn(3, 4, requires_grad=True)
    values, indices = x.max(1)
    doubled = x * 2
    nodes, edges = parse_dot(to_dot([values, doubled], params={"x": x, "values": values}))
    assert [nodes[i][0] for i in by_first_line(nodes, "values")] == [["values", "(3,) float32"]]
    assert [nodes[i][0] for i in by_first_line(nodes, "output 1")] == [["output 1", "(3, 4) float32"]]
    (leaf,) = by_first_line(nodes, "x")
    assert sum(1 for a, _ in edges if a == leaf) == 2
    (max_node,) = [i for i, (label, _) in nodes.items() if label[0].startswith("MaxBackward")]
    assert "indices: (3,) int64" in nodes[max_node][0]
    # two outputs of one node: one box, two edges out
    a, b = SplitInTwo.apply(x)
    nodes, edges = parse_dot(to_dot((a, b)))
    (split,) = by_first_line(nodes, "SplitInTwoBackward")
    assert sorted(b for a_, b in edges if a_ == split) == ["out0", "out1"]


class SplitInTwo(Function):
    @staticmethod
    def forward(ctx, x):
        return x[:1].clone(), x[1:].clone()

    @staticmethod
    def backward(ctx, grad_a, grad_b):
        return ember.cat([grad_a, grad_b])


class ScaleBy(Function):
    @staticmethod
    def forward(ctx, x, factor):
        ctx.save_for_backward(x, factor)
        return x * factor

    @staticmethod
    def backward(ctx, grad):
        x, factor = ctx.saved_tensors
        return grad * factor, grad * x


def test_custom_function_node_shows_its_saved_tensors():
    x = ember.randn(2, 3, requires_grad=True)
    factor = ember.full((3,), 2.0, dtype=ember.float32, requires_grad=True)
    y = ScaleBy.apply(x, factor)
    nodes, edges = parse_dot(to_dot(y, params={"x": x, "factor": factor}))
    (node,) = by_first_line(nodes, "ScaleByBackward")
    assert nodes[node][0] == ["ScaleByBackward", "saved_tensors[0]: (2, 3) float32",
                              "saved_tensors[1]: (3,) float32"]
    assert sorted(nodes[a][0][0] for a, b in edges if b == node) == ["factor", "x"]
    y.sum().backward()
    nodes, _ = parse_dot(to_dot(y))
    assert nodes[by_first_line(nodes, "ScaleByBackward")[0]][0] == ["ScaleByBackward", "saved_tensors: freed"]


def test_freed_and_retained_saved_tensors():
    loss, params = mlp_step()
    loss.backward(retain_graph=True)
    fresh_loss, fresh_params = mlp_step()
    assert to_dot(loss, params) == to_dot(fresh_loss, fresh_params)  # retained: as before backward
    loss.backward()
    nodes, _ = parse_dot(to_dot(loss, params))
    (relu,) = by_first_line(nodes, "ReluBackward0")
    assert nodes[relu][0] == ["ReluBackward0", "result: freed"]
    (power,) = by_first_line(nodes, "PowBackward0")
    assert nodes[power][0] == ["PowBackward0", "exponent: 2", "self: freed"]  # numbers stay


def test_a_tensor_without_history_and_bad_arguments():
    nodes, edges = parse_dot(to_dot(ember.ones(2)))
    assert list(nodes.values()) == [(["output", "(2,) float32"], "fillcolor=darkolivegreen1")] and edges == []
    with pytest.raises(TypeError, match=r"to_dot\(\): expected a Tensor"):
        to_dot(3)
    with pytest.raises(TypeError, match=r"to_dot\(\): params must be a dict"):
        to_dot(ember.ones(2), params=[ember.ones(2)])


def test_path_writes_the_source(tmp_path):
    loss, params = mlp_step()
    path = tmp_path / "graph.dot"
    source = to_dot(loss, params, path=path)
    assert path.read_text() == source


def test_labels_are_escaped():
    x = ember.ones(2, requires_grad=True)
    nodes, _ = parse_dot(to_dot(x * 2, params={'a "quoted" \\ name': x}))
    assert ['a \\"quoted\\" \\\\ name', "(2,) float32"] in [label for label, _ in nodes.values()]


# ---------------------------------------------------------------- render
def test_render_without_the_graphviz_package_names_it(monkeypatch, tmp_path):
    monkeypatch.setitem(__import__("sys").modules, "graphviz", None)
    with pytest.raises(ImportError, match="needs the graphviz Python package"):
        render(ember.ones(2), tmp_path / "g.svg")


@pytest.mark.skipif(graphviz is None, reason="the graphviz package is not installed")
def test_render_without_dot_names_it(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(RuntimeError, match="needs Graphviz's dot program"):
        render(ember.ones(2), tmp_path / "g.svg")


@pytest.mark.skipif(graphviz is None or shutil.which("dot") is None, reason="graphviz or its dot program missing")
@pytest.mark.parametrize("fmt, magic", [("svg", b"<svg"), ("png", b"\x89PNG")])
def test_render_writes_the_picture(tmp_path, fmt, magic):
    loss, params = mlp_step()
    path = render(loss, tmp_path / f"mlp.{fmt}", format=fmt, params=params)
    data = open(path, "rb").read()
    assert magic in data[:400]
    if fmt == "svg":
        assert b"ReluBackward0" in data and b"W1" in data


def test_the_docs_example_runs(tmp_path, monkeypatch, capsys):
    """docs/autograd_graph.md's program (rendering only where graphviz and dot are installed)."""
    import pathlib

    doc = pathlib.Path(__file__).resolve().parent.parent / "docs" / "autograd_graph.md"
    (program,) = re.findall(r"```python\n(.*?)```", doc.read_text(), re.S)
    can_render = graphviz is not None and shutil.which("dot") is not None
    if not can_render:
        program = "\n".join(line for line in program.splitlines() if not line.startswith("render("))
    monkeypatch.chdir(tmp_path)
    exec(compile(program, str(doc), "exec"), {})
    source = (tmp_path / "mlp_step.dot").read_text()
    assert capsys.readouterr().out == source + "\n"
    nodes, edges = parse_dot(source)
    assert len(nodes) == 13 and len(edges) == 12
    assert {"W1", "b1", "W2", "b2"} <= {label[0] for label, _ in nodes.values()}
    if can_render:
        assert b"ReluBackward0" in (tmp_path / "mlp_step.svg").read_bytes()
