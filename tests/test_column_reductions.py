"""Reductions over dim 0 of a row-major matrix (column sums: bias gradients), which the CPU engine folds
four rows at a time: row counts around that block and the cascade's groups of 16, sizes around the
parallel threshold, 1/2/3 threads, NaN in every row position, the other same-type reductions (max, prod,
norms) and float32 accuracy over many rows, against float64 NumPy (and PyTorch when installed)."""
import numpy as np
import pytest

import ember

try:
    import torch
except ImportError:  # the comparisons with PyTorch skip; the rest runs
    torch = None


def check_sum(a, got):
    want = a.astype(np.float64).sum(0)
    scale = np.abs(a.astype(np.float64)).sum(0) + 1e-30
    assert np.all(np.abs(got.astype(np.float64) - want) <= 4e-7 * scale), np.abs(got - want).max()


@pytest.mark.parametrize("rows", [1, 2, 3, 4, 5, 7, 8, 15, 16, 17, 31, 33, 64, 65, 257, 2049])
@pytest.mark.parametrize("cols", [1, 3, 256, 771])
def test_sum_dim0_rows_and_columns(rows, cols, threads):
    a = np.random.default_rng(rows * 1000 + cols).standard_normal((rows, cols)).astype(np.float32)
    check_sum(a, ember.from_numpy(a).sum(0).numpy())
    np.testing.assert_allclose(ember.from_numpy(a).mean(0).numpy(), a.astype(np.float64).mean(0), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("shape", [(255, 256), (256, 256), (257, 256), (2048, 768), (2047, 1024), (130, 1000)])
def test_sum_dim0_around_the_parallel_threshold(shape, threads):
    # serial below 2 * grain_size (65536) elements, parallel over columns above
    assert ember._C._thresholds()["grain_size"] == 32768
    a = np.random.default_rng(shape[0]).standard_normal(shape).astype(np.float32)
    check_sum(a, ember.from_numpy(a).sum(0).numpy())
    check_sum(a, ember.from_numpy(a).sum(0, keepdim=True).numpy()[0])


def test_sum_dim0_of_batched_and_strided_inputs(threads):
    a = np.random.default_rng(1).standard_normal((16, 128, 257)).astype(np.float32)
    t = ember.from_numpy(a)
    check_sum(a.reshape(-1, 257), t.sum((0, 1)).numpy())  # both outer dims reduced, as a bias gradient of [B, T, N]
    check_sum(a[:, ::2].reshape(-1, 257), t[:, ::2].sum((0, 1)).numpy())
    check_sum(a[..., 1:].reshape(-1, 256), t[..., 1:].sum((0, 1)).numpy())
    check_sum(a[0].T, t[0].t().sum(0).numpy())  # transposed: the reduced dim is the contiguous one


def test_sum_dim0_accuracy_over_many_rows(threads):
    # 1e6 rows of float32 values near 1: a row-by-row float sum would drift by ~1e-2 relative
    a = (1 + np.random.default_rng(2).random((1_000_000, 8), dtype=np.float32) * 1e-3).astype(np.float32)
    got = ember.from_numpy(a).sum(0).numpy().astype(np.float64)
    np.testing.assert_allclose(got, a.astype(np.float64).sum(0), rtol=1e-6)


@pytest.mark.parametrize("row", [0, 1, 2, 3, 4, 17, 99])
def test_max_min_prod_norm_dim0_and_nan(row, threads):
    a = np.random.default_rng(row).standard_normal((100, 700)).astype(np.float32)
    a[row, 5] = np.nan
    t = ember.from_numpy(a)
    for name in ("amax", "amin"):
        got, want = getattr(t, name)(0).numpy(), getattr(np, name[1:])(a, 0)
        np.testing.assert_array_equal(got, want)  # exact, NaN in column 5 only
    p = np.random.default_rng(3).uniform(0.9, 1.1, (100, 700)).astype(np.float32)
    np.testing.assert_allclose(ember.from_numpy(p).prod(0).numpy(), p.astype(np.float64).prod(0), rtol=2e-5)
    b = np.nan_to_num(a)
    np.testing.assert_allclose(ember.linalg.vector_norm(ember.from_numpy(b), 1, 0).numpy(),
                               np.abs(b.astype(np.float64)).sum(0), rtol=1e-5)
    np.testing.assert_allclose(ember.linalg.vector_norm(ember.from_numpy(b), float("inf"), 0).numpy(),
                               np.abs(b).max(0), rtol=0)


def test_integer_and_double_column_sums(threads):
    a = np.random.default_rng(4).integers(-1000, 1000, (2051, 130))
    np.testing.assert_array_equal(ember.from_numpy(a).sum(0).numpy(), a.sum(0))
    d = np.random.default_rng(5).standard_normal((2051, 130))
    np.testing.assert_allclose(ember.from_numpy(d).sum(0).numpy(), d.sum(0), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ember.from_numpy(d).var(0).numpy(), d.var(0, ddof=1), rtol=1e-10)


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
def test_matches_torch():
    a = np.random.default_rng(6).standard_normal((2048, 768)).astype(np.float32)
    np.testing.assert_allclose(ember.from_numpy(a).sum(0).numpy(), torch.from_numpy(a).sum(0).numpy(),
                               rtol=1e-4, atol=1e-4)
