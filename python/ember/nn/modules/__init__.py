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

# The layers of issue 12, point 3 (i12-layers-a).
from .channelshuffle import ChannelShuffle  # noqa: E402
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d  # noqa: E402
from .distance import CosineSimilarity, PairwiseDistance  # noqa: E402
from .flatten import Flatten, Unflatten  # noqa: E402
from .fold import Fold, Unfold  # noqa: E402
from .linear import Bilinear, Identity, Linear  # noqa: E402
from .padding import (  # noqa: E402
    CircularPad1d, CircularPad2d, CircularPad3d, ConstantPad1d, ConstantPad2d, ConstantPad3d, ReflectionPad1d,
    ReflectionPad2d, ReflectionPad3d, ReplicationPad1d, ReplicationPad2d, ReplicationPad3d, ZeroPad1d, ZeroPad2d,
    ZeroPad3d,
)
from .pixelshuffle import PixelShuffle, PixelUnshuffle  # noqa: E402
from .pooling import (  # noqa: E402
    AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveMaxPool1d, AdaptiveMaxPool2d, AvgPool1d, AvgPool2d, MaxPool1d,
    MaxPool2d, MaxUnpool1d, MaxUnpool2d,
)
from .upsampling import Upsample, UpsamplingBilinear2d, UpsamplingNearest2d  # noqa: E402

__all__ += [
    "ChannelShuffle", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "CosineSimilarity",
    "PairwiseDistance", "Flatten", "Unflatten", "Fold", "Unfold", "Bilinear", "Identity", "Linear",
    "CircularPad1d", "CircularPad2d", "CircularPad3d", "ConstantPad1d", "ConstantPad2d", "ConstantPad3d",
    "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d",
    "ReplicationPad3d", "ZeroPad1d", "ZeroPad2d", "ZeroPad3d", "PixelShuffle", "PixelUnshuffle",
    "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AvgPool1d", "AvgPool2d",
    "MaxPool1d", "MaxPool2d", "MaxUnpool1d", "MaxUnpool2d", "Upsample", "UpsamplingBilinear2d", "UpsamplingNearest2d",
]

# i12-transformer: attention and transformers
from .attention import *  # noqa: F401,F403,E402
from .transformer import *  # noqa: F401,F403,E402
from . import attention, transformer  # noqa: E402

__all__ += attention.__all__ + transformer.__all__
