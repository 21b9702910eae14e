"""Forward-mode automatic differentiation, as torch.autograd.forward_ad.

Inside a dual level, `make_dual(x, v)` gives a tensor carrying the tangent `v`;
every differentiable op then computes its output's tangent (the Jacobian-vector
product) alongside its value, and `unpack_dual(y)` returns both. Only one level
may be active at a time; exiting it clears every tangent made in it.
"""
import contextlib
from typing import NamedTuple, Optional

from .. import _C

__all__ = ["UnpackedDualTensor", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual", "dual_level"]

# The active level, -1 when none (PyTorch keeps it in Python too).
_current_level = -1


def enter_dual_level():
    """Enters a new forward grad level (nested levels are not supported); returns it."""
    global _current_level
    new_level = _C._enter_dual_level()
    if new_level != _current_level + 1:
        raise RuntimeError("Entering a new forward AD level but the current level is not valid. Make sure you did "
                           "not modify it directly.")
    _current_level = new_level
    return new_level


def exit_dual_level(*, level=None):
    """Exits the forward grad level, deleting every tangent made in it."""
    global _current_level
    if level is None:
        level = _current_level
    if level != _current_level:
        raise RuntimeError("Trying to exit a forward AD level that was not the last one that was created. This is "
                           "not supported.")
    _C._exit_dual_level(level)
    _current_level = level - 1


def make_dual(tensor, tangent, *, level=None):
    """A new tensor aliasing `tensor` with `tangent` as its tangent (kept as is when it has
    `tensor`'s layout, else copied into it). Backward-differentiable with respect to `tensor`."""
    if level is None:
        level = _current_level
    if level < 0:
        raise RuntimeError("Trying to create a dual Tensor for forward AD but no level exists, make sure to "
                           "enter_dual_level() first.")
    if not tensor.is_floating_point():
        raise ValueError(f"Expected primal to be floating point or complex, but got: {tensor.dtype}")
    if not tangent.is_floating_point():
        raise ValueError(f"Expected tangent to be floating point or complex, but got: {tangent.dtype}")
    return _C._make_dual(tensor, tangent, level)


class UnpackedDualTensor(NamedTuple):
    """What unpack_dual returns: the primal (a view without the tangent) and the tangent."""

    primal: _C.TensorBase
    tangent: Optional[_C.TensorBase]


def unpack_dual(tensor, *, level=None):
    """(primal, tangent) of `tensor`: the primal is a view of it without the tangent, the
    tangent is the tensor itself or None when `tensor` has none at `level`."""
    if level is None:
        level = _current_level
    if level < 0:
        return UnpackedDualTensor(tensor, None)
    primal, tangent = _C._unpack_dual(tensor, level)
    return UnpackedDualTensor(primal, tangent)


class dual_level(contextlib.ContextDecorator):
    """Context manager (and decorator) entering a dual level and exiting it at the end."""

    def __enter__(self):
        return enter_dual_level()

    def __exit__(self, *exc):
        exit_dual_level()
        return False
