"""ember.cpu: the CPU device module, as torch.cpu (the CPU is always available, and is one device)."""
__all__ = ["amp", "current_device", "device_count", "is_available", "synchronize"]


def is_available():
    """Always True: the CPU runs every op."""
    return True


def device_count():
    """1: the CPU counts as one device."""
    return 1


def current_device():
    return "cpu"


def synchronize(device=None):
    """Nothing to wait for: CPU ops finish before they return."""


def __getattr__(name):
    if name == "amp":  # loaded on first use, as ember's other heavy-ish submodules
        import importlib
        return importlib.import_module(f"{__name__}.amp")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
