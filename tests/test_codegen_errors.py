"""Malformed specs fail the build with `file:line: message`, one test per kind of mistake."""
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from codegen.errors import SpecError  # noqa: E402
from codegen.model import load_model  # noqa: E402

GOOD_OP = """\
- func: mul(Tensor self, Tensor other) -> Tensor
  kind: pointwise
  promote: common
  dtypes: all
  scalar: self * other
  doc: Multiplies.
"""
HEADER = """\
dtype_sets:
  floating: [float32, float64]
  all: floating + [int64, bool]
ops:
"""


def load(tmp_path, ops_body, derivs=""):
    ops = tmp_path / "ops.yaml"
    der = tmp_path / "derivatives.yaml"
    ops.write_text(HEADER + textwrap.dedent(ops_body))
    der.write_text(textwrap.dedent(derivs))
    return load_model(ops, der)


def error_of(tmp_path, ops_body, derivs=""):
    with pytest.raises(SpecError) as e:
        load(tmp_path, ops_body, derivs)
    return str(e.value)


def test_valid_spec_loads(tmp_path):
    model = load(tmp_path, GOOD_OP, "- op: mul\n  self: grad * other\n  other: grad * self\n")
    (op,) = model.ops
    assert op.name == "mul" and op.derive == ["inplace", "out"]
    assert op.dtypes == ["bool", "int64", "float32", "float64"]
    assert set(op.derivative.formulas) == {"self", "other"}


def test_unknown_type(tmp_path):
    msg = error_of(tmp_path, GOOD_OP.replace("Tensor other", "Tensr other"))
    assert msg.startswith("ops.yaml:5: ") and "unknown type 'Tensr'" in msg


def test_bad_default(tmp_path):
    body = GOOD_OP.replace("Tensor other)", "Tensor other, int k=1.5)")
    msg = error_of(tmp_path, body)
    assert msg.startswith("ops.yaml:5: ") and "bad default 1.5" in msg


def test_none_default_needs_optional(tmp_path):
    msg = error_of(tmp_path, GOOD_OP.replace("Tensor other)", "Tensor other, int k=None)"))
    assert msg.startswith("ops.yaml:5: ") and "optional" in msg


def test_unknown_name_in_scalar_expression(tmp_path):
    msg = error_of(tmp_path, GOOD_OP.replace("scalar: self * other", "scalar: self * othr"))
    assert msg.startswith("ops.yaml:9: ") and "unknown name 'othr'" in msg


def test_unknown_function_in_scalar_expression(tmp_path):
    msg = error_of(tmp_path, GOOD_OP.replace("scalar: self * other", "scalar: frobnicate(self)"))
    assert msg.startswith("ops.yaml:9: ") and "unknown function 'frobnicate'" in msg


def test_syntax_error_in_expression(tmp_path):
    msg = error_of(tmp_path, GOOD_OP.replace("scalar: self * other", "scalar: self * (other"))
    assert msg.startswith("ops.yaml:9: ") and "syntax error" in msg


def test_duplicate_op(tmp_path):
    msg = error_of(tmp_path, GOOD_OP + GOOD_OP)
    assert msg.startswith("ops.yaml:11: ") and "duplicate op 'mul'" in msg and "line 5" in msg


def test_unknown_dtype_set(tmp_path):
    msg = error_of(tmp_path, GOOD_OP.replace("dtypes: all", "dtypes: reals"))
    assert msg.startswith("ops.yaml:8: ") and "unknown dtype set 'reals'" in msg


def test_unknown_dtype_in_list(tmp_path):
    msg = error_of(tmp_path, GOOD_OP.replace("dtypes: all", "dtypes: [float32, float128]"))
    assert msg.startswith("ops.yaml:8: ") and "unknown dtype 'float128'" in msg


def test_unknown_key(tmp_path):
    msg = error_of(tmp_path, GOOD_OP + "  flavour: sweet\n")
    assert msg.startswith("ops.yaml:11: ") and "unknown key 'flavour'" in msg


def test_allow_internal_overlap_only_on_inplace_ops(tmp_path):
    msg = error_of(tmp_path, GOOD_OP + "  allow_internal_overlap: true\n")
    assert msg.startswith("ops.yaml:11: ") and "allow_internal_overlap is true or false, on an in-place op" in msg
    fill = GOOD_OP.replace("mul(Tensor self, Tensor other)", "mul_(Tensor self, Tensor other)")
    msg = error_of(tmp_path, fill + "  allow_internal_overlap: sometimes\n")
    assert msg.startswith("ops.yaml:11: ")
    assert load(tmp_path, fill + "  allow_internal_overlap: true\n").ops[0].allow_internal_overlap


FILL_OP = """\
- func: fill_(Tensor self, Scalar value) -> Tensor
  kind: kernel
  kernels: {cpu: fill_cpu}
  dtypes: all
  doc: Fills.
"""


def test_numbers_name_tensor_arguments(tmp_path):
    assert load(tmp_path, GOOD_OP + "  numbers: [self, other]\n").ops[0].numbers == ["self", "other"]
    for bad in ("[othr]", "other", "[value]"):
        body = GOOD_OP + f"  numbers: {bad}\n" if bad != "[value]" else FILL_OP + "  numbers: [value]\n"
        msg = error_of(tmp_path, body)
        assert ": numbers lists Tensor arguments" in msg
    msg = error_of(tmp_path, GOOD_OP + "  fit_numbers: true\n")
    assert msg.startswith("ops.yaml:11: ") and "fit_numbers is true or false, on a pointwise op with numbers" in msg
    assert load(tmp_path, GOOD_OP + "  numbers: [other]\n  fit_numbers: true\n").ops[0].fit_numbers


def test_fits_self_names_a_scalar_argument(tmp_path):
    assert load(tmp_path, FILL_OP + "  fits_self: value\n").ops[0].fits_self == "value"
    msg = error_of(tmp_path, FILL_OP + "  fits_self: self\n")
    assert msg.startswith("ops.yaml:10: ") and "fits_self names a Scalar argument of an op with `self`" in msg


def test_same_dtype_maps_tensor_arguments_to_a_rule(tmp_path):
    assert load(tmp_path, GOOD_OP + "  same_dtype: {other: unless_0d}\n").ops[0].same_dtype == {"other": "unless_0d"}
    for bad in ("{other: sometimes}", "{value: always}", "[other]"):
        msg = error_of(tmp_path, GOOD_OP + f"  same_dtype: {bad}\n")
        assert msg.startswith("ops.yaml:11: ") and "same_dtype maps Tensor arguments" in msg


def test_out_overlap_on_derived_out_of_non_pointwise_ops(tmp_path):
    cat = "- func: cat(Tensor[] tensors, int dim=0) -> Tensor\n  kind: composite\n  doc: Joins.\n"
    assert load(tmp_path, cat + "  derive: [out]\n  out_overlap: any\n").ops[0].out_overlap == "any"
    for body in (cat + "  out_overlap: any\n", cat + "  derive: [out]\n  out_overlap: some\n",
                 GOOD_OP + "  out_overlap: partial\n"):
        assert "out_overlap is partial or any, on a non-pointwise op deriving out" in error_of(tmp_path, body)


def test_inplace_variants_name_forms_of_a_derived_inplace(tmp_path):
    from codegen.python import python_groups
    model = load(tmp_path, GOOD_OP + "  inplace_variants: [function, method]\n")
    forms = {(g.form, g.pyname) for g in python_groups(model, model.ops)}
    assert {("function", "mul_"), ("method", "mul_")} <= forms  # as torch.sin_ and Tensor.sin_
    plain = load(tmp_path, GOOD_OP)  # by default a method only (Tensor.add_, no torch.add_)
    assert ("function", "mul_") not in {(g.form, g.pyname) for g in python_groups(plain, plain.ops)}
    for body in (GOOD_OP + "  inplace_variants: [function, method]\n  derive: [out]\n",
                 GOOD_OP + "  variants: [method]\n  inplace_variants: [function]\n",
                 GOOD_OP + "  inplace_variants: []\n"):
        msg = error_of(tmp_path, body)
        assert msg.startswith("ops.yaml:") and "inplace_variants lists variants of the op" in msg, msg


def test_extra_math_is_included_only_by_the_functors_calling_it(tmp_path):
    r = subprocess.run([sys.executable, "-m", "codegen", "--ops", "ops.yaml", "--derivatives", "derivatives.yaml",
                        "--out", str(tmp_path / "gen")], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    functors = tmp_path / "gen" / "ember" / "functors"
    assert '#include "ember/math_extra.h"' in (functors / "gcd.h").read_text()
    assert '#include "ember/math_extra.h"' not in (functors / "add.h").read_text()


def test_fill_checks_its_value_before_dispatch(tmp_path):
    # fits_self: the overflow check runs in the op entry, so CUDA's kernel is covered as the CPU one.
    r = subprocess.run([sys.executable, "-m", "codegen", "--ops", "ops.yaml", "--derivatives", "derivatives.yaml",
                        "--out", str(tmp_path / "gen")], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    entries = "".join(p.read_text() for p in sorted((tmp_path / "gen").glob("ops_*.cpp")))
    body = entries[entries.index("Tensor fill__untraced(const Tensor& self, const Scalar& value) {"):]  # the entry's body
    body = body[:body.index("\n}\n")]
    assert body.index("check_scalar_fits(value, self.dtype());") < body.index("kernel_for(dispatch::fill_")


def test_pointwise_without_scalar(tmp_path):
    msg = error_of(tmp_path, GOOD_OP.replace("  scalar: self * other\n", ""))
    assert msg.startswith("ops.yaml:5: ") and "needs `scalar:`" in msg


def test_derivative_of_unknown_op(tmp_path):
    msg = error_of(tmp_path, GOOD_OP, "- op: mull\n  self: grad\n")
    assert msg.startswith("derivatives.yaml:1: ") and "unknown op 'mull'" in msg


def test_derivative_of_unknown_argument(tmp_path):
    msg = error_of(tmp_path, GOOD_OP, "- op: mul\n  self: grad * other\n  othr: grad\n")
    assert msg.startswith("derivatives.yaml:3: ") and "has no argument 'othr'" in msg


def test_unknown_name_in_formula(tmp_path):
    msg = error_of(tmp_path, GOOD_OP, "- op: mul\n  self: grad * othr\n")
    assert msg.startswith("derivatives.yaml:2: ") and "unknown name 'othr'" in msg


def test_unknown_function_in_formula(tmp_path):
    msg = error_of(tmp_path, GOOD_OP, "- op: mul\n  self: frobnicate(grad)\n")
    assert msg.startswith("derivatives.yaml:2: ") and "unknown function 'frobnicate'" in msg


def test_duplicate_derivative(tmp_path):
    msg = error_of(tmp_path, GOOD_OP, "- op: mul\n  self: grad\n- op: mul\n  self: grad\n")
    assert msg.startswith("derivatives.yaml:3: ") and "duplicate derivative" in msg


def test_cli_reports_error_and_fails(tmp_path):
    (tmp_path / "ops.yaml").write_text(HEADER + GOOD_OP.replace("dtypes: all", "dtypes: reals"))
    (tmp_path / "derivatives.yaml").write_text("")
    r = subprocess.run([sys.executable, "-m", "codegen", "--ops", str(tmp_path / "ops.yaml"), "--derivatives",
                        str(tmp_path / "derivatives.yaml"), "--out", str(tmp_path / "gen")],
                       cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 1
    assert "ops.yaml:8: " in r.stderr and "unknown dtype set 'reals'" in r.stderr


def test_repository_specs_generate(tmp_path):
    r = subprocess.run([sys.executable, "-m", "codegen", "--ops", "ops.yaml", "--derivatives", "derivatives.yaml",
                        "--out", str(tmp_path / "gen")], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    gen = tmp_path / "gen"
    assert (gen / "ember" / "ops.h").exists() and (gen / "_C" / "__init__.pyi").exists()
    assert {p.name for p in (gen / "_C").iterdir()} == {"__init__.pyi", "_VariableFunctions.pyi", "_linalg.pyi", "_nn.pyi"}
    # One header per op name, one kernel file per op with generated kernels.
    header = (gen / "ember" / "ops" / "max.h").read_text()
    assert "Tensor max(const Tensor& self);" in header and "max_dim_cpu" in header and "Tensor add(" not in header
    assert (gen / "kernels" / "mul.cpp").exists() and (gen / "ember" / "functors" / "mul.h").exists()
    assert not (gen / "kernels" / "mm.cpp").exists()  # a hand-written kernel
    # Generated files include only the op headers they name.
    mul_kernels = (gen / "kernels" / "mul.cpp").read_text()
    assert '#include "ember/ops.h"' not in mul_kernels


def test_hand_written_files_include_the_ops_they_name():
    # Each file includes ember/ops/<name>.h for exactly the ops it names (python -m codegen.includes fixes it),
    # never the umbrella ember/ops.h: adding an op must not recompile them.
    files = subprocess.run(["git", "ls-files", "aten", "python/src"], cwd=ROOT, capture_output=True,
                           text=True).stdout.split()
    cpp = [f for f in files if f.endswith((".cpp", ".h", ".cu", ".cuh"))]
    assert not [f for f in cpp if '#include "ember/ops.h"' in (ROOT / f).read_text()]
    r = subprocess.run([sys.executable, "-m", "codegen.includes", "--check", *cpp], cwd=ROOT,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


POW_OP = """\
- func: pow.Tensor_Scalar(Tensor self, Scalar exponent) -> Tensor
  kind: pointwise
  promote: common
  dtypes: all
  scalar: pow(self, exponent)
  doc: Powers.
"""


def test_special_cases_load_in_order(tmp_path):
    body = POW_OP + ("  special:\n    - {when: exponent == 2, scalar: self * self, dtypes: floating}\n"
                     "    - {when: exponent == 0.5, scalar: sqrt(self)}\n")
    (op,) = load(tmp_path, body).ops
    assert [s.scalar_text for s in op.special] == ["self * self", "sqrt(self)"]
    assert op.special[0].dtypes == ["float32", "float64"] and op.special[1].dtypes == op.dtypes


def test_special_when_reads_only_scalar_arguments(tmp_path):
    msg = error_of(tmp_path, POW_OP + "  special:\n    - {when: self == 2, scalar: self * self}\n")
    assert msg.startswith("ops.yaml:12: ") and "special.when (over Scalar arguments only)" in msg
    assert "unknown name 'self'" in msg


def test_special_bad_body_and_keys(tmp_path):
    msg = error_of(tmp_path, POW_OP + "  special:\n    - {when: exponent == 2, scalar: self * other}\n")
    assert msg.startswith("ops.yaml:12: ") and "special.scalar: unknown name 'other'" in msg
    msg = error_of(tmp_path, POW_OP + "  special:\n    - {when: exponent == 2}\n")
    assert "each special case is {when, scalar, dtypes}" in msg


def test_special_dtypes_within_the_ops(tmp_path):
    body = POW_OP.replace("dtypes: all", "dtypes: floating")
    msg = error_of(tmp_path, body + "  special:\n    - {when: exponent == 2, scalar: self * self, dtypes: [int64]}\n")
    assert msg.startswith("ops.yaml:12: ") and "special.dtypes ['int64'] are not among the op's dtypes" in msg


def test_special_only_on_pointwise_ops(tmp_path):
    body = ("- func: f(Tensor self, Scalar k) -> Tensor\n  kind: composite\n  doc: F.\n"
            "  special:\n    - {when: k == 2, scalar: self}\n")
    msg = error_of(tmp_path, body)
    assert msg.startswith("ops.yaml:8: ") and "only pointwise ops take `special:`" in msg


COMPOSITE_OP = "- func: f(Tensor self) -> Tensor\n  kind: composite\n  doc: F.\n"


def test_test_dtypes_resolve_against_the_dtype_sets(tmp_path):
    (op,) = load(tmp_path, COMPOSITE_OP + "  test: {samples: unary, dtypes: \"floating + [int64]\", ref: a}\n").ops
    assert op.test_dtypes == ["int64", "float32", "float64"] and op.test["samples"] == "unary"
    (op,) = load(tmp_path, COMPOSITE_OP).ops
    assert op.test == {} and op.test_dtypes == []
    msg = error_of(tmp_path, COMPOSITE_OP + "  test:\n    samples: unary\n    dtypes: floatin\n")
    assert msg.startswith("ops.yaml:10: ") and "unknown dtype set 'floatin'" in msg


def test_test_block_is_a_mapping(tmp_path):
    msg = error_of(tmp_path, COMPOSITE_OP + "  test: unary\n")
    assert msg.startswith("ops.yaml:8: ") and "f: test is a mapping" in msg


NORM_OP = """\
- func: linalg_vector_norm(Tensor self, Scalar ord=2) -> Tensor
  kind: composite
  variants: [function]
  python_module: linalg
  doc: Norm.
"""


def test_python_module_places_the_function_without_its_prefix(tmp_path):
    from codegen.python import python_groups
    other = NORM_OP.replace("linalg_vector_norm(", "matrix_rank(").replace("Scalar ord=2", "float tol=0.5")
    model = load(tmp_path, NORM_OP + other + GOOD_OP)
    placed = {g.pyname: (g.module, g.public_name) for g in python_groups(model, model.ops) if g.form == "function"}
    # A name without the module's prefix keeps it; an op without the key stays in ember itself.
    assert placed == {"linalg_vector_norm": ("linalg", "vector_norm"), "matrix_rank": ("linalg", "matrix_rank"),
                      "mul": ("", "mul")}


def test_python_module_generates_the_namespace_table(tmp_path):
    (tmp_path / "ops.yaml").write_text(HEADER + NORM_OP + GOOD_OP)
    (tmp_path / "derivatives.yaml").write_text("")
    p = subprocess.run([sys.executable, "-m", "codegen", "--ops", str(tmp_path / "ops.yaml"), "--derivatives",
                        str(tmp_path / "derivatives.yaml"), "--out", str(tmp_path / "gen"), "--shards", "1"],
                       cwd=ROOT, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    bindings = (tmp_path / "gen" / "python_ops_0.cpp").read_text()
    assert 'functions.push_back({"linalg", "vector_norm", {"linalg_vector_norm",' in bindings
    assert 'functions.push_back({"", "mul", {"mul",' in bindings
    assert "`ember.linalg.vector_norm`" in (tmp_path / "gen" / "ops.md").read_text()


def test_unknown_python_module(tmp_path):
    msg = error_of(tmp_path, NORM_OP.replace("python_module: linalg", "python_module: lianlg"))
    assert msg.startswith("ops.yaml:8: ") and "linalg_vector_norm: unknown python_module 'lianlg'" in msg
    assert "known: linalg" in msg


def test_python_module_needs_a_function_form(tmp_path):
    msg = error_of(tmp_path, NORM_OP.replace("[function]", "[method]"))
    assert msg.startswith("ops.yaml:8: ") and "linalg_vector_norm: python_module places the function form" in msg


def test_python_module_is_shared_by_overloads(tmp_path):
    overload = NORM_OP.replace("linalg_vector_norm(", "linalg_vector_norm.str(").replace("Scalar ord=2", "str ord")
    msg = error_of(tmp_path, NORM_OP + overload.replace("  python_module: linalg\n", ""))
    assert msg.startswith("ops.yaml:10: ") and "linalg_vector_norm.str: python_module 'ember' differs" in msg


SUM_OP = """\
- func: sum(Tensor self, int[1]? dim=None, bool keepdim=False) -> Tensor
  kind: kernel
  kernels: {cpu: sum_cpu}
  dtypes: floating
  doc: Sums.
"""
MSE_OP = """\
- func: mse_loss(Tensor self, Tensor target) -> Tensor
  kind: composite
  doc: Squared error.
"""


def test_name_if_given_maps_optional_arguments_to_node_names(tmp_path):
    good = "- op: sum\n  name_if_given: {dim: SumBackward1}\n  self: grad\n  no_forward: test\n"
    assert load(tmp_path, SUM_OP, good).ops[0].derivative.name_if_given == {"dim": "SumBackward1"}
    for bad in ("{keepdim: SumBackward1}", "{dim: sum_backward}", "SumBackward1"):
        msg = error_of(tmp_path, SUM_OP, f"- op: sum\n  name_if_given: {bad}\n  self: grad\n  no_forward: test\n")
        assert msg.startswith("derivatives.yaml:2: ") and "name_if_given maps optional arguments to node names" in msg


def test_node_name_on_composite_ops_only(tmp_path):
    assert load(tmp_path, MSE_OP + "  node_name: MseLossBackward0\n").ops[0].node_name == "MseLossBackward0"
    for body in (GOOD_OP + "  node_name: MulBackward0\n", MSE_OP + "  node_name: mse\n"):
        msg = error_of(tmp_path, body)
        assert "node_name is a node class name, on a composite op" in msg


def test_plain_tuple_on_ops_with_several_returns(tmp_path):
    body = """\
- func: std_mean(Tensor self) -> (Tensor std, Tensor mean)
  kind: composite
  doc: Both.
"""
    assert load(tmp_path, body + "  plain_tuple: true\n").ops[0].plain_tuple
    for bad in (body + "  plain_tuple: 1\n", MSE_OP + "  plain_tuple: true\n"):
        assert "plain_tuple is true or false, on an op with several returns" in error_of(tmp_path, bad)
