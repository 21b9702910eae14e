"""torch.embedding_bag (issue 11): the 4-tuple (output, offset2bag, bag_size, max_indices) of
ember.embedding_bag against hand-computed values and PyTorch's CPU results, its gradient, its
errors. F.embedding_bag (the output alone) is tested in tests/test_norm.py."""
import numpy as np
import pytest

import ember

try:
    import torch
except ImportError:  # the torch comparisons are skipped without it
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="needs PyTorch")
RNG = np.random.default_rng(1111)
# Seven indices in four bags: [1, 4], [], [2, 7, 4], [0, 3].
IDX, OFFSETS = [1, 4, 2, 7, 4, 0, 3], [0, 2, 2, 5]
SUM, MEAN, MAX = 0, 1, 2


def weight(dtype=np.float64, rows=8, dim=3):
    return RNG.standard_normal((rows, dim)).astype(dtype)


def as_numpy(t):
    return t.detach().numpy()


def test_mean_mode_bookkeeping_by_hand():
    w = weight()
    out, offset2bag, bag_size, max_indices = ember.embedding_bag(ember.tensor(w), ember.tensor(IDX),
                                                                 ember.tensor(OFFSETS), mode=MEAN)
    expected = np.stack([w[[1, 4]].mean(0), np.zeros(3), w[[2, 7, 4]].mean(0), w[[0, 3]].mean(0)])
    np.testing.assert_allclose(as_numpy(out), expected, rtol=1e-14)
    assert offset2bag.tolist() == [0, 0, 2, 2, 2, 3, 3]
    assert bag_size.tolist() == [2, 0, 3, 2]
    assert max_indices.tolist() == [2, 0, 3, 2]   # not max mode: a copy of bag_size, as PyTorch's
    assert {t.dtype for t in (offset2bag, bag_size, max_indices)} == {ember.int64}


def test_padding_idx_leaves_its_rows_out_of_the_counts():
    w = weight()
    for padding_idx in (4, -4):
        out, _, bag_size, _ = ember.embedding_bag(ember.tensor(w), ember.tensor(IDX), ember.tensor(OFFSETS),
                                                  mode=MEAN, padding_idx=padding_idx)
        assert bag_size.tolist() == [1, 0, 2, 2]
        np.testing.assert_allclose(as_numpy(out)[2], w[[2, 7]].mean(0), rtol=1e-14)


def test_max_mode_argmax_by_hand():
    w = np.array([[0.0, 5.0], [3.0, 1.0], [3.0, -2.0], [-1.0, -1.0]])
    out, offset2bag, bag_size, max_indices = ember.embedding_bag(
        ember.tensor(w), ember.tensor([1, 2, 0, 3, 3]), ember.tensor([0, 3, 3]), mode=MAX)
    np.testing.assert_array_equal(as_numpy(out), [[3.0, 5.0], [0.0, 0.0], [-1.0, -1.0]])
    # Ties go to the first index of the bag (1 before 2 in column 0); an empty bag gives 0.
    assert max_indices.tolist() == [[1, 0], [0, 0], [3, 3]]
    assert offset2bag.tolist() == [0, 0, 0, 2, 2] and bag_size.tolist() == [3, 0, 2]


def test_sum_mode_extras():
    w = ember.tensor(weight(np.float32))
    out, offset2bag, bag_size, max_indices = ember.embedding_bag(w, ember.tensor(IDX), ember.tensor(OFFSETS))
    # float32 without padding_idx is PyTorch's fast sum path: no offset2bag; bag_size zeros, one per offset.
    assert offset2bag.shape == (0,) and bag_size.tolist() == [0, 0, 0, 0] and max_indices.tolist() == [0, 0, 0, 0]
    w64 = ember.tensor(weight(), requires_grad=True)
    _, offset2bag, bag_size, _ = ember.embedding_bag(w64, ember.tensor(IDX), ember.tensor(OFFSETS + [7]),
                                                     include_last_offset=True)
    assert offset2bag.tolist() == [0, 0, 2, 2, 2, 3, 3]
    assert bag_size.tolist() == [0, 0, 0, 0]   # one per bag when weight needs a gradient


def test_int32_indices_give_int32_bookkeeping():
    w = ember.tensor(weight())
    i32 = ember.tensor(IDX, dtype=ember.int32)
    results = ember.embedding_bag(w, i32, ember.tensor(OFFSETS, dtype=ember.int32), mode=MEAN)
    assert [t.dtype for t in results[1:]] == [ember.int32] * 3
    mixed = ember.embedding_bag(w, i32, ember.tensor(OFFSETS), mode=MEAN)
    assert [t.dtype for t in mixed[1:]] == [ember.int64] * 3
    for a, b in zip(results, mixed):
        np.testing.assert_array_equal(as_numpy(a), as_numpy(b))


def test_gradient_reaches_weight_and_per_sample_weights():
    w, psw = weight(), RNG.standard_normal(7)
    ew, ep = ember.tensor(w, requires_grad=True), ember.tensor(psw, requires_grad=True)
    out = ember.embedding_bag(ew, ember.tensor(IDX), ember.tensor(OFFSETS), per_sample_weights=ep)[0]
    assert out.requires_grad
    g = RNG.standard_normal((4, 3))
    out.backward(ember.tensor(g))
    bag = [0, 0, 2, 2, 2, 3, 3]
    expected_w = np.zeros_like(w)
    for i, (row, b) in enumerate(zip(IDX, bag)):
        expected_w[row] += psw[i] * g[b]
    np.testing.assert_allclose(as_numpy(ew.grad), expected_w, rtol=1e-13)
    np.testing.assert_allclose(as_numpy(ep.grad), [w[r] @ g[b] for r, b in zip(IDX, bag)], rtol=1e-13)


def bookkeeping_cases():
    for mode in (SUM, MEAN, MAX):
        for include_last_offset in (False, True):
            for padding_idx in (None, 4, -1):
                for dtype in (np.float32, np.float64):
                    yield mode, include_last_offset, padding_idx, dtype


@needs_torch
@pytest.mark.parametrize("mode,include_last_offset,padding_idx,dtype", list(bookkeeping_cases()))
@pytest.mark.parametrize("requires_grad", [False, True])
def test_all_four_results_match_torch(mode, include_last_offset, padding_idx, dtype, requires_grad):
    w = weight(dtype)
    offsets = OFFSETS + ([7] if include_last_offset else [])
    args = (False, mode, False, None, include_last_offset, padding_idx)
    ew, tw = ember.tensor(w, requires_grad=requires_grad), torch.tensor(w, requires_grad=requires_grad)
    ours = ember.embedding_bag(ew, ember.tensor(IDX), ember.tensor(offsets), *args)
    theirs = torch.embedding_bag(tw, torch.tensor(IDX), torch.tensor(offsets), *args)
    np.testing.assert_allclose(as_numpy(ours[0]), theirs[0].detach().numpy(), rtol=1e-6)
    for a, b in zip(ours[1:], theirs[1:]):
        assert a.tolist() == b.tolist()
    if requires_grad:
        g = RNG.standard_normal(tuple(ours[0].shape)).astype(dtype)
        ours[0].backward(ember.tensor(g))
        theirs[0].backward(torch.tensor(g))
        np.testing.assert_allclose(as_numpy(ew.grad), tw.grad.numpy(), rtol=1e-6, atol=1e-6)


@needs_torch
def test_empty_bags_and_inputs_match_torch():
    w = weight()
    for idx, offsets, mode in (([], [0, 0], MAX), ([], [0, 0], MEAN), ([3, 3], [0, 0, 2], MAX)):
        ours = ember.embedding_bag(ember.tensor(w), ember.tensor(idx, dtype=ember.int64), ember.tensor(offsets),
                                   mode=mode)
        theirs = torch.embedding_bag(torch.tensor(w), torch.tensor(idx, dtype=torch.int64), torch.tensor(offsets),
                                     mode=mode)
        for a, b in zip(ours, theirs):
            assert tuple(a.shape) == tuple(b.shape)
            np.testing.assert_array_equal(as_numpy(a), b.numpy())


def error_cases(lib):
    w, i, off = lib.tensor(weight()), lib.tensor(IDX), lib.tensor(OFFSETS)
    return {
        "weight 1-D": lambda: lib.embedding_bag(w[0], i, off),
        "integer weight": lambda: lib.embedding_bag(w.long(), i, off),
        "float indices": lambda: lib.embedding_bag(w, i.float(), off),
        "float offsets": lambda: lib.embedding_bag(w, i, off.float()),
        "3-D indices": lambda: lib.embedding_bag(w, i[:4].reshape(1, 2, 2), off),
        "2-D offsets": lambda: lib.embedding_bag(w, i, off.reshape(2, 2)),
        "mode 3": lambda: lib.embedding_bag(w, i, off, False, 3),
        "padding_idx too big": lambda: lib.embedding_bag(w, i, off, False, 1, False, None, False, 8),
        "padding_idx too small": lambda: lib.embedding_bag(w, i, off, False, 1, False, None, False, -9),
        "index past the rows": lambda: lib.embedding_bag(w, i + 1, off, False, 1),
        "negative index": lambda: lib.embedding_bag(w, i - 2, off, False, 1),
        "offsets[0] not 0": lambda: lib.embedding_bag(w, i, off + 1, False, 1),
        "offsets[-1] past the input": lambda: lib.embedding_bag(w, i, lib.tensor([0, 2, 9]), False, 1),
        "per_sample_weights in mean mode": lambda: lib.embedding_bag(w, i, off, False, 1, False, w[:7, 0]),
        "per_sample_weights of another dtype": lambda: lib.embedding_bag(w, i, off, False, 0, False, w[:7, 0].float()),
        "include_last_offset without offsets": lambda: lib.embedding_bag(w, i, off[:0], False, 1, False, None, True),
        "offsets None": lambda: lib.embedding_bag(w, i, None),
    }


@pytest.mark.parametrize("case", list(error_cases(ember)))
def test_errors_match_torch(case):
    with pytest.raises((RuntimeError, TypeError)) as ours:
        error_cases(ember)[case]()
    if torch is None:
        return
    with pytest.raises(Exception) as theirs:
        error_cases(torch)[case]()
    assert ours.type is theirs.type
    # torch's index message depends on its kernel path; ember's argument parser names no position.
    if case not in ("index past the rows", "negative index", "offsets None"):
        assert str(ours.value).split("\n")[0] == str(theirs.value).split("\n")[0]


def test_sparse_gives_the_dense_gradient():
    """sparse=True: ember has no sparse tensors, so the weight's gradient is the dense one (the same values);
    max mode refuses it, as PyTorch's."""
    grads = []
    for sparse in (False, True):
        w = ember.tensor(weight(), requires_grad=True)
        out = ember.embedding_bag(w, ember.tensor(IDX), ember.tensor(OFFSETS), sparse=sparse)[0]
        (out * ember.arange(float(out.numel())).reshape(out.shape)).sum().backward()
        grads.append(w.grad.numpy())
    np.testing.assert_array_equal(grads[0], grads[1])
    assert np.count_nonzero(grads[1])
    with pytest.raises(ValueError, match="max mode does not support sparse weights"):
        ember.nn.functional.embedding_bag(ember.tensor([[0, 1]]), ember.tensor(weight()), mode="max", sparse=True)
    with pytest.raises(ValueError, match="max mode does not support sparse weights"):
        ember.embedding_bag(ember.tensor(weight()), ember.tensor(IDX), ember.tensor(OFFSETS), mode=2, sparse=True)


def test_2d_input_is_refused_with_a_hint():
    # PyTorch's kernel misreads it (its errors depend on the offsets); F.embedding_bag flattens it.
    with pytest.raises(RuntimeError, match="pass it flattened with the offsets of its rows"):
        ember.embedding_bag(ember.tensor(weight()), ember.tensor([[0, 1], [2, 3]]), ember.tensor([0, 2]))
