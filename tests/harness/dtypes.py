"""PyTorch's type promotion, written out so the suite needs no torch at test time.

Dtypes are named by strings ("int32"). Categories: bool < integral < floating.
Within a category the wider type wins; uint8 with a signed type needs at least
int16; float16 with bfloat16 gives float32. Operands come in three priority
classes: dimensioned tensors, 0-d tensors and Python numbers ("wrapped
numbers"). A lower class only matters when it raises the category, never the
width: int32 tensor + 0-d int64 tensor -> int32, float16 tensor + 2.0 ->
float16, int32 tensor + 2.5 -> float32 (the default dtype), bool tensor + 1 -> int64.
"""
from dataclasses import dataclass

import numpy as np

BOOL = ("bool",)
INTEGRAL = ("uint8", "int8", "int16", "int32", "int64")
FLOATING = ("float16", "bfloat16", "float32", "float64")
DEFAULT_FLOAT = "float32"

_INT_BITS = {"uint8": 8, "int8": 8, "int16": 16, "int32": 32, "int64": 64}
_FLOAT_BITS = {"float16": 16, "bfloat16": 16, "float32": 32, "float64": 64}

# The numpy dtype each ember dtype is stored as on the NumPy side (bfloat16 has
# none: its values live in float32 arrays holding exactly representable values).
NUMPY_STORAGE = {
    "bool": np.bool_, "uint8": np.uint8, "int8": np.int8, "int16": np.int16,
    "int32": np.int32, "int64": np.int64, "float16": np.float16,
    "bfloat16": np.float32, "float32": np.float32, "float64": np.float64,
}


def category(dtype):
    if dtype in BOOL:
        return 0
    if dtype in INTEGRAL:
        return 1
    if dtype in FLOATING:
        return 2
    raise ValueError(f"unknown dtype {dtype!r}")


def is_floating(dtype):
    return dtype in FLOATING


def is_integral(dtype, include_bool=False):
    return dtype in INTEGRAL or (include_bool and dtype == "bool")


def is_half(dtype):
    return dtype in ("float16", "bfloat16")


def compute_numpy_dtype(dtype):
    """The numpy dtype a reference computes in: half types compute in float32."""
    return np.float32 if is_half(dtype) else NUMPY_STORAGE[dtype]


def promote_types(x, y):
    """torch.promote_types for two dtype names (None is 'no operand yet')."""
    if x is None:
        return y
    if y is None or x == y:
        return x
    cx, cy = category(x), category(y)
    if cx != cy:
        return x if cx > cy else y
    if cx == 1:
        if "uint8" in (x, y):
            other = y if x == "uint8" else x
            return f"int{max(16, _INT_BITS[other])}"
        return x if _INT_BITS[x] > _INT_BITS[y] else y
    if {x, y} == {"float16", "bfloat16"}:
        return "float32"
    return x if _FLOAT_BITS[x] > _FLOAT_BITS[y] else y


@dataclass(frozen=True)
class TensorInfo:
    """What promotion needs to know about a tensor operand."""
    dtype: str
    ndim: int


def scalar_dtype(value):
    """The dtype of a Python number as a wrapped number."""
    if isinstance(value, (bool, np.bool_)):
        return "bool"
    if isinstance(value, (int, np.integer)):
        return "int64"
    if isinstance(value, (float, np.floating)):
        return DEFAULT_FLOAT
    raise TypeError(f"not a number: {value!r}")


def _combine(higher, lower):
    # at::native's combine_categories: a lower priority class only raises the category.
    if higher is None:
        return lower
    if lower is None:
        return higher
    if is_floating(higher):
        return higher
    if higher == "bool" or is_floating(lower):
        return promote_types(higher, lower)
    return higher


def result_type(operands):
    """torch.result_type over TensorInfo operands and Python numbers."""
    dim = zero = wrapped = None
    for o in operands:
        if isinstance(o, TensorInfo):
            if o.ndim > 0:
                dim = promote_types(dim, o.dtype)
            else:
                zero = promote_types(zero, o.dtype)
        else:
            wrapped = promote_types(wrapped, scalar_dtype(o))
    return _combine(dim, _combine(zero, wrapped))


def can_cast(src, dst):
    """torch.can_cast: no floating -> integral/bool, no non-bool -> bool."""
    if is_floating(src) and not is_floating(dst):
        return False
    if src != "bool" and dst == "bool":
        return False
    return True


def round_to(values, dtype):
    """`values` as the given dtype holds them, in that dtype's NumPy storage type.

    bfloat16 rounds to nearest even (as ember's conversion must) and stays in float32.
    """
    values = np.asarray(values)
    if dtype == "bfloat16":
        f = np.ascontiguousarray(values, dtype=np.float32).reshape(values.shape)  # 0-d stays 0-d
        bits = f.view(np.uint32).astype(np.uint64)
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
        out = bits.astype(np.uint32).view(np.float32).reshape(f.shape)
        return np.where(np.isnan(f), f, out)
    return values.astype(NUMPY_STORAGE[dtype])
