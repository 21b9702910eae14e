"""A differential sweep: every op family against a float64 NumPy reference (and
PyTorch when it is importable) over shapes around ember's own path-switch sizes
(ember._C._thresholds(): pointwise grain, reduction block and split, GEMM strip
width and parallel work), odd sizes, transposed / sliced / expanded / offset
layouts, every declared dtype, at 1, 2 and 3 threads.

CI runs a seeded subset of each family's cases; `--long` runs twelve times as many.
    python -m pytest tests/test_sweep.py -q            # bounded (CI, under a minute)
    python -m pytest tests/test_sweep.py -q --long     # the larger local run (several minutes)
A failure lists each failing case with its op, shapes, layouts, dtypes and threads.
"""
import itertools

import numpy as np
import pytest

import ember
from harness.dtypes import FLOATING, INTEGRAL, NUMPY_STORAGE, TensorInfo, is_floating, result_type, round_to
from harness.samples import PARTNER
from harness.run import public_function
from harness.spec import ALL_DTYPES, load_spec, run_dtypes
from harness.tensors import make_tensor
from harness.sweep import (EPS, GRAIN, LAYOUTS, SMALL_BATCHED, THREADS, Input, Report, Tol, accumulated_tol,
                           as_torch, build, dtype_of, evaluate, gemm_shapes, num_threads, numel_shapes, op_tol, reduction_shapes,
                           ref_array, ref_kind, ref_names, rng_for, subset, torch, values_for)

# var/std over one element, as NumPy and PyTorch, give nan with a warning.
pytestmark = pytest.mark.filterwarnings("ignore:.*degrees of freedom:UserWarning")

SPEC = load_spec()
OPS = {op.full_name: op for op in SPEC.ops}


def _ops_with(samples):
    return [op for op in SPEC.ops if (op.test or {}).get("samples") == samples and op.kind == "pointwise"]


UNARY = [op.full_name for op in _ops_with("unary")]
BINARY = [op.full_name for op in _ops_with("binary")] + ["div", "max.other", "min.other"]
# The torch function for an ember op of another name.
TORCH_NAME = {"_div_trunc": None, "_div_floor": None, "max.other": "maximum", "min.other": "minimum",
              "linalg_vector_norm": "linalg.vector_norm"}


def public_fn(module, name):
    """module.name, where name may be dotted (linalg.vector_norm); None when absent."""
    for part in name.split("."):
        module = getattr(module, part, None)
    return module


def torch_fn(op):
    name = TORCH_NAME.get(op.full_name, op.name)
    if torch is None or not name:
        return None
    if op.python_module == "nn":  # torch._C._nn.elu, or F.softsign where PyTorch composes it in Python
        return public_fn(torch._C._nn, name) or public_fn(torch.nn.functional, name)
    return public_fn(torch, name)


def call_ember(op, *args, **kwargs):
    return public_function(op)(*args, **kwargs)


def describe(*inputs, threads, extra=""):
    parts = [i.describe() if isinstance(i, Input) else repr(i) for i in inputs]
    return f"({', '.join(parts)}{', ' + extra if extra else ''}) at {threads} threads"


# ----------------------------------------------------------------------------- pointwise

def _unary_dtypes(op):
    dts = list(run_dtypes(op))
    if op.promote == "float":          # integer inputs promote to float32
        dts.append("int32")
    return dts


def _result_dtype(op, compute):
    return "bool" if op.promote == "bool" else compute


def _compute_dtype(op, operands):
    common = result_type(operands)
    if op.promote == "float" and not is_floating(common):
        return "float32"
    return common


def _torch_call(op, inputs, kwargs, number_ok=False):
    """PyTorch's result for the same inputs, or None where it has no such op (or, with
    number_ok, takes no Python number there: ember's maximum(t, 2.0) is a convenience)."""
    fn = torch_fn(op)
    if fn is None:
        return None
    args = [as_torch(i) if isinstance(i, Input) else i for i in inputs]
    try:
        return fn(*args, **kwargs)
    except TypeError:
        if number_ok:
            return None
        raise


def _pointwise_setup(family, name):
    """The op, its `test:` entry, a report, its kwargs variants and a seeded RNG."""
    op = OPS[name]
    return op, op.test, Report(f"sweep {name}"), op.test.get("kwargs") or [{}], rng_for(family, name)


@pytest.mark.parametrize("name", UNARY)
def test_pointwise_unary(name, long_mode):
    op, test, report, kwarg_sets, rng = _pointwise_setup("unary", name)
    cases = list(itertools.product(_unary_dtypes(op), numel_shapes(), LAYOUTS, THREADS, range(len(kwarg_sets))))
    for dtype, shape, layout, threads, ki in subset(cases, 36, rng, long_mode):
        kwargs = kwarg_sets[ki]
        a = Input(values_for(rng, shape, dtype, test.get("domain_a"), layout, test.get("specials", False)),
                  dtype, layout)
        scalars = [v for k, v in kwargs.items() if k in op.promote_scalars]
        compute = _compute_dtype(op, [TensorInfo(dtype, a.values.ndim)] + scalars)
        if compute not in op.dtypes:
            continue
        what = f"{name}{describe(a, threads=threads, extra=str(kwargs) if kwargs else '')}"
        try:
            with num_threads(threads):
                result = call_ember(op, build(a), **kwargs)
        except Exception as e:          # noqa: BLE001 - every failure is reported with its case
            report.error(what, e)
            continue
        exp = evaluate(test["ref"], {**ref_names(op, kwargs), "a": ref_array(a, ref_kind(compute))})
        report.check(what, result, exp, _result_dtype(op, compute), tol=op_tol(op, compute),
                     torch_result=_torch_call(op, [a], kwargs))
    report.finish()


def _binary_pairs(rng, op, dtype):
    """(a, b) inputs: same shape in any two layouts, broadcasts, a Python number (where the
    op takes one), a 0-d tensor and a mixed-dtype partner."""
    test = op.test
    da, db = test.get("domain_a"), test.get("domain_b")
    if "distinct" in (da, db):
        da, db = "distinct_a", "distinct_b"
    out = []
    for shape in numel_shapes():
        la, lb = rng.choice(LAYOUTS), rng.choice(LAYOUTS)
        out.append((Input(values_for(rng, shape, dtype, da, la), dtype, la),
                    Input(values_for(rng, shape, dtype, db, lb), dtype, lb)))
        if len(shape) == 2:
            for bshape in ((shape[1],), (shape[0], 1), (1, shape[1])):
                out.append((Input(values_for(rng, shape, dtype, da, la), dtype, la),
                            Input(values_for(rng, bshape, dtype, db), dtype)))
            partner = PARTNER[dtype]
            out.append((Input(values_for(rng, shape, dtype, da, la), dtype, la),
                        Input(values_for(rng, shape, partner, db, lb), partner, lb)))
            out.append((Input(values_for(rng, shape, dtype, da, la), dtype, la),
                        Input(values_for(rng, (), dtype, db), dtype)))
            if op.tensor_params[1].name in op.numbers:  # a Python number where the op takes one
                number = values_for(rng, (), dtype, db).item()
                out.append((Input(values_for(rng, shape, dtype, da, la), dtype, la),
                            bool(number) if dtype == "bool" else number))
    return out


def _binary_tol(name, dtype, a, b):
    """The remainder is exact but for the last rounding of r + b, so it is bounded by |b|."""
    if name == "remainder" and is_floating(dtype):
        bv = b.values if isinstance(b, Input) else np.asarray(b)
        return Tol(4 * EPS[dtype]), np.broadcast_to(np.abs(bv.astype(np.float64)), np.broadcast_shapes(
            a.values.shape, np.shape(bv)))
    return None, None


def _spec_refuses(op, a, b):
    """Whether the op's `same_dtype:` makes the pair raise, as PyTorch does (lerp's `end` of another dtype)."""
    if not op.same_dtype or not isinstance(b, Input) or b.dtype == a.dtype:
        return False
    rule = list(op.same_dtype.values())[0]
    return rule == "always" or b.values.ndim > 0


@pytest.mark.parametrize("name", BINARY)
def test_pointwise_binary(name, long_mode):
    op, test, report, kwarg_sets, rng = _pointwise_setup("binary", name)
    declared = run_dtypes(op)
    cases = []
    for dtype in declared:
        for pair in _binary_pairs(rng, op, dtype):
            for threads in THREADS:
                for ki in range(len(kwarg_sets)):
                    cases.append((dtype, pair, threads, ki))
    for dtype, (a, b), threads, ki in subset(cases, 48, rng, long_mode):
        kwargs = kwarg_sets[ki]
        operands = [TensorInfo(a.dtype, a.values.ndim),
                    TensorInfo(b.dtype, b.values.ndim) if isinstance(b, Input) else b]
        compute = _compute_dtype(op, operands)
        if compute not in declared:
            continue
        what = f"{name}{describe(a, b, threads=threads, extra=str(kwargs) if kwargs else '')}"
        try:
            torch_result, refused = _torch_call(op, [a, b], kwargs, number_ok=not isinstance(b, Input)), None
        except RuntimeError as e:       # PyTorch refuses the pair (lerp's mixed dtypes): so must ember
            torch_result, refused = None, e
        if refused is None and torch_result is None and _spec_refuses(op, a, b):
            refused = RuntimeError("the spec's same_dtype: (without torch installed)")
        try:
            with num_threads(threads):
                result = call_ember(op, build(a), build(b) if isinstance(b, Input) else b, **kwargs)
        except Exception as e:          # noqa: BLE001
            if isinstance(e, RuntimeError) and refused is not None:
                report.cases += 1       # refused as PyTorch does
            else:
                report.error(what, e)
            continue
        if refused is not None:
            report.failures.append(f"{what}: PyTorch raises ({refused}), ember returns a result")
            continue
        kind = ref_kind(compute)
        bref = ref_array(b, kind) if isinstance(b, Input) else np.asarray(b, dtype={
            "float64": np.float64, "int64": np.int64, "bool": np.bool_}[kind])
        exp = evaluate(test["ref"], {**ref_names(op, kwargs), "a": ref_array(a, kind), "b": bref})
        tol, scale = _binary_tol(name, compute, a, b)
        tol = tol or op_tol(op, compute)
        ref_dtype = _result_dtype(op, compute)
        report.check(what, result, exp, ref_dtype, tol, scale, torch_result)
    report.finish()


def test_pow_number_exponent(long_mode):
    """pow.Tensor_Scalar: the exponents PyTorch computes directly (2, 3, -1, -2, 0.5, -0.5) and others."""
    op, test, report, _, rng = _pointwise_setup("pow-scalar", "pow.Tensor_Scalar")
    exponents = (2, 3, -1.0, -2.0, 0.5, -0.5, 1.5, 0)
    cases = list(itertools.product(op.dtypes, numel_shapes(), LAYOUTS, THREADS, exponents))
    for dtype, shape, layout, threads, e in subset(cases, 40, rng, long_mode):
        a = Input(values_for(rng, shape, dtype, "positive", layout), dtype, layout)
        compute = _compute_dtype(op, [TensorInfo(dtype, a.values.ndim), e])
        what = f"pow{describe(a, threads=threads, extra=f'exponent {e}')}"
        try:
            with num_threads(threads):
                result = build(a) ** e
        except Exception as exc:        # noqa: BLE001
            report.error(what, exc)
            continue
        exp = evaluate(test["ref"], {"a": ref_array(a, ref_kind(compute)), "args": [e]})
        report.check(what, result, exp, compute, torch_result=None if torch is None else as_torch(a) ** e)
    report.finish()


def test_where_and_clamp(long_mode):
    report = Report("sweep where/clamp")
    rng = rng_for("where")
    where, clamp = OPS["where"], OPS["clamp"]
    cases = list(itertools.product(ALL_DTYPES, numel_shapes(), LAYOUTS, THREADS))
    for dtype, shape, layout, threads in subset(cases, 40, rng, long_mode):
        c = Input(values_for(rng, shape, "bool", None, rng.choice(LAYOUTS)), "bool")
        a = Input(values_for(rng, shape, dtype, None, layout), dtype, layout)
        b = Input(values_for(rng, shape[-1:], dtype), dtype)            # broadcast along the rows
        what = f"where{describe(c, a, b, threads=threads)}"
        try:
            with num_threads(threads):
                result = ember.where(build(c), build(a), build(b))
        except Exception as e:          # noqa: BLE001
            report.error(what, e)
            continue
        kind = ref_kind(dtype)
        exp = evaluate(where.test["ref"], {"c": c.values, "a": ref_array(a, kind), "b": ref_array(b, kind)})
        report.check(what, result, exp, dtype,
                     torch_result=None if torch is None else torch.where(as_torch(c), as_torch(a), as_torch(b)))
        if dtype == "bool":
            continue
        kwargs = clamp.test["kwargs"][int(rng.integers(len(clamp.test["kwargs"])))]
        if not is_floating(dtype):      # integer bounds inside the dtype (uint8 has no -1)
            kwargs = {k: int(np.sign(v)) + (dtype == "uint8") for k, v in kwargs.items()}
        what = f"clamp{describe(a, threads=threads, extra=str(kwargs))}"
        try:
            with num_threads(threads):
                result = ember.clamp(build(a), **kwargs)
        except Exception as e:          # noqa: BLE001
            report.error(what, e)
            continue
        exp = np.clip(ref_array(a, kind), kwargs.get("min"), kwargs.get("max"))
        report.check(what, result, exp, dtype,
                     torch_result=None if torch is None else torch.clamp(as_torch(a), **kwargs))
    report.finish()


# ----------------------------------------------------------------------------- reductions

REDUCTIONS = ["sum", "mean", "prod", "amax", "amin", "max.dim", "min.dim", "argmax", "argmin", "all", "any",
              "var", "std", "max", "min", "linalg_vector_norm", "norm"]


def _reduction_values(rng, name, shape, dtype, layout, reduced):
    """Values that keep each reduction exact or well conditioned at any length:
    positive values for sums (so 'relative' means something), powers of two for prod,
    rare zeros / rare non-zeros for all / any."""
    if name == "prod":
        choices = [1, 2] if dtype in ("bool", "uint8") else [1, -1, 2, 0.5] if is_floating(dtype) else [1, -1, 2]
        p = np.array([1.0] + [0.0] * (len(choices) - 1))
        rare = min(0.2, 4.0 / max(reduced, 1))
        p = np.array([1 - rare * (len(choices) - 1)] + [rare] * (len(choices) - 1))
        v = rng.choice(np.array(choices, dtype=np.float64), size=shape, p=p)
        if dtype == "bool":
            v = v != 0
    elif name in ("all", "any"):
        rare = min(0.5, 2.0 / max(reduced, 1))
        hits = rng.random(shape) < rare
        v = (~hits if name == "all" else hits).astype(np.float64) * (1.5 if is_floating(dtype) else 3)
        if dtype == "bool":
            v = v != 0
    else:
        domain = "positive" if name in ("sum", "mean", "var", "std") else None
        return values_for(rng, shape, dtype, domain, layout)
    if layout == "expanded" and len(shape):
        v = np.broadcast_to(v[:1], shape)
    return np.ascontiguousarray(round_to(v, dtype))


def _reduction_dims(op, ndim, rng):
    """None, every dim (both signs) and, for int[1] dims, a pair."""
    dim_param = op.sig.param("dim")
    out = []
    if dim_param is None:
        return [None]
    if op.name not in ("max", "min") or op.sig.overload:
        if dim_param.type.optional or op.name in ("amax", "amin"):
            out.append(None)
    for d in range(ndim):
        out.append(d if rng.random() < 0.5 else d - ndim)
    if dim_param.type.is_list and ndim >= 2:
        out.append((0, ndim - 1))
    return out


def _reduction_tol(name, dtype, a, dim, keepdim):
    """Sums and means within 1e-5 (float32) of the float64 result, half types within their
    own rounding of it; prod and the selections are exact. var is relative to the mean
    square (its condition: constant data has var 0, which float32 cannot resolve better than
    eps * E[x^2]), std to its root; PyTorch's Welford passes these on constant data too."""
    if not is_floating(dtype) or name in ("amax", "amin", "max", "min", "max.dim", "min.dim", "prod"):
        return Tol(0.0), None
    if name in ("var", "std"):
        axis = None if dim is None else dim
        mean_square = np.mean(a.values.astype(np.float64) ** 2, axis=axis, keepdims=keepdim)
        return accumulated_tol(dtype), mean_square if name == "var" else np.sqrt(mean_square)
    return accumulated_tol(dtype), None


def _reduce_ref(op, a, dim, keepdim, compute_kind):
    names = {"a": ref_array(a, compute_kind), "dim": dim, "keepdim": keepdim, "correction": None, "ord": 2, "p": None}
    return evaluate(op.test["ref"], names)


def _reduction_result_dtypes(op, dtype):
    r = (op.reduce or {}).get("result")
    if r == "long_for_integral":
        return ["int64" if not is_floating(dtype) else dtype]
    if r == "bool":
        return ["uint8" if dtype == "uint8" else "bool"]
    if op.name in ("argmax", "argmin"):
        return ["int64"]
    if op.full_name in ("max.dim", "min.dim"):
        return [dtype, "int64"]
    return [dtype]


@pytest.mark.parametrize("name", REDUCTIONS)
def test_reductions(name, long_mode):
    op = OPS[name]
    report = Report(f"sweep {name}")
    rng = rng_for("reduce", name)
    cases = []
    for dtype in run_dtypes(op):
        for shape in reduction_shapes():
            for dim in _reduction_dims(op, len(shape), rng):
                for layout in LAYOUTS:
                    cases.append((dtype, shape, dim, layout, rng.choice(THREADS), bool(rng.random() < 0.5)))
    for dtype, shape, dim, layout, threads, keepdim in subset(cases, 72, rng, long_mode):
        if name in ("max", "min"):
            keepdim = False
        dims = () if dim is None else (dim if isinstance(dim, tuple) else (dim,))
        reduced = int(np.prod([shape[d] for d in dims])) if dims else int(np.prod(shape))
        a = Input(_reduction_values(rng, name, shape, dtype, layout, reduced), dtype, layout)
        kwargs = {} if op.sig.param("dim") is None else ({"dim": dim} if dim is not None else {})
        if kwargs and op.sig.param("keepdim") is not None:
            kwargs["keepdim"] = keepdim
        keep = kwargs.get("keepdim", False)
        what = f"{name}{describe(a, threads=threads, extra=str(kwargs))}"
        try:
            with num_threads(threads):
                result = call_ember(op, build(a), **kwargs)
        except Exception as e:          # noqa: BLE001
            report.error(what, e)
            continue
        exp = _reduce_ref(op, a, dim, keep, ref_kind(dtype) if op.name not in ("all", "any") else "bool")
        results = list(result) if len(op.sig.returns) > 1 else [result]
        exps = list(exp) if len(op.sig.returns) > 1 else [exp]
        torch_results = [None] * len(results)
        if torch is not None and name not in ("max", "min", "var", "std") and not (
                name == "prod" and isinstance(dim, tuple)):
            tr = torch_fn(op)(as_torch(a), **kwargs)
            torch_results = list(tr) if len(op.sig.returns) > 1 else [tr]
        for r, e, d, t in zip(results, exps, _reduction_result_dtypes(op, dtype), torch_results):
            tol, scale = _reduction_tol(name, d, a, dim, keep)
            if isinstance(e, np.ndarray) and e.dtype == np.float64 and not is_floating(d) and d != "bool":
                e = np.round(e)
            report.check(what, r, np.asarray(e), d, tol, scale, t)
    report.finish()


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax(name, long_mode):
    op = OPS[name]
    report = Report(f"sweep {name}")
    rng = rng_for("softmax", name)
    cases = [(d, s, dim, layout, t) for d in run_dtypes(op) for s in reduction_shapes() for dim in range(len(s))
             for layout in LAYOUTS for t in THREADS]
    for dtype, shape, dim, layout, threads in subset(cases, 30, rng, long_mode):
        a = Input(values_for(rng, shape, dtype, None, layout), dtype, layout)
        what = f"{name}{describe(a, threads=threads, extra=f'dim={dim}')}"
        try:
            with num_threads(threads):
                result = call_ember(op, build(a), dim)
        except Exception as e:          # noqa: BLE001
            report.error(what, e)
            continue
        exp = evaluate(op.test["ref"], {"a": ref_array(a, "float64"), "dim": dim})
        tol = accumulated_tol(dtype)
        if name == "log_softmax":       # about log(n) in size: its error is absolute, relative to that
            tol = Tol(tol.rtol, tol.atol + tol.rtol * np.log(shape[dim] + 1))
        report.check(what, result, exp, dtype, tol,
                     torch_result=None if torch is None else torch_fn(op)(as_torch(a), dim))
    report.finish()


# ----------------------------------------------------------------------------- matmul family

MATMUL_DTYPES = list(FLOATING) + list(INTEGRAL)
MATRIX_LAYOUTS = ("contig", "transposed", "strided", "offset")


def _matrix_values(rng, shape, dtype, layout="contig"):
    """Floats in [-2, 2]; integers over their whole range, so products wrap around."""
    if is_floating(dtype):
        return values_for(rng, shape, dtype, None, layout)
    info = np.iinfo(NUMPY_STORAGE[dtype])
    v = rng.integers(info.min, info.max, size=shape, dtype=np.int64, endpoint=True).astype(NUMPY_STORAGE[dtype])
    if layout == "expanded" and len(shape):
        v = np.ascontiguousarray(np.broadcast_to(v[:1], shape))
    return v


def _product_ref(a, b, fn):
    """The float64 (or wrapping int64) product, and the per-element error bound of the
    float result: k * eps * (|A| @ |B|) (float32 accumulation, then one rounding for halves)."""
    if is_floating(a.dtype):
        x, y = a.values.astype(np.float64), b.values.astype(np.float64)
        exp = fn(x, y)
        k = a.values.shape[-1] if a.values.ndim else 1
        acc = EPS["float64"] if a.dtype == "float64" else EPS["float32"]
        bound = 2 * k * acc * fn(np.abs(x), np.abs(y)) + (2 * EPS[a.dtype] * np.abs(exp) if a.dtype in (
            "float16", "bfloat16") else 0)
        return exp, Tol(1.0), bound
    with np.errstate(over="ignore"):
        return fn(a.values.astype(np.int64), b.values.astype(np.int64)), None, None


def _run_product(report, name, fn_ember, fn_np, fn_torch, a, b, threads):
    what = f"{name}{describe(a, b, threads=threads)}"
    try:
        with num_threads(threads):
            result = fn_ember(build(a), build(b))
    except Exception as e:              # noqa: BLE001
        report.error(what, e)
        return
    exp, tol, bound = _product_ref(a, b, fn_np)
    torch_result = None if torch is None else fn_torch(as_torch(a), as_torch(b))
    report.check(what, result, exp, a.dtype, tol, bound, torch_result)


def test_mm(long_mode):
    report = Report("sweep mm")
    rng = rng_for("mm")
    cases = list(itertools.product(MATMUL_DTYPES, gemm_shapes(), MATRIX_LAYOUTS, MATRIX_LAYOUTS, THREADS))
    for dtype, (m, k, n), la, lb, threads in subset(cases, 100, rng, long_mode):
        a = Input(_matrix_values(rng, (m, k), dtype, la), dtype, la)
        b = Input(_matrix_values(rng, (k, n), dtype, lb), dtype, lb)
        _run_product(report, "mm", ember.mm, np.matmul, getattr(torch, "mm", None), a, b, threads)
    report.finish()


def test_issue8_gemm_shapes_every_thread_count():
    """The shapes whose strips left rows unwritten at 2+ threads, in every layout pair."""
    report = Report("sweep mm (issue 8 shapes)")
    rng = rng_for("mm-issue8")
    for (m, k, n), la, lb, threads in itertools.product(((65, 130, 33), (33, 130, 65), (513, 257, 129)),
                                                        ("contig", "transposed"), ("contig", "transposed"),
                                                        THREADS):
        a = Input(_matrix_values(rng, (m, k), "float32", la), "float32", la)
        b = Input(_matrix_values(rng, (k, n), "float32", lb), "float32", lb)
        _run_product(report, "mm", ember.mm, np.matmul, getattr(torch, "mm", None), a, b, threads)
    report.finish()


def _bmm_shapes():
    """Many small products (one per thread) and products past small_batched_product (split)."""
    big = int(round(SMALL_BATCHED ** (1 / 3))) + 2
    return [(1, 65, 33, 17), (2, 33, 7, 65), (3, 17, 129, 9), (7, 16, 16, 16), (2, big, big, big)]


def test_bmm_matmul_dot_mv(long_mode):
    report = Report("sweep bmm/matmul/dot/mv")
    rng = rng_for("bmm")
    cases = []
    for dtype in MATMUL_DTYPES:
        for threads in THREADS:
            for s in _bmm_shapes():
                cases.append(("bmm", dtype, s, threads))
            for s in ((2, 1, 33, 65), (1, 3, 65, 17)):
                cases.append(("matmul", dtype, s, threads))
            for n in (GRAIN - 1, GRAIN + 1, 7, 513):
                cases.append(("dot", dtype, n, threads))
            for m, k, _ in gemm_shapes()[:6]:
                cases.append(("mv", dtype, (m, k), threads))
    for kind, dtype, s, threads in subset(cases, 60, rng, long_mode):
        la, lb = rng.choice(MATRIX_LAYOUTS), rng.choice(MATRIX_LAYOUTS)
        if kind == "bmm":
            batch, m, k, n = s
            a = Input(_matrix_values(rng, (batch, m, k), dtype, la), dtype, la)
            b = Input(_matrix_values(rng, (batch, k, n), dtype, lb), dtype, lb)
            _run_product(report, "bmm", ember.bmm, np.matmul, getattr(torch, "bmm", None), a, b, threads)
        elif kind == "matmul":                    # broadcast batch dims: (2, 1, m, k) @ (3, k, n)
            b0, b1, m, k = s
            a = Input(_matrix_values(rng, (b0, 1, m, k), dtype, la), dtype, la)
            b = Input(_matrix_values(rng, (3, k, 9), dtype, lb), dtype, lb)
            _run_product(report, "matmul", ember.matmul, np.matmul, getattr(torch, "matmul", None), a, b, threads)
        elif kind == "dot":
            a = Input(_matrix_values(rng, (s,), dtype, la), dtype, la)
            b = Input(_matrix_values(rng, (s,), dtype, lb), dtype, lb)
            _run_product(report, "dot", ember.dot, np.dot, getattr(torch, "dot", None), a, b, threads)
        else:
            m, k = s
            a = Input(_matrix_values(rng, (m, k), dtype, la), dtype, la)
            b = Input(_matrix_values(rng, (k,), dtype, lb), dtype, lb)
            _run_product(report, "mv", ember.mv, np.matmul, getattr(torch, "mv", None), a, b, threads)
    report.finish()


# ----------------------------------------------------------------------------- copies, casts, joins

def test_copy_contiguous_cast(long_mode):
    report = Report("sweep copy/contiguous/cast")
    rng = rng_for("copy")
    cases = list(itertools.product(ALL_DTYPES, ALL_DTYPES, numel_shapes(), LAYOUTS, THREADS))
    for src_dtype, dst_dtype, shape, layout, threads in subset(cases, 60, rng, long_mode):
        a = Input(values_for(rng, shape, src_dtype, None, layout), src_dtype, layout)
        # Casts truncate towards zero and test non-zero for bool, as C++ and NumPy do; float64
        # reaches a half type through float32 (two roundings), as in PyTorch.
        exp = a.values.astype(np.float32) if src_dtype == "float64" and dst_dtype in ("float16", "bfloat16") \
            else a.values
        exp = round_to(exp.astype(np.float64) if dst_dtype in FLOATING else exp, dst_dtype)
        what = describe(a, threads=threads, extra=f"to {dst_dtype}")
        try:
            with num_threads(threads):
                x = build(a)
                cast = x.to(getattr(ember, dst_dtype))
                cont = x.contiguous()
                dst_layout = rng.choice(["contig", "transposed", "strided", "offset"])
                dst = build(Input(values_for(rng, shape, dst_dtype, None, dst_layout), dst_dtype, dst_layout))
                dst.copy_(x)
        except Exception as e:          # noqa: BLE001
            report.error(what, e)
            continue
        tol = Tol(0.0) if dst_dtype in FLOATING else None
        report.check(f"to{what}", cast, exp, dst_dtype, tol)
        report.check(f"contiguous{what}", cont, a.values, src_dtype, Tol(0.0) if src_dtype in FLOATING else None)
        if not cont.is_contiguous():
            report.failures.append(f"contiguous{what}: result is not contiguous")
        report.check(f"copy_ into a {dst_layout} tensor{what}", dst, exp, dst_dtype, tol)
    report.finish()


def test_cat_stack(long_mode):
    report = Report("sweep cat/stack")
    rng = rng_for("cat")
    cases = list(itertools.product(ALL_DTYPES, numel_shapes(), THREADS, ("cat", "stack")))
    for dtype, shape, threads, kind in subset(cases, 40, rng, long_mode):
        dim = int(rng.integers(len(shape)))
        inputs = []
        for _ in range(3):
            s = list(shape)
            if kind == "cat":
                s[dim] = int(rng.integers(1, shape[dim] + 1))
            layout = rng.choice(LAYOUTS)
            inputs.append(Input(values_for(rng, tuple(s), dtype, None, layout), dtype, layout))
        what = f"{kind}{describe(*inputs, threads=threads, extra=f'dim={dim}')}"
        try:
            with num_threads(threads):
                result = getattr(ember, kind)([build(i) for i in inputs], dim)
        except Exception as e:          # noqa: BLE001
            report.error(what, e)
            continue
        fn = np.concatenate if kind == "cat" else np.stack
        exp = fn([i.values for i in inputs], axis=dim)
        report.check(what, result, exp, dtype, Tol(0.0) if is_floating(dtype) else None,
                     torch_result=None if torch is None else getattr(torch, kind)([as_torch(i) for i in inputs], dim))
    report.finish()


# ----------------------------------------------------------------------------- indexing

def test_indexing(long_mode):
    report = Report("sweep indexing")
    rng = rng_for("index")
    shapes = [s for s in numel_shapes() if len(s) == 2]
    cases = list(itertools.product(ALL_DTYPES, shapes, LAYOUTS, THREADS, ("get", "get2", "mask", "put", "acc")))
    for dtype, shape, layout, threads, kind in subset(cases, 50, rng, long_mode):
        a = Input(values_for(rng, shape, dtype, None, layout), dtype, layout)
        rows, cols = shape
        n_idx = int(rng.integers(1, 2 * rows + 2))
        idx = rng.integers(-rows, rows, size=n_idx)
        what = f"{kind}{describe(a, threads=threads, extra=f'{n_idx} indices')}"
        try:
            with num_threads(threads):
                x = build(a)
                if kind == "get":
                    result, exp = x[ember.tensor(idx)], a.values[idx]
                elif kind == "get2":
                    cidx = rng.integers(-cols, cols, size=n_idx)
                    result, exp = x[ember.tensor(idx), ember.tensor(cidx)], a.values[idx, cidx]
                elif kind == "mask":
                    mask = rng.random(shape) < 0.3
                    result, exp = x[ember.tensor(mask)], a.values[mask]
                else:
                    if kind == "put":                   # unique rows: the last write is unambiguous
                        idx = rng.permutation(rows)[: min(rows, n_idx)]
                    vals = values_for(rng, (len(idx), cols), dtype)
                    target = x.clone() if layout != "expanded" else x.contiguous()
                    target.index_put_((ember.tensor(idx),), make_tensor(vals, dtype), kind == "acc")
                    exp, scale = a.values.copy(), None
                    if kind == "put":
                        exp[idx] = vals
                    elif dtype == "bool":
                        np.logical_or.at(exp, idx, vals)
                    else:
                        with np.errstate(over="ignore"):
                            wide = exp.astype(np.float64 if is_floating(dtype) else np.int64)
                            np.add.at(wide, idx, vals.astype(wide.dtype))
                            exp = wide
                        # each accumulation rounds once: the error scales with the magnitudes added
                        scale = np.abs(a.values.astype(np.float64))
                        np.add.at(scale, idx, np.abs(vals.astype(np.float64)))
                    result = target
        except Exception as e:          # noqa: BLE001
            report.error(what, e)
            continue
        tol, scl = (Tol(0.0) if is_floating(dtype) else None), None
        if is_floating(dtype) and kind == "acc":
            repeats = np.bincount(np.asarray(idx) % rows, minlength=rows).max()
            tol, scl = Tol(2 * EPS[dtype] * (repeats + 1)), scale
        report.check(what, result, exp, dtype, tol, scl)
    report.finish()


# ----------------------------------------------------------------------------- special values

SPECIALS = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.0, -3.0, 1e-30, 65504.0]
# (op, dtype) where PyTorch 2.13 loses 1e-30: its bfloat16 erf gives 0 (ember: 1.13e-30, as float32 does).
TORCH_FLUSHES_TINY = {("erf", "bfloat16")}
# Ops whose special values cancel to an exact 0 (logaddexp2(-1, -1)) that PyTorch's FMA-contracted
# kernel misses by an ulp of the inputs (-4.8e-17 in float64): compared to 8 ulps of 1 absolute there.
TORCH_CANCELS = {"logaddexp2"}
# (op, dtype) where PyTorch 2.13's ±0 ties go to `other` while its other dtypes (and ember's all) give `self`.
TORCH_ZERO_TIES_TO_OTHER = {("fmax", "bfloat16"), ("fmin", "bfloat16")}


def _special_tol(op, dtype):
    """8 ulps, or the op's `test: tol:` where that is looser (digamma near its root, where
    PyTorch's float32 kernel, computing in float, is itself 6e-8 off)."""
    own = op_tol(op, dtype)
    return Tol(max(8 * EPS[dtype], own.rtol), own.atol)


@pytest.mark.skipif(torch is None, reason="PyTorch defines these values (NumPy differs: sign(nan), ...)")
@pytest.mark.parametrize("name", [n for n in UNARY + BINARY if torch_fn(OPS[n]) is not None
                                  and set(run_dtypes(OPS[n])) & set(FLOATING)])
def test_special_values_match_pytorch(name):
    """±0, ±inf, nan, ±1, ±0.5, ±2, ±3 (and every pair for binary ops) give PyTorch's results,
    signs of zero and NaNs included, in every floating dtype the op takes."""
    op = OPS[name]
    report = Report(f"special values {name}")
    binary = name in BINARY
    for dtype in [d for d in run_dtypes(op) if d in FLOATING]:
        if binary:
            x, y = (g.ravel() for g in np.meshgrid(SPECIALS, SPECIALS, indexing="ij"))
            inputs = [Input(round_to(x, dtype), dtype), Input(round_to(y, dtype), dtype)]
        else:
            specials = [v for v in SPECIALS if v != 1e-30 or (name, dtype) not in TORCH_FLUSHES_TINY]
            inputs = [Input(round_to(np.array(specials), dtype), dtype)]
        for kwargs in op.test.get("kwargs") or [{}]:
            what = f"{name}{describe(*inputs, threads=1, extra=str(kwargs) if kwargs else '')}"
            expected = _torch_call(op, inputs, kwargs)
            try:
                result = call_ember(op, *[build(i) for i in inputs], **kwargs)
            except Exception as e:      # noqa: BLE001
                report.error(what, e)
                continue
            tol = _special_tol(op, dtype_of(expected)) if expected.is_floating_point() else None
            if name in TORCH_CANCELS:
                tol = Tol(tol.rtol, max(tol.atol, 8 * EPS[dtype_of(expected)]))
            report.check(what, result, expected.double().numpy(), dtype_of(expected), tol, source="PyTorch")
            if expected.is_floating_point() and name not in TORCH_CANCELS and \
                    (name, dtype) not in TORCH_ZERO_TIES_TO_OTHER:
                zeros = (expected == 0).numpy()
                got = np.signbit(result.double().numpy()[zeros]) if zeros.any() else None
                if got is not None and not np.array_equal(got, np.signbit(expected.double().numpy()[zeros])):
                    report.failures.append(f"{what}: the sign of a zero result differs from PyTorch's")
    report.finish()
