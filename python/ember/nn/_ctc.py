"""ember.nn.functional.ctc_loss: the Connectionist Temporal Classification loss, as PyTorch's.
The op _ctc_loss (aten/src/cpu/ctc_loss.cpp) runs the log-space alpha recursion per sample and its
gradient the beta recursion, PyTorch's exp(lp) - exp(log(alpha * beta) + nll - lp): the true gradient
once it passes back through the log_softmax that produced log_probs (it checks the arguments too, with
PyTorch's messages). Here: lengths given as tensors or sequences, unbatched input, zero_infinity and the
reduction."""
from .. import _C
from .._autocast_policy import autocast_policy
from .._creation import tensor, zeros_like
from .._tensor import Tensor

__all__ = ["ctc_loss"]


def _lengths(lengths):
    if isinstance(lengths, Tensor):
        return [int(v) for v in lengths.reshape(-1).tolist()]
    return [int(v) for v in lengths]


@autocast_policy(cpu="fp32")  # PyTorch's CPU autocast fp32 list (ctc_loss.IntList, ctc_loss.Tensor)
def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean", zero_infinity=False):
    """-log p(target | input) summed over every alignment of the targets (with blanks and repeats) to the
    input's time steps; log_probs (T, N, C) or (T, C) holds log_softmax outputs."""
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    batched = log_probs.dim() == 3
    input_lengths, target_lengths = _lengths(input_lengths), _lengths(target_lengths)
    if not batched:
        log_probs = log_probs.unsqueeze(1)
        if targets.dim() == 1 and len(target_lengths) == 1 and targets.size(0) > target_lengths[0] >= 0:
            targets = targets[:target_lengths[0]]  # a padded target (torch wants exactly the target: a superset)
    loss, _ = _C._ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, zero_infinity)
    if zero_infinity:
        loss = _C.where(loss == float("inf"), zeros_like(loss), loss)
    if reduction == "mean":
        divisor = tensor(target_lengths, dtype=loss.dtype).clamp_min(1)
        return (loss / divisor).mean()
    if reduction == "sum":
        return loss.sum()
    return loss if batched else loss.squeeze(0)
