"""The functions PyTorch writes in Python over its ops (torch.functional): einsum's
varargs and sublist forms, tensordot's `dims`, cartesian_prod's varargs, cdist's
compute_mode names, the forms taking tensors as varargs, and nonzero's as_tuple.
Each calls the op of the same name in ember._C."""
from typing import Optional

from . import _C

_VF = _C._VariableFunctions

__all__ = ["atleast_1d", "atleast_2d", "atleast_3d", "broadcast_tensors", "cartesian_prod", "cdist", "einsum",
           "meshgrid", "nonzero", "tensordot"]

_CDIST_MODES = {"use_mm_for_euclid_dist_if_necessary": 0, "use_mm_for_euclid_dist": 1,
                "donot_use_mm_for_euclid_dist": 2}


def _sublist_equation(sublist):
    """The subscripts of einsum's sublist form: ints 0-51 as letters, Ellipsis as '...'."""
    def letter(s):
        if s is Ellipsis:
            return "..."
        if not 0 <= s < 52:
            raise ValueError(f"einsum(): subscript in subscript list is not within the valid range [0, 52)")
        return chr(ord("A") + s) if s < 26 else chr(ord("a") + s - 26)
    return "".join(letter(s) for s in sublist)


def einsum(*args):
    """einsum(equation, *operands), einsum(equation, [operands]) or the sublist form
    einsum(op1, sublist1, op2, sublist2, ..., [sublist_out])."""
    if len(args) < 2:
        raise ValueError("einsum(): must specify the equation string and at least one operand, "
                         "or at least one operand and its subscripts list")
    if isinstance(args[0], str):
        operands = args[1]
        if len(args) == 2 and isinstance(operands, (list, tuple)):
            return _C.einsum(args[0], list(operands))
        return _C.einsum(args[0], list(args[1:]))
    operands, terms = list(args[0::2]), [_sublist_equation(s) for s in args[1::2]]
    if len(args) % 2 == 1:  # the last sublist is the output's
        operands = operands[:-1]
        equation = ",".join(terms) + "->" + _sublist_equation(args[-1])
    else:
        equation = ",".join(terms)
    return _C.einsum(equation, operands)


def tensordot(a, b, dims=2, out=None):
    """Sums products over the last `dims` dims of a and the first `dims` of b, or over the
    dims listed in a pair of lists (or a tensor holding either)."""
    if isinstance(dims, _C.TensorBase):
        dims = dims.item() if dims.numel() == 1 else dims.tolist()
    if isinstance(dims, (list, tuple)):
        if len(dims) != 2:
            raise RuntimeError("tensordot expects dims to be a pair of lists or an int, got "
                               f"{len(dims)} entries")
        dims_a, dims_b = ([d] if isinstance(d, int) else list(d) for d in dims)
    elif isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > min(a.dim(), b.dim()):
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
        dims_a, dims_b = list(range(-dims, 0)), list(range(dims))
    else:
        raise TypeError(f"tensordot expects dims to be an int or a pair of lists, got {type(dims).__name__}")
    if out is None:
        return _C.tensordot(a, b, dims_a, dims_b)
    return _C.tensordot(a, b, dims_a, dims_b, out=out)


def cartesian_prod(*tensors):
    """The cartesian product of the given 1-D tensors, one row per combination."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tensors[0]
    return _C.cartesian_prod(list(tensors))


def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """The p-norm distance between each pair of rows of x1 [..., P, M] and x2 [..., R, M]."""
    if compute_mode not in _CDIST_MODES:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    return _C.cdist(x1, x2, p, _CDIST_MODES[compute_mode])


def _tensors(args):
    # f(a, b) and f([a, b]) both mean the list; f(a) is the lone tensor.
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        return list(args[0]), True
    return list(args), len(args) != 1


def _atleast(op, tensors):
    items, as_list = _tensors(tensors)
    if not as_list:
        return op(items[0])
    return tuple(getattr(_VF, op.__name__)(items))


def atleast_1d(*tensors):
    """Each tensor with at least 1 dim; one tensor gives a tensor, several (or a list) a tuple."""
    return _atleast(_VF.atleast_1d, tensors)


def atleast_2d(*tensors):
    """Each tensor with at least 2 dims; one tensor gives a tensor, several (or a list) a tuple."""
    return _atleast(_VF.atleast_2d, tensors)


def atleast_3d(*tensors):
    """Each tensor with at least 3 dims; one tensor gives a tensor, several (or a list) a tuple."""
    return _atleast(_VF.atleast_3d, tensors)


def broadcast_tensors(*tensors):
    """The tensors expanded to their common broadcast shape (views), as a tuple."""
    return tuple(_VF.broadcast_tensors(_tensors(tensors)[0]))


def meshgrid(*tensors, indexing: Optional[str] = None):
    """Coordinate grids of 0-d/1-D tensors, `indexing` 'ij' (default, with PyTorch's warning) or 'xy'."""
    items = _tensors(tensors)[0]
    if indexing is None:
        return tuple(_VF.meshgrid(items))
    return tuple(_VF.meshgrid(items, indexing=indexing))


def nonzero(input, *, out=None, as_tuple: bool = False):
    """The indices of the non-zero elements: an (n, input.dim()) int64 tensor, or with
    `as_tuple=True` one 1-D tensor per dim (a 0-d input counts as 1-D)."""
    if as_tuple:
        if out is not None:
            raise RuntimeError("nonzero(): out= is not supported with as_tuple=True")
        return tuple(_VF.where(input))
    return _VF.nonzero(input) if out is None else _VF.nonzero(input, out=out)


for _f in (atleast_1d, atleast_2d, atleast_3d, broadcast_tensors, meshgrid, nonzero):
    _f.__module__ = "ember"
