"""CUDA reductions against ember's CPU results for the same ops: sum, prod,
amax, amin, all, any over every declared dtype, dims, layouts, keepdim, 0-d,
empty, size-1 dims, long and short rows, > 2^31 elements; mean/var/std;
max/min along a dim and argmax/argmin (ties, NaN); gradients on the device.
Every test needs a GPU (skipped without one)."""
import numpy as np
import pytest

import ember

HAS_GPU = ember.cuda.is_available()
gpu = pytest.mark.skipif(not HAS_GPU, reason="needs a CUDA GPU")
pytestmark = gpu

ALL = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]
FLOATS = ["float16", "bfloat16", "float32", "float64"]
NP = {"bool": np.bool_, "uint8": np.uint8, "int8": np.int8, "int16": np.int16, "int32": np.int32,
      "int64": np.int64, "float16": np.float16, "bfloat16": np.float32, "float32": np.float32,
      "float64": np.float64}
LIST_DIMS = ("sum", "amax", "amin")        # dim is a list (several dims at once)
ONE_DIM = ("prod", "all", "any")           # dim is one int or None


def tensor(a, dtype):
    """An ember CPU tensor of `dtype` holding `a` (bfloat16 goes in through float32)."""
    t = ember.from_numpy(np.array(np.asarray(a).astype(NP[dtype]), order="C"))
    return t.to(ember.bfloat16) if dtype == "bfloat16" else t


def values(shape, dtype, rng, op="sum"):
    """Random values exact in `dtype`; near one for prod (no overflow)."""
    if dtype == "bool":
        return rng.random(shape) < (0.9 if op == "all" else 0.1 if op == "any" else 0.5)
    if op == "prod":
        return rng.choice([1, 1, 1, -1, 2], size=shape) if dtype not in FLOATS else rng.uniform(0.8, 1.25, shape)
    if dtype in FLOATS:
        return rng.standard_normal(shape)
    lo = 0 if dtype == "uint8" else -100
    return rng.integers(lo, 100, size=shape)


def host(t):
    assert t.is_cuda
    t = t.cpu()
    return np.array((t.float() if t.dtype == ember.bfloat16 else t).numpy())


def expect_same(got, want, reduced=1):
    """`got` (CUDA) matches `want` (CPU): dtype, shape, values (float within a
    tolerance that grows with the number of elements combined)."""
    if isinstance(want, (tuple, list)):
        for g, w in zip(got, want):
            expect_same(g, w, reduced)
        return
    assert got.dtype == want.dtype and tuple(got.shape) == tuple(want.shape)
    g, w = host(got), np.array((want.float() if want.dtype == ember.bfloat16 else want).numpy())
    if want.dtype in (ember.float16, ember.bfloat16):
        np.testing.assert_allclose(g, w, rtol=1e-2, atol=1e-2 * np.sqrt(reduced), equal_nan=True)
    elif want.dtype in (ember.float32, ember.float64):
        eps = 1e-5 if want.dtype == ember.float32 else 1e-12
        np.testing.assert_allclose(g, w, rtol=eps * 10, atol=eps * np.sqrt(reduced) * 10, equal_nan=True)
    else:
        np.testing.assert_array_equal(g, w)


def run(op, x, dim, keepdim):
    f = getattr(ember, op)
    if dim is None:
        return f(x) if not keepdim else f(x, None, True) if op not in ("amax", "amin") else f(x, [], True)
    return f(x, list(dim) if isinstance(dim, tuple) else dim, keepdim)


def compare(op, x_cpu, dim=None, keepdim=False):
    want = run(op, x_cpu, dim, keepdim)
    got = run(op, x_cpu.cuda(), dim, keepdim)
    n = x_cpu.numel() // max(want.numel(), 1)
    expect_same(got, want, n)


CASES = [((), None), ((), 0), ((7,), 0), ((7,), None), ((5, 6), 0), ((5, 6), 1), ((5, 6), (0, 1)),
         ((3, 4, 5), 0), ((3, 4, 5), 1), ((3, 4, 5), 2), ((3, 4, 5), (0, 2)), ((3, 4, 5), (1, 2)),
         ((2, 3, 4, 5), (1, 3)), ((2, 3, 4, 5), None), ((1, 5, 1), 0), ((1, 5, 1), (0, 2)), ((4, 1, 3), 1),
         ((33, 65), 1), ((65, 33), 0), ((300, 3), 1), ((3, 300), 0)]


@pytest.mark.parametrize("op", LIST_DIMS + ONE_DIM)
@pytest.mark.parametrize("dtype", ALL)
def test_every_op_dtype_and_dims(op, dtype):
    rng = np.random.default_rng(0)
    for shape, dim in CASES:
        if op in ONE_DIM and isinstance(dim, tuple):
            continue
        x = tensor(values(shape, dtype, rng, op), dtype)
        for keepdim in (False, True):
            compare(op, x, dim, keepdim)


def layouts(a, dtype):
    """Non-contiguous views holding `a`'s values: transposed, strided, permuted, offset."""
    yield ember.transpose(tensor(np.ascontiguousarray(a.T), dtype), 0, 1)
    base = tensor(np.repeat(a, 2, axis=0), dtype)
    yield ember.slice(base, 0, None, None, 2)
    yield ember.slice(tensor(np.concatenate([a[:1], a]), dtype), 0, 1)   # offset by a row
    flat = tensor(np.concatenate([[a.flat[0]], a.ravel()]), dtype)
    yield ember.slice(flat, 0, 1).reshape(a.shape)                           # offset by one element: unaligned


@pytest.mark.parametrize("op", ["sum", "amax", "prod", "any"])
@pytest.mark.parametrize("dtype", ["bool", "int8", "int32", "float16", "float32", "float64"])
def test_non_contiguous_inputs(op, dtype):
    rng = np.random.default_rng(1)
    a = values((24, 37), dtype, rng, op)
    for x in layouts(a, dtype):
        for dim in (0, 1, None):
            compare(op, x, dim, False)
    cube = tensor(values((4, 5, 6), dtype, rng, op), dtype)
    for perm in ((2, 0, 1), (1, 2, 0)):
        for dim in (0, 1, 2, None):
            compare(op, ember.permute(cube, list(perm)), dim, True)
    row = tensor(values((1, 40), dtype, rng, op), dtype)
    for dim in (0, 1, None):
        compare(op, row.expand(30, 40), dim, False)                    # stride 0 dims


@pytest.mark.parametrize("op", ["sum", "amax", "amin", "prod", "all", "any"])
def test_empty_inputs(op):
    z = tensor(np.zeros((0, 3)), "float32")
    for dim in (1,) if op in ("amax", "amin") else (0, 1, None):
        compare(op, z, dim, False)
        compare(op, z, dim, True)
    if op in ("amax", "amin"):
        for x in (z, z.cuda()):
            with pytest.raises(IndexError, match=rf"{op}\(\): Expected reduction dim 0 to have non-zero size"):
                getattr(ember, op)(x, [0])
            with pytest.raises(RuntimeError, match="Expected reduction dim to be specified"):
                getattr(ember, op)(x)


@pytest.mark.parametrize("shape,dim", [((3, 1_100_000), 1), ((1_100_000,), None), ((1_100_000, 3), 0),
                                       ((200_000, 5), 1), ((200_000, 33), 1), ((16, 1_000_000), 1),
                                       ((4096, 4096), 0), ((4096, 4096), 1), ((4096, 4096), None),
                                       ((7, 300_001), 1), ((300_001, 7), 0), ((5, 7, 40_000), (0, 2))])
@pytest.mark.parametrize("op,dtype", [("sum", "float32"), ("sum", "int32"), ("amax", "float32"),
                                      ("amin", "int8"), ("any", "bool"), ("sum", "float64")])
def test_long_and_many_rows(shape, dim, op, dtype):
    if op == "any" and isinstance(dim, tuple):
        dim = dim[1]
    x = tensor(values(shape, dtype, np.random.default_rng(2), op), dtype)
    compare(op, x, dim, False)
    if op == "sum" and dtype == "float32":
        compare(op, ember.transpose(x.reshape(shape[0], -1), 0, 1), 0, False)


def test_sum_of_many_floats_is_deterministic_and_accurate():
    a = np.random.default_rng(3).standard_normal(10_000_000).astype(np.float32)
    g = ember.from_numpy(a).cuda()
    first = ember.sum(g).item()
    assert all(ember.sum(g).item() == first for _ in range(5))           # same bits every time
    assert abs(first - a.astype(np.float64).sum()) < 1e-3 * np.sqrt(a.size)


def test_nan_propagates_in_amax_amin():
    a = np.random.default_rng(4).standard_normal((50, 3000)).astype(np.float32)
    a[7, 1234] = np.nan
    a[:, 5] = np.nan
    x = tensor(a, "float32")
    for op in ("amax", "amin"):
        for dim in (0, 1, None):
            compare(op, x, dim, False)
    compare("sum", x, 1, False)


def test_over_two_to_the_31_elements():
    rows, cols = 1 << 16, (1 << 15) + 8
    try:
        x = ember.zeros((rows, cols), dtype=ember.int8, device="cuda")
    except RuntimeError as e:
        pytest.skip(f"not enough GPU memory: {e}")
    part = ember.slice(x, 1, 0, cols - 6)                               # not coalescable: 2^31 + 131072 elements
    assert part.numel() > 2 ** 31
    ember.narrow(ember.narrow(part, 0, rows - 1, 1), 1, cols - 7, 1).fill_(7)
    ember.narrow(ember.narrow(part, 0, rows - 2, 1), 1, 3, 1).fill_(-5)
    assert ember.amax(part).item() == 7 and ember.amin(part).item() == -5
    assert ember.any(part).item() is True and ember.all(part).item() is False
    assert ember.argmax(part).item() == (rows - 1) * (cols - 6) + cols - 7
    assert ember.amax(part, [0]).cpu()[cols - 7].item() == 7
    assert ember.sum(ember.amax(part, [1]), None).item() == 7
    del x, part


def test_dtype_and_out_arguments():
    x = tensor(np.random.default_rng(10).integers(-9, 9, size=(6, 50)), "int16")
    expect_same(ember.sum(x.cuda(), [1], dtype=ember.float64), ember.sum(x, [1], dtype=ember.float64), 50)
    expect_same(ember.prod(x.cuda(), 0, dtype=ember.float32), ember.prod(x, 0, dtype=ember.float32), 6)
    out = ember.empty(0, dtype=ember.int64, device="cuda")
    r = ember.sum(x.cuda(), [0], out=out)
    assert r.is_cuda and tuple(out.shape) == (50,)
    expect_same(out, ember.sum(x, [0]))


# ---------------------------------------------------------------- composites
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_mean_var_std(dtype):
    x = tensor(np.random.default_rng(5).standard_normal((6, 7, 8)), dtype)
    g = x.cuda()
    for dim in (None, [0], [1, 2], [-1]):
        for keepdim in (False, True):
            n = x.numel() // ember.mean(x, dim, keepdim).numel()
            expect_same(ember.mean(g, dim, keepdim), ember.mean(x, dim, keepdim), n)
            for correction in (None, 0, 1, 2):
                kw = {} if correction is None else {"correction": correction}
                expect_same(ember.var(g, dim, keepdim=keepdim, **kw), ember.var(x, dim, keepdim=keepdim, **kw), n)
                expect_same(ember.std(g, dim, keepdim=keepdim, **kw), ember.std(x, dim, keepdim=keepdim, **kw), n)
    expect_same(ember.mean(tensor(np.arange(10), "int64").cuda(), dtype=ember.float32),
                ember.mean(tensor(np.arange(10), "int64"), dtype=ember.float32), 10)


def test_whole_max_min_and_unchecked_integer_division():
    x = tensor(np.random.default_rng(6).standard_normal((40, 50)), "float32")
    expect_same(ember.max(x.cuda()), ember.max(x))
    expect_same(ember.min(x.cuda()), ember.min(x))
    with pytest.raises(RuntimeError, match="max"):
        ember.max(ember.zeros(0, device="cuda"))
    a = tensor(np.arange(1, 13).reshape(3, 4), "int64").cuda()
    b = tensor(np.array([1, 2, 3, 0]), "int64").cuda()
    # As PyTorch's CUDA ops: no check (it would cost a sync per division), no error.
    assert ember.floor_divide(a, b).shape == (3, 4)
    expect_same(ember.floor_divide(a, a), ember.floor_divide(a.cpu(), a.cpu()))


# ---------------------------------------------------------------- max/min(dim), argmax/argmin
@pytest.mark.parametrize("dtype", ALL)
def test_max_min_dim_values_and_indices(dtype):
    rng = np.random.default_rng(7)
    for shape in ((), (9,), (6, 7), (3, 4, 5), (2, 1, 300), (1000, 3), (3, 5000)):
        a = rng.integers(0, 3, size=shape) if dtype != "bool" else rng.random(shape) < 0.5   # many ties
        x = tensor(a, dtype)
        for d in range(-max(len(shape), 1), max(len(shape), 1)):
            for keepdim in (False, True):
                for op in ("max", "min"):
                    expect_same(getattr(ember, op)(x.cuda(), d, keepdim), getattr(ember, op)(x, d, keepdim))
                    if dtype != "bool":
                        for arg in ("argmax", "argmin"):
                            expect_same(getattr(ember, arg)(x.cuda(), d, keepdim), getattr(ember, arg)(x, d, keepdim))
        if dtype != "bool":
            for arg in ("argmax", "argmin"):
                expect_same(getattr(ember, arg)(x.cuda()), getattr(ember, arg)(x))
                expect_same(getattr(ember, arg)(x.cuda(), None, True), getattr(ember, arg)(x, None, True))


@pytest.mark.parametrize("dtype", FLOATS)
def test_max_min_dim_nan_and_layouts(dtype):
    rng = np.random.default_rng(8)
    a = rng.integers(-4, 4, size=(64, 2000)).astype(np.float64)
    a[3, [10, 500, 1999]] = np.nan
    a[[0, 40], 7] = np.nan
    for x in [tensor(a, dtype)] + list(layouts(a, dtype)):
        for d in (0, 1):
            for op in ("max", "min"):
                expect_same(getattr(ember, op)(x.cuda(), d), getattr(ember, op)(x, d))
            for arg in ("argmax", "argmin"):
                expect_same(getattr(ember, arg)(x.cuda(), d), getattr(ember, arg)(x, d))
        for arg in ("argmax", "argmin"):
            expect_same(getattr(ember, arg)(x.cuda()), getattr(ember, arg)(x))
    long = np.zeros(3_000_000, np.float32)
    long[[5, 2_000_000]] = 9
    long[[17, 2_500_000]] = -9
    x = tensor(long, "float32").cuda()
    assert ember.argmax(x).item() == 5 and ember.argmin(x).item() == 17
    long[1_000_000] = np.nan
    assert ember.argmax(tensor(long, "float32").cuda()).item() == 1_000_000


def test_index_reduction_errors_on_device():
    z = ember.zeros((0, 3), device="cuda")
    for op in ("max", "min", "argmax", "argmin"):
        with pytest.raises(IndexError, match=rf"{op}\(\): Expected reduction dim 0 to have non-zero size"):
            getattr(ember, op)(z, 0)
        r = getattr(ember, op)(z, 1)
        r = r[1] if isinstance(r, tuple) else r
        assert tuple(r.shape) == (0,) and r.is_cuda
    with pytest.raises(RuntimeError, match="argmax"):
        ember.argmax(z)
    with pytest.raises(IndexError):
        ember.max(ember.zeros((2, 3), device="cuda"), 2)


# ---------------------------------------------------------------- gradients
def test_gradients_of_reductions_stay_on_device():
    a = np.random.default_rng(9).integers(-3, 3, size=(5, 6)).astype(np.float32)   # ties for amax
    for f in (lambda t: ember.sum(t, [1]).sum(), lambda t: ember.amax(t, [0]).sum(), lambda t: ember.amax(t).sum(),
              lambda t: ember.mean(t, [0, 1]), lambda t: ember.mean(t, [1], True).sum(),
              lambda t: ember.max(t, 1)[0].sum(), lambda t: ember.var(t, [1]).sum()):
        grads = []
        for device in ("cpu", "cuda"):
            x = ember.from_numpy(a.copy()).to(device)
            x.requires_grad_(True)
            f(x).backward()
            assert x.grad.device == x.device
            grads.append(x.grad)
        expect_same(grads[1], grads[0], 30)
