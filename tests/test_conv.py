"""Convolutions (issue 11): conv1d/conv2d, conv_transpose1d/2d, convolution and F.unfold/F.fold
against NumPy references (and torch when installed) over every option, strided and
channels-last inputs, batch 0, half dtypes, errors; float64 gradcheck, gradgradcheck and
JVPs of every op (the harness cannot sample a weight tensor); the CPU kernels at realistic
sizes on 1, 2 and 3 threads, around the images-per-GEMM batching."""
import itertools
import warnings

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.autograd import gradcheck, gradgradcheck

try:
    import torch
    import torch.nn.functional as TF
except ImportError:  # the torch comparisons are skipped without it
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="needs torch")
needs_gpu = pytest.mark.skipif(not ember.cuda.is_available(), reason="needs a CUDA GPU")
F64 = ember.float64
# Output positions below which the kernels put several images in one GEMM (aten/src/cpu/conv.cpp).
MIN_GEMM_COLUMNS = 256
# A larger image's patch matrix is made in bands of output rows of this many bytes (float32
# entries), and at least this many columns (conv.cpp's kPatchBandBytes, kMinBandColumns).
PATCH_BAND_BYTES, MIN_BAND_COLUMNS = 512 << 10, 128


def _pair(v, n=2):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * n


def np_conv2d(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    """Direct cross-correlation: one strided slice of the padded input per kernel offset."""
    (sh, sw), (ph, pw), (dh, dw) = _pair(stride), _pair(padding), _pair(dilation)
    n, c, h, wd = x.shape
    oc, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    oh, ow = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1, (wd + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((n, oc, oh, ow), dtype=np.float64)
    ocg = oc // groups
    for g in range(groups):
        xs, ws = xp[:, g * cg:(g + 1) * cg], w[g * ocg:(g + 1) * ocg]
        for i in range(kh):
            for j in range(kw):
                patch = xs[:, :, i * dh: i * dh + sh * (oh - 1) + 1: sh, j * dw: j * dw + sw * (ow - 1) + 1: sw]
                out[:, g * ocg:(g + 1) * ocg] += np.einsum("nchw,oc->nohw", patch, ws[:, :, i, j])
    if b is not None:
        out += b.reshape(1, -1, 1, 1)
    return out


def np_conv_transpose2d(x, w, b=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """The adjoint of np_conv2d: each input element scatters weight * value into the output."""
    (sh, sw), (ph, pw), (dh, dw), (oph, opw) = _pair(stride), _pair(padding), _pair(dilation), _pair(output_padding)
    n, c, h, wd = x.shape
    _, ocg, kh, kw = w.shape
    cg = c // groups
    full_h, full_w = (h - 1) * sh + dh * (kh - 1) + 1 + oph, (wd - 1) * sw + dw * (kw - 1) + 1 + opw
    full = np.zeros((n, ocg * groups, full_h + ph, full_w + pw), dtype=np.float64)
    for g in range(groups):
        xs, ws = x[:, g * cg:(g + 1) * cg], w[g * cg:(g + 1) * cg]
        for i in range(kh):
            for j in range(kw):
                full[:, g * ocg:(g + 1) * ocg, i * dh: i * dh + sh * (h - 1) + 1: sh,
                     j * dw: j * dw + sw * (wd - 1) + 1: sw] += np.einsum("nchw,co->nohw", xs, ws[:, :, i, j])
    out = full[:, :, ph: ph + full_h - 2 * ph, pw: pw + full_w - 2 * pw]
    if b is not None:
        out = out + b.reshape(1, -1, 1, 1)
    return out


def np_unfold(x, kernel_size, dilation=1, padding=0, stride=1):
    (kh, kw), (dh, dw), (ph, pw), (sh, sw) = _pair(kernel_size), _pair(dilation), _pair(padding), _pair(stride)
    n, c, h, wd = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    oh, ow = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1, (wd + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    rows = [xp[:, :, i * dh: i * dh + sh * (oh - 1) + 1: sh, j * dw: j * dw + sw * (ow - 1) + 1: sw]
            for i in range(kh) for j in range(kw)]
    return np.stack(rows, 2).reshape(n, c * kh * kw, oh * ow)


def np_fold(cols, output_size, kernel_size, dilation=1, padding=0, stride=1):
    (h, wd), (kh, kw), (dh, dw), (ph, pw), (sh, sw) = (_pair(output_size), _pair(kernel_size), _pair(dilation),
                                                        _pair(padding), _pair(stride))
    n = cols.shape[0]
    c = cols.shape[1] // (kh * kw)
    oh, ow = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1, (wd + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    blocks = cols.reshape(n, c, kh, kw, oh, ow)
    out = np.zeros((n, c, h + 2 * ph, wd + 2 * pw))
    for i in range(kh):
        for j in range(kw):
            out[:, :, i * dh: i * dh + sh * (oh - 1) + 1: sh, j * dw: j * dw + sw * (ow - 1) + 1: sw] += blocks[:, :, i, j]
    return out[:, :, ph: ph + h, pw: pw + wd]


def same_padding(x, w, dilation):
    """padding='same' as explicit zeros: d * (k - 1) split, the odd one at the end."""
    pads = []
    for k, d in zip(w.shape[2:], _pair(dilation, len(w.shape) - 2)):
        total = d * (k - 1)
        pads.append((total // 2, total - total // 2))
    return np.pad(x, ((0, 0), (0, 0), *pads))


def rand(rng, *shape):
    return rng.standard_normal(shape)


def e(a, dtype=F64):
    return None if a is None else ember.tensor(a, dtype=dtype)


def close(got, want, rtol=1e-10, atol=1e-10):
    np.testing.assert_allclose(got.detach().numpy(), want, rtol=rtol, atol=atol)


# ---------------------------------------------------------------- values vs NumPy (and torch)
CONV2D_OPTIONS = [dict(stride=s, padding=p, dilation=d)
                  for s, p, d in itertools.product([1, 2, (2, 1)], [0, 1, (2, 0)], [1, 2, (1, 3)])]


@pytest.mark.parametrize("groups", [1, 2, 4])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("opts", CONV2D_OPTIONS, ids=str)
def test_conv2d_matches_numpy_for_every_option(opts, bias, groups):
    rng = np.random.default_rng(0)
    x, w = rand(rng, 2, 4, 9, 8), rand(rng, 8, 4 // groups, 3, 2)
    b = rand(rng, 8) if bias else None
    got = F.conv2d(e(x), e(w), e(b), groups=groups, **opts)
    close(got, np_conv2d(x, w, b, groups=groups, **opts))
    if torch is not None:
        want = TF.conv2d(torch.tensor(x), torch.tensor(w), None if b is None else torch.tensor(b), groups=groups, **opts)
        close(got, want.numpy())


@pytest.mark.parametrize("kernel", [(3, 3), (2, 4), (1, 1), (4, 1)])
@pytest.mark.parametrize("dilation", [1, 2, (1, 3)])
def test_conv2d_padding_same_and_valid(kernel, dilation):
    rng = np.random.default_rng(1)
    x, w, b = rand(rng, 2, 3, 7, 12), rand(rng, 5, 3, *kernel), rand(rng, 5)
    got = F.conv2d(e(x), e(w), e(b), padding="same", dilation=dilation)
    assert tuple(got.shape) == (2, 5, 7, 12)
    close(got, np_conv2d(same_padding(x, w, dilation), w, b, dilation=dilation))
    close(F.conv2d(e(x), e(w), e(b), padding="valid", dilation=dilation), np_conv2d(x, w, b, dilation=dilation))
    if torch is not None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch warns about the copy an even kernel needs
            want = TF.conv2d(torch.tensor(x), torch.tensor(w), torch.tensor(b), padding="same", dilation=dilation)
        close(got, want.numpy())


@pytest.mark.parametrize("opts", [dict(), dict(stride=2, padding=1), dict(dilation=2, groups=2), dict(padding="same"),
                                  dict(padding="valid", stride=3), dict(stride=(2,), padding=(1,), dilation=[2])],
                         ids=str)
def test_conv1d_matches_numpy(opts):
    rng = np.random.default_rng(2)
    groups = opts.get("groups", 1)
    x, w, b = rand(rng, 3, 4, 11), rand(rng, 6, 4 // groups, 4), rand(rng, 6)
    got = F.conv1d(e(x), e(w), e(b), **opts)
    o2 = {k: (v if isinstance(v, str) else (1,) + _pair(v, 1)) for k, v in opts.items() if k != "groups"}
    if o2.get("padding") == "same":
        x2 = same_padding(x[:, :, None], w[:, :, None], o2.get("dilation", 1))
        o2.pop("padding")
    else:
        x2 = x[:, :, None]
        if o2.get("padding") == "valid":
            o2.pop("padding")
        o2.setdefault("padding", (0, 0))
        o2["padding"] = (0,) + tuple(o2["padding"][1:])
    close(got, np_conv2d(x2, w[:, :, None], b, groups=groups, **o2)[:, :, 0])
    if torch is not None:
        close(got, TF.conv1d(torch.tensor(x), torch.tensor(w), torch.tensor(b), **opts).numpy())


TRANSPOSED_OPTIONS = [dict(stride=1), dict(stride=2, output_padding=1), dict(stride=(3, 2), padding=(2, 1), output_padding=(2, 0)),
                      dict(dilation=2, padding=1), dict(stride=2, dilation=3, output_padding=2), dict(groups=2, stride=2),
                      dict(groups=4, padding=1, dilation=(1, 2))]


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("opts", TRANSPOSED_OPTIONS, ids=str)
def test_conv_transpose2d_matches_numpy(opts, bias):
    rng = np.random.default_rng(3)
    groups = opts.get("groups", 1)
    x, w = rand(rng, 2, 4, 5, 6), rand(rng, 4, 6 // 2 if groups == 2 else 3, 3, 2)
    if groups == 4:
        w = rand(rng, 4, 2, 3, 2)
    b = rand(rng, w.shape[1] * groups) if bias else None
    got = F.conv_transpose2d(e(x), e(w), e(b), **opts)
    close(got, np_conv_transpose2d(x, w, b, **opts))
    if torch is not None:
        want = TF.conv_transpose2d(torch.tensor(x), torch.tensor(w), None if b is None else torch.tensor(b), **opts)
        close(got, want.numpy())


@pytest.mark.parametrize("opts", [dict(), dict(stride=3, padding=1, output_padding=2), dict(groups=2, dilation=2)], ids=str)
def test_conv_transpose1d_matches_numpy(opts):
    rng = np.random.default_rng(4)
    x, w, b = rand(rng, 2, 4, 7), rand(rng, 4, 3, 3), rand(rng, 3 * opts.get("groups", 1))
    got = F.conv_transpose1d(e(x), e(w), e(b), **opts)
    o2 = {k: (v if k == "groups" else (1 if k in ("stride", "dilation") else 0, v)) for k, v in opts.items()}
    close(got, np_conv_transpose2d(x[:, :, None], w[:, :, None], b, **o2)[:, :, 0])
    if torch is not None:
        close(got, TF.conv_transpose1d(torch.tensor(x), torch.tensor(w), torch.tensor(b), **opts).numpy())


def test_convolution_picks_the_op_from_the_dims_and_transposed():
    rng = np.random.default_rng(5)
    x, w, b = rand(rng, 2, 4, 6, 7), rand(rng, 4, 2, 3, 3), rand(rng, 4)
    close(ember.convolution(e(x), e(w), e(b), [2, 1], [1], [1], False, [0], 2),
          np_conv2d(x, w, b, stride=(2, 1), padding=1, groups=2))
    close(ember.convolution(e(x), e(w), e(b[:2]), [2], [1], [1], True, [1], 1),
          np_conv_transpose2d(x, w, b[:2], stride=2, padding=1, output_padding=1))
    x1, w1 = rand(rng, 2, 4, 9), rand(rng, 3, 4, 2)
    close(ember.convolution(e(x1), e(w1), None, [2], [1], [1], False, [0], 1),
          np_conv2d(x1[:, :, None], w1[:, :, None], stride=(1, 2), padding=(0, 1))[:, :, 0])
    with pytest.raises(NotImplementedError, match="convolution: only 1-D and 2-D"):
        ember.convolution(ember.ones(1, 2, 3, 3, 3), ember.ones(1, 2, 1, 1, 1), None, [1], [0], [1], False, [0], 1)


def test_functional_names_are_the_top_level_ops():
    assert F.conv2d is ember.conv2d and F.conv1d is ember.conv1d
    assert F.conv_transpose2d is ember.conv_transpose2d and F.conv_transpose1d is ember.conv_transpose1d
    assert not hasattr(ember, "im2col") and hasattr(ember._C._nn, "im2col")


# ---------------------------------------------------------------- layouts, shapes, dtypes
def test_strided_and_channels_last_inputs_and_weights():
    rng = np.random.default_rng(6)
    x, w, b = rand(rng, 2, 4, 7, 6), rand(rng, 6, 4, 3, 3), rand(rng, 6)
    want = np_conv2d(x, w, b, padding=1)
    nhwc = ember.tensor(np.ascontiguousarray(x.transpose(0, 2, 3, 1)), dtype=F64).permute(0, 3, 1, 2)
    assert not nhwc.is_contiguous()
    close(F.conv2d(nhwc, e(w), e(b), padding=1), want)
    swapped = ember.tensor(np.ascontiguousarray(x.swapaxes(2, 3)), dtype=F64).transpose(2, 3)
    close(F.conv2d(swapped, e(w), e(b), padding=1), want)
    wide = ember.tensor(np.concatenate([x, x], 3), dtype=F64)[:, :, :, ::2]
    close(F.conv2d(wide, e(w), e(b), padding=1), np_conv2d(np.concatenate([x, x], 3)[:, :, :, ::2], w, b, padding=1))
    w_cl = ember.tensor(np.ascontiguousarray(w.transpose(0, 2, 3, 1)), dtype=F64).permute(0, 3, 1, 2)
    close(F.conv2d(e(x), w_cl, e(b), padding=1), want)
    close(F.conv_transpose2d(nhwc, ember.tensor(np.ascontiguousarray(w.swapaxes(0, 1)), dtype=F64), e(b)),
          np_conv_transpose2d(x, w.swapaxes(0, 1), b))


def test_batch_zero_and_unbatched_inputs():
    rng = np.random.default_rng(7)
    w, b = rand(rng, 5, 3, 3, 3), rand(rng, 5)
    out = F.conv2d(ember.zeros(0, 3, 6, 6, dtype=F64), e(w), e(b))
    assert tuple(out.shape) == (0, 5, 4, 4)
    assert tuple(F.conv_transpose2d(ember.zeros(0, 5, 4, 4, dtype=F64), e(w)).shape) == (0, 3, 6, 6)
    assert tuple(F.conv1d(ember.zeros(0, 3, 6, dtype=F64), e(w[:, :, 0])).shape) == (0, 5, 4)
    x = ember.zeros(0, 3, 6, 6, dtype=F64, requires_grad=True)
    wt = e(w).requires_grad_()
    F.conv2d(x, wt, e(b)).sum().backward()
    assert tuple(x.grad.shape) == (0, 3, 6, 6) and float(wt.grad.abs().sum()) == 0
    x3 = rand(rng, 3, 6, 7)
    close(F.conv2d(e(x3), e(w), e(b), padding=1), np_conv2d(x3[None], w, b, padding=1)[0])
    xt = rand(rng, 5, 4, 4)
    close(F.conv_transpose2d(e(xt), e(w)), np_conv_transpose2d(xt[None], w)[0])
    x2 = rand(rng, 3, 9)
    close(F.conv1d(e(x2), e(w[:, :, 0]), e(b)), np_conv2d(x2[None, :, None], w[:, :, :1], b)[0, :, 0])


@needs_torch
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_dtypes_compute_in_float32(dtype):
    rng = np.random.default_rng(8)
    x, w, b = rand(rng, 2, 3, 6, 6), rand(rng, 4, 3, 3, 3), rand(rng, 4)
    ed, td = getattr(ember, dtype), getattr(torch, dtype)
    got = F.conv2d(e(x, ed), e(w, ed), e(b, ed), padding=1)
    want = TF.conv2d(torch.tensor(x, dtype=td), torch.tensor(w, dtype=td), torch.tensor(b, dtype=td), padding=1)
    assert got.dtype == ed
    np.testing.assert_allclose(got.float().numpy(), want.float().numpy(), rtol=2e-2, atol=5e-2)
    t = F.conv_transpose2d(e(x, ed), e(w.swapaxes(0, 1).copy(), ed))
    assert t.dtype == ed and tuple(t.shape) == (2, 4, 8, 8)


def test_float32_matches_float64():
    rng = np.random.default_rng(9)
    x, w, b = rand(rng, 3, 6, 12, 12), rand(rng, 16, 6, 5, 5), rand(rng, 16)
    got = F.conv2d(e(x, ember.float32), e(w, ember.float32), e(b, ember.float32))
    assert got.dtype == ember.float32
    close(got, np_conv2d(x, w, b), rtol=1e-4, atol=1e-4)


# ---------------------------------------------------------------- unfold / fold
@pytest.mark.parametrize("opts", [dict(kernel_size=2), dict(kernel_size=(2, 3), dilation=(2, 1), padding=1, stride=(2, 1)),
                                  dict(kernel_size=3, padding=2, stride=3), dict(kernel_size=(1, 4), dilation=2)], ids=str)
def test_unfold_and_fold_match_numpy(opts):
    rng = np.random.default_rng(10)
    x = rand(rng, 2, 3, 7, 9)
    cols = np_unfold(x, **opts)
    close(F.unfold(e(x), **opts), cols)
    close(F.unfold(e(x[0]), **opts), cols[0])
    c = rand(rng, *cols.shape)
    close(F.fold(e(c), (7, 9), **opts), np_fold(c, (7, 9), **opts))
    close(F.fold(e(c[1]), (7, 9), **opts), np_fold(c[1:], (7, 9), **opts)[0])
    if torch is not None:
        close(F.unfold(e(x), **opts), TF.unfold(torch.tensor(x), **opts).numpy())
        close(F.fold(e(c), (7, 9), **opts), TF.fold(torch.tensor(c), (7, 9), **opts).numpy())
    strided = ember.tensor(np.ascontiguousarray(x.transpose(0, 2, 3, 1)), dtype=F64).permute(0, 3, 1, 2)
    close(F.unfold(strided, **opts), cols)
    assert tuple(F.unfold(ember.zeros(0, 3, 7, 9, dtype=F64), **opts).shape) == (0,) + cols.shape[1:]


def test_unfold_and_fold_errors():
    x = ember.ones(2, 3, 8, 8)
    with pytest.raises(NotImplementedError, match="Only 3D or 4D input"):
        F.unfold(ember.ones(3, 8), 2)
    with pytest.raises(NotImplementedError, match=r"Only unbatched \(2D\) or batched \(3D\)"):
        F.fold(ember.ones(3, 8, 2, 2), (4, 4), 2)
    with pytest.raises(RuntimeError, match=r"im2col: .*calculated shape of the array of sliding blocks as \(0, 0\)"):
        F.unfold(x, 9)
    with pytest.raises(RuntimeError, match="im2col: kernel size should be greater than zero"):
        F.unfold(x, 0)
    with pytest.raises(RuntimeError, match="col2im: Expected size of input's dimension 1 to be divisible"):
        F.fold(ember.ones(2, 35, 36), (8, 8), 3, padding=1)
    with pytest.raises(RuntimeError, match=r"col2im: .*number of sliding blocks 8 \* 8 = 64, but got input.size\(2\)=30"):
        F.fold(ember.ones(2, 36, 30), (8, 8), 3, padding=1)
    with pytest.raises(NotImplementedError, match="im2col"):
        F.unfold(ember.ones(1, 2, 4, 4, dtype=ember.int32), 2)


# ---------------------------------------------------------------- errors
@pytest.mark.parametrize("call, kind, message", [
    (lambda: F.conv2d(ember.ones(2, 4, 8, 8), ember.ones(6, 3, 3, 3)), RuntimeError,
     r"^Given groups=1, weight of size \[6, 3, 3, 3\], expected input\[2, 4, 8, 8\] to have 3 channels, but got 4"),
    (lambda: F.conv2d(ember.ones(2, 4, 8, 8), ember.ones(5, 2, 3, 3), groups=2), RuntimeError,
     r"expected weight to be divisible by 2 at dimension 0, but got weight of size \[\[5, 2, 3, 3\]\]"),
    (lambda: F.conv2d(ember.ones(2, 4, 8, 8), ember.ones(6, 4, 3, 3), ember.ones(5)), RuntimeError,
     "expected bias to be 1-dimensional with 6 elements, but got bias of size"),
    (lambda: F.conv2d(ember.ones(2, 4, 8, 8), ember.ones(6, 4, 3, 3), stride=0), RuntimeError, "non-positive stride"),
    (lambda: F.conv2d(ember.ones(2, 4, 8, 8), ember.ones(6, 4, 3, 3), padding=-1), RuntimeError, "negative padding"),
    (lambda: F.conv2d(ember.ones(2, 4, 8, 8), ember.ones(6, 4, 3, 3), dilation=0), RuntimeError, "non-positive dilation"),
    (lambda: F.conv2d(ember.ones(2, 4, 8, 8), ember.ones(6, 4, 3, 3), groups=0), RuntimeError, "non-positive groups"),
    (lambda: F.conv2d(ember.ones(2, 4, 8, 8), ember.ones(6, 4, 9, 9)), RuntimeError,
     r"Calculated padded input size per channel: \(8 x 8\). Kernel size: \(9 x 9\)"),
    (lambda: F.conv2d(ember.ones(4, 8), ember.ones(6, 4, 3, 3)), RuntimeError,
     r"Expected 3D \(unbatched\) or 4D \(batched\) input to conv2d, but got input of size: \[4, 8\]"),
    (lambda: F.conv2d(ember.ones(2, 4, 8, 8), ember.ones(6, 4, 3, 3), padding="same", stride=2), RuntimeError,
     "padding='same' is not supported for strided convolutions"),
    (lambda: F.conv2d(ember.ones(2, 4, 8, 8), ember.ones(6, 4, 3, 3), padding="foo"), RuntimeError,
     "Invalid padding string: 'foo'"),
    (lambda: F.conv2d(ember.ones(2, 4, 8, 8), ember.ones(6, 4, 3, 3, dtype=F64)), RuntimeError,
     "Input type .* and weight type .* should be the same"),
    (lambda: F.conv2d(ember.ones(2, 4, 8, 8), ember.ones(6, 4, 3, 3), ember.ones(6, dtype=F64)), RuntimeError,
     "Input type .* and bias type .* should be the same"),
    (lambda: F.conv2d(ember.ones(2, 4, 8, 8), ember.ones(6, 4, 3, 3), stride=(1, 2, 3)), RuntimeError,
     r"expected stride to be a single integer value or a list of 2 values"),
    (lambda: F.conv1d(ember.ones(2, 4, 8), ember.ones(6, 4, 9)), RuntimeError,
     r"^Calculated padded input size per channel: \(8\). Kernel size: \(9\)"),
    (lambda: F.conv_transpose2d(ember.ones(2, 4, 8, 8), ember.ones(4, 3, 3, 3), output_padding=1), RuntimeError,
     "^output padding must be smaller than either stride or dilation"),
    (lambda: F.conv_transpose2d(ember.ones(2, 4, 8, 8), ember.ones(3, 3, 3, 3)), RuntimeError,
     r"Given transposed=1, weight of size \[3, 3, 3, 3\], expected input\[2, 4, 8, 8\] to have 3 channels"),
    (lambda: F.conv_transpose2d(ember.ones(1, 4, 2, 2), ember.ones(4, 3, 3, 3), padding=3), RuntimeError,
     r"Calculated output size per channel: \(-2 x -2\). Output size is too small"),
    (lambda: F.conv2d(ember.ones(1, 2, 4, 4, dtype=ember.int64), ember.ones(1, 2, 1, 1, dtype=ember.int64)),
     NotImplementedError, "conv2d.*not implemented for 'Long'"),
    (lambda: ember._conv_forward(ember.ones(1, 2, 4, 4, dtype=ember.int32), ember.ones(1, 2, 1, 1, dtype=ember.int32),
                                 None, [1, 1], [0, 0], [1, 1], 1), NotImplementedError, "_conv_forward"),
    (lambda: ember._conv_backward_input(ember.ones(1, 3, 4, 4), ember.ones(3, 2, 3, 3), [1, 2, 5, 5], [1, 1], [0, 0],
                                        [1, 1], 1), RuntimeError, "_conv_backward_input: grad_output's shape"),
], ids=lambda v: v if isinstance(v, str) else "")
def test_errors_match_pytorch(call, kind, message):
    with pytest.raises(kind, match=message):
        call()


@needs_gpu
@pytest.mark.parametrize("name", ["_conv_forward", "im2col"])
def test_cuda_slots_name_the_op_and_device(name):
    x = ember.ones(1, 2, 4, 4).cuda()
    with pytest.raises(NotImplementedError, match=f"{name}: .*not implemented on cuda"):
        if name == "im2col":
            ember._C._nn.im2col(x, [2, 2], [1, 1], [0, 0], [1, 1])
        else:
            ember._conv_forward(x, ember.ones(3, 2, 1, 1).cuda(), None, [1, 1], [0, 0], [1, 1], 1)


# ---------------------------------------------------------------- autograd (float64)
def r64(*shape):
    return ember.randn(*shape, dtype=F64, requires_grad=True)


GRAD_CASES = {
    "conv2d": (lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1, dilation=(1, 2), groups=2),
               lambda: (r64(2, 4, 5, 6), r64(4, 2, 2, 3), r64(4))),
    "conv2d_1x1": (lambda x, w, b: F.conv2d(x, w, b), lambda: (r64(2, 3, 3, 2), r64(4, 3, 1, 1), r64(4))),
    "conv2d.padding": (lambda x, w, b: F.conv2d(x, w, b, padding="same", dilation=(1, 2)),
                       lambda: (r64(1, 2, 4, 5), r64(3, 2, 2, 3), r64(3))),
    "conv1d": (lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=1), lambda: (r64(2, 2, 7), r64(3, 2, 3), r64(3))),
    "conv1d.padding": (lambda x, w: F.conv1d(x, w, padding="same"), lambda: (r64(2, 2, 6), r64(3, 2, 4))),
    "conv_transpose2d.input": (
        lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1, groups=2),
        lambda: (r64(2, 4, 3, 3), r64(4, 1, 3, 2), r64(2))),
    "conv_transpose1d": (lambda x, w, b: F.conv_transpose1d(x, w, b, stride=2, dilation=2),
                         lambda: (r64(2, 2, 4), r64(2, 3, 3), r64(3))),
    "conv_transpose2d_wide_output_padding": (  # output_padding >= stride: a zero input row is added
        lambda x, w: F.conv_transpose2d(x, w, stride=(2, 1), dilation=3, padding=1, output_padding=(2, 1)),
        lambda: (r64(1, 2, 3, 2), r64(2, 2, 2, 2))),
    "convolution": (lambda x, w: ember.convolution(x, w, None, [1], [1], [1], False, [0], 1),
                    lambda: (r64(1, 2, 3, 3), r64(2, 2, 2, 2))),
    "_conv_forward": (lambda x, w, b: ember._conv_forward(x, w, b, [1, 2], [1, 0], [2, 1], 1),
                      lambda: (r64(2, 2, 5, 5), r64(3, 2, 2, 2), r64(3))),
    "_conv_backward_input": (lambda g, w: ember._conv_backward_input(g, w, [2, 4, 5, 5], [2, 2], [1, 1], [1, 1], 2),
                             lambda: (r64(2, 2, 3, 3), r64(2, 2, 2, 2))),
    "_conv_backward_weight": (lambda g, x: ember._conv_backward_weight(g, x, [2, 2, 2, 2], [2, 2], [1, 1], [1, 1], 2),
                              lambda: (r64(2, 2, 3, 3), r64(2, 4, 5, 5))),
    "im2col": (lambda x: ember._C._nn.im2col(x, [2, 3], [1, 1], [1, 0], [2, 1]), lambda: (r64(2, 2, 4, 5),)),
    "col2im": (lambda c: ember._C._nn.col2im(c, [4, 5], [2, 2], [1, 1], [1, 1], [2, 2]), lambda: (r64(2, 8, 9),)),
    "_im2col_backward": (lambda g: ember._im2col_backward(g, [1, 2, 4, 5], [2, 2], [1, 1], [1, 1], [2, 2]),
                         lambda: (r64(1, 8, 9),)),
}


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_gradcheck_gradgradcheck_and_jvp(name):
    fn, make = GRAD_CASES[name]
    inputs = make()
    assert gradcheck(fn, inputs, check_forward_ad=True)
    assert gradgradcheck(fn, inputs)


def test_gradients_match_torch_with_bias_none_and_groups():
    if torch is None:
        pytest.skip("needs torch")
    rng = np.random.default_rng(11)
    x, w, gy = rand(rng, 3, 6, 9, 9), rand(rng, 6, 2, 3, 3), rand(rng, 3, 6, 5, 5)
    ex, ew = e(x).requires_grad_(), e(w).requires_grad_()
    F.conv2d(ex, ew, None, stride=2, padding=1, groups=3).backward(e(gy))
    tx, tw = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    TF.conv2d(tx, tw, None, stride=2, padding=1, groups=3).backward(torch.tensor(gy))
    close(ex.grad, tx.grad.numpy())
    close(ew.grad, tw.grad.numpy())


# ---------------------------------------------------------------- realistic sizes, threads
REALISTIC = [  # (input, weight, options): LeNet's two layers, a ResNet block, a depthwise layer, a 1x1 projection
    ((16, 1, 28, 28), (6, 1, 5, 5), dict()),
    ((13, 6, 12, 12), (16, 6, 5, 5), dict()),  # 64 positions: 4 images per GEMM, the last chunk short
    ((2, 32, 28, 28), (32, 32, 3, 3), dict(padding=1)),
    ((3, 32, 20, 20), (32, 1, 3, 3), dict(padding=1, groups=32, stride=2)),
    ((4, 32, 14, 14), (64, 32, 1, 1), dict()),
    ((5, 8, 15, 16), (8, 8, 4, 4), dict(padding="same")),  # 240 positions: just under MIN_GEMM_COLUMNS
]


@pytest.mark.filterwarnings("ignore:Using padding='same'")  # torch's note on the copy an even kernel needs
@pytest.mark.parametrize("case", range(len(REALISTIC)))
def test_realistic_sizes_on_1_2_3_threads(case, threads):
    xs, ws, opts = REALISTIC[case]
    rng = np.random.default_rng(12 + case)
    x, w, b = rand(rng, *xs).astype(np.float32), (rand(rng, *ws) * 0.1).astype(np.float32), rand(rng, ws[0]).astype(np.float32)
    ex, ew, eb = (ember.tensor(a).requires_grad_() for a in (x, w, b))
    y = F.conv2d(ex, ew, eb, **opts)
    gy = rand(rng, *y.shape).astype(np.float32)
    y.backward(ember.tensor(gy))
    x64 = same_padding(x.astype(np.float64), w, 1) if opts.get("padding") == "same" else x.astype(np.float64)
    o = {k: v for k, v in opts.items() if v != "same"}
    close(y, np_conv2d(x64, w.astype(np.float64), b.astype(np.float64), **o), rtol=1e-4, atol=1e-4)
    if torch is not None:
        tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
        TF.conv2d(tx, tw, tb, **opts).backward(torch.tensor(gy))
        for got, want in ((ex.grad, tx.grad), (ew.grad, tw.grad), (eb.grad, tb.grad)):
            scale = float(np.abs(want.numpy()).max())
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-4, atol=1e-5 * scale)


def test_results_do_not_depend_on_the_thread_count():
    rng = np.random.default_rng(20)
    x, w, gy = (ember.tensor(rand(rng, *s).astype(np.float32)) for s in ((9, 6, 12, 12), (16, 6, 5, 5), (9, 16, 8, 8)))
    prev, outs = ember.get_num_threads(), []
    try:
        for n in (1, 2, 3):
            ember.set_num_threads(n)
            outs.append([F.conv2d(x, w).numpy(), ember._conv_backward_weight(gy, x, [16, 6, 5, 5], [1, 1], [0, 0], [1, 1], 1).numpy()])
    finally:
        ember.set_num_threads(prev)
    for a, b in zip(outs[0], outs[1]):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(outs[0][0], outs[2][0])
    np.testing.assert_allclose(outs[0][1], outs[2][1], rtol=1e-5, atol=1e-4)


def test_images_per_gemm_batching_edges(threads):
    # output positions just below, at and above the batching threshold; batches not a multiple of it
    rng = np.random.default_rng(21)
    for side in (15, 16, 17, 5):
        x, w = rand(rng, 7, 3, side + 2, side + 2), rand(rng, 4, 3, 3, 3)
        assert (side * side < MIN_GEMM_COLUMNS) == (side in (15, 5))
        ex, ew = e(x).requires_grad_(), e(w).requires_grad_()
        y = F.conv2d(ex, ew)
        gy = rand(rng, *y.shape)
        y.backward(e(gy))
        close(y, np_conv2d(x, w))
        close(ex.grad, np_conv_transpose2d(gy, w))
        close(ew.grad, _np_weight_grad(gy, x, 3))


def _np_weight_grad(gy, x, k):
    oh, ow = gy.shape[2:]
    return np.stack([np.stack([np.einsum("nohw,nchw->oc", gy, x[:, :, i:i + oh, j:j + ow]) for j in range(k)], -1)
                     for i in range(k)], -2)


@pytest.mark.parametrize("opts", [dict(padding=1), dict(padding=2, stride=2), dict(padding=(3, 1), dilation=(2, 1))])
def test_bands_of_output_rows(opts, threads):
    # Several bands, the last one short; padding, stride and dilation put band edges next to the
    # input's border rows. Gradients checked as adjoints: <conv(x, w), gy> = <x, gx> = <w, gw>.
    rng = np.random.default_rng(22)
    x, w = rand(rng, 2, 64, 34, 30), rand(rng, 4, 64, 3, 3)
    ex, ew = e(x).requires_grad_(), e(w).requires_grad_()
    y = F.conv2d(ex, ew, **opts)
    oh, ow = y.shape[2:]
    band_rows = max(PATCH_BAND_BYTES // (64 * 9 * ow * 4), -(-MIN_BAND_COLUMNS // ow))
    assert 1 < band_rows < oh and oh % band_rows
    close(y, np_conv2d(x, w, **opts))
    gy = rand(rng, *y.shape)
    y.backward(e(gy))
    inner = float((y.detach().numpy() * gy).sum())
    np.testing.assert_allclose([float((ex.grad.numpy() * x).sum()), float((ew.grad.numpy() * w).sum())], [inner] * 2,
                               rtol=1e-10)
    if torch is not None:
        tx, tw = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
        TF.conv2d(tx, tw, **opts).backward(torch.tensor(gy))
        close(ex.grad, tx.grad.numpy())
        close(ew.grad, tw.grad.numpy())
