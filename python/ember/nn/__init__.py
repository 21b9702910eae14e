"""ember.nn: neural-network building blocks, as torch.nn: the functional interface
(ember.nn.functional), the initializers (ember.nn.init) and the modules."""
from . import functional  # noqa: F401
from . import init  # noqa: F401
