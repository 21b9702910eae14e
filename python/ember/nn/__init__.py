"""ember.nn: neural-network building blocks, as torch.nn: Module and its containers,
Parameter and Buffer, the layers, and the functional interface (ember.nn.functional)."""
from .parameter import Buffer, Parameter, UninitializedBuffer, UninitializedParameter  # noqa: F401
from .modules import *  # noqa: F401,F403
from . import functional, modules, parameter, utils  # noqa: F401
