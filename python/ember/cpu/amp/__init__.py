"""ember.cpu.amp: the deprecated CPU spellings of ember.amp."""
from .autocast_mode import autocast
from .grad_scaler import GradScaler

__all__ = ["autocast", "GradScaler"]
