"""Normalization modules, as torch.nn.modules.normalization: LayerNorm, GroupNorm, RMSNorm and the
local response norms, thin modules over ember.nn.functional."""
import numbers

import ember

from ...autograd.function import Function, once_differentiable
from .. import functional as F, init
from ..parameter import Parameter
from .module import Module

__all__ = ["LocalResponseNorm", "CrossMapLRN2d", "LayerNorm", "GroupNorm", "RMSNorm"]


def _affine_parameters(module, shape, affine, bias, factory_kwargs):
    """Registers the norm's `weight` and `bias` of `shape` (None when not affine, bias None when bias=False)."""
    if affine:
        module.weight = Parameter(ember.empty(shape, **factory_kwargs))
        if bias:
            module.bias = Parameter(ember.empty(shape, **factory_kwargs))
        else:
            module.register_parameter("bias", None)
    else:
        module.register_parameter("weight", None)
        module.register_parameter("bias", None)


def _reset_affine(module):
    """weight = 1, bias = 0: the identity affine every norm starts from."""
    if module.weight is not None:
        init.ones_(module.weight)
    if getattr(module, "bias", None) is not None:
        init.zeros_(module.bias)


class LocalResponseNorm(Module):
    """Normalizes each element by the squares of its `size` neighbouring channels."""

    __constants__ = ["size", "alpha", "beta", "k"]

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1.0):
        super().__init__()
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.k = k

    def forward(self, input):
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


def _band(channels, lo, hi, dtype, device):
    """(channels, channels) 0/1 matrix: row c marks channels c + lo .. c + hi."""
    rows = [[1.0 if lo <= j - c <= hi else 0.0 for j in range(channels)] for c in range(channels)]
    return ember.tensor(rows, dtype=dtype, device=device)


def _channel_matmul(x, matrix):
    """sum_j matrix[c, j] * x[:, j, ...] for each channel c of an (N, C, ...) x."""
    return ember.matmul(x.movedim(1, -1), matrix.t()).movedim(-1, 1)


class _CrossMapLRN2dFunction(Function):
    """PyTorch's legacy cross-channel LRN with its own backward: the forward's window keeps channel 0
    in every sum, and the backward sums the output ratios over channels c - (size - (size - 1) / 2) ..
    c + (size - 1) / 2, which PyTorch uses instead of the forward window's transpose."""

    @staticmethod
    def forward(ctx, input, size, alpha, beta, k):
        channels = input.size(1)
        pre_pad = int((size - 1) / 2 + 1)
        window = _band(channels, 1 - pre_pad, pre_pad - 1, input.dtype, input.device)
        window[:, 0] = 1  # PyTorch's running sum never subtracts channel 0
        scale = _channel_matmul(input * input, window) * (alpha / size) + k
        output = input * scale.pow(-beta)
        ctx.save_for_backward(input, output, scale)
        ctx.size, ctx.alpha, ctx.beta = size, alpha, beta
        return output

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_output):
        input, output, scale = ctx.saved_tensors
        size = ctx.size
        inverse_pre_pad = int(size - (size - 1) / 2)
        band = _band(input.size(1), -inverse_pre_pad, size - 1 - inverse_pre_pad, input.dtype, input.device)
        accum = _channel_matmul(grad_output * output / scale, band)
        grad = scale.pow(-ctx.beta) * grad_output - (2 * ctx.alpha * ctx.beta / size) * input * accum
        return grad, None, None, None, None


class CrossMapLRN2d(Module):
    """The legacy (Lua Torch) cross-channel LRN of a 4D input: input * (k + alpha / size * window sum
    of squares)^-beta, with PyTorch's window and gradient."""

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1):
        super().__init__()
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.k = k

    def forward(self, input):
        if input.dim() != 4:
            raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.dim()}D instead.")
        return _CrossMapLRN2dFunction.apply(input, self.size, self.alpha, self.beta, self.k)

    extra_repr = LocalResponseNorm.extra_repr


def _shape_tuple(normalized_shape):
    if isinstance(normalized_shape, numbers.Integral):
        return (normalized_shape,)
    return tuple(normalized_shape)


class LayerNorm(Module):
    """Normalizes over the trailing `normalized_shape` dims, with an elementwise affine."""

    __constants__ = ["normalized_shape", "eps", "elementwise_affine"]

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True, device=None, dtype=None):
        factory_kwargs = {"device": device, "dtype": dtype}
        super().__init__()
        self.normalized_shape = _shape_tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        _affine_parameters(self, self.normalized_shape, elementwise_affine, bias, factory_kwargs)
        self.reset_parameters()

    reset_parameters = _reset_affine

    def forward(self, input):
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}, "
                f"bias={self.bias is not None}")


class GroupNorm(Module):
    """Normalizes each of `num_groups` groups of channels per sample, with a per-channel affine."""

    __constants__ = ["num_groups", "num_channels", "eps", "affine"]

    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, device=None, dtype=None, *, bias=True):
        factory_kwargs = {"device": device, "dtype": dtype}
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError(f"num_channels ({num_channels}) must be divisible by num_groups ({num_groups})")
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        _affine_parameters(self, num_channels, affine, bias, factory_kwargs)
        self.reset_parameters()

    reset_parameters = _reset_affine

    def forward(self, input):
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")


class RMSNorm(Module):
    """x / sqrt(mean(x^2) + eps) over the trailing `normalized_shape` dims, times an elementwise weight."""

    __constants__ = ["normalized_shape", "eps", "elementwise_affine"]

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, device=None, dtype=None):
        factory_kwargs = {"device": device, "dtype": dtype}
        super().__init__()
        self.normalized_shape = _shape_tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if self.elementwise_affine:
            self.weight = Parameter(ember.empty(self.normalized_shape, **factory_kwargs))
        else:
            self.register_parameter("weight", None)
        self.reset_parameters()

    reset_parameters = _reset_affine

    def forward(self, x):
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self):
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"
