"""ember.cpu.amp.GradScaler (deprecated): ember.amp.GradScaler("cpu", ...)."""
from ...amp._deprecated import device_grad_scaler

__all__ = ["GradScaler"]

GradScaler = device_grad_scaler("cpu", __name__)
