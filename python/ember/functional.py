"""Functions PyTorch writes in Python over its ops (torch.functional): the forms taking
tensors as varargs, and nonzero's as_tuple. Each calls the generated op."""
from typing import Optional

from . import _C

_VF = _C._VariableFunctions

__all__ = ["atleast_1d", "atleast_2d", "atleast_3d", "broadcast_tensors", "meshgrid", "nonzero"]


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
