"""F.affine_grid and F.grid_sample as composites of ember ops, so both the input's and the grid's
gradients come from autograd. One code path serves 2-D and 3-D: each output point reads the input
at a few taps per spatial dim (2 for linear, 1 for nearest, 4 for bicubic), gathers every
combination of taps from the flattened input and sums them weighted by the per-dim weights' product.
Taps outside the input read zero (padding_mode='zeros'); border and reflection move the coordinate
into the input first, as ATen's grid sampler does."""
import itertools
import warnings

import ember
from .._autocast_policy import autocast_policy

__all__ = ["affine_grid", "grid_sample"]

_ALIGN_WARNING = ("Default grid_sample and affine_grid behavior has changed to align_corners=False since 1.3.0. "
                  "Please specify align_corners=True if the old behavior is desired. See the documentation of "
                  "grid_sample for details.")
_CUBIC_A = -0.75  # the cubic convolution coefficient of PyTorch's bicubic modes


def _base_coordinates(steps, align_corners, like):
    """linspace(-1, 1, steps), scaled to pixel centres unless align_corners (ATen's linspace_from_neg_one)."""
    if steps <= 1:
        return ember.zeros(max(steps, 0), dtype=like.dtype, device=like.device)
    line = ember.linspace(-1, 1, steps, dtype=like.dtype, device=like.device)
    return line if align_corners else line * ((steps - 1) / steps)


def affine_grid(theta, size, align_corners=None):
    """The sampling grid (N, *spatial, n) that the affine matrices theta (N, n, n+1) make of the
    normalized output coordinates, for grid_sample."""
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=2)
        align_corners = False
    if not theta.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    if len(size) == 4:
        if theta.dim() != 3 or theta.shape[-2] != 2 or theta.shape[-1] != 3:
            raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size {size}. "
                             f"Got {theta.shape}.")
    elif len(size) == 5:
        if theta.dim() != 3 or theta.shape[-2] != 3 or theta.shape[-1] != 4:
            raise ValueError(f"Expected a batch of 3D affine matrices of shape Nx3x4 for size {size}. "
                             f"Got {theta.shape}.")
    else:
        raise NotImplementedError("affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
                                  f"respectively. Got size {size}.")
    spatial = list(size)[2:]
    if align_corners and min(spatial) == 1:
        warnings.warn("Since version 1.3.0, affine_grid behavior has changed for unit-size grids when "
                      "align_corners=True. This is not an intended use case of affine_grid. See the documentation "
                      "of affine_grid for details.", stacklevel=2)
    elif min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    # the base grid's last dim is (x, y[, z], 1): x runs along the last spatial dim
    axes = [_base_coordinates(s, align_corners, theta) for s in spatial]
    mesh = ember.meshgrid(*axes, indexing="ij")[::-1]
    base = ember.stack(list(mesh) + [ember.ones_like(mesh[0])], dim=-1).reshape(1, -1, len(spatial) + 1)
    grid = base.matmul(theta.transpose(1, 2))
    return grid.view(size[0], *spatial, len(spatial))


def _unnormalize(coord, size, align_corners):
    if align_corners:
        return (coord + 1) / 2 * (size - 1)
    return ((coord + 1) * size - 1) / 2


def _reflect(coord, twice_low, twice_high):
    """ATen's reflect_coordinates: coord folded into [twice_low / 2, twice_high / 2]."""
    if twice_low == twice_high:
        return ember.zeros_like(coord)
    low, span = twice_low / 2, (twice_high - twice_low) / 2
    coord = (coord - low).abs()
    extra = ember.fmod(coord, span)
    flips = ember.floor(coord / span)
    return ember.where(ember.fmod(flips, 2) == 0, extra + low, span - extra + low)


def _apply_padding(coord, size, padding_mode, align_corners):
    """A pixel coordinate moved into the input by border / reflection padding (zeros leaves it)."""
    if padding_mode == "border":
        return coord.clamp(0, size - 1)
    if padding_mode == "reflection":
        coord = _reflect(coord, 0, 2 * (size - 1)) if align_corners else _reflect(coord, -1, 2 * size - 1)
        return coord.clamp(0, size - 1)
    return coord


def _cubic_weights(t):
    """The four cubic convolution weights of taps -1, 0, 1, 2 at fraction t (ATen's get_cubic_upsample_coefficients)."""
    a = _CUBIC_A

    def near(x):  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _taps(coord, size, mode, padding_mode, align_corners):
    """Per spatial dim: a list of (integer position, weight, in-bounds mask) of the taps at pixel coordinate coord."""
    if mode == "bicubic":  # the taps are padded one by one, the fraction taken before padding
        start = ember.floor(coord)
        weights = _cubic_weights(coord - start)
        taps = []
        for i, w in enumerate(weights):
            pos = _apply_padding(start + (i - 1), size, padding_mode, align_corners).detach()
            taps.append((pos, w))
    else:
        coord = _apply_padding(coord, size, padding_mode, align_corners)
        if mode == "nearest":
            taps = [(ember.round(coord).detach(), None)]
        else:
            start = ember.floor(coord).detach()
            frac = coord - start
            taps = [(start, 1 - frac), (start + 1, frac)]
    return [(pos, w, (pos >= 0) & (pos <= size - 1)) for pos, w in taps]


def _check_grid_sample(input, grid, mode):
    if input.device != grid.device:
        raise RuntimeError("grid_sampler(): expected input and grid to be on same device, but input is on "
                           f"{input.device} and grid is on {grid.device}")
    if input.shape[0] != grid.shape[0]:
        raise RuntimeError("grid_sampler(): expected grid and input to have same batch size, but got input with "
                           f"sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    if grid.shape[-1] != input.dim() - 2:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {input.dim() - 2} in last dimension, but got "
                           f"grid with sizes {list(grid.shape)}")
    for d in range(2, input.dim()):
        if input.shape[d] == 0:
            raise RuntimeError("grid_sampler(): expected input to have non-empty spatial dimensions, but input has "
                               f"sizes {list(input.shape)} with dimension {d} being empty")
    if input.dim() not in (4, 5) or grid.dim() != input.dim():
        raise RuntimeError("grid_sampler(): expected 4D or 5D input and grid with same number of dimensions, but got "
                           f"input with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    if mode == "bicubic" and input.dim() == 5:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    if input.dtype != grid.dtype:
        raise RuntimeError(f"expected scalar type {_type_name(input.dtype)} but found {_type_name(grid.dtype)}")


def _type_name(dtype):
    return {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16"}.get(
        str(dtype).split(".")[-1], str(dtype))


@autocast_policy(cpu="fp32", cuda="promote")
def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """The input (N, C, *spatial) sampled at the normalized coordinates of grid (N, *out, n):
    grid[..., 0] is x (the last dim), -1 and 1 the input's edges (corner centres with align_corners)."""
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError("nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', but "
                         f"got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError("nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
                         f"'reflection', but got: '{padding_mode}'")
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=2)
        align_corners = False
    _check_grid_sample(input, grid, mode)
    n, c = input.shape[:2]
    sizes = list(input.shape[2:])           # (D,) H, W
    out_shape = list(grid.shape[1:-1])
    flat_grid = grid.reshape(n, -1, len(sizes))
    # grid's last dim runs x, y(, z): reverse it to the input's dim order
    per_dim = [_taps(_unnormalize(flat_grid[..., len(sizes) - 1 - d], size, align_corners), size, mode, padding_mode,
                     align_corners) for d, size in enumerate(sizes)]
    flat_input = input.reshape(n, c, -1)
    strides = [1] * len(sizes)
    for d in range(len(sizes) - 2, -1, -1):
        strides[d] = strides[d + 1] * sizes[d + 1]
    result = None
    for combo in itertools.product(*per_dim):
        inside = combo[0][2]
        index = ember.zeros_like(combo[0][0])
        weight = None
        for d, (pos, w, mask) in enumerate(combo):
            inside = inside & mask
            index = index + pos.clamp(0, sizes[d] - 1) * strides[d]
            if w is not None:
                weight = w if weight is None else weight * w
        index = index.to(ember.int64).unsqueeze(1).expand(n, c, index.shape[-1])
        values = flat_input.gather(2, index)
        factor = inside.to(input.dtype) if weight is None else ember.where(inside, weight, ember.zeros_like(weight))
        term = values * factor.unsqueeze(1)
        result = term if result is None else result + term
    return result.view(n, c, *out_shape)
