"""The `autocast:` policies of ops.yaml for the ops written in Python (nn.functional's linear, conv3d, ...):
the same casts as the generated C++ entries (ember/autocast.h), then the op runs with autocast suspended."""
import functools

from . import _C


def autocast_policy(cpu=None, cuda=None):
    """Decorates a Python op with its policy per device type: "lower", "fp32" or "promote" (None: none)."""
    policies = {"cpu": cpu, "cuda": cuda}

    def decorate(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            if not _C._is_any_autocast_enabled():  # the one check while autocast is off
                return fn(*args, **kwargs)
            return _autocast_call(fn, policies, args, kwargs)
        return wrapper
    return decorate


def _autocast_call(fn, policies, args, kwargs):
    from . import Tensor, float32
    tensors = [a for a in args if isinstance(a, Tensor)] + [v for v in kwargs.values() if isinstance(v, Tensor)]
    device = tensors[0].device.type if tensors else None
    policy = policies.get(device)
    if policy is None or not _C.is_autocast_enabled(device):
        return fn(*args, **kwargs)
    if policy == "lower":
        to = _C.get_autocast_dtype(device)
    elif policy == "fp32":
        to = float32
    else:
        to = _C._autocast_promote_type(device, tensors)

    def cast(v):
        return _C._autocast_cast(v, to, device) if isinstance(v, Tensor) else v
    args = [cast(a) for a in args]
    kwargs = {k: cast(v) for k, v in kwargs.items()}
    mask = _C._autocast_suspend()
    try:
        return fn(*args, **kwargs)
    finally:
        _C._autocast_restore(mask)
