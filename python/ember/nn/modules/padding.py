"""Padding layers, as torch.nn.modules.padding: F.pad with a fixed padding (given as one int for
every side, or (left, right, top, bottom, front, back)) and mode."""
from .. import functional as F
from .module import Module
from .utils import _ntuple, _pair, _quadruple

__all__ = ["CircularPad1d", "CircularPad2d", "CircularPad3d", "ConstantPad1d", "ConstantPad2d", "ConstantPad3d",
           "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d",
           "ReplicationPad3d", "ZeroPad1d", "ZeroPad2d", "ZeroPad3d"]

_sextuple = _ntuple(6, "_sextuple")


class _PadNd(Module):
    """F.pad(input, self.padding, self._mode); the repr is the padding tuple."""

    __constants__ = ["padding"]
    _mode: str  # the F.pad mode, set by each kind

    def __init__(self, padding):
        super().__init__()
        self.padding = self._to_tuple(padding)

    def forward(self, input):
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self):
        return f"{self.padding}"


class _CircularPadNd(_PadNd):
    _mode = "circular"

    def forward(self, input):
        self._check_input_dim(input)
        return super().forward(input)

    def _check_input_dim(self, input):
        dims = len(self.padding) // 2
        if input.dim() not in (dims + 1, dims + 2):
            raise ValueError(f"expected {dims + 1}D or {dims + 2}D input (got {input.dim()}D input)")


class CircularPad1d(_CircularPadNd):
    """Pads the last dim of a 2-D or 3-D input with the values wrapped around from its other end."""

    _to_tuple = staticmethod(_pair)


class CircularPad2d(_CircularPadNd):
    """Pads the last two dims of a 3-D or 4-D input with the values wrapped around."""

    _to_tuple = staticmethod(_quadruple)


class CircularPad3d(_CircularPadNd):
    """Pads the last three dims of a 4-D or 5-D input with the values wrapped around."""

    _to_tuple = staticmethod(_sextuple)


class _ConstantPadNd(Module):
    __constants__ = ["padding", "value"]

    def __init__(self, value):
        super().__init__()
        self.value = value

    def forward(self, input):
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self):
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    """Pads the last dim with `value`."""

    def __init__(self, padding, value):
        super().__init__(value)
        self.padding = _pair(padding)


class ConstantPad2d(_ConstantPadNd):
    """Pads the last two dims with `value`."""

    def __init__(self, padding, value):
        super().__init__(value)
        self.padding = _quadruple(padding)


class ConstantPad3d(_ConstantPadNd):
    """Pads the last three dims with `value`."""

    def __init__(self, padding, value):
        super().__init__(value)
        self.padding = _sextuple(padding)


class _ReflectionPadNd(_PadNd):
    _mode = "reflect"


class ReflectionPad1d(_ReflectionPadNd):
    """Pads the last dim with its reflection (the edge not repeated)."""

    _to_tuple = staticmethod(_pair)


class ReflectionPad2d(_ReflectionPadNd):
    """Pads the last two dims with their reflection (the edge not repeated)."""

    _to_tuple = staticmethod(_quadruple)


class ReflectionPad3d(_ReflectionPadNd):
    """Pads the last three dims with their reflection (the edge not repeated)."""

    _to_tuple = staticmethod(_sextuple)


class _ReplicationPadNd(_PadNd):
    _mode = "replicate"


class ReplicationPad1d(_ReplicationPadNd):
    """Pads the last dim by repeating its edge values."""

    _to_tuple = staticmethod(_pair)


class ReplicationPad2d(_ReplicationPadNd):
    """Pads the last two dims by repeating their edge values."""

    _to_tuple = staticmethod(_quadruple)


class ReplicationPad3d(_ReplicationPadNd):
    """Pads the last three dims by repeating their edge values."""

    _to_tuple = staticmethod(_sextuple)


class ZeroPad1d(ConstantPad1d):
    """Pads the last dim with zeros."""

    def __init__(self, padding):
        super().__init__(padding, 0.0)

    extra_repr = _PadNd.extra_repr  # the padding alone, without the value


class ZeroPad2d(ConstantPad2d):
    """Pads the last two dims with zeros."""

    def __init__(self, padding):
        super().__init__(padding, 0.0)

    extra_repr = _PadNd.extra_repr  # the padding alone, without the value


class ZeroPad3d(ConstantPad3d):
    """Pads the last three dims with zeros."""

    def __init__(self, padding):
        super().__init__(padding, 0.0)

    extra_repr = _PadNd.extra_repr  # the padding alone, without the value
