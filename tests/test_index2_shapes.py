"""index2 (issue 11), the scans and shapes: cummax/cummin/logcumsumexp, repeat/tile/repeat_interleave,
tensor_split, broadcast_tensors, meshgrid and the atleast_Nd lists. Values against PyTorch and NumPy,
NaN and infinities, errors, gradcheck/gradgradcheck and JVPs against finite differences (the
parallel scans at 1-3 threads are in test_index2.py)."""
import warnings

import numpy as np
import pytest

import ember
from ember.autograd import gradcheck, gradgradcheck
from test_index2 import (DTYPES, as_np, assert_same, f64, from_torch, jvp_matches_finite_differences, needs_torch,
                         sample, to_torch, torch)


# --------------------------------------------------------------------------- scans
@needs_torch
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim", [0, -1])
def test_cummax_cummin_match_torch(dtype, dim):
    rng = np.random.default_rng(10)
    a = sample((5, 6), dtype, rng, -2, 3)  # many ties
    for name in ("cummax", "cummin"):
        got = getattr(a, name)(dim)
        want = getattr(to_torch(a), name)(dim)
        assert_same(got.values, want.values)
        np.testing.assert_array_equal(got.indices.numpy(), want.indices.numpy())
        assert got.indices.dtype == ember.int64


@needs_torch
def test_cummax_cummin_nan_non_contiguous_empty_zero_dim():
    a = ember.tensor([[1.0, float("nan"), 3.0, 0.5], [2.0, 1.0, float("nan"), float("nan")]]).t()
    ta = to_torch(a.contiguous())
    for name in ("cummax", "cummin"):
        for dim in (0, 1):
            got, want = getattr(ember, name)(a, dim), getattr(torch, name)(ta, dim)
            np.testing.assert_array_equal(got.values.numpy(), want.values.numpy())
            np.testing.assert_array_equal(got.indices.numpy(), want.indices.numpy())
        assert getattr(ember, name)(ember.zeros(0, 3), 0).values.shape == (0, 3)
        v, i = getattr(ember, name)(ember.tensor(2.5), 0)
        assert v.item() == 2.5 and i.item() == 0 and v.shape == ()


def test_cummax_cummin_gradients_and_jvp():
    a = f64(4, 5)
    for name in ("cummax", "cummin"):
        f = lambda x, name=name: getattr(ember, name)(x, 1).values
        assert gradcheck(f, (a,))
        assert gradgradcheck(f, (a,))
        jvp_matches_finite_differences(f, (a,), (f64(4, 5, seed=1),))


@needs_torch
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_logcumsumexp_matches_torch_and_is_stable(dtype):
    a = ember.tensor([[1000.0, 1000.0, -1000.0, 5.0], [float("-inf"), 0.0, float("inf"), 1.0],
                      [float("-inf"), float("-inf"), 2.0, float("nan")]]).to(getattr(ember, dtype))
    for dim in (0, 1):
        got = ember.logcumsumexp(a, dim)
        want = torch.logcumsumexp(to_torch(a), dim)
        np.testing.assert_allclose(as_np(got), from_torch(want), rtol=1e-2 if dtype in ("float16", "bfloat16") else 1e-6)
    with pytest.raises(NotImplementedError, match="logcumsumexp"):
        ember.logcumsumexp(ember.tensor([1, 2]), 0)


def test_logcumsumexp_gradients_with_large_values():
    a = f64(3, 5, low=-30.0, high=30.0)
    assert gradcheck(lambda x: ember.logcumsumexp(x, 1), (a,))
    assert gradgradcheck(lambda x: ember.logcumsumexp(x, 0), (a,))
    big = ember.tensor([500.0, 800.0, 790.0], dtype=ember.float64, requires_grad=True)
    ember.logcumsumexp(big, 0).sum().backward()
    assert np.isfinite(big.grad.numpy()).all()
    jvp_matches_finite_differences(lambda x: ember.logcumsumexp(x, 1), (a,), (f64(3, 5, seed=1),))


# --------------------------------------------------------------------------- shapes
@needs_torch
def test_repeat_tile_match_torch():
    a = ember.arange(6).reshape(2, 3)
    ta = to_torch(a)
    for reps in ((2, 1), (1, 2, 3), (0, 2)):
        np.testing.assert_array_equal(a.repeat(*reps).numpy(), ta.repeat(*reps).numpy())
        np.testing.assert_array_equal(a.repeat(reps).numpy(), ta.repeat(reps).numpy())
    for dims in ((2,), (2, 1, 2), ()):
        np.testing.assert_array_equal(ember.tile(a, dims).numpy(), torch.tile(ta, dims).numpy())
    with pytest.raises(RuntimeError, match="Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor"):
        a.repeat(2)
    with pytest.raises(RuntimeError, match="negative dimension -1"):
        a.repeat(-1, 2)
    x = f64(2, 3)
    assert gradcheck(lambda t: t.repeat(2, 1, 2), (x,))


@needs_torch
def test_repeat_interleave_matches_torch():
    a = ember.arange(6.).reshape(2, 3)
    ta = to_torch(a)
    np.testing.assert_array_equal(a.repeat_interleave(2).numpy(), ta.repeat_interleave(2).numpy())
    np.testing.assert_array_equal(a.repeat_interleave(2, dim=1).numpy(), ta.repeat_interleave(2, dim=1).numpy())
    r = ember.tensor([1, 0, 3])
    np.testing.assert_array_equal(a.repeat_interleave(r, dim=1, output_size=4).numpy(),
                                  ta.repeat_interleave(torch.tensor([1, 0, 3]), dim=1).numpy())
    np.testing.assert_array_equal(ember.repeat_interleave(a, ember.tensor([2]), 0).numpy(),
                                  torch.repeat_interleave(ta, torch.tensor([2]), 0).numpy())
    np.testing.assert_array_equal(ember.repeat_interleave(ember.tensor([2, 0, 1])).numpy(), [0, 0, 2])
    with pytest.raises(RuntimeError, match="repeats can not be negative"):
        a.repeat_interleave(ember.tensor([1, -1, 1]), dim=1)
    with pytest.raises(RuntimeError, match=r"repeats must have the same size as input along dim, but got repeats.size\(0\) = 2 and input.size\(1\) = 3"):
        a.repeat_interleave(ember.tensor([1, 1]), dim=1)
    with pytest.raises(RuntimeError, match="output_size 5 does not match"):
        a.repeat_interleave(r, dim=1, output_size=5)
    x = f64(2, 3)
    assert gradcheck(lambda t: t.repeat_interleave(ember.tensor([2, 0, 1]), dim=1), (x,))


@needs_torch
def test_tensor_split_matches_torch():
    a = ember.arange(14.).reshape(7, 2)
    ta = to_torch(a)
    cases = [((3,), {}), (([1, 5],), {}), (([6, 2, 9],), {}), ((2,), {"dim": 1})]
    for args, kwargs in cases:
        got, want = a.tensor_split(*args, **kwargs), ta.tensor_split(*args, **kwargs)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g.numpy(), w.numpy())
    for t, tt in ((ember.tensor(3), torch.tensor(3)), (ember.tensor([2, 4]), torch.tensor([2, 4]))):
        for g, w in zip(ember.tensor_split(a, t), torch.tensor_split(ta, tt)):
            np.testing.assert_array_equal(g.numpy(), w.numpy())
    with pytest.raises(RuntimeError, match="number of sections must be larger than 0, got 0"):
        a.tensor_split(0)
    with pytest.raises(RuntimeError, match="expected at least a 1-dimensional tensor"):
        ember.tensor(1.0).tensor_split(2)
    with pytest.raises(RuntimeError, match="to have dtype of long, but got Float"):
        a.tensor_split(ember.tensor([1.0]))
    with pytest.raises(RuntimeError, match="zero-dimensional or one-dimensional tensor, but got a tensor with 2 dims"):
        a.tensor_split(ember.tensor([[1]]))


@needs_torch
def test_broadcast_tensors_meshgrid_atleast_match_torch():
    a, b = ember.arange(3.), ember.arange(2.).reshape(2, 1)
    for g, w in zip(ember.broadcast_tensors(a, b), torch.broadcast_tensors(to_torch(a), to_torch(b))):
        np.testing.assert_array_equal(g.numpy(), w.numpy())
    assert [t.shape for t in ember.broadcast_tensors([a, b])] == [(2, 3), (2, 3)]
    with pytest.raises(RuntimeError):
        ember.broadcast_tensors(ember.ones(2), ember.ones(3))
    x, y, z = ember.arange(3.), ember.arange(2.), ember.tensor(5.0)
    for indexing in ("ij", "xy"):
        got = ember.meshgrid(x, y, z, indexing=indexing)
        want = np.meshgrid(x.numpy(), y.numpy(), z.numpy().reshape(1), indexing=indexing)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g.numpy(), w)
    with pytest.warns(UserWarning, match="indexing argument"):
        assert [g.shape for g in ember.meshgrid([x, y])] == [(3, 2), (3, 2)]
    with pytest.raises(RuntimeError, match='indexing must be one of "xy" or "ij", but received: zz'):
        ember.meshgrid(x, y, indexing="zz")
    with pytest.raises(RuntimeError, match="Expected 0D or 1D tensor"):
        ember.meshgrid(x, ember.ones(2, 2), indexing="ij")
    with pytest.raises(RuntimeError, match="same dtype"):
        ember.meshgrid(x, ember.arange(2), indexing="ij")
    for n in (1, 2, 3):
        f, tf = getattr(ember, f"atleast_{n}d"), getattr(torch, f"atleast_{n}d")
        one = f(z)
        assert isinstance(one, ember.Tensor) and one.shape == tuple(tf(torch.tensor(5.0)).shape)
        several = f(z, x, b)
        assert isinstance(several, tuple)
        assert [t.shape for t in several] == [tuple(t.shape) for t in tf(torch.tensor(5.0), torch.arange(3.), torch.zeros(2, 1))]
        assert [t.shape for t in f([z, x])] == [tuple(t.shape) for t in tf([torch.tensor(5.0), torch.arange(3.)])]


def test_list_ops_gradients_and_jvp():
    a, b = f64(3), f64(2, seed=1)
    assert gradcheck(lambda p, q: ember.meshgrid(p, q, indexing="xy"), (a, b))
    assert gradcheck(lambda p, q: ember.broadcast_tensors(p, q.reshape(2, 1)), (a, b))
    jvp_matches_finite_differences(lambda p, q: ember.meshgrid(p, q, indexing="ij"), (a, b), (f64(3, seed=2), f64(2, seed=3)))
    jvp_matches_finite_differences(lambda p, q: ember.broadcast_tensors(p, q.reshape(2, 1)), (a, b), (f64(3, seed=2), f64(2, seed=3)))
    for n in (1, 2, 3):
        jvp_matches_finite_differences(lambda p, n=n: getattr(ember, f"atleast_{n}d")(p, p * 2), (a,), (f64(3, seed=2),))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # meshgrid without indexing= warns, as PyTorch's
        jvp_matches_finite_differences(lambda p, q: ember.meshgrid(p, q), (a, b), (f64(3, seed=2), f64(2, seed=3)))
    jvp_matches_finite_differences(lambda p: p[ember.repeat_interleave(ember.tensor([0, 2, 1]))], (a,), (f64(3, seed=2),))
    jvp_matches_finite_differences(lambda p: ember.tensor_split(p, ember.tensor([1])), (a,), (f64(3, seed=2),))
    jvp_matches_finite_differences(lambda p: p.repeat_interleave(ember.tensor([2, 0, 1])), (a,), (f64(3, seed=2),))
