"""F.ctc_loss and nn.CTCLoss (issue 12): the loss against a brute-force sum over every alignment, its
gradient through log_softmax against finite differences, padded and concatenated targets, unequal
lengths, empty targets and inputs, reductions, zero_infinity, PyTorch's errors; values and gradients
against torch's (when installed)."""
import itertools

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F

try:
    import torch
except ImportError:  # the torch comparisons are skipped without it
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="needs PyTorch")
RNG = np.random.default_rng(17)


def log_softmax(x):
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def brute_force_nll(lp, target, blank=0):
    """-log of the summed probability of every path over (T, C) that collapses (repeats merged, then
    blanks dropped) to `target`."""
    total = 0.0
    for path in itertools.product(range(lp.shape[1]), repeat=lp.shape[0]):
        collapsed = [c for i, c in enumerate(path) if c != blank and (i == 0 or path[i - 1] != c)]
        if collapsed == list(target):
            total += np.exp(sum(lp[t, c] for t, c in enumerate(path)))
    return -np.log(total) if total > 0 else np.inf


@pytest.mark.parametrize("blank", [0, 2])
def test_ctc_loss_against_brute_force(blank):
    time, classes = 5, 3
    lp = log_softmax(RNG.standard_normal((time, 3, classes)))
    labels = [c for c in range(classes) if c != blank]
    targets = [[labels[0], labels[1]], [labels[1], labels[1]], [labels[0]]]  # a repeat needs a blank between
    lengths = [5, 4, 3]
    padded = np.zeros((3, 2), np.int64)
    for b, t in enumerate(targets):
        padded[b, :len(t)] = t
    out = F.ctc_loss(ember.tensor(lp), ember.tensor(padded), lengths, [len(t) for t in targets], blank=blank,
                     reduction="none")
    expected = [brute_force_nll(lp[:lengths[b], b], targets[b], blank) for b in range(3)]
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-10)
    concatenated = ember.tensor(np.concatenate([np.array(t) for t in targets]))
    out = F.ctc_loss(ember.tensor(lp), concatenated, ember.tensor(lengths), ember.tensor([2, 2, 1]), blank=blank,
                     reduction="none")
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-10)


def test_ctc_loss_gradient_through_log_softmax_matches_finite_differences():
    logits = RNG.standard_normal((4, 2, 3))
    targets, lengths, target_lengths = np.array([[1, 2], [2, 0]]), [4, 3], [2, 1]

    def loss_of(x):
        lp = log_softmax(x)
        return sum(brute_force_nll(lp[:lengths[b], b], targets[b, :target_lengths[b]]) / target_lengths[b]
                   for b in range(2)) / 2

    x = ember.tensor(logits, requires_grad=True)
    loss = F.ctc_loss(F.log_softmax(x, 2), ember.tensor(targets), lengths, target_lengths)
    assert float(loss) == pytest.approx(loss_of(logits), rel=1e-10)
    loss.backward()
    numeric = np.zeros_like(logits)
    for idx in np.ndindex(logits.shape):
        step = np.zeros_like(logits)
        step[idx] = 1e-6
        numeric[idx] = (loss_of(logits + step) - loss_of(logits - step)) / 2e-6
    np.testing.assert_allclose(x.grad.numpy(), numeric, rtol=1e-5, atol=1e-8)


def test_ctc_loss_edge_lengths_and_zero_infinity():
    lp = ember.tensor(log_softmax(RNG.standard_normal((3, 3, 4))))
    targets = ember.tensor([[1, 1, 2], [1, 2, 3], [0, 0, 0]])
    # sample 0 needs 4 steps for 1, blank, 1, 2 (only 3): impossible; sample 2 has an empty target
    out = F.ctc_loss(lp, targets, [3, 3, 3], [3, 3, 0], reduction="none")
    assert np.isinf(out[0].item()) and np.isfinite(out[1].item())
    assert out[2].item() == pytest.approx(-lp[:, 2, 0].sum().item(), rel=1e-6)  # all blanks
    empty = F.ctc_loss(lp, targets, [0, 0, 3], [0, 1, 0], reduction="none")
    assert empty[0].item() == 0.0 and np.isinf(empty[1].item())
    x = lp.detach().requires_grad_()
    zeroed = F.ctc_loss(x, targets, [3, 3, 3], [3, 3, 0], reduction="sum", zero_infinity=True)
    assert zeroed.item() == pytest.approx(out[1].item() + out[2].item(), rel=1e-6)
    zeroed.backward()
    assert float(x.grad[:, 0].abs().sum()) == 0.0 and np.all(np.isfinite(x.grad.numpy()))


def test_ctc_loss_reductions_and_module():
    lp = ember.tensor(log_softmax(RNG.standard_normal((6, 2, 5))).astype(np.float32))
    targets, lengths, target_lengths = ember.tensor([[1, 2, 3], [4, 4, 0]]), [6, 5], [3, 2]
    none = F.ctc_loss(lp, targets, lengths, target_lengths, reduction="none").numpy()
    assert F.ctc_loss(lp, targets, lengths, target_lengths).item() == pytest.approx((none / [3, 2]).mean(), rel=1e-6)
    assert F.ctc_loss(lp, targets, lengths, target_lengths, reduction="sum").item() == pytest.approx(none.sum(),
                                                                                                       rel=1e-6)
    module = nn.CTCLoss(blank=0, reduction="none", zero_infinity=True)
    assert repr(module) == "CTCLoss()" and module.zero_infinity and list(module.state_dict()) == []
    np.testing.assert_allclose(module(lp, targets, lengths, target_lengths).numpy(), none, rtol=1e-6)
    unbatched = F.ctc_loss(lp[:, 1], targets[1], [5], [2], reduction="none")
    assert unbatched.shape == () and unbatched.item() == pytest.approx(none[1], rel=1e-6)


def test_ctc_loss_errors():
    lp = ember.tensor(log_softmax(RNG.standard_normal((6, 2, 4))))
    tg = ember.tensor([[1, 2, 2], [3, 1, 0]])
    suffix = r" \(while checking arguments for ctc_loss_allocate_outputs\)"
    cases = [
        (dict(blank=4), "blank must be in label range"),
        (dict(input_lengths=[6, 5, 1]), "input_lengths must be of size batch_size"),
        (dict(target_lengths=[3, 2, 1]), "target_lengths must be of size batch_size"),
        (dict(input_lengths=[7, 5]), "Expected input_lengths to have value at most 6, but got value 7" + suffix),
        (dict(target_lengths=[4, 2]), "Expected tensor to have size at least 4 at dimension 1, but got size 3 for "
                                      "argument #2 'targets'" + suffix),
        (dict(targets=ember.tensor([1, 2, 2, 3])), "Expected tensor to have size 5 at dimension 0, but got size 4 "
                                                   "for argument #2 'targets'" + suffix),
        (dict(input_lengths=[6, -1]), "Expected input_lengths to have value at least 0, but got value -1" + suffix),
        (dict(target_lengths=[3, -1]), "Expected target_lengths to have value at least 0, but got value -1" + suffix),
    ]
    for change, message in cases:
        args = dict(log_probs=lp, targets=tg, input_lengths=[6, 5], target_lengths=[3, 2])
        args.update(change)
        with pytest.raises(RuntimeError, match=message):
            F.ctc_loss(**args)
    with pytest.raises(ValueError, match="avg is not a valid value for reduction"):
        F.ctc_loss(lp, tg, [6, 5], [3, 2], reduction="avg")


@needs_torch
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("concatenated", [False, True])
def test_ctc_loss_matches_torch(reduction, concatenated):
    time, batch, classes = 12, 4, 6
    logits = RNG.standard_normal((time, batch, classes)).astype(np.float32)
    target_lengths = [4, 0, 6, 3]
    input_lengths = [12, 7, 10, 12]
    padded = RNG.integers(1, classes, (batch, 6))
    targets = (np.concatenate([padded[b, :n] for b, n in enumerate(target_lengths)]) if concatenated else padded)
    results = []
    for lib, fn in ((ember, F.ctc_loss), (torch, torch.nn.functional.ctc_loss)):
        x = lib.tensor(logits, requires_grad=True)
        lp = x.log_softmax(2)
        lp.retain_grad()
        out = fn(lp, lib.tensor(targets), input_lengths, target_lengths, reduction=reduction)
        weights = np.arange(1, out.numel() + 1, dtype=np.float32).reshape(tuple(out.shape))
        (out * lib.tensor(weights)).sum().backward()
        results.append((out.detach().numpy(), lp.grad.numpy(), x.grad.numpy()))
    for e, t in zip(*results):
        np.testing.assert_allclose(e, t, rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------- the C++ kernel (aten/src/cpu/ctc_loss.cpp)
def numpy_ctc_nll(lp, target, blank=0):
    """-log p(target | lp) for one sample's (T, C) log-probabilities by the alpha recursion in float64."""
    ext = [blank]
    for c in target:
        ext += [int(c), blank]
    time, n = lp.shape[0], len(ext)
    if time == 0:
        return 0.0 if len(target) == 0 else np.inf
    alpha = np.full(n, -np.inf)
    alpha[0] = lp[0, blank]
    if n > 1:
        alpha[1] = lp[0, ext[1]]
    for t in range(1, time):
        prev = alpha.copy()
        for s in range(n):
            terms = [prev[s]] + ([prev[s - 1]] if s > 0 else []) + (
                [prev[s - 2]] if s > 1 and ext[s] != ext[s - 2] else [])
            alpha[s] = np.logaddexp.reduce(terms) + lp[t, ext[s]]
    return -(alpha[0] if n == 1 else np.logaddexp(alpha[-1], alpha[-2]))


def random_ctc_case(rng, time, batch, classes, max_target, blank=0, repeats=False):
    """Log-probabilities, padded targets (never `blank`), and lengths including 0 and impossible ones."""
    labels = [c for c in range(classes) if c != blank]
    target_lengths = rng.integers(0, max_target + 1, batch)
    target_lengths[0] = 0
    input_lengths = rng.integers(0, time + 1, batch)
    input_lengths[-1] = time
    padded = rng.choice(labels, (batch, max_target))
    if repeats:  # runs of one label: each repeat needs a blank between, so short inputs cannot fit
        padded[:, 1::2] = padded[:, 0::2][:, :padded[:, 1::2].shape[1]]
    lp = log_softmax(rng.standard_normal((time, batch, classes)))
    return lp, padded, [int(v) for v in input_lengths], [int(v) for v in target_lengths]


@pytest.mark.parametrize("repeats", [False, True])
@pytest.mark.parametrize("blank", [0, 3])
def test_ctc_kernel_matches_numpy_recursion(repeats, blank, threads):
    rng = np.random.default_rng(100 + blank + repeats)
    lp, padded, input_lengths, target_lengths = random_ctc_case(rng, 9, 11, 5, 5, blank, repeats)
    out = F.ctc_loss(ember.tensor(lp), ember.tensor(padded), input_lengths, target_lengths, blank=blank,
                     reduction="none").numpy()
    want = [numpy_ctc_nll(lp[:input_lengths[b], b], padded[b, :target_lengths[b]], blank) for b in range(11)]
    assert np.isinf(want).any() and np.isfinite(want).any()  # impossible alignments and possible ones
    np.testing.assert_allclose(out, want, rtol=1e-12)
    # (N, T, C) storage read as (T, N, C), and int32 targets
    strided = ember.tensor(np.ascontiguousarray(lp.transpose(1, 0, 2))).transpose(0, 1)
    out = F.ctc_loss(strided, ember.tensor(padded.astype(np.int32)), input_lengths, target_lengths, blank=blank,
                     reduction="none")
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-12)
    out32 = F.ctc_loss(ember.tensor(lp.astype(np.float32)), ember.tensor(padded), input_lengths, target_lengths,
                       blank=blank, reduction="none")
    assert out32.dtype == ember.float32
    np.testing.assert_allclose(out32.numpy(), want, rtol=2e-5)


JVP_CHECKED = {"_ctc_loss"}  # for tests/test_forward_ad.py OWN_CHECKS: through log_softmax, as its gradient


def test_ctc_kernel_gradcheck_through_log_softmax():
    rng = np.random.default_rng(7)
    _, padded, input_lengths, target_lengths = random_ctc_case(rng, 6, 4, 4, 3)
    target_lengths[1] = 2
    input_lengths[1] = 6
    logits = ember.tensor(rng.standard_normal((6, 4, 4)), requires_grad=True)
    for reduction in ("none", "mean", "sum"):
        def loss(x):
            out = F.ctc_loss(F.log_softmax(x, 2), ember.tensor(padded), input_lengths, target_lengths,
                             reduction=reduction, zero_infinity=True)
            return out
        assert ember.autograd.gradcheck(loss, (logits,), check_forward_ad=True)
    out = F.ctc_loss(F.log_softmax(logits, 2), ember.tensor(padded), input_lengths, target_lengths, reduction="none")
    assert type(out.grad_fn).__name__ == "CtcLossBackward0"  # as torch's
    # a non-contiguous log_probs gets its gradient in its own shape
    x = ember.tensor(np.ascontiguousarray(logits.detach().numpy().transpose(1, 0, 2)), requires_grad=True)
    F.ctc_loss(F.log_softmax(x, 2).transpose(0, 1), ember.tensor(padded), input_lengths, target_lengths).backward()
    y = logits.detach().requires_grad_()
    F.ctc_loss(F.log_softmax(y, 2), ember.tensor(padded), input_lengths, target_lengths).backward()
    np.testing.assert_allclose(x.grad.numpy().transpose(1, 0, 2), y.grad.numpy(), rtol=1e-12, atol=1e-14)
    with pytest.raises(RuntimeError, match="derivative for aten::_ctc_loss_backward is not implemented"):
        loss = F.ctc_loss(F.log_softmax(y, 2), ember.tensor(padded), input_lengths, target_lengths)
        (g,) = ember.autograd.grad(loss, y, create_graph=True)
        g.sum().backward()


@needs_torch
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("zero_infinity", [False, True])
@pytest.mark.parametrize("layout", ["padded", "concatenated", "tensor_lengths", "unbatched"])
def test_ctc_kernel_matches_torch_random(dtype, zero_infinity, layout, threads):
    rng = np.random.default_rng(hash((dtype, zero_infinity, layout)) % 2**32)
    lp, padded, input_lengths, target_lengths = random_ctc_case(rng, 15, 7, 6, 6, blank=0, repeats=layout == "padded")
    if layout == "unbatched":
        lp, padded, input_lengths, target_lengths = lp[:, 2], padded[2], input_lengths[2:3], target_lengths[2:3]
        target_lengths[0] = max(target_lengths[0], 1)
        input_lengths[0] = 15
        padded = padded[:target_lengths[0]]  # torch reads 1-D unbatched targets as exactly the target
    logits = np.log(np.exp(lp)).astype(dtype)
    reductions = ("none", "mean", "sum")
    for reduction in reductions:
        results = []
        for lib, fn in ((ember, F.ctc_loss), (torch, torch.nn.functional.ctc_loss)):
            targets = lib.tensor(padded)
            lengths, tlengths = input_lengths, target_lengths
            if layout == "concatenated":
                targets = lib.tensor(np.concatenate([padded[b, :n] for b, n in enumerate(target_lengths)]))
                lengths, tlengths = tuple(input_lengths), tuple(target_lengths)
            elif layout == "tensor_lengths":
                lengths, tlengths = lib.tensor(input_lengths), lib.tensor(target_lengths)
            x = lib.tensor(logits, requires_grad=True)
            lp_x = x.log_softmax(-1)
            lp_x.retain_grad()
            out = fn(lp_x, targets, lengths, tlengths, reduction=reduction, zero_infinity=zero_infinity)
            weights = np.arange(1, out.numel() + 1, dtype=dtype).reshape(tuple(out.shape))
            (out * lib.tensor(weights)).sum().backward()
            results.append((out.detach().numpy(), lp_x.grad.numpy(), x.grad.numpy()))
        tol = dict(rtol=1e-4, atol=1e-5) if dtype == "float32" else dict(rtol=1e-10, atol=1e-12)
        for e, t in zip(*results):
            np.testing.assert_allclose(e, t, **tol)


def test_ctc_kernel_rejects_bad_arguments_without_crashing():
    lp = ember.tensor(log_softmax(RNG.standard_normal((4, 2, 3))))
    with pytest.raises(RuntimeError, match="out of the label range"):
        F.ctc_loss(lp, ember.tensor([[1, 5], [1, 2]]), [4, 4], [2, 2])
    with pytest.raises(RuntimeError, match="Expected 1 to 2 dimensions, but got 3-dimensional tensor for argument #2"):
        F.ctc_loss(lp, ember.ones(2, 2, 2, dtype=ember.int64), [4, 4], [2, 2])
    with pytest.raises(NotImplementedError, match="\"ctc_loss_cpu\" not implemented for 'Half'"):
        F.ctc_loss(lp.half(), ember.tensor([[1, 2], [1, 2]]), [4, 4], [2, 2])
    float_targets = F.ctc_loss(lp, ember.tensor([[1.0, 2.0], [2.0, 1.0]]), [4, 4], [2, 2])
    assert float_targets.item() == pytest.approx(F.ctc_loss(lp, ember.tensor([[1, 2], [2, 1]]), [4, 4], [2, 2]).item())
