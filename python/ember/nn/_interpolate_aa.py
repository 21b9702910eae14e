"""interpolate(..., antialias=True) for 4-D input, as PyTorch's _upsample_{bilinear,bicubic,lanczos}2d_aa.

Antialiased resampling is separable: out = Wh @ x @ Ww^T per image and channel, with Wh (out_h x in_h) and
Ww (out_w x in_w) PyTorch's filter weights (Pillow's). Built in float64 with NumPy, applied with matmul, so
autograd (to any order) and every device come from matmul."""
import numpy as np

import ember

# filter half-width in input pixels at scale 1 (PyTorch's interp_size / 2)
_SUPPORT = {"bilinear": 1.0, "bicubic": 2.0, "lanczos": 3.0}


def _triangle(x):
    return np.maximum(1.0 - np.abs(x), 0.0)


def _cubic(x):
    # Keys' cubic with a = -0.5 (Pillow's; plain bicubic uses -0.75)
    a = -0.5
    x = np.abs(x)
    near = ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0
    far = (((x - 5.0) * x + 8.0) * x - 4.0) * a
    return np.where(x < 1.0, near, np.where(x < 2.0, far, 0.0))


def _lanczos3(x):
    return np.where(np.abs(x) < 3.0, np.sinc(x) * np.sinc(x / 3.0), 0.0)


_FILTERS = {"bilinear": _triangle, "bicubic": _cubic, "lanczos": _lanczos3}


def _source_scale(in_size, out_size, align_corners, scale_factor):
    """PyTorch's area_pixel_compute_scale: input pixels per output pixel."""
    if align_corners:
        return (in_size - 1) / (out_size - 1) if out_size > 1 else 0.0
    if scale_factor is not None and scale_factor > 0:
        return 1.0 / scale_factor
    return in_size / out_size


def aa_weights(in_size, out_size, mode, align_corners=False, scale_factor=None):
    """The (out_size, in_size) float64 matrix of PyTorch's antialiased resampling along one dim: output i is
    centred at scale * (i + 0.5); taps within the support (widened by the scale when downsampling) are weighted
    by the filter and normalised to sum 1."""
    scale = _source_scale(in_size, out_size, align_corners, scale_factor)
    support = _SUPPORT[mode] * scale if scale >= 1.0 else _SUPPORT[mode]
    invscale = 1.0 / scale if scale >= 1.0 else 1.0
    weights = np.zeros((out_size, in_size))
    for i in range(out_size):
        center = scale * (i + 0.5)
        xmin = max(int(center - support + 0.5), 0)   # int() truncates, as PyTorch's int64_t cast
        xmax = min(int(center + support + 0.5), in_size)
        taps = _FILTERS[mode]((np.arange(xmin, xmax) - center + 0.5) * invscale)
        total = taps.sum()
        weights[i, xmin:xmax] = taps / total if total != 0.0 else taps
    return weights


def interpolate_aa(input, output_size, mode, align_corners, scales):
    """input resampled to output_size (H, W) with antialiasing; scales are the scale factors or None."""
    in_h, in_w = input.shape[-2], input.shape[-1]
    out_h, out_w = output_size
    if min(in_h, in_w, out_h, out_w) <= 0:
        raise RuntimeError(f"Input and output sizes should be greater than 0, but got input (H: {in_h}, W: {in_w}) "
                           f"output (H: {out_h}, W: {out_w})")
    if not input.dtype.is_floating_point or input.element_size() < 4:
        # PyTorch's CPU kernels take float32/float64 and uint8 (fixed-point, rounded between the passes)
        if input.dtype == ember.uint8:
            raise NotImplementedError("interpolate: antialias=True on uint8 input is not implemented in ember yet; "
                                      "convert the image to float32 first")
        name = {"uint8": "Byte", "int8": "Char", "int16": "Short", "int32": "Int", "int64": "Long", "bool": "Bool",
                "float16": "Half", "bfloat16": "BFloat16"}.get(str(input.dtype).split(".")[-1], str(input.dtype))
        raise NotImplementedError(f'"compute_index_ranges_weights" not implemented for \'{name}\'')
    scale_h, scale_w = tuple(scales) if scales else (None, None)
    rows = aa_weights(in_h, out_h, mode, align_corners, scale_h)
    cols = aa_weights(in_w, out_w, mode, align_corners, scale_w).T
    rows = ember.tensor(rows, dtype=input.dtype, device=input.device)
    cols = ember.tensor(np.ascontiguousarray(cols), dtype=input.dtype, device=input.device)
    return ember.matmul(ember.matmul(rows, input), cols)
