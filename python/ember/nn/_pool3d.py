"""The 3-D pools as composites of ember ops (differentiable through them), with PyTorch's checks.

Both are separable. Max pools (fixed and adaptive): the 2-D kernel over each depth plane, then the
1-D one along depth. Average pools: one (out, in) window matrix per spatial dim, applied by matmul."""
import math

import ember
from .._autocast_policy import autocast_policy
from .. import _C
from .._C import _nn

__all__ = ["adaptive_avg_pool3d", "adaptive_max_pool3d", "adaptive_max_pool3d_with_indices", "avg_pool3d",
           "max_pool3d", "max_pool3d_with_indices", "max_unpool3d"]


def _three(value, op, name, omitted=False, form="either be"):
    """PyTorch's parsing of an int-or-three-ints pool argument (None/[] stride means the kernel)."""
    values = list(value) if isinstance(value, (list, tuple)) else [value]
    if len(values) == 1:
        return values * 3
    if len(values) == 0 and omitted:
        return None
    if len(values) != 3:
        also = "omitted, " if omitted else ""
        raise RuntimeError(f"{op}: {name} must {form} {also}a single int, or a tuple of three ints")
    return values


def _output_size(size, kernel, pad, stride, dilation, ceil_mode):
    """ATen's pooling_output_shape: the last window must start inside the input or its left padding."""
    numerator = size + 2 * pad - dilation * (kernel - 1) - 1 + (stride - 1 if ceil_mode else 0)
    out = numerator // stride + 1
    if ceil_mode and (out - 1) * stride >= size + pad:
        out -= 1
    return out


def _batched(input, op_message):
    if input.dim() not in (4, 5):
        raise RuntimeError(op_message)
    return input if input.dim() == 5 else input.unsqueeze(0)


def _unbatch(result, unbatched):
    if not unbatched:
        return result
    return tuple(r.squeeze(0) for r in result) if isinstance(result, tuple) else result.squeeze(0)


@autocast_policy(cpu="fp32")
def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    """The maximum of each window of the last three dims, and its flat index in the volume."""
    return _max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def _max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, with_indices):
    op = "max_pool3d"
    kernel = _three(kernel_size, op, "kernel_size")
    stride = _three(stride if stride is not None else [], op, "stride", omitted=True) or kernel
    padding = _three(padding, op, "padding")
    dilation = _three(dilation, op, "dilation")
    if any(s == 0 for s in stride):
        raise RuntimeError("stride should not be zero")
    if any(k <= 0 for k in kernel):
        raise RuntimeError("kernel size should be greater than zero, but got kT: {} kH: {} kW: {}".format(*kernel))
    if any(s < 0 for s in stride):
        raise RuntimeError("stride should be greater than zero, but got dT: {} dH: {} dW: {}".format(*stride))
    if any(d <= 0 for d in dilation):
        raise RuntimeError("dilation should be greater than zero, but got dilationT: {} dilationH: {} "
                           "dilationW: {}".format(*dilation))
    x = _batched(input, "non-empty 4D or 5D (batch mode) tensor expected for input")
    if any(s == 0 for s in input.shape[-4:]):
        zero = next(d for d in range(4) if input.shape[input.dim() - 4 + d] == 0)
        raise RuntimeError("max_pool3d_with_indices_out_cpu_template(): Expected input's non-batch dimensions to "
                           f"have positive length, but input has a shape of {list(input.shape)} and non-batch "
                           f"dimension {zero} has length zero!")
    for k, p, d in zip(kernel, padding, dilation):
        if p > ((k - 1) * d + 1) // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got pad={p}, "
                               f"kernel_size={k} and dilation={d}")
    sizes = list(x.shape[2:])
    outs = [_output_size(*a, ceil_mode) for a in zip(sizes, kernel, padding, stride, dilation)]
    if any(o < 1 for o in outs):
        raise RuntimeError("Given input size: ({}x{}x{}x{}). Calculated output size: ({}x{}x{}x{}). Output size is "
                           "too small".format(x.shape[1], *sizes, x.shape[1], *outs))
    if x.shape[0] == 0:
        empty = x.new_empty((0, x.shape[1], *outs))
        return _unbatch((empty, empty.to(ember.int64)) if with_indices else empty, input.dim() == 4)
    # the value-only kernels when no indices are asked for (faster, same values and gradients)
    plane_kernel = _nn.max_pool2d_with_indices if with_indices else _C.max_pool2d
    depth_kernel = _C.max_pool1d_with_indices if with_indices else _C.max_pool1d
    return _unbatch(_separable_max_pool(
        x, lambda planes: plane_kernel(planes, kernel[1:], stride[1:], padding[1:], dilation[1:], ceil_mode),
        lambda rows: depth_kernel(rows, kernel[:1], stride[:1], padding[:1], dilation[:1], ceil_mode)),
        input.dim() == 4)


def _separable_max_pool(x, plane_pool, depth_pool):
    """A 2-D max pool (plane_pool) over each depth plane, then a 1-D one (depth_pool) along depth.
    The max of a box is the max along depth of its planes' maxima, and the first maximum in (depth,
    then plane) order is PyTorch's first in its (kd, kh, kw) scan: values, indices and gradients are PyTorch's."""
    n, c, depth, height, width = x.shape
    planes = plane_pool(x.reshape(n, c * depth, height, width))
    with_indices = isinstance(planes, tuple)
    planes, plane_idx = planes if with_indices else (planes, None)
    oh, ow = planes.shape[-2:]
    along_depth = planes.view(n, c, depth, oh, ow).permute(0, 1, 3, 4, 2).reshape(n, c * oh * ow, depth)
    values, depth_idx = depth_pool(along_depth) if with_indices else (depth_pool(along_depth), None)
    od = values.shape[-1]
    values = values.view(n, c, oh, ow, od).permute(0, 1, 4, 2, 3).contiguous()
    if not with_indices:
        return values
    depth_idx = depth_idx.view(n, c, oh, ow, od).permute(0, 1, 4, 2, 3)
    in_plane = plane_idx.view(n, c, depth, oh, ow).gather(2, depth_idx)
    return values, (depth_idx * (height * width) + in_plane).contiguous()


@autocast_policy(cpu="fp32")
def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """The maximum of each window of the last three dims (and the indices with return_indices)."""
    return _max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def _adaptive_bounds(size, out):
    """PyTorch's adaptive windows: [floor(o*size/out), ceil((o+1)*size/out))."""
    return [(o * size) // out for o in range(out)], [-((-(o + 1) * size) // out) for o in range(out)]


def _adaptive_output(output_size, input, op, message):
    sizes = [output_size] * 3 if not isinstance(output_size, (list, tuple)) else list(output_size)
    if len(sizes) == 1:
        sizes = sizes * 3
    if len(sizes) != 3:
        raise RuntimeError(message)
    return [input.size(d - 3) if s is None else s for d, s in enumerate(sizes)]


def _check_adaptive_input(input, op, colon):
    if input.dim() not in (4, 5):
        raise RuntimeError(f"{op}(): Expected 4D or 5D tensor, but got{colon} {list(input.shape)}")
    for d in range(1, input.dim()):
        if input.size(d) == 0:
            raise RuntimeError(f"{op}(): Expected input to have non-zero size for non-batch dimensions, but input "
                               f"has sizes {list(input.shape)} with dimension {d} being empty")
    if not input.is_floating_point():
        raise NotImplementedError(f'"{op}_cpu" not implemented for \'{_type_name(input)}\'')


@autocast_policy(cpu="fp32")
def adaptive_max_pool3d_with_indices(input, output_size, return_indices=False):
    """The maximum of each adaptive window of the last three dims, and its flat index in the volume."""
    op = "adaptive_max_pool3d"
    outs = _adaptive_output(output_size, input, op, f"{op}(): internal error: output_size.size() must be 3")
    _check_adaptive_input(input, op, ":")
    x = input if input.dim() == 5 else input.unsqueeze(0)
    if x.shape[0] == 0 or any(o == 0 for o in outs):
        empty = x.new_empty((x.shape[0], x.shape[1], *outs))
        return _unbatch((empty, empty.to(ember.int64)), input.dim() == 4)
    return _unbatch(_separable_max_pool(x, lambda planes: _nn.adaptive_max_pool2d(planes, outs[1:]),
                                        lambda rows: _C.adaptive_max_pool1d(rows, outs[:1])), input.dim() == 4)

@autocast_policy(cpu="fp32")
def adaptive_max_pool3d(input, output_size, return_indices=False):
    """The maximum of each adaptive window of the last three dims (and the indices with return_indices)."""
    result = adaptive_max_pool3d_with_indices(input, output_size)
    return result if return_indices else result[0]


def _type_name(input):
    return {"int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
            "bool": "Bool"}.get(str(input.dtype).split(".")[-1], str(input.dtype))


def _separable_sum(x, matrices):
    """sum over d, h, w of A_d[a, d] A_h[b, h] A_w[e, w] x[..., d, h, w]: one matmul per dim."""
    ad, ah, aw = matrices
    y = x.matmul(aw.t())                    # (N, C, D, H, Ow)
    y = ah.matmul(y)                        # (N, C, D, Oh, Ow)
    y = ad.matmul(y.flatten(3)).view(*y.shape[:2], ad.shape[0], *y.shape[3:])
    return y


def _window_matrix(starts, ends, size, x, weights=None):
    rows = [[0.0] * size for _ in starts]
    for o, (s, e) in enumerate(zip(starts, ends)):
        for i in range(max(s, 0), min(e, size)):
            rows[o][i] = 1.0 if weights is None else weights[o]
    return ember.tensor(rows, dtype=x.dtype, device=x.device)


@autocast_policy(cpu="fp32")
def adaptive_avg_pool3d(input, output_size):
    """The mean of each adaptive window of the last three dims."""
    op = "adaptive_avg_pool3d"
    outs = _adaptive_output(output_size, input, op, f"{op}: output_size must be 3")
    if any(o < 0 for o in outs):
        raise RuntimeError(f"{op}: elements of output_size must be greater than or equal to 0 but received "
                           "{{{}, {},{}}}".format(*outs))
    _check_adaptive_input(input, op, "")
    x = input if input.dim() == 5 else input.unsqueeze(0)
    matrices = []
    for size, out in zip(x.shape[2:], outs):
        starts, ends = _adaptive_bounds(size, out)
        matrices.append(_window_matrix(starts, ends, size, x, [1.0 / (e - s) for s, e in zip(starts, ends)]))
    return _unbatch(_separable_sum(x, matrices), input.dim() == 4)


@autocast_policy(cpu="fp32")
def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """The mean of each window of the last three dims (or its sum / divisor_override)."""
    op = "avg_pool3d"
    kernel = _three(kernel_size, op, "kernel_size", form="be")
    stride = _three(stride if stride is not None else [], op, "stride", omitted=True, form="be") or kernel
    padding = _three(padding, op, "padding", form="be")
    if any(s == 0 for s in stride):
        raise RuntimeError("stride should not be zero")
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    if any(k <= 0 for k in kernel):
        raise RuntimeError("kernel size should be greater than zero, but got kT: {} kH: {} kW: {}".format(*kernel))
    if any(s < 0 for s in stride):
        raise RuntimeError("stride should be greater than zero, but got dT: {} dH: {} dW: {}".format(*stride))
    x = _batched(input, "non-empty 4D or 5D (batch mode) tensor expected for input")
    if any(s == 0 for s in input.shape[-4:]):
        raise RuntimeError("non-empty 4D or 5D (batch mode) tensor expected for input")
    sizes = list(x.shape[2:])
    if any(k > s + 2 * p for k, s, p in zip(kernel, sizes, padding)):
        raise RuntimeError("input image (T: {} H: {} W: {}) smaller than kernel size (kT: {} kH: {} kW: {})"
                           .format(*sizes, *kernel))
    for k, p in zip(kernel, padding):
        if p > k // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got pad={p}, "
                               f"kernel_size={k} and dilation=1")
    outs = [_output_size(*a, 1, ceil_mode) for a in zip(sizes, kernel, padding, stride)]
    if any(o < 1 for o in outs):
        raise RuntimeError("Given input size: ({}x{}x{}x{}). Calculated output size: ({}x{}x{}x{}). Output size is "
                           "too small".format(x.shape[1], *sizes, x.shape[1], *outs))
    matrices, divisors = [], []
    for size, k, p, s, out in zip(sizes, kernel, padding, stride, outs):
        starts = [o * s - p for o in range(out)]
        ends = [min(st + k, size + p) for st in starts]
        matrices.append(_window_matrix(starts, ends, size, x))
        counts = ([e - st for st, e in zip(starts, ends)] if count_include_pad else
                  [min(e, size) - max(st, 0) for st, e in zip(starts, ends)])
        divisors.append(counts)
    if not x.is_floating_point():  # PyTorch's integer pools: an exact sum, then truncating division
        sums = _separable_sum(x.double(), [m.double() for m in matrices])
        divisor = divisor_override if divisor_override is not None else _divisor(divisors, sums)
        return _unbatch((sums / divisor).trunc().to(x.dtype), input.dim() == 4)
    sums = _separable_sum(x, matrices)
    if divisor_override is not None:
        return _unbatch(sums / divisor_override, input.dim() == 4)
    return _unbatch(sums / _divisor(divisors, sums), input.dim() == 4)


def _divisor(divisors, like):
    dd, dh, dw = (ember.tensor(d, dtype=like.dtype, device=like.device) for d in divisors)
    return dd.view(-1, 1, 1) * dh.view(1, -1, 1) * dw.view(1, 1, -1)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of max_pool3d: each element put back at its index, zeros elsewhere."""
    from .functional import _ntuple, _unpool_output_size
    kernel_size = _ntuple(kernel_size, 3)
    stride = kernel_size if stride is None else _ntuple(stride, 3)
    size = _unpool_output_size(input, kernel_size, stride, _ntuple(padding, 3), output_size)
    if indices.shape != input.shape:
        raise RuntimeError("Expected shape of indices to be same as that of the input tensor ({}) but got indices "
                           "tensor with shape: {}".format(list(input.shape), list(indices.shape)))
    if indices.dtype != ember.int64:
        raise RuntimeError(f"elements in indices should be type int64 but got: {indices.dtype}")
    if input.dim() not in (4, 5):
        raise RuntimeError(f"Input to max_unpooling3d should be a 4d or 5d Tensor, but got a tensor with "
                           f"{input.dim()} dimensions.")
    volume = math.prod(size)
    flat_indices = indices.flatten(-3)
    if flat_indices.numel() and (int(flat_indices.min()) < 0 or int(flat_indices.max()) >= volume):
        bad = flat_indices[(flat_indices < 0) | (flat_indices >= volume)][0]
        raise RuntimeError("Found an invalid max index: {} (output volumes are of size {}x{}x{})"
                           .format(int(bad), *size))
    out = input.new_zeros((*input.shape[:-3], volume))
    return out.scatter(-1, flat_indices, input.flatten(-3)).view(*input.shape[:-3], *size)
