"""allclose and equal: PyTorch returns Python bools from these, which ops.yaml ops cannot, so
they are written over isclose and eq here."""
from . import _C

_ops = _C._VariableFunctions


def _check_tensor(name, position, arg, value):
    if not isinstance(value, _C.TensorBase):
        raise TypeError(f"{name}(): argument '{arg}' (position {position}) must be Tensor, not {type(value).__name__}")


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False) -> bool:
    """True when every element pair is close, as isclose (broadcast; both of one dtype)."""
    _check_tensor("allclose", 1, "input", input)
    _check_tensor("allclose", 2, "other", other)
    return bool(_ops.isclose(input, other, rtol, atol, equal_nan).all().item())


def equal(input, other) -> bool:
    """True when both tensors have the same shape and equal elements (NaN equals nothing)."""
    _check_tensor("equal", 1, "input", input)
    _check_tensor("equal", 2, "other", other)
    if tuple(input.shape) != tuple(other.shape):
        return False
    return bool(_ops.eq(input, other).all().item())
