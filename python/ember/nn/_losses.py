"""The losses of ember.nn.functional, as torch.nn.functional's: composites of ember ops (their
backward comes from autograd) with PyTorch's signatures, reduction strings and legacy
size_average/reduce handling. functional.py re-exports them."""
import math
import warnings

from .._autocast_policy import autocast_policy
from .. import _C
from .._C import _nn

# Composites of ember ops (their backward comes from autograd), with torch.nn.functional's
# signatures, its reduction strings and its legacy size_average/reduce handling.
__all__ = [
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "cross_entropy", "huber_loss", "l1_loss",
    "mse_loss", "nll_loss", "smooth_l1_loss", "cosine_embedding_loss", "gaussian_nll_loss", "hinge_embedding_loss",
    "kl_div", "margin_ranking_loss", "multilabel_soft_margin_loss", "poisson_nll_loss", "soft_margin_loss",
    "triplet_margin_loss", "triplet_margin_with_distance_loss",
]

def _legacy_reduction(size_average, reduce):
    """PyTorch's _Reduction.legacy_get_string: the old booleans mapped to a reduction, with its warning."""
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    reduction = "mean" if (size_average and reduce) else ("sum" if reduce else "none")
    warnings.warn(f"size_average and reduce args will be deprecated, please use reduction='{reduction}' instead.",
                  stacklevel=3)
    return reduction


def _check_reduction(reduction):
    if reduction == "elementwise_mean":
        warnings.warn("reduction='elementwise_mean' is deprecated. Please use reduction='mean' instead.",
                      stacklevel=3)
        return "mean"
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return reduction


def _reduce(loss, reduction):
    if reduction == "mean":
        return loss.mean()
    return loss.sum() if reduction == "sum" else loss


def _broadcast_shape(name, a, b):
    shape = []
    for x, y in zip(reversed([1] * (len(b) - len(a)) + list(a)), reversed([1] * (len(a) - len(b)) + list(b))):
        if x != y and x != 1 and y != 1:
            dim = max(len(a), len(b)) - 1 - len(shape)  # counted from the left, as PyTorch's
            raise RuntimeError(f"The size of tensor a ({x}) must match the size of tensor b ({y}) at "
                               f"non-singleton dimension {dim}")
        shape.append(y if x == 1 else x)
    return tuple(reversed(shape))


def _pointwise_pair(name, input, target, size_average, reduce, reduction):
    """The shared prologue of the pointwise regression losses: size warning, legacy args, broadcasting."""
    if target.size() != input.size():
        warnings.warn(f"Using a target size ({target.size()}) that is different to the input size "
                      f"({input.size()}). This will likely lead to incorrect results due to broadcasting. "
                      "Please ensure they have the same size.", stacklevel=3)
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    shape = _broadcast_shape(name, input.shape, target.shape)
    # as PyTorch's broadcast_tensors: a tensor already of the shape is passed as is (no ExpandBackward0)
    return (input if input.shape == shape else input.expand(shape),
            target if target.shape == shape else target.expand(shape), reduction)


def _weighted(loss_op, a, b, input, weight, reduction, mean_over_weights=True):
    """PyTorch's per-element `weight` of mse_loss/l1_loss/huber_loss, applied to the unreduced loss:
    'mean' divides by the weights' sum (huber_loss: by the element count)."""
    if weight.size() != input.size():
        raise ValueError("Weights and input must have the same size.")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"Invalid reduction mode: {reduction}. Expected one of 'none', 'mean', 'sum'.")
    loss = loss_op(a, b, _REDUCTION_ENUM["none"]) * weight
    if reduction == "mean":
        return loss.sum() / weight.sum() if mean_over_weights else loss.mean()
    return _reduce(loss, reduction)


_REDUCTION_ENUM = {"none": 0, "mean": 1, "sum": 2}  # torch.nn._reduction.get_enum


def _reduction_code(reduction):
    return _REDUCTION_ENUM[_check_reduction(reduction)]


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean squared error (input - target)^2, reduced."""
    a, b, reduction = _pointwise_pair("mse_loss", input, target, size_average, reduce, reduction)
    if weight is not None:
        return _weighted(_nn.mse_loss, a, b, input, weight, reduction)
    return _nn.mse_loss(a, b, _reduction_code(reduction))


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean absolute error |input - target|, reduced."""
    a, b, reduction = _pointwise_pair("l1_loss", input, target, size_average, reduce, reduction)
    if weight is not None:
        return _weighted(_nn.l1_loss, a, b, input, weight, reduction)
    return _nn.l1_loss(a, b, _reduction_code(reduction))


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta (beta=0 is l1_loss)."""
    a, b, reduction = _pointwise_pair("smooth_l1_loss", input, target, size_average, reduce, reduction)
    if beta == 0.0:
        return _nn.l1_loss(a, b, _reduction_code(reduction))
    return _nn.smooth_l1_loss(a, b, _reduction_code(reduction), beta)


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta)."""
    a, b, reduction = _pointwise_pair("huber_loss", input, target, None, None, reduction)
    if weight is not None:
        return _weighted(lambda x, y, r: _nn.huber_loss(x, y, r, delta), a, b, input, weight, reduction,
                         mean_over_weights=False)
    return _nn.huber_loss(a, b, _reduction_code(reduction), delta)


def _reduction_enum(size_average, reduce, reduction):
    """PyTorch's _Reduction.get_enum (legacy_get_enum with the old booleans): 0 none, 1 mean, 2 sum."""
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    return ("none", "mean", "sum").index(_check_reduction(reduction))


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """-(t log(x) + (1 - t) log(1 - x)), each log clamped at -100 as PyTorch's."""
    reduction_enum = _reduction_enum(size_average, reduce, reduction)
    if target.size() != input.size():
        raise ValueError(f"Using a target size ({target.size()}) that is different to the input size "
                         f"({input.size()}) is deprecated. Please ensure they have the same size.")
    if weight is not None:
        weight = weight.expand(_broadcast_shape("binary_cross_entropy", target.size(), weight.size()))
    return _nn.binary_cross_entropy(input, target, weight, reduction_enum)


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,
                                     reduction="mean", pos_weight=None):
    """binary_cross_entropy(sigmoid(x), t) computed stably: (1 - t) x - (1 + (pw - 1) t) logsigmoid(x)."""
    reduction_enum = _reduction_enum(size_average, reduce, reduction)
    if target.size() != input.size():
        raise ValueError(f"Target size ({target.size()}) must be the same as input size ({input.size()})")
    return _C.binary_cross_entropy_with_logits(input, target, weight, pos_weight, reduction_enum)


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    """Negative log-likelihood: -input[n, target[n]] * weight[target[n]], for (C), (N, C) or (N, C, d1, ...)."""
    return _nn.nll_loss_nd(input, target, weight, _reduction_enum(size_average, reduce, reduction), ignore_index)


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                  reduction="mean", label_smoothing=0.0):
    """log_softmax over the class dimension, then nll_loss (class indices) or -sum(p log q) (probabilities)."""
    return _nn.cross_entropy_loss(input, target, weight, _reduction_enum(size_average, reduce, reduction),
                                  ignore_index, label_smoothing)


def _reduction_arg(size_average, reduce, reduction):
    if size_average is not None or reduce is not None:
        return _legacy_reduction(size_average, reduce)
    return _check_reduction(reduction)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """target * (log(target) - input) (input holds log-probabilities); 'batchmean' divides the sum by the batch."""
    if size_average is not None or reduce is not None:
        reduction_enum = _reduction_enum(size_average, reduce, "mean")
    else:
        if reduction == "mean":
            warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the support size."
                          "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
                          "'mean' will be changed to behave the same as 'batchmean' in the next major release.",
                          stacklevel=2)
        reduction_enum = _reduction_enum(None, None, "sum" if reduction == "batchmean" else reduction)
    loss = _C.kl_div(input, target, reduction_enum, log_target=log_target)
    return loss / input.shape[0] if reduction == "batchmean" and input.dim() != 0 else loss


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-08, reduce=None,
                     reduction="mean"):
    """exp(input) - target * input (log_input) or input - target * log(input + eps); full adds Stirling's term."""
    reduction = _reduction_arg(size_average, reduce, reduction)
    return _C.poisson_nll_loss(input, target, log_input, full, eps, _REDUCTION_ENUM[reduction])


def gaussian_nll_loss(input, target, var, full=False, eps=1e-06, reduction="mean"):
    """0.5 (log(var) + (input - target)^2 / var), var clamped at eps (the clamp is not differentiated)."""
    if isinstance(var, (int, float)):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = input.new_full(input.shape, float(var))
    elif bool((var < 0).any()):
        raise ValueError("var has negative entry/entries")
    if var.size() != input.size():
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif not (input.dim() == var.dim()
                  and sum(v for i, v in zip(input.shape, var.shape) if i != v) == 1):
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    # PyTorch clamps under no_grad: the gradient passes through the clamp unchanged.
    var = var + (_C.clamp(var, min=eps) - var).detach()
    loss = 0.5 * (_C.log(var) + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


def margin_ranking_loss(input1, input2, target, margin=0, size_average=None, reduce=None, reduction="mean"):
    """max(0, -target * (input1 - input2) + margin)."""
    reduction = _reduction_arg(size_average, reduce, reduction)
    if input1.dim() != input2.dim() or input1.dim() != target.dim():
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension but got sizes: "
                           f"input1: {input1.size()}, input2: {input2.size()}, target: {target.size()} ")
    return _C.margin_ranking_loss(input1, input2, target, margin, _REDUCTION_ENUM[reduction])


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"):
    """input where target is 1, max(0, margin - input) where target is -1."""
    reduction = _reduction_arg(size_average, reduce, reduction)
    return _C.hinge_embedding_loss(input, target, margin, _REDUCTION_ENUM[reduction])


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """log(1 + exp(-target * input)), computed as softplus so that it does not overflow."""
    return _nn.soft_margin_loss(input, target, _reduction_enum(size_average, reduce, reduction))


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """-(t logsigmoid(x) + (1 - t) logsigmoid(-x)), averaged over the classes (last dimension)."""
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    loss = -(target * _nn.log_sigmoid(input) + (1 - target) * _nn.log_sigmoid(-input))
    if weight is not None:
        loss = loss * weight
    loss = loss.sum(input.dim() - 1) / input.shape[-1]
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    return _reduce(loss, reduction)


def cosine_embedding_loss(input1, input2, target, margin=0, size_average=None, reduce=None, reduction="mean"):
    """1 - cos(input1, input2) where target is 1, max(0, cos - margin) where target is -1."""
    reduction = _reduction_arg(size_average, reduce, reduction)
    return _C.cosine_embedding_loss(input1, input2, target, margin, _REDUCTION_ENUM[reduction])


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-06, swap=False, size_average=None,
                        reduce=None, reduction="mean"):
    """max(0, margin + d(anchor, positive) - d(anchor, negative)), d the p-norm distance over the last dim."""
    reduction = _reduction_arg(size_average, reduce, reduction)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    return _C.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap, _REDUCTION_ENUM[reduction])


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None, margin=1.0, swap=False,
                                      reduction="mean"):
    """triplet_margin_loss with any distance_function(x1, x2) (pairwise_distance by default), as PyTorch's."""
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    dims = (anchor.dim(), positive.dim(), negative.dim())
    if len(set(dims)) != 1:
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {dims[0]}D, positive {dims[1]}D, and negative {dims[2]}D "
                           "inputs")
    distance = _C.pairwise_distance if distance_function is None else distance_function
    d_pos = distance(anchor, positive)
    d_neg = distance(anchor, negative)
    if swap:
        d_neg = _C.minimum(d_neg, distance(positive, negative))
    return _reduce(_C.clamp_min(margin + d_pos - d_neg, 0), reduction)


# ---------------------------------------------------------------- multi-class margin losses (issue 12)
__all__ += ["multi_margin_loss", "multilabel_margin_loss"]


def _margin_loss_frame(input):
    """PyTorch's shape rule of the multi-class margin losses: a (C) vector, a 0-d scalar (one class) or
    a (N, C) matrix (N may be 0), returned as (N, C)."""
    dim = input.dim()
    if not ((dim == 2 and input.size(1) != 0) or (dim == 1 and input.size(0) != 0) or dim == 0):
        raise RuntimeError(f"Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
                           f"{list(input.shape)}")
    return input.reshape(1, -1) if dim < 2 else input


def _check_long_target(target):
    if target.dtype != _C.int64:
        raise RuntimeError(f"expected scalar type Long but found {str(target.dtype).split('.')[-1].capitalize()}")


def _per_sample(loss, reduction, scalar):
    """The reduced loss, or with 'none' the per-sample loss ((N), or 0-d when `scalar`, as PyTorch's)."""
    return loss.reshape(()) if reduction == "none" and scalar else _reduce(loss, reduction)


@autocast_policy(cpu="fp32", cuda="fp32")
def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None,
                      reduction="mean"):
    """sum over classes i != y of max(0, margin - x[y] + x[i])^p (times weight[y]), divided by the class count."""
    reduction = ("none", "mean", "sum")[_reduction_enum(size_average, reduce, reduction)]
    if p != 1 and p != 2:
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.dim() != 1:
        raise ValueError("weight must be one-dimensional")
    x = _margin_loss_frame(input)
    n, classes = x.shape
    _check_long_target(target)
    if target.numel() != n or target.dim() > 1:
        raise RuntimeError(f"multi_margin_loss: target tensor should be 1-D with size equal to the number of input "
                           f"samples (batch size). Expected target size [{n}], but got {list(target.shape)}. Input "
                           f"has shape {list(input.shape)}.")
    if weight is not None and weight.numel() != classes:
        raise RuntimeError(f"inconsistent weight size, expected {classes} but got {list(weight.shape)}")
    scalar_target = target.dim() == 0
    target = target.reshape(n, 1)
    if n and bool(((target < 0) | (target >= classes)).any()):
        raise RuntimeError("target out of range")
    # relu, not clamp: PyTorch's kernel passes no gradient where the margin term is exactly 0.
    z = _C.relu(margin - x.gather(1, target) + x)
    if p == 2:
        z = z * z
    if weight is not None:
        z = z * weight.gather(0, target.reshape(-1)).reshape(n, 1)
    z = z * (1 - _nn.one_hot(target.reshape(-1), classes).to(z.dtype))  # the target class adds nothing
    return _per_sample(z.sum(1) / classes, reduction, scalar_target)


@autocast_policy(cpu="fp32", cuda="fp32")
def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """sum over target classes j and non-target classes i of max(0, 1 - (x[j] - x[i])), divided by the
    class count; each row of `target` lists its classes up to the first -1."""
    reduction = ("none", "mean", "sum")[_reduction_enum(size_average, reduce, reduction)]
    x = _margin_loss_frame(input)
    n, classes = x.shape
    _check_long_target(target)
    if (target.dim() > 1 or target.numel() != classes) if input.dim() < 2 else target.shape != x.shape:
        raise RuntimeError(f"inconsistent target size: {list(target.shape)} for input of size: "
                           f"{list(input.shape)}")
    unbatched = target.dim() <= 1
    target = target.reshape(n, classes)
    if bool(((target < -1) | (target >= classes)).any()):
        raise RuntimeError("argument #2 'target' is out of range")
    listed = _C.cumprod((target != -1).to(x.dtype), 1)  # 1 up to the first -1
    rows = target.clamp_min(0)
    is_target = x.new_zeros(x.shape).scatter_add(1, rows, listed) > 0
    pairs = _C.relu(1 - x.gather(1, rows).unsqueeze(2) + x.unsqueeze(1))  # (N, listed j, class i)
    pairs = pairs * (listed.unsqueeze(2) * (~is_target).to(x.dtype).unsqueeze(1))
    return _per_sample(pairs.sum((1, 2)) / classes, reduction, unbatched)


# ---------------------------------------------------------------- linear + cross entropy (issue 12)
__all__ += ["linear_cross_entropy"]


def linear_cross_entropy(input, linear_weight, target, *, linear_bias=None, weight=None, reduction="mean",
                         ignore_index=None, label_smoothing=0.0, options=None):
    """cross_entropy(linear(input, linear_weight, linear_bias), target): linear_weight (num_classes,
    *out_features, in_features) gives (N, num_classes, *out_features) logits. `options` is accepted
    and checked as PyTorch's; ember computes in one piece (chunking only saves PyTorch memory)."""
    if input.dim() < 1 or input.dim() > 2:
        raise RuntimeError(f"expected input with dimensionality 1 or 2, got {input.dim()}")
    if linear_weight.dim() < 2:
        raise RuntimeError(f"expected linear_weight with dimensionality at least 2, got {linear_weight.dim()}")
    batch, in_features = tuple(input.shape[:-1]), input.shape[-1]
    if in_features != linear_weight.shape[-1]:
        raise RuntimeError(f"expected equal input and linear_weight last dimensions (in_features), got "
                           f"{input.shape[-1]} and {linear_weight.shape[-1]}, respectively")
    num_classes, out_features = linear_weight.shape[0], tuple(linear_weight.shape[1:-1])
    if linear_bias is not None and tuple(linear_bias.shape) != (num_classes, *out_features):
        raise RuntimeError(f"expected linear_bias shape {(num_classes, *out_features)}, got "
                           f"{tuple(linear_bias.shape)}")
    if out_features and not batch:
        raise RuntimeError(f"K-dimensional loss defined by linear_weight shape {tuple(linear_weight.shape)} requires "
                           f"batched input, (N, {in_features}), got unbatched input with shape {tuple(input.shape)}")
    logits_shape = (*batch, num_classes, *out_features)
    if tuple(target.shape) == logits_shape and ignore_index is not None:
        raise RuntimeError("ignore_index cannot be specified when target contains probabilities")
    if options is not None and (out_features or reduction not in ("mean", "sum", "none") or label_smoothing != 0.0
                                or target.dtype != _C.int64):
        bias_shape = tuple(linear_bias.shape) if linear_bias is not None else None
        warnings.warn("linear_cross_entropy: ``options`` ignored; chunked path needs reduction in "
                      "{'mean','sum','none'}, label_smoothing == 0, target.dtype == int64, out_features == (). Got "
                      f"reduction={reduction!r}, label_smoothing={label_smoothing}, target.dtype={target.dtype}, "
                      f"out_features={out_features}, tracing=False, linear_bias.shape={bias_shape}.", stacklevel=2)
    rows = num_classes * math.prod(out_features)
    logits = _C.matmul(input, linear_weight.reshape(rows, in_features).t())
    if linear_bias is not None:
        logits = logits + linear_bias.reshape(rows)
    return cross_entropy(logits.reshape(logits_shape), target, weight=weight, reduction=reduction,
                         ignore_index=-100 if ignore_index is None else ignore_index, label_smoothing=label_smoothing)
