"""ember.nn.functional, as torch.nn.functional: the activations (kernels in
ember._C._nn and ember itself, declared in ops.yaml) with PyTorch's Python
signatures, `inplace=` flags and defaults; the losses, composites of ember ops."""
import math
import warnings

from .._autocast_policy import autocast_policy
from .. import _C
from .._C import _nn

__all__ = [
    "celu", "celu_", "elu", "elu_", "gelu", "glu", "hardshrink", "hardsigmoid", "hardswish", "hardtanh",
    "hardtanh_", "leaky_relu", "leaky_relu_", "log_softmax", "logsigmoid", "mish", "prelu", "relu", "relu6",
    "relu_", "rrelu", "rrelu_", "selu", "selu_", "sigmoid", "silu", "softmax", "softmin", "softplus",
    "softshrink", "softsign", "tanh", "tanhshrink", "threshold", "threshold_",
]

# Functions PyTorch's F takes straight from its kernels.
gelu = _nn.gelu
softplus = _nn.softplus
softshrink = _nn.softshrink
logsigmoid = _nn.log_sigmoid
glu = _nn.glu
softsign = _nn.softsign
tanhshrink = _nn.tanhshrink
hardshrink = _C.hardshrink
prelu = _C.prelu
elu_ = _nn.elu_
leaky_relu_ = _nn.leaky_relu_
selu_ = _C.selu_
celu_ = _C.celu_
rrelu_ = _C.rrelu_
threshold_ = _C.threshold_


def relu(input, inplace=False):
    """max(x, 0) of each element."""
    return input.relu_() if inplace else _C.relu(input)


def relu_(input):
    return input.relu_()


def elu(input, alpha=1.0, inplace=False):
    """x for x > 0, else alpha * (exp(x) - 1)."""
    return (_nn.elu_ if inplace else _nn.elu)(input, alpha)


def selu(input, inplace=False):
    """scale * elu(x, alpha) with the self-normalising constants."""
    return (_C.selu_ if inplace else _C.selu)(input)


def celu(input, alpha=1.0, inplace=False):
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""
    return (_C.celu_ if inplace else _C.celu)(input, alpha)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    """x for x > 0, else negative_slope * x."""
    return (_nn.leaky_relu_ if inplace else _nn.leaky_relu)(input, negative_slope)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """leaky_relu with random negative slopes in [lower, upper] when training, their mean otherwise."""
    return (_C.rrelu_ if inplace else _C.rrelu)(input, lower, upper, training)


def _check_hardtanh_input(input, min_val, max_val):
    # PyTorch's hardtanh_out refuses these two before clamping integers.
    dtype = getattr(input, "dtype", None)
    if dtype == _C.bool:
        raise RuntimeError("Bool inputs not supported for hardtanh")
    if dtype == _C.uint8 and (int(min_val) < 0 or int(max_val) < 0):
        raise RuntimeError("cannot do hardtanh on an unsigned type with negative limits")


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """Each element clamped to [min_val, max_val]."""
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    _check_hardtanh_input(input, min_val, max_val)
    return (_nn.hardtanh_ if inplace else _nn.hardtanh)(input, min_val, max_val)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    """In-place hardtanh."""
    return hardtanh(input, min_val, max_val, inplace=True)


def relu6(input, inplace=False):
    """min(max(0, x), 6)."""
    _check_hardtanh_input(input, 0, 6)
    return (_nn.relu6_ if inplace else _nn.relu6)(input)


def hardsigmoid(input, inplace=False):
    """relu6(x + 3) / 6."""
    return (_nn.hardsigmoid_ if inplace else _nn.hardsigmoid)(input)


def hardswish(input, inplace=False):
    """x * relu6(x + 3) / 6."""
    return (_nn.hardswish_ if inplace else _nn.hardswish)(input)


def silu(input, inplace=False):
    """x * sigmoid(x)."""
    return (_nn.silu_ if inplace else _nn.silu)(input)


def mish(input, inplace=False):
    """x * tanh(softplus(x))."""
    return (_nn.mish_ if inplace else _nn.mish)(input)


def threshold(input, threshold, value, inplace=False):
    """x where x > threshold, else value."""
    return (_C.threshold_ if inplace else _C.threshold)(input, threshold, value)


def sigmoid(input):
    return _C.sigmoid(input)


def tanh(input):
    return _C.tanh(input)


def _softmax_dim(name, ndim, stacklevel):
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X "
                  "as an argument.", stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """exp(x) / sum(exp(x)) along `dim`."""
    if dim is None:
        dim = _softmax_dim("softmax", input.dim(), _stacklevel)
    return _C.softmax(input, dim, dtype=dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """log(softmax(x)) along `dim`, computed stably."""
    if dim is None:
        dim = _softmax_dim("log_softmax", input.dim(), _stacklevel)
    return _C.log_softmax(input, dim, dtype=dtype)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    """softmax(-x) along `dim`."""
    if dim is None:
        dim = _softmax_dim("softmin", input.dim(), _stacklevel)
    if dtype is not None:
        input = input.to(dtype)
    return _C.softmax(-input, dim)


# ---------------------------------------------------------------- losses (issue 11)
from ._losses import *  # noqa: E402,F401,F403  (the losses, in their own file)
from ._losses import __all__ as _loss_names  # noqa: E402
__all__ += _loss_names
from ._ctc import ctc_loss  # noqa: E402,F401  (issue 12: its own file, a custom autograd Function)
__all__ += ["ctc_loss"]

# ---------------------------------------------------------------- dropout (issue 11)
# PyTorch's F checks p in Python (ValueError) and maps the 1d/2d/3d forms onto feature dropout.
__all__ += ["alpha_dropout", "dropout", "dropout1d", "dropout2d", "dropout3d", "feature_alpha_dropout"]


def _dropout_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _inplace_or_not(inplace_op, op, input, p, training, inplace):
    """op(input, ...), or inplace_op writing into input and returning input itself (as PyTorch's)."""
    if inplace:
        inplace_op(input, p, training)
        return input
    return op(input, p, training)


def dropout(input, p=0.5, training=True, inplace=False):
    """Zeroes each element with probability p and scales the rest by 1 / (1 - p) while training."""
    _dropout_p(p)
    if not training or p == 0:
        return input  # the same object, as PyTorch's
    return _inplace_or_not(_C.dropout_, _C.dropout, input, p, training, inplace)


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """dropout keeping the mean and variance of SELU activations."""
    _dropout_p(p)
    if not training or p == 0:
        return input
    return _inplace_or_not(_C.alpha_dropout_, _C.alpha_dropout, input, p, training, inplace)


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    """alpha_dropout of whole channels."""
    _dropout_p(p)
    return _inplace_or_not(_C.feature_alpha_dropout_, _C.feature_alpha_dropout, input, p, training, inplace)


def _channel_dropout(input, p, training, inplace, unbatched):
    if not unbatched:
        return _inplace_or_not(_C.feature_dropout_, _C.feature_dropout, input, p, training, inplace)
    if inplace:
        _C.feature_dropout_(input.unsqueeze(0), p, training)  # a view: writes into input
        return input
    return _C.feature_dropout(input.unsqueeze(0), p, training).squeeze(0)


def _warn_channel_dropout_dims(name, dim, spatial):
    warnings.warn(
        f"{name}: Received a {dim}-D input to {name}, which is deprecated and will result in an error in a "
        f"future release. To retain the behavior and silence this warning, please use dropout instead. Note that "
        f"{name} exists to provide channel-wise dropout on inputs with {spatial} spatial dimensions, a channel "
        f"dimension, and an optional batch dimension (i.e. {spatial + 1}D or {spatial + 2}D inputs).", stacklevel=3)


def dropout1d(input, p=0.5, training=True, inplace=False):
    """Channel-wise dropout of (N, C, L) or (C, L) inputs."""
    _dropout_p(p)
    if input.dim() not in (2, 3):
        raise RuntimeError(
            f"dropout1d: Expected 2D or 3D input, but received a {input.dim()}D input. Note that dropout1d exists "
            "to provide channel-wise dropout on inputs with 1 spatial dimension, a channel dimension, and an "
            "optional batch dimension (i.e. 2D or 3D inputs).")
    return _channel_dropout(input, p, training, inplace, input.dim() == 2)


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Channel-wise dropout of (N, C, H, W) inputs (a 3-D input is read as (N, C, L), as PyTorch does)."""
    _dropout_p(p)
    dim = input.dim()
    if dim not in (3, 4):
        _warn_channel_dropout_dims("dropout2d", dim, 2)
    if dim == 3:
        warnings.warn(
            "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout behavior is "
            "desired - input is interpreted as shape (N, C, L), where C is the channel dim. This behavior will "
            "change in a future release to interpret the input as one without a batch dimension, i.e. shape "
            "(C, H, W). To maintain the 1D channel-wise dropout behavior, please switch to using dropout1d "
            "instead.", stacklevel=2)
    return _channel_dropout(input, p, training, inplace, False)


def dropout3d(input, p=0.5, training=True, inplace=False):
    """Channel-wise dropout of (N, C, D, H, W) or (C, D, H, W) inputs."""
    _dropout_p(p)
    dim = input.dim()
    if dim not in (4, 5):
        _warn_channel_dropout_dims("dropout3d", dim, 3)
    return _channel_dropout(input, p, training, inplace, dim != 5)


# ---------------------------------------------------------------- attention (issue 11)
__all__ += ["scaled_dot_product_attention"]
scaled_dot_product_attention = _nn.scaled_dot_product_attention
# ---------------------------------------------------------------- conv (issue 11)
# The convolutions are ember's own functions (as torch.conv2d is F.conv2d); unfold and fold
# check the input's dims as PyTorch's do, then call im2col/col2im in ember._C._nn.
__all__ += ["conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d", "fold", "unfold"]

conv1d = _C.conv1d
conv2d = _C.conv2d
conv_transpose1d = _C.conv_transpose1d
conv_transpose2d = _C.conv_transpose2d


def _pair(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v, v)


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """The sliding kernel_size blocks of an (N, C, H, W) or (C, H, W) input as columns (N, C * kh * kw, L)."""
    if input.dim() not in (3, 4):
        raise NotImplementedError(f"Input Error: Only 3D or 4D input Tensors are supported (got {input.dim()}D)")
    return _nn.im2col(input, _pair(kernel_size), _pair(dilation), _pair(padding), _pair(stride))


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """The blocks of an (N, C * kh * kw, L) or (C * kh * kw, L) input summed back into an image of output_size."""
    if input.dim() not in (2, 3):
        raise NotImplementedError(
            f"Input Error: Only unbatched (2D) or batched (3D) input Tensors are supported (got {input.dim()}D)")
    return _nn.col2im(input, _pair(output_size), _pair(kernel_size), _pair(dilation), _pair(padding), _pair(stride))
# ---------------------------------------------------------------- blas (issue 11)
__all__ += ["cosine_similarity", "normalize", "pairwise_distance"]

cosine_similarity = _C.cosine_similarity
pairwise_distance = _C.pairwise_distance


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """input / max(||input||_p, eps) along `dim`, as PyTorch's (the norm kept as a dim of size 1)."""
    denom = _C.clamp(input.norm(p, dim, keepdim=True), min=eps)
    if out is None:
        return input / denom
    return _C.div(input, denom, out=out)
# ---------------------------------------------------------------- normalization and embeddings (issue 11)
__all__ += [
    "batch_norm", "layer_norm", "group_norm", "instance_norm", "rms_norm", "embedding", "embedding_bag", "one_hot",
]

one_hot = _nn.one_hot


def _verify_batch_size(size):
    size_prods = size[0]
    for s in size[2:]:
        size_prods *= s
    if size_prods == 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input size {size}")


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-05):
    """Normalizes each channel (dim 1) by the batch's statistics when training (updating the running
    stats in place with `momentum`), by the running stats otherwise; then weight and bias per channel."""
    if training:
        _verify_batch_size(input.size())
    return _C.batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, False)


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,
                  momentum=0.1, eps=1e-05):
    """Normalizes each channel of each sample over its spatial dims."""
    if use_input_stats:
        size = input.size()
        spatial = 1
        for s in size[2:]:
            spatial *= s
        if spatial == 1:
            raise ValueError(f"Expected more than 1 spatial element when training, got input size {size}")
    return _C.instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps, False)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05):
    """Normalizes over the trailing `normalized_shape` dims, then weight * x + bias."""
    return _C.layer_norm(input, _shape_list(normalized_shape), weight, bias, eps)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-05):
    """Normalizes each group of channels of each sample, then weight and bias per channel."""
    if input.dim() < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {input.dim()}")
    _verify_batch_size([input.size(0) * input.size(1) // num_groups, num_groups] + list(input.size()[2:]))
    return _C.group_norm(input, num_groups, weight, bias, eps)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """x / sqrt(mean(x^2) + eps) * weight over the trailing `normalized_shape` dims."""
    return _C.rms_norm(input, _shape_list(normalized_shape), weight, eps)


def _shape_list(shape):
    return [shape] if isinstance(shape, int) else list(shape)


def _padding_index(padding_idx, num_embeddings):
    """PyTorch's checks of padding_idx, and its value as a row (-1: none)."""
    if padding_idx is None:
        return -1
    if not -num_embeddings <= padding_idx < num_embeddings:
        raise AssertionError("Padding_idx must be within num_embeddings")
    return padding_idx + num_embeddings if padding_idx < 0 else padding_idx


def _renorm(weight, input, max_norm, norm_type):
    from .. import no_grad
    with no_grad():
        _C.embedding_renorm_(weight, input.contiguous(), max_norm, norm_type)


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False, sparse=False):
    """The rows of `weight` at `input`; max_norm renormalises the rows used, in place. sparse=True is accepted
    but the gradient of `weight` is dense (ember has no sparse tensors): the same values, which optimizers
    apply as PyTorch's do a sparse gradient."""
    padding_idx = _padding_index(padding_idx, weight.size(0))
    if max_norm is not None:
        _renorm(weight, input, max_norm, norm_type)
    return _C.embedding(weight, input, padding_idx, scale_grad_by_freq, sparse)


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False, mode="mean",
                  sparse=False, per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """Sums, means or maxes of the embedding rows of each bag: the rows of a 2-D input, or
    input[offsets[i]:offsets[i + 1]] of a 1-D one."""
    if per_sample_weights is not None and input.size() != per_sample_weights.size():
        raise ValueError(f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) is not None, then it "
                         f"must have the same shape as the input ({input.shape})")
    if weight.dim() != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension {weight.dim()}")
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated is a mini-batch of "
                             f"fixed length sequences. However, found offsets of type {type(offsets)}")
        offsets = _C.arange(0, input.numel(), input.size(1), dtype=input.dtype)
        include_last_offset = False  # as PyTorch's: one bag per row
        input = input.reshape(-1)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
    elif input.dim() == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.dim() != 1:
            raise ValueError("offsets has to be a 1D Tensor")
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.dim()}")
    modes = {"sum": 0, "mean": 1, "max": 2}
    if mode not in modes:
        raise ValueError("mode has to be one of sum, mean or max")
    if mode == "max" and scale_grad_by_freq:
        raise ValueError("max mode does not support scaling the gradient by the frequency")
    if mode == "max" and sparse:
        raise ValueError("max mode does not support sparse weights")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError("embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                                  f"supported for mode='sum' (got mode='{mode}'). Please open a feature request on "
                                  "GitHub.")
    padding_idx = _padding_index(padding_idx, weight.size(0))
    if max_norm is not None:
        _renorm(weight, input, max_norm, norm_type)
    return _C._embedding_bag_reduce(weight, input, offsets, modes[mode], per_sample_weights, include_last_offset,
                                    padding_idx, scale_grad_by_freq)
# ---------------------------------------------------------------- pool (issue 11)
# torch.nn.functional's Python signatures over the kernels in ember._C._nn and the top-level
# composites: stride=None means the kernel size, return_indices picks the *_with_indices form.
__all__ += [
    "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_max_pool1d", "adaptive_max_pool1d_with_indices",
    "adaptive_max_pool2d", "adaptive_max_pool2d_with_indices", "avg_pool1d", "avg_pool2d", "max_pool1d",
    "max_pool1d_with_indices", "max_pool2d", "max_pool2d_with_indices", "pad", "pixel_shuffle", "pixel_unshuffle",
]

# As torch.nn.functional's: pad is the kernel of torch._C._nn, the shuffles torch's own functions.
pad = _nn.pad
pixel_shuffle = _C.pixel_shuffle
pixel_unshuffle = _C.pixel_unshuffle


def _stride(stride):
    return [] if stride is None else stride


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    """The maximum of each window of the last dim, and its index."""
    return _C.max_pool1d_with_indices(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """The maximum of each window of the last dim (and the indices with return_indices)."""
    if return_indices:
        return max_pool1d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)
    return _C.max_pool1d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    """The maximum of each window of the last two dims, and its flat index in the plane."""
    return _nn.max_pool2d_with_indices(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """The maximum of each window of the last two dims (and the indices with return_indices)."""
    if return_indices:
        return max_pool2d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)
    return _C.max_pool2d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    """The mean of each window of the last dim."""
    return _C.avg_pool1d(input, kernel_size, _stride(stride), padding, ceil_mode, count_include_pad)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """The mean of each window of the last two dims."""
    return _nn.avg_pool2d(input, kernel_size, _stride(stride), padding, ceil_mode, count_include_pad,
                          divisor_override)


def _adaptive_size(output_size, input, n):
    """PyTorch's _list_with_default: None entries keep the input's size."""
    sizes = [output_size] * n if isinstance(output_size, int) else list(output_size)
    if len(sizes) == 1 and n > 1:
        sizes = sizes * n
    return [input.size(d - len(sizes)) if s is None else s for d, s in enumerate(sizes)]


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=False):
    """The maximum of each adaptive window of the last dim, and its index."""
    return _C.adaptive_max_pool1d(input, output_size)


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """The maximum of each adaptive window of the last dim (and the indices with return_indices)."""
    result = _C.adaptive_max_pool1d(input, output_size)
    return result if return_indices else result[0]


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=False):
    """The maximum of each adaptive window of the last two dims, and its flat index in the plane."""
    return _nn.adaptive_max_pool2d(input, _adaptive_size(output_size, input, 2))


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """The maximum of each adaptive window of the last two dims (and the indices with return_indices)."""
    result = adaptive_max_pool2d_with_indices(input, output_size)
    return result if return_indices else result[0]


def adaptive_avg_pool1d(input, output_size):
    """The mean of each adaptive window of the last dim."""
    return _C.adaptive_avg_pool1d(input, output_size)


def adaptive_avg_pool2d(input, output_size):
    """The mean of each adaptive window of the last two dims."""
    return _nn.adaptive_avg_pool2d(input, _adaptive_size(output_size, input, 2))


__all__ += ["interpolate", "upsample", "upsample_bilinear", "upsample_nearest"]

_INTERPOLATING = "linear | bilinear | bicubic | trilinear"


def _interpolate_sizes(input, size, scale_factor, recompute_scale_factor, mode):
    """torch.nn.functional.interpolate's argument rules: the output size, and the scales the kernel uses."""
    dim = input.dim() - 2
    spatial = list(input.shape[2:])
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    scales = None
    if size is not None:
        if isinstance(size, (list, tuple)):
            if len(size) != dim:
                raise ValueError(
                    f"Input and output must have the same number of spatial dimensions, but got input with spatial "
                    f"dimensions of {spatial} and output size of {size}. Please provide input tensor in (N, C, d1, "
                    "d2, ...,dK) format and output size in (o1, o2, ...,oK) format.")
            output_size = list(size)
        else:
            output_size = [size] * dim
    elif scale_factor is not None:
        if isinstance(scale_factor, (list, tuple)):
            if len(scale_factor) != dim:
                raise ValueError(
                    f"Input and scale_factor must have the same number of spatial dimensions, but got input with "
                    f"spatial dimensions of {spatial} and scale_factor of shape {scale_factor}. Please provide input "
                    "tensor in (N, C, d1, d2, ...,dK) format and scale_factor in (s1, s2, ...,sK) format.")
            scales = [float(s) for s in scale_factor]
        else:
            scales = [float(scale_factor)] * dim
        # as PyTorch's compute_output_size: the product truncated
        output_size = [int(n * s) for n, s in zip(spatial, scales)]
    else:
        raise ValueError("either size or scale_factor should be defined")
    if recompute_scale_factor and size is not None:
        raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
    if recompute_scale_factor or (mode == "area" and size is None):
        output_size = [math.floor(float(n) * s) for n, s in zip(spatial, scales)]
        scales = None
    return output_size, scales


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """Resamples the spatial dims (after batch and channel) of a 3-D, 4-D or 5-D input to `size` or by
    `scale_factor`: 'nearest', 'nearest-exact', 'linear' (3-D), 'bilinear' or 'bicubic' (4-D), 'trilinear' (5-D),
    'lanczos' (4-D, antialias=True) or 'area'; antialias=True filters 4-D bilinear/bicubic/lanczos as Pillow."""
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: " + _INTERPOLATING)
    elif align_corners is None:
        align_corners = False
    output_size, scales = _interpolate_sizes(input, size, scale_factor, recompute_scale_factor, mode)
    ndim = input.dim()
    if antialias and not (mode in ("bilinear", "bicubic", "lanczos") and ndim == 4):
        raise ValueError("Anti-alias option is restricted to bilinear, bicubic, and lanczos modes and requires a "
                         "4-D tensor as input")
    if ndim == 4 and mode == "lanczos":
        if align_corners:
            raise ValueError("Lanczos mode does not support align_corners=True")
        if not antialias:
            raise ValueError("Lanczos mode requires antialias=True")
    if antialias:
        from ._interpolate_aa import interpolate_aa
        return interpolate_aa(input, output_size, mode, align_corners, scales)
    if ndim in (3, 4, 5) and mode in ("nearest", "nearest-exact"):
        # PyTorch's entry points (and nodes: UpsampleNearest2DBackward0, ...) over ember's one _upsample kernel
        exact = "_upsample_nearest_exact" if mode == "nearest-exact" else "upsample_nearest"
        fn = getattr(_nn, f"{exact}{ndim - 2}d")
        return fn(input, output_size, *(scales if scales else [None] * (ndim - 2)))
    if ndim in (3, 4) and mode == "area":
        pool = _C.adaptive_avg_pool1d if ndim == 3 else _nn.adaptive_avg_pool2d
        return pool(input, output_size)
    if (ndim, mode) in ((3, "linear"), (4, "bilinear")):
        fn = _nn.upsample_linear1d if ndim == 3 else _nn.upsample_bilinear2d
        return fn(input, output_size, align_corners, *(scales if scales else [None] * (ndim - 2)))
    if ndim == 5 and mode == "area":
        from ._pool3d import adaptive_avg_pool3d
        return adaptive_avg_pool3d(input, output_size)
    if ndim == 5 and mode == "trilinear":
        return _nn.upsample_trilinear3d(input, output_size, align_corners, *(scales if scales else [None] * 3))
    if ndim == 4 and mode == "bicubic":
        h, w = tuple(scales) if scales else (None, None)
        return _nn.upsample_bicubic2d(input, output_size, align_corners, h, w)
    if mode in ("linear", "bilinear", "trilinear") and ndim in (3, 4, 5):
        needs = {"linear": 3, "bilinear": 4, "trilinear": 5}[mode]
        raise NotImplementedError(f"Got {ndim}D input, but {mode} mode needs {needs}D input")
    raise NotImplementedError(
        f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {ndim}D) for the modes: nearest | linear | "
        f"bilinear | bicubic | trilinear | lanczos | area | nearest-exact (got {mode})")


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """Deprecated alias of interpolate."""
    warnings.warn("nn.functional.upsample is deprecated. Use nn.functional.interpolate instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    """Deprecated: interpolate with mode='nearest'."""
    warnings.warn("nn.functional.upsample_nearest is deprecated. Use nn.functional.interpolate instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    """Deprecated: interpolate with mode='bilinear' and align_corners=True."""
    warnings.warn("nn.functional.upsample_bilinear is deprecated. Use nn.functional.interpolate instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


# ---------------------------------------------------------------- padpool (issue 11)
# torch.nn.functional's Python over ember._C._nn.max_unpool2d and avg_pool2d.
__all__ += ["local_response_norm", "max_unpool1d", "max_unpool2d"]


def _ntuple(value, n):
    return tuple(value) if isinstance(value, (list, tuple)) else (value,) * n


def _unpool_output_size(input, kernel_size, stride, padding, output_size):
    """PyTorch's: the default output size of the pool being inverted, or `output_size` checked against it."""
    default_size = [(input.size(d - len(kernel_size)) - 1) * stride[d] + kernel_size[d] - 2 * padding[d]
                    for d in range(len(kernel_size))]
    if output_size is None:
        ret = default_size
    else:
        output_size = list(output_size) if isinstance(output_size, (list, tuple)) else [output_size]
        if len(output_size) == len(kernel_size) + 2:
            output_size = output_size[2:]
        if len(output_size) != len(kernel_size):
            raise ValueError(f"output_size should be a sequence containing {len(kernel_size)} or "
                             f"{len(kernel_size) + 2} elements, but it has a length of '{len(output_size)}'")
        for d in range(len(kernel_size)):
            min_size, max_size = default_size[d] - stride[d], default_size[d] + stride[d]
            if not min_size < output_size[d] < max_size:
                raise ValueError(f'invalid output_size "{output_size}" (dim {d} must be between {min_size} and '
                                 f'{max_size})')
        ret = output_size
    for d in range(len(kernel_size)):
        if ret[d] < 0:
            raise ValueError("max_unpooling: output_size must contain non-negative spatial dimensions, but got "
                             f"output_size[{d}]={ret[d]}")
    return ret


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of max_pool1d: each element put back at its index, zeros elsewhere."""
    kernel_size = _ntuple(kernel_size, 1)
    stride = kernel_size if stride is None else _ntuple(stride, 1)
    size = _unpool_output_size(input, kernel_size, stride, _ntuple(padding, 1), output_size)
    return _nn.max_unpool2d(input.unsqueeze(-1), indices.unsqueeze(-1), list(size) + [1]).squeeze(-1)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of max_pool2d: each element put back at its index, zeros elsewhere."""
    kernel_size = _ntuple(kernel_size, 2)
    stride = kernel_size if stride is None else _ntuple(stride, 2)
    return _nn.max_unpool2d(input, indices,
                            _unpool_output_size(input, kernel_size, stride, _ntuple(padding, 2), output_size))


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """x / (k + alpha * mean of x^2 over `size` neighbouring channels)^beta, as PyTorch's (channels in dim 1)."""
    dim = input.dim()
    if dim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality                          input (got {dim} dimensions)")
    if input.numel() == 0:
        return input
    div = input.mul(input)
    # PyTorch pools 4-D and larger inputs with avg_pool3d over (size, 1, 1): the same as avg_pool2d
    # over (size, 1) with the trailing dims flattened into one.
    sizes = input.size()
    div = div.reshape(sizes[0], 1, sizes[1], -1)
    div = pad(div, (0, 0, size // 2, (size - 1) // 2))
    div = avg_pool2d(div, (size, 1), stride=1).squeeze(1).reshape(sizes)
    div = div.mul(alpha).add(k).pow(beta)
    return input / div


# ---------------------------------------------------------------- layers (issue 12)
# What the nn layer modules call that ember had no function for: linear and bilinear maps over
# matmul, conv3d and conv_transpose3d over their 2-D kernels (nn/_conv3d.py), channel_shuffle over reshapes.
from ._conv3d import conv3d, conv_transpose3d  # noqa: E402

__all__ += ["bilinear", "channel_shuffle", "conv3d", "conv_transpose3d", "linear", "native_channel_shuffle"]


@autocast_policy(cpu="lower", cuda="lower")
def linear(input, weight, bias=None):
    """y = input @ weight^T + bias, over the last dim of input."""
    if bias is not None and input.dim() == 2:
        return _C.addmm(bias, input, weight.t())
    if bias is not None and input.dim() > 2:  # as PyTorch: one addmm over the flattened batch (grad_fn ViewBackward0)
        output = _C.addmm(bias, input.flatten(0, -2), weight.t())
        return output.view(*input.shape[:-1], output.shape[-1])
    output = input.matmul(weight.t())
    return output if bias is None else output + bias


@autocast_policy(cuda="promote")
def bilinear(input1, input2, weight, bias=None):
    """y = x1^T A x2 + b for each output feature: weight (out, in1, in2), inputs (*, in1) and (*, in2)."""
    if input1.dim() != input2.dim():
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {input1.dim()} and {input2.dim()}")
    for d in range(input1.dim() - 1):
        if input1.size(d) != input2.size(d):
            raise RuntimeError(f"bilinear(): input batch dimensions do not match at dim {d}: got {input1.size(d)} "
                               f"and {input2.size(d)}")
    if input1.size(-1) != weight.size(1):
        raise RuntimeError(f"bilinear(): input1 size does not match weight size: got {input1.size(-1)} but "
                           f"expected {weight.size(1)}")
    if input2.size(-1) != weight.size(2):
        raise RuntimeError(f"bilinear(): input2 size does not match weight size: got {input2.size(-1)} but "
                           f"expected {weight.size(2)}")
    if bias is not None and bias.size(0) != weight.size(0):
        raise RuntimeError(f"bilinear(): bias size does not match weight size: got {bias.size(0)} but expected "
                           f"{weight.size(0)}")
    out_features, in1, in2 = weight.shape
    batch = list(input1.shape[:-1])
    # (B, in1) @ (in1, out * in2): each row's x1^T A_o for every o, then dotted with x2.
    left = input1.reshape(-1, in1).matmul(weight.permute(1, 0, 2).reshape(in1, out_features * in2))
    output = (left.reshape(-1, out_features, in2) * input2.reshape(-1, 1, in2)).sum(-1)
    if bias is not None:
        output = output + bias
    return output.reshape(batch + [out_features])


def native_channel_shuffle(input, groups):
    """The channels (dim 1) split into `groups` and interleaved: channel g * (C / groups) + i goes to i * groups + g."""
    if input.dim() <= 2:
        raise RuntimeError(f"channel_shuffle expects input with > 2 dims, but got input with sizes {list(input.shape)}")
    channels = input.size(1)
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of groups:{groups}")
    if channels % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {channels} channels and {groups} "
                           "groups.")
    shape = list(input.shape)
    grouped = input.reshape([shape[0], groups, channels // groups] + shape[2:])
    return grouped.transpose(1, 2).reshape(shape)


channel_shuffle = native_channel_shuffle


# ---------------------------------------------------------------- multi-head attention (issue 12)
from ._attention import (  # noqa: E402,F401  (in their own file)
    _canonical_mask, _in_projection, _in_projection_packed, _mha_shape_check, _none_or_dtype,
    multi_head_attention_forward,
)
__all__ += ["multi_head_attention_forward"]

from ._pool3d import *  # noqa: E402,F401,F403  (issue 12: the 3-D pools, composites in their own file)
from ._pool3d import __all__ as _pool3d_names  # noqa: E402

__all__ += _pool3d_names

from ._functional_extras import *  # noqa: E402,F401,F403  (lp pools, gumbel_softmax, pdist)
from ._functional_extras import __all__ as _extras_names  # noqa: E402

__all__ += _extras_names
from . import grad  # noqa: E402,F401  (F.grad is torch.nn.grad, as in PyTorch)

from ._grid_sample import affine_grid, grid_sample  # noqa: E402,F401  (composites, in their own file)

__all__ += ["affine_grid", "grid_sample"]
from ._fractional_pool import *  # noqa: E402,F401,F403
from ._fractional_pool import __all__ as _fractional_names  # noqa: E402

__all__ += _fractional_names
