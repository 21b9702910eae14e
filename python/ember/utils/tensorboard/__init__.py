"""TensorBoard logging, as torch.utils.tensorboard: `SummaryWriter` writes event files with the
summaries of the tensorboardX package (which must be installed: `pip install tensorboardX`)."""
import sys as _sys


def _import_tensorboardx() -> None:
    # tensorboardX's writer imports torch when it can (for a type annotation only): seconds that a program
    # using ember need not pay. torch is hidden while tensorboardX loads, unless it is loaded already.
    hide_torch = "torch" not in _sys.modules
    if hide_torch:
        _sys.modules["torch"] = None  # type: ignore[assignment]  # `import torch` raises ImportError
    try:
        import tensorboardX  # type: ignore[import-untyped,import-not-found]  # noqa: F401
    except ImportError as e:
        raise ImportError("ember.utils.tensorboard requires the tensorboardX package, which writes TensorBoard's "
                          "event files: pip install tensorboardX") from e
    finally:
        if hide_torch and _sys.modules.get("torch", False) is None:
            del _sys.modules["torch"]


_import_tensorboardx()
from .writer import SummaryWriter  # noqa: E402

__all__ = ["SummaryWriter"]
