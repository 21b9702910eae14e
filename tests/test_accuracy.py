"""Accuracy at realistic lengths: sums, means, var/std, norms and softmax of 1e6-1e7
elements, in float32, float16 and bfloat16, over every layout the reduction
engine walks differently (inner, outer and middle dims, strided, expanded,
transposed), at 1, 2 and 3 threads, against float64 NumPy on the exact inputs.

Tiny samples never show accumulation error: a float32 sum of 1e6 rows once
came out 1% off. `--long` runs ten times the lengths."""
import numpy as np
import pytest

import ember

THREADS = [1, 2, 3]
# Largest relative error allowed against the float64 result of the same inputs:
# float32 sums must stay within 1e-5 at 1e7 elements (a one-at-a-time sum
# is 1e-2 off); 16-bit results within about one rounding of their dtype.
REL = {"float32": 1e-5, "float16": 1e-3, "bfloat16": 8e-3}


@pytest.fixture(params=THREADS, ids=lambda t: f"threads{t}")
def threads(request):
    prev = ember.get_num_threads()
    ember.set_num_threads(request.param)
    yield request.param
    ember.set_num_threads(prev)


@pytest.fixture(scope="module")
def scale(request):
    return 10 if request.config.getoption("--long") else 1


def as_ember(a, dtype):
    """`a` (float64 values already representable in dtype) as an ember tensor of dtype."""
    t = ember.from_numpy(np.ascontiguousarray(a, dtype=np.float32))
    return t if dtype == "float32" else t.to(getattr(ember, dtype))


def exact_values(shape, dtype, rng, low=0.0, high=1.0):
    """Random values rounded to dtype first, so NumPy's float64 reference sees what ember sees."""
    a = rng.uniform(low, high, size=shape).astype(np.float32)
    if dtype == "float16":
        a = a.astype(np.float16).astype(np.float32)
    elif dtype == "bfloat16":
        a = as_ember(a, "bfloat16").float().numpy()
    return a.astype(np.float64)


def to_f64(t):
    return t.double().numpy()


# Below this magnitude float16 has only subnormals: the spacing (2**-24) bounds the error.
TINY = {"float32": 1e-30, "float16": 2.0**-24, "bfloat16": 1e-30}


def check(got, ref, dtype, what):
    err = np.max(np.abs(got - ref) / np.maximum(np.abs(ref), TINY[dtype] / REL[dtype]))
    assert err <= REL[dtype], f"{what}: relative error {err:.3g} > {REL[dtype]:g}"


# ---------------------------------------------------------------- sums over every layout

def layouts(n):
    """(name, make(base) -> view, dim) for a float64 base of n elements: each a
    different walk of the reduction engine."""
    rows = n // 4
    return [
        ("whole", lambda b: b, None),
        ("inner", lambda b: b.reshape(4, rows), 1),
        ("outer", lambda b: b.reshape(rows, 4), 0),                  # the 1%-off case
        ("middle", lambda b: b.reshape(2, rows // 2, 4), 1),
        ("outer-wide", lambda b: b.reshape(n // 1000, 1000), 0),
        ("transposed", lambda b: b.reshape(4, rows).T, 0),
        ("strided", lambda b: b.reshape(rows, 4)[:, ::2], 0),
        ("step", lambda b: b[::3], 0),
        ("two-dims", lambda b: b.reshape(10, n // 40, 4), (0, 1)),
    ]


def layout_ids():
    return [name for name, _, _ in layouts(40)]


@pytest.fixture(scope="module")
def float32_base(scale):
    """1e7 float32 values (4e7 with --long), as float64 and as an ember tensor."""
    base = exact_values(10_000_000 * (4 if scale > 1 else 1), "float32", np.random.default_rng(0))
    return base, as_ember(base, "float32")


@pytest.mark.parametrize("layout", layout_ids())
def test_float32_sum_every_layout(layout, threads, float32_base):
    base, tensor = float32_base
    name, make, dim = next(item for item in layouts(base.size) if item[0] == layout)
    ref_view = make(base)
    t = make(tensor)
    got = t.sum() if dim is None else t.sum(dim)
    ref = ref_view.sum() if dim is None else ref_view.sum(axis=dim)
    check(to_f64(got), ref, "float32", f"sum {name} at {threads} threads")


@pytest.mark.parametrize("threads_", THREADS)
def test_float32_sum_of_constant(threads_):
    # Equal values make rounding errors add up instead of cancelling.
    prev = ember.get_num_threads()
    ember.set_num_threads(threads_)
    try:
        for shape, dim in (([1_000_000, 4], 0), ([4_000_000, 4], 0), ([10_000_000], 0), ([4, 2_500_000], 1)):
            got = to_f64(ember.full(shape, 0.1).sum(dim))
            ref = float(np.float32(0.1)) * shape[dim]
            check(got, np.full(got.shape, ref), "float32", f"sum of 0.1 over {shape} dim {dim}")
        got = ember.ones(5).expand(2_000_000, 5).sum(0)        # stride-0 reduced dim
        check(to_f64(got), np.full(5, 2e6), "float32", "sum of an expanded tensor")
    finally:
        ember.set_num_threads(prev)


# ---------------------------------------------------------------- 16-bit floats

@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_mean_accumulates_in_float32(dtype, threads):
    # A 16-bit running sum would overflow (float16) or stall (bfloat16 stops at 256 + 1).
    dt = getattr(ember, dtype)
    assert ember.full([100], 1000.0, dtype=dt).mean().item() == 1000.0
    assert ember.ones(70000, dtype=dt).mean().item() == 1.0
    rng = np.random.default_rng(1)
    n = 1_000_000
    base = exact_values(n, dtype, rng)
    t = as_ember(base, dtype)
    check(to_f64(t.mean()), base.mean(), dtype, "mean")
    check(to_f64(t.reshape(n // 4, 4).mean(0)), base.reshape(n // 4, 4).mean(0), dtype, "mean over dim 0")
    check(to_f64(t.reshape(4, n // 4).mean(1)), base.reshape(4, n // 4).mean(1), dtype, "mean over dim 1")
    small = base[:40_000]  # a sum that stays in range
    check(to_f64(as_ember(small, dtype).sum()), small.sum(), dtype, "sum")
    check(to_f64(as_ember(small, dtype).reshape(10_000, 4).sum(0)), small.reshape(10_000, 4).sum(0), dtype,
          "sum over dim 0")


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_var_std(dtype, threads):
    rng = np.random.default_rng(2)
    n = 2_000_000
    base = exact_values(n, dtype, rng, 100.0, 101.0)  # a large mean next to a small spread
    t = as_ember(base, dtype)
    check(to_f64(t.var()), base.var(ddof=1), dtype, "var")
    check(to_f64(t.std(correction=0)), base.std(), dtype, "std")
    check(to_f64(t.reshape(n // 4, 4).var(0)), base.reshape(n // 4, 4).var(0, ddof=1), dtype, "var over dim 0")
    check(to_f64(t.reshape(4, n // 4).std(1)), base.reshape(4, n // 4).std(1, ddof=1), dtype, "std over dim 1")


def test_std_of_constant_is_zero(threads):
    assert ember.tensor([0.94]).expand(10**6).std().item() == 0.0
    assert ember.full([1000, 1000], 0.3).var(0).abs().max().item() == 0.0


# ---------------------------------------------------------------- norms

def np_norm(a, ord, axis):
    a = np.abs(a)
    if ord == np.inf:
        return a.max(axis=axis)
    return (a ** ord).sum(axis=axis) ** (1.0 / ord)


@pytest.mark.parametrize("layout", layout_ids())
def test_float32_norm_every_layout(layout, threads, float32_base):
    base, tensor = float32_base
    name, make, dim = next(item for item in layouts(base.size) if item[0] == layout)
    for ord in (2, 1, 3, np.inf):
        got = ember.linalg.vector_norm(make(tensor), ord, dim)
        check(to_f64(got), np_norm(make(base), ord, dim), "float32", f"{ord}-norm {name} at {threads} threads")


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_norm_accumulates_wide(dtype, threads):
    # 1e6 squares in [0, 1] sum to ~3e5: past float16's range, and where bfloat16 stalls.
    dt = getattr(ember, dtype)
    assert ember.ones(1_000_000, dtype=dt).norm().item() == 1000.0
    assert ember.full([10**6], 0.1).norm().item() == pytest.approx(float(np.float32(0.1)) * 1000, rel=REL["float32"])
    rng = np.random.default_rng(4)
    n = 1_000_000
    base = exact_values(n, dtype, rng, -1.0, 1.0)
    t = as_ember(base, dtype)
    for ord in (2, 1, np.inf):
        if ord == 1 and dtype == "float16":  # a 1-norm of 1e6 values is past float16's range
            n, base = 100_000, base[:100_000] / 4
            t = as_ember(base, dtype)
        check(to_f64(ember.linalg.vector_norm(t, ord)), np_norm(base, ord, None), dtype, f"{ord}-norm")
        check(to_f64(t.reshape(n // 4, 4).norm(ord, 0)), np_norm(base.reshape(n // 4, 4), ord, 0), dtype,
              f"{ord}-norm over dim 0")
        check(to_f64(t.reshape(4, n // 4).norm(ord, 1)), np_norm(base.reshape(4, n // 4), ord, 1), dtype,
              f"{ord}-norm over dim 1")


# ---------------------------------------------------------------- softmax

@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_softmax_long_lines(dtype, threads):
    rng = np.random.default_rng(3)
    for shape, dim in (((2, 1_000_000), 1), ((1_000_000, 2), 0), ((4, 250_000), 0)):
        base = exact_values(shape, dtype, rng, -5.0, 5.0)
        t = as_ember(base, dtype)
        e = np.exp(base - base.max(axis=dim, keepdims=True))
        ref = e / e.sum(axis=dim, keepdims=True)
        check(to_f64(ember.softmax(t, dim)), ref, dtype, f"softmax {shape} dim {dim}")
        log_ref = np.log(ref)
        got = to_f64(ember.log_softmax(t, dim))
        err = np.max(np.abs(got - log_ref))  # log-probabilities: absolute error
        assert err <= REL[dtype] * np.max(np.abs(log_ref)), f"log_softmax {shape} dim {dim}: {err:.3g}"
