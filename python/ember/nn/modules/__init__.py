"""The nn modules, one file per topic as torch.nn.modules; nn/__init__ re-exports them."""
from .module import Module  # noqa: F401  (first: every other module subclasses it)
from .container import Container, ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential  # noqa: F401
from .lazy import LazyModuleMixin  # noqa: F401

# What `from .modules import *` gives ember.nn: every class imported above (a new topic file
# only adds its import line), but the mixin, which PyTorch keeps in nn.modules.lazy.
__all__ = [name for name, value in list(globals().items())
           if isinstance(value, type) and not name.startswith("_") and name != "LazyModuleMixin"]
