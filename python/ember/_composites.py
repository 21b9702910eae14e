"""torch.* functions PyTorch composes from other ops (ATen's CompositeImplicitAutograd ones and
torch.functional's) that take Python forms ops.yaml has no signature for: splits, block_diag,
broadcast_shapes, trapezoid, unravel_index, isin, chain_matmul, addr. Made of ember ops, so autograd
records what they call (inner, vdot, cov, renorm, ... are ops.yaml composites)."""
import warnings

from . import _C
from ._creation import result_type, zeros_like
from ._size import Size


def _as_tensor(value, like=None):
    if isinstance(value, _C.TensorBase):
        return value
    from ._creation import tensor
    return tensor(value, device=None if like is None else like.device)


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

