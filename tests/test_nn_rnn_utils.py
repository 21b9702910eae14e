"""nn.utils.rnn (issue 12, point 4): PackedSequence, pack_padded_sequence, pad_packed_sequence,
pad_sequence, pack_sequence, unpad_sequence, unpack_sequence and invert_permutation against
hand-computed layouts and PyTorch, gradients through packing and padding, PyTorch's errors."""
import numpy as np
import pytest

import ember
from ember.nn.utils import rnn as R

try:
    import torch
    import torch.nn.utils.rnn as TR
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="needs torch")


def arange_input(T, B, F=2, batch_first=False):
    x = np.arange(T * B * F, dtype=np.float64).reshape(T, B, F)
    return np.ascontiguousarray(x.transpose(1, 0, 2)) if batch_first else x


def test_pack_padded_layout_by_hand():
    x = arange_input(4, 3, 1)  # value 3 t + b at (t, b)
    p = R.pack_padded_sequence(ember.tensor(x), [4, 2, 1])
    assert isinstance(p, R.PackedSequence) and isinstance(p, tuple)
    assert p._fields == ("data", "batch_sizes", "sorted_indices", "unsorted_indices")
    assert p.batch_sizes.tolist() == [3, 2, 1, 1] and p.batch_sizes.dtype == ember.int64
    assert p.data[:, 0].tolist() == [0, 1, 2, 3, 4, 6, 9]
    assert p.sorted_indices is None and p.unsorted_indices is None
    padded, lengths = R.pad_packed_sequence(p, padding_value=-1.0)
    assert lengths.tolist() == [4, 2, 1]
    expect = np.where(np.arange(4)[:, None] < np.array([4, 2, 1])[None, :], x[:, :, 0], -1.0)
    np.testing.assert_array_equal(padded[:, :, 0].numpy(), expect)


def test_unsorted_batch_first_round_trip_and_total_length():
    x = arange_input(5, 4, 3, batch_first=True)
    lengths = ember.tensor([2, 5, 1, 3])
    p = R.pack_padded_sequence(ember.tensor(x), lengths, batch_first=True, enforce_sorted=False)
    assert p.sorted_indices.tolist() == [1, 3, 0, 2] and p.unsorted_indices.tolist() == [2, 0, 3, 1]
    padded, out_lengths = R.pad_packed_sequence(p, batch_first=True, total_length=7)
    assert out_lengths.tolist() == [2, 5, 1, 3] and tuple(padded.shape) == (4, 7, 3)
    mask = np.arange(7)[None, :] < np.array([2, 5, 1, 3])[:, None]
    np.testing.assert_array_equal(padded.numpy()[mask], x[mask[:, :5]])
    assert (padded.numpy()[~mask] == 0).all()
    with pytest.raises(ValueError, match="Expected total_length to be at least the length of the longest "
                                         "sequence in input, but got total_length=2 and max sequence length being 5"):
        R.pad_packed_sequence(p, total_length=2)


def test_pad_sequence_sides_and_round_trips():
    seqs = [ember.tensor(np.full((n, 2), float(n))) for n in (2, 4, 1)]
    right = R.pad_sequence(seqs, padding_value=-1)
    assert tuple(right.shape) == (4, 3, 2)
    assert right[:, 0, 0].tolist() == [2, 2, -1, -1] and right[:, 2, 0].tolist() == [1, -1, -1, -1]
    left = R.pad_sequence(seqs, batch_first=True, padding_side="left")
    assert tuple(left.shape) == (3, 4, 2)
    assert left[0, :, 0].tolist() == [0, 0, 2, 2] and left[2, :, 0].tolist() == [0, 0, 0, 1]
    lengths = ember.tensor([2, 4, 1])
    for a, b in zip(R.unpad_sequence(right, lengths), seqs):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    packed = R.pack_sequence(seqs, enforce_sorted=False)
    for a, b in zip(R.unpack_sequence(packed), seqs):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    with pytest.raises(RuntimeError, match="`lengths` array must be sorted in decreasing order"):
        R.pack_sequence(seqs)


def test_gradients_flow_through_pack_and_pad():
    x = ember.tensor(arange_input(3, 2, 2), requires_grad=True)
    p = R.pack_padded_sequence(x, [3, 1])
    padded, _ = R.pad_packed_sequence(p)
    (padded * 2).sum().backward()
    mask = (np.arange(3)[:, None] < np.array([3, 1])[None, :])[:, :, None]
    np.testing.assert_array_equal(x.grad.numpy(), np.broadcast_to(2.0 * mask, (3, 2, 2)))
    seqs = [ember.ones(2, 1, requires_grad=True), ember.ones(1, 1, requires_grad=True)]
    (R.pad_sequence(seqs) * 3).sum().backward()
    assert seqs[0].grad.tolist() == [[3.0], [3.0]] and seqs[1].grad.tolist() == [[3.0]]


def test_packed_sequence_to_and_invert_permutation():
    p = R.pack_sequence([ember.ones(3, 2), ember.ones(1, 2)], enforce_sorted=False)
    assert p.to(ember.float32) is p
    q = p.double()
    assert q.data.dtype == ember.float64 and q.batch_sizes is p.batch_sizes
    assert q.sorted_indices.tolist() == p.sorted_indices.tolist() and not q.is_cuda
    perm = ember.tensor([2, 0, 3, 1])
    assert R.invert_permutation(perm).tolist() == [1, 3, 0, 2] and R.invert_permutation(None) is None
    legacy = R.PackedSequence((p.data, p.batch_sizes))
    assert legacy.batch_sizes is p.batch_sizes and legacy.sorted_indices is None


def test_errors():
    x = ember.zeros(5, 3, 2)
    with pytest.raises(RuntimeError, match="Length of all samples has to be greater than 0"):
        R.pack_padded_sequence(x, [3, 2, 0])
    with pytest.raises(RuntimeError, match=r"Expected `len\(lengths\)` to be equal to batch_size, but got 2 "
                                           r"\(batch_size=3\)"):
        R.pack_padded_sequence(x, [3, 2])
    with pytest.raises(RuntimeError, match="'lengths' argument should be a 1D CPU int64 tensor, but got 2D"):
        R.pack_padded_sequence(x, ember.tensor([[3, 2, 1]]))
    with pytest.raises(RuntimeError, match="Expected padding_side to be one of left or right, but got mid."):
        R.pad_sequence([x[0]], padding_side="mid")
    with pytest.raises(RuntimeError, match="received an empty list of sequences"):
        R.pad_sequence([])


@needs_torch
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("enforce_sorted", [False, True])
def test_matches_torch(batch_first, enforce_sorted):
    rng = np.random.default_rng(0)
    lengths = [6, 4, 4, 1] if enforce_sorted else [4, 6, 1, 4]
    seqs = [rng.standard_normal((n, 3)) for n in lengths]
    e_pad = R.pad_sequence([ember.tensor(s) for s in seqs], batch_first=batch_first, padding_value=0.5)
    t_pad = TR.pad_sequence([torch.tensor(s) for s in seqs], batch_first=batch_first, padding_value=0.5)
    np.testing.assert_array_equal(e_pad.numpy(), t_pad.numpy())
    e_p = R.pack_padded_sequence(e_pad, lengths, batch_first=batch_first, enforce_sorted=enforce_sorted)
    t_p = TR.pack_padded_sequence(t_pad, lengths, batch_first=batch_first, enforce_sorted=enforce_sorted)
    for e, t in zip(e_p, t_p):
        if t is None:
            assert e is None
        else:
            np.testing.assert_array_equal(e.numpy(), t.numpy())
    for kw in ({}, {"total_length": 8, "padding_value": -2.0}):
        e_out = R.pad_packed_sequence(e_p, batch_first=batch_first, **kw)
        t_out = TR.pad_packed_sequence(t_p, batch_first=batch_first, **kw)
        for e, t in zip(e_out, t_out):
            np.testing.assert_array_equal(e.numpy(), t.numpy())
    e_left = R.pad_sequence([ember.tensor(s) for s in seqs], batch_first=batch_first, padding_side="left")
    t_left = TR.pad_sequence([torch.tensor(s) for s in seqs], batch_first=batch_first, padding_side="left")
    np.testing.assert_array_equal(e_left.numpy(), t_left.numpy())
