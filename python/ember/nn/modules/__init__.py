"""The nn modules, one file per topic as torch.nn.modules; nn/__init__ re-exports them."""
from .module import Module  # noqa: F401  (first: every other module subclasses it)
from .container import Container, ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential  # noqa: F401
from .lazy import LazyModuleMixin  # noqa: F401

# The layers of issue 12, point 3 (i12-layers-a).
from .channelshuffle import ChannelShuffle  # noqa: F401
from .conv import (  # noqa: F401
    Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d, LazyConv1d, LazyConv2d, LazyConv3d,
    LazyConvTranspose1d, LazyConvTranspose2d, LazyConvTranspose3d,
)
from .distance import CosineSimilarity, PairwiseDistance  # noqa: F401
from .flatten import Flatten, Unflatten  # noqa: F401
from .fold import Fold, Unfold  # noqa: F401
from .linear import Bilinear, Identity, LazyLinear, Linear  # noqa: F401
from .padding import (  # noqa: F401
    CircularPad1d, CircularPad2d, CircularPad3d, ConstantPad1d, ConstantPad2d, ConstantPad3d, ReflectionPad1d,
    ReflectionPad2d, ReflectionPad3d, ReplicationPad1d, ReplicationPad2d, ReplicationPad3d, ZeroPad1d, ZeroPad2d,
    ZeroPad3d,
)
from .pixelshuffle import PixelShuffle, PixelUnshuffle  # noqa: F401
from .pooling import (  # noqa: F401
    AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveMaxPool1d, AdaptiveMaxPool2d, AvgPool1d, AvgPool2d, MaxPool1d,
    MaxPool2d, MaxUnpool1d, MaxUnpool2d,
)
from .upsampling import Upsample, UpsamplingBilinear2d, UpsamplingNearest2d  # noqa: F401

# Normalization, embeddings, dropout, activations, losses (i12-layers-b).
from .activation import *  # noqa: F401,F403
from .batchnorm import *  # noqa: F401,F403
from .dropout import *  # noqa: F401,F403
from .instancenorm import *  # noqa: F401,F403
from .loss import *  # noqa: F401,F403
from .normalization import *  # noqa: F401,F403
from .sparse import *  # noqa: F401,F403
from .attention import *  # noqa: F401,F403  (MultiheadAttention, i12-transformer)
from .transformer import *  # noqa: F401,F403
from .pooling3d import *  # noqa: F401,F403  (3-D and power-average pools, i12-extras)
from .adaptive import *  # noqa: F401,F403

# What `from .modules import *` gives ember.nn: every class imported above (a new topic file
# only adds its import line), but the mixin, which PyTorch keeps in nn.modules.lazy.
__all__ = [name for name, value in list(globals().items())
           if isinstance(value, type) and not name.startswith("_") and name != "LazyModuleMixin"]
