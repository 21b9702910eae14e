"""Scans and reorderings (issue 11): cumsum's CPU kernel at realistic sizes and thread
counts, its accuracy over long float32 rows, dtype=, errors; flip's errors and gradient.
The generic harness (ops.yaml `test:`) covers the small shapes, dtypes and autograd."""
import numpy as np
import pytest

import ember
from ember.autograd import gradcheck, gradgradcheck

try:
    import torch
except ImportError:  # the torch comparisons are skipped without it
    torch = None

GRAIN = ember._C._thresholds()["grain_size"]
needs_gpu = pytest.mark.skipif(not ember.cuda.is_available(), reason="needs a CUDA GPU")


@pytest.fixture(params=[1, 2, 3])
def threads(request):
    prev = ember.get_num_threads()
    ember.set_num_threads(request.param)
    yield request.param
    ember.set_num_threads(prev)


def _ref_cumsum(a, dim):
    return np.cumsum(a.astype(np.float64), axis=dim)


# Around the grain size (rows split into segments above it), long and short rows, inner dims.
SHAPES = [((GRAIN - 1,), 0), ((GRAIN + 1,), 0), ((3 * GRAIN + 7,), -1), ((2, GRAIN + 5), 1),
          ((513, 129), 1), ((129, 513), 0), ((7, 300, 5), 1), ((4, 3000, 300), 1), ((1, 1), 0)]


@pytest.mark.parametrize("shape,dim", SHAPES, ids=[f"{s}-dim{d}" for s, d in SHAPES])
def test_cumsum_float32_matches_float64(threads, shape, dim):
    a = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    got = ember.cumsum(ember.tensor(a), dim).numpy()
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, _ref_cumsum(a, dim), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("shape,dim", SHAPES[:4], ids=[f"{s}-dim{d}" for s, d in SHAPES[:4]])
def test_cumsum_int64_is_exact(threads, shape, dim):
    a = np.random.default_rng(1).integers(-1000, 1000, shape).astype(np.int32)
    got = ember.cumsum(ember.tensor(a), dim)
    assert got.dtype == ember.int64
    np.testing.assert_array_equal(got.numpy(), np.cumsum(a.astype(np.int64), axis=dim))


def test_cumsum_1e7_float32_does_not_drift(threads):
    """Accumulated in double as PyTorch's CPU kernel: the running sum of 1e7 float32 stays close."""
    a = np.random.default_rng(2).random(10_000_000, dtype=np.float32)
    got = ember.cumsum(ember.tensor(a), 0).numpy().astype(np.float64)
    ref = np.cumsum(a.astype(np.float64))
    assert np.max(np.abs(got - ref) / ref) < 1e-6


def test_cumsum_dtype_argument_casts_first():
    x = ember.tensor([100, 100, 100], dtype=ember.int64)
    assert ember.cumsum(x, 0, dtype=ember.int8).tolist() == [100, -56, 44]  # wraps as PyTorch
    y = ember.cumsum(ember.tensor([0.5, 0.25]), 0, dtype=ember.float64)
    assert y.dtype == ember.float64 and y.tolist() == [0.5, 0.75]
    assert ember.cumsum(ember.tensor([True, True, False]), 0).tolist() == [1, 2, 2]


def test_cumsum_inplace_and_out():
    x = ember.tensor([1.0, 2.0, 3.0])
    x.cumsum_(0)
    assert x.tolist() == [1.0, 3.0, 6.0]
    out = ember.empty(0)
    ember.cumsum(ember.tensor([[1.0, 2.0], [3.0, 4.0]]), 1, out=out)
    assert out.tolist() == [[1.0, 3.0], [3.0, 7.0]]


def test_cumsum_gradient_with_dtype():
    x = ember.tensor([1.0, 2.0, 3.0], dtype=ember.float32, requires_grad=True)
    ember.cumsum(x, 0, dtype=ember.float64).sum().backward()
    assert x.grad.tolist() == [3.0, 2.0, 1.0]


def test_cumsum_gradients_at_realistic_size():
    x = ember.randn(3, 40, dtype=ember.float64, requires_grad=True)
    assert gradcheck(lambda t: ember.cumsum(t, 1), (x,))
    assert gradgradcheck(lambda t: ember.cumsum(t, 0), (x,))


def test_cumsum_errors():
    with pytest.raises(IndexError, match="Dimension out of range"):
        ember.cumsum(ember.ones(2, 3), 2)
    with pytest.raises(TypeError):
        ember.cumsum(ember.ones(2, 3))


@needs_gpu
def test_cumsum_cuda_slot_names_the_op_and_device():
    with pytest.raises(NotImplementedError, match="cumsum: .*not implemented on cuda"):
        ember.cumsum(ember.ones(3).cuda(), 0)


@pytest.mark.skipif(torch is None, reason="needs torch")
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "uint8", "bool", "float16", "bfloat16"])
def test_cumsum_matches_torch(dtype):
    t = (torch.randn(5, 70) * 3).to(getattr(torch, dtype))
    e = ember.tensor(t.float().numpy()).to(getattr(ember, dtype))
    for dim in (0, 1):
        want = torch.cumsum(t, dim)
        got = ember.cumsum(e, dim)
        assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
        np.testing.assert_allclose(got.float().numpy(), want.float().numpy(), rtol=1e-2, atol=1e-2)


def test_flip_errors():
    x = ember.ones(2, 3)
    with pytest.raises(RuntimeError, match="dim 0 appears multiple times in the list of dims"):
        ember.flip(x, [0, -2])
    with pytest.raises(IndexError, match="Dimension out of range"):
        ember.flip(x, [2])
    with pytest.raises(TypeError):
        x.flip()


def test_flip_is_a_copy_and_differentiable():
    x = ember.arange(6.0).reshape(2, 3)
    y = x.flip(1)
    y.add_(1)
    assert x.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    assert y.tolist() == [[3.0, 2.0, 1.0], [6.0, 5.0, 4.0]]
    w = ember.randn(3, 4, dtype=ember.float64, requires_grad=True)
    assert gradcheck(lambda t: t.flip(0, 1), (w,))
