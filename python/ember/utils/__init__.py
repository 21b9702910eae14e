"""Utilities built on ember's core: `ember.utils.trace` (seeing every op call),
`ember.utils.hooks` (removable hook handles), `ember.utils.checkpoint`
(activation checkpointing), `ember.utils.dlpack` (sharing tensors with other
libraries) and `ember.utils.tensorboard` (imported by name: it needs tensorboardX)."""
from . import hooks, trace  # noqa: E402,F401


# Submodules load on first use (`ember.utils.safetensors`; `ember.utils.data` imports multiprocessing;
# checkpoint and dlpack are source to compile): `import ember` stays fast.
_LAZY_SUBMODULES = ("safetensors", "data", "checkpoint", "dlpack")


def __getattr__(name):
    if name in _LAZY_SUBMODULES:
        import importlib
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
