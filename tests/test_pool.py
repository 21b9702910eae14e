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
from harness.refs import (np_adaptive_avg_pool2d, np_upsample3d, np_adaptive_max_pool2d, np_avg_pool2d, np_max_pool2d_with_indices,
                          np_pad, np_upsample_linear, np_upsample_nearest)

try:
    import torch
    import torch.nn.functional as TF
except ImportError:  # the torch comparisons are skipped without it
    torch = None

F64 = ember.float64
GRAIN = ember._C._thresholds()["grain_size"]
needs_gpu = pytest.mark.skipif(not ember.cuda.is_available(), reason="needs a CUDA GPU")
needs_torch = pytest.mark.skipif(torch is None, reason="needs torch")


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
                                   (lambda x: F.adaptive_max_pool2d(x, 2), "adaptive_max_pool2d"),
                                   (lambda x: F.interpolate(x, scale_factor=2, mode="bilinear"), "_upsample")])
def test_cuda_slot_names_the_op_and_device(fn, op):
    with pytest.raises(NotImplementedError, match=f"{op}: .*not implemented on cuda"):
        fn(ember.ones(1, 4, 4).cuda())


# ---------------------------------------------------------------- padding and pixel shuffles
PADS = [((2, 5), (2, 1)), ((2, 3, 4), (1, 3, 2, 0)), ((1, 2, 4, 5), (2, 2, 1, 3)), ((2, 3, 4), (1, 2, -1, 2)),
        ((2, 4, 3), (-1, 2, 2, -2)), ((2, 3, 3), (1, -2, 0, 1)), ((1, 2, 3, 4, 5), (1, 2, 0, 1, 2, 1)),
        ((2, 5, 5), (-2, 1, -1, -3)), ((3, 6), (5, 0))]


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
@pytest.mark.parametrize("shape,amounts", PADS, ids=[str(p[1]) for p in PADS])
def test_pad_modes_against_numpy_and_torch(mode, shape, amounts):
    a = np.random.default_rng(8).standard_normal(shape)
    if mode == "reflect" and max(amounts) >= min(shape[-len(amounts) // 2:]):
        pytest.skip("reflect pads less than the dim")
    want = np_pad(a, amounts, mode, 0.5 if mode == "constant" else None)
    value = 0.5 if mode == "constant" else None
    for x in (ember.tensor(a), noncontig(a)):
        got = F.pad(x, amounts, mode, value)
        np.testing.assert_array_equal(got.numpy(), want)
    if torch is not None:
        np.testing.assert_array_equal(TF.pad(torch.tensor(a), amounts, mode, value).numpy(), want)


def test_constant_pad_casts_the_value_and_always_copies():
    x = ember.tensor([[1, 2], [3, 4]])
    assert ember.constant_pad_nd(x, [1, 0], 2.5).tolist() == [[2, 1, 2], [2, 3, 4]]
    y = ember.constant_pad_nd(x, [0, 0])
    y[0, 0] = 9
    assert x[0, 0].item() == 1
    crop = F.pad(x, (-1, 0))
    crop[0, 0] = 9
    assert x.tolist() == [[1, 2], [3, 4]] and crop.tolist() == [[9], [4]]
    assert F.pad(ember.ones(2, 2, dtype=ember.bool), (1, 0)).tolist() == [[False, True, True], [False, True, True]]


PAD_ERRORS = [
    (lambda F, x: F.pad(x, (1, 2, 3)), RuntimeError, "Padding length must be divisible by 2"),
    (lambda F, x: F.pad(x, (1,) * 10), RuntimeError,
     "Padding length should be less than or equal to two times the input dimension but got padding length 10 and "
     "input of dimension 4"),
    (lambda F, x: F.pad(x, (5, 5), mode="reflect"), NotImplementedError,
     "Padding size 2 is not supported for 4D input tensor."),
    (lambda F, x: F.pad(x, (1, 1), mode="foo"), NotImplementedError, "Unrecognised padding mode foo"),
    (lambda F, x: F.pad(x, (5, 1, 1, 1), mode="reflect"), RuntimeError,
     r"Argument #4: Padding size should be less than the corresponding input dimension, but got: padding \(5, 1\) at "
     r"dimension 3 of input \[1, 2, 5, 5\]"),
    (lambda F, x: F.pad(x, (6, 1, 1, 1), mode="circular"), RuntimeError,
     "Padding value causes wrapping around more than once."),
    (lambda F, x: F.pad(x, (1, 1, 1, 1), mode="reflect", value=1.0), RuntimeError,
     "Padding mode \"reflect\" doesn't take in value argument"),
    (lambda F, x: F.pad(x, (-6, 1)), RuntimeError, r"narrow\(\): length must be non-negative."),
    (lambda F, x: F.pixel_shuffle(x, 2), RuntimeError,
     r"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of upscale_factor, but "
     r"input.size\(-3\)=2 is not divisible by 4"),
    (lambda F, x: F.pixel_shuffle(x[0, 0], 2), RuntimeError,
     r"pixel_shuffle expects input to have at least 3 dimensions, but got input with 2 dimension\(s\)"),
    (lambda F, x: F.pixel_shuffle(x, 0), RuntimeError, "pixel_shuffle expects a positive upscale_factor, but got 0"),
    (lambda F, x: F.pixel_unshuffle(x, 2), RuntimeError,
     r"pixel_unshuffle expects height to be divisible by downscale_factor, but input.size\(-2\)=5 is not divisible by 2"),
    (lambda F, x: F.pixel_unshuffle(x[:, :, :4], 2), RuntimeError,
     r"pixel_unshuffle expects width to be divisible by downscale_factor, but input.size\(-1\)=5 is not divisible by 2"),
]


@pytest.mark.parametrize("fn,cls,message", PAD_ERRORS, ids=[str(i) for i in range(len(PAD_ERRORS))])
def test_pad_and_shuffle_errors_match_pytorch(fn, cls, message):
    a = np.random.default_rng(9).standard_normal((1, 2, 5, 5)).astype(np.float32)
    with pytest.raises(cls, match=message):
        fn(F, ember.tensor(a))
    if torch is not None:
        with pytest.raises(cls, match=message):
            fn(TF, torch.tensor(a))


def test_pixel_shuffle_round_trip_and_torch():
    a = np.random.default_rng(10).standard_normal((2, 3, 18, 4, 6)).astype(np.float32)
    x = ember.tensor(a)
    y = F.pixel_shuffle(x, 3)
    assert y.shape == (2, 3, 2, 12, 18)
    np.testing.assert_array_equal(F.pixel_unshuffle(y, 3).numpy(), a)
    if torch is not None:
        np.testing.assert_array_equal(y.numpy(), TF.pixel_shuffle(torch.tensor(a), 3).numpy())
        np.testing.assert_array_equal(F.pixel_unshuffle(x, 2).numpy(), TF.pixel_unshuffle(torch.tensor(a), 2).numpy())


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
def test_pad_gradients(mode):
    x = ember.tensor(distinct(1, 3, 4), requires_grad=True)
    fn = lambda t: F.pad(t, (2, -1, 1, 2), mode) ** 2
    assert gradcheck(fn, (x,), check_forward_ad=True)
    assert gradgradcheck(fn, (x,), check_fwd_over_rev=True)


# ---------------------------------------------------------------- interpolate
SIZES = [dict(size=9), dict(size=2), dict(scale_factor=2), dict(scale_factor=0.7), dict(scale_factor=2.3),
         dict(scale_factor=1.7, recompute_scale_factor=True), dict(scale_factor=3), dict(size=(4, 11)),
         dict(scale_factor=(1.5, 0.5))]
MODES = [("nearest", None), ("nearest-exact", None), ("linear", False), ("linear", True), ("area", None)]


@pytest.mark.parametrize("kwargs", SIZES, ids=[str(s) for s in SIZES])
@pytest.mark.parametrize("mode,align", MODES, ids=[f"{m}-{a}" for m, a in MODES])
@pytest.mark.parametrize("ndim", [3, 4])
def test_interpolate_against_numpy_and_torch(ndim, mode, align, kwargs):
    shape = (2, 3, 7) if ndim == 3 else (2, 2, 5, 6)
    spatial = ndim - 2
    if any(isinstance(v, tuple) and len(v) != spatial for v in kwargs.values()):
        pytest.skip("sizes for the other rank")
    mode = "bilinear" if mode == "linear" and ndim == 4 else mode
    a = np.random.default_rng(11).standard_normal(shape)
    got = F.interpolate(noncontig(a), mode=mode, align_corners=align, **kwargs).numpy()
    scale = kwargs.get("scale_factor")
    scales = list(scale) if isinstance(scale, tuple) else [scale] * spatial
    size = kwargs.get("size")
    out = list(size) if isinstance(size, tuple) else [size] * spatial if size else [
        int(n * s) for n, s in zip(shape[2:], scales)]
    if kwargs.get("recompute_scale_factor"):
        scales = [None] * spatial
    hw = ([None] + scales)[-2:]
    if mode in ("nearest", "nearest-exact"):
        want = np_upsample_nearest(a, out, *hw, mode == "nearest-exact")
    elif mode == "area":
        want = np_adaptive_avg_pool2d(a if ndim == 4 else a[:, :, None], out if ndim == 4 else [1] + out)
        want = want if ndim == 4 else want[:, :, 0]
    else:
        want = np_upsample_linear(a, out, align, *hw)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    if torch is not None:
        t = TF.interpolate(torch.tensor(a), mode=mode, align_corners=align, **kwargs).numpy()
        np.testing.assert_allclose(got, t, rtol=1e-12, atol=1e-12)


SIZES_5D = [dict(size=5), dict(size=(4, 7, 2)), dict(scale_factor=2), dict(scale_factor=0.6),
            dict(scale_factor=(1.5, 2.3, 0.5)), dict(scale_factor=1.7, recompute_scale_factor=True), dict(size=1)]
MODES_5D = [("nearest", None), ("nearest-exact", None), ("trilinear", False), ("trilinear", True)]


@pytest.mark.parametrize("kwargs", SIZES_5D, ids=[str(s) for s in SIZES_5D])
@pytest.mark.parametrize("mode,align", MODES_5D, ids=[f"{m}-{a}" for m, a in MODES_5D])
def test_interpolate_5d_against_numpy_and_torch(threads, mode, align, kwargs):
    """upsample_trilinear3d / upsample_nearest3d (and nearest-exact): non-contiguous input, 1-3 threads."""
    shape = (2, 3, 3, 4, 5)
    a = np.random.default_rng(14).standard_normal(shape)
    got = F.interpolate(noncontig(a), mode=mode, align_corners=align, **kwargs)
    scale, size = kwargs.get("scale_factor"), kwargs.get("size")
    scales = list(scale) if isinstance(scale, tuple) else [scale] * 3
    out = list(size) if isinstance(size, tuple) else [size] * 3 if size else [int(n * s) for n, s in zip(shape[2:], scales)]
    if kwargs.get("recompute_scale_factor"):
        scales = [None] * 3
    want = np_upsample3d(a, out, mode == "trilinear", mode == "nearest-exact", bool(align), *scales)
    assert tuple(got.shape) == shape[:2] + tuple(out)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12)
    name = {"nearest": "UpsampleNearest3DBackward0", "nearest-exact": "UpsampleNearestExact3DBackward0",
            "trilinear": "UpsampleTrilinear3DBackward0"}[mode]
    assert F.interpolate(noncontig(a).requires_grad_(), mode=mode, align_corners=align, **kwargs).grad_fn.name() == name
    if torch is not None:
        t = TF.interpolate(torch.tensor(a), mode=mode, align_corners=align, **kwargs).numpy()
        np.testing.assert_allclose(got.numpy(), t, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("mode,align", MODES_5D)
def test_interpolate_5d_gradients_float32_and_module(mode, align):
    x = ember.tensor(distinct(1, 2, 2, 3, 2), requires_grad=True)
    for kwargs in (dict(size=(3, 5, 3)), dict(scale_factor=1.5), dict(scale_factor=(0.5, 2, 1))):
        fn = lambda t: F.interpolate(t, mode=mode, align_corners=align, **kwargs) ** 2
        assert gradcheck(fn, (x,), check_forward_ad=True)
        assert gradgradcheck(fn, (x,), check_fwd_over_rev=True)
    a = np.random.default_rng(15).standard_normal((2, 2, 4, 3, 5)).astype(np.float32)
    up = ember.nn.Upsample(scale_factor=2, mode=mode, align_corners=align)
    got = up(ember.tensor(a))
    want = np_upsample3d(a, [8, 6, 10], mode == "trilinear", mode == "nearest-exact", bool(align), 2.0, 2.0, 2.0)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-6)
    xg = ember.tensor(a, requires_grad=True)
    g = np.random.default_rng(16).standard_normal(got.shape).astype(np.float32)
    up(xg).backward(ember.tensor(g))
    if torch is not None:
        tx = torch.tensor(a, requires_grad=True)
        tout = torch.nn.Upsample(scale_factor=2, mode=mode, align_corners=align)(tx)
        np.testing.assert_allclose(got.numpy(), tout.detach().numpy(), rtol=1e-5, atol=1e-6)
        tout.backward(torch.tensor(g))
        np.testing.assert_allclose(xg.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-5)


def test_interpolate_5d_errors():
    with pytest.raises(NotImplementedError, match="Got 5D input, but bilinear mode needs 4D input"):
        F.interpolate(ember.ones(1, 1, 2, 2, 2), size=4, mode="bilinear")
    with pytest.raises(RuntimeError, match="Input and output sizes should be greater than 0"):
        ember._C._nn.upsample_trilinear3d(ember.ones(1, 1, 2, 2, 2), [0, 2, 2], False)
    with pytest.raises(RuntimeError, match="Non-empty 5D data tensor expected"):
        ember._C._nn.upsample_nearest3d(ember.ones(1, 2, 2, 2), [2, 2, 2])


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_interpolate_float32_and_half_types(dtype):
    a = np.random.default_rng(12).standard_normal((2, 3, 16, 16)).astype(np.float32)
    x = ember.tensor(a).to(getattr(ember, dtype))
    tol = {"float32": 1e-5, "float16": 2e-3, "bfloat16": 2e-2}[dtype]  # float32: the blend cancels near 0
    for mode, align in [("bilinear", False), ("bilinear", True), ("nearest", None)]:
        got = F.interpolate(x, scale_factor=1.75, mode=mode, align_corners=align)
        assert got.dtype == x.dtype
        ref = x.to(ember.float32).numpy()
        want = (np_upsample_linear(ref, [28, 28], align, 1.75, 1.75) if mode == "bilinear"
                else np_upsample_nearest(ref, [28, 28], 1.75, 1.75))
        np.testing.assert_allclose(got.to(ember.float32).numpy(), want, rtol=tol, atol=tol)


@pytest.mark.parametrize("mode,align", [("nearest", None), ("nearest-exact", None), ("bilinear", False),
                                        ("bilinear", True), ("area", None)])
def test_interpolate_gradients(mode, align):
    x = ember.tensor(distinct(1, 2, 3, 4), requires_grad=True)
    for kwargs in (dict(size=(5, 3)), dict(scale_factor=1.5)):
        fn = lambda t: F.interpolate(t, mode=mode, align_corners=align, **kwargs) ** 2
        assert gradcheck(fn, (x,), check_forward_ad=True)
        assert gradgradcheck(fn, (x,), check_fwd_over_rev=True)


def test_upsample_aliases_warn_and_match_interpolate():
    x = ember.tensor(distinct(1, 2, 3, 4))
    with pytest.warns(UserWarning, match="nn.functional.upsample is deprecated"):
        y = F.upsample(x, scale_factor=2, mode="bilinear")
    np.testing.assert_array_equal(y.numpy(), F.interpolate(x, scale_factor=2, mode="bilinear").numpy())
    with pytest.warns(UserWarning, match="upsample_nearest is deprecated"):
        y = F.upsample_nearest(x, size=(5, 7))
    np.testing.assert_array_equal(y.numpy(), F.interpolate(x, size=(5, 7)).numpy())
    with pytest.warns(UserWarning, match="upsample_bilinear is deprecated"):
        y = F.upsample_bilinear(x, scale_factor=2)
    np.testing.assert_array_equal(y.numpy(), F.interpolate(x, scale_factor=2, mode="bilinear",
                                                           align_corners=True).numpy())


INTERP_ERRORS = [
    (dict(size=4, align_corners=True), ValueError, "align_corners option can only be set with the interpolating modes"),
    (dict(size=4, scale_factor=2), ValueError, "only one of size or scale_factor should be defined"),
    (dict(), ValueError, "either size or scale_factor should be defined"),
    (dict(size=(2, 3, 4)), ValueError, "Input and output must have the same number of spatial dimensions, but got "
                                       r"input with spatial dimensions of \[5, 5\] and output size of \(2, 3, 4\)"),
    (dict(scale_factor=(2, 3, 4)), ValueError, "Input and scale_factor must have the same number of spatial "
                                               "dimensions"),
    (dict(size=4, recompute_scale_factor=True), ValueError,
     "recompute_scale_factor is not meaningful with an explicit size."),
    (dict(size=4, mode="linear"), NotImplementedError, "Got 4D input, but linear mode needs 3D input"),
    (dict(size=4, mode="foo"), NotImplementedError, r"Input Error: Only 3D, 4D and 5D input Tensors supported \(got 4D\)"),
]


@pytest.mark.parametrize("kwargs,cls,message", INTERP_ERRORS, ids=[str(i) for i in range(len(INTERP_ERRORS))])
def test_interpolate_errors_match_pytorch(kwargs, cls, message):
    a = np.zeros((1, 2, 5, 5), np.float32)
    with pytest.raises(cls, match=message):
        F.interpolate(ember.tensor(a), **kwargs)
    if torch is not None:
        with pytest.raises(cls, match=message):
            TF.interpolate(torch.tensor(a), **kwargs)
    with pytest.raises(NotImplementedError, match="Got 3D input, but bilinear mode needs 4D input"):
        F.interpolate(ember.ones(1, 2, 3), size=4, mode="bilinear")


@pytest.mark.parametrize("shape", [(8, 64, 56, 56), (1, 3, 224, 224)])
def test_bilinear_realistic_sizes(threads, shape):
    a = np.random.default_rng(13).standard_normal(shape).astype(np.float32)
    got = F.interpolate(ember.tensor(a), scale_factor=2, mode="bilinear")
    if torch is not None:
        np.testing.assert_allclose(got.numpy(), TF.interpolate(torch.tensor(a), scale_factor=2, mode="bilinear").numpy(),
                                   rtol=1e-5, atol=1e-5)
    else:
        np.testing.assert_allclose(got.numpy()[:1], np_upsample_linear(a[:1], [2 * shape[2], 2 * shape[3]], False,
                                                                        2.0, 2.0), rtol=1e-5, atol=1e-5)


def test_upsample_backward_is_the_transposed_map():
    # <upsample(x), g> == <x, upsample_backward(g)> for every mode
    x = distinct(2, 3, 4, 5)
    for mode in [(False, False, False), (False, True, False), (True, False, False), (True, False, True)]:
        for size, scales in [((7, 3), (None, None)), ((9, 11), (2.5, 2.2))]:
            y = ember._upsample(ember.tensor(x), list(size), *mode, *scales)
            g = distinct(*y.shape, seed=1)
            back = ember._upsample_backward(ember.tensor(g), list(x.shape), list(size), *mode, *scales)
            np.testing.assert_allclose((y.numpy() * g).sum(), (x * back.numpy()).sum(), rtol=1e-12)


def test_private_upsample_gradients():
    g = ember.tensor(distinct(1, 2, 5), requires_grad=True)
    back = lambda t: ember._upsample_backward(t, [1, 2, 3], [5], True, False, True)
    assert gradcheck(back, (g,), check_forward_ad=True)
    assert gradgradcheck(lambda t: back(t * t), (g,), check_fwd_over_rev=True)


def test_max_pool_backward_checks_its_indices():
    g, x = ember.ones(1, 2, 2), ember.zeros(1, 3, 3)
    with pytest.raises(RuntimeError, match="expected int64 indices"):
        ember._max_pool_backward(g, x, ember.zeros(1, 2, 2))
    with pytest.raises(IndexError, match="an index is out of range for planes of 3x3"):
        ember._max_pool_backward(g, x, ember.tensor([[[0, 9], [1, 2]]]))
    with pytest.raises(RuntimeError, match="does not pool the planes of self"):
        ember._max_pool_backward(g, ember.zeros(2, 3, 3), ember.zeros(1, 2, 2, dtype=ember.int64))


def test_huge_factors_and_pads_refuse_cleanly():
    with pytest.raises(RuntimeError, match="overflowed"):
        ember.pixel_shuffle(ember.ones(2, 0, 3), 2**32)
    with pytest.raises((RuntimeError, MemoryError)):
        F.pad(ember.ones(2, 3), (2**40, 1), "replicate")
