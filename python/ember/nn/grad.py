"""ember.nn.grad, as torch.nn.grad: the gradients of conv1d/2d/3d with respect to their input or
weight, given the other and the output's gradient. A convolution is linear in each argument, so
the gradient is one backward pass through the convolution at a zero stand-in for the other."""
import ember
from . import functional as F

__all__ = ["conv1d_input", "conv1d_weight", "conv2d_input", "conv2d_weight", "conv3d_input", "conv3d_weight"]


def _input_grad(conv, input_size, weight, grad_output, stride, padding, dilation, groups):
    with ember.enable_grad():
        input = ember.zeros(tuple(input_size), dtype=grad_output.dtype, device=grad_output.device,
                            requires_grad=True)
        output = conv(input, weight.detach(), None, stride, padding, dilation, groups)
        return ember.autograd.grad(output, input, grad_output)[0]


def _weight_grad(conv, input, weight_size, grad_output, stride, padding, dilation, groups):
    with ember.enable_grad():
        weight = ember.zeros(tuple(weight_size), dtype=grad_output.dtype, device=grad_output.device,
                             requires_grad=True)
        output = conv(input.detach(), weight, None, stride, padding, dilation, groups)
        return ember.autograd.grad(output, weight, grad_output)[0]


def conv1d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """The gradient of conv1d with respect to its input (of shape input_size)."""
    return _input_grad(F.conv1d, input_size, weight, grad_output, stride, padding, dilation, groups)


def conv1d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """The gradient of conv1d with respect to its weight (of shape weight_size)."""
    return _weight_grad(F.conv1d, input, weight_size, grad_output, stride, padding, dilation, groups)


def conv2d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """The gradient of conv2d with respect to its input (of shape input_size)."""
    return _input_grad(F.conv2d, input_size, weight, grad_output, stride, padding, dilation, groups)


def conv2d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """The gradient of conv2d with respect to its weight (of shape weight_size)."""
    return _weight_grad(F.conv2d, input, weight_size, grad_output, stride, padding, dilation, groups)


def conv3d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """The gradient of conv3d with respect to its input (of shape input_size)."""
    return _input_grad(F.conv3d, input_size, weight, grad_output, stride, padding, dilation, groups)


def conv3d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """The gradient of conv3d with respect to its weight (of shape weight_size)."""
    return _weight_grad(F.conv3d, input, weight_size, grad_output, stride, padding, dilation, groups)
