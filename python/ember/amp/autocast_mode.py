"""ember.autocast: regions where the ops with an `autocast:` policy in ops.yaml run in lower precision.

The state is per thread and per device type (ember._C's autocast functions); the casts happen in the
generated op entries (ember/autocast.h), so autograd records them.
"""
import collections
import functools
import warnings

from .. import _C

__all__ = ["autocast_decorator", "autocast", "is_autocast_available", "custom_fwd", "custom_bwd"]


def is_autocast_available(device_type):
    """Whether autocast is available on `device_type` ("cpu", "cuda")."""
    return _C._is_autocast_available(device_type)


def autocast_decorator(autocast_instance, func):
    @functools.wraps(func)
    def decorate_autocast(*args, **kwargs):
        with autocast_instance:
            return func(*args, **kwargs)
    return decorate_autocast


class autocast:
    """Context manager or decorator running its region in mixed precision on `device_type`
    (bfloat16 by default on CPU, float16 on CUDA; see ember.get_autocast_dtype)."""

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        self.fast_dtype = _C.get_autocast_dtype(device_type) if dtype is None else dtype
        self.device = device_type
        if not is_autocast_available(self.device):
            raise RuntimeError(f"User specified an unsupported autocast device_type '{self.device}'")
        from .. import bfloat16, float16
        supported = [bfloat16, float16]
        self._cache_enabled = _C.is_autocast_cache_enabled() if cache_enabled is None else cache_enabled
        device_name = self.device.upper()
        if enabled:
            if self.device == "cuda":
                from .. import cuda
                if not cuda.is_available():
                    warnings.warn("CUDA is not available or torch_xla is imported. Disabling autocast.", stacklevel=2)
                    enabled = False
                elif self.fast_dtype == bfloat16 and not cuda.is_bf16_supported():
                    raise RuntimeError("Current CUDA Device does not support bfloat16. Please switch dtype to float16.")
            elif self.fast_dtype not in supported:
                warnings.warn(f"In {device_name} autocast, but the target dtype is not supported. Disabling autocast.\n"
                              f"{device_name} Autocast only supports dtypes of "
                              + ", ".join(map(str, supported)) + " currently.", stacklevel=2)
                enabled = False
        self._enabled = enabled

    def __enter__(self):
        self.prev_cache_enabled = _C.is_autocast_cache_enabled()
        self.prev = _C.is_autocast_enabled(self.device)
        self.prev_fastdtype = _C.get_autocast_dtype(self.device)
        _C.set_autocast_enabled(self.device, self._enabled)
        _C.set_autocast_dtype(self.device, self.fast_dtype)
        _C.autocast_increment_nesting()
        _C.set_autocast_cache_enabled(self._cache_enabled)
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        if _C.autocast_decrement_nesting() == 0:
            _C.clear_autocast_cache()
        _C.set_autocast_enabled(self.device, self.prev)
        _C.set_autocast_dtype(self.device, self.prev_fastdtype)
        _C.set_autocast_cache_enabled(self.prev_cache_enabled)
        return False

    def __call__(self, func):
        if not callable(func):
            raise TypeError(
                f"autocast()(func) requires a callable, but got {type(func).__name__}. "
                f"Did you mean to use autocast as a context manager? For example:\n"
                f"    with torch.autocast(device_type=...):\n"
                f"        output = model(input)")
        return autocast_decorator(self, func)


def _cast(value, device_type, dtype):
    """Floating (non-float64) tensors of `device_type` in `value` (nested lists, tuples, dicts) cast to `dtype`."""
    from .. import Tensor, float64
    if isinstance(value, Tensor):
        eligible = value.is_floating_point() and value.device.type == device_type and value.dtype is not float64
        return value.to(dtype) if eligible else value
    if isinstance(value, (str, bytes)):
        return value
    if type(value).__module__ == "numpy":
        return value
    if isinstance(value, collections.abc.Mapping):
        return {_cast(k, device_type, dtype): _cast(v, device_type, dtype) for k, v in value.items()}
    if isinstance(value, collections.abc.Iterable):
        iterable = (_cast(v, device_type, dtype) for v in value)
        return type(value)(iterable) if isinstance(value, (list, tuple)) else iterable
    return value


def custom_fwd(fwd=None, *, device_type, cast_inputs=None):
    """Decorator for a custom autograd Function's forward: with `cast_inputs`, inside an autocast region
    its floating tensor inputs are cast to that dtype and it runs with autocast off."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        args[0]._dtype = _C.get_autocast_dtype(device_type)
        if cast_inputs is None:
            args[0]._fwd_used_autocast = _C.is_autocast_enabled(device_type)
            return fwd(*args, **kwargs)
        args[0]._fwd_used_autocast = False
        if _C.is_autocast_enabled(device_type):
            with autocast(device_type=device_type, enabled=False):
                return fwd(*_cast(args, device_type, cast_inputs), **_cast(kwargs, device_type, cast_inputs))
        return fwd(*args, **kwargs)
    return decorate_fwd


def custom_bwd(bwd=None, *, device_type):
    """Decorator for a custom autograd Function's backward: runs it with the autocast state of its forward."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        with autocast(device_type=device_type, enabled=args[0]._fwd_used_autocast, dtype=args[0]._dtype):
            return bwd(*args, **kwargs)
    return decorate_bwd
