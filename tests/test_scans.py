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


# ---------------------------------------------------------------- diff, diagonal and the reorderings
ALL_DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_diff_matches_numpy(dtype):
    rng = np.random.default_rng(3)
    a = rng.integers(0, 4, (3, 5)).astype(np.float32)
    p, q = rng.integers(0, 4, (3, 2)).astype(np.float32), rng.integers(0, 4, (1, 5)).astype(np.float32)
    t = lambda v: ember.tensor(v).to(getattr(ember, dtype))  # noqa: E731
    np_dtype = bool if dtype == "bool" else np.float64
    for args, kwargs, ref in [((), {}, np.diff(a.astype(np_dtype))),
                              ((2, 0), {}, np.diff(a.astype(np_dtype), 2, 0)),
                              ((1, 1), {"prepend": t(p)}, np.diff(a.astype(np_dtype), 1, 1, prepend=p.astype(np_dtype))),
                              ((3, 0), {"append": t(q)}, np.diff(a.astype(np_dtype), 3, 0, append=q.astype(np_dtype))),
                              ((0,), {}, a.astype(np_dtype))]:
        got = ember.diff(t(a), *args, **kwargs)
        assert got.dtype == getattr(ember, dtype)
        if dtype == "uint8":  # unsigned differences wrap, as in PyTorch
            ref = np.mod(ref, 256)
        np.testing.assert_allclose(got.to(ember.float64).numpy(), ref.astype(np.float64))


def test_diff_errors():
    with pytest.raises(RuntimeError, match="diff expects input to be at least one-dimensional"):
        ember.diff(ember.tensor(1.0))
    with pytest.raises(RuntimeError, match="order must be non-negative but got -1"):
        ember.diff(ember.ones(3), -1)


def test_jvps_of_diff_and_diagonal_backward():
    a = ember.randn(4, 3, dtype=ember.float64, requires_grad=True)
    p = ember.randn(1, 3, dtype=ember.float64, requires_grad=True)
    assert gradcheck(lambda x, y: ember.diff(x, 2, 0, prepend=y), (a, p), check_forward_ad=True)
    g = ember.randn(3, dtype=ember.float64, requires_grad=True)
    assert gradcheck(lambda v: ember._diagonal_backward(v, [3, 5], -1, 1, 0), (g,), check_forward_ad=True)


def test_diagonal_is_a_view_and_writes_through():
    x = ember.zeros(3, 4)
    d = x.diagonal(1)
    d.fill_(1.0)
    assert x.tolist() == [[0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]]


@pytest.mark.skipif(torch is None, reason="needs torch")
def test_reorderings_match_torch():
    a = np.random.default_rng(4).standard_normal((3, 4, 5)).astype(np.float32)
    e, t = ember.tensor(a), torch.tensor(a)
    for f in [lambda m, x: m.roll(x, 2), lambda m, x: m.roll(x, (1, -2), (0, 2)), lambda m, x: m.rot90(x, 1, (2, 1)),
              lambda m, x: m.tril(x, -1), lambda m, x: m.triu(x, 2), lambda m, x: m.diagonal(x, 1, 2, 0),
              lambda m, x: m.diag_embed(x, -1, 0, 3), lambda m, x: m.movedim(x, (0, 2), (2, 1)),
              lambda m, x: m.unflatten(x, 2, (5, -1)), lambda m, x: m.fliplr(x), lambda m, x: m.flipud(x),
              lambda m, x: m.trace(x[0]), lambda m, x: m.diag(x[0], 1), lambda m, x: m.diag(x[0, 0], -1)]:
        np.testing.assert_allclose(f(ember, e).numpy(), f(torch, t).numpy(), rtol=1e-6)


@pytest.mark.parametrize("call,error,message", [
    (lambda x: ember.roll(x, [1], [0, 1]), RuntimeError, "shifts and dimensions must align. shifts: 1, dims:2"),
    (lambda x: ember.rot90(x, 1, [0]), RuntimeError, "expected total rotation dims == 2, but got dims = 1"),
    (lambda x: ember.rot90(x, 1, [0, 0]), RuntimeError, "expected rotation dims to be different"),
    (lambda x: ember.tril(x[0]), RuntimeError, "tril: input tensor must have at least 2 dimensions"),
    (lambda x: ember.fliplr(x[0]), RuntimeError, r"Input must be >= 2-d."),
    (lambda x: ember.flipud(x[0, 0]), RuntimeError, r"Input must be >= 1-d."),
    (lambda x: ember.trace(x[None]), RuntimeError, "trace: expected a matrix, but got tensor with dim 3"),
    (lambda x: ember.diag(x[None]), RuntimeError, r"diag\(\): Supports 1D or 2D tensors. Got 3D"),
    (lambda x: ember.diagonal(x, 0, 0, 0), RuntimeError, "diagonal dimensions cannot be identical 0, 0"),
    (lambda x: ember.diagonal(x, 0, 0, 2), IndexError, "Dimension out of range"),
    (lambda x: ember.movedim(x, [0, 1], [0]), RuntimeError, "movedim: Invalid source or destination dims"),
    (lambda x: ember.unflatten(x, 1, [2, 2]), RuntimeError, "unflatten: Provided sizes \\[2, 2\\] don't multiply up"),
])
def test_reordering_errors(call, error, message):
    with pytest.raises(error, match=message):
        call(ember.ones(2, 3))


# ---------------------------------------------------------------- cumprod
@pytest.mark.parametrize("shape,dim", SHAPES[:6], ids=[f"{s}-dim{d}" for s, d in SHAPES[:6]])
def test_cumprod_large_matches_float64(threads, shape, dim):
    a = np.random.default_rng(5).uniform(0.999, 1.001, shape).astype(np.float32)
    got = ember.cumprod(ember.tensor(a), dim).numpy()
    np.testing.assert_allclose(got, np.cumprod(a.astype(np.float64), axis=dim), rtol=1e-5)


@pytest.mark.parametrize("values", [[1.5, 0.0, -0.5, 2.0], [0.0, 0.0, 2.0, 3.0], [1.5, 2.0, -0.5, 0.0], [1.5, -2.0, 0.5, 3.0]])
def test_cumprod_gradients_with_zeros(values):
    """As PyTorch: the gradient at a zero is the product of the other factors, not NaN."""
    x = ember.tensor([values, values[::-1]], dtype=ember.float64, requires_grad=True)
    assert gradcheck(lambda t: ember.cumprod(t, 1), (x,), check_forward_ad=True)
    assert gradgradcheck(lambda t: ember.cumprod(t, 1), (x,))
    if torch is not None:
        t = torch.tensor([values, values[::-1]], dtype=torch.float64, requires_grad=True)
        torch.cumprod(t, 1).sum().backward()
        ember.cumprod(x, 1).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy())


def test_jvps_of_the_cumprod_helpers():
    a = ember.tensor([1.5, 0.0, -0.5, 0.0], dtype=ember.float64)
    r = ember.cumprod(a, 0)
    g = ember.randn(4, dtype=ember.float64, requires_grad=True)
    assert gradcheck(lambda v: ember._cumprod_backward(v, a, 0, r), (g,), check_forward_ad=True)
    assert gradcheck(lambda v: ember._cumprod_jvp(v, a, 0, r), (g,), check_forward_ad=True)


def test_cumprod_dtype_and_errors():
    assert ember.cumprod(ember.tensor([2, 3, 4], dtype=ember.int8), 0).dtype == ember.int64
    assert ember.cumprod(ember.tensor([2, 3]), 0, dtype=ember.float64).tolist() == [2.0, 6.0]
    with pytest.raises(IndexError, match="Dimension out of range"):
        ember.cumprod(ember.ones(2), 1)


# ---------------------------------------------------------------- hstack, vstack, dstack
STACK_SHAPES = [[(3,), (2,)], [(2, 3), (2, 1)], [(), ()], [(2, 3, 4), (2, 5, 4)]]


@pytest.mark.parametrize("name", ["hstack", "vstack", "dstack"])
@pytest.mark.parametrize("shapes", STACK_SHAPES, ids=[str(s) for s in STACK_SHAPES])
def test_stackers_match_numpy(name, shapes):
    rng = np.random.default_rng(6)
    arrays = [rng.standard_normal(s) for s in shapes]
    try:
        want = getattr(np, name)(arrays)
    except ValueError:
        with pytest.raises(RuntimeError):
            getattr(ember, name)([ember.tensor(a) for a in arrays])
        return
    got = getattr(ember, name)([ember.tensor(a) for a in arrays])
    np.testing.assert_allclose(got.numpy(), want)
    out = ember.empty(0, dtype=ember.float64)
    getattr(ember, name)([ember.tensor(a) for a in arrays], out=out)
    np.testing.assert_allclose(out.numpy(), want)
    xs = [ember.tensor(a, requires_grad=True) for a in arrays]
    assert gradcheck(lambda *t: getattr(ember, name)(list(t)), tuple(xs), check_forward_ad=True)
    assert gradgradcheck(lambda *t: getattr(ember, name)(list(t)), tuple(xs))


@pytest.mark.parametrize("name", ["hstack", "vstack", "dstack"])
def test_stackers_reject_an_empty_list(name):
    with pytest.raises(RuntimeError, match=f"{name} expects a non-empty TensorList"):
        getattr(ember, name)([])
