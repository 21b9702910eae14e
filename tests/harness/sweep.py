"""The differential sweep's machinery (tests/test_sweep.py): shapes around ember's
own path-switch sizes, memory layouts, thread counts, and comparison against a
float64 NumPy reference (and PyTorch when it is importable).

Shapes come from ember._C._thresholds(), so the sweep follows the thresholds
when they change. Values come from the op harness's domains (samples.make_values)
and references from the ops.yaml `ref:` expressions (refs.eval_ref), evaluated in
float64 (int64 for integers) on the exact values the tensors hold. Every failure
names the op, shapes, layouts, dtypes and thread count.
"""
import contextlib
import zlib
from dataclasses import dataclass, field

import numpy as np

import ember

from .dtypes import FLOATING, NUMPY_STORAGE, is_floating, round_to
from .refs import eval_ref
from .samples import make_values
from .spec import extra_args
from .tensors import make_tensor, to_numpy

try:                                   # the second reference; the sweep runs without it
    import torch
except ImportError:                    # pragma: no cover - depends on the machine
    torch = None

THRESHOLDS = ember._C._thresholds()
GRAIN = THRESHOLDS["grain_size"]
STRIP = THRESHOLDS["gemm_strip_width"]
GEMM_WORK = THRESHOLDS["parallel_gemm_work"]
REDUCE_BLOCK = THRESHOLDS["reduce_block"]
SMALL_BATCHED = THRESHOLDS["small_batched_product"]

THREADS = (1, 2, 3)
ODD_SIZES = (1, 7, 33, 65, 129, 513)
LAYOUTS = ("contig", "transposed", "strided", "expanded", "offset")

# Unit roundoff of each floating dtype: results must lie within a few of these
# (scaled by the problem's condition) of the float64 reference.
EPS = {"float16": 2.0 ** -11, "bfloat16": 2.0 ** -8, "float32": 2.0 ** -24, "float64": 2.0 ** -53}
# The spacing of subnormals: the absolute rounding error near zero.
TINY = {"float16": 2.0 ** -24, "bfloat16": 2.0 ** -133, "float32": 2.0 ** -149, "float64": 2.0 ** -1074}


def rng_for(*tag):
    return np.random.default_rng(zlib.crc32(repr(tag).encode()))


@contextlib.contextmanager
def num_threads(n):
    previous = ember.get_num_threads()
    ember.set_num_threads(n)
    try:
        yield
    finally:
        ember.set_num_threads(previous)


# ----------------------------------------------------------------------------- shapes

def numel_shapes():
    """Pointwise sizes: just below, at and above the grain size and twice it, as 1-D and
    2-D (an odd inner size), plus the odd sizes."""
    out = []
    for n in (GRAIN - 1, GRAIN, GRAIN + 1, 2 * GRAIN + 1):
        out.append((n,))
        out.append((n // 129 + (n % 129 > 0), 129))
    out += [(s,) for s in ODD_SIZES] + [(65, 7), (7, 513)]
    return out


def reduction_shapes():
    """Reduced lengths around the block of the contiguous reduction, and totals around
    twice the grain size (where a whole reduction splits over the threads)."""
    b = REDUCE_BLOCK
    out = [(b - 1,), (b,), (b + 1,), (2 * GRAIN + 1,), (3, b + 1), (b + 1, 3), (7, 2 * b - 1),
           (2 * GRAIN // 129 + 1, 129), (129, 2 * GRAIN // 129 + 1), (5, 33, 2 * GRAIN // 165 + 1),
           (65, 7), (1, 513), (513, 1)]
    return out


def gemm_shapes():
    """(m, k, n) with m or n at threads * strip * j +- 1 (j = 1, 2) and m*n*k just above
    the work where a product splits, plus the shapes issue 8 found."""
    out = {(65, 130, 33), (33, 130, 65), (513, 257, 129), (7, 1, 5), (1, 65, 1), (33, 7, 1)}
    for t in THREADS:
        for j in (1, 2):
            for d in (-1, 1):
                e = t * STRIP * j + d
                other = 33
                k = GEMM_WORK // (e * other) + 2
                out.add((e, k, other))
                out.add((other, k, e))
    return sorted(out)


# ----------------------------------------------------------------------------- inputs

@dataclass
class Input:
    """A tensor input: the exact values it holds (dtype storage in NumPy) and its layout."""
    values: np.ndarray
    dtype: str
    layout: str = "contig"

    def describe(self):
        return f"{self.dtype}{list(self.values.shape)}:{self.layout}"


def filler(dtype):
    """What the bytes around a view hold: NaN for floats, so a stray read shows."""
    if dtype == "bool":
        return True
    return np.nan if is_floating(dtype) else 100


def values_for(rng, shape, dtype, domain=None, layout="contig", specials=False):
    """Exact values of `dtype` (NumPy storage type; bfloat16 as rounded float32). An
    expanded layout gets values constant along dim 0, as a stride-0 view shows them."""
    shape = tuple(shape)
    gen_shape = (1,) + shape[1:] if layout == "expanded" and shape else shape
    v = round_to(make_values(rng, gen_shape, dtype, domain, specials), dtype).reshape(gen_shape)
    return np.broadcast_to(v, shape).copy()


def build(inp):
    """The ember tensor with `inp`'s values laid out as `inp.layout` says."""
    v, d, layout = inp.values, inp.dtype, inp.layout
    if v.ndim < 2 and layout == "transposed":
        layout = "strided"
    if v.ndim == 0 or v.size == 0:
        layout = "contig"
    if layout == "contig":
        return make_tensor(v, d)
    if layout == "transposed":
        return make_tensor(np.ascontiguousarray(np.swapaxes(v, -1, -2)), d).transpose(-1, -2)
    if layout == "strided":                       # every other element of a twice-as-long last dim
        base = np.full(v.shape[:-1] + (2 * v.shape[-1],), filler(d), dtype=v.dtype)
        base[..., ::2] = v
        return make_tensor(base, d)[..., ::2]
    if layout == "expanded":                      # stride 0 along dim 0
        return make_tensor(np.ascontiguousarray(v[:1]), d).expand(*v.shape)
    if layout == "offset":                        # contiguous, 3 elements into its storage (unaligned)
        flat = np.concatenate([np.full(3, filler(d), dtype=v.dtype), v.reshape(-1)])
        return make_tensor(flat, d)[3:].view(*v.shape)
    raise ValueError(layout)


def as_torch(inp):
    values = np.ascontiguousarray(inp.values)
    if inp.dtype != "bfloat16":
        return torch.from_numpy(values)
    # The exact bits (values are bfloat16 already): torch's tensor cast turns NaN into 0xFFFF,
    # a negative NaN, where ember (and c10's scalar cast) keep 0x7FC0, which copysign would show.
    high = (values.view(np.uint32) >> 16).astype(np.uint16).view(np.int16)
    return torch.from_numpy(high).view(torch.bfloat16)


def ref_array(inp, compute):
    """An input's exact values in the reference's type: float64, int64 or bool."""
    if compute == "bool":
        return inp.values.astype(bool)
    return inp.values.astype(np.float64 if is_floating(compute) else np.int64)


def ref_kind(dtype):
    return "float64" if is_floating(dtype) else ("bool" if dtype == "bool" else "int64")


def evaluate(expr, names):
    """An ops.yaml `ref:` expression; a bool computation NumPy lacks a loop for is retried in int64."""
    try:
        return np.asarray(eval_ref(expr, names))
    except TypeError:
        names = {k: (v.astype(np.int64) if isinstance(v, np.ndarray) and v.dtype == np.bool_ else v)
                 for k, v in names.items()}
        return np.asarray(eval_ref(expr, names))


# ----------------------------------------------------------------------------- comparing

@dataclass
class Tol:
    """|got - ref| <= rtol * scale + atol, scale = |ref| unless the check passes one
    (sum |x| for a sum, |A| @ |B| for a product)."""
    rtol: float
    atol: float = 0.0


def pointwise_tol(dtype, ulps=4):
    """Pointwise results: within a few units in the last place (an ulp is up to 2 * EPS
    relative) of the exact result; half types compute in float32 and round once."""
    return Tol(ulps * 2 * EPS[dtype], ulps * TINY[dtype])


def op_tol(op, dtype):
    """pointwise_tol, loosened (never tightened) by the op's `test: tol:` where the function is
    ill-conditioned (gelu near x = -3, x - tanh(x) near 0)."""
    if dtype not in EPS:
        return None  # integers and bools compare exactly
    base = pointwise_tol(dtype)
    tol = (op.test or {}).get("tol") or {}
    tol = tol.get(dtype, tol)
    return Tol(max(base.rtol, float(tol.get("rtol", 0))), max(base.atol, float(tol.get("atol", 0))))


def accumulated_tol(dtype, float32_rtol=1e-5):
    """Sums, means, softmax: float32 within `float32_rtol` of the float64 result, float64
    within 1e-12, half types within their own rounding of it (they accumulate in float32)."""
    if dtype == "float64":
        return Tol(1e-12)
    if dtype == "float32":
        return Tol(float32_rtol)
    return Tol(2 * EPS[dtype] + float32_rtol, TINY[dtype])


def ref_names(op, kwargs):
    """The names an ops.yaml `ref:` reads besides the inputs: the defaults of the op's
    non-tensor arguments, then what the call passes."""
    names = {p.name: p.default for p in extra_args(op) if p.has_default}
    names.update(kwargs)
    return names


def mismatch(got, exp, dtype, tol=None, scale=None):
    """None when `got` (NumPy values of an ember result of `dtype`) matches the reference,
    else a description of the first differences."""
    exp = np.asarray(exp)
    got = np.asarray(got)
    if got.shape != exp.shape:
        return f"shape {got.shape}, expected {exp.shape}"
    if not is_floating(dtype):
        e = exp.astype(NUMPY_STORAGE[dtype])
        bad = got != e
        return _describe(bad, got, e) if bad.any() else None
    g, e = got.astype(np.float64), exp.astype(np.float64)
    if dtype != "float64":     # the exact result as the dtype holds it (65536 -> inf in float16, 2**129 in float32)
        with np.errstate(over="ignore"):
            e = round_to(e, dtype).astype(np.float64)
    tol = tol or pointwise_tol(dtype)
    s = np.abs(e) if scale is None else np.asarray(scale, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        finite = np.isfinite(e)
        bad = np.where(finite, ~(np.abs(g - e) <= tol.rtol * s + tol.atol), ~((g == e) | (np.isnan(g) & np.isnan(e))))
    return _describe(bad, g, e, f" (rtol={tol.rtol:.3g}, atol={tol.atol:.3g})") if bad.any() else None


def _describe(bad, got, exp, note=""):
    idx = np.argwhere(bad)[:4]
    parts = [f"at {tuple(int(i) for i in ix)}: got {got[tuple(ix)]!r}, expected {exp[tuple(ix)]!r}" for ix in idx]
    return f"{int(bad.sum())} of {bad.size} differ{note}: " + "; ".join(parts)


def dtype_of(t):
    """'float32' for an ember or a PyTorch tensor."""
    return str(t.dtype).split(".")[-1]


@dataclass
class Report:
    """Failures of one test, each naming the case; the test asserts there are none."""
    title: str
    failures: list = field(default_factory=list)
    cases: int = 0

    def check(self, what, result, exp, dtype, tol=None, scale=None, torch_result=None, source="NumPy float64"):
        """result: an ember tensor; exp: the reference values (from `source`); torch_result:
        PyTorch's result, also compared when given."""
        self.cases += 1
        got_dtype = dtype_of(result)
        if got_dtype != dtype:
            self.failures.append(f"{what}: dtype {got_dtype}, expected {dtype}")
            return
        got = to_numpy(result)
        problem = mismatch(got, exp, dtype, tol, scale)
        if problem:
            self.failures.append(f"{what}: vs {source}: {problem}")
            return
        if torch_result is not None:
            t = torch_result.float() if torch_result.dtype == torch.bfloat16 else torch_result
            tdtype = dtype_of(torch_result)
            if tdtype != dtype:
                self.failures.append(f"{what}: dtype {dtype}, PyTorch gives {tdtype}")
                return
            loose = None
            if is_floating(dtype):          # both are within tol of the exact result
                if mismatch(t.numpy(), exp, dtype, tol, scale) is not None:
                    # PyTorch misses the exact result that ember meets (a float16 log_softmax
                    # of 65537 equal values is -inf there): nothing to compare.
                    return
                base = tol or pointwise_tol(dtype)
                loose = Tol(2 * base.rtol, 2 * base.atol)
            problem = mismatch(got, t.numpy(), dtype, loose, scale)
            if problem:
                self.failures.append(f"{what}: vs PyTorch: {problem}")

    def error(self, what, exc):
        self.cases += 1
        self.failures.append(f"{what}: raised {type(exc).__name__}: {exc}")

    def finish(self):
        assert self.cases > 0, f"{self.title}: no case ran"
        if self.failures:
            shown = "\n  ".join(self.failures[:25])
            more = f"\n  ... and {len(self.failures) - 25} more" if len(self.failures) > 25 else ""
            raise AssertionError(f"{self.title}: {len(self.failures)} of {self.cases} cases fail:\n  {shown}{more}")


# --long runs this many times CI's share of each family's cases (all of them when fewer).
LONG_FACTOR = 12


def subset(items, n, rng, long_mode):
    """n of the items (LONG_FACTOR * n with --long), picked by a seeded RNG, in their order."""
    items = list(items)
    n = n * LONG_FACTOR if long_mode else n
    if len(items) <= n:
        return items
    keep = sorted(rng.choice(len(items), size=n, replace=False))
    return [items[i] for i in keep]


def floating(dtypes):
    return [d for d in dtypes if d in FLOATING]
