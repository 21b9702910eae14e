"""Every operator in ops.yaml, tested from its `test:` entry.

For each op and declared dtype: the forward result (values, dtype, shape) against
the NumPy `ref`, in every call form (function, method); the derived in-place and
out= variants; a float64 gradcheck for differentiable ops; and a clean error for
a dtype the op does not declare. See tests/harness/ for how each part works.

    python -m pytest tests/test_ops.py -q                 # everything
    python -m pytest tests/test_ops.py -q -k "add-"       # one op

The harness never imports torch. To check the harness itself against PyTorch, put
on PYTHONPATH a throwaway package `ember` that re-exports torch (plus the few
ember-only names: _div_trunc, slice, ...) and sets `_is_torch_shim = True`.
"""
import numpy as np
import pytest

import ember
from harness.collect import collect, rng_for
from harness.dtypes import TensorInfo, result_type
from harness.gradcheck import gradcheck
from harness.lint import lint
from harness.run import check_forward, check_inplace, check_out, check_undeclared
from harness.spec import parse_func, resolve_dtypes, load_spec
from harness.tensors import dtype_name, make_tensor, to_numpy  # noqa: F401  (module-level helpers)

# PyTorch's own warnings for legal calls: var/std over too few elements for the
# correction (the result is nan, as NumPy's), and matmul(1-D, 2-D, out=) resizing internally.
pytestmark = [pytest.mark.filterwarnings("ignore:.*degrees of freedom:UserWarning"),
              pytest.mark.filterwarnings("ignore:An output with one or more elements was resized:UserWarning")]

SPEC = load_spec()
CASES = collect(SPEC)

# A test-only stand-in that runs this suite against PyTorch sets this marker. PyTorch
# accepts more dtypes than ember declares, so only there is an accepted undeclared
# dtype a skip rather than a failure; real ember never has the marker.
IS_TORCH_SHIM = bool(getattr(ember, "_is_torch_shim", False))


def cases(items):
    return pytest.mark.parametrize("case", items, ids=[c.id for c in items])


@cases(CASES.forward)
def test_forward(case):
    check_forward(case.op, case.sample, case.ref)


@cases(CASES.inplace)
def test_inplace(case):
    check_inplace(case.op, case.sample, case.ref)


@cases(CASES.out)
def test_out(case):
    check_out(case.op, case.sample, case.ref)


@cases(CASES.grad)
def test_gradcheck(case):
    gradcheck(case.op, case.sample, rng_for("grad|" + case.id))


@cases(CASES.undeclared)
def test_undeclared_dtype(case):
    skip = check_undeclared(case.op, case.sample, case.dtype, case.compute, IS_TORCH_SHIM)
    if skip:
        pytest.skip(skip)


@cases(CASES.skipped)
def test_skipped_op(case):
    pytest.skip(f"{case.id}: {case.reason}")


def test_spec_entries_are_runnable():
    problems = lint(SPEC)
    assert not problems, "\n".join(problems)


# PyTorch's promotion with Python numbers and 0-d tensors, end to end through ember.
WRAPPED = [
    ("int32*2.5", "int32", (), 2.5, "float32"),
    ("float16*2.0", "float16", (), 2.0, "float16"),
    ("bool*1", "bool", (), 1, "int64"),
    ("uint8*2", "uint8", (), 2, "uint8"),
    ("int32*0d-int64", "int32", "int64", None, "int32"),
    ("float16*0d-float64", "float16", "float64", None, "float16"),
    ("int8*0d-float64", "int8", "float64", None, "float64"),
    ("uint8*int8", "uint8", ("int8", 1), None, "int16"),
    ("float16*bfloat16", "float16", ("bfloat16", 1), None, "float32"),
]


@pytest.mark.parametrize("name,dtype,other,number,expected", WRAPPED, ids=[w[0] for w in WRAPPED])
def test_wrapped_number_promotion(name, dtype, other, number, expected):
    a = make_tensor(np.ones((2, 3)), dtype)
    if number is not None:
        b, info = number, number
    else:
        other_dtype, ndim = other if isinstance(other, tuple) else (other, 0)
        b = make_tensor(np.ones((3,) * ndim), other_dtype)
        info = TensorInfo(other_dtype, ndim)
    assert result_type([TensorInfo(dtype, 2), info]) == expected      # the harness's own rule
    assert dtype_name(ember.mul(a, b).dtype) == expected


def test_harness_reads_dtype_sets_and_signatures():
    sets = {"floating": ["float32", "float64"], "integral": ["int32"], "numeric": "floating + integral"}
    assert resolve_dtypes("numeric + [bool]", sets) == ["float32", "float64", "int32", "bool"]
    name, overload, params, returns = parse_func(
        "max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)")
    assert (name, overload, [p.name for p in params]) == ("max", "dim", ["self", "dim", "keepdim"])
    assert params[2].default is False and returns == [("Tensor", "values"), ("Tensor", "indices")]
    *_, params, _ = parse_func("var(Tensor self, int[1]? dim=None, *, Scalar? correction=None) -> Tensor")
    assert params[1].optional and params[1].takes_list and params[2].kw_only and params[2].is_scalar
