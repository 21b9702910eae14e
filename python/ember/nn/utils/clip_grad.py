"""Gradient clipping, as torch.nn.utils.clip_grad: the total norm of many tensors seen as one
vector, and gradients scaled or clamped in place."""
import types
import warnings

import ember

__all__ = ["clip_grad_norm", "clip_grad_norm_", "clip_grad_value_"]


def _group_by_device_and_dtype(tensors):
    """The tensors in lists keyed by (device, dtype), in first-seen order, as PyTorch groups them."""
    groups = {}
    for t in tensors:
        groups.setdefault((t.device, t.dtype), []).append(t)
    return groups


# `foreach` is accepted and changes nothing: both ember devices (CPU, CUDA) have the multi-tensor
# path PyTorch's foreach=True asks for. The _foreach ops are taken when the build has them.
def _norms(tensors, norm_type):
    foreach_norm = getattr(ember, "_foreach_norm", None)
    if foreach_norm is not None:
        return list(foreach_norm(tensors, norm_type))
    return [ember.linalg.vector_norm(t, norm_type) for t in tensors]


@ember.no_grad()
def _get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    r"""Compute the norm of an iterable of tensors.

    The norm is computed over the norms of the individual tensors, as if the norms of
    the individual tensors were concatenated into a single vector.
    """
    tensors = [tensors] if isinstance(tensors, ember.Tensor) else list(tensors)
    norm_type = float(norm_type)
    if len(tensors) == 0:
        return ember.tensor(0.0)
    first_device = tensors[0].device
    norms = []
    for group in _group_by_device_and_dtype(tensors).values():
        norms.extend(_norms(group, norm_type))
    total_norm = ember.linalg.vector_norm(ember.stack([n.to(first_device) for n in norms]), norm_type)
    if error_if_nonfinite and ember.logical_or(total_norm.isnan(), total_norm.isinf()):
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from "
            "`parameters` is non-finite, so it cannot be clipped. To disable "
            "this error and scale the gradients by the non-finite norm anyway, "
            "set `error_if_nonfinite=False`")
    return total_norm


@ember.no_grad()
def _clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None):
    r"""Scale the gradients of an iterable of parameters given a pre-calculated total norm and desired max norm:
    grad = grad * min(max_norm / (total_norm + 1e-6), 1), in place."""
    if isinstance(parameters, ember.Tensor):
        parameters = [parameters]
    grads = [p.grad for p in parameters if p.grad is not None]
    max_norm = float(max_norm)
    if len(grads) == 0:
        return
    # Multiplying by a coefficient clamped to 1 (not `if coef < 1`) avoids reading the norm back from the device.
    clip_coef_clamped = ember.clamp(max_norm / (total_norm + 1e-6), max=1.0)
    foreach_mul_ = getattr(ember, "_foreach_mul_", None)
    for (device, _), group in _group_by_device_and_dtype(grads).items():
        coef = clip_coef_clamped.to(device)
        if foreach_mul_ is not None:
            foreach_mul_(group, coef)
        else:
            for g in group:
                g.mul_(coef)


@ember.no_grad()
def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    r"""Clip the gradient norm of an iterable of parameters.

    The norm is computed over the norms of the individual gradients of all parameters,
    as if the norms of the individual gradients were concatenated into a single vector.
    Gradients are modified in-place. Returns the total norm of the gradients (viewed as a single vector).
    """
    if isinstance(parameters, ember.Tensor):
        parameters = [parameters]
    else:
        is_generator = isinstance(parameters, types.GeneratorType)
        parameters = list(parameters)  # a generator would be exhausted by the first pass
        if is_generator and len(parameters) == 0:
            warnings.warn("`parameters` is an empty generator, no gradient clipping will occur.", stacklevel=3)
    grads = [p.grad for p in parameters if p.grad is not None]
    total_norm = _get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    _clip_grads_with_norm_(parameters, max_norm, total_norm, foreach)
    return total_norm


def clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    r"""Clip the gradient norm of an iterable of parameters.

    .. warning::
        This method is now deprecated in favor of :func:`ember.nn.utils.clip_grad_norm_`.
    """
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of `torch.nn.utils.clip_grad_norm_`.",
                  FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


@ember.no_grad()
def clip_grad_value_(parameters, clip_value, foreach=None):
    r"""Clip the gradients of an iterable of parameters to [-clip_value, clip_value], in place."""
    if isinstance(parameters, ember.Tensor):
        parameters = [parameters]
    clip_value = float(clip_value)
    grads = [p.grad for p in parameters if p.grad is not None]
    for grad in grads:
        grad.clamp_(min=-clip_value, max=clip_value)
