"""The 3-D, power-average and fractional pools, as torch.nn.modules.pooling (their own file so the
1-D/2-D pooling.py stays as it is): modules over F.*_pool3d, F.max_unpool3d, F.lp_pool*d and
F.fractional_max_pool*d."""
from .. import functional as F
from .module import Module
from .pooling import _AdaptiveAvgPoolNd, _AdaptiveMaxPoolNd, _AvgPoolWithDivisor, _MaxPoolNd, _MaxUnpoolNd
from .utils import _pair, _triple

__all__ = ["AdaptiveAvgPool3d", "AdaptiveMaxPool3d", "AvgPool3d", "FractionalMaxPool2d", "FractionalMaxPool3d",
           "LPPool1d", "LPPool2d", "LPPool3d", "MaxPool3d",
           "MaxUnpool3d"]


class MaxPool3d(_MaxPoolNd):
    """The maximum of each kernel_size window of the last three dims (and its index with return_indices)."""

    def forward(self, input):
        return F.max_pool3d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class MaxUnpool3d(_MaxUnpoolNd):
    """The partial inverse of MaxPool3d: each value put back at its index, zeros elsewhere."""

    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        self.kernel_size = _triple(kernel_size)
        self.stride = _triple(stride if (stride is not None) else kernel_size)
        self.padding = _triple(padding)

    def forward(self, input, indices, output_size=None):
        return F.max_unpool3d(input, indices, self.kernel_size, self.stride, self.padding, output_size)


class AvgPool3d(_AvgPoolWithDivisor):
    """The mean of each kernel_size window of the last three dims (or its sum / divisor_override)."""

    def forward(self, input):
        return F.avg_pool3d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)

    def __setstate__(self, d):
        super().__setstate__(d)  # pickles of old PyTorch versions lack these
        self.__dict__.setdefault("padding", 0)
        self.__dict__.setdefault("ceil_mode", False)
        self.__dict__.setdefault("count_include_pad", True)


class AdaptiveMaxPool3d(_AdaptiveMaxPoolNd):
    """The maximum over output_size windows of the last three dims that cover them (None keeps a size)."""

    def forward(self, input):
        return F.adaptive_max_pool3d(input, self.output_size, self.return_indices)


class AdaptiveAvgPool3d(_AdaptiveAvgPoolNd):
    """The mean over output_size windows of the last three dims that cover them (None keeps a size)."""

    def forward(self, input):
        return F.adaptive_avg_pool3d(input, self.output_size)


class _LPPoolNd(Module):
    __constants__ = ["norm_type", "kernel_size", "stride", "ceil_mode"]

    def __init__(self, norm_type, kernel_size, stride=None, ceil_mode=False):
        super().__init__()
        self.norm_type = norm_type
        self.kernel_size = kernel_size
        self.stride = stride
        self.ceil_mode = ceil_mode

    def extra_repr(self):
        return ("norm_type={norm_type}, kernel_size={kernel_size}, stride={stride}, "
                "ceil_mode={ceil_mode}".format(**self.__dict__))


class LPPool1d(_LPPoolNd):
    """Power-average pooling of the last dim: (sum of x^p over each window)^(1/p)."""

    def forward(self, input):
        return F.lp_pool1d(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)


class LPPool2d(_LPPoolNd):
    """Power-average pooling of the last two dims: (sum of x^p over each window)^(1/p)."""

    def forward(self, input):
        return F.lp_pool2d(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)


class LPPool3d(_LPPoolNd):
    """Power-average pooling of the last three dims: (sum of x^p over each window)^(1/p)."""

    def forward(self, input):
        return F.lp_pool3d(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)


class _FractionalMaxPoolNd(Module):
    _expand = staticmethod(_pair)

    def __init__(self, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                 _random_samples=None):
        super().__init__()
        self.kernel_size = self._expand(kernel_size)
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size = self._expand(output_size) if output_size is not None else None
        self.output_ratio = self._expand(output_ratio) if output_ratio is not None else None
        if output_size is None and output_ratio is None:
            raise ValueError(f"{type(self).__name__} requires specifying either an output size, or a pooling ratio")
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        if self.output_ratio is not None and not all(0 < r < 1 for r in self.output_ratio):
            raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio})")


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    """Fractional max pooling of the last two dims: kernel_size windows at pseudo-random starts that
    shrink the input to output_size (or output_ratio of it)."""

    def forward(self, input):
        return F.fractional_max_pool2d(input, self.kernel_size, self.output_size, self.output_ratio,
                                       self.return_indices, _random_samples=self._random_samples)


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    """Fractional max pooling of the last three dims: kernel_size windows at pseudo-random starts that
    shrink the input to output_size (or output_ratio of it)."""

    _expand = staticmethod(_triple)

    def forward(self, input):
        return F.fractional_max_pool3d(input, self.kernel_size, self.output_size, self.output_ratio,
                                       self.return_indices, _random_samples=self._random_samples)
