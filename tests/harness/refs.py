"""NumPy reference helpers that ops.yaml `ref:` expressions may call.

Each mirrors PyTorch's semantics where NumPy's differ (0-d inputs, keepdim for a
flattened argmax, squeeze of a non-1 dim, chunk sizes, ...).
"""
import itertools
import math
import warnings

import numpy as np


def _axis(dim, ndim):
    return dim + max(ndim, 1) if dim < 0 else dim


def _arg_extreme(fn, a, dim, keepdim):
    a = np.asarray(a)
    if dim is None:
        idx = np.asarray(fn(a.reshape(-1)), dtype=np.int64)
        return idx.reshape((1,) * a.ndim) if keepdim else idx
    if a.ndim == 0:                      # PyTorch treats a 0-d tensor as having one dim of size 1
        return np.zeros((), dtype=np.int64)
    return np.asarray(fn(a, axis=_axis(dim, a.ndim), keepdims=keepdim), dtype=np.int64)


def np_argmax(a, dim=None, keepdim=False):
    """torch.argmax: the first index of the maximum; over the flattened input when dim is None."""
    return _arg_extreme(np.argmax, a, dim, keepdim)


def np_argmin(a, dim=None, keepdim=False):
    return _arg_extreme(np.argmin, a, dim, keepdim)


def np_squeeze(a, *dims):
    """torch.squeeze: with dims, only those of size one go; others are left alone."""
    a = np.asarray(a)
    if not dims:
        return np.squeeze(a)
    flat = []
    for d in dims:
        flat += list(d) if isinstance(d, (list, tuple)) else [d]
    axes = tuple(sorted({_axis(d, a.ndim) for d in flat if a.ndim and a.shape[_axis(d, a.ndim)] == 1}))
    return np.squeeze(a, axis=axes) if axes else a


def np_expand_shape(a, size):
    """The shape Tensor.expand(size) gives: -1 keeps the input's size, aligned from the right."""
    a = np.asarray(a)
    size = list(size)
    lead = len(size) - a.ndim
    return tuple(a.shape[i - lead] if s == -1 else s for i, s in enumerate(size))


def np_flatten(a, start=0, end=-1):
    a = np.asarray(a)
    if a.ndim == 0:
        return a.reshape(1)
    s, e = _axis(start, a.ndim), _axis(end, a.ndim)
    return a.reshape(a.shape[:s] + (int(np.prod(a.shape[s:e + 1])),) + a.shape[e + 1:])


def np_slice(a, dim=0, start=None, end=None, step=1):
    a = np.asarray(a)
    index = [slice(None)] * a.ndim
    index[_axis(dim, a.ndim)] = slice(start, end, step)
    return a[tuple(index)]


def np_unfold(a, dim, size, step):
    """Tensor.unfold: windows of `size` along `dim`, `step` apart, as a last axis."""
    a = np.asarray(a)
    if a.ndim == 0:
        return a.reshape(size)
    d = _axis(dim, a.ndim)
    windows = np.lib.stride_tricks.sliding_window_view(a, size, axis=d)
    index = [slice(None)] * windows.ndim
    index[d] = slice(None, None, step)
    return windows[tuple(index)].copy()


def np_as_strided(a, size, stride, storage_offset=0):
    """as_strided over a fresh contiguous tensor: its storage is `a` flattened."""
    flat = np.ascontiguousarray(a).reshape(-1)
    return np.lib.stride_tricks.as_strided(flat[storage_offset:], tuple(size), [s * flat.itemsize for s in stride]).copy()


def np_sum_to_size(a, size):
    """Tensor.sum_to_size: leading dims summed away, size-1 dims of `size` summed with keepdims."""
    a = np.asarray(a)
    lead = a.ndim - len(size)
    a = a.sum(axis=tuple(range(lead))) if lead else a
    ones = tuple(d for d, n in enumerate(size) if n == 1 and a.shape[d] != 1)
    return a.sum(axis=ones, keepdims=True) if ones else a


def np_split(a, size_or_sizes, dim=0):
    """torch.split: pieces of `size` (the last may be shorter), or of the given sizes."""
    a = np.asarray(a)
    dim = _axis(dim, a.ndim)
    n = a.shape[dim]
    if isinstance(size_or_sizes, (list, tuple)):
        sizes = list(size_or_sizes)
    else:
        sizes = [size_or_sizes] * (n // size_or_sizes) + ([n % size_or_sizes] if n % size_or_sizes else [])
        sizes = sizes or [0]
    out, start = [], 0
    for s in sizes:
        out.append(np_slice(a, dim, start, start + s))
        start += s
    return tuple(out)


def np_chunk(a, chunks, dim=0):
    """torch.chunk: pieces of ceil(n / chunks); there may be fewer than `chunks`."""
    a = np.asarray(a)
    n = a.shape[_axis(dim, a.ndim)]
    return np_split(a, max(1, math.ceil(n / chunks)), dim)


def np_unbind(a, dim=0):
    a = np.asarray(a)
    dim = _axis(dim, a.ndim)
    return tuple(np.take(a, i, axis=dim) for i in range(a.shape[dim]))


def np_softmax(a, dim):
    a = np.asarray(a)
    if a.ndim == 0:
        return np.ones_like(a)
    if a.size == 0:
        return a.copy()
    m = np.max(a, axis=dim, keepdims=True)
    e = np.exp(a - m)
    return e / np.sum(e, axis=dim, keepdims=True)


def np_log_softmax(a, dim):
    a = np.asarray(a)
    if a.ndim == 0:
        return np.zeros_like(a)
    if a.size == 0:
        return a.copy()
    m = np.max(a, axis=dim, keepdims=True)
    s = a - m
    return s - np.log(np.sum(np.exp(s), axis=dim, keepdims=True))


def np_vector_norm(a, ord=2, dim=None, keepdim=False):
    """torch.linalg.vector_norm in float64: dim None or () is every dim; max/min |a| for +-inf, the
    count of non-zeros for 0; like max, no identity for inf or a negative ord over nothing (ValueError)."""
    a = np.asarray(a)
    x = np.abs(a.astype(np.float64))
    axis = None if dim is None or dim == () or a.ndim == 0 else dim
    if ord < 0 and np.sum(np.ones_like(x), axis=axis).min(initial=1) == 0:
        raise ValueError("a negative-order norm over no elements has no identity")
    with np.errstate(divide="ignore"):
        if ord == math.inf:
            r = np.max(x, axis=axis, keepdims=keepdim)
        elif ord == -math.inf:
            r = np.min(x, axis=axis, keepdims=keepdim)
        elif ord == 0:
            r = np.sum(x != 0, axis=axis, keepdims=keepdim).astype(np.float64)
        else:
            r = np.sum(x ** ord, axis=axis, keepdims=keepdim) ** (1.0 / ord)
    if keepdim and a.ndim == 0:
        r = np.reshape(r, ())
    return np.asarray(r).astype(a.dtype)


def np_renorm(a, p, dim, maxnorm):
    """torch.renorm: each slice along dim scaled by maxnorm / (norm + 1e-7) where its p-norm exceeds maxnorm."""
    others = tuple(d for d in range(a.ndim) if d != dim % a.ndim)
    norm = np_vector_norm(a.astype(np.float64), p, others, True)
    return (a * np.where(norm > maxnorm, maxnorm / (norm + 1e-7), 1.0)).astype(a.dtype)


def np_trunc_divide(a, b):
    """Division rounded towards zero; integers stay integers."""
    a, b = np.asarray(a), np.asarray(b)
    if np.issubdtype(np.result_type(a, b), np.integer):
        q = np.floor_divide(a, b)
        fix = (np.remainder(a, b) != 0) & ((a < 0) != (b < 0))
        return (q + fix).astype(q.dtype)
    return np.trunc(a / b)


_erf = np.vectorize(math.erf, otypes=[np.float64])
_erfc = np.vectorize(math.erfc, otypes=[np.float64])


def np_erf(a):
    return _erf(np.asarray(a, dtype=np.float64))


def np_erfc(a):
    return _erfc(np.asarray(a, dtype=np.float64))


def np_erfinv(a):
    """Bisection on math.erf: slow but independent of the library's Newton iteration."""
    y = np.asarray(a, dtype=np.float64)
    lo, hi = np.full(y.shape, -6.0), np.full(y.shape, 6.0)
    for _ in range(80):
        mid = (lo + hi) / 2
        below = _erf(mid) < y
        lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
    x = np.where(y == 0, y, (lo + hi) / 2)  # bisection from +-6 stops ~1e-23 short of 0
    x = np.where(y == 1, np.inf, np.where(y == -1, -np.inf, x))
    return np.where(np.abs(y) > 1, np.nan, x)


def np_gelu(a, approximate="none"):
    a = np.asarray(a, dtype=np.float64)
    # Without 1 + tanh / 1 + erf, which cancel for negative a: 0.5 (1 + tanh u) = 1 / (1 + exp(-2u)).
    if approximate == "tanh":
        return a / (1 + np.exp(-2 * math.sqrt(2 / math.pi) * (a + 0.044715 * a ** 3)))
    return a * 0.5 * np_erfc(-a / math.sqrt(2))


def np_gelu_backward(grad, a, approximate="none"):
    """gelu's derivative times grad: Phi(a) + a phi(a), Phi written with erfc (no cancellation)."""
    a = np.asarray(a, dtype=np.float64)
    return grad * (0.5 * np_erfc(-a / math.sqrt(2)) + a * np.exp(-0.5 * a * a) / math.sqrt(2 * math.pi))


def np_glu(a, dim=-1):
    a = np.asarray(a)
    first, second = np.split(a, 2, axis=dim)
    return first / (1 + np.exp(-second))


HELPERS = {
    "np": np,
    "np_argmax": np_argmax, "np_argmin": np_argmin, "np_squeeze": np_squeeze,
    "np_expand_shape": np_expand_shape, "np_flatten": np_flatten, "np_slice": np_slice, "np_unfold": np_unfold,
    "np_as_strided": np_as_strided, "np_sum_to_size": np_sum_to_size,
    "np_split": np_split, "np_chunk": np_chunk, "np_unbind": np_unbind,
    "np_softmax": np_softmax, "np_log_softmax": np_log_softmax,
    "np_trunc_divide": np_trunc_divide, "np_vector_norm": np_vector_norm, "np_renorm": np_renorm,
    "np_erf": np_erf, "np_erfc": np_erfc, "np_erfinv": np_erfinv, "np_gelu": np_gelu, "np_gelu_backward": np_gelu_backward, "np_glu": np_glu,
}


def eval_ref(expr, names):
    """Evaluates a `ref:` expression; NumPy's warnings (overflow in 0-d uint8, nan means) are noise here."""
    scope = dict(HELPERS)
    scope.update(names)
    scope["__builtins__"] = __builtins__
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return eval(expr, scope)



# ---------------------------------------------------------------- scans (issue 11)
def np_diag_embed(a, offset=0, dim1=-2, dim2=-1):
    """torch.diag_embed: the last dim of `a` on the (offset, dim1, dim2) diagonals of zeros."""
    a = np.asarray(a).reshape(np.shape(a) or (1,))
    n = a.shape[-1] + abs(offset)
    ndim = a.ndim + 1
    d1, d2 = dim1 % ndim, dim2 % ndim
    out = np.zeros(a.shape[:-1] + (n, n), dtype=a.dtype)
    i = np.arange(a.shape[-1])
    rows, cols = (i, i + offset) if offset >= 0 else (i - offset, i)
    out[..., rows, cols] = a
    # out has the diagonal plane last; move its two dims to (d1, d2).
    lo, hi = sorted((d1, d2))
    out = np.moveaxis(out, (-2, -1), (lo, hi))
    return out if d1 < d2 else np.swapaxes(out, lo, hi)


def np_unflatten_shape(a, dim, sizes):
    a = np.asarray(a)
    dim %= max(a.ndim, 1)
    sizes = list(sizes)
    if -1 in sizes:
        known = int(np.prod([s for s in sizes if s != -1]))
        sizes[sizes.index(-1)] = a.shape[dim] // known
    return a.shape[:dim] + tuple(sizes) + a.shape[dim + 1:]


HELPERS.update({"np_diag_embed": np_diag_embed, "np_unflatten_shape": np_unflatten_shape})


def np_cosine_similarity(a, b, dim=1, eps=1e-8):
    """torch.cosine_similarity: each side divided by max(its 2-norm, eps), then summed products."""
    a, b = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(b, np.float64))
    unit = [x / np.maximum(np.sqrt(np.sum(x * x, axis=dim, keepdims=True)), eps) for x in (a, b)]
    return np.sum(unit[0] * unit[1], axis=dim)


HELPERS.update({"np_cosine_similarity": np_cosine_similarity})
# ---------------------------------------------------------------- sort (issue 11)
def _order(a, dim, descending):
    """The stable order along `dim` (descending keeps equal elements in input order, as torch)."""
    a = np.asarray(a)
    key = -a.astype(np.float64) if descending else a
    return np.argsort(key, axis=dim, kind="stable")


def np_sort(a, dim=-1, descending=False):
    i = _order(a, dim, descending)
    return np.take_along_axis(np.asarray(a), i, axis=dim), i


def np_topk(a, k, dim=-1, largest=True):
    i = np.take(_order(a, dim, largest), np.arange(k), axis=dim)
    return np.take_along_axis(np.asarray(a), i, axis=dim), i


def np_kthvalue(a, k, dim=-1, keepdim=False):
    """The k-th smallest along `dim` (1-based) and its index; `a` has no ties."""
    i = np.take(_order(a, dim, False), [k - 1], axis=dim)
    v = np.take_along_axis(np.asarray(a), i, axis=dim)
    return (v, i) if keepdim else (v.squeeze(dim), i.squeeze(dim))


def np_lower_median(a, dim, keepdim=False):
    return np_kthvalue(a, (np.shape(a)[dim] + 1) // 2, dim, keepdim)


def np_mode(a, dim=-1, keepdim=False):
    """torch.mode: the most frequent value along `dim` (the smallest of equally frequent ones)
    and the index of its last occurrence."""
    a = np.asarray(a)
    moved = np.moveaxis(a.reshape(a.shape or (1,)), dim, -1)
    lines = moved.reshape(-1, moved.shape[-1])
    values, indices = [], []
    for line in lines:
        uniq, counts = np.unique(line, return_counts=True)
        v = uniq[np.argmax(counts)]
        values.append(v)
        indices.append(np.nonzero(line == v)[0][-1])
    shape = moved.shape[:-1]
    v = np.array(values, dtype=a.dtype).reshape(shape)
    i = np.array(indices, dtype=np.int64).reshape(shape)
    if keepdim and a.ndim:
        v, i = np.expand_dims(v, dim), np.expand_dims(i, dim)
    return v, i


HELPERS.update({"np_sort": np_sort, "np_topk": np_topk, "np_kthvalue": np_kthvalue,
                "np_lower_median": np_lower_median, "np_mode": np_mode})


def np_histc(a, bins=100, min=0, max=0):
    """torch.histc: equal-width bins over [min, max] (the data's range when equal), outside values dropped."""
    a = np.asarray(a).reshape(-1)
    dtype = a.dtype
    lo, hi = float(min), float(max)
    if lo == hi and a.size:
        lo, hi = float(a.min()), float(a.max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    lo, hi = dtype.type(lo), dtype.type(hi)          # positions in the input's precision, as torch
    inside = a[(a >= lo) & (a <= hi)]
    pos = np.minimum(((inside - lo) * dtype.type(bins) / (hi - lo)).astype(np.int64), bins - 1)
    return np.bincount(pos, minlength=bins).astype(dtype)


HELPERS.update({"np_histc": np_histc})
# ---------------------------------------------------------------- pool (issue 11)
def _pair(v, n=2):
    v = [v] if isinstance(v, int) else list(v)
    return v * n if len(v) == 1 else v


def np_pooled_size(size, k, s, p, d, ceil_mode):
    """PyTorch's pooling_output_shape."""
    span = size + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)
    out = span // s + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1
    return out


def np_max_pool2d_with_indices(a, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """Max over dilated windows of the last two dims, and the flat (h * W + w) index of each maximum."""
    a = np.asarray(a)
    (kh, kw), (ph, pw), (dh, dw) = _pair(kernel_size), _pair(padding), _pair(dilation)
    sh, sw = _pair(stride) if (isinstance(stride, int) or len(stride)) else (kh, kw)
    H, W = a.shape[-2:]
    oh_, ow_ = np_pooled_size(H, kh, sh, ph, dh, ceil_mode), np_pooled_size(W, kw, sw, pw, dw, ceil_mode)
    out = np.empty(a.shape[:-2] + (oh_, ow_), a.dtype)
    idx = np.empty(a.shape[:-2] + (oh_, ow_), np.int64)
    for oh in range(oh_):
        rows = [h for h in range(oh * sh - ph, oh * sh - ph + (kh - 1) * dh + 1, dh) if 0 <= h < H]
        for ow in range(ow_):
            cols = [w for w in range(ow * sw - pw, ow * sw - pw + (kw - 1) * dw + 1, dw) if 0 <= w < W]
            flat = np.array([h * W + w for h in rows for w in cols])
            win = a[..., rows, :][..., cols].reshape(a.shape[:-2] + (len(rows) * len(cols),))
            # NaN wins (the last one, as PyTorch's scan); else the first maximum
            nan = np.isnan(win) if win.dtype.kind == "f" else np.zeros(win.shape, bool)
            last_nan = win.shape[-1] - 1 - np.argmax(nan[..., ::-1], axis=-1)
            pick = np.where(nan.any(-1), last_nan, np.argmax(win, axis=-1))
            out[..., oh, ow] = np.take_along_axis(win, pick[..., None], -1)[..., 0]
            idx[..., oh, ow] = flat[pick]
    return out, idx


def np_max_pool2d(a, *args):
    return np_max_pool2d_with_indices(a, *args)[0]


def np_max_pool1d(a, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    one = lambda v: [v] if isinstance(v, int) else list(v)
    stride = one(stride)
    out = np_max_pool2d(np.asarray(a)[..., None, :], [1] + one(kernel_size), [1] + stride if stride else [],
                        [0] + one(padding), [1] + one(dilation), ceil_mode)
    return out[..., 0, :]


def np_avg_pool2d(a, kernel_size, stride=(), padding=0, ceil_mode=False, count_include_pad=True,
                  divisor_override=None):
    """PyTorch's avg_pool2d: windows clipped to the padded input, divisor by the options."""
    a = np.asarray(a)
    (kh, kw), (ph, pw) = _pair(kernel_size), _pair(padding)
    sh, sw = _pair(stride) if (isinstance(stride, int) or len(stride)) else (kh, kw)
    H, W = a.shape[-2:]
    oh_, ow_ = np_pooled_size(H, kh, sh, ph, 1, ceil_mode), np_pooled_size(W, kw, sw, pw, 1, ceil_mode)
    out = np.empty(a.shape[:-2] + (oh_, ow_), a.dtype)
    for oh in range(oh_):
        h0, h1 = oh * sh - ph, min(oh * sh - ph + kh, H + ph)
        for ow in range(ow_):
            w0, w1 = ow * sw - pw, min(ow * sw - pw + kw, W + pw)
            win = a[..., max(h0, 0):min(h1, H), max(w0, 0):min(w1, W)]
            n = (divisor_override if divisor_override else
                 (h1 - h0) * (w1 - w0) if count_include_pad else win.shape[-1] * win.shape[-2])
            total = win.sum(axis=(-2, -1))
            # integers divide as PyTorch's C++ (truncating)
            out[..., oh, ow] = np.trunc(total / n) if a.dtype.kind in "iu" else total / n
    return out


def np_avg_pool1d(a, kernel_size, stride=(), padding=0, ceil_mode=False, count_include_pad=True):
    one = lambda v: [v] if isinstance(v, int) else list(v)
    stride = one(stride)
    out = np_avg_pool2d(np.asarray(a)[..., None, :], [1] + one(kernel_size), [1] + stride if stride else [],
                        [0] + one(padding), ceil_mode, count_include_pad)
    return out[..., 0, :]


def _adaptive_windows(size, out):
    return [(i * size // out, -(-(i + 1) * size // out)) for i in range(out)]


def np_adaptive_avg_pool2d(a, output_size):
    a = np.asarray(a)
    oh_, ow_ = _pair(output_size)
    H, W = a.shape[-2:]
    out = np.empty(a.shape[:-2] + (oh_, ow_), a.dtype)
    for oh, (h0, h1) in enumerate(_adaptive_windows(H, oh_)):
        for ow, (w0, w1) in enumerate(_adaptive_windows(W, ow_)):
            out[..., oh, ow] = a[..., h0:h1, w0:w1].mean(axis=(-2, -1))
    return out


def np_adaptive_avg_pool1d(a, output_size):
    return np_adaptive_avg_pool2d(np.asarray(a)[..., None, :], [1] + _pair(output_size, 1))[..., 0, :]


def np_adaptive_max_pool2d(a, output_size):
    """Values and flat indices of the adaptive windows' maxima (first maximum; NaN wins)."""
    a = np.asarray(a)
    oh_, ow_ = _pair(output_size)
    H, W = a.shape[-2:]
    out = np.empty(a.shape[:-2] + (oh_, ow_), a.dtype)
    idx = np.empty(a.shape[:-2] + (oh_, ow_), np.int64)
    for oh, (h0, h1) in enumerate(_adaptive_windows(H, oh_)):
        for ow, (w0, w1) in enumerate(_adaptive_windows(W, ow_)):
            win = a[..., h0:h1, w0:w1].reshape(a.shape[:-2] + ((h1 - h0) * (w1 - w0),))
            pick = np.argmax(win, axis=-1)
            out[..., oh, ow] = np.take_along_axis(win, pick[..., None], -1)[..., 0]
            idx[..., oh, ow] = (h0 + pick // (w1 - w0)) * W + w0 + pick % (w1 - w0)
    return out, idx


HELPERS.update({"np_max_pool2d": np_max_pool2d, "np_max_pool1d": np_max_pool1d, "np_avg_pool2d": np_avg_pool2d,
                "np_avg_pool1d": np_avg_pool1d, "np_adaptive_avg_pool2d": np_adaptive_avg_pool2d,
                "np_adaptive_avg_pool1d": np_adaptive_avg_pool1d})


def _pad_source(n, left, right, mode):
    """The input position read by each output position of one padded dim (-1: the fill value)."""
    p = np.arange(-left, n + right)
    if mode == "constant":
        return np.where((p >= 0) & (p < n), p, -1)
    if mode == "reflect":
        p = np.abs(p)
        return np.where(p >= n, 2 * (n - 1) - p, p)
    if mode == "replicate":
        return np.clip(p, 0, n - 1)
    # circular: wraps around what is left after cropping, as PyTorch's
    crop_left, kept = max(-left, 0), n - max(-left, 0) - max(-right, 0)
    return crop_left + (np.arange(kept + max(left, 0) + max(right, 0)) - max(left, 0)) % kept


def np_pad(a, pad, mode="constant", value=None):
    """F.pad by an index map per dim: negative amounts crop, as PyTorch's."""
    a = np.asarray(a)
    for i in range(len(pad) // 2):
        dim = a.ndim - 1 - i
        src = _pad_source(a.shape[dim], pad[2 * i], pad[2 * i + 1], mode)
        taken = np.take(a, np.maximum(src, 0), axis=dim)
        shape = [1] * a.ndim
        shape[dim] = len(src)
        fill = np.array(value or 0).astype(a.dtype)
        a = np.where(src.reshape(shape) >= 0, taken, fill)
    return a


def np_pixel_shuffle(a, r):
    a = np.asarray(a)
    *batch, c, h, w = a.shape
    a = a.reshape(*batch, c // (r * r), r, r, h, w)
    n = len(batch)
    a = a.transpose(*range(n), n, n + 3, n + 1, n + 4, n + 2)
    return a.reshape(*batch, c // (r * r), h * r, w * r)


def np_pixel_unshuffle(a, r):
    a = np.asarray(a)
    *batch, c, h, w = a.shape
    a = a.reshape(*batch, c, h // r, r, w // r, r)
    n = len(batch)
    a = a.transpose(*range(n), n, n + 2, n + 4, n + 1, n + 3)
    return a.reshape(*batch, c * r * r, h // r, w // r)


HELPERS.update({"np_pad": np_pad, "np_pixel_shuffle": np_pixel_shuffle, "np_pixel_unshuffle": np_pixel_unshuffle})


def _resample_scale(scale, n_in, n_out, dtype=np.float32):
    """PyTorch's compute_scales_value: 1 / scale when given, else in / out (in the kernel's float type)."""
    return dtype(1.0 / scale) if scale is not None and scale > 0 else dtype(n_in) / dtype(n_out)


def np_upsample_nearest(a, output_size, scales_h=None, scales_w=None, exact=False):
    a = np.asarray(a)
    scales = [scales_h, scales_w][-len(output_size):]
    for k, (n_out, scale) in enumerate(zip(output_size, scales)):
        dim = a.ndim - len(output_size) + k
        n_in = a.shape[dim]
        s = _resample_scale(scale, n_in, n_out)
        j = np.arange(n_out, dtype=np.float32)
        src = np.floor((j + np.float32(0.5)) * s if exact else j * s).astype(np.int64)
        if not exact and n_out in (n_in, 2 * n_in):  # PyTorch's nearest_idx shortcuts ignore the scale
            src = np.arange(n_out) // (n_out // n_in)
        a = np.take(a, np.minimum(src, n_in - 1), axis=dim)
    return a


def np_upsample_linear(a, output_size, align_corners, scales_h=None, scales_w=None):
    a = np.asarray(a)
    acc = np.float64 if a.dtype == np.float64 else np.float32
    scales = [scales_h, scales_w][-len(output_size):]
    for k, (n_out, scale) in reversed(list(enumerate(zip(output_size, scales)))):
        dim = a.ndim - len(output_size) + k
        n_in = a.shape[dim]
        j = np.arange(n_out, dtype=acc)
        if align_corners:
            s = acc(n_in - 1) / acc(n_out - 1) if n_out > 1 else acc(0)
            src = j * s
        else:
            src = np.maximum((j + acc(0.5)) * _resample_scale(scale, n_in, n_out, acc) - acc(0.5), 0)
        i0 = src.astype(np.int64)
        i1 = np.where(i0 < n_in - 1, i0 + 1, i0)
        w1 = np.clip(src - i0, 0, 1)
        shape = [1] * a.ndim
        shape[dim] = n_out
        a = np.take(a, i0, axis=dim) * (1 - w1).reshape(shape) + np.take(a, i1, axis=dim) * w1.reshape(shape)
    return a


def np_upsample(a, output_size, linear, exact=False, align_corners=False, scales_h=None, scales_w=None):
    if linear:
        return np_upsample_linear(a, output_size, align_corners, scales_h, scales_w)
    return np_upsample_nearest(a, output_size, scales_h, scales_w, exact)


def np_upsample3d(a, output_size, linear, exact=False, align_corners=False, scales_d=None, scales_h=None,
                  scales_w=None):
    """upsample_trilinear3d / upsample_nearest3d: each of the last three dims resampled by its own 1-D rule."""
    a = np_upsample(a, output_size[1:], linear, exact, align_corners, scales_h, scales_w)
    a = np_upsample(np.moveaxis(a, -3, -1), output_size[:1], linear, exact, align_corners, None, scales_d)
    return np.moveaxis(a, -1, -3)


HELPERS.update({"np_upsample": np_upsample, "np_upsample3d": np_upsample3d})


def np_upsample_bicubic(a, output_size, align_corners, scales_h=None, scales_w=None):
    """upsample_bicubic2d (padpool, issue 11): Keys' cubic (A = -0.75) over 4 clamped neighbours per dim."""
    a = np.asarray(a)
    acc = np.float64 if a.dtype == np.float64 else np.float32
    A = acc(-0.75)
    near = lambda x: ((A + 2) * x - (A + 3)) * x * x + 1
    far = lambda x: ((A * x - 5 * A) * x + 8 * A) * x - 4 * A
    for dim, n_out, scale in ((a.ndim - 1, output_size[1], scales_w), (a.ndim - 2, output_size[0], scales_h)):
        n_in = a.shape[dim]
        j = np.arange(n_out, dtype=acc)
        if align_corners:
            src = j * (acc(n_in - 1) / acc(n_out - 1) if n_out > 1 else acc(0))
        else:
            src = (j + acc(0.5)) * _resample_scale(scale, n_in, n_out, acc) - acc(0.5)
        at = np.minimum(np.floor(src).astype(np.int64), n_in - 1)
        t = np.clip(src - at, 0, 1)
        shape = [1] * a.ndim
        shape[dim] = n_out
        a = sum(np.take(a, np.clip(at - 1 + k, 0, n_in - 1), axis=dim) * w.reshape(shape)
                for k, w in enumerate((far(t + 1), near(t), near(1 - t), far(2 - t))))
    return a


HELPERS.update({"np_upsample_bicubic": np_upsample_bicubic})
def np_lerp(a, b, weight):
    """torch.lerp's two-sided form (exact at weight 0 and 1)."""
    a, b, w = np.asarray(a), np.asarray(b), np.asarray(weight)
    return np.where(np.abs(w) < 0.5, a + w * (b - a), b - (b - a) * (1 - w))


def np_xlogy(a, b):
    a, b = np.asarray(a), np.asarray(b)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(np.isnan(b), b, np.where(a == 0, 0, a * np.log(b)))


def np_logit(a, eps=None):
    a = np.asarray(a)
    if eps is not None:
        a = np.clip(a, eps, 1 - eps)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log(a / (1 - a))


_lgamma = np.vectorize(math.lgamma, otypes=[np.float64])


def np_lgamma(a):
    return _lgamma(np.asarray(a, dtype=np.float64))


def _compensated_sum(terms):
    """Neumaier's summation along axis 0: the rounding errors carried separately, so that
    digamma's cancellation near its root (x = 1.46) leaves the reference within 1e-16."""
    total = np.zeros(terms.shape[1:])
    carry = np.zeros(terms.shape[1:])
    for t in terms:
        s = total + t
        carry += np.where(np.abs(total) >= np.abs(t), (total - s) + t, (t - s) + total)
        total = s
    return total + carry


def _polygamma_sum(a, order):
    """digamma (order 0) or trigamma (order 1) of positive x: the recurrence up to 30, then the
    asymptotic series, independent of the library's cut-off at 10."""
    x = np.asarray(a, dtype=np.float64)
    steps = np.maximum(np.ceil(30 - x), 0)
    k = np.arange(int(steps.max(initial=0)) + 1).reshape((-1,) + (1,) * x.ndim)
    shifted = x + k
    terms = np.where(k < steps, -1 / shifted if order == 0 else 1 / (shifted * shifted), 0.0)
    x = x + steps
    r = 1 / (x * x)
    if order == 0:
        tail = [np.log(x), -0.5 / x, -r * (1 / 12 - r * (1 / 120 - r * (1 / 252 - r * (1 / 240 - r / 132))))]
    else:
        tail = [1 / x, 0.5 * r, r / x * (1 / 6 - r * (1 / 30 - r * (1 / 42 - r * (1 / 30 - r * 5 / 66))))]
    return _compensated_sum(np.concatenate([terms, np.stack(tail)]))


def np_digamma(a):
    return _polygamma_sum(a, 0)


def np_trigamma(a):
    return _polygamma_sum(a, 1)


def np_i1(a):
    """The modified Bessel function I_1 by its power series (sum_k (x/2)^(2k+1) / (k! (k+1)!)), in float64:
    positive terms, so exact to rounding for the harness's |x| <= 4."""
    x = np.asarray(a, dtype=np.float64)
    term = x / 2
    total = term.copy()
    for k in range(1, 40):
        term = term * (x / 2) ** 2 / (k * (k + 1))
        total = total + term
    return total


HELPERS.update({"np_i1": np_i1})
HELPERS.update({"np_lerp": np_lerp, "np_xlogy": np_xlogy, "np_logit": np_logit, "np_lgamma": np_lgamma,
                "np_digamma": np_digamma, "np_trigamma": np_trigamma})


def np_logsumexp(a, dim, keepdim=False):
    """torch.logsumexp: shifted by the finite maximum; empty reductions give -inf."""
    a = np.asarray(a)
    if a.size == 0:
        return np.log(np.sum(np.exp(a), axis=dim, keepdims=keepdim))
    with np.errstate(all="ignore"):
        m = np.amax(a, axis=dim, keepdims=True)
        m = np.where(np.isinf(m), 0, m)
        r = np.log(np.sum(np.exp(a - m), axis=dim, keepdims=True)) + m
    return r if keepdim else np.squeeze(r, axis=dim)


HELPERS["np_logsumexp"] = np_logsumexp


# losses-regression (issue 11)
def np_loss_reduction(loss, reduction):
    """ATen's apply_loss_reduction: 0 none, 1 mean (NaN for an empty loss), 2 sum."""
    with np.errstate(all="ignore"):
        return [loss, np.mean(loss) if loss.size else np.float64("nan"), np.sum(loss)][reduction]


def np_huber(d, delta):
    ad = np.abs(d)
    return np.where(ad < delta, 0.5 * d * d, delta * (ad - 0.5 * delta))


def np_poisson_nll(x, t, log_input, full, eps):
    loss = np.exp(x) - t * x if log_input else x - t * np.log(x + eps)
    if full:
        safe = np.where(t > 1, t, 1.0)
        loss = loss + np.where(t > 1, safe * np.log(safe) - safe + 0.5 * np.log(2 * np.pi * safe), 0.0)
    return loss


HELPERS.update({"np_loss_reduction": np_loss_reduction, "np_huber": np_huber, "np_poisson_nll": np_poisson_nll})


def np_combinations(a, r=2, with_replacement=False):
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    rows = list(pick(range(a.shape[0]), r))
    if r == 0:
        return a[:0]
    return a[np.array(rows, dtype=np.int64).reshape(len(rows), r)]


HELPERS["np_combinations"] = np_combinations
