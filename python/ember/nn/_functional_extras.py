"""torch.nn.functional's power-average pools, gumbel_softmax and pdist, as PyTorch's Python
composites of ember ops (so their gradients are the composites')."""
import warnings

import ember

__all__ = ["conv_tbc", "gumbel_softmax", "lp_pool1d", "lp_pool2d", "lp_pool3d", "pdist"]


def _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, n):
    from . import functional as F
    kernel = list(kernel_size) if isinstance(kernel_size, (list, tuple)) else [kernel_size] * n
    max_pool = (F.max_pool1d, F.max_pool2d, F.max_pool3d)[n - 1]
    avg_pool = (F.avg_pool1d, F.avg_pool2d, F.avg_pool3d)[n - 1]
    if isinstance(norm_type, (int, float)):
        if norm_type == float("inf"):
            return max_pool(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
        if norm_type == -float("inf"):
            return -max_pool(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    out = avg_pool(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    volume = 1
    for k in kernel:
        volume *= k
    # sign * relu(abs): a window whose sum of powers is zero gets a zero gradient, as PyTorch's.
    return (ember.sign(out) * F.relu(ember.abs(out))).mul(volume).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """Power-average pooling of the last dim: (sum of x^p over each window)^(1/p)."""
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 1)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """Power-average pooling of the last two dims: (sum of x^p over each window)^(1/p)."""
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 2)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """Power-average pooling of the last three dims: (sum of x^p over each window)^(1/p)."""
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 3)


def gumbel_softmax(logits, tau=1, hard=False, eps=1e-10, dim=-1):
    """A sample of the Gumbel-Softmax distribution of `logits`; with hard=True one-hot in value,
    differentiated as the soft sample (the straight-through trick)."""
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    gumbels = -ember.empty_like(logits).exponential_().log()  # ~Gumbel(0, 1)
    y_soft = ((logits + gumbels) / tau).softmax(dim)
    if not hard:
        return y_soft
    index = y_soft.max(dim, keepdim=True)[1]
    y_hard = ember.zeros_like(logits).scatter_(dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft


def pdist(input, p=2):
    """The p-norm distance between every pair of rows of a 2-D input: the upper triangle of
    cdist(input, input), row by row (N * (N - 1) / 2 values)."""
    if input.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.dim()}D")
    if not input.is_floating_point():
        raise RuntimeError("pdist only supports floating-point dtypes")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    n = input.shape[0]
    rows = [i for i in range(n) for _ in range(i + 1, n)]
    cols = [j for i in range(n) for j in range(i + 1, n)]
    if not rows:
        return input.new_empty((0,))
    index = ember.tensor([rows, cols], dtype=ember.int64, device=input.device)
    return ember.linalg.vector_norm(input[index[0]] - input[index[1]], p, dim=1)


def conv_tbc(input, weight, bias, pad=0):
    """A 1-D convolution of a (time, batch, channel) input with a (kernel, in, out) weight: conv1d
    over the channels-first views (a negative pad trims that many steps from each end)."""
    if input.dim() != 3:
        raise RuntimeError("Input must have 3 dims: time, batch, in_channel")
    if weight.dim() != 3:
        raise RuntimeError("Weight tensor must have 3 dims: kernel_width, in_channels, out_channels.")
    if bias.dim() != 1:
        raise RuntimeError("Bias must be 1-D")
    if bias.shape[0] != weight.shape[2]:
        raise RuntimeError("Bias size must equal dim 2 in the weight tensor (output channels).")
    if input.shape[2] != weight.shape[1]:
        raise RuntimeError("Input dim 2 (input channels) is not == dim 1 in the weight tensor")
    from . import functional as F
    if pad < 0:
        input, pad = input[-pad:input.shape[0] + pad], 0
    out = F.conv1d(input.permute(1, 2, 0), weight.permute(2, 1, 0), bias, padding=pad)
    return out.permute(2, 0, 1)
