"""Small functions PyTorch has beside its ops: square(_), fill, detach(_), triu_indices, tril_indices and compile."""
import numpy as np

from . import _C
from ._creation import tensor


def square(input, *, out=None):
    """input ** 2, as pow(input, 2) (bool gives int64, as PyTorch's)."""
    return _C.pow(input, 2) if out is None else _C.pow(input, 2, out=out)


def square_(input):
    """input **= 2 in place (pow_(2)); returns input."""
    return input.pow_(2)


def fill(input, value):
    """A new tensor of input's shape, dtype and device filled with `value` (a number or a 0-d tensor)."""
    if isinstance(value, _C.TensorBase) and value.dim() != 0:
        raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with {value.dim()} dimensions.")
    return input.clone().fill_(value)  # through clone, so the result's gradient to input is zero, as PyTorch's


def detach(input):
    """A new tensor sharing input's data, detached from the graph (Tensor.detach)."""
    return input.detach()


def detach_(input):
    """Detaches input from the graph in place (Tensor.detach_); returns input."""
    return input.detach_()


def _triangle_indices(name, numpy_fn, row, col, offset, dtype, device):
    if row < 0:
        raise RuntimeError(f"row must be non-negative, got{row}")
    if col < 0:
        raise RuntimeError(f"col must be non-negative, got{col}")
    if dtype not in (_C.int64, _C.int32):
        raise NotImplementedError(f'"{name}" not implemented for \'{_TYPE_NAMES.get(dtype, str(dtype))}\'')
    rows, cols = numpy_fn(row, offset, col)
    return tensor(np.stack([rows, cols]).astype(np.int64), dtype=dtype, device=device)


_TYPE_NAMES = {_C.float16: "Half", _C.bfloat16: "BFloat16", _C.float32: "Float", _C.float64: "Double",
               _C.int8: "Char", _C.int16: "Short", _C.uint8: "Byte", _C.bool: "Bool"}


def triu_indices(row, col, offset=0, *, dtype=_C.int64, device=None, layout=None):
    """The (2, N) row and column indices of the upper triangle of a row x col matrix (diagonals >= offset)."""
    return _triangle_indices("triu_indices", np.triu_indices, row, col, offset, dtype, device)


def tril_indices(row, col, offset=0, *, dtype=_C.int64, device=None, layout=None):
    """The (2, N) row and column indices of the lower triangle of a row x col matrix (diagonals <= offset)."""
    return _triangle_indices("tril_indices", np.tril_indices, row, col, offset, dtype, device)


def compile(model=None, *, fullgraph=False, dynamic=None, backend="inductor", mode=None, options=None, name=None,
            disable=False):
    """ember has no graph compiler: returns `model` itself (or, without one, a decorator that does), which
    runs eagerly with the same results, so scripts calling torch.compile run unchanged."""
    if model is None:
        return lambda fn: fn
    if not callable(model):
        raise AssertionError(f"A callable function is expected, but {type(model)} is provided.")
    return model
