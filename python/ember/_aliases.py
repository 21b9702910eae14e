"""torch.* names that are other names of shape ops (adjoint, split_with_sizes, unsafe_*; plain aliases such as
concat and moveaxis are ops.yaml entries) and the *_copy forms of the view ops (the view's values in a new
contiguous tensor, as torch's view_copy family)."""
from . import _C


def adjoint(input):
    """The conjugate transpose of the last two dims (a view; the transpose for real tensors)."""
    if input.dim() < 2:
        raise RuntimeError(f"tensor.adjoint() is only supported on matrices or batches of matrices. Got "
                           f"{input.dim()}-D tensor.")
    return input.transpose(-2, -1)


def split_with_sizes(input, split_sizes, dim=0):
    """split with a list of sizes."""
    return _C.split(input, list(split_sizes), dim)


def unsafe_chunk(input, chunks, dim=0):
    """chunk (ember's results are ordinary views: nothing is unsafe about them)."""
    return _C.chunk(input, chunks, dim)


def unsafe_split(input, split_size, dim=0):
    """split (ordinary views)."""
    return _C.split(input, split_size, dim)


def unsafe_split_with_sizes(input, split_sizes, dim=0):
    """split_with_sizes (ordinary views)."""
    return split_with_sizes(input, split_sizes, dim)


def _copy(view):
    out = _C.empty(tuple(view.shape), dtype=view.dtype, device=view.device)
    return out.copy_(view)  # a copy_ node: gradients flow back to the view


def _copy_form(name, make_view):
    def fn(input, *args, out=None, **kwargs):
        result = make_view(input, *args, **kwargs)
        if isinstance(result, (tuple, list)):
            return tuple(_copy(r) for r in result)
        result = _copy(result)
        return result if out is None else out.copy_(result)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"The values of {name[:-5]}(...) in a new contiguous tensor (not a view)."
    return fn


_VIEW_OPS = {
    "alias_copy": lambda x: x, "as_strided_copy": lambda x, *a, **k: x.as_strided(*a, **k),
    "detach_copy": lambda x: x.detach(), "diagonal_copy": lambda x, *a, **k: x.diagonal(*a, **k),
    "expand_copy": lambda x, size, implicit=False: x.expand(size), "narrow_copy": lambda x, *a: x.narrow(*a),
    "permute_copy": lambda x, dims: x.permute(dims), "select_copy": lambda x, dim, index: x.select(dim, index),
    "slice_copy": lambda x, *a, **k: _C.slice(x, *a, **k), "split_copy": lambda x, *a: _C.split(x, *a),
    "split_with_sizes_copy": lambda x, *a: split_with_sizes(x, *a), "squeeze_copy": lambda x, *a: x.squeeze(*a),
    "t_copy": lambda x: x.t(), "transpose_copy": lambda x, d0, d1: x.transpose(d0, d1),
    "unbind_copy": lambda x, dim=0: x.unbind(dim), "unfold_copy": lambda x, *a: x.unfold(*a),
    "unsqueeze_copy": lambda x, dim: x.unsqueeze(dim), "view_copy": lambda x, size: x.view(size),
}
COPY_FUNCTIONS = {name: _copy_form(name, make) for name, make in _VIEW_OPS.items()}
globals().update(COPY_FUNCTIONS)  # ember.view_copy, ... (ember binds them from here on first use)
