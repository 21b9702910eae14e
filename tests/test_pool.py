"""Pooling (issue 11): max/avg/adaptive pools in 1-D and 2-D against NumPy references (and
PyTorch when installed) over the option grid, indices, NaN, dtypes, non-contiguous inputs,
realistic sizes at 1-3 threads, gradients (gradcheck, gradgradcheck, forward-mode JVPs) and
PyTorch's error messages. The harness (ops.yaml `test:`) covers the small composite cases."""
import itertools

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.autograd import gradcheck, gradgradcheck
from harness.refs import (np_adaptive_avg_pool2d, np_adaptive_max_pool2d, np_avg_pool2d,
                          np_max_pool2d_with_indices)

try:
    import torch
    import torch.nn.functional as TF
except ImportError:  # the torch comparisons are skipped without it
    torch = None

F64 = ember.float64
GRAIN = ember._C._thresholds()["grain_size"]
needs_gpu = pytest.mark.skipif(not ember.cuda.is_available(), reason="needs a CUDA GPU")
needs_torch = pytest.mark.skipif(torch is None, reason="needs torch")


@pytest.fixture(params=[1, 2, 3])
def threads(request):
    prev = ember.get_num_threads()
    ember.set_num_threads(request.param)
    yield request.param
    ember.set_num_threads(prev)


def distinct(*shape, dtype=np.float64, seed=0):
    """Values all different (no ties between window maxima)."""
    n = int(np.prod(shape))
    return (np.random.default_rng(seed).permutation(n) * (4.0 / max(n, 1)) - 2.0).reshape(shape).astype(dtype)


def noncontig(a):
    """An ember tensor of `a`'s values whose last two dims are transposed in memory."""
    return ember.tensor(np.ascontiguousarray(np.swapaxes(a, -1, -2))).transpose(-1, -2)


# kernel, stride, padding, dilation, ceil_mode
MAX_GRID = [(2, None, 0, 1, False), (3, 2, 1, 1, False), (3, 2, 1, 1, True), ((2, 3), (1, 2), (1, 0), (2, 1), True),
            (3, 1, 1, 2, False), ((3, 1), 2, (1, 0), 1, True), (4, 3, 2, 1, True), (1, 1, 0, 1, False)]


@pytest.mark.parametrize("shape", [(3, 7, 8), (2, 3, 9, 6), (0, 2, 5, 5)])
@pytest.mark.parametrize("k,s,p,d,ceil", MAX_GRID)
def test_max_pool2d_values_and_indices(shape, k, s, p, d, ceil):
    a = distinct(*shape, dtype=np.float32)
    for x in (ember.tensor(a), noncontig(a)):
        out, idx = F.max_pool2d(x, k, s, p, d, ceil, return_indices=True)
        want, want_idx = np_max_pool2d_with_indices(a, k, s if s is not None else (), p, d, ceil)
        np.testing.assert_array_equal(out.numpy(), want)
        np.testing.assert_array_equal(idx.numpy(), want_idx)
        assert idx.dtype == ember.int64
        np.testing.assert_array_equal(F.max_pool2d(x, k, s, p, d, ceil).numpy(), want)
        np.testing.assert_array_equal(ember.max_pool2d(x, k, s if s is not None else [], p, d, ceil).numpy(), want)
    if torch is not None:
        t_out, t_idx = TF.max_pool2d(torch.tensor(a), k, s, p, d, ceil, return_indices=True)
        np.testing.assert_array_equal(out.numpy(), t_out.numpy())
        np.testing.assert_array_equal(idx.numpy(), t_idx.numpy())


@pytest.mark.parametrize("k,s,p,ceil,count_pad,divisor", [
    (2, None, 0, False, True, None), (3, 2, 1, False, True, None), (3, 2, 1, True, False, None),
    ((3, 2), (2, 1), (1, 1), True, True, None), (3, 2, 1, True, True, 5), (4, 3, 2, True, False, None),
    ((2, 4), 3, (1, 2), False, False, 2)])
def test_avg_pool2d_option_grid(k, s, p, ceil, count_pad, divisor):
    a = np.random.default_rng(1).standard_normal((2, 3, 9, 7))
    want = np_avg_pool2d(a, k, s if s is not None else (), p, ceil, count_pad, divisor)
    for x in (ember.tensor(a), noncontig(a), ember.tensor(a[0])):
        got = F.avg_pool2d(x, k, s, p, ceil, count_pad, divisor).numpy()
        np.testing.assert_allclose(got, want if x.dim() == 4 else want[0], rtol=1e-12, atol=1e-12)
    if torch is not None:
        t = TF.avg_pool2d(torch.tensor(a), k, s, p, ceil, count_pad, divisor)
        np.testing.assert_allclose(want, t.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("out_size", [(3, 4), 1, (1, 1), (4, 4), (7, 5), (2, None), (None, 3), 8])
def test_adaptive_pools_2d(out_size):
    a = distinct(2, 3, 8, 6)
    x = ember.tensor(a)
    size = [s if s is not None else a.shape[-2 + i] for i, s in
            enumerate(out_size if isinstance(out_size, tuple) else (out_size, out_size))]
    np.testing.assert_allclose(F.adaptive_avg_pool2d(x, out_size).numpy(), np_adaptive_avg_pool2d(a, size),
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(F.adaptive_avg_pool2d(noncontig(a), out_size).numpy(), np_adaptive_avg_pool2d(a, size),
                               rtol=1e-12, atol=1e-12)
    out, idx = F.adaptive_max_pool2d(noncontig(a), out_size, return_indices=True)
    want, want_idx = np_adaptive_max_pool2d(a, size)
    np.testing.assert_array_equal(out.numpy(), want)
    np.testing.assert_array_equal(idx.numpy(), want_idx)
    if torch is not None:
        t = torch.tensor(a)
        np.testing.assert_allclose(F.adaptive_avg_pool2d(x, out_size).numpy(),
                                   TF.adaptive_avg_pool2d(t, out_size).numpy(), rtol=1e-12, atol=1e-12)
        t_out, t_idx = TF.adaptive_max_pool2d(t, out_size, return_indices=True)
        np.testing.assert_array_equal(idx.numpy(), t_idx.numpy())


def test_pools_1d():
    a = distinct(2, 3, 11)
    x = ember.tensor(a)
    for k, s, p, d, ceil in [(2, None, 0, 1, False), (3, 2, 1, 1, True), (3, 1, 1, 2, False), (4, 3, 2, 1, True)]:
        out, idx = F.max_pool1d(x, k, s, p, d, ceil, return_indices=True)
        want, want_idx = np_max_pool2d_with_indices(a[:, :, None, :], (1, k), (1, s or k), (0, p), (1, d), ceil)
        np.testing.assert_array_equal(out.numpy(), want[:, :, 0])
        np.testing.assert_array_equal(idx.numpy(), want_idx[:, :, 0])
        np.testing.assert_array_equal(ember.max_pool1d(x[0], k, s or k, p, d, ceil).numpy(), want[0, :, 0])
        for count_pad in (True, False):
            np.testing.assert_allclose(
                F.avg_pool1d(x, k, s, p, ceil, count_pad).numpy(),
                np_avg_pool2d(a[:, :, None, :], (1, k), (1, s or k), (0, p), ceil, count_pad)[:, :, 0], rtol=1e-12)
    for o in (1, 4, 11, 15):
        np.testing.assert_allclose(F.adaptive_avg_pool1d(x, o).numpy(),
                                   np_adaptive_avg_pool2d(a[:, :, None, :], (1, o))[:, :, 0], rtol=1e-12)
        out, idx = F.adaptive_max_pool1d(x, o, return_indices=True)
        want, want_idx = np_adaptive_max_pool2d(a[:, :, None, :], (1, o))
        np.testing.assert_array_equal(out.numpy(), want[:, :, 0])
        np.testing.assert_array_equal(idx.numpy(), want_idx[:, :, 0])
        np.testing.assert_array_equal(F.adaptive_max_pool1d(x, o).numpy(), want[:, :, 0])
    if torch is not None:
        t = torch.tensor(a)
        np.testing.assert_array_equal(ember.max_pool1d_with_indices(x, 3, 2, 1, 1, True)[1].numpy(),
                                      torch.max_pool1d_with_indices(t, 3, 2, 1, 1, True)[1].numpy())
        np.testing.assert_allclose(ember.avg_pool1d(x, 3, 2, 1, True, False).numpy(),
                                   torch.avg_pool1d(t, 3, 2, 1, True, False).numpy(), rtol=1e-12)


def test_max_pool_nan_wins_and_neg_inf_keeps_the_first_index():
    a = np.array([[[1.0, np.nan, 3.0], [np.nan, 0.5, -1.0], [-np.inf, -np.inf, -np.inf]]], dtype=np.float32)
    out, idx = F.max_pool2d(ember.tensor(a), 2, 1, return_indices=True)
    want, want_idx = np_max_pool2d_with_indices(a, 2, 1)
    np.testing.assert_array_equal(out.numpy(), want)
    np.testing.assert_array_equal(idx.numpy(), want_idx)
    out3, idx3 = F.max_pool2d(ember.tensor(np.full((1, 3, 3), -np.inf, np.float32)), 3, return_indices=True)
    assert out3.item() == -np.inf and idx3.item() == 0
    if torch is not None:
        t_out, t_idx = TF.max_pool2d(torch.tensor(a), 2, 1, return_indices=True)
        np.testing.assert_array_equal(idx.numpy(), t_idx.numpy())


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "int64", "int32", "uint8", "int8"])
def test_max_pool_dtypes(dtype):
    a = distinct(2, 6, 7, dtype=np.float32)
    if dtype in ("int64", "int32", "int8"):
        a = np.random.default_rng(2).integers(-50, 50, (2, 6, 7))
    elif dtype == "uint8":
        a = np.random.default_rng(2).integers(0, 200, (2, 6, 7))
    x = ember.tensor(a).to(getattr(ember, dtype))
    out, idx = F.max_pool2d(x, 3, 2, 1, return_indices=True)
    assert out.dtype == x.dtype
    want, want_idx = np_max_pool2d_with_indices(x.to(F64).numpy(), 3, 2, 1)
    np.testing.assert_array_equal(out.to(F64).numpy(), want)
    if dtype.startswith("float") or dtype == "bfloat16":
        np.testing.assert_array_equal(idx.numpy(), want_idx)  # integers may tie; values suffice there


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_avg_and_adaptive_pools(dtype):
    a = np.random.default_rng(3).standard_normal((2, 3, 8, 8)).astype(np.float32)
    x = ember.tensor(a).to(getattr(ember, dtype))
    ref = x.to(ember.float32).numpy()
    tol = 1e-2 if dtype == "float16" else 5e-2
    got = F.avg_pool2d(x, 3, 2, 1)
    assert got.dtype == x.dtype
    np.testing.assert_allclose(got.to(ember.float32).numpy(), np_avg_pool2d(ref, 3, 2, 1), rtol=tol, atol=tol)
    np.testing.assert_allclose(F.adaptive_avg_pool2d(x, 3).to(ember.float32).numpy(),
                               np_adaptive_avg_pool2d(ref, 3), rtol=tol, atol=tol)
    np.testing.assert_array_equal(F.adaptive_max_pool2d(x, 3).to(ember.float32).numpy(),
                                  np_adaptive_max_pool2d(ref, 3)[0])


def test_integer_avg_pool_truncates_and_unsupported_dtypes_raise():
    a = np.arange(2 * 4 * 4).reshape(2, 4, 4) - 10
    np.testing.assert_array_equal(F.avg_pool2d(ember.tensor(a), 2).numpy(), np_avg_pool2d(a, 2))
    if torch is not None:
        np.testing.assert_array_equal(F.avg_pool2d(ember.tensor(a), 2).numpy(), TF.avg_pool2d(torch.tensor(a), 2))
    with pytest.raises(NotImplementedError, match="adaptive_avg_pool2d"):
        F.adaptive_avg_pool2d(ember.tensor(a), 2)
    with pytest.raises((NotImplementedError, RuntimeError), match="avg_pool2d"):
        F.avg_pool2d(ember.tensor(a).to(ember.int32), 2)
    with pytest.raises((NotImplementedError, RuntimeError), match="max_pool2d"):
        F.max_pool2d(ember.ones(1, 2, 2, dtype=ember.bool), 2)


# Realistic sizes and around the grain (planes per chunk = grain / plane size), at 1-3 threads.
BIG = [((4, 64, 56, 56), 3, 2, 1), ((2, 3, 224, 224), 2, 2, 0), ((1, GRAIN // 64 + 1, 8, 8), 3, 1, 1),
       ((GRAIN // 49 - 1, 7, 7), 2, 1, 0), ((3, 1, 181, 181), 3, 2, 1)]


@pytest.mark.parametrize("shape,k,s,p", BIG, ids=[str(b[0]) for b in BIG])
def test_realistic_sizes_forward_and_backward(threads, shape, k, s, p):
    a = np.random.default_rng(4).standard_normal(shape).astype(np.float32)
    x = ember.tensor(a, requires_grad=True)
    out, idx = F.max_pool2d(x, k, s, p, return_indices=True)
    g = np.random.default_rng(5).standard_normal(out.shape).astype(np.float32)
    out.backward(ember.tensor(g))
    avg = F.avg_pool2d(x.detach().requires_grad_(), k, s, p)
    if torch is not None:
        t = torch.tensor(a, requires_grad=True)
        t_out, t_idx = TF.max_pool2d(t, k, s, p, return_indices=True)
        t_out.backward(torch.tensor(g))
        np.testing.assert_array_equal(out.detach().numpy(), t_out.detach().numpy())
        np.testing.assert_array_equal(idx.numpy(), t_idx.numpy())
        np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(avg.detach().numpy(), TF.avg_pool2d(torch.tensor(a), k, s, p).numpy(),
                                   rtol=1e-5, atol=1e-6)
    else:
        # the gradient is grad scattered to the indices
        want = np.zeros(a.reshape(-1, a.shape[-2] * a.shape[-1]).shape, np.float64)
        for plane, (gi, ii) in enumerate(zip(g.reshape(len(want), -1), idx.numpy().reshape(len(want), -1))):
            np.add.at(want[plane], ii, gi)
        np.testing.assert_allclose(x.grad.numpy().reshape(want.shape), want, rtol=1e-6, atol=1e-6)
    ga = np.random.default_rng(6).standard_normal(avg.shape).astype(np.float32)
    avg.backward(ember.tensor(ga))


@pytest.mark.parametrize("fn", [
    lambda a: F.max_pool2d(a, 2, 1, 1) ** 2,
    lambda a: F.max_pool2d(a, (2, 3), (1, 2), (1, 1), (1, 1), True),
    lambda a: F.max_pool2d(a, 2, 1, 0, 2),
    lambda a: F.max_pool1d(a.flatten(-2), 3, 2, 1, 1, True),
    lambda a: F.avg_pool2d(a, 2, 1, 1, True, False) ** 2,
    lambda a: F.avg_pool2d(a, (3, 2), (2, 1), (1, 1), True, True, 4),
    lambda a: F.avg_pool1d(a.flatten(-2), 3, 2, 1, True, False) ** 2,
    lambda a: F.adaptive_avg_pool2d(a, (2, 3)) ** 2,
    lambda a: F.adaptive_max_pool2d(a, (3, 2)) ** 2,
    lambda a: F.adaptive_max_pool1d(a.flatten(-2), 5) ** 2,
    lambda a: F.adaptive_avg_pool1d(a.flatten(-2), 5) ** 2,
], ids=["max2d", "max2d-ceil", "max2d-dil", "max1d", "avg2d", "avg2d-div", "avg1d", "aavg2d", "amax2d", "amax1d",
        "aavg1d"])
def test_gradcheck_gradgradcheck_and_jvp(fn):
    for x in (ember.tensor(distinct(2, 3, 4), requires_grad=True),
              noncontig(distinct(1, 4, 3)).requires_grad_()):
        assert gradcheck(fn, (x,), check_forward_ad=True)
        assert gradgradcheck(fn, (x,), check_fwd_over_rev=True)


def test_private_gradient_ops_jvp_and_gradgrad():
    idx = ember.tensor([[[0, 5], [7, 5]]])
    x = ember.zeros(1, 3, 3, dtype=F64)
    g = ember.tensor(distinct(1, 2, 2), requires_grad=True)
    assert gradcheck(lambda t: ember._max_pool_backward(t, x, idx), (g,), check_forward_ad=True)
    assert gradgradcheck(lambda t: ember._max_pool_backward(t * t, x, idx), (g,), check_fwd_over_rev=True)
    a = ember.tensor(distinct(1, 3, 3), requires_grad=True)
    assert gradcheck(lambda t: ember._max_pool_gather(t, idx), (a,), check_forward_ad=True)
    # the backward of max_pool_backward's gradient scatters again: duplicates add up (index 5 twice)
    out = ember._max_pool_backward(ember.ones(1, 2, 2, dtype=F64), x, idx)
    assert out.tolist() == [[[1.0, 0.0, 0.0], [0.0, 0.0, 2.0], [0.0, 1.0, 0.0]]]
    g2 = ember.tensor(distinct(1, 4, 3), requires_grad=True)
    back = lambda t: ember._avg_pool2d_backward(t, ember.zeros(1, 3, 4, dtype=F64), [2, 2], [1, 2], [1, 1], True,
                                                 False, None)
    assert gradcheck(back, (g2,), check_forward_ad=True)
    assert gradgradcheck(lambda t: back(t * t), (g2,), check_fwd_over_rev=True)


def test_max_pool_double_backward_is_a_gather():
    a = ember.tensor(distinct(1, 4, 4), requires_grad=True)
    out, idx = F.max_pool2d(a, 2, return_indices=True)
    v = ember.tensor(distinct(1, 4, 4, seed=3))
    go = ember.ones(out.shape, dtype=F64, requires_grad=True)
    (ga,) = ember.autograd.grad(out, a, go, create_graph=True)
    (ggo,) = ember.autograd.grad((ga * v).sum(), go)
    np.testing.assert_array_equal(ggo.numpy(), v.numpy().reshape(1, -1)[:, idx.numpy().reshape(-1)].reshape(out.shape))


ERRORS = [
    (lambda F, x: F.max_pool2d(x, 3, padding=2),
     "pad should be at most half of effective kernel size, but got pad=2, kernel_size=3 and dilation=1"),
    (lambda F, x: F.max_pool2d(x, 7), r"Given input size: \(2x5x5\). Calculated output size: \(2x0x0\). Output size is too small"),
    (lambda F, x: F.max_pool2d(x, 0), "stride should not be zero"),
    (lambda F, x: F.max_pool2d(x, 0, 1), "kernel size should be greater than zero, but got kH: 0 kW: 0"),
    (lambda F, x: F.max_pool2d(x, 2, dilation=0), "dilation should be greater than zero, but got dilationH: 0 dilationW: 0"),
    (lambda F, x: F.max_pool2d(x[0, 0], 2), r"non-empty 3D or 4D \(batch mode\) tensor expected for input"),
    (lambda F, x: F.max_pool2d(x[:, :0], 2), r"Expected 3D or 4D \(batch mode\) tensor with optional 0 dim batch size "
                                          r"for input, but got:\[1, 0, 5, 5\]"),
    (lambda F, x: F.max_pool2d(x, (2, 2, 2)), "max_pool2d: kernel_size must either be a single int, or a tuple of two ints"),
    (lambda F, x: F.avg_pool2d(x, 3, padding=2), "pad should be at most half of effective kernel size"),
    (lambda F, x: F.avg_pool2d(x, 2, divisor_override=0), "divisor must be not zero"),
    (lambda F, x: F.avg_pool2d(x, 7), "Output size is too small"),
    (lambda F, x: F.max_pool1d(x[0], 7), r"max_pool1d\(\) Invalid computed output size: 0"),
    (lambda F, x: F.max_pool1d(x[0], 2, padding=2),
     r"max_pool1d\(\) padding should be at most half of kernel size, but got padding=2 and kernel_size=2"),
    (lambda F, x: F.max_pool1d(x, 2), r"max_pool1d: Expected 2D or 3D \(batch mode\) tensor with optional 0 dim batch "
                                      r"size for input, but got:\[1, 2, 5, 5\]"),
    (lambda F, x: F.max_pool1d(x[0, 0, 0], 2, return_indices=True),
     r"Expected 2 to 3 dimensions, but got 1-dimensional tensor for argument #1 'self' \(while checking arguments for "
     r"max_pool1d\)"),
    (lambda F, x: F.adaptive_avg_pool1d(x[0, 0, 0], 2), r"Expected 2 to 3 dimensions, but got 1-dimensional tensor"),
    (lambda F, x: F.max_pool1d(x[0], 2, 0), r"max_pool1d\(\) stride must be greater than zero, but got 0"),
    (lambda F, x: F.avg_pool1d(x[0], (2, 2)), r"avg_pool1d\(\) argument 'kernel_size' should contain one int \(got 2\)"),
    (lambda F, x: F.adaptive_avg_pool2d(x[0, :, :0], 2),
     r"adaptive_avg_pool2d\(\): Expected input to have non-zero size for non-batch dimensions, but input has sizes "
     r"\[2, 0, 5\] with dimension 1 being empty"),
    (lambda F, x: F.adaptive_max_pool2d(x[0, :, :0], 2), r"adaptive_max_pool2d\(\): Expected input to have non-zero size"),
    (lambda F, x: F.adaptive_max_pool2d(x[0, 0], 2), r"adaptive_max_pool2d\(\): Expected 3D or 4D tensor, but got: \[5, 5\]"),
    (lambda F, x: F.adaptive_avg_pool1d(x[0], (2, 2)),
     r"adaptive_avg_pool1d\(\) argument 'output_size' should contain one int \(got 2\)"),
]


@pytest.mark.parametrize("fn,message", ERRORS, ids=[str(i) for i in range(len(ERRORS))])
def test_errors_match_pytorch(fn, message):
    a = np.random.default_rng(7).standard_normal((1, 2, 5, 5)).astype(np.float32)
    with pytest.raises(RuntimeError, match=message):
        fn(F, ember.tensor(a))
    if torch is not None:
        with pytest.raises(RuntimeError, match=message):
            fn(TF, torch.tensor(a))


def test_public_names_and_signatures():
    for name in ("max_pool1d", "max_pool2d", "avg_pool1d", "adaptive_avg_pool1d", "adaptive_max_pool1d",
                 "max_pool1d_with_indices"):
        assert callable(getattr(ember, name))
    x = ember.tensor(distinct(1, 2, 4, 4))
    assert F.max_pool2d_with_indices(x, 2)[0].shape == (1, 2, 2, 2)
    assert isinstance(F.max_pool2d(x, 2, return_indices=True), tuple)
    np.testing.assert_array_equal(F.max_pool2d(x, kernel_size=2, stride=None).numpy(),
                                  ember.nn.functional.max_pool2d_with_indices(x, 2)[0].numpy())
    assert F.adaptive_max_pool1d_with_indices(x[0], 2)[1].dtype == ember.int64


@needs_gpu
@pytest.mark.parametrize("fn,op", [(lambda x: F.max_pool2d(x, 2), "max_pool2d_with_indices"),
                                   (lambda x: F.avg_pool2d(x, 2), "avg_pool2d"),
                                   (lambda x: F.adaptive_max_pool2d(x, 2), "adaptive_max_pool2d")])
def test_cuda_slot_names_the_op_and_device(fn, op):
    with pytest.raises(NotImplementedError, match=f"{op}: .*not implemented on cuda"):
        fn(ember.ones(1, 4, 4).cuda())
