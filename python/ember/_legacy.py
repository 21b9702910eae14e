"""PyTorch's first tensor API, still in real programs: the typed constructors (ember.FloatTensor(2, 3),
ember.LongTensor([1, 2])), isinstance checks against them, and Tensor.type()."""
import numbers

from . import _C

# (class name, dtype name), in PyTorch's order.
_TYPES = [("DoubleTensor", "float64"), ("FloatTensor", "float32"), ("HalfTensor", "float16"),
          ("BFloat16Tensor", "bfloat16"), ("LongTensor", "int64"), ("IntTensor", "int32"),
          ("ShortTensor", "int16"), ("CharTensor", "int8"), ("ByteTensor", "uint8"), ("BoolTensor", "bool")]


class _LegacyTensorType(type):
    """The metaclass of the typed constructors: instances of a type are the CPU tensors of its
    dtype (`isinstance(ember.zeros(2), ember.FloatTensor)`); calling it makes one."""

    def __instancecheck__(cls, obj):
        return isinstance(obj, _C.TensorBase) and obj.dtype == cls.dtype and obj.device.type == "cpu"

    def __call__(cls, *args, device=None):
        from ._creation import tensor as _tensor
        from ._size import Size
        if device is not None and _C.device(device).type != "cpu":
            raise RuntimeError(f"{cls.__name__}: legacy constructor expects device type: cpu but device type: "
                               f"{_C.device(device).type} was passed")
        if not args:
            return _C._VariableFunctions.empty(0, dtype=cls.dtype)
        if all(isinstance(a, numbers.Integral) and not isinstance(a, bool) for a in args):
            return _C._VariableFunctions.empty(args, dtype=cls.dtype)      # sizes
        if len(args) > 1:
            bad = next(type(a).__name__ for a in args if not isinstance(a, numbers.Integral))
            raise TypeError(f"new(): argument 'size' must be tuple of ints, but found element of type {bad}")
        arg = args[0]
        if isinstance(arg, _C.TensorBase):
            if arg.dtype != cls.dtype or arg.device.type != "cpu":
                raise TypeError(f"expected {type_name_of(cls.dtype)} (got {type_name(arg)})")
            return arg.view(tuple(arg.shape))   # an alias, as PyTorch's
        if isinstance(arg, Size):
            return _C._VariableFunctions.empty(tuple(arg), dtype=cls.dtype)
        if isinstance(arg, (str, bytes, numbers.Number)):
            raise TypeError(f"new(): data must be a sequence (got {type(arg).__name__})")
        return _tensor(arg, dtype=cls.dtype)

    def __repr__(cls):
        return f"<class 'ember.{cls.__name__}'>"


def _make(name, dtype_name):
    return _LegacyTensorType(name, (), {"dtype": getattr(_C, dtype_name), "is_cuda": False,
                                        "__module__": "ember", "__doc__": f"The CPU tensors of dtype {dtype_name}."})


TYPES = {name: _make(name, dtype) for name, dtype in _TYPES}
_BY_DTYPE = {t.dtype: t for t in TYPES.values()}


def type_name_of(dtype, device_type="cpu"):
    base = _BY_DTYPE[dtype].__name__
    return f"ember.cuda.{base}" if device_type == "cuda" else f"ember.{base}"


def type_name(t):
    """'ember.FloatTensor' for a float32 CPU tensor ('ember.cuda.FloatTensor' on a GPU)."""
    return type_name_of(t.dtype, t.device.type)


def convert(t, dtype, non_blocking=False):
    """Tensor.type(dtype): a dtype, a legacy type, or its name ('ember.DoubleTensor'; 'torch.' as well,
    for programs written against PyTorch); the tensor itself when nothing changes."""
    device = None
    if isinstance(dtype, str):
        parts = dtype.split(".")
        if len(parts) not in (2, 3) or parts[0] not in ("ember", "torch") or parts[-1] not in TYPES or (
                len(parts) == 3 and parts[1] != "cuda"):
            raise ValueError(f"invalid type: '{dtype}'")
        device = "cuda" if len(parts) == 3 else "cpu"
        dtype = TYPES[parts[-1]].dtype
    elif isinstance(dtype, _LegacyTensorType):
        device, dtype = "cpu", dtype.dtype
    elif not isinstance(dtype, _C.dtype):
        raise TypeError(f"type(): argument 'dtype' must be ember.dtype or str, not {type(dtype).__name__}")
    if dtype == t.dtype and (device is None or t.device.type == device):
        return t
    return t.to(device=device or t.device, dtype=dtype, non_blocking=non_blocking)
