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
from harness.gradcheck import gradcheck, gradgradcheck
from harness.lint import lint
from harness.run import check_forward, check_inplace, check_out, check_undeclared
from harness.spec import DEFAULT_TEST_DTYPES, load_spec, returns_several, role_of, run_dtypes, tensor_args
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


@cases(CASES.gradgrad)
def test_gradgradcheck(case):
    gradgradcheck(case.op, case.sample, rng_for("gradgrad|" + case.id))


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


def test_lint_reports_unrunnable_test_entries(tmp_path):
    (tmp_path / "ops.yaml").write_text(
        "dtype_sets: {floating: [float32, float64]}\nops:\n"
        "- {func: f(Tensor self) -> Tensor, kind: composite, doc: F.}\n"
        "- {func: g(Tensor self) -> Tensor, kind: composite, doc: G., test: {sample: unary, ref: a}}\n"
        "- {func: h(Tensor self) -> Tensor, kind: view, doc: H., test: {samples: unary, domain_a: big, ref: 'a +'}}\n")
    (tmp_path / "derivatives.yaml").write_text("[]\n")
    problems = lint(load_spec(str(tmp_path / "ops.yaml"), str(tmp_path / "derivatives.yaml")))
    assert [p.split(": ", 2)[1:] for p in problems if "ref does not parse" not in p] == [
        ["f", "no test: entry (give one, or `skip:` with a reason)"],
        ["g", "unknown test keys ['sample']"], ["g", "test: needs exactly one of samples: and cases:"],
        ["h", "unknown domain_a 'big'"]]
    unparsed = [p.split(": ")[:3] for p in problems if "ref does not parse" in p]
    assert unparsed == [["ops.yaml:5", "h", "ref does not parse"]]


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


def test_harness_reads_the_spec_through_codegen():
    """One reader of ops.yaml: the harness's ops are codegen's, and its few questions of an op
    (roles, dtypes to run, tuple results) are answered from codegen's signatures and dtype sets."""
    from codegen.model import Model
    assert isinstance(SPEC, Model) and SPEC.dtype_sets["floating"] == ["float16", "bfloat16", "float32", "float64"]
    max_dim = SPEC.by_full_name("max.dim")
    assert [r.name for r in max_dim.sig.returns] == ["values", "indices"] and returns_several(max_dim)
    assert max_dim.sig.param("keepdim").default is False and run_dtypes(max_dim) == max_dim.dtypes
    where, cat = SPEC.by_full_name("where"), SPEC.by_full_name("cat")
    assert [role_of(where, p) for p in tensor_args(where)] == ["c", "a", "b"]
    assert [role_of(cat, p) for p in tensor_args(cat)] == ["tensors"] and not returns_several(cat)
    var = SPEC.by_full_name("var")          # no `dtypes:`; `test: dtypes: floating`
    assert var.dtypes == [] and run_dtypes(var) == SPEC.dtype_sets["floating"]
    assert var.sig.param("correction").kw_only and var.sig.param("dim").type.is_list
    assert run_dtypes(SPEC.by_full_name("view")) == DEFAULT_TEST_DTYPES
    assert SPEC.by_full_name("zeros").variants == ["function"]      # a factory has no method form


# ----------------------------------------------------------------------------- PyTorch's values at the edges

try:
    import torch
except ImportError:                      # the suite runs without torch; its comparisons skip
    torch = None

SPECIAL = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.0, -3.0]
FLOAT_DTYPES = ["float32", "float64", "float16", "bfloat16"]


def _same_bits(got, exp, rtol=0.0):
    """Equal values with equal signs of zero; NaN matches NaN. rtol allows finite
    non-zero results a few units of rounding (libm's pow and PyTorch's Sleef differ there)."""
    got, exp = np.asarray(got, dtype=np.float64), np.asarray(exp, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        close = np.isfinite(exp) & (exp != 0) & (np.abs(got - exp) <= rtol * np.abs(exp))
    return close | ((got == exp) & (np.signbit(got) == np.signbit(exp))) | (np.isnan(got) & np.isnan(exp))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_sign_of_nan_and_zero_is_zero(dtype):
    t = make_tensor(np.array([np.nan, -np.nan, -0.0, 0.0, np.inf, -np.inf, -2.5]), dtype)
    got = to_numpy(ember.sign(t))
    assert _same_bits(got, [0.0, 0.0, 0.0, 0.0, 1.0, -1.0, -1.0]).all(), got


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_pow_number_exponent_special_values(dtype):
    """A Python-number exponent of 0.5 / -0.5 is sqrt / 1/sqrt, as PyTorch computes it
    (but for float16, where PyTorch's CPU kernel uses std::pow); a tensor exponent is
    std::pow (PyTorch's own two behaviours)."""
    x = make_tensor(np.array([-np.inf, -0.0, 4.0]), dtype)
    sqrt_like = dtype != "float16"
    root = [np.nan, -0.0, 2.0] if sqrt_like else [np.inf, 0.0, 2.0]
    assert _same_bits(to_numpy(x ** 0.5), root).all()
    assert _same_bits(to_numpy(ember.pow(x, -0.5)), [np.nan, -np.inf, 0.5] if sqrt_like else [0.0, np.inf, 0.5]).all()
    assert _same_bits(to_numpy(x.pow(2)), [np.inf, 0.0, 16.0]).all()
    y = x.clone()
    y.pow_(0.5)
    assert _same_bits(to_numpy(y), root).all()
    half = make_tensor(np.array(0.5), dtype)
    assert _same_bits(to_numpy(ember.pow(x, half)), [np.inf, 0.0, 2.0]).all()


@pytest.mark.skipif(torch is None, reason="compares with PyTorch")
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_pow_special_grid_matches_pytorch(dtype):
    base, expo = np.meshgrid(SPECIAL, SPECIAL, indexing="ij")
    tdt = getattr(torch, dtype)
    b, e = make_tensor(base.ravel(), dtype), make_tensor(expo.ravel(), dtype)
    tb, te = torch.tensor(base.ravel()).to(tdt), torch.tensor(expo.ravel()).to(tdt)
    ulps = 4 * {"float16": 2.0 ** -11, "bfloat16": 2.0 ** -8, "float32": 2.0 ** -24, "float64": 2.0 ** -53}[dtype]
    got, exp = to_numpy(ember.pow(b, e)), torch.pow(tb, te).double().numpy()
    bad = ~_same_bits(got, exp, ulps)
    assert not bad.any(), f"pow on {dtype}: at {list(zip(base.ravel()[bad], expo.ravel()[bad]))}: {got[bad]} vs {exp[bad]}"
    for s in SPECIAL:
        got, exp = to_numpy(ember.pow(b, s)), torch.pow(tb, s).double().numpy()
        bad = ~_same_bits(got, exp, ulps)
        assert not bad.any(), f"pow(x, {s}) on {dtype}: x={base.ravel()[bad]}, got {got[bad]}, torch {exp[bad]}"
        got, exp = to_numpy(ember.pow(s, b)), torch.pow(s, tb).double().numpy()
        bad = ~_same_bits(got, exp, ulps)
        assert not bad.any(), f"{s} ** x on {dtype}: x={base.ravel()[bad]}, got {got[bad]}, torch {exp[bad]}"


def test_pow_number_base():
    """ember.pow(2, t) and 2 ** t: the number promotes as a wrapped number, as in PyTorch."""
    t = ember.tensor([0, 1, 3])
    assert ember.pow(2, t).tolist() == [1, 2, 8] and dtype_name(ember.pow(2, t).dtype) == "int64"
    assert (2 ** t).tolist() == [1, 2, 8]
    r = ember.pow(2.0, ember.tensor([1, 2], dtype=ember.int8))
    assert dtype_name(r.dtype) == "float32" and r.tolist() == [2.0, 4.0]
    h = ember.pow(0.5, ember.tensor([1.0, -1.0], dtype=ember.float16))
    assert dtype_name(h.dtype) == "float16" and to_numpy(h).tolist() == [0.5, 2.0]


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int16", "int32", "int64"])
def test_integer_pow_negative_exponents(dtype):
    """A negative number exponent raises; a tensor of negative exponents computes (1, -1 or 0), as PyTorch."""
    signed = dtype != "uint8"
    a = make_tensor(np.array([2, 1, 3, 0] + ([-1] if signed else [])), dtype)
    with pytest.raises(RuntimeError, match="Integers to negative integer powers are not allowed"):
        a ** -1
    with pytest.raises(RuntimeError, match="Integers to negative integer powers are not allowed"):
        a.pow(-2)
    if signed:
        e = make_tensor(np.array([-1, -1, -2, -3, -3]), dtype)
        assert ember.pow(a, e).tolist() == [0, 1, 0, 0, -1]
        assert ember.pow(a, make_tensor(np.array(-1), dtype)).tolist() == [0, 1, 0, 0, -1]
    assert (a ** 2).tolist() == [4, 1, 9, 0] + ([1] if signed else [])
    assert dtype_name((a ** 0.5).dtype) == "float32"


OVERFLOW = [("int8", 1000), ("int8", -129), ("int8", 300.0), ("int8", float("nan")), ("uint8", 256),
            ("uint8", -256), ("int16", 40000), ("int32", 2 ** 31), ("int64", 2.0 ** 63), ("float16", 1e6),
            ("float32", 1e39)]
FITS = [("int8", 127, 127), ("int8", 1.5, 1), ("uint8", -1, 255), ("bool", 5, True), ("float16", np.inf, np.inf),
        ("bfloat16", 1e39, np.inf), ("int64", -2 ** 63, -2 ** 63)]


@pytest.mark.parametrize("dtype,value", OVERFLOW, ids=[f"{d}-{v}" for d, v in OVERFLOW])
def test_fill_full_setitem_overflow_raises(dtype, value):
    name = {"int8": "int8_t", "uint8": "uint8_t", "int16": "int16_t", "int32": "int", "int64": "int64_t",
            "float16": "c10::Half", "float32": "float"}[dtype]
    message = f"value cannot be converted to type {name} without overflow"
    t = ember.zeros(3, dtype=getattr(ember, dtype))
    with pytest.raises(RuntimeError, match=message):
        t.fill_(value)
    with pytest.raises(RuntimeError, match=message):
        ember.full((2,), value, dtype=getattr(ember, dtype))
    for index in (1, slice(0, 2), ember.tensor([0, 2]), t == 0):
        with pytest.raises(RuntimeError, match=message):
            t[index] = value
    assert to_numpy(t).tolist() == [0, 0, 0]


@pytest.mark.parametrize("dtype,value,expected", FITS, ids=[f"{d}-{v}" for d, v, _ in FITS])
def test_fill_in_range_values(dtype, value, expected):
    t = ember.zeros(2, dtype=getattr(ember, dtype)).fill_(value)
    assert to_numpy(t).tolist() == [expected, expected]


def test_scalar_arguments_overflow_like_pytorch():
    """Scalar arguments are converted with the check (alpha, clamp's bounds, pow's exponent);
    a Python-number operand is a wrapped number and wraps around, as in PyTorch."""
    t = ember.zeros(2, dtype=ember.int8)
    for call in (lambda: t.add(1, alpha=1000), lambda: t.clamp(min=1000), lambda: t.clamp(max=-1000),
                 lambda: t.pow(1000), lambda: ember.zeros(2, dtype=ember.float16).clamp(min=1e6)):
        with pytest.raises(RuntimeError, match="without overflow"):
            call()
    assert (t + 1000).tolist() == [-24, -24]
    assert t.clone().add_(1000).tolist() == [-24, -24]
    assert (t * 1000).tolist() == [0, 0]
    assert (ember.zeros(2, dtype=ember.uint8) - 1).tolist() == [255, 255]


def test_where_python_number_must_fit_like_pytorch():
    """where's number operand is converted to the result dtype with the overflow check
    (PyTorch's where.ScalarOther/ScalarSelf); float16/bfloat16 take it as inf, as there."""
    c = ember.tensor([True, False, True])
    t8 = ember.tensor([1, -2, 3], dtype=ember.int8)
    for call in (lambda: ember.where(c, t8, 1000), lambda: ember.where(c, 1000, t8), lambda: t8.where(c, -129),
                 lambda: ember.where(c, t8.to(ember.uint8), -256), lambda: ember.where(c, t8.float(), 1e39)):
        with pytest.raises(RuntimeError, match="value cannot be converted to type .* without overflow"):
            call()
    r = ember.where(c, t8, 1.5)
    assert dtype_name(r.dtype) == "float32" and r.tolist() == [1.0, 1.5, 3.0]
    assert ember.where(c, t8, 127).tolist() == [1, 127, 3]
    assert ember.where(c, t8.to(ember.uint8), -1).tolist() == [1, 255, 3]
    assert ember.where(c, t8.half(), 1e6).tolist() == [1.0, np.inf, 3.0]
    assert ember.where(c, t8, ember.tensor(1000)).tolist() == [1, -24, 3]  # a tensor is cast, unchecked
    assert ember.where(c, 1000, 2000).tolist() == [1000, 2000, 1000]


REDUCE_DTYPE_CASES = [
    ("sum-int8", lambda L: L.tensor([100, 100, 100], dtype=L.int8).sum(dtype=L.int8), 44),
    ("prod-int8", lambda L: L.tensor([100, 100, 100], dtype=L.int8).prod(dtype=L.int8), 64),
    ("sum-float-to-int8", lambda L: L.tensor([100.7, 100.2, -50.9]).sum(dtype=L.int8), -106),
    ("sum-dim-int16", lambda L: L.tensor([[30000, 30000]], dtype=L.int16).sum(1, dtype=L.int16), [-5536]),
    ("prod-dim-uint8", lambda L: L.tensor([100.7, 100.2, -50.9]).prod(0, dtype=L.uint8), 224),
    ("sum-int32", lambda L: L.tensor([2 ** 30, 2 ** 30], dtype=L.int64).sum(dtype=L.int32), -2 ** 31),
    ("sum-bool", lambda L: L.tensor([0, 2, 0]).sum(dtype=L.bool), True),
    ("prod-bool", lambda L: L.tensor([2, 2, 0]).prod(dtype=L.bool), False),
    ("prod-bfloat16-converts-first", lambda L: L.tensor([100.7, 100.2, -50.9]).prod(0, dtype=L.bfloat16), -512000.0),
]


@pytest.mark.parametrize("fn,want", [c[1:] for c in REDUCE_DTYPE_CASES], ids=[c[0] for c in REDUCE_DTYPE_CASES])
def test_sum_prod_with_a_dtype_convert_first_and_wrap_like_pytorch(fn, want):
    """sum/prod(dtype=D) reduce self.to(D) in D (integers wrap), as PyTorch, for every dtype."""
    got = fn(ember)
    assert got.tolist() == want
    try:
        import torch
    except ImportError:
        return
    assert fn(torch).tolist() == want


def test_floor_divide_has_no_derivative_but_div_floor_does():
    """PyTorch: backward through floor_divide (and //, floor_divide_) raises; div with
    rounding_mode='floor' or 'trunc' gives zero gradients."""
    x = ember.tensor([1.5, -2.5], requires_grad=True)
    y = ember.tensor([2.0, 3.0], requires_grad=True)
    for f in (lambda: ember.floor_divide(x, y), lambda: x // y, lambda: x // 2):
        with pytest.raises(RuntimeError, match="^derivative for aten::floor_divide is not implemented$"):
            f().sum().backward()
    with pytest.raises(RuntimeError, match="floor_divide"):
        x.clone().floor_divide_(y).sum().backward()
    for mode in ("floor", "trunc"):
        x.grad = y.grad = None
        ember.div(x, y, rounding_mode=mode).sum().backward()
        assert x.grad.tolist() == [0.0, 0.0] and y.grad.tolist() == [0.0, 0.0]
