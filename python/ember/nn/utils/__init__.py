"""ember.nn.utils, as torch.nn.utils: gradient clipping, parameter/vector conversion, weight and
spectral norm."""
from .clip_grad import (  # noqa: F401
    _clip_grads_with_norm_ as clip_grads_with_norm_,
    _get_total_norm as get_total_norm,
    clip_grad_norm,
    clip_grad_norm_,
    clip_grad_value_,
)
from .convert_parameters import parameters_to_vector, vector_to_parameters  # noqa: F401
from .spectral_norm import remove_spectral_norm, spectral_norm  # noqa: F401
from .weight_norm import remove_weight_norm, weight_norm  # noqa: F401
from . import rnn  # noqa: F401  (PackedSequence, pad/pack)

__all__ = [
    "clip_grad_norm",
    "clip_grad_norm_",
    "clip_grads_with_norm_",
    "clip_grad_value_",
    "get_total_norm",
    "parameters_to_vector",
    "remove_spectral_norm",
    "rnn",
    "remove_weight_norm",
    "spectral_norm",
    "vector_to_parameters",
    "weight_norm",
]
