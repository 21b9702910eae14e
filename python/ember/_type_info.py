"""ember.finfo and ember.iinfo: the numeric limits of a dtype, as torch.finfo/torch.iinfo."""
import math

from . import _C

# dtype -> (bits, mantissa bits without the implicit one, exponent bits)
_FLOATS = {_C.float16: (16, 10, 5), _C.bfloat16: (16, 7, 8), _C.float32: (32, 23, 8), _C.float64: (64, 52, 11)}
_INTS = {_C.uint8: (8, False), _C.int8: (8, True), _C.int16: (16, True), _C.int32: (32, True), _C.int64: (64, True)}


def _short_name(dtype):
    return str(dtype).rsplit(".", 1)[-1]


class finfo:
    """Numerical properties of a floating point dtype (the default dtype when none is given)."""

    def __init__(self, type=None):
        dtype = _C.get_default_dtype() if type is None else type
        if dtype not in _FLOATS:
            raise TypeError("ember.finfo() requires a floating point input type. Use ember.iinfo to handle "
                            "'ember.finfo'")
        bits, mantissa, exponent = _FLOATS[dtype]
        max_exponent = 2 ** (exponent - 1) - 1
        self.bits = bits
        self.eps = 2.0 ** -mantissa
        self.max = (2.0 - 2.0 ** -mantissa) * 2.0 ** max_exponent
        self.min = -self.max
        self.tiny = self.smallest_normal = 2.0 ** (1 - max_exponent)
        # 10 ** -digits10, C++'s decimal digits the type keeps (PyTorch's definition)
        self.resolution = 10.0 ** -math.floor(mantissa * math.log10(2))
        self.dtype = _short_name(dtype)

    def __eq__(self, other):
        return isinstance(other, finfo) and self.dtype == other.dtype

    def __hash__(self):
        return hash(("finfo", self.dtype))

    def __repr__(self):
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, eps={self.eps:g}, "
                f"smallest_normal={self.smallest_normal:g}, tiny={self.tiny:g}, dtype={self.dtype})")


class iinfo:
    """Numerical properties of an integer dtype."""

    def __init__(self, type):
        if type == _C.bool:
            raise TypeError("ember.bool is not supported by ember.iinfo")
        if type not in _INTS:
            raise TypeError("ember.iinfo() requires an integer input type. Use ember.finfo to handle 'ember.iinfo'")
        bits, signed = _INTS[type]
        self.bits = bits
        self.min = -(2 ** (bits - 1)) if signed else 0
        self.max = 2 ** (bits - 1) - 1 if signed else 2 ** bits - 1
        self.dtype = _short_name(type)

    def __eq__(self, other):
        return isinstance(other, iinfo) and self.dtype == other.dtype

    def __hash__(self):
        return hash(("iinfo", self.dtype))

    def __repr__(self):
        return f"iinfo(min={self.min:g}, max={self.max:g}, dtype={self.dtype})"
