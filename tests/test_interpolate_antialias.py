"""F.interpolate(..., antialias=True): bilinear, bicubic and lanczos on 4-D input, as PyTorch's
_upsample_*2d_aa (Pillow's filters), against hand-computed weights and, when installed, PyTorch."""
import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.autograd import gradcheck, gradgradcheck
from ember.nn._interpolate_aa import aa_weights

try:
    import torch
    import torch.nn.functional as TF
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="needs PyTorch")
MODES = ["bilinear", "bicubic", "lanczos"]
# (input H, W), interpolate keywords: down, up, identity, uneven and non-integer factors, int and tuple sizes
CASES = [
    ((32, 32), dict(size=(7, 16))), ((32, 32), dict(size=16)), ((17, 5), dict(size=(5, 17))),
    ((5, 17), dict(size=(17, 5))), ((8, 8), dict(size=8)), ((13, 11), dict(scale_factor=0.37)),
    ((13, 11), dict(scale_factor=(2.3, 0.45))), ((13, 11), dict(scale_factor=0.37, recompute_scale_factor=True)),
    ((9, 10), dict(scale_factor=1.6)), ((6, 7), dict(size=(1, 2))),
]


def _images(shape, dtype, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _reference(a, mode, align_corners=False, **kw):
    """The separable reference in NumPy: rows @ image @ cols^T with the float64 weights."""
    h, w = a.shape[-2:]
    if "size" in kw:
        oh, ow = kw["size"] if isinstance(kw["size"], tuple) else (kw["size"],) * 2
        sh = sw = None
    else:
        sh, sw = kw["scale_factor"] if isinstance(kw["scale_factor"], tuple) else (kw["scale_factor"],) * 2
        oh, ow = int(h * sh), int(w * sw)
        if kw.get("recompute_scale_factor"):
            sh = sw = None
    rows = aa_weights(h, oh, mode, align_corners, sh)
    cols = aa_weights(w, ow, mode, align_corners, sw)
    return np.einsum("oh,nchw,pw->ncop", rows, a.astype(np.float64), cols)


def test_triangle_weights_by_hand():
    # halving with the triangle filter: support 2 input pixels, taps at distance 0.5 and 1.5 weigh 3/8 and 1/8,
    # renormalised at the borders (output 0 sees inputs 0, 1, 2 only: 3/7, 3/7, 1/7)
    expected = np.array([[3 / 7, 3 / 7, 1 / 7, 0, 0, 0, 0, 0], [0, 1 / 8, 3 / 8, 3 / 8, 1 / 8, 0, 0, 0],
                         [0, 0, 0, 1 / 8, 3 / 8, 3 / 8, 1 / 8, 0], [0, 0, 0, 0, 0, 1 / 7, 3 / 7, 3 / 7]])
    np.testing.assert_allclose(aa_weights(8, 4, "bilinear"), expected, rtol=0, atol=1e-15)
    a = _images((1, 2, 8, 8), np.float64)
    out = F.interpolate(ember.tensor(a), size=4, mode="bilinear", antialias=True).numpy()
    np.testing.assert_allclose(out, np.einsum("oh,nchw,pw->ncop", expected, a, expected), rtol=0, atol=1e-13)


def test_upsampling_is_plain_half_pixel_interpolation():
    # upsampling keeps the filter unscaled: bilinear aa equals plain bilinear (align_corners=False) inside
    a = _images((1, 1, 5, 6), np.float64)
    aa = F.interpolate(ember.tensor(a), size=(10, 12), mode="bilinear", antialias=True).numpy()
    plain = F.interpolate(ember.tensor(a), size=(10, 12), mode="bilinear").numpy()
    np.testing.assert_allclose(aa, plain, rtol=0, atol=1e-13)


@pytest.mark.parametrize("mode", MODES)
def test_weights_sum_to_one_and_constant_stays_constant(mode):
    for n, o in [(32, 7), (17, 5), (5, 17), (8, 8), (3, 1)]:
        np.testing.assert_allclose(aa_weights(n, o, mode).sum(1), 1.0, rtol=0, atol=1e-14)
    out = F.interpolate(ember.full((2, 3, 17, 9), 2.5), size=(5, 20), mode=mode, antialias=True)
    np.testing.assert_allclose(out.numpy(), 2.5, rtol=0, atol=1e-5)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", range(len(CASES)))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matches_numpy_reference_and_pytorch(mode, case, dtype):
    (h, w), kw = CASES[case]
    a = _images((2, 3, h, w), dtype)
    out = F.interpolate(ember.tensor(a), mode=mode, antialias=True, **kw)
    assert out.dtype == ember.tensor(a).dtype
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(out.numpy(), _reference(a, mode, **kw), rtol=tol, atol=tol)
    if torch is not None:
        expected = TF.interpolate(torch.tensor(a), mode=mode, antialias=True, **kw)
        assert tuple(out.shape) == tuple(expected.shape)
        np.testing.assert_allclose(out.numpy(), expected.numpy(), rtol=tol, atol=tol)


def test_output_width_one_is_the_weighted_sum():
    # PyTorch 2.13's CPU kernel repeats output row 0 down the column when the output width is 1 (a bug);
    # ember gives the separable result, checked here against NumPy
    a = _images((1, 2, 17, 4), np.float64)
    out = F.interpolate(ember.tensor(a), size=(6, 1), mode="bilinear", antialias=True).numpy()
    np.testing.assert_allclose(out, _reference(a, "bilinear", size=(6, 1)), rtol=0, atol=1e-13)
    assert abs(out[0, 0, 0, 0] - out[0, 0, 5, 0]) > 1e-3


@needs_torch
@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("size", [(7, 4), (3, 9), (2, 2)])
def test_align_corners_matches_pytorch(mode, size):
    a = _images((2, 2, 11, 6), np.float64)
    out = F.interpolate(ember.tensor(a), size=size, mode=mode, align_corners=True, antialias=True)
    expected = TF.interpolate(torch.tensor(a), size=size, mode=mode, align_corners=True, antialias=True)
    np.testing.assert_allclose(out.numpy(), expected.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("mode", MODES)
def test_non_contiguous_and_channels_last(mode):
    a = _images((2, 3, 14, 19), np.float32)
    expected = _reference(a, mode, size=(5, 6))
    channels_last = ember.tensor(np.ascontiguousarray(a.transpose(0, 2, 3, 1))).permute(0, 3, 1, 2)
    out = F.interpolate(channels_last, size=(5, 6), mode=mode, antialias=True)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5, atol=1e-5)
    sliced = ember.tensor(_images((2, 3, 28, 19), np.float32))[:, :, ::2]
    out = F.interpolate(sliced, size=(5, 6), mode=mode, antialias=True)
    np.testing.assert_allclose(out.numpy(), _reference(sliced.numpy(), mode, size=(5, 6)), rtol=1e-5, atol=1e-5)
    transposed = ember.tensor(np.ascontiguousarray(a.transpose(0, 1, 3, 2))).transpose(2, 3)
    assert not transposed.is_contiguous()
    out = F.interpolate(transposed, size=(5, 6), mode=mode, antialias=True)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5, atol=1e-5)
    if torch is not None:
        ref = TF.interpolate(torch.tensor(a).contiguous(memory_format=torch.channels_last), size=(5, 6), mode=mode,
                             antialias=True)
        np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode", MODES)
def test_gradcheck(mode):
    x = ember.tensor(_images((1, 2, 7, 5), np.float64), requires_grad=True)
    for kw in (dict(size=(3, 8)), dict(scale_factor=0.6)):
        assert gradcheck(lambda t: F.interpolate(t, mode=mode, antialias=True, **kw), (x,))
        assert gradgradcheck(lambda t: F.interpolate(t, mode=mode, antialias=True, **kw), (x,))


@needs_torch
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gradients_match_pytorch(mode, dtype):
    a = _images((2, 3, 16, 9), dtype)
    g = _images((2, 3, 5, 12), dtype, seed=1)
    x = ember.tensor(a, requires_grad=True)
    F.interpolate(x, size=(5, 12), mode=mode, antialias=True).backward(ember.tensor(g))
    t = torch.tensor(a, requires_grad=True)
    TF.interpolate(t, size=(5, 12), mode=mode, antialias=True).backward(torch.tensor(g))
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=tol, atol=tol)


ERRORS = [
    (lambda F, x: F.interpolate(x, size=2, mode="nearest", antialias=True), ValueError,
     "Anti-alias option is restricted to bilinear, bicubic, and lanczos modes and requires a 4-D tensor as input"),
    (lambda F, x: F.interpolate(x, size=2, mode="area", antialias=True), ValueError, "Anti-alias option"),
    (lambda F, x: F.interpolate(x[0], size=2, mode="linear", antialias=True), ValueError, "Anti-alias option"),
    (lambda F, x: F.interpolate(x[0], size=2, mode="bilinear", antialias=True), ValueError, "Anti-alias option"),
    (lambda F, x: F.interpolate(x[None], size=2, mode="trilinear", antialias=True), ValueError, "Anti-alias option"),
    (lambda F, x: F.interpolate(x, size=2, mode="lanczos"), ValueError, "Lanczos mode requires antialias=True"),
    (lambda F, x: F.interpolate(x, size=2, mode="lanczos", align_corners=True, antialias=True), ValueError,
     "Lanczos mode does not support align_corners=True"),
    (lambda F, x: F.interpolate(x, size=(0, 3), mode="bilinear", antialias=True), RuntimeError,
     r"Input and output sizes should be greater than 0, but got input \(H: 3, W: 4\) output \(H: 0, W: 3\)"),
    (lambda F, x: F.interpolate(x[:, :, :0], size=(2, 3), mode="bicubic", antialias=True), RuntimeError,
     r"Input and output sizes should be greater than 0, but got input \(H: 0, W: 4\) output \(H: 2, W: 3\)"),
    (lambda F, x: F.interpolate(x.long(), size=2, mode="bilinear", antialias=True), NotImplementedError,
     "\"compute_index_ranges_weights\" not implemented for 'Long'"),
    (lambda F, x: F.interpolate(x.half(), size=2, mode="bicubic", antialias=True), NotImplementedError,
     "\"compute_index_ranges_weights\" not implemented for 'Half'"),
    (lambda F, x: F.interpolate(x[0], size=2, mode="lanczos"), NotImplementedError,
     r"Input Error: Only 3D, 4D and 5D input Tensors supported \(got 3D\) for the modes: nearest \| linear \| "
     r"bilinear \| bicubic \| trilinear \| lanczos \| area \| nearest-exact \(got lanczos\)"),
]


def test_empty_batch_and_uint8():
    out = F.interpolate(ember.zeros(0, 2, 9, 9), size=4, mode="bicubic", antialias=True)
    assert tuple(out.shape) == (0, 2, 4, 4)
    with pytest.raises(NotImplementedError, match="antialias=True on uint8 input is not implemented in ember"):
        F.interpolate(ember.zeros(1, 2, 9, 9, dtype=ember.uint8), size=4, mode="bilinear", antialias=True)


@pytest.mark.parametrize("case", range(len(ERRORS)))
def test_errors_match_pytorch(case):
    fn, cls, message = ERRORS[case]
    a = _images((1, 2, 3, 4), np.float32)
    with pytest.raises(cls, match=message):
        fn(F, ember.tensor(a))
    if torch is not None:
        with pytest.raises(cls, match=message):
            fn(TF, torch.tensor(a))
