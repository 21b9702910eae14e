"""ember.nn: neural-network building blocks, as torch.nn: Module and its containers,
Parameter and Buffer, the layers, the functional interface (ember.nn.functional) and the
initializers (ember.nn.init)."""
from .parameter import Buffer, Parameter, UninitializedBuffer, UninitializedParameter  # noqa: F401
from .modules import *  # noqa: F401,F403
from . import functional, init, modules, parameter  # noqa: F401
# i12-transformer: nn.utils and the (single-device, single-process) parallel wrappers
from . import parallel, utils  # noqa: F401,E402
from .parallel import DataParallel  # noqa: F401,E402
