"""Embedding tables, as torch.nn.modules.sparse: Embedding and EmbeddingBag over F.embedding and
F.embedding_bag. sparse=True is accepted, but the weight's gradient is dense (ember has no sparse tensors):
the same values, so SGD, Adagrad and the like update the weights as PyTorch's do with its sparse gradient."""
import ember

from .. import functional as F, init
from ..parameter import Parameter
from .module import Module

__all__ = ["Embedding", "EmbeddingBag"]


def _padding_row(padding_idx, num_embeddings, what):
    """padding_idx checked against the table and made non-negative, as PyTorch's constructors do."""
    if padding_idx is not None:
        if padding_idx > 0 and padding_idx >= num_embeddings:
            raise AssertionError(f"{what} must be within num_embeddings")
        if padding_idx < 0:
            if padding_idx < -num_embeddings:
                raise AssertionError(f"{what} must be within num_embeddings")
            padding_idx = num_embeddings + padding_idx
    return padding_idx


def _table(num_embeddings, embedding_dim, _weight, requires_grad, factory_kwargs):
    """The weight Parameter: a new (num_embeddings, embedding_dim) table, or `_weight` checked for that shape."""
    if _weight is None:
        return Parameter(ember.empty((num_embeddings, embedding_dim), **factory_kwargs), requires_grad=requires_grad)
    if list(_weight.shape) != [num_embeddings, embedding_dim]:
        raise AssertionError("Shape of weight does not match num_embeddings and embedding_dim")
    return Parameter(_weight, requires_grad=requires_grad)


class _EmbeddingBase(Module):
    def reset_parameters(self):
        init.normal_(self.weight)
        self._fill_padding_idx_with_zero()

    def _fill_padding_idx_with_zero(self):
        if self.padding_idx is not None:
            with ember.no_grad():
                self.weight[self.padding_idx].fill_(0)

    def _extra_repr_options(self, fmt):
        # Embedding formats its options with str, EmbeddingBag with repr (as PyTorch's).
        s = ""
        if self.max_norm is not None:
            s += f", max_norm={fmt(self.max_norm)}"
        if self.norm_type != 2:
            s += f", norm_type={fmt(self.norm_type)}"
        if self.scale_grad_by_freq is not False:
            s += f", scale_grad_by_freq={fmt(self.scale_grad_by_freq)}"
        return s


def _check_pretrained(embeddings):
    if embeddings.dim() != 2:
        raise AssertionError("Embeddings parameter is expected to be 2-dimensional")
    return embeddings.shape


class Embedding(_EmbeddingBase):
    """A lookup table of `num_embeddings` vectors of size `embedding_dim`, indexed by the input."""

    __constants__ = ["num_embeddings", "embedding_dim", "padding_idx", "max_norm", "norm_type",
                     "scale_grad_by_freq", "sparse"]

    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, max_norm=None, norm_type=2.0,
                 scale_grad_by_freq=False, sparse=False, _weight=None, _freeze=False, device=None, dtype=None):
        factory_kwargs = {"device": device, "dtype": dtype}
        super().__init__()
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.padding_idx = _padding_row(padding_idx, num_embeddings, "Padding_idx")
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        self.weight = _table(num_embeddings, embedding_dim, _weight, not _freeze, factory_kwargs)
        if _weight is None:
            self.reset_parameters()
        self.sparse = sparse

    def forward(self, input):
        return F.embedding(input, self.weight, self.padding_idx, self.max_norm, self.norm_type,
                           self.scale_grad_by_freq, self.sparse)

    def extra_repr(self):
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        s += self._extra_repr_options(str)
        if self.sparse is not False:
            s += ", sparse=True"
        return s

    @classmethod
    def from_pretrained(cls, embeddings, freeze=True, padding_idx=None, max_norm=None, norm_type=2.0,
                        scale_grad_by_freq=False, sparse=False):
        """An Embedding whose table is `embeddings` (frozen unless freeze=False)."""
        rows, cols = _check_pretrained(embeddings)
        return cls(num_embeddings=rows, embedding_dim=cols, _weight=embeddings, _freeze=freeze,
                   padding_idx=padding_idx, max_norm=max_norm, norm_type=norm_type,
                   scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


class EmbeddingBag(_EmbeddingBase):
    """Sums, means or maxes of bags of embeddings, without materialising the intermediate rows."""

    __constants__ = ["num_embeddings", "embedding_dim", "max_norm", "norm_type", "scale_grad_by_freq", "mode",
                     "sparse", "include_last_offset", "padding_idx"]

    def __init__(self, num_embeddings, embedding_dim, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
                 mode="mean", sparse=False, _weight=None, include_last_offset=False, padding_idx=None, device=None,
                 dtype=None):
        factory_kwargs = {"device": device, "dtype": dtype}
        super().__init__()
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        self.padding_idx = _padding_row(padding_idx, num_embeddings, "padding_idx")
        self.weight = _table(num_embeddings, embedding_dim, _weight, True, factory_kwargs)
        if _weight is None:
            self.reset_parameters()
        self.mode = mode
        self.sparse = sparse
        self.include_last_offset = include_last_offset

    def forward(self, input, offsets=None, per_sample_weights=None):
        return F.embedding_bag(input, self.weight, offsets, self.max_norm, self.norm_type, self.scale_grad_by_freq,
                               self.mode, self.sparse, per_sample_weights, self.include_last_offset,
                               self.padding_idx)

    def extra_repr(self):
        s = f"{self.num_embeddings!r}, {self.embedding_dim!r}" + self._extra_repr_options(repr)
        s += f", mode={self.mode!r}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx!r}"
        return s

    @classmethod
    def from_pretrained(cls, embeddings, freeze=True, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
                        mode="mean", sparse=False, include_last_offset=False, padding_idx=None):
        """An EmbeddingBag whose table is `embeddings` (frozen unless freeze=False)."""
        rows, cols = _check_pretrained(embeddings)
        bag = cls(num_embeddings=rows, embedding_dim=cols, _weight=embeddings, max_norm=max_norm,
                  norm_type=norm_type, scale_grad_by_freq=scale_grad_by_freq, mode=mode, sparse=sparse,
                  include_last_offset=include_last_offset, padding_idx=padding_idx)
        bag.weight.requires_grad = not freeze
        return bag
