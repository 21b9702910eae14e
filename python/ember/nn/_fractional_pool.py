"""F.fractional_max_pool2d/3d as composites: each plane's pseudo-random window starts (ATen's
generate_intervals, from that plane's `_random_samples`) become per-plane gather indices; the max
over each gathered window, and its flat index, as the fixed-window max pools of _pool3d."""
import numpy as np

import ember

__all__ = ["fractional_max_pool2d", "fractional_max_pool2d_with_indices", "fractional_max_pool3d",
           "fractional_max_pool3d_with_indices"]

_NP_DTYPES = {"float32": np.float32, "float64": np.float64, "float16": np.float16}


def _intervals(samples, input_size, output_size, pool_size, dtype):
    """ATen's generate_intervals, vectorised over planes, in the input's floating type: the window
    starts floor((i + u) * alpha) - floor(u * alpha), the last one flush with the input's end."""
    u = samples.astype(dtype)
    starts = np.empty(u.shape + (output_size,), dtype=np.int64)
    if output_size > 1:
        alpha = dtype(input_size - pool_size) / dtype(output_size - 1)
        i = np.arange(output_size - 1, dtype=dtype)
        starts[..., :-1] = (np.floor((i + u[..., None]) * alpha).astype(np.int64)
                            - np.floor(u * alpha).astype(np.int64)[..., None])
    if output_size > 0:
        starts[..., -1] = input_size - pool_size
    return starts


def _ntuple(value, n, what, op):
    values = list(value) if isinstance(value, (list, tuple)) else [value]
    if len(values) == 1:
        values = values * n
    if len(values) != n:
        raise RuntimeError(f"{op}(): {what} must either be a single int or tuple of Ints")
    return values


def _fractional_max_pool(input, kernel_size, output_size, output_ratio, samples, n):
    op = f"fractional_max_pool{n}d"
    if output_size is None and output_ratio is None:
        raise ValueError(f"{op} requires specifying either an output_size or an output_ratio")
    if output_size is None:
        ratio = list(output_ratio) if isinstance(output_ratio, (list, tuple)) else [output_ratio] * n
        if len(ratio) > n:
            raise ValueError(f"{op} requires output_ratio to either be a single Int or tuple of Ints.")
        output_size = [int(input.size(d - n) * r) for d, r in enumerate(ratio)]
    if samples is None:
        n_batch = 1 if input.dim() == n + 1 else input.size(0)
        samples = ember.rand(n_batch, input.size(-n - 1), n, dtype=input.dtype, device=input.device)
    kernel = _ntuple(kernel_size, n, "kernel_size", op)
    outs = _ntuple(output_size, n, "output_size", op)
    if input.dim() not in (n + 1, n + 2):
        raise RuntimeError(f"{op}(): Expected {n + 1}D or {n + 2}D tensor, but got: {list(input.shape)}")
    if samples.dim() != 3 or samples.size(2) != n:
        raise RuntimeError(f"Expect _random_samples.size(2) equals to {n}; got {samples.size(-1)}.")
    x = input if input.dim() == n + 2 else input.unsqueeze(0)
    sizes = list(x.shape[2:])
    names = ("time", "height", "width")[3 - n:]
    where = f"{op}_out()" if n == 3 else f"{op}()"
    for name, size, k, out in zip(names, sizes, kernel, outs):
        if out + k - 1 > size:
            raise RuntimeError(f"{where}: pool {name} {k} too large relative to input {name} {size}")
    planes, c = x.shape[0], x.shape[1]
    dtype = _NP_DTYPES.get(str(x.dtype).split(".")[-1], np.float64)
    u = samples.detach().to(ember.float64).numpy().astype(dtype)
    # as ATen reads them: 2-D takes (width, height) from each plane's samples, 3-D (time, height, width)
    sample_of_dim = [1, 0] if n == 2 else [0, 1, 2]
    starts = [_intervals(u[..., sample_of_dim[d]], size, out, k, dtype) for d, (size, out, k) in
              enumerate(zip(sizes, outs, kernel))]
    for d, (s, k) in enumerate(zip(starts, kernel)):
        pos = s[..., None] + np.arange(k)                      # (N, C, out, k)
        shape = [planes, c] + [1] * (2 * n)
        shape[2 + 2 * d], shape[3 + 2 * d] = pos.shape[2], k
        starts[d] = ember.tensor(pos.reshape(shape), dtype=ember.int64, device=x.device)
    batch = ember.arange(planes, device=x.device).view([planes] + [1] * (2 * n + 1))
    channel = ember.arange(c, device=x.device).view([1, c] + [1] * (2 * n))
    windows = x[(batch, channel) + tuple(starts)]               # (N, C, o0, k0, o1, k1[, o2, k2])
    flat = starts[0]
    for d in range(1, n):
        flat = flat * sizes[d] + starts[d]
    order = [0, 1] + [2 + 2 * d for d in range(n)] + [3 + 2 * d for d in range(n)]
    volume = int(np.prod(kernel))
    windows = windows.permute(order).reshape(planes, c, *outs, volume)
    flat = flat.expand([planes, c] + [s for o, k in zip(outs, kernel) for s in (o, k)])
    flat = flat.permute(order).reshape(planes, c, *outs, volume)
    values, arg = windows.max(-1)
    indices = flat.gather(-1, arg.unsqueeze(-1)).squeeze(-1)
    if input.dim() == n + 1:
        return values.squeeze(0), indices.squeeze(0)
    return values, indices


def _public_functions(n, dims):
    """F.fractional_max_pool{n}d and its _with_indices form, with PyTorch's signatures."""
    def with_indices(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                     _random_samples=None):
        return _fractional_max_pool(input, kernel_size, output_size, output_ratio, _random_samples, n)

    def pool(input, kernel_size, output_size=None, output_ratio=None, return_indices=False, _random_samples=None):
        result = _fractional_max_pool(input, kernel_size, output_size, output_ratio, _random_samples, n)
        return result if return_indices else result[0]

    with_indices.__name__ = with_indices.__qualname__ = f"fractional_max_pool{n}d_with_indices"
    pool.__name__ = pool.__qualname__ = f"fractional_max_pool{n}d"
    with_indices.__doc__ = (f"Fractional max pooling of the last {dims} dims (pseudo-random window starts), and "
                            "the flat indices.")
    pool.__doc__ = f"Fractional max pooling of the last {dims} dims (and the indices with return_indices)."
    return with_indices, pool


fractional_max_pool2d_with_indices, fractional_max_pool2d = _public_functions(2, "two")
fractional_max_pool3d_with_indices, fractional_max_pool3d = _public_functions(3, "three")
