"""The nn modules, one file per topic as torch.nn.modules; nn/__init__ re-exports them."""
from .module import Module  # noqa: F401  (first: every other module subclasses it)
from .container import Container, ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential  # noqa: F401

__all__ = ["Module", "Container", "Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"]

# i12-layers-b: normalization, embeddings, dropout, activations, losses
from .activation import *  # noqa: F401,F403,E402
from .batchnorm import *  # noqa: F401,F403,E402
from .dropout import *  # noqa: F401,F403,E402
from .instancenorm import *  # noqa: F401,F403,E402
from .loss import *  # noqa: F401,F403,E402
from .normalization import *  # noqa: F401,F403,E402
from .sparse import *  # noqa: F401,F403,E402
from . import activation, batchnorm, dropout, instancenorm, loss, normalization, sparse  # noqa: E402

__all__ += (activation.__all__ + batchnorm.__all__ + dropout.__all__ + instancenorm.__all__ + loss.__all__
            + normalization.__all__ + sparse.__all__)
