"""Tensor printing in PyTorch's format: tensor([1., 2.], dtype=ember.float64)."""
import math

import numpy as np

from . import _C

PRECISION = 4
THRESHOLD = 1000
EDGEITEMS = 3
LINEWIDTH = 80
SCI_MODE = None  # set_printoptions(sci_mode=): True/False overrides the choice below


class _Formatter:
    """Chooses one width and style for every element, as PyTorch's _Formatter does:
    the style comes from the nonzero finite values only (integral -> "1.", a range
    over 1000x or values beyond 1e8 / below 1e-4 -> scientific), and so does the
    width, so inf and nan never widen the columns."""

    def __init__(self, values, floating):
        self.floating = floating
        self.int_mode = True
        self.sci_mode = False
        self.width = 1
        if not floating:
            self.width = max([1] + [len(str(v)) for v in values])
            return
        finite = [v for v in values if math.isfinite(v) and v != 0]
        if not finite:
            return
        mags = [abs(v) for v in finite]
        mx, mn = max(mags), min(mags)
        self.int_mode = all(v == math.ceil(v) for v in finite)
        self.sci_mode = mx / mn > 1000.0 or mx > 1.0e8 or mn < 1.0e-4 if SCI_MODE is None else SCI_MODE
        if self.sci_mode:
            self.width = max(len(f"{v:.{PRECISION}e}") for v in finite)
        elif self.int_mode:
            self.width = max(len(f"{v:.0f}") + 1 for v in finite)
        else:
            self.width = max(len(f"{v:.{PRECISION}f}") for v in finite)

    def format_raw(self, v):
        if not self.floating:
            return str(v)
        if self.sci_mode:
            return f"{v:.{PRECISION}e}"
        if self.int_mode:
            return f"{v:.0f}" + ("." if math.isfinite(v) else "")
        return f"{v:.{PRECISION}f}"

    def format(self, v):
        return self.format_raw(v).rjust(self.width)


def _edge(seq, summarize):
    if summarize and len(seq) > 2 * EDGEITEMS:
        return list(seq[:EDGEITEMS]), list(seq[-EDGEITEMS:])
    return list(seq), None


def _collect(arr, summarize, out):
    if arr.ndim == 0:
        out.append(arr.item())
        return
    head, tail = _edge(range(arr.shape[0]), summarize)
    for i in head + (tail or []):
        _collect(arr[i], summarize, out)


def _render(arr, fmt, indent, summarize):
    if arr.ndim == 0:
        return fmt.format(arr.item())
    head, tail = _edge(range(arr.shape[0]), summarize)
    if arr.ndim == 1:
        items = [fmt.format(arr[i].item()) for i in head]
        if tail is not None:
            items += [" ..."] + [fmt.format(arr[i].item()) for i in tail]
        per_line = max(1, (LINEWIDTH - indent) // (fmt.width + 2))
        lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
        return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"
    sep = "," + "\n" * (arr.ndim - 1) + " " * (indent + 1)
    parts = [_render(arr[i], fmt, indent + 1, summarize) for i in head]
    if tail is not None:
        parts += ["..."] + [_render(arr[i], fmt, indent + 1, summarize) for i in tail]
    return "[" + sep.join(parts) + "]"


class _InvalidGradFn:
    @staticmethod
    def name():
        return "Invalid"


_INVALID_GRAD_FN = _InvalidGradFn()


def tensor_repr(self):
    t = self.detach()
    if t.device.type != "cpu":
        t = t.cpu()
    dt = t.dtype
    floating = dt.is_floating_point
    if dt in (_C.float16, _C.bfloat16):
        t = t.float()
    arr = t.numpy()
    suffixes = []
    prefix = "tensor("
    if t.numel() == 0:
        body = "[]"
        if t.dim() != 1:
            suffixes.append(f"size={tuple(t.shape)}")
    else:
        summarize = t.numel() > THRESHOLD
        values = []
        _collect(arr, summarize, values)
        if dt == _C.bool:
            values = [bool(v) for v in values]
            fmt = _Formatter([], False)
            fmt.width = max(len(str(v)) for v in values)
        else:
            fmt = _Formatter([float(v) if floating else int(v) for v in values], floating)
        body = _render(arr.astype(np.float64) if floating else arr, fmt, len(prefix), summarize)
    if self.device.type != "cpu":
        suffixes.append(f"device='{self.device}'")
    default = _C.get_default_dtype()
    # PyTorch names the dtype unless it is implied: the default float, int64
    # and bool for non-empty tensors, only the default float for empty ones.
    if dt not in (default, _C.int64, _C.bool) or (t.numel() == 0 and dt != default):
        suffixes.append(f"dtype={dt}")
    try:
        grad_fn = self.grad_fn
    except RuntimeError:
        # A view that may not be rebased after its base was written in place: reading
        # grad_fn raises; PyTorch's repr shows it as Invalid.
        grad_fn = _INVALID_GRAD_FN
    if grad_fn is not None:
        suffixes.append(f"grad_fn=<{grad_fn.name()}>")
    elif self.requires_grad:
        suffixes.append("requires_grad=True")
    return _add_suffixes(prefix + body, suffixes, len(prefix))


def _add_suffixes(text, suffixes, indent):
    """Appends ", dtype=..." etc., wrapping to a new line past LINEWIDTH as PyTorch does."""
    parts = [text]
    last_line_len = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if last_line_len + len(suffix) + 2 > LINEWIDTH:
            parts.append(",\n" + " " * indent + suffix)
            last_line_len = indent + len(suffix)
        else:
            parts.append(", " + suffix)
            last_line_len += len(suffix) + 2
    parts.append(")")
    return "".join(parts)
