"""Sorting and selection (issue 11): sort/topk/kthvalue/median/mode at realistic sizes and
thread counts, ties, stability and NaN against NumPy and torch; searchsorted, bucketize,
bincount and histc (no harness samples for their sorted/index arguments); errors.
The generic harness (ops.yaml `test:`) covers small shapes, every dtype and autograd."""
import numpy as np
import pytest

import ember
from ember.autograd import gradcheck, gradgradcheck

try:
    import torch
except ImportError:  # the torch comparisons are skipped without it
    torch = None

GRAIN = ember._C._thresholds()["grain_size"]
INSERTION_MAX = ember._C._thresholds()["sort_insertion_max"]
TOPK_SPLIT = ember._C._thresholds()["topk_split_line"]
needs_gpu = pytest.mark.skipif(not ember.cuda.is_available(), reason="needs a CUDA GPU")
needs_torch = pytest.mark.skipif(torch is None, reason="needs torch")
DTYPES = ["float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool"]


def _values(shape, dtype, rng, low=-50, high=50):
    """Random values of `dtype` with many ties (integers in [low, high), as floats for floats)."""
    if dtype == "bool":
        return ember.tensor(rng.random(shape) < 0.5)
    lo = 0 if dtype == "uint8" else low
    a = rng.integers(lo, high, shape).astype(np.float64)
    return ember.tensor(a).to(getattr(ember, dtype))


def _np(t):
    return t.to(ember.float64).numpy() if t.dtype in (ember.float16, ember.bfloat16) else t.numpy()


def _stable_order(a, dim, descending):
    key = -a.astype(np.float64) if descending else a
    return np.argsort(key, axis=dim, kind="stable")


# ---------------------------------------------------------------- sort
# Lines around the insertion-sort cut, the parallel grain, long single rows, inner dims.
SORT_SHAPES = [((INSERTION_MAX,), 0), ((INSERTION_MAX + 1,), 0), ((GRAIN + 3,), 0), ((3, 1000), 1), ((1000, 3), 0), ((5, 7, 300), 1),
               ((400, 200), -1), ((2, 3 * GRAIN), 1), ((1, 1), 0)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,dim", SORT_SHAPES, ids=[f"{s}-dim{d}" for s, d in SORT_SHAPES])
def test_sort_is_stable_with_ties(threads, dtype, shape, dim):
    x = _values(shape, dtype, np.random.default_rng(1))
    a = _np(x)
    for descending in (False, True):
        values, indices = ember.sort(x, dim, descending, stable=True)
        want = _stable_order(a, dim, descending)
        np.testing.assert_array_equal(indices.numpy(), want)
        np.testing.assert_array_equal(_np(values), np.take_along_axis(a, want, dim))
        assert values.dtype == x.dtype and indices.dtype == ember.int64


def test_sort_1e6_float32_matches_numpy(threads):
    a = np.random.default_rng(2).standard_normal(10**6).astype(np.float32)
    values, indices = ember.sort(ember.tensor(a))
    np.testing.assert_array_equal(values.numpy(), np.sort(a))
    np.testing.assert_array_equal(a[indices.numpy()], np.sort(a))
    values, _ = ember.tensor(a).sort(descending=True)
    np.testing.assert_array_equal(values.numpy(), np.sort(a)[::-1])


def test_sort_nan_is_largest_and_zeros_tie():
    x = ember.tensor([1.0, float("nan"), -float("inf"), 0.0, -0.0, float("nan"), float("inf"), 0.0])
    v, i = ember.sort(x)
    assert i.tolist() == [2, 3, 4, 7, 0, 6, 1, 5]  # -0.0 and 0.0 tie, keeping their order
    assert np.isnan(v.numpy()[-2:]).all()
    assert np.signbit(v.numpy()[2])  # values are the input's own elements
    v, i = ember.sort(x, descending=True)
    assert i.tolist() == [1, 5, 6, 0, 3, 4, 7, 2]
    for dtype in ("float16", "bfloat16", "float64"):
        _, i = ember.sort(x.to(getattr(ember, dtype)))
        assert i.tolist() == [2, 3, 4, 7, 0, 6, 1, 5]


def test_sort_extremes_of_integer_types():
    for dtype, np_dtype in (("int64", np.int64), ("int8", np.int8), ("uint8", np.uint8), ("int16", np.int16)):
        info = np.iinfo(np_dtype)
        a = np.array([0, info.max, info.min, -1 if info.min < 0 else 1, info.max, info.min + 1], dtype=np_dtype)
        v, i = ember.sort(ember.tensor(a))
        np.testing.assert_array_equal(v.numpy(), np.sort(a, kind="stable"))
        np.testing.assert_array_equal(i.numpy(), np.argsort(a, kind="stable"))


def test_sort_0d_empty_and_noncontiguous():
    v, i = ember.sort(ember.tensor(3.0))
    assert v.shape == () and v.item() == 3.0 and i.item() == 0
    v, i = ember.sort(ember.zeros(0, 3), 0)
    assert v.shape == (0, 3) and i.shape == (0, 3)
    a = np.random.default_rng(3).standard_normal((6, 50))
    x = ember.tensor(a).t()                      # (50, 6), sorted along the strided dim 0
    v, i = ember.sort(x, 0)
    np.testing.assert_array_equal(v.numpy(), np.sort(a.T, axis=0))
    assert v.is_contiguous()
    with pytest.raises(IndexError, match="Dimension out of range"):
        ember.sort(ember.ones(2, 3), 2)


def test_argsort_and_msort():
    a = np.random.default_rng(4).integers(0, 5, (6, 9))
    x = ember.tensor(a)
    np.testing.assert_array_equal(ember.argsort(x, stable=True).numpy(), np.argsort(a, kind="stable"))
    np.testing.assert_array_equal(x.argsort(0, True, stable=True).numpy(), _stable_order(a, 0, True))
    np.testing.assert_array_equal(ember.msort(x).numpy(), np.sort(a, axis=0))
    out = ember.empty(0, dtype=ember.int64)
    assert ember.msort(x, out=out) is out and out.shape == (6, 9)


@needs_torch
@pytest.mark.parametrize("dtype", DTYPES)
def test_sort_matches_torch(dtype):
    t = torch.randint(-20, 20, (7, 40)).to(getattr(torch, dtype))
    t[0, :5] = 0
    if t.is_floating_point():
        t[1, 3], t[2, 0] = float("nan"), -float("inf")
    x = ember.tensor(t.double().numpy()).to(getattr(ember, dtype))
    for dim in (0, 1):
        for descending in (False, True):
            want = torch.sort(t, dim=dim, descending=descending, stable=True)
            got = ember.sort(x, dim, descending, stable=True)
            np.testing.assert_array_equal(got.indices.numpy(), want.indices.numpy())
            np.testing.assert_array_equal(_np(got.values), want.values.double().numpy())


def test_sort_gradients():
    a = np.random.default_rng(5).standard_normal((3, 6))
    x = ember.tensor(a, dtype=ember.float64, requires_grad=True)
    assert gradcheck(lambda t: ember.sort(t, 0, True).values, (x,))
    assert gradgradcheck(lambda t: ember.sort(t, 1).values, (x,))
    assert gradgradcheck(lambda t: ember.topk(t, 2, 0).values, (x,))
    v = ember.sort(x, 1).values
    v.backward(ember.tensor(np.arange(18.0).reshape(3, 6)))
    order = np.argsort(a, axis=1)
    want = np.zeros_like(a)
    np.put_along_axis(want, order, np.arange(18.0).reshape(3, 6), axis=1)
    np.testing.assert_allclose(x.grad.numpy(), want)


# ---------------------------------------------------------------- topk
TOPK_SHAPES = [((10**6,), 0, 100), ((TOPK_SPLIT - 1,), 0, 100), ((TOPK_SPLIT,), 0, 100), ((2, TOPK_SPLIT), 1, 3), ((4 * GRAIN + 1,), 0, 1), ((3, 5 * GRAIN), 1, 7), ((300, 700), 1, 10),
               ((700, 30), 0, 30), ((2, 300, 4), 1, 299), ((5,), 0, 5), ((5,), 0, 0)]


@pytest.mark.parametrize("shape,dim,k", TOPK_SHAPES, ids=[f"{s}-dim{d}-k{k}" for s, d, k in TOPK_SHAPES])
def test_topk_matches_numpy(threads, shape, dim, k):
    a = np.random.default_rng(6).standard_normal(shape).astype(np.float32)
    x = ember.tensor(a)
    for largest in (True, False):
        v, i = ember.topk(x, k, dim, largest)
        order = np.take(_stable_order(a, dim, largest), np.arange(k), axis=dim)
        np.testing.assert_array_equal(v.numpy(), np.take_along_axis(a, order, dim))
        np.testing.assert_array_equal(i.numpy(), order)


def test_topk_ties_nan_and_integers(threads):
    rng = np.random.default_rng(7)
    for dtype in DTYPES:
        x = _values((3, 5 * GRAIN), dtype, rng, -3, 3)
        a = _np(x)
        v, i = ember.topk(x, 50, 1)
        want = -np.sort(-a.astype(np.float64), axis=1)[:, :50]
        np.testing.assert_array_equal(_np(v).astype(np.float64), want)
        np.testing.assert_array_equal(np.take_along_axis(a, i.numpy(), 1).astype(np.float64), want)
        assert all(len(set(r)) == 50 for r in i.numpy().tolist())   # distinct indices
    v, i = ember.topk(ember.tensor([1.0, float("nan"), -float("inf"), 0.0]), 2)
    assert np.isnan(v[0].item()) and v[1].item() == 1.0 and i.tolist() == [1, 0]
    v, i = ember.topk(ember.tensor([1.0, float("nan"), -float("inf"), 0.0]), 2, largest=False)
    assert v.tolist() == [-float("inf"), 0.0] and i.tolist() == [2, 3]


@pytest.mark.parametrize("k", [1, 5, 16])
def test_small_k_topk_on_rows_with_ties_and_nan(threads, k):
    # The small-k path (k <= kTopkSmallK) screens 16 elements at a time, unit stride or not.
    rng = np.random.default_rng(8)
    a = rng.integers(-20, 20, size=(64, 1000)).astype(np.float32)
    a[rng.random(a.shape) < 0.01] = np.nan
    for dim, arr in ((1, a), (0, np.ascontiguousarray(a.T))):
        for largest in (True, False):
            v, i = ember.topk(ember.tensor(arr), k, dim, largest)
            keyed = np.where(np.isnan(arr), np.inf, arr).astype(np.float64)  # NaN sorts above every number
            want = np.take(np.sort(-keyed if largest else keyed, axis=dim), np.arange(k), axis=dim)
            got = _np(v).astype(np.float64)
            got = np.where(np.isnan(got), np.inf, got)
            np.testing.assert_array_equal(got, -want if largest else want)
            np.testing.assert_array_equal(np.take_along_axis(arr, i.numpy(), dim), _np(v))


def test_topk_errors_and_edge_shapes():
    with pytest.raises(RuntimeError, match="selected index k out of range"):
        ember.topk(ember.ones(2, 5), 6)
    with pytest.raises(RuntimeError, match="selected index k out of range"):
        ember.topk(ember.ones(5), -1)
    v, i = ember.topk(ember.tensor(3.0), 1)
    assert v.shape == () and v.item() == 3.0 and i.item() == 0
    v, i = ember.topk(ember.zeros(0, 4), 2)
    assert v.shape == (0, 2)
    v, i = ember.tensor([[1.0, 5.0, 2.0]]).topk(2, sorted=False)
    assert sorted(v.tolist()[0]) == [2.0, 5.0]


@needs_torch
def test_topk_matches_torch_without_ties():
    t = torch.randn(6, 500, dtype=torch.float64)
    x = ember.tensor(t.numpy())
    for k, dim, largest in ((5, 1, True), (3, 0, False), (500, 1, False)):
        want = torch.topk(t, k, dim, largest)
        got = ember.topk(x, k, dim, largest)
        np.testing.assert_array_equal(got.values.numpy(), want.values.numpy())
        np.testing.assert_array_equal(got.indices.numpy(), want.indices.numpy())


# ---------------------------------------------------------------- kthvalue, median, nanmedian, mode
SELECT_SHAPES = [((GRAIN + 5,), 0), ((300, 401), 1), ((401, 300), 0), ((3, 50, 4), 1), ((1,), 0)]


@pytest.mark.parametrize("shape,dim", SELECT_SHAPES, ids=[f"{s}-dim{d}" for s, d in SELECT_SHAPES])
def test_kthvalue_and_median_match_numpy(threads, shape, dim):
    a = np.random.default_rng(8).standard_normal(shape)
    x = ember.tensor(a)
    n = shape[dim]
    s = np.sort(a, axis=dim)
    for k in {1, n, (n + 1) // 2}:
        v, i = ember.kthvalue(x, k, dim)
        np.testing.assert_array_equal(v.numpy(), np.take(s, k - 1, axis=dim))
        np.testing.assert_array_equal(np.take_along_axis(a, np.expand_dims(i.numpy(), dim), dim).squeeze(dim), v.numpy())
    v, i = ember.median(x, dim, keepdim=True)
    np.testing.assert_array_equal(v.numpy(), np.take(s, [(n - 1) // 2], axis=dim))
    assert ember.median(x).item() == np.sort(a, axis=None)[(a.size - 1) // 2]
    v, _ = ember.nanmedian(x, dim)
    np.testing.assert_array_equal(v.numpy(), np.take(s, (n - 1) // 2, axis=dim))


def test_median_nan_handling():
    x = ember.tensor([[1.0, float("nan"), 2.0, float("nan")], [4.0, 1.0, 3.0, 2.0], [float("nan")] * 4])
    v, i = ember.median(x, 1)
    assert np.isnan(v[0].item()) and i.tolist() == [1, 3, 0] and v[1].item() == 2.0
    v, i = ember.nanmedian(x, 1)
    assert v[0].item() == 1.0 and i[0].item() == 0 and v[1].item() == 2.0
    assert np.isnan(v[2].item()) and i[2].item() == 0
    assert np.isnan(ember.median(x).item())
    assert ember.nanmedian(x).item() == 2.0
    v, i = ember.kthvalue(ember.tensor([2.0, float("nan"), 1.0]), 3)
    assert np.isnan(v.item()) and i.item() == 1
    assert np.isnan(ember.median(ember.tensor([])).item())


@needs_torch
def test_selection_matches_torch():
    t = torch.randn(5, 9, dtype=torch.float64)
    t[1, 2] = float("nan")
    x = ember.tensor(t.numpy())
    for name, args in (("kthvalue", (3, 1)), ("kthvalue", (2, 0, True)), ("median", (1,)), ("median", (0, True)),
                       ("nanmedian", (1,)), ("mode", (1,)), ("mode", (0,))):
        want, got = getattr(torch, name)(t, *args), getattr(ember, name)(x, *args)
        np.testing.assert_array_equal(got.values.numpy(), want.values.numpy(), err_msg=name)
        np.testing.assert_array_equal(got.indices.numpy(), want.indices.numpy(), err_msg=name)
    for name in ("median", "nanmedian"):
        assert np.isclose(getattr(ember, name)(x).item(), getattr(torch, name)(t).item(), equal_nan=True)


def test_mode_ties_and_dtypes(threads):
    rng = np.random.default_rng(9)
    for dtype in DTYPES:
        x = _values((40, 300), dtype, rng, -5, 5)
        a = _np(x)
        v, i = ember.mode(x, 1)
        for r in range(40):
            uniq, counts = np.unique(a[r], return_counts=True)
            want = uniq[np.argmax(counts)]       # the smallest of the most frequent, as torch
            assert _np(v)[r] == want and i[r].item() == np.nonzero(a[r] == want)[0][-1]
    v, i = ember.mode(ember.tensor([[1.0, 3, 3, 2, 2], [5, 5, 1, 1, 0]]), 1)
    assert v.tolist() == [2.0, 1.0] and i.tolist() == [4, 3]


def test_selection_errors_and_0d():
    with pytest.raises(RuntimeError, match=r"kthvalue\(\): selected number k out of range for dimension 1"):
        ember.kthvalue(ember.ones(2, 5), 6)
    with pytest.raises(RuntimeError, match="selected number k out of range"):
        ember.kthvalue(ember.ones(2, 5), 0)
    for name in ("median", "nanmedian", "mode"):
        with pytest.raises(IndexError, match=f"{name}.*Expected reduction dim 1 to have non-zero size"):
            getattr(ember, name)(ember.zeros(3, 0), 1)
        v, i = getattr(ember, name)(ember.tensor(3.0), 0)
        assert v.item() == 3.0 and i.item() == 0 and v.shape == ()
    v, i = ember.median(ember.zeros(0, 3), 1)
    assert v.shape == (0,)
    v, i = ember.kthvalue(ember.tensor(3.0), 1)
    assert v.item() == 3.0


def test_selection_gradients():
    a = np.random.default_rng(10).standard_normal((4, 5))
    x = ember.tensor(a, dtype=ember.float64, requires_grad=True)
    for f in (lambda t: ember.kthvalue(t, 2, 1).values, lambda t: ember.median(t, 0).values,
              lambda t: ember.nanmedian(t, 1, True).values, lambda t: ember.mode(t, 1).values,
              lambda t: ember.median(t), lambda t: ember.nanmedian(t)):
        assert gradcheck(f, (x,))
        assert gradgradcheck(f, (x,))
    # median of all splits the gradient over tied medians, as torch's
    y = ember.tensor([1.0, 2.0, 2.0, 3.0], dtype=ember.float64, requires_grad=True)
    ember.median(y).backward()
    assert y.grad.tolist() == [0.0, 0.5, 0.5, 0.0]


# ---------------------------------------------------------------- searchsorted, bucketize
@pytest.mark.parametrize("right", [False, True])
def test_searchsorted_matches_numpy(threads, right):
    rng = np.random.default_rng(11)
    bounds = np.sort(rng.integers(0, 1000, 5000)).astype(np.float32)
    values = rng.integers(-5, 1005, (3, GRAIN)).astype(np.float32)
    side = "right" if right else "left"
    got = ember.searchsorted(ember.tensor(bounds), ember.tensor(values), right=right)
    np.testing.assert_array_equal(got.numpy(), np.searchsorted(bounds, values, side=side))
    got = ember.searchsorted(ember.tensor(bounds), ember.tensor(values), side=side, out_int32=True)
    assert got.dtype == ember.int32
    np.testing.assert_array_equal(got.numpy(), np.searchsorted(bounds, values, side=side))
    got = ember.bucketize(ember.tensor(values), ember.tensor(bounds), right=right)
    np.testing.assert_array_equal(got.numpy(), np.searchsorted(bounds, values, side=side))


def test_searchsorted_rows_sorter_scalars_and_dtypes():
    b = np.sort(np.random.default_rng(12).standard_normal((3, 8)), axis=1)
    v = np.random.default_rng(13).standard_normal((3, 5))
    got = ember.searchsorted(ember.tensor(b), ember.tensor(v))
    np.testing.assert_array_equal(got.numpy(), [np.searchsorted(b[r], v[r]) for r in range(3)])
    unsorted = np.array([3.0, 1.0, 2.0, 5.0])
    sorter = np.argsort(unsorted)
    got = ember.searchsorted(ember.tensor(unsorted), ember.tensor([2.0, 4.0, 9.0]), sorter=ember.tensor(sorter))
    assert got.tolist() == np.searchsorted(unsorted, [2.0, 4.0, 9.0], sorter=sorter).tolist()
    s = ember.searchsorted(ember.tensor([1, 3, 5]), 3, right=True)
    assert s.shape == () and s.item() == 2
    assert ember.searchsorted(ember.tensor([1, 3, 5]), 3.5).item() == 2
    assert ember.searchsorted(ember.tensor([1, 3, 5]), ember.tensor([3.5])).tolist() == [2]
    assert ember.bucketize(3, ember.tensor([1, 3, 5])).item() == 1
    for dtype in ("float16", "bfloat16", "int8", "uint8", "int16", "int32", "float64"):
        e = getattr(ember, dtype)
        got = ember.searchsorted(ember.tensor([1, 2, 4, 4, 7]).to(e), ember.tensor([0, 4, 5, 9]).to(e))
        assert got.tolist() == [0, 2, 4, 5], dtype
    got = ember.searchsorted(ember.tensor([1.0, float("nan")]), ember.tensor([float("nan"), 5.0]))
    assert got.tolist() == [2, 2]   # as torch
    assert ember.searchsorted(ember.zeros(0), ember.tensor([1.0])).tolist() == [0]


def test_searchsorted_errors():
    b = ember.tensor([1, 3, 5])
    with pytest.raises(RuntimeError, match="side and right can't be set to opposites"):
        ember.searchsorted(b, ember.tensor([3]), side="left", right=True)
    with pytest.raises(RuntimeError, match="side can only be 'left' or 'right' but got foo"):
        ember.searchsorted(b, ember.tensor([3]), side="foo")
    with pytest.raises(RuntimeError, match=r"boundaries tensor \[2, 2\] and input value tensor \[1, 3\]"):
        ember.searchsorted(ember.ones(2, 2), ember.ones(1, 3))
    with pytest.raises(RuntimeError, match="positive dimension"):
        ember.searchsorted(ember.tensor(1), ember.tensor([2]))
    with pytest.raises(RuntimeError, match="scalar only when boundaries tensor dimension is 1"):
        ember.searchsorted(ember.ones(1, 2), ember.tensor(1.0))
    with pytest.raises(RuntimeError, match="sorter must be a tensor of long dtype"):
        ember.searchsorted(b, ember.tensor([3]), sorter=ember.tensor([0, 1, 2], dtype=ember.int32))
    with pytest.raises(RuntimeError, match="boundary and sorter must have the same size"):
        ember.searchsorted(b, ember.tensor([3]), sorter=ember.tensor([0, 1]))
    with pytest.raises(RuntimeError, match="sorter index out of range"):
        ember.searchsorted(b, ember.tensor([3]), sorter=ember.tensor([0, 1, 3]))
    with pytest.raises(RuntimeError, match=r"bucketize.*boundaries tensor must be 1 dimension, but got dim\(2\)"):
        ember.bucketize(ember.tensor([1.0]), ember.ones(1, 2))
    with pytest.raises(NotImplementedError, match="searchsorted"):
        ember.searchsorted(ember.tensor([True, False]), ember.tensor([True]))


@needs_torch
def test_searchsorted_matches_torch():
    tb = torch.sort(torch.randint(0, 20, (4, 30)), 1).values
    tv = torch.randint(-2, 22, (4, 11))
    eb, ev = ember.tensor(tb.numpy()), ember.tensor(tv.numpy())
    for right in (False, True):
        want = torch.searchsorted(tb, tv, right=right)
        np.testing.assert_array_equal(ember.searchsorted(eb, ev, right=right).numpy(), want.numpy())
        want = torch.bucketize(tv, tb[0], right=right)
        np.testing.assert_array_equal(ember.bucketize(ev, eb[0], right=right).numpy(), want.numpy())


# ---------------------------------------------------------------- bincount, histc
def test_bincount_matches_numpy(threads):
    rng = np.random.default_rng(14)
    a = rng.integers(0, 300, 3 * GRAIN + 11)
    w = rng.standard_normal(a.size)
    np.testing.assert_array_equal(ember.bincount(ember.tensor(a)).numpy(), np.bincount(a))
    got = ember.bincount(ember.tensor(a), ember.tensor(w))
    assert got.dtype == ember.float64
    np.testing.assert_allclose(got.numpy(), np.bincount(a, w), rtol=1e-12, atol=1e-9)
    got = ember.tensor(a.astype(np.uint8) % 7).bincount(minlength=10)
    assert got.tolist() == np.bincount(a.astype(np.uint8) % 7, minlength=10).tolist()
    got = ember.bincount(ember.tensor([1, 1, 3], dtype=ember.int32), ember.tensor([1.0, 2.0, 3.0]))
    assert got.dtype == ember.float32 and got.tolist() == [0.0, 3.0, 0.0, 3.0]
    got = ember.bincount(ember.tensor([1, 2]), ember.tensor([1, 2], dtype=ember.int32))
    assert got.dtype == ember.float64
    assert ember.bincount(ember.tensor([], dtype=ember.int64)).tolist() == []
    assert ember.bincount(ember.tensor([], dtype=ember.int64), minlength=3).tolist() == [0, 0, 0]


def test_bincount_errors():
    with pytest.raises(RuntimeError, match="bincount only supports 1-d non-negative integral inputs"):
        ember.bincount(ember.tensor([1, -1]))
    with pytest.raises(RuntimeError, match="bincount only supports 1-d non-negative integral inputs"):
        ember.bincount(ember.tensor([[1]]))
    with pytest.raises(NotImplementedError, match="bincount"):
        ember.bincount(ember.tensor([1.0]))
    with pytest.raises(NotImplementedError, match="bincount"):
        ember.bincount(ember.tensor([True]))
    with pytest.raises(RuntimeError, match="weights should be 1-d and have the same length as input"):
        ember.bincount(ember.tensor([1, 2]), ember.tensor([1.0]))
    with pytest.raises(RuntimeError, match="minlength should be >= 0"):
        ember.bincount(ember.tensor([1, 2]), minlength=-1)


@needs_torch
def test_histc_matches_torch(threads):
    t = torch.randn(3 * GRAIN + 5)
    x = ember.tensor(t.numpy())
    for kwargs in ({}, {"bins": 7, "min": -1, "max": 1}, {"bins": 1}, {"bins": 1000, "min": -3, "max": 0.5}):
        np.testing.assert_array_equal(ember.histc(x, **kwargs).numpy(), torch.histc(t, **kwargs).numpy())
    t = torch.tensor([0.1, 0.2, 0.3, 0.7, 1.0, float("nan"), 2.0])
    np.testing.assert_array_equal(ember.histc(ember.tensor(t.numpy()), 10, 0, 1).numpy(),
                                  torch.histc(t, 10, 0, 1).numpy())
    t64 = torch.randn(1000, dtype=torch.float64)
    np.testing.assert_array_equal(ember.histc(ember.tensor(t64.numpy()), 9).numpy(), torch.histc(t64, 9).numpy())
    for dtype in ("float16", "bfloat16"):   # torch rounds each step to 16 bits: compare totals only
        got = ember.histc(x[:200].to(getattr(ember, dtype)), 5)   # counts exact in 16 bits
        assert got.dtype == getattr(ember, dtype) and got.to(ember.float64).sum().item() == 200
    assert ember.histc(ember.tensor([2.0, 2.0]), 4).tolist() == [0.0, 0.0, 2.0, 0.0]
    assert ember.histc(ember.tensor([]), 4).tolist() == [0.0] * 4
    out = ember.empty(0)
    assert ember.histc(x, 3, out=out) is out and out.shape == (3,)


def test_histc_errors():
    with pytest.raises(RuntimeError, match="bins must be > 0"):
        ember.histc(ember.tensor([1.0, 2.0]), bins=0)
    with pytest.raises(RuntimeError, match="max must be larger than min"):
        ember.histc(ember.tensor([1.0, 2.0]), min=3, max=1)
    with pytest.raises(RuntimeError, match=r"range of \[1, inf\] is not finite"):
        ember.histc(ember.tensor([1.0, float("inf")]))
    with pytest.raises(NotImplementedError, match="histc"):
        ember.histc(ember.tensor([1, 2]))


# ---------------------------------------------------------------- CUDA slots
CUDA_CALLS = {"sort": lambda x: ember.sort(x), "topk": lambda x: ember.topk(x, 1),
              "kthvalue": lambda x: ember.kthvalue(x, 1), "median": lambda x: ember.median(x),
              "nanmedian": lambda x: ember.nanmedian(x, 0), "mode": lambda x: ember.mode(x),
              "histc": lambda x: ember.histc(x), "searchsorted": lambda x: ember.searchsorted(x, x),
              "bincount": lambda x: ember.bincount(x.long())}


@needs_gpu
@pytest.mark.parametrize("name", sorted(CUDA_CALLS))
def test_cuda_slot_names_the_op_and_device(name):
    with pytest.raises(NotImplementedError, match=f"{name}: .*not implemented on cuda"):
        CUDA_CALLS[name](ember.ones(3).cuda())


# argsort and bucketize give indices: inside a differentiable expression they are constants
# (tests/test_higher_order.py gradgradchecks these, test_index_results_jvp checks their JVPs).
_DISTINCT = [0.3, -1.2, 2.5, 0.8, 1.7]
INDEX_RESULT_CASES = {
    "argsort": [(lambda a: ember.argsort(a).to(ember.float64) * a,
                 lambda: (ember.tensor(_DISTINCT, dtype=ember.float64, requires_grad=True),), {})],
    "bucketize": [(lambda a: ember.bucketize(a, ember.tensor([0.0, 1.0, 2.0], dtype=ember.float64)).to(ember.float64) * a,
                   lambda: (ember.tensor(_DISTINCT, dtype=ember.float64, requires_grad=True),), {})],
}


@pytest.mark.parametrize("name", sorted(INDEX_RESULT_CASES))
def test_index_results_jvp(name):
    import ember.autograd.forward_ad as fwAD
    for fn, inputs, _ in INDEX_RESULT_CASES[name]:
        (x,) = [t.detach() for t in inputs()]
        v = ember.tensor([0.5, -1.0, 0.25, 2.0, -0.75], dtype=ember.float64)
        with fwAD.dual_level():
            got = fwAD.unpack_dual(fn(fwAD.make_dual(x, v))).tangent.numpy()
        eps = 1e-6
        expected = (fn(x + eps * v) - fn(x - eps * v)).numpy() / (2 * eps)
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-7)
