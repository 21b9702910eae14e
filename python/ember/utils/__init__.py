"""Utilities built on ember's core: `ember.utils.trace` (seeing every op call),
`ember.utils.hooks` (removable hook handles) and `ember.utils.checkpoint`
(activation checkpointing)."""
from . import hooks, trace  # noqa: E402,F401
# utils.checkpoint builds on autograd, which imports utils.hooks: ember/__init__ imports it last.


def __getattr__(name):
    # ember.utils.data loads on first use (it imports multiprocessing): `import ember` stays fast.
    if name == "data":
        import importlib
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
