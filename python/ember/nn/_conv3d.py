"""conv3d over the 2-D convolution kernel: the kernel's depth taps become extra input channels of a
single conv2d over every output depth plane (PyTorch's argument checks and messages first)."""
from .. import _C
from .._C import _nn

_OP = "conv3d"


def _expand(value, name):
    values = list(value) if isinstance(value, (list, tuple)) else [value]
    if len(values) == 3:
        return values
    if len(values) != 1:
        raise RuntimeError(f"{_OP}: expected {name} to be a single integer value or a list of 3 values to match the "
                           f"convolution dimensions, but got {name}={values}")
    return values * 3


def _check(input, weight, bias, stride, padding, dilation, groups):
    if input.dim() != 5:
        raise RuntimeError(f"{_OP}: Expected 4D (unbatched) or 5D (batched) input to conv3d, but got input of size: "
                           f"{list(input.shape)}")
    if weight.dim() != 5:
        raise RuntimeError(f"{_OP}: expected a 5-dimensional weight, but got weight of size {list(weight.shape)}")
    for other, name in ((weight, "weight"), (bias, "bias")):
        if other is not None and other.dtype != input.dtype:
            raise RuntimeError(f"{_OP}: Input type ({_dtype_name(input)}) and {name} type ({_dtype_name(other)}) "
                               "should be the same")
    if any(s <= 0 for s in stride):
        raise RuntimeError(f"{_OP}: non-positive stride is not supported")
    if any(p < 0 for p in padding):
        raise RuntimeError(f"{_OP}: negative padding is not supported")
    if any(d <= 0 for d in dilation):
        raise RuntimeError(f"{_OP}: non-positive dilation is not supported")
    if groups <= 0:
        raise RuntimeError(f"{_OP}: non-positive groups is not supported")
    if weight.size(0) % groups:
        raise RuntimeError(f"{_OP}: Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, "
                           f"but got weight of size [{list(weight.shape)}] instead")
    if input.size(1) != weight.size(1) * groups:
        raise RuntimeError(f"{_OP}: Given groups={groups}, weight of size {list(weight.shape)}, expected input"
                           f"{list(input.shape)} to have {weight.size(1) * groups} channels, but got {input.size(1)} "
                           "channels instead")
    if bias is not None and (bias.dim() != 1 or bias.size(0) != weight.size(0)):
        raise RuntimeError(f"{_OP}: Given weight of size {list(weight.shape)}, expected bias to be 1-dimensional with "
                           f"{weight.size(0)} elements, but got bias of size {list(bias.shape)} instead")
    padded = [input.size(2 + i) + 2 * padding[i] for i in range(3)]
    spans = [dilation[i] * (weight.size(2 + i) - 1) + 1 for i in range(3)]
    if any(p < s for p, s in zip(padded, spans)):
        raise RuntimeError(f"{_OP}: Calculated padded input size per channel: ({' x '.join(map(str, padded))}). "
                           f"Kernel size: ({' x '.join(map(str, spans))}). Kernel size can't be greater than actual "
                           "input size")


def _dtype_name(t):
    return str(t.dtype).split(".")[-1]  # as the C++ checks' dtype_name: float32, bfloat16


def _same_padding(input, weight, stride, dilation):
    """padding='same': d * (k - 1) split over both sides, an odd remainder as zeros at the end."""
    if any(s != 1 for s in stride):
        raise RuntimeError(f"{_OP}: padding='same' is not supported for strided convolutions")
    totals = [dilation[i] * (weight.size(2 + i) - 1) for i in range(3)] if weight.dim() == 5 else [0, 0, 0]
    extra = [0, totals[2] % 2, 0, totals[1] % 2, 0, totals[0] % 2]
    if any(extra) and input.dim() in (4, 5):
        input = _nn.pad(input, extra)
    return input, [t // 2 for t in totals]


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """The 3-D convolution of an (N, C, D, H, W) or (C, D, H, W) input with (O, C / groups, kD, kH, kW) weights."""
    if input.dim() not in (4, 5):
        raise RuntimeError(f"{_OP}: Expected 4D (unbatched) or 5D (batched) input to conv3d, but got input of size: "
                           f"{list(input.shape)}")
    unbatched = input.dim() == 4
    if unbatched:
        input = input.unsqueeze(0)
    stride, dilation = _expand(stride, "stride"), _expand(dilation, "dilation")
    if isinstance(padding, str):
        if padding not in ("valid", "same"):
            raise RuntimeError(f"{_OP}: Invalid padding string: '{padding}'")
        input, padding = _same_padding(input, weight, stride, dilation) if padding == "same" else (input, [0, 0, 0])
    padding = _expand(padding, "padding")
    _check(input, weight, bias, stride, padding, dilation, groups)
    if padding[0]:
        input = _nn.pad(input, [0, 0, 0, 0, padding[0], padding[0]])
    n, c, depth, h, w = input.shape
    out_channels, taps = weight.size(0), weight.size(2)
    out_depth = (depth - dilation[0] * (taps - 1) - 1) // stride[0] + 1
    # (N, C, out_depth, kD, H, W): the input planes each output plane reads, one per depth tap.
    last = (out_depth - 1) * stride[0] + 1
    planes = _C.stack([input[:, :, k * dilation[0]:k * dilation[0] + last:stride[0]] for k in range(taps)], 3)
    planes = planes.permute(0, 2, 1, 3, 4, 5).reshape(n * out_depth, c * taps, h, w)
    kernel = weight.reshape(out_channels, weight.size(1) * taps, weight.size(3), weight.size(4))
    out = _C.conv2d(planes, kernel, bias, stride[1:], padding[1:], dilation[1:], groups)
    out = out.reshape(n, out_depth, out_channels, out.size(2), out.size(3)).transpose(1, 2)
    return out.squeeze(0) if unbatched else out
