"""Convolution layers, as torch.nn.modules.conv: Conv1d/2d/3d (any padding_mode) over F.conv*d,
ConvTranspose1d/2d/3d over F.conv_transpose*d (output_size picks the output padding)."""
from ... import _C
from .. import functional as F
from ..parameter import UninitializedParameter
from .lazy import LazyModuleMixin
from .linear import _reset_fan_in_uniform, _weight_and_bias
from .module import Module
from .utils import _pair, _reverse_repeat_tuple, _single, _triple

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d", "LazyConv1d",
           "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyConvTranspose3d"]

_PADDING_MODES = {"zeros", "reflect", "replicate", "circular"}


class _ConvNd(Module):
    """The parameters, checks, initialization and repr shared by the convolutions."""

    __constants__ = ["stride", "padding", "dilation", "groups", "padding_mode", "output_padding", "in_channels",
                     "out_channels", "kernel_size"]

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation, transposed,
                 output_padding, groups, bias, padding_mode, device=None, dtype=None):
        factory_kwargs = {"device": device, "dtype": dtype}
        super().__init__()
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        valid_padding_strings = {"same", "valid"}
        if isinstance(padding, str):
            if padding not in valid_padding_strings:
                raise ValueError(f"Invalid padding string {padding!r}, should be one of {valid_padding_strings}")
            if padding == "same" and any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"padding_mode must be one of {_PADDING_MODES}, but got padding_mode='{padding_mode}'")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding
        self.dilation = dilation
        self.transposed = transposed
        self.output_padding = output_padding
        self.groups = groups
        self.padding_mode = padding_mode
        # The padding in F.pad's order (last dim first, each side), for the non-zero padding modes.
        if isinstance(padding, str):
            self._reversed_padding_repeated_twice = [0, 0] * len(kernel_size)
            if padding == "same":
                for d, k, i in zip(dilation, kernel_size, range(len(kernel_size) - 1, -1, -1)):
                    total_padding = d * (k - 1)
                    left_pad = total_padding // 2
                    self._reversed_padding_repeated_twice[2 * i] = left_pad
                    self._reversed_padding_repeated_twice[2 * i + 1] = total_padding - left_pad
        else:
            self._reversed_padding_repeated_twice = _reverse_repeat_tuple(padding, 2)
        if transposed:
            shape = (in_channels, out_channels // groups, *kernel_size)
        else:
            shape = (out_channels, in_channels // groups, *kernel_size)
        _weight_and_bias(self, shape, out_channels, bias, factory_kwargs)
        self.reset_parameters()

    def reset_parameters(self):
        """weight and bias from U(-1/sqrt(fan_in), 1/sqrt(fan_in)), as PyTorch's."""
        _reset_fan_in_uniform(self.weight, self.bias)

    def extra_repr(self):
        s = "{in_channels}, {out_channels}, kernel_size={kernel_size}, stride={stride}"
        if self.padding != (0,) * len(self.padding):
            s += ", padding={padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += ", dilation={dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += ", output_padding={output_padding}"
        if self.groups != 1:
            s += ", groups={groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += ", padding_mode={padding_mode}"
        return s.format(**self.__dict__)

    def __setstate__(self, state):
        super().__setstate__(state)
        if not hasattr(self, "padding_mode"):
            self.padding_mode = "zeros"

    def _conv_forward(self, input, weight, bias):
        conv = self._functional
        if self.padding_mode != "zeros":
            padded = F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            return conv(padded, weight, bias, self.stride, self._to_tuple(0), self.dilation, self.groups)
        return conv(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input):
        return self._conv_forward(input, self.weight, self.bias)


class _Conv(_ConvNd):
    """Conv1d/2d/3d's constructor: each argument one value or one per spatial dim (`_to_tuple`)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None):
        tup = self._to_tuple
        padding_ = padding if isinstance(padding, str) else tup(padding)
        super().__init__(in_channels, out_channels, tup(kernel_size), tup(stride), padding_, tup(dilation), False,
                         tup(0), groups, bias, padding_mode, device=device, dtype=dtype)


class Conv1d(_Conv):
    """A 1-D convolution over an (N, C_in, L) or (C_in, L) input."""

    _functional = staticmethod(_C.conv1d)  # F.conv1d itself
    _to_tuple = staticmethod(_single)


class Conv2d(_Conv):
    """A 2-D convolution over an (N, C_in, H, W) or (C_in, H, W) input."""

    _functional = staticmethod(_C.conv2d)  # F.conv2d itself
    _to_tuple = staticmethod(_pair)


class Conv3d(_Conv):
    """A 3-D convolution over an (N, C_in, D, H, W) or (C_in, D, H, W) input."""

    _functional = staticmethod(F.conv3d)
    _to_tuple = staticmethod(_triple)


class _ConvTransposeNd(_ConvNd):
    """A transposed convolution: the gradient of a convolution with respect to its input."""

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation, transposed,
                 output_padding, groups, bias, padding_mode, device=None, dtype=None):
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {self.__class__.__name__}')
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, transposed,
                         output_padding, groups, bias, padding_mode, device=device, dtype=dtype)

    def _output_padding(self, input, output_size, stride, padding, kernel_size, num_spatial_dims, dilation=None):
        """The output padding giving `output_size` (checked to be reachable), or the module's own."""
        if output_size is None:
            return _single(self.output_padding)
        has_batch_dim = input.dim() == num_spatial_dims + 2
        num_non_spatial_dims = 2 if has_batch_dim else 1
        output_size = list(output_size)
        if len(output_size) == num_non_spatial_dims + num_spatial_dims:
            output_size = output_size[num_non_spatial_dims:]
        if len(output_size) != num_spatial_dims:
            raise ValueError(f"ConvTranspose{num_spatial_dims}D: for {input.dim()}D input, output_size must have "
                             f"{num_spatial_dims} or {num_non_spatial_dims + num_spatial_dims} elements (got "
                             f"{len(output_size)})")
        min_sizes, max_sizes = [], []
        for d in range(num_spatial_dims):
            dim_size = ((input.size(d + num_non_spatial_dims) - 1) * stride[d] - 2 * padding[d]
                        + (dilation[d] if dilation is not None else 1) * (kernel_size[d] - 1) + 1)
            min_sizes.append(dim_size)
            max_sizes.append(dim_size + stride[d] - 1)
        for size, min_size, max_size in zip(output_size, min_sizes, max_sizes):
            if size < min_size or size > max_size:
                raise ValueError(f"requested an output size of {output_size}, but valid sizes range from {min_sizes} "
                                 f"to {max_sizes} (for an input of {input.size()[2:]})")
        return [output_size[d] - min_sizes[d] for d in range(num_spatial_dims)]

    def forward(self, input, output_size=None):
        if self.padding_mode != "zeros":
            raise ValueError(f"Only `zeros` padding mode is supported for {type(self).__name__}")
        output_padding = self._output_padding(input, output_size, self.stride, self.padding, self.kernel_size,
                                              len(self.kernel_size), self.dilation)
        return self._functional(input, self.weight, self.bias, self.stride, self.padding, output_padding,
                                self.groups, self.dilation)


class _ConvTranspose(_ConvTransposeNd):
    """ConvTranspose1d/2d/3d's constructor: each argument one value or one per spatial dim (`_to_tuple`)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None):
        tup = self._to_tuple
        super().__init__(in_channels, out_channels, tup(kernel_size), tup(stride), tup(padding), tup(dilation), True,
                         tup(output_padding), groups, bias, padding_mode, device=device, dtype=dtype)


class ConvTranspose1d(_ConvTranspose):
    """A 1-D transposed convolution over an (N, C_in, L) or (C_in, L) input."""

    _functional = staticmethod(_C.conv_transpose1d)  # F.conv_transpose1d itself
    _to_tuple = staticmethod(_single)


class ConvTranspose2d(_ConvTranspose):
    """A 2-D transposed convolution over an (N, C_in, H, W) or (C_in, H, W) input."""

    _functional = staticmethod(_C.conv_transpose2d)  # F.conv_transpose2d itself
    _to_tuple = staticmethod(_pair)


class ConvTranspose3d(_ConvTranspose):
    """A 3-D transposed convolution over an (N, C_in, D, H, W) or (C_in, D, H, W) input."""

    _functional = staticmethod(F.conv_transpose3d)
    _to_tuple = staticmethod(_triple)


class _LazyConvXdMixin(LazyModuleMixin):
    """The lazy convolutions: in_channels from the first input, then the weight and bias materialized."""

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def initialize_parameters(self, input, *args, **kwargs):
        if self.has_uninitialized_params():
            self.in_channels = self._get_in_channels(input)
            if self.in_channels % self.groups != 0:
                raise ValueError("in_channels must be divisible by groups")
            if self.transposed:
                shape = (self.in_channels, self.out_channels // self.groups, *self.kernel_size)
            else:
                shape = (self.out_channels, self.in_channels // self.groups, *self.kernel_size)
            self.weight.materialize(shape)
            if self.bias is not None:
                self.bias.materialize((self.out_channels,))
            self.reset_parameters()

    def _get_in_channels(self, input):
        num_dims_no_batch = len(self.kernel_size) + 1  # the spatial dims and channels
        num_dims_batch = num_dims_no_batch + 1
        if input.dim() not in (num_dims_no_batch, num_dims_batch):
            raise RuntimeError(f"Expected {num_dims_no_batch}D (unbatched) or {num_dims_batch}D (batched) input to "
                               f"{self.__class__.__name__}, but got input of size: {input.shape}")
        return input.shape[1] if input.dim() == num_dims_batch else input.shape[0]

    def _lazy_parameters(self, bias, device, dtype):
        """The weight and (with bias) bias replaced by uninitialized parameters, as after the zero-channel init."""
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)


class _LazyConv(_LazyConvXdMixin):
    """LazyConv1d/2d/3d's constructor: Conv*d's without in_channels."""

    def __init__(self, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None):
        super().__init__(0, 0, kernel_size, stride, padding, dilation, groups, False, padding_mode, device=device,
                         dtype=dtype)
        self.out_channels = out_channels
        self._lazy_parameters(bias, device, dtype)


class _LazyConvTranspose(_LazyConvXdMixin):
    """LazyConvTranspose1d/2d/3d's constructor: ConvTranspose*d's without in_channels."""

    def __init__(self, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1, bias=True,
                 dilation=1, padding_mode="zeros", device=None, dtype=None):
        super().__init__(0, 0, kernel_size, stride, padding, output_padding, groups, False, dilation, padding_mode,
                         device=device, dtype=dtype)
        self.out_channels = out_channels
        self._lazy_parameters(bias, device, dtype)


class LazyConv1d(_LazyConv, Conv1d):
    """Conv1d whose in_channels comes from the first input (it then becomes a Conv1d)."""

    cls_to_become = Conv1d


class LazyConv2d(_LazyConv, Conv2d):
    """Conv2d whose in_channels comes from the first input (it then becomes a Conv2d)."""

    cls_to_become = Conv2d


class LazyConv3d(_LazyConv, Conv3d):
    """Conv3d whose in_channels comes from the first input (it then becomes a Conv3d)."""

    cls_to_become = Conv3d


class LazyConvTranspose1d(_LazyConvTranspose, ConvTranspose1d):
    """ConvTranspose1d whose in_channels comes from the first input (it then becomes a ConvTranspose1d)."""

    cls_to_become = ConvTranspose1d


class LazyConvTranspose2d(_LazyConvTranspose, ConvTranspose2d):
    """ConvTranspose2d whose in_channels comes from the first input (it then becomes a ConvTranspose2d)."""

    cls_to_become = ConvTranspose2d


class LazyConvTranspose3d(_LazyConvTranspose, ConvTranspose3d):
    """ConvTranspose3d whose in_channels comes from the first input (it then becomes a ConvTranspose3d)."""

    cls_to_become = ConvTranspose3d
