"""Linear layers, as torch.nn.modules.linear."""
import math

import ember

from .. import functional as F, init
from ..parameter import Parameter, UninitializedParameter
from .lazy import LazyModuleMixin
from .module import Module

__all__ = ["Bilinear", "Identity", "LazyLinear", "Linear"]


def _weight_and_bias(module, weight_shape, bias_size, bias, factory_kwargs):
    """module.weight, and module.bias (or a registered None with bias=False), uninitialized."""
    module.weight = Parameter(ember.empty(weight_shape, **factory_kwargs))
    if bias:
        module.bias = Parameter(ember.empty(bias_size, **factory_kwargs))
    else:
        module.register_parameter("bias", None)


def _reset_fan_in_uniform(weight, bias):
    """Linear's and the convolutions' init: weight and bias from U(-1/sqrt(fan_in), 1/sqrt(fan_in))."""
    # kaiming_uniform_ with a=sqrt(5) is that uniform (pytorch#57109).
    init.kaiming_uniform_(weight, a=math.sqrt(5))
    if bias is not None:
        fan_in, _ = init._calculate_fan_in_and_fan_out(weight)
        bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
        init.uniform_(bias, -bound, bound)


class Identity(Module):
    """A placeholder that returns its input; its arguments are ignored."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input


class Linear(Module):
    """y = x A^T + b, with weight (out_features, in_features) and bias (out_features)."""

    __constants__ = ["in_features", "out_features"]

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        factory_kwargs = {"device": device, "dtype": dtype}
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        _weight_and_bias(self, (out_features, in_features), out_features, bias, factory_kwargs)
        self.reset_parameters()

    def reset_parameters(self):
        """weight and bias from U(-1/sqrt(in_features), 1/sqrt(in_features)), as PyTorch's."""
        _reset_fan_in_uniform(self.weight, self.bias)

    def forward(self, input):
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class NonDynamicallyQuantizableLinear(Linear):
    """Linear under the name MultiheadAttention's out_proj has in PyTorch."""


class Bilinear(Module):
    """y = x1^T A x2 + b, with weight (out_features, in1_features, in2_features) and bias (out_features)."""

    __constants__ = ["in1_features", "in2_features", "out_features"]

    def __init__(self, in1_features, in2_features, out_features, bias=True, device=None, dtype=None):
        factory_kwargs = {"device": device, "dtype": dtype}
        super().__init__()
        self.in1_features = in1_features
        self.in2_features = in2_features
        self.out_features = out_features
        _weight_and_bias(self, (out_features, in1_features, in2_features), out_features, bias, factory_kwargs)
        self.reset_parameters()

    def reset_parameters(self):
        """weight and bias from U(-1/sqrt(in1_features), 1/sqrt(in1_features)), as PyTorch's."""
        if self.in1_features <= 0:
            raise ValueError(f"in1_features must be > 0, but got (in1_features={self.in1_features})")
        bound = 1 / math.sqrt(self.weight.size(1))
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1, input2):
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self):
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


class LazyLinear(LazyModuleMixin, Linear):
    """Linear whose in_features is the last dim of the first input (it then becomes a Linear)."""

    cls_to_become = Linear

    def __init__(self, out_features, bias=True, device=None, dtype=None):
        factory_kwargs = {"device": device, "dtype": dtype}
        super().__init__(0, 0, False)  # no bias yet: it is replaced by an uninitialized one
        self.weight = UninitializedParameter(**factory_kwargs)
        self.out_features = out_features
        if bias:
            self.bias = UninitializedParameter(**factory_kwargs)

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input):
        """Materializes weight (out_features, input.shape[-1]) and bias, then initializes them."""
        if self.has_uninitialized_params():
            with ember.no_grad():
                self.in_features = input.shape[-1]
                self.weight.materialize((self.out_features, self.in_features))
                if self.bias is not None:
                    self.bias.materialize((self.out_features,))
                self.reset_parameters()
        if self.in_features == 0:
            if input.shape[-1] != self.weight.shape[-1]:
                raise AssertionError(f"The in_features inferred from input: {input.shape[-1]} is not equal to "
                                     f"in_features from self.weight: {self.weight.shape[-1]}")
            self.in_features = input.shape[-1]
