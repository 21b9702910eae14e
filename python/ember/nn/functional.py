"""ember.nn.functional, as torch.nn.functional: the activations (kernels in
ember._C._nn and ember itself, declared in ops.yaml) with PyTorch's Python
signatures, `inplace=` flags and defaults."""
import warnings

from .. import _C
from .._C import _nn

__all__ = [
    "celu", "celu_", "elu", "elu_", "gelu", "glu", "hardshrink", "hardsigmoid", "hardswish", "hardtanh",
    "hardtanh_", "leaky_relu", "leaky_relu_", "log_softmax", "logsigmoid", "mish", "prelu", "relu", "relu6",
    "relu_", "rrelu", "rrelu_", "selu", "selu_", "sigmoid", "silu", "softmax", "softmin", "softplus",
    "softshrink", "softsign", "tanh", "tanhshrink", "threshold", "threshold_",
]

# Functions PyTorch's F takes straight from its kernels.
gelu = _nn.gelu
softplus = _nn.softplus
softshrink = _nn.softshrink
logsigmoid = _nn.log_sigmoid
glu = _nn.glu
softsign = _nn.softsign
tanhshrink = _nn.tanhshrink
hardshrink = _C.hardshrink
prelu = _C.prelu
elu_ = _nn.elu_
leaky_relu_ = _nn.leaky_relu_
hardtanh_ = _nn.hardtanh_
selu_ = _C.selu_
celu_ = _C.celu_
rrelu_ = _C.rrelu_
threshold_ = _C.threshold_


def relu(input, inplace=False):
    """max(x, 0) of each element."""
    return input.relu_() if inplace else _C.relu(input)


def relu_(input):
    return input.relu_()


def elu(input, alpha=1.0, inplace=False):
    """x for x > 0, else alpha * (exp(x) - 1)."""
    return (_nn.elu_ if inplace else _nn.elu)(input, alpha)


def selu(input, inplace=False):
    """scale * elu(x, alpha) with the self-normalising constants."""
    return (_C.selu_ if inplace else _C.selu)(input)


def celu(input, alpha=1.0, inplace=False):
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""
    return (_C.celu_ if inplace else _C.celu)(input, alpha)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    """x for x > 0, else negative_slope * x."""
    return (_nn.leaky_relu_ if inplace else _nn.leaky_relu)(input, negative_slope)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """leaky_relu with random negative slopes in [lower, upper] when training, their mean otherwise."""
    return (_C.rrelu_ if inplace else _C.rrelu)(input, lower, upper, training)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """Each element clamped to [min_val, max_val]."""
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    return (_nn.hardtanh_ if inplace else _nn.hardtanh)(input, min_val, max_val)


def relu6(input, inplace=False):
    """min(max(0, x), 6)."""
    return (_nn.relu6_ if inplace else _nn.relu6)(input)


def hardsigmoid(input, inplace=False):
    """relu6(x + 3) / 6."""
    return (_nn.hardsigmoid_ if inplace else _nn.hardsigmoid)(input)


def hardswish(input, inplace=False):
    """x * relu6(x + 3) / 6."""
    return (_nn.hardswish_ if inplace else _nn.hardswish)(input)


def silu(input, inplace=False):
    """x * sigmoid(x)."""
    return (_nn.silu_ if inplace else _nn.silu)(input)


def mish(input, inplace=False):
    """x * tanh(softplus(x))."""
    return (_nn.mish_ if inplace else _nn.mish)(input)


def threshold(input, threshold, value, inplace=False):
    """x where x > threshold, else value."""
    return (_C.threshold_ if inplace else _C.threshold)(input, threshold, value)


def sigmoid(input):
    return _C.sigmoid(input)


def tanh(input):
    return _C.tanh(input)


def _softmax_dim(name, ndim, stacklevel):
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X "
                  "as an argument.", stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """exp(x) / sum(exp(x)) along `dim`."""
    if dim is None:
        dim = _softmax_dim("softmax", input.dim(), _stacklevel)
    return _C.softmax(input, dim, dtype=dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """log(softmax(x)) along `dim`, computed stably."""
    if dim is None:
        dim = _softmax_dim("log_softmax", input.dim(), _stacklevel)
    return _C.log_softmax(input, dim, dtype=dtype)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    """softmax(-x) along `dim`."""
    if dim is None:
        dim = _softmax_dim("softmin", input.dim(), _stacklevel)
    if dtype is not None:
        input = input.to(dtype)
    return _C.softmax(-input, dim)
