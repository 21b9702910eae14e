"""ember.cuda.amp.autocast (deprecated): ember.amp.autocast("cuda", ...)."""
import functools
import warnings

from ...amp import autocast_mode as _amp
from ...amp._deprecated import device_autocast

__all__ = ["autocast", "custom_fwd", "custom_bwd"]


def _float16():
    from ... import float16
    return float16


autocast = device_autocast("cuda", _float16, __name__)


def custom_fwd(fwd=None, *, cast_inputs=None):
    """Deprecated: ember.amp.custom_fwd(device_type="cuda")."""
    warnings.warn("`torch.cuda.amp.custom_fwd(args...)` is deprecated. "
                  "Please use `torch.amp.custom_fwd(args..., device_type='cuda')` instead.",
                  FutureWarning, stacklevel=2)
    return functools.partial(_amp.custom_fwd, device_type="cuda")(fwd=fwd, cast_inputs=cast_inputs)


def custom_bwd(bwd):
    """Deprecated: ember.amp.custom_bwd(device_type="cuda")."""
    warnings.warn("`torch.cuda.amp.custom_bwd(args...)` is deprecated. "
                  "Please use `torch.amp.custom_bwd(args..., device_type='cuda')` instead.",
                  FutureWarning, stacklevel=2)
    return functools.partial(_amp.custom_bwd, device_type="cuda")(bwd)
