"""The deprecated per-device spellings (ember.cpu.amp, ember.cuda.amp): subclasses that warn as PyTorch's."""
import warnings

from . import autocast_mode, grad_scaler


def device_autocast(device_type, default_dtype, module):
    """`torch.<device>.amp.autocast(enabled, dtype, cache_enabled)`: ember.autocast(device_type, ...)."""

    class autocast(autocast_mode.autocast):
        def __init__(self, enabled=True, dtype=None, cache_enabled=True):
            warnings.warn(f"`torch.{device_type}.amp.autocast(args...)` is deprecated. "
                          f"Please use `torch.amp.autocast('{device_type}', args...)` instead.", FutureWarning,
                          stacklevel=2)
            super().__init__(device_type, enabled=enabled, dtype=default_dtype() if dtype is None else dtype,
                             cache_enabled=cache_enabled)

    autocast.__module__ = module
    autocast.__doc__ = f"See ember.autocast. ``torch.{device_type}.amp.autocast(args...)`` is deprecated."
    return autocast


def device_grad_scaler(device_type, module):
    """`torch.<device>.amp.GradScaler(...)`: ember.amp.GradScaler(device_type, ...)."""

    class GradScaler(grad_scaler.GradScaler):
        def __init__(self, init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000,
                     enabled=True):
            warnings.warn(f"`torch.{device_type}.amp.GradScaler(args...)` is deprecated. "
                          f"Please use `torch.amp.GradScaler('{device_type}', args...)` instead.", FutureWarning,
                          stacklevel=2)
            super().__init__(device_type, init_scale=init_scale, growth_factor=growth_factor,
                             backoff_factor=backoff_factor, growth_interval=growth_interval, enabled=enabled)

    GradScaler.__module__ = module
    GradScaler.__doc__ = f"See ember.amp.GradScaler. ``torch.{device_type}.amp.GradScaler(args...)`` is deprecated."
    return GradScaler
