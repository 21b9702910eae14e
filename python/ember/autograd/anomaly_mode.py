"""Anomaly mode: while on, every node of the backward graph remembers the
Python traceback of the forward call that made it (``grad_fn.metadata["traceback_"]``),
backward raises when a node returns NaN (``check_nan``), and a node whose
backward fails warns with that traceback first. As PyTorch's
torch.autograd.anomaly_mode; the mode is global (all threads), as PyTorch's."""
import functools
import warnings

from .. import _C

__all__ = ["detect_anomaly", "set_detect_anomaly"]


class detect_anomaly:
    """Context manager enabling anomaly mode inside its block (and restoring the
    previous mode on exit); also a decorator (``@detect_anomaly()``), which
    PyTorch's is not. It is slow: making it warns, as PyTorch."""

    def __init__(self, check_nan=True) -> None:
        self.prev = _C.is_anomaly_enabled()
        self.check_nan = check_nan
        self.prev_check_nan = _C.is_anomaly_check_nan_enabled()
        warnings.warn(
            "Anomaly Detection has been enabled. This mode will increase the runtime "
            "and should only be enabled for debugging.",
            stacklevel=2,
        )

    def __enter__(self) -> None:
        _C.set_anomaly_enabled(True, self.check_nan)

    def __exit__(self, *args: object) -> None:
        _C.set_anomaly_enabled(self.prev, self.prev_check_nan)

    def __call__(self, fn):
        check_nan = self.check_nan

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):  # each call saves and restores the mode it finds
            prev, prev_check_nan = _C.is_anomaly_enabled(), _C.is_anomaly_check_nan_enabled()
            _C.set_anomaly_enabled(True, check_nan)
            try:
                return fn(*args, **kwargs)
            finally:
                _C.set_anomaly_enabled(prev, prev_check_nan)
        return wrapper


class set_detect_anomaly:
    """Sets anomaly mode on or off now; as a context manager, restores the
    previous mode on exit."""

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self.prev = _C.is_anomaly_enabled()
        self.prev_check_nan = _C.is_anomaly_check_nan_enabled()
        _C.set_anomaly_enabled(mode, check_nan)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *args: object) -> None:
        _C.set_anomaly_enabled(self.prev, self.prev_check_nan)
