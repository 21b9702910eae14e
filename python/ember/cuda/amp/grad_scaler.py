"""ember.cuda.amp.GradScaler (deprecated): ember.amp.GradScaler("cuda", ...)."""
from ...amp._deprecated import device_grad_scaler

__all__ = ["GradScaler"]

GradScaler = device_grad_scaler("cuda", __name__)
