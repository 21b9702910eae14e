"""NumPy reference helpers that ops.yaml `ref:` expressions may call.

Each mirrors PyTorch's semantics where NumPy's differ (0-d inputs, keepdim for a
flattened argmax, squeeze of a non-1 dim, chunk sizes, ...).
"""
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


def np_glu(a, dim=-1):
    a = np.asarray(a)
    first, second = np.split(a, 2, axis=dim)
    return first / (1 + np.exp(-second))


HELPERS = {
    "np": np,
    "np_argmax": np_argmax, "np_argmin": np_argmin, "np_squeeze": np_squeeze,
    "np_expand_shape": np_expand_shape, "np_flatten": np_flatten, "np_slice": np_slice,
    "np_split": np_split, "np_chunk": np_chunk, "np_unbind": np_unbind,
    "np_softmax": np_softmax, "np_log_softmax": np_log_softmax,
    "np_trunc_divide": np_trunc_divide, "np_vector_norm": np_vector_norm,
    "np_erf": np_erf, "np_erfc": np_erfc, "np_erfinv": np_erfinv, "np_gelu": np_gelu, "np_glu": np_glu,
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
