"""unique, unique_consecutive (issue 11) against NumPy and torch: every dtype, NaN and
signed zeros, the dim= forms, 0-d/empty inputs, large inputs at 1-3 threads around the
parallel grain, errors and autograd; combinations' values and gradients beyond the
harness; histogram against NumPy and torch."""
import numpy as np
import pytest

import ember
from ember.autograd import gradcheck, gradgradcheck
from test_sort import DTYPES, _values

try:
    import torch
except ImportError:  # the torch comparisons are skipped without it
    torch = None

GRAIN = ember._C._thresholds()["grain_size"]
needs_torch = pytest.mark.skipif(torch is None, reason="needs torch")


def _np(t):
    return t.to(ember.float64).numpy() if t.dtype in (ember.float16, ember.bfloat16) else t.numpy()


def _np_unique_consecutive(a):
    starts = np.r_[True, a[1:] != a[:-1]] if a.size else np.zeros(0, bool)
    runs = np.cumsum(starts) - 1
    return a[starts], runs, np.bincount(runs) if a.size else np.zeros(0, np.int64)


def _check_unique(x, a):
    out, inverse, counts = ember.unique(x, return_inverse=True, return_counts=True)
    want, want_inv, want_counts = np.unique(a, return_inverse=True, return_counts=True)
    assert out.dtype == x.dtype and inverse.dtype == ember.int64 and counts.dtype == ember.int64
    np.testing.assert_array_equal(_np(out), want)
    assert tuple(inverse.shape) == a.shape
    np.testing.assert_array_equal(inverse.numpy(), want_inv.reshape(a.shape))
    np.testing.assert_array_equal(counts.numpy(), want_counts)


# ---------------------------------------------------------------- unique without a dim
@pytest.mark.parametrize("dtype", DTYPES)
def test_unique_matches_numpy(dtype):
    x = _values((40, 70), dtype, np.random.default_rng(15))
    a = _np(x)
    _check_unique(x, a)
    want = np.unique(a)
    np.testing.assert_array_equal(_np(ember.unique(x)), want)
    np.testing.assert_array_equal(_np(x.unique(sorted=False)), want)  # sorted anyway, as PyTorch's CPU
    out, counts = ember.unique(x, return_counts=True)
    np.testing.assert_array_equal(counts.numpy(), np.unique(a, return_counts=True)[1])
    out, inverse = x.unique(return_inverse=True)
    np.testing.assert_array_equal(_np(out[inverse]), a)


@pytest.mark.parametrize("n", [GRAIN - 1, 2 * GRAIN, 2 * GRAIN + 7, 3 * GRAIN + 1, 1_000_000])
@pytest.mark.parametrize("dtype", ["float32", "int64", "int8", "float16"])
def test_unique_large_inputs_at_each_thread_count(threads, n, dtype):
    rng = np.random.default_rng(n)
    high = 50_000 if dtype in ("float32", "int64") else 100
    x = _values((n,), dtype, rng, -high, high)
    _check_unique(x, _np(x))
    x = x[::3]  # non-contiguous
    _check_unique(x, _np(x))


def test_unique_of_distinct_and_constant_inputs(threads):
    a = np.random.default_rng(3).permutation(5 * GRAIN).astype(np.float64) - 1000.5
    _check_unique(ember.tensor(a), a)
    _check_unique(ember.full((3 * GRAIN,), 7, dtype=ember.int32), np.full(3 * GRAIN, 7, np.int32))
    big = np.array([np.iinfo(np.int64).min, -1, 0, np.iinfo(np.int64).max] * 1000, np.int64)
    _check_unique(ember.tensor(big), big)


def test_unique_nan_and_signed_zero():
    x = ember.tensor([3.0, float("nan"), 1.0, float("nan"), 1.0, -0.0, 0.0])
    out, inverse, counts = ember.unique(x, return_inverse=True, return_counts=True)
    got = out.numpy()
    # Each NaN is its own entry, last; -0.0 and 0.0 are one, shown as the first of them.
    assert got.shape == (5,) and got[0] == 0 and np.signbit(got[0]) and np.isnan(got[3:]).all()
    assert inverse.tolist() == [2, 3, 1, 4, 1, 0, 0] and counts.tolist() == [2, 2, 1, 1, 1]
    assert not np.signbit(ember.unique(ember.tensor([0.0, -0.0])).numpy()[0])
    for dtype in (ember.float16, ember.bfloat16):
        out = ember.unique(x.to(dtype)).to(ember.float32).numpy()
        assert out.shape == (5,) and np.isnan(out[3:]).all()


def test_unique_0d_and_empty():
    out, inverse, counts = ember.unique(ember.tensor(3), return_inverse=True, return_counts=True)
    assert out.tolist() == [3] and inverse.shape == () and inverse.item() == 0 and counts.tolist() == [1]
    out, inverse, counts = ember.unique(ember.tensor([]), return_inverse=True, return_counts=True)
    assert out.shape == (0,) and inverse.shape == (0,) and counts.shape == (0,)
    out, inverse = ember.unique(ember.zeros(2, 0, 3), return_inverse=True)
    assert out.shape == (0,) and inverse.shape == (2, 0, 3)
    # Results not asked for come back empty from the op, as torch._unique2's.
    out, inverse, counts = ember._unique2(ember.tensor([2, 1, 2]))
    assert out.tolist() == [1, 2] and inverse.shape == (0,) and counts.shape == (0,)


# ---------------------------------------------------------------- unique with a dim
@pytest.mark.parametrize("dtype", DTYPES)
def test_unique_dim_matches_numpy(dtype):
    x = _values((6, 3, 2), dtype, np.random.default_rng(16), 0, 2)
    a = _np(x)
    for dim in (0, 1, 2, -1):
        out, inverse, counts = ember.unique(x, dim=dim, return_inverse=True, return_counts=True)
        want, want_inv, want_counts = np.unique(a, axis=dim, return_inverse=True, return_counts=True)
        assert out.dtype == x.dtype
        np.testing.assert_array_equal(_np(out), want)
        np.testing.assert_array_equal(inverse.numpy(), want_inv.reshape(-1))
        np.testing.assert_array_equal(counts.numpy(), want_counts)


def test_unique_dim_large(threads):
    a = np.random.default_rng(4).integers(0, 3, (3 * GRAIN, 4))
    out, inverse, counts = ember.unique(ember.tensor(a), dim=0, return_inverse=True, return_counts=True)
    want, want_inv, want_counts = np.unique(a, axis=0, return_inverse=True, return_counts=True)
    np.testing.assert_array_equal(out.numpy(), want)
    np.testing.assert_array_equal(inverse.numpy(), want_inv.reshape(-1))
    np.testing.assert_array_equal(counts.numpy(), want_counts)


def test_unique_dim_edge_cases():
    x = ember.tensor([[1, 2], [1, 2], [0, 5], [1, 2]])
    assert ember._C._VariableFunctions.unique_dim(x, 0)[0].tolist() == [[0, 5], [1, 2]]
    assert not hasattr(ember, "unique_dim")  # private, as in torch
    out, inverse, counts = ember.unique(ember.zeros(0, 3), dim=0, return_inverse=True, return_counts=True)
    assert out.shape == (0, 3) and inverse.shape == (0,) and counts.shape == (0,)
    nan = float("nan")  # rows holding NaN are all distinct (sorted last, NaN being the largest key)
    out, counts = ember.unique(ember.tensor([[nan, 1.0], [nan, 1.0], [0.0, 1.0]]), dim=0, return_counts=True)
    assert out.shape == (3, 2) and out[0].tolist() == [0.0, 1.0] and counts.tolist() == [1, 1, 1]
    assert np.signbit(ember.unique(ember.tensor([[-0.0, 1.0], [0.0, 1.0]]), dim=0).numpy()[0, 0])
    out = ember.unique(ember.tensor([[3.0, 2.0], [1.0, 2.0]]).t(), dim=1)  # a non-contiguous input
    assert out.tolist() == [[1.0, 3.0], [2.0, 2.0]]


# ---------------------------------------------------------------- unique_consecutive
@pytest.mark.parametrize("dtype", DTYPES)
def test_unique_consecutive_matches_numpy(dtype):
    x = _values((300,), dtype, np.random.default_rng(17), 0, 3)
    a = _np(x)
    out, inverse, counts = ember.unique_consecutive(x, return_inverse=True, return_counts=True)
    want, want_inv, want_counts = _np_unique_consecutive(a)
    assert out.dtype == x.dtype
    np.testing.assert_array_equal(_np(out), want)
    np.testing.assert_array_equal(inverse.numpy(), want_inv)
    np.testing.assert_array_equal(counts.numpy(), want_counts)
    np.testing.assert_array_equal(_np(x.unique_consecutive()), want)


@pytest.mark.parametrize("n", [2 * GRAIN + 5, 1_000_000])
def test_unique_consecutive_large(threads, n):
    a = np.repeat(np.random.default_rng(n).integers(0, 4, n // 3), 3)[:n].astype(np.float32)
    x = ember.tensor(a.reshape(-1, 1) if n % 2 else a)
    out, inverse, counts = ember.unique_consecutive(x, return_inverse=True, return_counts=True)
    want, want_inv, want_counts = _np_unique_consecutive(a)
    np.testing.assert_array_equal(out.numpy(), want)
    np.testing.assert_array_equal(inverse.numpy().reshape(-1), want_inv)
    assert inverse.shape == x.shape
    np.testing.assert_array_equal(counts.numpy(), want_counts)


def test_unique_consecutive_dim_and_edges():
    x = ember.tensor([[1, 2], [1, 2], [0, 5], [1, 2]])
    out, inverse, counts = ember.unique_consecutive(x, dim=0, return_inverse=True, return_counts=True)
    assert out.tolist() == [[1, 2], [0, 5], [1, 2]] and inverse.tolist() == [0, 0, 1, 2] and counts.tolist() == [2, 1, 1]
    out, inverse = x.unique_consecutive(return_inverse=True)
    assert out.tolist() == [1, 2, 1, 2, 0, 5, 1, 2] and inverse.shape == (4, 2)
    assert ember.unique_consecutive(x, dim=1).tolist() == [[1, 2], [1, 2], [0, 5], [1, 2]]
    nan = float("nan")
    out, counts = ember.unique_consecutive(ember.tensor([nan, nan, 1.0, 1.0, -0.0, 0.0]), return_counts=True)
    assert np.isnan(out.numpy()[:2]).all() and out.numpy()[2:].tolist() == [1.0, 0.0] and counts.tolist() == [1, 1, 2, 2]
    out, inverse, counts = ember.unique_consecutive(ember.tensor(3), return_inverse=True, return_counts=True)
    assert out.tolist() == [3] and inverse.shape == () and counts.tolist() == [1]
    out, inverse, counts = ember.unique_consecutive(ember.tensor([]), return_inverse=True, return_counts=True)
    assert out.shape == inverse.shape == counts.shape == (0,)


# ---------------------------------------------------------------- errors, autograd, devices
@pytest.mark.parametrize("unique", [ember.unique, ember.unique_consecutive])
def test_unique_errors(unique):
    with pytest.raises(IndexError, match="Dimension specified as 0 but tensor has no dimensions"):
        unique(ember.tensor(3), dim=0)
    with pytest.raises(RuntimeError, match="0 sized dimensions, and they aren't selected, so unique cannot be applied"):
        unique(ember.zeros(3, 0), dim=0)
    with pytest.raises(IndexError, match="Dimension out of range"):
        unique(ember.zeros(2, 3), dim=2)
    with pytest.raises(TypeError):
        unique([1, 2])


def test_unique_is_not_differentiable():
    x = ember.randn(6, requires_grad=True)
    for out in (ember.unique(x), ember.unique(x, return_inverse=True)[0], ember.unique_consecutive(x),
                ember.unique(x.reshape(2, 3), dim=1)):
        # As PyTorch: a floating result is recorded, and backward through it raises.
        assert out.requires_grad
        with pytest.raises(RuntimeError, match="derivative for aten::(_unique2|unique_consecutive|unique_dim) is not implemented"):
            out.sum().backward()
    out, inverse, counts = ember.unique(x, return_inverse=True, return_counts=True)
    assert not inverse.requires_grad and not counts.requires_grad
    with ember.no_grad():
        assert not ember.unique(x).requires_grad
    import ember.autograd.forward_ad as fwAD
    with fwAD.dual_level():
        dual = fwAD.make_dual(ember.randn(4, dtype=ember.float64), ember.ones(4, dtype=ember.float64))
        with pytest.raises(NotImplementedError, match="forward AD with aten::_unique2"):
            ember.unique(dual)


@pytest.mark.skipif(not ember.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("call", [lambda x: ember.unique(x), lambda x: ember.unique(x, dim=0),
                                  lambda x: ember.unique_consecutive(x),
                                  lambda x: ember.histogram(x, ember.tensor([0.0, 1.0]).cuda())])
def test_cuda_slot_names_the_op_and_device(call):
    with pytest.raises(NotImplementedError, match="not implemented on cuda"):
        call(ember.ones(3).cuda())


@needs_torch
@pytest.mark.parametrize("dtype", DTYPES)
def test_unique_matches_torch(dtype):
    x = _values((5, 6), dtype, np.random.default_rng(18), 0, 4)
    t = torch.from_numpy(_np(x)).to(getattr(torch, dtype))
    for kwargs in ({}, {"return_inverse": True}, {"return_counts": True, "dim": 1}, {"sorted": False},
                   {"return_inverse": True, "return_counts": True, "dim": 0}):
        for name, flat in (("unique", False), ("unique_consecutive", True)):
            if name == "unique_consecutive":
                kwargs = {k: v for k, v in kwargs.items() if k != "sorted"}
            want = getattr(torch, name)(t.flatten() if flat and "dim" not in kwargs else t, **kwargs)
            got = getattr(ember, name)(x.flatten() if flat and "dim" not in kwargs else x, **kwargs)
            assert isinstance(want, tuple) == isinstance(got, tuple)
            want, got = (want, got) if isinstance(want, tuple) else ((want,), (got,))
            assert len(want) == len(got)
            for w, g in zip(want, got):
                np.testing.assert_array_equal(_np(g), w.double().numpy() if w.is_floating_point() else w.numpy())


# ---------------------------------------------------------------- combinations
def test_combinations_values_and_gradients():
    x = ember.tensor([1.0, 2.0, 3.0, 4.0])
    assert ember.combinations(x).tolist() == [[1, 2], [1, 3], [1, 4], [2, 3], [2, 4], [3, 4]]
    assert ember.combinations(x, 3).shape == (4, 3) and ember.combinations(x, 2, True).shape == (10, 2)
    assert ember.combinations(x, 0).shape == (0,) and ember.combinations(x, 5).shape == (0, 5)
    assert ember.combinations(ember.tensor([]), 2).shape == (0, 2)
    assert ember.combinations(ember.tensor([7]), 2, with_replacement=True).tolist() == [[7, 7]]
    assert ember.combinations(ember.tensor([True, False])).tolist() == [[True, False]]
    w = ember.randn(5, dtype=ember.float64, requires_grad=True)
    for r, rep in ((2, False), (3, True), (1, False)):
        assert gradcheck(lambda t: ember.combinations(t, r, rep), (w,))
        assert gradgradcheck(lambda t: ember.combinations(t, r, rep), (w,))
    ember.combinations(w, 3).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), np.full(5, 6.0))  # each element is in C(4, 2) triples


def test_combinations_errors():
    with pytest.raises(RuntimeError, match=r"combinations: Expect a 1D vector, but got shape \[2, 2\]"):
        ember.combinations(ember.ones(2, 2))
    with pytest.raises(RuntimeError, match="combinations: Expect a non-negative number, but got -1"):
        ember.combinations(ember.ones(3), -1)


@needs_torch
def test_combinations_matches_torch():
    for n, r, rep in ((6, 3, False), (4, 4, True), (3, 4, False), (5, 1, True)):
        t = torch.arange(n, dtype=torch.float32) * 1.5
        np.testing.assert_array_equal(ember.combinations(ember.tensor(t.numpy()), r, rep).numpy(),
                                      torch.combinations(t, r, rep).numpy())


# ---------------------------------------------------------------- histogram
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_histogram_matches_numpy(threads, dtype):
    rng = np.random.default_rng(20)
    for n in (10, 2 * GRAIN + 3, 200_000):
        a = rng.normal(size=n).astype(dtype)
        x = ember.tensor(a)
        for bins in (1, 7, 100):
            hist, edges = ember.histogram(x, bins)
            want, want_edges = np.histogram(a, bins)
            np.testing.assert_allclose(edges.numpy(), want_edges, rtol=1e-6, atol=1e-6)
            assert hist.dtype == x.dtype and abs(hist.numpy() - want).max() <= 2  # fp edges may move a boundary value
            assert hist.sum().item() == n
        edges = ember.tensor(np.array([-3.0, -0.5, 0.0, 0.1, 2.0], dtype))
        wgt = rng.random(n).astype(dtype)
        hist, out_edges = x.histogram(edges, weight=ember.tensor(wgt), density=True)
        want, _ = np.histogram(a, edges.numpy(), weights=wgt, density=True)
        np.testing.assert_allclose(hist.numpy(), want, rtol=1e-4)
        np.testing.assert_array_equal(out_edges.numpy(), edges.numpy())
        hist, _ = ember.histogram(x, 4, range=(-1.0, 1.0))
        np.testing.assert_array_equal(hist.numpy(), np.histogram(a, 4, range=(-1.0, 1.0))[0])


def test_histogram_edges_nan_and_named_result():
    x = ember.tensor([1.0, 2.0, 1.0, 4.0, 2.5, float("nan")])
    result = ember.histogram(x, ember.tensor([1.0, 2.0, 4.0]))
    assert type(result).__name__ == "histogram" and result.hist.tolist() == [2.0, 3.0]  # 4.0 is in the last bin
    assert result.bin_edges.tolist() == [1.0, 2.0, 4.0]
    hist, edges = ember.histogram(ember.tensor([2.0, 2.0]), 3)  # a point range widens by 0.5 each way
    assert hist.tolist() == [0.0, 2.0, 0.0] and edges[0].item() == 1.5 and edges[-1].item() == 2.5
    hist, edges = ember.histogram(ember.tensor([]), 2)
    assert hist.tolist() == [0.0, 0.0] and edges.tolist() == [0.0, 0.5, 1.0]
    hist, _ = ember.histogram(ember.tensor([[1.0, 2.0], [3.0, 4.0]]), 2, weight=ember.tensor([[1.0, 2.0], [3.0, 4.0]]))
    assert hist.tolist() == [3.0, 7.0]
    x = ember.randn(4, requires_grad=True)
    hist, edges = ember.histogram(x, 3)
    assert hist.requires_grad and edges.requires_grad  # as PyTorch's: recorded, not differentiable
    with pytest.raises(RuntimeError, match="derivative for aten::histogram.bins_tensor is not implemented"):
        hist.sum().backward()


def test_histogram_errors():
    x = ember.tensor([1.0, 2.0, 3.0])
    with pytest.raises(NotImplementedError, match="histogram"):
        ember.histogram(x.long(), 3)
    with pytest.raises(NotImplementedError, match="histogram"):
        ember.histogram(x.half(), ember.tensor([0.0, 1.0]).half())
    with pytest.raises(RuntimeError, match=r"histogram\(\): bins must be > 0, but got 0"):
        ember.histogram(x, 0)
    with pytest.raises(RuntimeError, match=r"histogram\(\): bins must be > 0, but got 0"):
        ember.histogram(x, ember.tensor([1.0]))
    with pytest.raises(RuntimeError, match="min should not exceed max, but got min 3 max 1"):
        ember.histogram(x, 3, range=(3.0, 1.0))
    with pytest.raises(RuntimeError, match=r"range \[1, inf\] is not finite"):
        ember.histogram(ember.tensor([1.0, float("inf")]), 3)
    with pytest.raises(RuntimeError, match="weight tensor .* same shape"):
        ember.histogram(x, 3, weight=ember.ones(4))
    with pytest.raises(RuntimeError, match="same dtype"):
        ember.histogram(x, 3, weight=ember.ones(3, dtype=ember.float64))
    with pytest.raises(RuntimeError, match="bins tensors should have the same dtype"):
        ember.histogram(x, ember.tensor([0, 1]))
    with pytest.raises(RuntimeError, match="bins tensor should have one dimension"):
        ember.histogram(x, ember.tensor([[0.0, 1.0]]))


@needs_torch
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_histogram_matches_torch(dtype):
    a = np.random.default_rng(21).normal(size=5000).astype(dtype)
    x, t = ember.tensor(a), torch.from_numpy(a)
    w = np.random.default_rng(22).random(5000).astype(dtype)
    for args, kwargs in (((10,), {}), ((7,), {"range": (-1.0, 2.0)}), ((5,), {"density": True}),
                         ((3,), {"weight": w, "density": True}), ((np.array([-2.0, 0.0, 0.5, 3.0], dtype),), {})):
        e_args = [ember.tensor(v) if isinstance(v, np.ndarray) else v for v in args]
        t_args = [torch.from_numpy(v) if isinstance(v, np.ndarray) else v for v in args]
        e_kw = {k: ember.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
        t_kw = {k: torch.from_numpy(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
        got, want = ember.histogram(x, *e_args, **e_kw), torch.histogram(t, *t_args, **t_kw)
        np.testing.assert_array_equal(got.bin_edges.numpy(), want.bin_edges.numpy())
        np.testing.assert_allclose(got.hist.numpy(), want.hist.numpy(), rtol=1e-5)


# ---------------------------------------------------------------- topk on many short rows
SMALL_K = ember._C._thresholds()["topk_small_k"]


def _np_topk(a, k, dim, largest):
    # The order PyTorch gives: best first, NaN largest, ties by the smaller index.
    key = np.where(np.isnan(a), np.inf, a).astype(np.float64)
    nan_rank = np.isnan(a).astype(np.int8)
    position = np.arange(a.shape[dim]).reshape([-1 if d == dim % a.ndim else 1 for d in range(a.ndim)])
    order = np.lexsort((np.broadcast_to(position, a.shape),
                        -key if largest else key, -nan_rank if largest else nan_rank), axis=dim)
    idx = np.take(order, np.arange(k), axis=dim)
    return np.take_along_axis(a, idx, dim), idx


@pytest.mark.parametrize("k", [0, 1, 5, SMALL_K, SMALL_K + 1])  # k=0: nothing to write (it once wrote best[-1])
@pytest.mark.parametrize("shape,dim", [((700, 1000), -1), ((4000, 64), 1), ((64, 300), 0), ((3, 5, 40), 2)])
def test_topk_short_rows(threads, k, shape, dim):
    rng = np.random.default_rng(k)
    a = rng.integers(-20, 20, shape).astype(np.float32)  # many ties
    a[rng.random(shape) < 0.01] = np.nan
    for largest in (True, False):
        values, indices = ember.topk(ember.tensor(a), k, dim=dim, largest=largest)
        want_values, want_indices = _np_topk(a, k, dim, largest)
        np.testing.assert_array_equal(indices.numpy(), want_indices)
        np.testing.assert_array_equal(values.numpy(), want_values)


@pytest.mark.parametrize("dtype", DTYPES)
def test_topk_short_rows_every_dtype(dtype):
    x = _values((300, 50), dtype, np.random.default_rng(23))
    a = _np(x)
    for k, largest in ((3, True), (SMALL_K, False), (1, False)):
        values, indices = ember.topk(x, k, largest=largest)
        want_values, want_indices = _np_topk(a, k, -1, largest)
        np.testing.assert_array_equal(indices.numpy(), want_indices)
        np.testing.assert_array_equal(_np(values), want_values)


@needs_torch
def test_topk_short_rows_match_torch():
    a = np.random.default_rng(24).standard_normal((2000, 100)).astype(np.float32)
    for k in (1, 5, 8, SMALL_K + 3):
        values, indices = ember.topk(ember.tensor(a), k)
        want = torch.topk(torch.from_numpy(a), k)
        np.testing.assert_array_equal(values.numpy(), want.values.numpy())
        np.testing.assert_array_equal(indices.numpy(), want.indices.numpy())
