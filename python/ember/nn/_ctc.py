"""ember.nn.functional.ctc_loss: the Connectionist Temporal Classification loss, as PyTorch's.
The forward (log-space alpha recursion) and backward (beta recursion) loop over time with each step
vectorised over the batch and the extended label positions; the gradient is PyTorch's formula
exp(lp) - exp(log(alpha * beta) + nll - lp), which is the true gradient once it passes back through
the log_softmax that produced log_probs."""
from .. import _C
from .._creation import full_like, tensor, zeros_like
from .._tensor import Tensor
from ..autograd.function import Function, once_differentiable

__all__ = ["ctc_loss"]
_NEG_INF = float("-inf")


def _logsumexp(*terms):
    """log(sum(exp(t))) of same-shaped tensors, -inf (not nan) where every term is -inf."""
    top = terms[0]
    for t in terms[1:]:
        top = _C.maximum(top, t)
    top = _C.where(top == _NEG_INF, zeros_like(top), top)
    total = zeros_like(top)
    for t in terms:
        total = total + _C.exp(t - top)
    return _C.log(total) + top


def _shift(x, by):
    """x moved `by` places right along the last dim (left when negative), filled with -inf."""
    fill = full_like(x[..., :abs(by)], _NEG_INF)
    return _C.cat([fill, x[..., :-by]], -1) if by > 0 else _C.cat([x[..., -by:], fill], -1)


def _extended_labels(targets, target_lengths, blank):
    """Each sample's labels with a blank before, between and after them, (N, 2 * max_len + 1), padded with blanks;
    and where a position may be reached by skipping the one before it (a label unlike the label two back)."""
    n, max_len = len(target_lengths), max(target_lengths, default=0)
    rows = []
    offset = 0
    for b, length in enumerate(target_lengths):
        if targets.dim() == 1:
            labels = targets[offset:offset + length].tolist()
            offset += length
        else:
            labels = targets[b, :length].tolist()
        ext = [blank] * (2 * max_len + 1)
        ext[1:2 * length:2] = [int(v) for v in labels]
        rows.append(ext)
    ext = tensor(rows, dtype=_C.int64).reshape(n, 2 * max_len + 1)
    two_back = _C.cat([full_like(ext[:, :2], -1), ext[:, :-2]], 1)
    return ext, (ext != blank) & (ext != two_back)


def _check(log_probs, targets, input_lengths, target_lengths, blank):
    time, batch, classes = log_probs.shape
    if not 0 <= blank < classes:
        raise RuntimeError("blank must be in label range")
    for name, lengths in (("input_lengths", input_lengths), ("target_lengths", target_lengths)):
        if len(lengths) != batch:
            raise RuntimeError(f"{name} must be of size batch_size")
    where = " for argument #2 'targets' (while checking arguments for ctc_loss_allocate_outputs)"
    for name, lengths in (("input_lengths", input_lengths), ("target_lengths", target_lengths)):
        for v in lengths:
            if v < 0:
                raise RuntimeError(f"Expected {name} to have value at least 0, but got value {v} (while checking "
                                   "arguments for ctc_loss_allocate_outputs)")
    if targets.dim() == 1:
        if targets.size(0) != sum(target_lengths):
            raise RuntimeError(f"Expected tensor to have size {sum(target_lengths)} at dimension 0, but got size "
                               f"{targets.size(0)}{where}")
    elif targets.size(1) < max(target_lengths, default=0):
        raise RuntimeError(f"Expected tensor to have size at least {max(target_lengths)} at dimension 1, but got "
                           f"size {targets.size(1)}{where}")
    for v in input_lengths:
        if v > time:
            raise RuntimeError(f"Expected input_lengths to have value at most {time}, but got value {v} (while "
                               "checking arguments for ctc_loss_allocate_outputs)")


class _CTCLoss(Function):
    @staticmethod
    def forward(ctx, log_probs, targets, input_lengths, target_lengths, blank, zero_infinity):
        ext, can_skip = _extended_labels(targets, target_lengths, blank)
        time, batch, _ = log_probs.shape
        positions = ext.size(1)
        lengths = tensor(input_lengths, dtype=_C.int64)
        # lp[t, b, s]: the log-probability of sample b's extended label s at time t
        lp = log_probs.gather(2, ext.unsqueeze(0).expand(time, batch, positions))
        start = full_like(lp[0], _NEG_INF)
        start[:, :2] = lp[0, :, :2]
        alphas = [start]
        for t in range(1, time):
            prev = alphas[-1]
            skip = _C.where(can_skip, _shift(prev, 2), full_like(prev, _NEG_INF))
            step = _logsumexp(prev, _shift(prev, 1), skip) + lp[t]
            alphas.append(_C.where((lengths > t).unsqueeze(1), step, prev))  # finished samples keep their last
        alpha = _C.stack(alphas)
        last = tensor([2 * length for length in target_lengths], dtype=_C.int64).unsqueeze(1)
        # position s at s + 1 after a -inf column (the "label before" an empty target)
        final = _C.cat([full_like(alpha[-1][:, :1], _NEG_INF), alpha[-1]], 1)
        nll = -_logsumexp(final.gather(1, last + 1), final.gather(1, last)).reshape(batch)
        # an empty input sequence has probability 1 of an empty target and 0 of any other
        empty = lengths == 0
        if bool(empty.any()):
            nll = _C.where(empty, _C.where(last.reshape(batch) == 0, zeros_like(nll), -zeros_like(nll).log()),
                           nll)
        ctx.save_for_backward(log_probs, lp, alpha, nll)
        ctx.ext, ctx.can_skip, ctx.lengths, ctx.last = ext, can_skip, lengths, last
        ctx.zero_infinity = zero_infinity
        if zero_infinity:
            nll = _C.where(nll == float("inf"), zeros_like(nll), nll)
        return nll

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_nll):
        log_probs, lp, alpha, nll = ctx.saved_tensors
        time, batch, classes = log_probs.shape
        ext, lengths, last = ctx.ext, ctx.lengths, ctx.last
        positions = ext.size(1)
        pos = _C.arange(positions).unsqueeze(0)
        # beta at each sample's last step: its last label or the blank after it
        at_end = (pos == last) | (pos == last - 1)
        skip_into = _shift(ctx.can_skip.to(lp.dtype), -2) > 0  # s + 2 may be reached from s
        betas = [None] * time
        beta = full_like(lp[0], _NEG_INF)
        for t in range(time - 1, -1, -1):
            skip = _C.where(skip_into, _shift(beta, -2), full_like(beta, _NEG_INF))
            step = _logsumexp(beta, _shift(beta, -1), skip) + lp[t]
            init = _C.where(at_end, lp[t], full_like(beta, _NEG_INF))
            is_last = (lengths - 1 == t).unsqueeze(1)
            beta = _C.where(is_last, init, _C.where((lengths - 1 > t).unsqueeze(1), step,
                                                     full_like(beta, _NEG_INF)))
            betas[t] = beta
        lcab = alpha + _C.stack(betas)  # (T, N, S): log(alpha * beta)
        top = lcab.amax(2, keepdim=True)
        top = _C.where(top == _NEG_INF, zeros_like(top), top)
        summed = zeros_like(log_probs).scatter_add(2, ext.unsqueeze(0).expand(time, batch, positions),
                                                      _C.exp(lcab - top))
        log_summed = _C.log(summed) + top
        grad = (_C.exp(log_probs) - _C.exp(log_summed + nll.reshape(1, batch, 1) - log_probs))
        grad = grad * grad_nll.reshape(1, batch, 1)
        active = _C.arange(time).unsqueeze(1) < lengths.unsqueeze(0)  # (T, N)
        keep = active.unsqueeze(2)
        if ctx.zero_infinity:
            keep = keep & (nll != float("inf")).reshape(1, batch, 1)
        grad = _C.where(keep, grad, zeros_like(grad))
        return grad, None, None, None, None, None


def _lengths(lengths):
    if isinstance(lengths, Tensor):
        return [int(v) for v in lengths.reshape(-1).tolist()]
    return [int(v) for v in lengths]


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean", zero_infinity=False):
    """-log p(target | input) summed over every alignment of the targets (with blanks and repeats) to the
    input's time steps; log_probs (T, N, C) or (T, C) holds log_softmax outputs."""
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    batched = log_probs.dim() == 3
    if not batched:
        log_probs, targets = log_probs.unsqueeze(1), targets.unsqueeze(0)
    input_lengths, target_lengths = _lengths(input_lengths), _lengths(target_lengths)
    _check(log_probs, targets, input_lengths, target_lengths, blank)
    loss = _CTCLoss.apply(log_probs, targets.to(_C.int64), input_lengths, target_lengths, blank, zero_infinity)
    if reduction == "mean":
        divisor = tensor(target_lengths, dtype=loss.dtype).clamp_min(1)
        return (loss / divisor).mean()
    if reduction == "sum":
        return loss.sum()
    return loss if batched else loss.squeeze(0)
