"""quantile and nanquantile, as ATen composes them: sort, rank q within each sorted row, and
interpolate between the two neighbouring values (gather + lerp, so autograd flows to them)."""
from . import _C
from ._autocast_policy import autocast_policy

_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _check(input, q, interpolation, name):
    if input.numel() == 0:
        raise RuntimeError(f"{name}() input tensor must be non-empty")
    if input.dtype not in (_C.float32, _C.float64):
        raise RuntimeError(f"{name}() input tensor must be either float or double dtype")
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(f"{name}() interpolation must be one of linear, lower, higher, midpoint or nearest, but "
                           f"got {interpolation}")
    if isinstance(q, _C.TensorBase):
        if q.dim() > 1:
            raise RuntimeError(f"{name}() q must be a scalar or 1D tensor")
        if q.dtype != input.dtype:
            raise RuntimeError(f"{name}() q tensor must be same dtype as the input tensor")
        if not ((q >= 0) & (q <= 1)).all().item():
            raise RuntimeError(f"{name}() q values must be in the range [0, 1]")
        return q
    if not 0 <= q <= 1:
        raise RuntimeError(f"{name}() q must be in the range [0, 1] but got {q}")
    return _C.full((), q, dtype=input.dtype, device=input.device)


def _quantile(input, q, dim, keepdim, interpolation, ignore_nan, name):
    q = _check(input, q, interpolation, name)
    if dim is None:
        rows = input.reshape(-1)
        out_shape = [1] * input.dim() if keepdim else []
    else:
        dim = dim % max(input.dim(), 1)
        rows = input.unsqueeze(0) if input.dim() == 0 else input.movedim(dim, -1)
        out_shape = list(input.shape)
        if keepdim:
            out_shape[dim] = 1
        else:
            del out_shape[dim]
    ordered = rows.sort(-1).values  # NaN last
    last = ordered.shape[-1] - 1
    qs = q.reshape(-1)
    batch = list(ordered.shape[:-1])
    ranks = qs.reshape([-1] + [1] * len(batch)).expand([qs.numel()] + batch)  # (Q, *batch)
    nan_rows = ordered.isnan().any(-1)
    if ignore_nan:
        valid = ordered.isnan().logical_not().sum(-1).to(input.dtype) - 1
        ranks = (ranks * valid).clamp(min=0)
    else:
        ranks = _C.where(nan_rows, _C.full((), float(last), dtype=input.dtype, device=input.device), ranks * last)
    if interpolation == "lower":
        ranks = ranks.floor()
    elif interpolation == "higher":
        ranks = ranks.ceil()
    elif interpolation == "nearest":
        ranks = ranks.round()
    below = ranks.floor().to(_C.int64)
    above = ranks.ceil().to(_C.int64)
    expanded = ordered.unsqueeze(0).expand([qs.numel()] + list(ordered.shape))
    lo = expanded.gather(-1, below.unsqueeze(-1)).squeeze(-1)
    hi = expanded.gather(-1, above.unsqueeze(-1)).squeeze(-1)
    weights = ranks - below.to(input.dtype)
    if interpolation == "midpoint":
        weights = _C.where(above > below, _C.full((), 0.5, dtype=input.dtype, device=input.device),
                           _C.zeros((), dtype=input.dtype, device=input.device))
    result = _C.lerp(lo, hi, weights)
    if ignore_nan:  # an all-NaN row gives NaN
        all_nan = ordered.isnan().all(-1)
        result = _C.where(all_nan, _C.full((), float("nan"), dtype=input.dtype, device=input.device), result)
    result = result.reshape([qs.numel()] + out_shape)
    return result if q.dim() == 1 else result.squeeze(0)


@autocast_policy(cpu="fp32")  # PyTorch's CPU autocast fp32 list
def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    """The q-th quantiles of input (over all elements, or along dim); NaN if a row holds NaN."""
    result = _quantile(input, q, dim, keepdim, interpolation, False, "quantile")
    return result if out is None else out.copy_(result)


@autocast_policy(cpu="fp32")
def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    """quantile ignoring NaN (NaN only for rows of NaN only)."""
    result = _quantile(input, q, dim, keepdim, interpolation, True, "nanquantile")
    return result if out is None else out.copy_(result)
