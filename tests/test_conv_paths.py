"""The CPU conv kernels' paths from the ResNet speed work (aten/src/cpu/conv.cpp): im2col reading
a zero-bordered copy of a padded image, stride-2 patch rows, and stride-1 input gradients run as a
forward convolution of gy with the flipped weight (when the padding is at most the kernel span - 1
and gy has no more channels per group than gx), and Winograd F(2x2, 3x3) for wide enough 3x3 layers
(aten/src/cpu/conv_winograd.cpp) with its channel and width thresholds. Values and all gradients
against NumPy (and torch when installed) on both sides of those conditions, float32 and float64,
1-3 threads, contiguous and channels-last strided tensors; float64 gradcheck of each path."""
import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.autograd import gradcheck, gradgradcheck
from test_conv import _pair, np_conv2d, np_conv_transpose2d

try:
    import torch
    import torch.nn.functional as TF
except ImportError:  # the torch comparisons are skipped without it
    torch = None

CASES = [  # (input, weight, options): the input-gradient path each one takes
    ((2, 4, 9, 8), (4, 4, 3, 3), dict(padding=1)),  # flipped (a square ResNet layer)
    ((2, 4, 9, 8), (4, 4, 3, 3), dict()),  # flipped, the forward's padding 2 all in gy's border
    ((2, 4, 9, 8), (4, 4, 3, 3), dict(padding=2)),  # flipped, padding = span - 1: none in the flipped forward
    ((2, 4, 9, 8), (4, 4, 3, 3), dict(padding=3)),  # padding > span - 1: col2im
    ((2, 4, 9, 8), (4, 4, 3, 3), dict(padding=(2, 3))),  # one dim over: col2im
    ((2, 4, 9, 8), (5, 4, 3, 3), dict(padding=1)),  # gy has one channel more than gx: col2im
    ((2, 6, 9, 8), (3, 6, 3, 3), dict(padding=1)),  # gy has fewer channels: flipped
    ((2, 4, 11, 10), (4, 2, 3, 2), dict(padding=(1, 0), dilation=(2, 1), groups=2)),  # flipped, dilated, groups
    ((2, 4, 7, 12), (4, 4, 5, 5), dict(padding=(4, 0), dilation=(1, 2))),  # flipped at span - 1 with dilation
    ((2, 6, 12, 12), (6, 1, 3, 3), dict(padding=1, groups=6)),  # depthwise: flipped
    ((2, 4, 9, 8), (4, 4, 3, 3), dict(padding=1, stride=2)),  # stride 2: padded im2col with stride, col2im
    ((2, 4, 9, 8), (4, 4, 3, 3), dict(padding=(1, 2), stride=(1, 2))),  # stride 2 in one dim: col2im
    ((3, 8, 17, 17), (8, 8, 1, 1), dict(stride=2)),  # ResNet's 1x1 stride-2 shortcut
    ((3, 32, 34, 30), (32, 32, 3, 3), dict(padding=1)),  # flipped, several bands of output rows
    ((7, 16, 8, 8), (16, 16, 3, 3), dict(padding=1)),  # flipped, 4 images per GEMM, the last chunk short
    ((5, 16, 16, 16), (16, 16, 3, 3), dict(padding=1, stride=2)),  # ResNet's stride-2 3x3, images per GEMM
    # Winograd (>= 32 channels in and out, output width >= 16; 3x3, stride 1, undilated, ungrouped)
    ((3, 32, 17, 16), (32, 32, 3, 3), dict(padding=1)),  # Winograd forward and flipped gx, odd output height
    ((3, 32, 17, 15), (32, 32, 3, 3), dict(padding=1)),  # output width 15: im2col
    ((2, 31, 18, 18), (32, 31, 3, 3), dict(padding=1)),  # 31 input channels: im2col; gx by col2im
    ((2, 32, 18, 18), (31, 32, 3, 3), dict(padding=1)),  # 31 output channels: im2col; flipped gx by im2col
    ((2, 32, 19, 19), (40, 32, 3, 3), dict()),  # Winograd, odd output width 17; gx by col2im
    ((2, 40, 18, 18), (32, 40, 3, 3), dict(padding=2)),  # Winograd; flipped gx by Winograd without padding
    ((5, 32, 16, 16), (32, 32, 3, 3), dict(padding=1)),  # 4 images per block of tiles, the last block short
    ((2, 32, 16, 16), (32, 16, 3, 3), dict(padding=1, groups=2)),  # groups: im2col
    ((2, 32, 20, 20), (32, 32, 3, 3), dict(padding=2, dilation=2)),  # dilation: im2col
    ((1, 32, 90, 90), (32, 32, 3, 3), dict(padding=1)),  # 45 x 45 tiles x 32 channels <= 1 << 16: Winograd
    ((1, 32, 92, 92), (32, 32, 3, 3), dict(padding=1)),  # 46 x 46 tiles x 32 channels > 1 << 16: im2col
]


def _takes_winograd(xshape, wshape, options):
    """conv.cpp's condition for the Winograd path, from the library's thresholds."""
    t = ember._C._thresholds()
    if wshape[2:] != (3, 3) or any(options.get(k, 1) != 1 for k in ("stride", "dilation", "groups")):
        return False
    ph, pw = _pair(options.get("padding", 0))
    oh, ow = xshape[2] + 2 * ph - 2, xshape[3] + 2 * pw - 2
    tiles = ((oh + 1) // 2) * ((ow + 1) // 2)
    return (min(xshape[1], wshape[0]) >= t["conv_winograd_channels"] and ow >= t["conv_winograd_width"]
            and tiles * max(xshape[1], wshape[0]) <= t["conv_winograd_tile_values"])


def test_cases_straddle_the_winograd_thresholds():
    """Each Winograd threshold has a case taking the path at it and one missing it just past it."""
    t = ember._C._thresholds()
    winograd = [c for c in CASES if _takes_winograd(*c)]
    other = [c for c in CASES if not _takes_winograd(*c) and c[1][2:] == (3, 3) and c[2].get("stride", 1) == 1
             and c[2].get("dilation", 1) == 1 and c[2].get("groups", 1) == 1]
    channels = t["conv_winograd_channels"]
    assert any(min(x[1], w[0]) == channels for x, w, _ in winograd)
    assert any(min(x[1], w[0]) == channels - 1 for x, w, _ in other)
    width = lambda x, o: x[3] + 2 * _pair(o.get("padding", 0))[1] - 2  # noqa: E731
    assert any(width(x, o) == t["conv_winograd_width"] for x, _, o in winograd)
    assert any(width(x, o) == t["conv_winograd_width"] - 1 for x, _, o in other)
    assert any(x[2] >= 90 for x, _, _ in winograd) and any(x[2] >= 90 for x, _, _ in other)


def np_weight_grad(gy, x, wshape, stride=1, padding=0, dilation=1, groups=1):
    """gw[o, c, i, j] = sum over images and output positions of gy times the input it multiplied."""
    (sh, sw), (ph, pw), (dh, dw) = _pair(stride), _pair(padding), _pair(dilation)
    oc, cg, kh, kw = wshape
    ocg, (oh, ow) = oc // groups, gy.shape[2:]
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    gw = np.zeros(wshape)
    for g in range(groups):
        for i in range(kh):
            for j in range(kw):
                patch = xp[:, g * cg:(g + 1) * cg, i * dh: i * dh + sh * (oh - 1) + 1: sh,
                           j * dw: j * dw + sw * (ow - 1) + 1: sw]
                gw[g * ocg:(g + 1) * ocg, :, i, j] = np.einsum("nohw,nchw->oc", gy[:, g * ocg:(g + 1) * ocg], patch)
    return gw


def np_input_grad(gy, w, xshape, stride=1, padding=0, dilation=1, groups=1):
    """The transposed convolution of gy, with the output padding that gives back xshape."""
    (sh, sw), (ph, pw), (dh, dw) = _pair(stride), _pair(padding), _pair(dilation)
    kh, kw = w.shape[2:]
    oh, ow = gy.shape[2:]
    extra = (xshape[2] - ((oh - 1) * sh - 2 * ph + dh * (kh - 1) + 1),
             xshape[3] - ((ow - 1) * sw - 2 * pw + dw * (kw - 1) + 1))
    return np_conv_transpose2d(gy, w, stride=stride, padding=padding, output_padding=extra, groups=groups,
                               dilation=dilation)


def channels_last(t):
    """The same values with NHWC strides (a non-contiguous NCHW view)."""
    return t.permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2)


@pytest.mark.parametrize("layout", ["contiguous", "channels_last"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", range(len(CASES)), ids=lambda i: f"{CASES[i][0]}-{CASES[i][1]}-{CASES[i][2]}")
def test_values_and_gradients(case, dtype, layout, threads):
    xs, ws, opts = CASES[case]
    rng = np.random.default_rng(40 + case)
    x, w, bias = rng.standard_normal(xs), rng.standard_normal(ws) * 0.2, rng.standard_normal(ws[0])
    y64 = np_conv2d(x, w, bias, **opts)
    gy = rng.standard_normal(y64.shape)
    edt = getattr(ember, dtype)
    ex, ew, eb, egy = (ember.tensor(a, dtype=edt) for a in (x, w, bias, gy))
    if layout == "channels_last":
        ex, ew, egy = channels_last(ex), channels_last(ew), channels_last(egy)
        assert not ex.is_contiguous() and not egy.is_contiguous()
    ex.requires_grad_(), ew.requires_grad_(), eb.requires_grad_()
    y = F.conv2d(ex, ew, eb, **opts)
    y.backward(egy)
    rel = 1e-10 if dtype == "float64" else 2e-4

    def check(got, want):  # float32 sums over thousands of positions: an error relative to the largest value
        np.testing.assert_allclose(got, want, rtol=rel, atol=rel * max(1.0, float(np.abs(want).max()) / 10))

    check(y.detach().numpy(), y64)
    check(ex.grad.numpy(), np_input_grad(gy, w, xs, **opts))
    check(ew.grad.numpy(), np_weight_grad(gy, x, ws, **opts))
    check(eb.grad.numpy(), gy.sum((0, 2, 3)))
    if torch is not None:
        tx, tw, tb = (torch.tensor(a, dtype=getattr(torch, dtype), requires_grad=True) for a in (x, w, bias))
        ty = TF.conv2d(tx, tw, tb, **opts)
        check(y.detach().numpy(), ty.detach().numpy())
        ty.backward(torch.tensor(gy, dtype=getattr(torch, dtype)))
        for got, want in ((ex.grad, tx.grad), (ew.grad, tw.grad)):
            check(got.numpy(), want.numpy())


@pytest.mark.parametrize("opts", [dict(), dict(padding=1, groups=2), dict(padding=(2, 0), dilation=(1, 2)),
                                  dict(padding=3)], ids=str)
def test_conv_transpose2d_stride_1(opts, threads):
    # conv_transpose2d's forward is the input-gradient kernel: stride 1 runs the flipped forward (not padding 3)
    rng = np.random.default_rng(60)
    groups = opts.get("groups", 1)
    x, w, b = rng.standard_normal((3, 4, 7, 6)), rng.standard_normal((4, 4 // groups, 3, 3)), rng.standard_normal(4)
    for dtype, tol in ((ember.float64, 1e-10), (ember.float32, 2e-4)):
        got = F.conv_transpose2d(ember.tensor(x, dtype=dtype), ember.tensor(w, dtype=dtype),
                                 ember.tensor(b, dtype=dtype), **opts)
        np.testing.assert_allclose(got.numpy(), np_conv_transpose2d(x, w, b, **opts), rtol=tol, atol=tol)
    if torch is not None:
        want = TF.conv_transpose2d(torch.tensor(x), torch.tensor(w), torch.tensor(b), **opts)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=2e-4, atol=2e-4)


GRAD_CASES = [  # float64 (input, weight, options): flipped input gradient, col2im, padded stride 2, Winograd
    ((2, 4, 5, 6), (4, 2, 3, 2), dict(padding=1, groups=2, dilation=(1, 2))),
    ((1, 3, 4, 4), (3, 3, 3, 3), dict(padding=3)),
    ((1, 2, 5, 5), (3, 2, 3, 3), dict(padding=1)),
    ((2, 2, 5, 6), (2, 2, 3, 3), dict(padding=(1, 2), stride=2)),
    ((1, 32, 3, 17), (32, 32, 3, 3), dict(padding=1)),
]


@pytest.mark.parametrize("case", range(len(GRAD_CASES)))
def test_gradcheck(case):
    xs, ws, opts = GRAD_CASES[case]
    x = ember.randn(*xs, dtype=ember.float64, requires_grad=True)
    w = ember.randn(*ws, dtype=ember.float64, requires_grad=True)
    assert gradcheck(lambda a, b: F.conv2d(a, b, **opts), (x, w))
    assert gradgradcheck(lambda a, b: F.conv2d(a, b, **opts), (x, w))
