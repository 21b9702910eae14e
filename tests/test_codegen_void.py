"""Ops returning nothing (`-> ()`, PyTorch's schema of _foreach_add_ and
_amp_foreach_non_finite_check_and_unscale_): what the codegen accepts, its errors, and what it
generates (a void C++ entry, a trace report without outputs, a binding returning None, or an in-place
_foreach_ op's list as PyTorch's, `-> None` stubs)."""
import re
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from codegen.errors import SpecError  # noqa: E402
from codegen.gen import generate  # noqa: E402
from codegen.model import load_model  # noqa: E402

HEADER = "dtype_sets:\n  floating: [float32, float64]\nops:\n"
FOREACH_ADD = """\
- func: _foreach_add_.Scalar(Tensor[] self, Scalar scalar) -> ()
  kind: kernel
  kernels: {cpu: foreach_add_cpu}
  dtypes: floating
  variants: [function]
  doc: Adds in place.
"""
# A method form of a name_ op: Tensor.fill_ returns self, a `-> ()` one returns None.
CHECK = """\
- func: check_finite_(Tensor self) -> ()
  kind: composite
  doc: Raises on inf.
"""
ADD = """\
- func: add(Tensor self, Tensor other) -> Tensor
  kind: pointwise
  promote: common
  dtypes: floating
  scalar: self + other
  doc: Adds.
"""


def load(tmp_path, body, derivs=""):
    (tmp_path / "ops.yaml").write_text(HEADER + textwrap.dedent(body))
    (tmp_path / "derivatives.yaml").write_text(textwrap.dedent(derivs))
    return load_model(tmp_path / "ops.yaml", tmp_path / "derivatives.yaml")


def error_of(tmp_path, body, derivs=""):
    with pytest.raises(SpecError) as e:
        load(tmp_path, body, derivs)
    return str(e.value)


def test_empty_return_loads(tmp_path):
    model = load(tmp_path, FOREACH_ADD + CHECK + ADD)
    foreach, check, add = model.ops
    assert foreach.returns_nothing and foreach.sig.returns == [] and foreach.full_name == "_foreach_add_.Scalar"
    assert check.returns_nothing and check.variants == ["function", "method"]
    assert not add.returns_nothing


def test_empty_return_only_on_kernels_and_composites(tmp_path):
    for kind, extra in (("pointwise", "  promote: common\n  scalar: self\n  dtypes: floating\n"),
                        ("reduction", "  dtypes: floating\n  reduce: {init: 0, combine: a + b, result: same}\n"),
                        ("view", ""), ("factory", "")):
        body = f"- func: f_(Tensor self) -> ()\n  kind: {kind}\n  doc: Nothing.\n" + extra
        msg = error_of(tmp_path, body)
        assert msg == (f"ops.yaml:4: f_: `-> ()` (returns nothing) is for kernel and composite ops that write into "
                       f"their arguments, not a {kind} op"), msg


def test_empty_return_needs_a_tensor_argument(tmp_path):
    msg = error_of(tmp_path, "- func: seed_(int seed) -> ()\n  kind: composite\n  doc: Seeds.\n")
    assert msg == "ops.yaml:4: seed_: `-> ()` (returns nothing) needs a Tensor or Tensor[] argument to write into"


def test_empty_return_derives_no_variants(tmp_path):
    msg = error_of(tmp_path, CHECK + "  derive: [out]\n")
    assert msg.startswith("ops.yaml:7: check_finite_: an op returning nothing (`-> ()`) derives no in-place or "
                          "out= variant"), msg
    assert "derives no in-place" in error_of(tmp_path, CHECK + "  derive: [inplace]\n")


@pytest.mark.parametrize("key,value", [("autocast", "fp32"), ("node_name", "CheckBackward0")])
def test_empty_return_has_no_result_keys(tmp_path, key, value):
    body = CHECK.replace("check_finite_(", "check_finite(") + f"  {key}: {value}\n"
    msg = error_of(tmp_path, body)
    assert msg == f"ops.yaml:7: check_finite: {key} needs a result; the op returns nothing (`-> ()`)", msg


def test_empty_return_has_no_derivative(tmp_path):
    msg = error_of(tmp_path, FOREACH_ADD, "- op: _foreach_add_.Scalar\n  self: grad\n")
    assert msg == ("derivatives.yaml:1: '_foreach_add_.Scalar' returns nothing (`-> ()`): it has no result to "
                   "differentiate")


def test_formula_cannot_call_an_op_returning_nothing(tmp_path):
    msg = error_of(tmp_path, ADD + CHECK, "- op: add\n  self: check_finite_(grad)\n  other: grad\n")
    assert msg.startswith("derivatives.yaml:2: ") and "check_finite_ returns nothing (`-> ()`)" in msg, msg


def generated(tmp_path, body):
    model = load(tmp_path, body)
    out = tmp_path / "gen"
    generate(model, out, 1, True)
    return {p.relative_to(out).as_posix(): p.read_text() for p in out.rglob("*") if p.is_file()}


def test_generated_cpp_is_void(tmp_path):
    files = generated(tmp_path, FOREACH_ADD + CHECK + ADD)
    header = files["ember/ops/_foreach_add_.h"]
    assert "void _foreach_add__Scalar(const TensorList& self, const Scalar& scalar);" in header
    assert "using _foreach_add__Scalar_fn = void (*)(const TensorList&, const Scalar&);" in header
    assert "void foreach_add_cpu(const TensorList& self, const Scalar& scalar);" in header
    assert "void check_finite_(const Tensor& self);" in files["ember/ops/check_finite_.h"]
    ops = files["ops_0.cpp"]
    body = re.search(r"static void _foreach_add__Scalar_untraced\(.*?\n}\n", ops, re.S).group()
    assert "  kernel_for(dispatch::_foreach_add__Scalar, first_device(self" in body and "return" not in body
    assert "  native::check_finite_(self);\n}" in ops
    # The trace hook reports the call with no outputs (ember.utils.trace: OpCall.outputs == ()).
    traced = re.search(r"static void check_finite__traced\(.*?\n}\n", ops, re.S).group()
    assert "check_finite__untraced(self);" in traced and "scope.report({ self }, {});" in traced
    assert "result__" not in traced
    # The void entry itself; the add entry is untouched.
    assert "void check_finite_(const Tensor& self) {" in ops and "Tensor add(const Tensor& self" in ops


def after_calls(bindings, call):
    """The binding code after each call of `call`."""
    ends = [m.end() for m in re.finditer(re.escape(call), bindings)]
    assert ends, call
    return [bindings[end:].lstrip(" });\n") for end in ends]


def test_generated_bindings_return_none(tmp_path):
    files = generated(tmp_path, FOREACH_ADD + CHECK + ADD)
    bindings = files["python_ops_0.cpp"]
    # ember.check_finite_ and Tensor.check_finite_: the call, then None (never self)
    rest = after_calls(bindings, "ember::check_finite_(self);")
    assert len(rest) == 2 and all(r.startswith("Py_RETURN_NONE;") for r in rest), rest


def test_inplace_foreach_bindings_return_their_list(tmp_path):
    """As PyTorch's: `torch._foreach_add_(ts, 1) is ts` (its stub says None, the dispatcher returns nothing)."""
    files = generated(tmp_path, FOREACH_ADD)
    (rest,) = after_calls(files["python_ops_0.cpp"], "ember::_foreach_add__Scalar(self, scalar);")
    assert rest.startswith("Py_INCREF(parsed[0]); return parsed[0];"), rest
    torch = pytest.importorskip("torch")
    ts = [torch.ones(2)]
    assert torch._foreach_add_(ts, 1) is ts and ts[0].tolist() == [2.0, 2.0]


def test_inplace_foreach_takes_a_tensor_list_self(tmp_path):
    for sig in ("_foreach_zero_(Tensor self) -> ()", "_foreach_zero_(Tensor[] tensors) -> ()"):
        msg = error_of(tmp_path, FOREACH_ADD.replace("_foreach_add_.Scalar(Tensor[] self, Scalar scalar) -> ()", sig))
        assert msg == ("ops.yaml:4: _foreach_zero_: an in-place _foreach_ op takes `Tensor[] self` first (its "
                       "Python function returns it, as PyTorch's)"), msg


def test_generated_stubs_and_docs_say_none(tmp_path):
    files = generated(tmp_path, FOREACH_ADD + CHECK + ADD)
    stub = files["_C/__init__.pyi"]
    assert "def _foreach_add_(input: Sequence[Tensor], scalar: Union[Number, Tensor]) -> None: ..." in stub
    assert "def check_finite_(input: Tensor) -> None: ..." in stub
    assert "    def check_finite_(self) -> None: ..." in stub   # the method, not `-> Tensor` as other name_ methods
    assert "def add(input: Tensor, other: Tensor, *, out: Optional[Tensor] = ...) -> Tensor: ..." in stub
    assert "-> None: ..." in files["_C/_VariableFunctions.pyi"]
    docs = files["ops.md"]
    section = docs[docs.index("## `_foreach_add_.Scalar`"):docs.index("## `check_finite_`")]
    assert "- returns: nothing (`-> ()`; None in Python)" in section
    assert "returns: nothing" not in docs[docs.index("## `add`"):]


def test_ops_harness_asks_for_a_skip(tmp_path):
    """tests/test_ops.py compares results: a `-> ()` op's entry names the test of what it writes."""
    sys.path.insert(0, str(ROOT / "tests"))
    from harness.collect import collect
    from harness.lint import lint
    from harness.spec import load_spec

    body = FOREACH_ADD + "  test: {samples: unary, ref: a + 1}\n" + CHECK + "  test: {skip: tests/test_x.py}\n"
    load(tmp_path, body)
    spec = load_spec(str(tmp_path / "ops.yaml"), str(tmp_path / "derivatives.yaml"))
    assert lint(spec) == ["ops.yaml:4: _foreach_add_.Scalar: an op returning nothing (`-> ()`) has no result to "
                          "compare: give `skip:` naming the test of what it writes"]
    cases = collect(spec)
    assert not cases.forward and [c.id for c in cases.skipped] == ["check_finite_"]
