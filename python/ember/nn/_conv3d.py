"""conv3d and conv_transpose3d over the 2-D convolution kernels: the kernel's depth taps become
extra channels of a single conv2d (conv_transpose2d) over every depth plane (PyTorch's argument
checks and messages first, as the C++ convolutions')."""
from .._autocast_policy import autocast_policy
from .. import _C
from .._C import _nn


def _expand(value, name, op):
    values = list(value) if isinstance(value, (list, tuple)) else [value]
    if len(values) == 3:
        return values
    if len(values) != 1:
        raise RuntimeError(f"expected {name} to be a single integer value or a list of 3 values to match the "
                           f"convolution dimensions, but got {name}={values}")
    return values * 3


def _dtype_name(t):
    return str(t.dtype).split(".")[-1]  # as the C++ checks' dtype_name: float32, bfloat16


def _check_input_dims(input, op):
    if input.dim() not in (4, 5):
        raise RuntimeError(f"Expected 4D (unbatched) or 5D (batched) input to {op}, but got input of size: "
                           f"{list(input.shape)}")


def _check(input, weight, bias, a, groups, op, transposed=False):
    """The C++ check_conv's checks, in its order, of a batched input and its (stride, padding, dilation,
    output_padding) lists `a`."""
    stride, padding, dilation, output_padding = a
    _check_input_dims(input, op)
    if weight.dim() != 5:
        raise RuntimeError(f"expected a 5-dimensional weight, but got weight of size {list(weight.shape)}")
    for other, name in ((weight, "weight"), (bias, "bias")):
        if other is not None and other.dtype != input.dtype:
            raise RuntimeError(f"Input type ({_dtype_name(input)}) and {name} type ({_dtype_name(other)}) "
                               "should be the same")
    for i in range(3):
        if stride[i] <= 0:
            raise RuntimeError(f"non-positive stride is not supported")
        if padding[i] < 0:
            raise RuntimeError(f"negative padding is not supported")
        if dilation[i] <= 0:
            raise RuntimeError(f"non-positive dilation is not supported")
        if output_padding[i] < 0:
            raise RuntimeError(f"negative output padding is not supported")
    if groups <= 0:
        raise RuntimeError(f"non-positive groups is not supported")
    if weight.size(0) % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, "
                           f"but got weight of size [{list(weight.shape)}] instead")
    expected = weight.size(0) if transposed else weight.size(1) * groups
    if input.size(1) != expected:
        kind = "transposed=1" if transposed else f"groups={groups}"
        raise RuntimeError(f"Given {kind}, weight of size {list(weight.shape)}, expected input"
                           f"{list(input.shape)} to have {expected} channels, but got {input.size(1)} channels instead")
    out_channels = weight.size(1) * groups if transposed else weight.size(0)
    if bias is not None and (bias.dim() != 1 or bias.size(0) != out_channels):
        raise RuntimeError(f"Given weight of size {list(weight.shape)}, expected bias to be 1-dimensional with "
                           f"{out_channels} elements, but got bias of size {list(bias.shape)} instead")
    spans = [dilation[i] * (weight.size(2 + i) - 1) + 1 for i in range(3)]
    sizes = list(input.shape[2:])
    if transposed:
        if any(o >= s and o >= d for o, s, d in zip(output_padding, stride, dilation)):
            raise RuntimeError(f"output padding must be smaller than either stride or dilation, but got "
                               f"output_padding={output_padding}, stride={stride}, dilation={dilation}")
        out = [(sizes[i] - 1) * stride[i] - 2 * padding[i] + spans[i] + output_padding[i] for i in range(3)]
        if any(o <= 0 for o in out):
            raise RuntimeError(f"Given input size per channel: ({' x '.join(map(str, sizes))}). Calculated "
                               f"output size per channel: ({' x '.join(map(str, out))}). Output size is too small")
    else:
        padded = [sizes[i] + 2 * padding[i] for i in range(3)]
        if any(p < s for p, s in zip(padded, spans)):
            raise RuntimeError(f"Calculated padded input size per channel: ({' x '.join(map(str, padded))}). "
                               f"Kernel size: ({' x '.join(map(str, spans))}). Kernel size can't be greater than "
                               "actual input size")


def _same_padding(input, weight, stride, dilation):
    """padding='same': d * (k - 1) split over both sides, an odd remainder as zeros at the end."""
    if any(s != 1 for s in stride):
        raise RuntimeError("padding='same' is not supported for strided convolutions")
    totals = [dilation[i] * (weight.size(2 + i) - 1) for i in range(3)] if weight.dim() == 5 else [0, 0, 0]
    extra = [0, totals[2] % 2, 0, totals[1] % 2, 0, totals[0] % 2]
    if any(extra) and input.dim() in (4, 5):
        input = _nn.pad(input, extra)
    return input, [t // 2 for t in totals]


@autocast_policy(cpu="lower", cuda="lower")
def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """The 3-D convolution of an (N, C, D, H, W) or (C, D, H, W) input with (O, C / groups, kD, kH, kW) weights."""
    op = "conv3d"
    _check_input_dims(input, op)
    unbatched = input.dim() == 4
    if unbatched:
        input = input.unsqueeze(0)
    stride, dilation = _expand(stride, "stride", op), _expand(dilation, "dilation", op)
    if isinstance(padding, str):
        if padding not in ("valid", "same"):
            raise RuntimeError(f"Invalid padding string: '{padding}'")
        input, padding = _same_padding(input, weight, stride, dilation) if padding == "same" else (input, [0, 0, 0])
    padding = _expand(padding, "padding", op)
    _check(input, weight, bias, (stride, padding, dilation, [0, 0, 0]), groups, op)
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


@autocast_policy(cpu="lower", cuda="lower")
def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """The 3-D transposed convolution of an (N, C, D, H, W) or (C, D, H, W) input with
    (C, O / groups, kD, kH, kW) weights: the gradient of conv3d with respect to its input."""
    op = "conv_transpose3d"
    _check_input_dims(input, op)
    unbatched = input.dim() == 4
    if unbatched:
        input = input.unsqueeze(0)
    a = [_expand(v, name, op) for v, name in ((stride, "stride"), (padding, "padding"), (dilation, "dilation"),
                                              (output_padding, "output_padding"))]
    stride, padding, dilation, output_padding = a
    _check(input, weight, bias, (stride, padding, dilation, output_padding), groups, op, transposed=True)
    n, c, depth, h, w = input.shape
    per_group, taps = weight.size(1), weight.size(2)
    out_channels = per_group * groups
    # One conv_transpose2d of every input plane, each depth tap as extra output channels of its group.
    kernel = weight.reshape(c, per_group * taps, weight.size(3), weight.size(4))
    planes = input.transpose(1, 2).reshape(n * depth, c, h, w)
    out = _C.conv_transpose2d(planes, kernel, None, stride[1:], padding[1:], output_padding[1:], groups, dilation[1:])
    out_h, out_w = out.size(2), out.size(3)
    out = out.reshape(n, depth, out_channels, taps, out_h, out_w).permute(3, 0, 2, 1, 4, 5)
    # Input plane d, tap k lands on depth d * stride + k * dilation of the uncropped output:
    # each tap's planes spread `stride` apart (zeros between), shifted by k * dilation, then summed.
    full = (depth - 1) * stride[0] + dilation[0] * (taps - 1) + 1 + output_padding[0]
    spread = (depth - 1) * stride[0] + 1
    total = None
    for k in range(taps):
        tap = out[k]
        if stride[0] > 1:
            gaps = _C.zeros((n, out_channels, depth, stride[0] - 1, out_h, out_w), dtype=tap.dtype, device=tap.device)
            tap = _C.cat([tap.unsqueeze(3), gaps], 3).reshape(n, out_channels, depth * stride[0], out_h, out_w)
            tap = tap[:, :, :spread]
        tap = _nn.pad(tap, [0, 0, 0, 0, k * dilation[0], full - spread - k * dilation[0]])
        total = tap if total is None else total + tap
    out_depth = full - 2 * padding[0]
    total = total[:, :, padding[0]:padding[0] + out_depth]
    if bias is not None:
        total = total + bias.reshape(1, -1, 1, 1, 1)
    return total.squeeze(0) if unbatched else total
