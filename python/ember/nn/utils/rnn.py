"""Packed and padded sequences for the recurrent layers, as torch.nn.utils.rnn.

A PackedSequence holds the steps of a batch of sequences of different lengths
one after another: step t's rows are the sequences still running at t (sorted
longest first), ``batch_sizes[t]`` of them. Packing and padding are a single
``index_select`` each (with the row indices worked out in NumPy), so gradients
flow through them."""
from __future__ import annotations

from collections import namedtuple
from typing import List, Optional, Union

import numpy as np

import ember

from ..._tensor import Tensor

__all__ = [
    "PackedSequence", "invert_permutation", "pack_padded_sequence", "pad_packed_sequence", "pad_sequence",
    "unpad_sequence", "pack_sequence", "unpack_sequence",
]

PackedSequence_ = namedtuple("PackedSequence_", ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])


def _packed_sequence_init_args(data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
    if unsorted_indices is None:
        unsorted_indices = invert_permutation(sorted_indices)
    if batch_sizes is not None:
        if batch_sizes.device.type != "cpu":
            raise ValueError(
                "batch_sizes should always be on CPU. Instances of PackedSequence should never be created "
                "manually. They should be instantiated by functions like pack_sequence and "
                "pack_padded_sequences in nn.utils.rnn. "
                "https://pytorch.org/docs/stable/nn.html#torch.nn.utils.rnn.pack_sequence")
        return data, batch_sizes, sorted_indices, unsorted_indices
    # The legacy form PackedSequence((data, batch_sizes)).
    assert isinstance(data, (list, tuple)) and len(data) == 2
    return data[0], data[1], sorted_indices, unsorted_indices


class PackedSequence(PackedSequence_):
    r"""Holds the data and list of :attr:`batch_sizes` of a packed sequence.

    All RNN modules accept packed sequences as inputs. Instances are made by
    :func:`pack_padded_sequence` and :func:`pack_sequence`, not by hand.
    """

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        return super().__new__(cls, *_packed_sequence_init_args(data, batch_sizes, sorted_indices, unsorted_indices))

    def to(self, *args, **kwargs):
        r"""Perform dtype and/or device conversion on `self.data` (``self`` when nothing changes)."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        # The indices follow data's device; batch_sizes stays on the CPU.
        sorted_indices = None if self.sorted_indices is None else self.sorted_indices.to(data.device)
        unsorted_indices = None if self.unsorted_indices is None else self.unsorted_indices.to(data.device)
        return type(self)(data, self.batch_sizes, sorted_indices, unsorted_indices)

    def cuda(self, *args, **kwargs):
        return self.to(*args, **{"device": "cuda", **kwargs}) if not args else self.to(*args, **kwargs)

    def cpu(self, *args, **kwargs):
        return self.to("cpu", *args, **kwargs)

    def double(self):
        return self.to(dtype=ember.double)

    def float(self):
        return self.to(dtype=ember.float)

    def half(self):
        return self.to(dtype=ember.half)

    def long(self):
        return self.to(dtype=ember.long)

    def int(self):
        return self.to(dtype=ember.int)

    def short(self):
        return self.to(dtype=ember.short)

    def char(self):
        return self.to(dtype=ember.int8)

    def byte(self):
        return self.to(dtype=ember.uint8)

    @property
    def is_cuda(self):
        r"""Return true if `self.data` stored on a gpu."""
        return self.data.is_cuda


def invert_permutation(permutation: Optional[Tensor]) -> Optional[Tensor]:
    """The inverse of a permutation of 0..n-1 (None stays None)."""
    if permutation is None:
        return None
    output = ember.empty_like(permutation)
    output.scatter_(0, permutation, ember.arange(0, permutation.numel(), device=permutation.device))
    return output


def _lengths_array(lengths) -> np.ndarray:
    if isinstance(lengths, Tensor):
        if lengths.dim() != 1:
            raise RuntimeError("'lengths' argument should be a 1D CPU int64 tensor, but got "
                               f"{lengths.dim()}D {lengths.device.type} {str(lengths.type()).split('.')[-1][:-6]} tensor")
        return lengths.cpu().numpy().astype(np.int64)
    arr = np.asarray(lengths)
    if arr.ndim != 1:
        raise RuntimeError(f"'lengths' argument should be a 1D CPU int64 tensor, but got {arr.ndim}D cpu Long tensor")
    return arr.astype(np.int64)


def _batch_sizes(lengths: np.ndarray) -> np.ndarray:
    """batch_sizes[t] = how many (sorted, decreasing) lengths exceed t."""
    steps = np.arange(int(lengths[0]) if lengths.size else 0)
    return (lengths[None, :] > steps[:, None]).sum(1).astype(np.int64)


def _index(values: np.ndarray, device) -> Tensor:
    return ember.from_numpy(np.ascontiguousarray(values, dtype=np.int64)).to(device)


def _select_rows(source: Tensor, rows: np.ndarray) -> Tensor:
    return source.index_select(0, _index(rows, source.device))


def pack_padded_sequence(input: Tensor, lengths: Union[Tensor, List[int]], batch_first: bool = False,
                         enforce_sorted: bool = True) -> PackedSequence:
    r"""Packs a Tensor containing padded sequences of variable length.

    :attr:`input` is ``T x B x *`` (``B x T x *`` if :attr:`batch_first`); with
    :attr:`enforce_sorted` the sequences must be sorted by length, longest first.
    """
    sizes = _lengths_array(lengths)  # as a NumPy array
    batch_dim = 0 if batch_first else 1
    if enforce_sorted:
        sorted_indices = None
        order = np.arange(sizes.size)
    else:
        order = np.argsort(-sizes, kind="stable")
        sorted_indices = _index(order, input.device)
        sizes = sizes[order]
    if sizes.size != input.size(batch_dim):
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got {sizes.size} "
                           f"(batch_size={input.size(batch_dim)})")
    if sizes.size and sizes[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element in 'lengths' "
                           "that is <= 0")
    if np.any(sizes[1:] > sizes[:-1]):
        raise RuntimeError(
            "`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. You can pass "
            "`enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to sidestep this requirement if "
            "you do not need ONNX exportability.")
    T = input.size(1 - batch_dim)
    if sizes.size and sizes[0] > T:
        raise RuntimeError(f"pack_padded_sequence: a length ({sizes[0]}) exceeds the padded sequence length ({T})")
    batch_sizes = _batch_sizes(sizes)
    # Row (t, b) of the flattened input is t * B + order[b] (time-major) or order[b] * T + t.
    B = sizes.size
    t_idx = np.repeat(np.arange(batch_sizes.size), batch_sizes)
    b_idx = np.concatenate([order[:n] for n in batch_sizes]) if batch_sizes.size else np.zeros(0, np.int64)
    rows = b_idx * T + t_idx if batch_first else t_idx * B + b_idx
    data = _select_rows(input.reshape((T * B,) + tuple(input.shape[2:])), rows)
    return PackedSequence(data, ember.from_numpy(batch_sizes), sorted_indices, None)


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False, padding_value: float = 0.0,
                        total_length: Optional[int] = None):
    r"""Pads a packed batch of variable length sequences (the inverse of :func:`pack_padded_sequence`).

    Returns the padded ``T x B x *`` tensor (``B x T x *`` if :attr:`batch_first`) and the
    lengths of the sequences, in their original order.
    """
    batch_sizes = sequence.batch_sizes.cpu().numpy().astype(np.int64)
    max_seq_length = batch_sizes.size
    if total_length is not None:
        if total_length < max_seq_length:
            raise ValueError("Expected total_length to be at least the length of the longest sequence in input, "
                             f"but got total_length={total_length} and max sequence length being {max_seq_length}")
        max_seq_length = total_length
    data = sequence.data
    B = int(batch_sizes[0]) if batch_sizes.size else 0
    N = data.size(0)
    # Each padded position reads its packed row, or row N (one padding row appended to data).
    offsets = np.concatenate([[0], np.cumsum(batch_sizes)[:-1]]) if batch_sizes.size else np.zeros(0, np.int64)
    table = np.full((max_seq_length, B), N, dtype=np.int64)
    for t, (start, n) in enumerate(zip(offsets, batch_sizes)):
        table[t, :n] = start + np.arange(n)
    lengths = (batch_sizes[:, None] > np.arange(B)[None, :]).sum(0).astype(np.int64)
    if sequence.unsorted_indices is not None:
        order = sequence.unsorted_indices.cpu().numpy().astype(np.int64)
        table, lengths = table[:, order], lengths[order]
    padding = ember.full((1,) + tuple(data.shape[1:]), padding_value, dtype=data.dtype, device=data.device)
    rows = table.T.reshape(-1) if batch_first else table.reshape(-1)
    padded = _select_rows(ember.cat([data, padding]), rows)
    shape = (B, max_seq_length) if batch_first else (max_seq_length, B)
    return padded.reshape(shape + tuple(data.shape[1:])), ember.from_numpy(lengths)


def pad_sequence(sequences: Union[Tensor, List[Tensor]], batch_first: bool = False, padding_value: float = 0.0,
                 padding_side: str = "right") -> Tensor:
    r"""Pads a list of variable length Tensors (each ``L_i x *``) with :attr:`padding_value`.

    Returns ``T x B x *`` (``B x T x *`` if :attr:`batch_first`), ``T`` the longest length;
    :attr:`padding_side` ``"left"`` pads before each sequence.
    """
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    lengths = np.array([s.size(0) for s in sequences], dtype=np.int64)
    T, B = int(lengths.max()), len(sequences)
    flat = ember.cat([s.reshape((s.size(0),) + tuple(s.shape[1:])) for s in sequences]
                     + [ember.full((1,) + tuple(sequences[0].shape[1:]), padding_value,
                                   dtype=sequences[0].dtype, device=sequences[0].device)])
    N = int(lengths.sum())
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    steps = np.arange(T)[None, :]
    shift = (T - lengths)[:, None] if padding_side == "left" else 0
    pos = steps - shift  # position inside each sequence
    table = np.where((pos >= 0) & (pos < lengths[:, None]), starts[:, None] + pos, N)  # (B, T)
    rows = table.reshape(-1) if batch_first else table.T.reshape(-1)
    shape = (B, T) if batch_first else (T, B)
    return _select_rows(flat, rows).reshape(shape + tuple(sequences[0].shape[1:]))


def unpad_sequence(padded_sequences: Tensor, lengths: Tensor, batch_first: bool = False) -> List[Tensor]:
    r"""Splits a padded Tensor into a list of its sequences, each cut to its length."""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [seq[: int(length)] for seq, length in zip(padded_sequences, lengths)]


def pack_sequence(sequences: List[Tensor], enforce_sorted: bool = True) -> PackedSequence:
    r"""Packs a list of variable length Tensors (:func:`pad_sequence` then :func:`pack_padded_sequence`)."""
    lengths = ember.as_tensor([v.size(0) for v in sequences])
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences: PackedSequence) -> List[Tensor]:
    r"""Unpacks a PackedSequence into a list of variable length Tensors."""
    padded_sequences, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded_sequences, lengths, batch_first=True)
