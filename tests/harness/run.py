"""Calling an op, computing its NumPy reference, and comparing the two."""
from dataclasses import dataclass, field

import numpy as np

import ember

from .dtypes import NUMPY_STORAGE, can_cast, compute_numpy_dtype, is_floating, round_to
from .refs import eval_ref
from .rules import bound_extras, compute_dtype, result_dtypes
from . import tensors
from .samples import Arg
from .spec import extra_args, returns_several, role_of, tensor_args
from .tensors import build_inputs, dtype_name, exact_values, make_tensor, to_numpy

# (rtol, atol) by the dtype compared. Half types are compared in float32 against a
# reference computed in float32 from the same (rounded) inputs.
TOLERANCES = {
    "float16": (2e-3, 2e-3),
    "bfloat16": (2e-2, 2e-2),
    "float32": (1.3e-6, 1e-5),
    "float64": (1e-7, 1e-7),
}

# What an op may raise for a call PyTorch rejects (NotImplementedError is a RuntimeError).
CALL_ERRORS = (RuntimeError, IndexError, ValueError)


@dataclass
class Ref:
    compute: str = None                           # the dtype the op computes in
    outputs: list = field(default_factory=list)   # NumPy arrays, one per result
    dtypes: list = field(default_factory=list)    # expected result dtypes, one per result
    seq: bool = False                             # results come as a tuple/list
    error: Exception = None                       # NumPy rejected the input: ember must raise too
    bug: Exception = None                         # the `ref:` expression itself failed


def tolerance(op, dtype):
    rtol, atol = TOLERANCES[dtype]
    tol = (op.test or {}).get("tol") or {}
    if dtype in tol:
        tol = tol[dtype]
    if "rtol" in tol or "atol" in tol:
        rtol2, atol2 = float(tol.get("rtol", rtol)), float(tol.get("atol", atol))
        # an override never tightens the half types below their loose default
        rtol, atol = (max(rtol, rtol2), max(atol, atol2)) if dtype in ("float16", "bfloat16") else (rtol2, atol2)
    return rtol, atol


# ----------------------------------------------------------------------------- calling

def ordered_tensors(op, inputs):
    # A keyword-only optional tensor (cov's fweights) keeps its default None: samples pass tensors by position.
    return [inputs[role_of(op, p)] for p in tensor_args(op) if not (p.kw_only and p.type.optional)]


def _self_index(op):
    names = [p.name for p in tensor_args(op)]
    return names.index("self")


# In-place on a non-leaf copy of self (its history then runs through the copy).
NONLEAF_INPLACE = {"inplace-clone": lambda t: t.clone(), "inplace-times-one": lambda t: t * 1}


def _through_select(t, write):
    """Writes into base[1] of a non-leaf base holding self; returns a view of the base taken
    before the write, whose history must then be regenerated from the base's."""
    base = ember.stack([t * 2, t])
    before = base[:]
    write(base[1])
    return before


def _through_strided(t, write):
    """Writes into a non-contiguous view (every other element of the base); returns the
    written view and the untouched one beside it."""
    base = ember.stack([t, t * 2], -1)
    view = base.select(-1, 0)
    write(view)
    return ember.stack([view, base.select(-1, 1)])


# In-place on a view of a non-leaf base: (self, write) -> what the gradient is checked on.
VIEW_INPLACE = {"inplace-view-select": _through_select, "inplace-view-strided": _through_strided}


def public_function(op, suffix=""):
    """Op `op`'s function (or, with suffix "_", its in-place function) in the namespace table of its
    `python_module:` (ember.linalg.vector_norm, ember._C._nn.elu_, ember.add)."""
    from codegen.python import public_name
    return getattr(ember._C._op_modules[op.python_module], public_name(op) + suffix)


def call(op, sample, inputs, form="function", out=None):
    """Calls the op as `form`: function (ember.op), method (t.op), inplace (t.op_), out (ember.op(..., out=o)),
    one of NONLEAF_INPLACE (t.clone().op_, (t * 1).op_), or one of VIEW_INPLACE (op_ on a view of a non-leaf)."""
    tensors = ordered_tensors(op, inputs)
    args, kwargs = list(sample.args), dict(sample.kwargs)
    if form == "out":
        kwargs["out"] = out
    if form in ("function", "out"):
        return public_function(op)(*tensors, *args, **kwargs)
    inplace = form == "inplace" or form in NONLEAF_INPLACE or form in VIEW_INPLACE
    name = op.name + ("_" if inplace else "")
    receiver = tensors.pop(_self_index(op))

    def write(target):
        if op.variants == ["function"]:   # a function-only op's in-place form is a function (torch.selu_)
            return public_function(op, "_")(*tensors[:_self_index(op)], target, *tensors[_self_index(op):],
                                             *args, **kwargs)
        return getattr(target, name)(*tensors, *args, **kwargs)

    if form in VIEW_INPLACE:
        return VIEW_INPLACE[form](receiver, write)
    if form in NONLEAF_INPLACE:
        receiver = NONLEAF_INPLACE[form](receiver)
    if inplace and op.variants == ["function"]:
        return write(receiver)
    if form == "method-varargs":
        args = list(args[0])
    return getattr(receiver, name)(*tensors, *args, **kwargs)


def _takes_sizes(op):
    """A method whose one positional extra is an int[] (view, reshape, permute, expand)."""
    extras = [p for p in extra_args(op) if not p.kw_only]
    return len(extras) == 1 and str(extras[0].type) == "int[]"


def forms(op, sample=None):
    """The call forms of the functional op: function and/or method, per `variants:`; and, as
    in PyTorch, t.view(2, 3) beside t.view([2, 3]) for a method that takes one int[]."""
    out = [v for v in ("function", "method") if v in op.variants]
    if ("method" in out and sample is not None and _takes_sizes(op) and len(sample.args) == 1
            and isinstance(sample.args[0], (list, tuple))):
        out.append("method-varargs")
    return out


# ----------------------------------------------------------------------------- reference

_COMPILED = {}


def _inputs_as_arrays(op, sample, cnp, bool_as_int=False):
    arrays = {}
    for role, value in sample.inputs.items():
        def conv(arg):
            v = exact_values(arg)
            if role == "c":
                return v.astype(bool)
            if bool_as_int and v.dtype == np.bool_ and cnp == np.bool_:
                return v.astype(np.int64)
            return v.astype(cnp)
        if isinstance(value, list):
            arrays[role] = [conv(v) for v in value]
        elif isinstance(value, Arg):
            arrays[role] = conv(value)
        else:
            dt = np.int64 if (bool_as_int and cnp == np.bool_) else cnp
            arrays[role] = np.asarray(value, dtype=dt)
    return arrays


def reference(op, sample):
    ref = Ref()
    try:
        ref.compute = compute_dtype(op, sample)
        cnp = compute_numpy_dtype(ref.compute)
        names = {p.name: p.default for p in extra_args(op) if p.has_default}
        names.update(bound_extras(op, sample))
        names["args"] = list(sample.args)
        names.update(sample.names)
        expr = op.test["ref"]
        code = _COMPILED.setdefault(expr, compile(expr, f"<ref of {op.full_name}>", "eval"))
        result = None
        for bool_as_int in (False, True):
            arrays = _inputs_as_arrays(op, sample, cnp, bool_as_int)
            for p in tensor_args(op):
                arrays[p.name] = arrays.get(role_of(op, p))
            try:
                result = eval_ref(code, {**names, **arrays})
                break
            except TypeError:
                # NumPy lacks some bool loops (np.sign): retry with bools as int64;
                # the result is cast back to the expected dtype when compared.
                if bool_as_int or cnp != np.bool_:
                    raise
    except ValueError as e:
        # A reduction over an empty dim with no identity (max of nothing): ember must raise
        # too. Only for samples with an empty input; anywhere else it is a broken sample.
        if any(arg.values.size == 0 for _, arg in sample.args_of_role()):
            ref.error = e
        else:
            ref.bug = e
        return ref
    except Exception as e:               # noqa: BLE001 - reported by the test that uses it
        ref.bug = e
        return ref
    ref.seq = returns_several(op)
    if ref.seq:
        if not isinstance(result, (tuple, list)):
            ref.bug = TypeError(f"ref of {op.full_name} must give a tuple, got {type(result).__name__}")
            return ref
        ref.outputs = [np.asarray(r) for r in result]
    else:
        ref.outputs = [np.asarray(result)]
    ref.dtypes = result_dtypes(op, sample, ref.compute, ref.outputs)
    return ref


# ----------------------------------------------------------------------------- comparing

def _describe(got, exp):
    bad = ~np.isclose(got, exp, equal_nan=True) if got.dtype.kind == "f" else got != exp
    idx = np.argwhere(bad)[:5]
    lines = [f"  at {tuple(int(i) for i in ix)}: got {got[tuple(ix)]!r}, expected {exp[tuple(ix)]!r}"
             for ix in idx]
    return f"{int(np.sum(bad))} of {got.size} elements differ\n" + "\n".join(lines)


def assert_values(got, exp, dtype, op, what):
    """got: NumPy values of an ember result of `dtype`; exp: the reference values."""
    exp = np.asarray(exp)
    if is_floating(dtype):
        rtol, atol = tolerance(op, dtype)
        g, e = got.astype(np.float64), exp.astype(np.float64)
        ok = np.allclose(g, e, rtol=rtol, atol=atol, equal_nan=True)
        if not ok:
            raise AssertionError(f"{what}: values differ beyond rtol={rtol}, atol={atol}: {_describe(g, e)}")
    else:
        e = exp.astype(NUMPY_STORAGE[dtype])
        if not np.array_equal(got, e):
            raise AssertionError(f"{what}: values differ: {_describe(got, e)}")


def assert_tensor(t, exp, dtype, op, what):
    assert hasattr(t, "dtype") and hasattr(t, "shape"), f"{what}: expected a tensor, got {type(t).__name__}"
    got_dtype = dtype_name(t.dtype)
    assert got_dtype == dtype, f"{what}: dtype {got_dtype}, expected {dtype}"
    assert t.device.type == tensors.DEVICE, f"{what}: on {t.device}, expected {tensors.DEVICE}"
    assert tuple(t.shape) == tuple(exp.shape), f"{what}: shape {tuple(t.shape)}, expected {tuple(exp.shape)}"
    assert_values(to_numpy(t), exp, dtype, op, what)


def assert_result(result, ref, op, what):
    if ref.seq:
        assert isinstance(result, (tuple, list)), f"{what}: expected a tuple or list, got {type(result).__name__}"
        assert len(result) == len(ref.outputs), f"{what}: {len(result)} results, expected {len(ref.outputs)}"
        for i, (r, e, d) in enumerate(zip(result, ref.outputs, ref.dtypes)):
            assert_tensor(r, e, d, op, f"{what} result {i}")
        # plain_tuple: ops (std_mean, var_mean) return a plain tuple, as PyTorch's do.
        for i, r in enumerate(op.sig.returns if len(op.sig.returns) > 1 and not op.plain_tuple else []):
            # (Tensor values, Tensor indices): a namedtuple, as torch.max(t, 0).values
            assert getattr(result, r.name, None) is result[i], f"{what}: result has no field {r.name!r}"
    else:
        assert_tensor(result, ref.outputs[0], ref.dtypes[0], op, what)


def expect_error(fn, types, what):
    try:
        fn()
    except types as e:
        return e
    except Exception as e:           # noqa: BLE001
        raise AssertionError(f"{what}: raised {type(e).__name__} ({e}), expected one of "
                             f"{', '.join(t.__name__ for t in types)}") from e
    raise AssertionError(f"{what}: did not raise (expected one of {', '.join(t.__name__ for t in types)})")


def _check_ref(ref, op):
    if ref.bug is not None:
        raise AssertionError(f"ops.yaml ref of {op.full_name} failed: {type(ref.bug).__name__}: {ref.bug}")


# ----------------------------------------------------------------------------- the checks

def check_forward(op, sample, ref):
    """Every call form of the functional op against the reference; inputs stay untouched."""
    _check_ref(ref, op)
    for form in forms(op, sample):
        what = f"{op.full_name} ({form})"
        inputs, _ = build_inputs(sample)
        if ref.error is not None:
            expect_error(lambda: call(op, sample, inputs, form), CALL_ERRORS,
                         f"{what} where NumPy raises {type(ref.error).__name__} ({ref.error})")
            continue
        result = call(op, sample, inputs, form)
        assert_result(result, ref, op, what)
        _assert_inputs_unchanged(sample, inputs, what)


def _assert_inputs_unchanged(sample, inputs, what):
    for role, value in sample.inputs.items():
        tensors = inputs[role] if isinstance(value, list) else [inputs[role]]
        args = value if isinstance(value, list) else [value]
        for t, arg in zip(tensors, args):
            if isinstance(arg, Arg) and not np.array_equal(to_numpy(t), exact_values(arg),
                                                           equal_nan=is_floating(arg.dtype)):
                raise AssertionError(f"{what}: modified its input {role!r}")


def check_inplace(op, sample, ref):
    """x.clone().op_(...) writes the functional result into x and returns x itself;
    a result that does not fit x (broadcast to a larger shape, or a dtype x cannot hold) raises."""
    _check_ref(ref, op)
    inputs, _ = build_inputs(sample)
    x = inputs["a"].clone()
    inputs["a"] = x
    self_dtype = sample.inputs["a"].dtype
    exp, res_dtype = ref.outputs[0], ref.dtypes[0]
    what = f"{op.full_name}_ (in-place)"
    if tuple(exp.shape) != tuple(x.shape):
        expect_error(lambda: call(op, sample, inputs, "inplace"), (RuntimeError,),
                     f"{what} on shape {tuple(x.shape)} with a result of shape {exp.shape}")
        return
    if not can_cast(res_dtype, self_dtype):
        expect_error(lambda: call(op, sample, inputs, "inplace"), (RuntimeError,),
                     f"{what} on {self_dtype} with a {res_dtype} result")
        return
    r = call(op, sample, inputs, "inplace")
    assert r is x, f"{what}: returned a new object, not self"
    assert_tensor(x, _converted(exp, self_dtype), self_dtype, op, what)


def _converted(values, dtype):
    """Reference values as a tensor of `dtype` holds them (the in-place result is written into self)."""
    values = np.asarray(values)
    if is_floating(dtype):
        return round_to(values.astype(np.float64), dtype).astype(np.float64)
    return values.astype(NUMPY_STORAGE[dtype])


def check_out(op, sample, ref):
    """ember.op(..., out=o) fills a preallocated o of the result's dtype and shape, and returns o."""
    _check_ref(ref, op)
    exp, dtype = ref.outputs[0], ref.dtypes[0]
    filler = np.full(exp.shape, True if dtype == "bool" else 7)
    o = make_tensor(filler, dtype)
    inputs, _ = build_inputs(sample)
    r = call(op, sample, inputs, "out", out=o)
    what = f"{op.full_name}(out=)"
    assert r is o, f"{what}: returned a new object, not out"
    assert_tensor(o, exp, dtype, op, what)


def check_undeclared(op, sample, dtype, compute, is_shim):
    """Calling the op where it would compute in an undeclared dtype raises NotImplementedError naming
    the op, as PyTorch's dtype dispatch does (the torch stand-in may raise RuntimeError or TypeError)."""
    inputs, _ = build_inputs(sample)
    what = f"{op.full_name} on {dtype} (computes in {compute}, declared {', '.join(op.dtypes)})"
    expected = (RuntimeError, TypeError) if is_shim else NotImplementedError
    try:
        call(op, sample, inputs, forms(op)[0])
    except expected as e:
        if not is_shim:
            assert op.name in str(e), f"{what}: the error does not name the op: {e}"
        return None
    except Exception as e:            # noqa: BLE001
        raise AssertionError(f"{what}: raised {type(e).__name__} ({e}), expected NotImplementedError") from e
    if is_shim:
        return f"the torch stand-in accepts {op.full_name} on {dtype}; ember must reject it"
    raise AssertionError(f"{what}: did not raise")
