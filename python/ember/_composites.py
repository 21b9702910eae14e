"""torch.* functions PyTorch composes from other ops (ATen's CompositeImplicitAutograd ones and
torch.functional's): inner, vdot, splits, diagflat, block_diag, broadcast_shapes, cov, corrcoef,
trapezoid, vander, unravel_index, isin, chain_matmul, ravel, addr, renorm. Made of ember ops,
so autograd records what they call."""
import warnings

from . import _C
from ._creation import result_type, zeros_like
from ._size import Size


def _as_tensor(value, like=None):
    if isinstance(value, _C.TensorBase):
        return value
    from ._creation import tensor
    return tensor(value, device=None if like is None else like.device)


def inner(input, other, *, out=None):
    """The sum of products over the last dim of both (a product when either is 0-d)."""
    if input.dim() == 0 or other.dim() == 0:
        return _C.mul(input, other) if out is None else _C.mul(input, other, out=out)
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but got shapes "
                           f"{list(input.shape)} and {list(other.shape)}")
    result = _C.tensordot(input, other, [input.dim() - 1], [other.dim() - 1])
    return result if out is None else out.copy_(result)


def vdot(input, other, *, out=None):
    """The dot product of two 1-D tensors (conjugating the first: the same for real ones)."""
    if input.dim() != 1 or other.dim() != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.dim()}D and {other.dim()}D tensors")
    return _C.dot(input, other) if out is None else _C.dot(input, other, out=out)


def _split_along(name, input, indices_or_sections, dim, min_dims):
    if input.dim() < min_dims:
        raise RuntimeError(f"torch.{name} requires a tensor with at least {min_dims} dimension, but got a tensor with "
                           f"{input.dim()} dimensions!")
    if isinstance(indices_or_sections, int):
        size = input.shape[dim]
        if indices_or_sections == 0 or size % indices_or_sections:
            raise RuntimeError(f"torch.{name} attempted to split along dimension {dim}, but the size of the dimension "
                               f"{size} is not divisible by the split_size {indices_or_sections}!")
    else:
        indices_or_sections = list(indices_or_sections)
    return _C.tensor_split(input, indices_or_sections, dim)


def hsplit(input, indices_or_sections):
    """Splits along dim 1 (dim 0 of a 1-D tensor), as NumPy's hsplit."""
    return _split_along("hsplit", input, indices_or_sections, 1 if input.dim() > 1 else 0, 1)


def vsplit(input, indices_or_sections):
    """Splits along dim 0 of a tensor of 2+ dims, as NumPy's vsplit."""
    return _split_along("vsplit", input, indices_or_sections, 0, 2)


def dsplit(input, indices_or_sections):
    """Splits along dim 2 of a tensor of 3+ dims, as NumPy's dsplit."""
    return _split_along("dsplit", input, indices_or_sections, 2, 3)


def column_stack(tensors, *, out=None):
    """hstack of the tensors, 0-d and 1-D ones made columns first."""
    columns = [t.reshape(t.numel(), 1) if t.dim() <= 1 else t for t in tensors]
    return _C.hstack(columns) if out is None else _C.hstack(columns, out=out)


def diagflat(input, offset=0):
    """The flattened input as the `offset` diagonal of a square matrix."""
    return _C.diag(input.reshape(-1), offset)


def block_diag(*tensors):
    """The tensors (0-d, 1-D as one row, or 2-D) as the blocks of a block-diagonal matrix."""
    blocks = []
    for i, t in enumerate(tensors):
        if t.dim() > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} has "
                               f"{t.dim()} dimensions")
        blocks.append(t.reshape((1,) * (2 - t.dim()) + tuple(t.shape)))
    if not blocks:
        return _C.empty(1, 0)
    dtype = blocks[0].dtype
    for b in blocks[1:]:
        dtype = _C.promote_types(dtype, b.dtype)
    width = sum(b.shape[1] for b in blocks)
    rows, left = [], 0
    for b in blocks:  # each block padded with zeros to the full width: a cat that autograd splits back
        r, c = b.shape
        pad = (_C.zeros(r, left, dtype=dtype, device=b.device), b.to(dtype),
               _C.zeros(r, width - left - c, dtype=dtype, device=b.device))
        rows.append(_C.cat(pad, 1))
        left += c
    return _C.cat(rows, 0)


def broadcast_shapes(*shapes):
    """The shape that tensors of the given shapes broadcast to (without making any tensor)."""
    sizes = [(s,) if isinstance(s, int) else tuple(s) for s in shapes]
    result = []
    for index, shape in enumerate(sizes):
        if any(n < 0 for n in shape):
            raise ValueError("Attempting to broadcast a dimension with negative length!")
        for k in range(1, len(shape) + 1):
            if k > len(result):
                result.insert(0, shape[-k])
            elif result[-k] == 1:
                result[-k] = shape[-k]
            elif shape[-k] not in (1, result[-k]):
                raise RuntimeError(f"Attempting to broadcast a dimension of length {shape[-k]} at {-k}! Mismatching "
                                   f"argument at index {index} had {shape}; but expected shape should be "
                                   f"broadcastable to {result}")
    return Size(result)


def cov(input, *, correction=1, fweights=None, aweights=None):
    """The covariance of the variables in the rows of input (observations in columns), with optional
    frequency and observation weights."""
    if input.dim() > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an input with "
                           f"{input.dim()} dimensions")
    x = input if input.is_floating_point() else input.to(_C.get_default_dtype())
    x = x.reshape(1, -1) if x.dim() < 2 else x
    observations = x.shape[1]
    w = fweights
    if aweights is not None:
        w = aweights if w is None else w * aweights
    if w is None:
        w_sum = observations
        average = x.mean(1)
        norm = w_sum - correction
    else:
        w_sum = w.sum()
        average = (x * w).sum(1) / w_sum
        norm = w_sum - (correction * (w * aweights).sum() / w_sum if aweights is not None else correction)
    if (norm <= 0).item() if isinstance(norm, _C.TensorBase) else norm <= 0:
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less than the number of "
                      "observations.", UserWarning, stacklevel=2)
        norm = norm.clamp(min=0) if isinstance(norm, _C.TensorBase) else 0
    centered = x - average.unsqueeze(1)
    c = _C.mm(centered, (centered if w is None else centered * w).t())
    return (c / norm).squeeze()


def corrcoef(input):
    """Pearson correlation coefficients of the variables in the rows of input, clipped to [-1, 1]."""
    c = cov(input)
    if c.dim() == 0:
        return c / c
    stddev = c.diagonal().sqrt()
    c = c / stddev.unsqueeze(1) / stddev.unsqueeze(0)
    return c.clamp(-1, 1)


def _trapezoid_terms(y, x, dx, dim):
    """The areas of the trapezoids between neighbouring samples along dim (dim last)."""
    n = y.shape[dim]
    left, right = (y.narrow(dim, 0, n - 1), y.narrow(dim, 1, n - 1)) if n else (y, y)
    if x is None:
        return (left + right) * (0.5 * (1 if dx is None else dx))
    if x.dim() == 1:
        if x.shape[0] != n:
            raise RuntimeError("trapezoid: There must be one `x` value for each sample point")
        shape = [1] * y.dim()
        shape[dim] = max(n - 1, 0)
        spacing = _C.diff(x).reshape(shape)
    else:
        spacing = _C.diff(x, dim=dim)
    return (left + right) * spacing * 0.5


def _float_samples(y):
    return y if y.is_floating_point() else y.to(_C.get_default_dtype())


def trapezoid(y, x=None, *, dx=None, dim=-1):
    """The trapezoidal rule along dim, with sample points x or a constant spacing dx (default 1)."""
    if isinstance(x, (int, float)):  # trapezoid(y, 0.5): a spacing given positionally
        x, dx = None, x
    if x is not None and dx is not None:
        raise RuntimeError("trapezoid: received both x and dx arguments, only one of them is allowed")
    dim = dim % max(y.dim(), 1)
    return _trapezoid_terms(_float_samples(y), x, dx, dim).sum(dim)


def trapz(y, x=None, *, dx=None, dim=-1):
    """Alias of trapezoid."""
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """The running trapezoidal rule along dim (one fewer element than y there)."""
    if isinstance(x, (int, float)):
        x, dx = None, x
    dim = dim % max(y.dim(), 1)
    return _trapezoid_terms(_float_samples(y), x, dx, dim).cumsum(dim)


def vander(x, N=None, increasing=False):
    """The Vandermonde matrix: columns x^(N-1), ..., x^0 (x^0 first when increasing)."""
    if x.dim() != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    x = x.to(_C.promote_types(x.dtype, _C.int64))
    result = _C.ones(x.shape[0], n, dtype=x.dtype, device=x.device)
    if n > 1:
        powers = x.unsqueeze(1).expand(x.shape[0], n - 1).cumprod(1)
        result = _C.cat([result[:, :1], powers], 1)
    return result if increasing else result.flip(1)


def unravel_index(indices, shape):
    """The coordinates in an array of `shape` of each flat index (negative ones counting from the end)."""
    if not isinstance(indices, _C.TensorBase):
        raise TypeError(f"expected 'indices' to be a tensor, but got {type(indices).__name__}")
    if indices.is_floating_point() or indices.dtype == _C.bool:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype}")
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    if any(n < 0 for n in shape):
        raise ValueError(f"'shape' cannot have negative values, but got {shape}")
    if not shape:
        return ()
    total = 1
    for n in shape:
        total *= n
    # As torch: no bounds check; every index counts modulo the number of elements.
    flat = indices.to(_C.int64).remainder(max(total, 1))
    coords = []
    for n in reversed(shape):
        coords.append(flat.remainder(n))
        flat = flat.div(n, rounding_mode="floor")
    return tuple(reversed(coords))


def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """Whether each element of `elements` is in `test_elements` (either may be a number)."""
    like = elements if isinstance(elements, _C.TensorBase) else test_elements
    elements, test_elements = _as_tensor(elements, like), _as_tensor(test_elements, like)
    dtype = result_type(elements, test_elements)
    values = elements.to(dtype)
    pool = test_elements.to(dtype).reshape(-1).sort().values
    if pool.numel() == 0:
        found = zeros_like(values, dtype=_C.bool)
    else:  # binary search of each element in the sorted pool
        at = _C.searchsorted(pool, values.reshape(-1)).clamp(max=pool.numel() - 1)
        found = (pool[at] == values.reshape(-1)).reshape(values.shape)
    return found.logical_not() if invert else found


def chain_matmul(*matrices, out=None):
    """Deprecated: the product of the 2-D matrices, left to right."""
    warnings.warn("torch.chain_matmul is deprecated and will be removed in a future PyTorch release. Use "
                  "torch.linalg.multi_dot instead, which accepts a list of two or more tensors rather than multiple "
                  "parameters.", UserWarning, stacklevel=2)
    if len(matrices) == 1 and isinstance(matrices[0], (list, tuple)):
        matrices = matrices[0]
    if not matrices:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    for m in matrices:
        if m.dim() != 2:
            raise RuntimeError(f"Tensor dimension is {m.dim()}, expected 2 instead.")
    result = matrices[0].clone() if len(matrices) == 1 else matrices[0]
    for m in matrices[1:]:
        result = _C.mm(result, m)
    return result if out is None else out.copy_(result)


def ravel(input):
    """The elements as a 1-D tensor (a view when the layout allows)."""
    return input.reshape(-1)


def addr(input, vec1, vec2, *, beta=1, alpha=1, out=None):
    """beta * input + alpha * outer(vec1, vec2) (input ignored, NaN included, when beta is 0)."""
    if vec1.dim() != 1 or vec2.dim() != 1:
        raise RuntimeError(f"addr: Expected 1-D argument vec1, but got {vec1.dim()}-D" if vec1.dim() != 1 else
                           f"addr: Expected 1-D argument vec2, but got {vec2.dim()}-D")
    integral = not result_type(input, vec1).is_floating_point and not vec2.is_floating_point()
    if integral and (isinstance(alpha, float) or isinstance(beta, float)):
        name = "alpha" if isinstance(alpha, float) else "beta"
        raise RuntimeError(f"For integral input tensors, argument {name} must not be a floating point number.")
    product = _C.outer(vec1, vec2)
    product = product if alpha == 1 else product * alpha
    result = product + (input if beta == 1 else input * beta) if beta != 0 else product + zeros_like(input)
    return result if out is None else out.copy_(result)


def renorm(input, p, dim, maxnorm):
    """Each slice along dim whose p-norm exceeds maxnorm, scaled to norm maxnorm."""
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    dim = dim % max(input.dim(), 1)
    others = [d for d in range(input.dim()) if d != dim]
    from .linalg import vector_norm
    norm = vector_norm(input, p, others, True) if others else input.abs()
    factor = _C.where(norm > maxnorm, maxnorm / (norm + 1e-7), norm.new_ones(()))
    return input * factor
