"""i12-extras: the 3-D pools (max, average, adaptive, unpool), the power-average pools, gumbel_softmax,
pdist and nn.grad against NumPy loops and PyTorch: values, indices, gradients (gradcheck in float64),
module reprs and PyTorch's errors."""
import itertools
import math

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.autograd import gradcheck

try:
    import torch
    import torch.nn.functional as TF
except ImportError:  # the torch comparisons are skipped without it
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="needs PyTorch")


def values(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def t64(a, requires_grad=False):
    return ember.tensor(np.asarray(a, dtype=np.float64), requires_grad=requires_grad)


def np_out(size, k, p, s, d, ceil_mode):
    num = size + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)
    out = num // s + 1
    return out - 1 if ceil_mode and (out - 1) * s >= size + p else out


def np_max_pool3d(x, k, s, p, d, ceil_mode):
    """Loop reference: PyTorch's scan (first maximum in (kd, kh, kw) order wins)."""
    n, c, *sizes = x.shape
    outs = [np_out(*a, ceil_mode) for a in zip(sizes, k, p, s, d)]
    val = np.zeros((n, c, *outs))
    idx = np.zeros((n, c, *outs), dtype=np.int64)
    for o in itertools.product(*map(range, outs)):
        best, where = None, None
        for j in itertools.product(*map(range, k)):
            pos = [o[i] * s[i] - p[i] + j[i] * d[i] for i in range(3)]
            if all(0 <= pos[i] < sizes[i] for i in range(3)):
                v = x[:, :, pos[0], pos[1], pos[2]]
                flat = (pos[0] * sizes[1] + pos[1]) * sizes[2] + pos[2]
                if best is None:
                    best, where = v.copy(), np.full(v.shape, flat)
                else:
                    better = v > best
                    best, where = np.where(better, v, best), np.where(better, flat, where)
        val[(slice(None), slice(None)) + o] = best
        idx[(slice(None), slice(None)) + o] = where
    return val, idx


def np_avg_pool3d(x, k, s, p, ceil_mode, count_include_pad, divisor_override):
    n, c, *sizes = x.shape
    outs = [np_out(*a, 1, ceil_mode) for a in zip(sizes, k, p, s)]
    out = np.zeros((n, c, *outs))
    for o in itertools.product(*map(range, outs)):
        starts = [o[i] * s[i] - p[i] for i in range(3)]
        ends = [min(starts[i] + k[i], sizes[i] + p[i]) for i in range(3)]
        pool = math.prod(e - b for b, e in zip(starts, ends))
        lo = [max(b, 0) for b in starts]
        hi = [min(e, sz) for e, sz in zip(ends, sizes)]
        block = x[:, :, lo[0]:hi[0], lo[1]:hi[1], lo[2]:hi[2]]
        divisor = divisor_override or (pool if count_include_pad else block[0, 0].size)
        out[(slice(None), slice(None)) + o] = block.sum((2, 3, 4)) / divisor
    return out


def np_adaptive(x, outs, reduce):
    n, c, *sizes = x.shape
    out = np.zeros((n, c, *outs))
    for o in itertools.product(*map(range, outs)):
        sl = [slice((o[i] * sizes[i]) // outs[i], -((-(o[i] + 1) * sizes[i]) // outs[i])) for i in range(3)]
        out[(slice(None), slice(None)) + o] = reduce(x[(slice(None), slice(None)) + tuple(sl)], axis=(2, 3, 4))
    return out


MAX_CASES = [  # kernel, stride, padding, dilation, ceil_mode
    ((2, 2, 2), (2, 2, 2), (0, 0, 0), (1, 1, 1), False),
    ((3, 2, 3), (2, 1, 2), (1, 1, 0), (1, 2, 1), True),
    ((3, 3, 3), (2, 2, 2), (1, 1, 1), (1, 1, 1), True),
    ((2, 3, 1), (1, 2, 3), (1, 0, 0), (2, 1, 1), False),
]


@pytest.mark.parametrize("k,s,p,d,ceil_mode", MAX_CASES)
def test_max_pool3d_matches_loops(k, s, p, d, ceil_mode):
    x = np.round(values((2, 3, 5, 6, 7)), 1)  # rounding makes ties: PyTorch's first index must win
    out, idx = F.max_pool3d(t64(x), k, s, p, d, ceil_mode=ceil_mode, return_indices=True)
    ref, ref_idx = np_max_pool3d(x, k, s, p, d, ceil_mode)
    np.testing.assert_array_equal(out.numpy(), ref)
    np.testing.assert_array_equal(idx.numpy(), ref_idx)
    assert idx.dtype == ember.int64
    single = F.max_pool3d(t64(x[0]), k, s, p, d, ceil_mode)  # unbatched (C, D, H, W)
    np.testing.assert_array_equal(single.numpy(), ref[0])


def test_max_pool3d_empty_batch():
    assert F.max_pool3d(ember.zeros(0, 2, 4, 4, 4), 2).shape == (0, 2, 2, 2, 2)
    out, idx = F.max_pool3d(ember.zeros(0, 2, 4, 4, 4), 2, return_indices=True)
    assert out.shape == idx.shape == (0, 2, 2, 2, 2) and idx.dtype == ember.int64


def test_max_pool3d_integers_and_non_contiguous():
    x = np.random.default_rng(1).integers(-50, 50, (2, 3, 6, 5, 4))
    out = F.max_pool3d(ember.tensor(x), 2, 1, 1)
    np.testing.assert_array_equal(out.numpy(), np_max_pool3d(x, (2,) * 3, (1,) * 3, (1,) * 3, (1,) * 3, False)[0])
    y = values((2, 4, 5, 6, 3)).transpose(0, 4, 2, 3, 1)   # (2, 3, 5, 6, 4) as a strided view
    out = F.max_pool3d(t64(np.ascontiguousarray(y)).permute(0, 4, 2, 3, 1).permute(0, 4, 2, 3, 1), 2)
    np.testing.assert_array_equal(out.numpy(), np_max_pool3d(y, (2,) * 3, (2,) * 3, (0,) * 3, (1,) * 3, False)[0])


AVG_CASES = [  # kernel, stride, padding, ceil_mode, count_include_pad, divisor_override
    ((2, 2, 2), (2, 2, 2), (0, 0, 0), False, True, None),
    ((3, 2, 3), (2, 1, 2), (1, 1, 0), True, True, None),
    ((3, 2, 3), (2, 1, 2), (1, 1, 0), True, False, None),
    ((3, 3, 3), (2, 2, 2), (1, 1, 1), True, False, 5),
]


@pytest.mark.parametrize("k,s,p,ceil_mode,count_include_pad,divisor", AVG_CASES)
def test_avg_pool3d_matches_loops(k, s, p, ceil_mode, count_include_pad, divisor):
    x = values((2, 3, 5, 6, 7))
    out = F.avg_pool3d(t64(x), k, s, p, ceil_mode, count_include_pad, divisor)
    np.testing.assert_allclose(out.numpy(), np_avg_pool3d(x, k, s, p, ceil_mode, count_include_pad, divisor),
                               rtol=1e-12, atol=1e-12)


def test_avg_pool3d_integers_truncate():
    x = np.random.default_rng(2).integers(-9, 9, (1, 2, 4, 4, 4))
    out = F.avg_pool3d(ember.tensor(x), 3, 1, 1)
    assert out.dtype == ember.int64
    np.testing.assert_array_equal(out.numpy(), np.trunc(np_avg_pool3d(x, (3,) * 3, (1,) * 3, (1,) * 3, False,
                                                                       True, None)))


@pytest.mark.parametrize("outs", [(3, 4, 5), (1, 1, 1), (5, 6, 7), (2, 8, 3)])
def test_adaptive_pools3d_match_loops(outs):
    x = values((2, 3, 5, 6, 7))
    np.testing.assert_allclose(F.adaptive_avg_pool3d(t64(x), outs).numpy(), np_adaptive(x, outs, np.mean),
                               rtol=1e-12, atol=1e-12)
    out, idx = F.adaptive_max_pool3d(t64(x), outs, return_indices=True)
    np.testing.assert_array_equal(out.numpy(), np_adaptive(x, outs, np.max))
    flat = x.reshape(2, 3, -1)
    np.testing.assert_array_equal(np.take_along_axis(flat, idx.numpy().reshape(2, 3, -1), 2),
                                  out.numpy().reshape(2, 3, -1))
    assert F.adaptive_avg_pool3d(t64(x), (None, 2, None)).shape == (2, 3, 5, 2, 7)
    assert F.adaptive_max_pool3d(t64(x[0]), 2).shape == (3, 2, 2, 2)


def test_max_unpool3d_inverts_max_pool3d():
    x = values((2, 3, 4, 6, 4))
    out, idx = F.max_pool3d(t64(x), 2, return_indices=True)
    restored = F.max_unpool3d(out, idx, 2).numpy()
    kept = restored != 0
    np.testing.assert_array_equal(restored[kept], x[kept])
    assert kept.sum() == out.numel()
    np.testing.assert_array_equal(restored.reshape(2, 3, 2, 2, 3, 2, 2, 2).max((3, 5, 7)), out.numpy())
    assert F.max_unpool3d(out, idx, 2, output_size=(5, 7, 5)).shape == (2, 3, 5, 7, 5)
    assert F.max_unpool3d(out[0], idx[0], 2).shape == (3, 4, 6, 4)


def test_pool3d_gradients():
    x = t64(values((1, 2, 4, 5, 5)), requires_grad=True)
    assert gradcheck(lambda x: F.max_pool3d(x, 3, 2, 1, 1, ceil_mode=True), (x,))
    assert gradcheck(lambda x: F.max_pool3d(x, 2, 1, 0, 2), (x,))
    assert gradcheck(lambda x: F.avg_pool3d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False), (x,))
    assert gradcheck(lambda x: F.avg_pool3d(x, 2, 1, 1, divisor_override=3), (x,))
    assert gradcheck(lambda x: F.adaptive_avg_pool3d(x, (3, 2, 4)), (x,))
    assert gradcheck(lambda x: F.adaptive_max_pool3d(x, (3, 2, 4)), (x,))
    out, idx = F.max_pool3d(x.detach(), 2, return_indices=True)
    out.requires_grad_()
    assert gradcheck(lambda o: F.max_unpool3d(o, idx, 2, output_size=(4, 5, 5)), (out,))


def _pair(fn_e, fn_t, x, *args, **kwargs):
    e = fn_e(t64(x), *args, **kwargs)
    t = fn_t(torch.tensor(x), *args, **kwargs)
    for a, b in zip(e if isinstance(e, tuple) else (e,), t if isinstance(t, tuple) else (t,)):
        assert tuple(a.shape) == tuple(b.shape)
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12, atol=1e-12)


@needs_torch
@pytest.mark.parametrize("k,s,p,d,ceil_mode", MAX_CASES)
def test_pool3d_match_torch(k, s, p, d, ceil_mode):
    x = values((2, 3, 5, 6, 7), seed=3)
    _pair(F.max_pool3d, TF.max_pool3d, x, k, s, p, d, ceil_mode=ceil_mode, return_indices=True)
    _pair(F.avg_pool3d, TF.avg_pool3d, x, k, s, p, ceil_mode, False)
    _pair(F.avg_pool3d, TF.avg_pool3d, x[0], k, s, p, ceil_mode, True)
    _pair(F.adaptive_max_pool3d, TF.adaptive_max_pool3d, x, (s[0] + 1, None, k[2] + 2), True)
    _pair(F.adaptive_avg_pool3d, TF.adaptive_avg_pool3d, x[0], (s[0] + 1, d[1] + 3, k[2] + 2))
    xe, xt = t64(x, True), torch.tensor(x, requires_grad=True)
    out, ref = F.max_pool3d(xe, k, s, p, d, ceil_mode), TF.max_pool3d(xt, k, s, p, d, ceil_mode)
    weights = np.arange(1.0, ref.numel() + 1).reshape(ref.shape)  # overlapping windows' gradients add up
    (out * t64(weights)).sum().backward()
    (ref * torch.tensor(weights)).sum().backward()
    np.testing.assert_array_equal(xe.grad.numpy(), xt.grad.numpy())


BAD = [
    ("max_pool3d", (1, 1, 4, 4, 4), (2,), {"padding": 2}),
    ("max_pool3d", (1, 1, 4, 4, 4), (5,), {}),
    ("max_pool3d", (2, 4, 4), (2,), {}),
    ("max_pool3d", (1, 1, 4, 4, 4), ((2, 2),), {}),
    ("max_pool3d", (1, 1, 4, 4, 4), (2,), {"stride": (1, 1)}),
    ("max_pool3d", (1, 1, 4, 4, 4), (0,), {}),
    ("max_pool3d", (1, 1, 4, 4, 4), (0,), {"stride": 1}),
    ("max_pool3d", (1, 1, 4, 4, 4), (2,), {"stride": 0}),
    ("max_pool3d", (1, 1, 4, 4, 4), (2,), {"dilation": 0}),
    ("max_pool3d", (1, 0, 4, 4, 4), (2,), {}),
    ("avg_pool3d", (1, 1, 4, 4, 4), (2,), {"padding": 2}),
    ("avg_pool3d", (1, 1, 4, 4, 4), (5,), {}),
    ("avg_pool3d", (2, 4, 4), (2,), {}),
    ("avg_pool3d", (1, 1, 4, 4, 4), ((2, 2),), {}),
    ("avg_pool3d", (1, 1, 4, 4, 4), (2,), {"divisor_override": 0}),
    ("avg_pool3d", (1, 1, 4, 4, 4), (2,), {"stride": 0}),
    ("adaptive_avg_pool3d", (2, 4, 4), (2,), {}),
    ("adaptive_max_pool3d", (2, 4, 4), (2,), {}),
    ("adaptive_max_pool3d", (1, 1, 4, 4, 4), ((2, 2),), {}),
    ("adaptive_avg_pool3d", (1, 1, 4, 4, 4), ((2, 2),), {}),
    ("adaptive_avg_pool3d", (1, 1, 4, 4, 4), (-1,), {}),
    ("adaptive_avg_pool3d", (1, 1, 0, 4, 4), (2,), {}),
]


@needs_torch
@pytest.mark.parametrize("name,shape,args,kwargs", BAD)
def test_pool3d_errors_match_torch(name, shape, args, kwargs):
    with pytest.raises(Exception) as expected:
        getattr(TF, name)(torch.zeros(shape), *args, **kwargs)
    with pytest.raises(type(expected.value)) as got:
        getattr(F, name)(ember.zeros(shape), *args, **kwargs)
    assert str(got.value) == str(expected.value)


def test_pool3d_errors_without_torch():
    with pytest.raises(RuntimeError, match="pad should be at most half of effective kernel size"):
        F.max_pool3d(ember.zeros(1, 1, 4, 4, 4), 2, padding=2)
    with pytest.raises(NotImplementedError, match="adaptive_max_pool3d_cpu"):
        F.adaptive_max_pool3d(ember.zeros(1, 1, 4, 4, 4, dtype=ember.int64), 2)
    out, idx = F.max_pool3d(ember.zeros(1, 1, 4, 4, 4), 2, return_indices=True)
    with pytest.raises(RuntimeError, match=r"Found an invalid max index: 100 \(output volumes are of size 4x4x4\)"):
        F.max_unpool3d(out, idx + 100, 2)
    with pytest.raises(RuntimeError, match="Expected shape of indices to be same as that of the input tensor"):
        F.max_unpool3d(out, idx[..., :1], 2)
    with pytest.raises(ValueError, match="invalid output_size"):
        F.max_unpool3d(out, idx, 2, output_size=(9, 9, 9))


@pytest.mark.parametrize("cls,args,text", [
    (nn.MaxPool3d, (3,), "MaxPool3d(kernel_size=3, stride=3, padding=0, dilation=1, ceil_mode=False)"),
    (nn.MaxPool3d, ((1, 2, 3), 1, 0, 2, True, True),
     "MaxPool3d(kernel_size=(1, 2, 3), stride=1, padding=0, dilation=2, ceil_mode=True)"),
    (nn.AvgPool3d, ((1, 2, 3),), "AvgPool3d(kernel_size=(1, 2, 3), stride=(1, 2, 3), padding=0)"),
    (nn.AdaptiveMaxPool3d, ((2, None, 3), True), "AdaptiveMaxPool3d(output_size=(2, None, 3))"),
    (nn.AdaptiveAvgPool3d, (2,), "AdaptiveAvgPool3d(output_size=2)"),
    (nn.MaxUnpool3d, (2,), "MaxUnpool3d(kernel_size=(2, 2, 2), stride=(2, 2, 2), padding=(0, 0, 0))"),
    (nn.LPPool1d, (2, 3), "LPPool1d(norm_type=2, kernel_size=3, stride=None, ceil_mode=False)"),
    (nn.LPPool2d, (2, 3, 2), "LPPool2d(norm_type=2, kernel_size=3, stride=2, ceil_mode=False)"),
    (nn.LPPool3d, (1.5, 2), "LPPool3d(norm_type=1.5, kernel_size=2, stride=None, ceil_mode=False)"),
])
def test_pool_module_reprs(cls, args, text):
    assert repr(cls(*args)) == text


def test_pool3d_modules_call_functional():
    x = t64(values((2, 3, 4, 6, 4)))
    out, idx = nn.MaxPool3d(2, return_indices=True)(x)
    np.testing.assert_array_equal(out.numpy(), F.max_pool3d(x, 2).numpy())
    np.testing.assert_array_equal(nn.MaxUnpool3d(2)(out, idx).numpy(), F.max_unpool3d(out, idx, 2).numpy())
    np.testing.assert_allclose(nn.AvgPool3d(2, 1, 1, count_include_pad=False)(x).numpy(),
                               F.avg_pool3d(x, 2, 1, 1, count_include_pad=False).numpy())
    assert nn.AdaptiveMaxPool3d(2)(x).shape == (2, 3, 2, 2, 2)
    assert len(nn.AdaptiveMaxPool3d(2, return_indices=True)(x)) == 2
    np.testing.assert_allclose(nn.AdaptiveAvgPool3d(1)(x).numpy().ravel(), values((2, 3, 4, 6, 4)).mean((2, 3, 4))
                               .ravel(), rtol=1e-12)


def test_lp_pools_match_numpy():
    x = values((2, 3, 6, 6, 6))
    win = x[:, :, :2, :2, :2] ** 2
    np.testing.assert_allclose(F.lp_pool3d(t64(x), 2, 2).numpy()[:, :, 0, 0, 0], np.sqrt(win.sum((2, 3, 4))),
                               rtol=1e-12)
    np.testing.assert_allclose(F.lp_pool2d(t64(x[:, :, 0]), 1, (2, 3), 1).numpy()[:, :, 1, 2],
                               x[:, :, 0, 1:3, 2:5].sum((2, 3)), rtol=1e-12)
    np.testing.assert_allclose(F.lp_pool1d(t64(x[:, :, 0, 0]), float("inf"), 3).numpy(),
                               np.abs(x[:, :, 0, 0]).reshape(2, 3, 2, 3).max(-1), rtol=1e-12)
    np.testing.assert_allclose(nn.LPPool2d(3, 2)(t64(np.abs(x[:, :, 0]))).numpy()[..., 0, 0],
                               np.cbrt((np.abs(x[:, :, 0, :2, :2]) ** 3).sum((2, 3))), rtol=1e-12)
    assert gradcheck(lambda x: F.lp_pool3d(x, 2, 2, 1), (t64(x[:1, :1, :3, :3, :3], True),))
    assert gradcheck(lambda x: F.lp_pool2d(x, 3, 2, ceil_mode=True), (t64(np.abs(x[:1, :, :3, :3, 0]) + 1, True),))


@needs_torch
@pytest.mark.parametrize("p", [1, 2, 3.0, float("inf"), -float("inf")])
def test_lp_pools_match_torch(p):
    x = values((2, 3, 5, 6, 7), seed=5)
    _pair(F.lp_pool1d, TF.lp_pool1d, x[:, :, 0, 0], p, 3, 2, True)
    _pair(F.lp_pool2d, TF.lp_pool2d, x[:, :, 0], p, (2, 3), None, True)
    _pair(F.lp_pool3d, TF.lp_pool3d, x, p, 2, (1, 2, 3), False)
    xa = np.abs(x) + 0.5
    xe, xt = t64(xa, True), torch.tensor(xa, requires_grad=True)
    F.lp_pool3d(xe, p, 2).sum().backward()
    TF.lp_pool3d(xt, p, 2).sum().backward()
    # 1e-6: ember's pow(tensor, scalar) backward rounds a scalar exponent such as 1/3 to float32
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=1e-6, atol=1e-12)


def test_gumbel_softmax():
    ember.manual_seed(0)
    logits = t64(values((4000, 3)) * 0 + np.log([0.2, 0.3, 0.5]), requires_grad=True)
    soft = F.gumbel_softmax(logits, tau=0.5)
    np.testing.assert_allclose(soft.sum(-1).detach().numpy(), 1.0, rtol=1e-12)
    hard = F.gumbel_softmax(logits, hard=True)
    assert set(np.unique(hard.detach().numpy())) == {0.0, 1.0}
    np.testing.assert_array_equal(hard.detach().numpy().sum(-1), 1.0)
    # the argmax of logits + Gumbel noise samples the softmax distribution (4-sigma bounds)
    freq = hard.detach().numpy().mean(0)
    assert np.all(np.abs(freq - [0.2, 0.3, 0.5]) < 4 * np.sqrt(0.25 / 4000))
    # straight-through: hard's gradient is the soft sample's
    weights = t64(values((4000, 3), seed=1))
    (hard * weights).sum().backward()
    assert logits.grad is not None and np.abs(logits.grad.numpy()).sum() > 0
    along0 = F.gumbel_softmax(t64(values((3, 5))), hard=True, dim=0)
    np.testing.assert_array_equal(along0.numpy().sum(0), 1.0)
    with pytest.warns(UserWarning, match="`eps` parameter is deprecated"):
        F.gumbel_softmax(t64(values((2, 3))), eps=1e-5)


@pytest.mark.parametrize("p", [2, 1, 0.5, 3, float("inf"), 0])
def test_pdist_matches_numpy(p):
    x = values((5, 4))
    x[3] = x[1]  # a zero distance: PyTorch's gradient there is zero
    rows, cols = np.triu_indices(5, 1)
    diff = np.abs(x[rows] - x[cols])
    ref = {0: (diff != 0).sum(1), float("inf"): diff.max(1)}.get(p)
    ref = ref if ref is not None else (diff ** p).sum(1) ** (1 / p)
    np.testing.assert_allclose(F.pdist(t64(x), p).numpy(), ref, rtol=1e-12)
    assert F.pdist(t64(x[:1])).shape == (0,)
    if torch is not None:
        xe, xt = t64(x, True), torch.tensor(x, requires_grad=True)
        F.pdist(xe, p).sum().backward()
        torch.pdist(xt, p).sum().backward()
        np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_pdist_errors():
    with pytest.raises(RuntimeError, match="pdist only supports 2D tensors, got: 3D"):
        F.pdist(ember.zeros(2, 3, 4))
    with pytest.raises(RuntimeError, match="pdist only supports floating-point dtypes"):
        F.pdist(ember.zeros(2, 3, dtype=ember.int64))
    with pytest.raises(RuntimeError, match="pdist only supports non-negative p values"):
        F.pdist(ember.zeros(2, 3), -1)


@pytest.mark.parametrize("dims,stride,padding,dilation,groups", [
    (1, 2, 1, 1, 1), (2, (2, 1), (0, 1), (1, 2), 2), (3, 1, 1, 1, 1), (2, 1, 0, 1, 1)])
def test_nn_grad_matches_autograd(dims, stride, padding, dilation, groups):
    conv = (F.conv1d, F.conv2d, F.conv3d)[dims - 1]
    x = t64(values((2, 4) + (7,) * dims), True)
    w = t64(values((6, 4 // groups) + (3,) * dims, seed=1), True)
    out = conv(x, w, None, stride, padding, dilation, groups)
    g = t64(values(tuple(out.shape), seed=2))
    gx, gw = ember.autograd.grad(out, (x, w), g)
    name = f"conv{dims}d"
    got_x = getattr(nn.grad, name + "_input")(x.shape, w, g, stride, padding, dilation, groups)
    got_w = getattr(nn.grad, name + "_weight")(x, w.shape, g, stride, padding, dilation, groups)
    np.testing.assert_allclose(got_x.numpy(), gx.numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got_w.numpy(), gw.numpy(), rtol=1e-12, atol=1e-12)
    assert F.grad is nn.grad and not got_x.requires_grad
    if torch is not None:
        tg = getattr(torch.nn.grad, name + "_weight")(torch.tensor(x.detach().numpy()), w.shape,
                                                      torch.tensor(g.numpy()), stride, padding, dilation, groups)
        np.testing.assert_allclose(got_w.numpy(), tg.numpy(), rtol=1e-10, atol=1e-12)


def np_bilinear_zeros(x, grid):
    """Loop reference of grid_sample(bilinear, zeros, align_corners=False) on one (C, H, W) image."""
    c, h, w = x.shape
    out = np.zeros((c,) + grid.shape[:2])
    for i, j in np.ndindex(*grid.shape[:2]):
        ix, iy = ((grid[i, j, 0] + 1) * w - 1) / 2, ((grid[i, j, 1] + 1) * h - 1) / 2
        x0, y0 = int(np.floor(ix)), int(np.floor(iy))
        for yy, xx in itertools.product((y0, y0 + 1), (x0, x0 + 1)):
            if 0 <= yy < h and 0 <= xx < w:
                out[:, i, j] += x[:, yy, xx] * (1 - abs(ix - xx)) * (1 - abs(iy - yy))
    return out


def test_grid_sample_matches_loops_and_identity():
    x = values((2, 3, 5, 6))
    grid = np.random.default_rng(4).uniform(-1.2, 1.2, (2, 4, 3, 2))
    out = F.grid_sample(t64(x), t64(grid), align_corners=False)
    for b in range(2):
        np.testing.assert_allclose(out.numpy()[b], np_bilinear_zeros(x[b], grid[b]), rtol=1e-12, atol=1e-12)
    theta = t64(np.tile(np.eye(2, 3), (2, 1, 1)))  # the identity transform samples every pixel centre
    for ac in (False, True):
        ident = F.affine_grid(theta, (2, 3, 5, 6), align_corners=ac)
        for mode in ("bilinear", "nearest", "bicubic"):
            np.testing.assert_allclose(F.grid_sample(t64(x), ident, mode, align_corners=ac).numpy(), x, atol=1e-12)
    ident3 = F.affine_grid(t64(np.tile(np.eye(3, 4), (1, 1, 1))), (1, 2, 3, 4, 5), align_corners=False)
    x3 = values((1, 2, 3, 4, 5))
    np.testing.assert_allclose(F.grid_sample(t64(x3), ident3, align_corners=False).numpy(), x3, atol=1e-12)
    # border clamps to the edge pixel; reflection mirrors about the edge (align_corners: the corner centres)
    far = t64(np.array([[[[3.0, 0.0]]]]))
    row = t64(np.arange(4.0).reshape(1, 1, 1, 4))
    assert F.grid_sample(row, far, padding_mode="border", align_corners=True).item() == 3.0
    assert F.grid_sample(row, far, padding_mode="zeros", align_corners=True).item() == 0.0
    assert F.grid_sample(row, t64([[[[1.0 + 2 / 3, 0.0]]]]), padding_mode="reflection",
                         align_corners=True).item() == pytest.approx(2.0)


def test_grid_sample_gradients():
    x = t64(values((1, 2, 4, 5)), True)
    grid = t64(np.random.default_rng(6).uniform(-1.1, 1.1, (1, 3, 2, 2)), True)
    for mode, padding in (("bilinear", "zeros"), ("bilinear", "reflection"), ("bicubic", "border")):
        assert gradcheck(lambda x, g: F.grid_sample(x, g, mode, padding, align_corners=False), (x, grid))
    x3 = t64(values((1, 1, 3, 3, 4)), True)
    grid3 = t64(np.random.default_rng(7).uniform(-0.9, 0.9, (1, 2, 2, 1, 3)), True)
    assert gradcheck(lambda x, g: F.grid_sample(x, g, align_corners=True), (x3, grid3))
    theta = t64(values((2, 2, 3)), True)
    assert gradcheck(lambda t: F.affine_grid(t, (2, 1, 3, 4), align_corners=False), (theta,))


@needs_torch
@pytest.mark.parametrize("dims,mode,padding_mode,align_corners", [  # bicubic is 2-D only (an error, checked below)
    case for case in itertools.product([2, 3], ["bilinear", "nearest", "bicubic"], ["zeros", "border", "reflection"],
                                       [False, True]) if case[:2] != (3, "bicubic")])
def test_grid_sample_matches_torch(dims, mode, padding_mode, align_corners):
    rng = np.random.default_rng(8)
    x = rng.standard_normal((2, 3) + (5, 6, 7)[3 - dims:])
    grid = rng.uniform(-1.3, 1.3, (2, 4, 3) + (5,) * (dims - 2) + (dims,))
    xe, ge = t64(x, True), t64(grid, True)
    xt, gt = torch.tensor(x, requires_grad=True), torch.tensor(grid, requires_grad=True)
    out = F.grid_sample(xe, ge, mode, padding_mode, align_corners)
    ref = TF.grid_sample(xt, gt, mode, padding_mode, align_corners)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-10, atol=1e-12)
    w = rng.standard_normal(ref.shape)
    (out * t64(w)).sum().backward()
    (ref * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=1e-10, atol=1e-12)
    grid_grad = np.zeros_like(grid) if ge.grad is None else ge.grad.numpy()  # nearest: no grid gradient
    np.testing.assert_allclose(grid_grad, 0 if gt.grad is None else gt.grad.numpy(), rtol=1e-8, atol=1e-10)
    theta = rng.standard_normal((2, dims, dims + 1))
    size = (2, 3) + (4, 5, 6)[3 - dims:]
    np.testing.assert_allclose(F.affine_grid(t64(theta), size, align_corners).numpy(),
                               TF.affine_grid(torch.tensor(theta), size, align_corners).numpy(), rtol=1e-12)


GRID_BAD = [
    (lambda m: m.grid_sample(m.zeros(2, 3, 4, 5), m.zeros(2, 3, 3, 1), align_corners=False)),
    (lambda m: m.grid_sample(m.zeros(2, 3, 4, 5), m.zeros(1, 3, 3, 2), align_corners=False)),
    (lambda m: m.grid_sample(m.zeros(2, 3, 0, 5), m.zeros(2, 3, 3, 2), align_corners=False)),
    (lambda m: m.grid_sample(m.zeros(2, 3, 1, 4, 5), m.zeros(2, 3, 3, 3, 3), "bicubic", align_corners=False)),
    (lambda m: m.grid_sample(m.zeros(2, 3, 4, 5), m.zeros(2, 3, 3, 2), "linear", align_corners=False)),
    (lambda m: m.grid_sample(m.zeros(2, 3, 4, 5), m.zeros(2, 3, 3, 2), padding_mode="same", align_corners=False)),
    (lambda m: m.affine_grid(m.zeros(2, 2, 3), (2, 3, 0, 4), align_corners=False)),
    (lambda m: m.affine_grid(m.zeros(2, 3, 3), (2, 3, 4, 4), align_corners=False)),
    (lambda m: m.affine_grid(m.zeros(2, 2, 3), (2, 3, 4), align_corners=False)),
]


@needs_torch
@pytest.mark.parametrize("call", GRID_BAD)
def test_grid_errors_match_torch(call):
    class Lib:  # the library's zeros and functional namespace under one name
        def __init__(self, lib, functional):
            self.zeros, self.grid_sample, self.affine_grid = lib.zeros, functional.grid_sample, functional.affine_grid

    with pytest.raises(Exception) as expected:
        call(Lib(torch, TF))
    with pytest.raises(type(expected.value)) as got:
        call(Lib(ember, F))
    assert str(got.value) == str(expected.value).replace("torch.Size", "ember.Size")


def test_grid_sample_warns_without_align_corners():
    with pytest.warns(UserWarning, match="Default grid_sample and affine_grid behavior has changed"):
        F.affine_grid(t64(np.tile(np.eye(2, 3), (1, 1, 1))), (1, 1, 2, 2))
    with pytest.raises(ValueError, match="Expected theta to have floating point type"):
        F.affine_grid(ember.zeros(1, 2, 3, dtype=ember.int64), (1, 1, 2, 2), align_corners=False)


def _adaptive_pair(seed=0):
    """An ember AdaptiveLogSoftmaxWithLoss (float64) and its parameters as NumPy arrays."""
    ember.manual_seed(seed)
    asm = nn.AdaptiveLogSoftmaxWithLoss(8, 20, [4, 10], div_value=2.0, head_bias=True).double()
    return asm, {k: v.detach().numpy().copy() for k, v in asm.state_dict().items()}


def np_log_softmax(z):
    z = z - z.max(1, keepdims=True)
    return z - np.log(np.exp(z).sum(1, keepdims=True))


def test_adaptive_log_softmax_matches_numpy():
    asm, p = _adaptive_pair()
    x = values((6, 8))
    target = np.array([0, 3, 4, 9, 10, 19])
    head = np_log_softmax(x @ p["head.weight"].T + p["head.bias"])
    full = [head[:, :4]]
    for i in range(2):
        hidden = x @ p[f"tail.{i}.0.weight"].T @ p[f"tail.{i}.1.weight"].T
        full.append(np_log_softmax(hidden) + head[:, 4 + i:5 + i])
    full = np.concatenate(full, 1)
    log_prob = asm.log_prob(t64(x))
    np.testing.assert_allclose(log_prob.detach().numpy(), full, rtol=1e-12)
    np.testing.assert_allclose(np.exp(full).sum(1), 1.0, rtol=1e-12)
    out, loss = asm(t64(x), ember.tensor(target))
    np.testing.assert_allclose(out.detach().numpy(), full[np.arange(6), target], rtol=1e-12)
    assert loss.item() == pytest.approx(-full[np.arange(6), target].mean(), rel=1e-12)
    np.testing.assert_array_equal(asm.predict(t64(x)).numpy(), full.argmax(1))
    single = asm(t64(x[2]), ember.tensor(target[2]))
    assert single.output.dim() == 0 and single.output.item() == pytest.approx(full[2, target[2]], rel=1e-12)


@needs_torch
def test_adaptive_log_softmax_matches_torch():
    asm, p = _adaptive_pair(1)
    ref = torch.nn.AdaptiveLogSoftmaxWithLoss(8, 20, [4, 10], div_value=2.0, head_bias=True).double()
    ref.load_state_dict({k: torch.tensor(v) for k, v in p.items()})
    assert repr(asm) == repr(ref)
    x = values((7, 8), seed=2) * 3
    target = np.array([0, 12, 4, 9, 19, 3, 15])
    xe, xt = t64(x, True), torch.tensor(x, requires_grad=True)
    out, loss = asm(xe, ember.tensor(target))
    rout, rloss = ref(xt, torch.tensor(target))
    np.testing.assert_allclose(out.detach().numpy(), rout.detach().numpy(), rtol=1e-12)
    loss.backward()
    rloss.backward()
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=1e-10, atol=1e-14)
    for (name, param), (_, rparam) in zip(asm.named_parameters(), ref.named_parameters()):
        np.testing.assert_allclose(param.grad.numpy(), rparam.grad.numpy(), rtol=1e-10, atol=1e-14, err_msg=name)
    np.testing.assert_array_equal(asm.predict(t64(x)).numpy(), ref.predict(torch.tensor(x)).numpy())


@pytest.mark.parametrize("build,call,error,message", [
    (lambda: nn.AdaptiveLogSoftmaxWithLoss(8, 20, []), None, ValueError,
     "cutoffs should be a sequence of length larger than 0"),
    (lambda: nn.AdaptiveLogSoftmaxWithLoss(8, 20, [10, 4]), None, ValueError,
     "cutoffs should be a sequence of unique, positive integers sorted in an increasing order, where each value is "
     "between 1 and n_classes-1"),
    (lambda: nn.AdaptiveLogSoftmaxWithLoss(8, 20, [4, 20]), None, ValueError, "cutoffs should be a sequence"),
    (lambda: nn.AdaptiveLogSoftmaxWithLoss(8, 20, [4]), lambda m: m(ember.zeros(3, 8), ember.tensor([0, 1])),
     RuntimeError, "Input and target should have the same size in the batch dimension."),
    (lambda: nn.AdaptiveLogSoftmaxWithLoss(8, 20, [4]), lambda m: m(ember.zeros(2, 8), ember.tensor([0, 20])),
     RuntimeError, "Target values should be in [0, 19], but values in range [0, 20] were found. "),
    (lambda: nn.AdaptiveLogSoftmaxWithLoss(8, 20, [4]), lambda m: m(ember.zeros(2, 8), ember.zeros(2, 1).long()),
     RuntimeError, "0D or 1D target tensor expected, multi-target not supported"),
    (lambda: nn.AdaptiveLogSoftmaxWithLoss(8, 20, [4]), lambda m: m(ember.zeros(2, 8), ember.tensor(1)),
     RuntimeError, "0D target tensor expects 1D input tensors, but found inputs with size ember.Size([2, 8])"),
])
def test_adaptive_log_softmax_errors(build, call, error, message):
    with pytest.raises(error) as got:
        module = build()
        call(module)
    assert str(got.value).startswith(message)


@pytest.mark.parametrize("pad", [0, 1, 2, -1])
def test_conv_tbc_matches_numpy(pad):
    x, w, b = values((7, 2, 3)), values((3, 3, 4), seed=1), values((4,), seed=2)
    padded = np.pad(x, ((pad, pad), (0, 0), (0, 0))) if pad >= 0 else x[-pad:7 + pad]
    steps = padded.shape[0] - 3 + 1
    ref = np.stack([np.einsum("kbi,kio->bo", padded[t:t + 3], w) for t in range(steps)]) + b
    np.testing.assert_allclose(F.conv_tbc(t64(x), t64(w), t64(b), pad).numpy(), ref, rtol=1e-12, atol=1e-12)
    if torch is not None:
        xe, xt = t64(x, True), torch.tensor(x, requires_grad=True)
        F.conv_tbc(xe, t64(w), t64(b), pad).sum().backward()
        torch.conv_tbc(xt, torch.tensor(w), torch.tensor(b), pad).sum().backward()
        np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=1e-12)


def test_conv_tbc_errors():
    x, w, b = ember.zeros(5, 2, 3), ember.zeros(3, 3, 4), ember.zeros(4)
    for args, message in [((x[0], w, b), "Input must have 3 dims: time, batch, in_channel"),
                          ((x, w[0], b), "Weight tensor must have 3 dims: kernel_width, in_channels, out_channels."),
                          ((x, w, b[:2]), "Bias size must equal dim 2 in the weight tensor (output channels)."),
                          ((x, w[:, :2], b), "Input dim 2 (input channels) is not == dim 1 in the weight tensor")]:
        with pytest.raises(RuntimeError) as got:
            F.conv_tbc(*args, 1)
        assert str(got.value) == message


def np_fractional_starts(u, size, out, k):
    """ATen's generate_intervals in float64."""
    if out == 1:
        return [size - k]
    alpha = (size - k) / (out - 1)
    return [int(np.floor((i + u) * alpha)) - int(np.floor(u * alpha)) for i in range(out - 1)] + [size - k]


def test_fractional_max_pool2d_matches_loops():
    x = np.round(values((2, 3, 9, 11)), 1)
    samples = np.random.default_rng(9).random((2, 3, 2))
    out, idx = F.fractional_max_pool2d(t64(x), (3, 2), (5, 7), return_indices=True, _random_samples=t64(samples))
    for b, ch in np.ndindex(2, 3):
        rows = np_fractional_starts(samples[b, ch, 1], 9, 5, 3)  # samples (width, height) per plane
        cols = np_fractional_starts(samples[b, ch, 0], 11, 7, 2)
        for i, j in np.ndindex(5, 7):
            window = x[b, ch, rows[i]:rows[i] + 3, cols[j]:cols[j] + 2]
            first = np.argmax(window)  # the first maximum in scan order, as PyTorch's
            assert out.numpy()[b, ch, i, j] == window.max()
            assert idx.numpy()[b, ch, i, j] == (rows[i] + first // 2) * 11 + cols[j] + first % 2
    ratio = F.fractional_max_pool2d(t64(x), 2, output_ratio=0.5)
    assert ratio.shape == (2, 3, 4, 5)
    x3 = values((1, 2, 6, 7, 8))
    samples3 = np.random.default_rng(10).random((1, 2, 3))
    out3 = F.fractional_max_pool3d(t64(x3), 2, (3, 4, 5), _random_samples=t64(samples3))
    t0 = np_fractional_starts(samples3[0, 1, 0], 6, 3, 2)[2]  # 3-D reads (time, height, width)
    h0 = np_fractional_starts(samples3[0, 1, 1], 7, 4, 2)[1]
    w0 = np_fractional_starts(samples3[0, 1, 2], 8, 5, 2)[3]
    assert out3.numpy()[0, 1, 2, 1, 3] == x3[0, 1, t0:t0 + 2, h0:h0 + 2, w0:w0 + 2].max()
    xg = t64(values((1, 2, 5, 6)), True)
    assert gradcheck(lambda x: F.fractional_max_pool2d(x, 2, 3, _random_samples=t64(samples[:1, :2])), (xg,))


@needs_torch
@pytest.mark.parametrize("n,shape,kernel,out", [(2, (2, 3, 9, 11), (3, 2), (5, 7)), (2, (3, 10, 10), 2, (4, 6)),
                                                 (3, (2, 2, 7, 8, 9), (2, 3, 2), (4, 5, 6)), (3, (2, 7, 8, 9), 2,
                                                                                               (1, 5, 6))])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fractional_max_pool_matches_torch(n, shape, kernel, out, dtype):
    rng = np.random.default_rng(11)
    x = rng.standard_normal(shape).astype(dtype)
    samples = rng.random((shape[0] if len(shape) == n + 2 else 1, shape[-n - 1], n)).astype(dtype)
    name = f"fractional_max_pool{n}d"
    ours = getattr(F, name)(ember.tensor(x), kernel, out, return_indices=True, _random_samples=ember.tensor(samples))
    ref = getattr(TF, name)(torch.tensor(x), kernel, out, return_indices=True, _random_samples=torch.tensor(samples))
    np.testing.assert_array_equal(ours[0].numpy(), ref[0].numpy())
    np.testing.assert_array_equal(ours[1].numpy(), ref[1].numpy())


@needs_torch
@pytest.mark.parametrize("call", [
    lambda f, m: f.fractional_max_pool2d(m.zeros(2, 3, 9, 9), 3),
    lambda f, m: f.fractional_max_pool2d(m.zeros(2, 3, 9, 9), 10, output_size=2),
    lambda f, m: f.fractional_max_pool2d(m.zeros(2, 3, 9, 9), 3, output_size=8),
    lambda f, m: f.fractional_max_pool2d(m.zeros(2, 3, 9, 9), 3, output_size=2, _random_samples=m.zeros(2, 3, 3)),
    lambda f, m: f.fractional_max_pool3d(m.zeros(2, 3, 9, 9), 3, output_size=2),
    lambda f, m: m.nn.FractionalMaxPool2d(2),
    lambda f, m: m.nn.FractionalMaxPool3d(2, output_ratio=1.5),
    lambda f, m: m.nn.FractionalMaxPool2d(2, 3, 0.5),
])
def test_fractional_max_pool_errors_match_torch(call):
    with pytest.raises(Exception) as expected:
        call(TF, torch)
    with pytest.raises(type(expected.value)) as got:
        call(F, ember)
    assert str(got.value) == str(expected.value)


def test_fractional_max_pool_modules():
    assert repr(nn.FractionalMaxPool2d(2, output_ratio=0.5)) == "FractionalMaxPool2d()"
    samples = ember.rand(1, 2, 3, dtype=ember.float64)
    pool = nn.FractionalMaxPool3d(2, output_size=3, return_indices=True, _random_samples=samples)
    x = t64(values((1, 2, 5, 6, 7)))
    out, idx = pool(x)
    assert out.shape == idx.shape == (1, 2, 3, 3, 3)
    np.testing.assert_array_equal(out.numpy(), F.fractional_max_pool3d(x, 2, 3, _random_samples=samples).numpy())
    assert "_random_samples" in dict(pool.named_buffers())
