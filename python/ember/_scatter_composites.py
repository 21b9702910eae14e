"""The out-of-place writes PyTorch composes from a clone and an in-place op: index_put,
index_reduce, select_scatter, slice_scatter, diagonal_scatter and as_strided_scatter
(each a copy of input with src written where the view selects)."""
import warnings

from . import _C


def index_put(input, indices, values, accumulate=False):
    """A copy of input with index_put_(indices, values, accumulate) applied."""
    return input.clone().index_put_(list(indices), values, accumulate)


_INDEX_REDUCTIONS = ("prod", "mean", "amax", "amin")
_warned_index_reduce = False


def _index_reduce_source_index(dim, index, source):
    """index spread over source's shape along dim: what scatter_reduce reads."""
    if index.dim() > 1:
        raise IndexError("index_reduce_(): Index is supposed to be a vector")
    if index.dtype not in (_C.int64, _C.int32):
        raise RuntimeError("index_reduce_(): Expected dtype int32/int64 for index but got: " + str(index.dtype))
    src_dim = dim % max(source.dim(), 1)
    count = source.shape[src_dim] if source.dim() else 1
    if index.numel() != count:
        raise RuntimeError(f"index_reduce_(): Number of indices ({index.numel()}) should be equal to "
                           f"source.size(dim): ({count}), for dim: {dim}")
    shape = [1] * source.dim()
    if shape:
        shape[src_dim] = count
    return index.to(_C.int64).reshape(shape).expand(source.shape)


def index_reduce(input, dim, index, source, reduce, *, include_self=True):
    """A copy of input whose slices input.select(dim, index[i]) are reduced (prod, mean, amax or amin)
    with source.select(dim, i)."""
    global _warned_index_reduce
    if not _warned_index_reduce:
        _warned_index_reduce = True
        warnings.warn("index_reduce() is in beta and the API may change at any time.", UserWarning, stacklevel=2)
    if reduce not in _INDEX_REDUCTIONS:
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got {reduce}.")
    spread = _index_reduce_source_index(dim, index, source)
    return input.scatter_reduce(dim, spread, source, reduce, include_self=include_self)


def index_reduce_(self, dim, index, source, reduce, *, include_self=True):
    """In-place index_reduce."""
    return self.copy_(index_reduce(self, dim, index, source, reduce, include_self=include_self))


def _scatter_into_view(input, src, view_of):
    out = input.clone()
    view = view_of(out)
    if tuple(view.shape) != tuple(src.shape):
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = {list(src.shape)}, "
                           f"slice size = {list(view.shape)}")
    view.copy_(src)
    return out


def select_scatter(input, src, dim, index):
    """A copy of input with src written into input.select(dim, index)."""
    return _scatter_into_view(input, src, lambda t: t.select(dim, index))


def slice_scatter(input, src, dim=0, start=None, end=None, step=1):
    """A copy of input with src written into input's slice start:end:step along dim."""
    return _scatter_into_view(input, src, lambda t: _C.slice(t, dim, start, end, step))


def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    """A copy of input with src written into input.diagonal(offset, dim1, dim2)."""
    return _scatter_into_view(input, src, lambda t: t.diagonal(offset, dim1, dim2))


def as_strided_scatter(input, src, size, stride, storage_offset=None):
    """A copy of input (same layout) with src written into its as_strided(size, stride, storage_offset) view."""
    return _scatter_into_view(input, src, lambda t: t.as_strided(size, stride, storage_offset))
