"""ember.cpu.amp.autocast (deprecated): ember.amp.autocast("cpu", ...)."""
from ...amp._deprecated import device_autocast

__all__ = ["autocast"]


def _bfloat16():
    from ... import bfloat16
    return bfloat16


autocast = device_autocast("cpu", _bfloat16, __name__)
