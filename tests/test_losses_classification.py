"""The classification losses of issue 11 (ops.yaml's losses-classification section): nll_loss's
CPU kernels and its 1-D/2-D/K-dim forms, cross_entropy (class indices, weights, ignore_index,
label smoothing, class probabilities), binary_cross_entropy (and with logits), kl_div,
soft_margin_loss: values against PyTorch (when installed) and NumPy, every reduction, dtypes,
non-contiguous inputs, errors, gradients, 1-3 threads above the parallel threshold. The float64
gradcheck and gradgradcheck of GRAD_CASES run in tests/test_higher_order.py; their JVPs here."""
import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.autograd import forward_ad as fwAD
from ember.autograd import gradcheck, gradgradcheck

F64 = ember.float64
RNG = np.random.default_rng(1111)
REDUCTIONS = ("none", "mean", "sum")
GRAIN = ember._C._thresholds()["grain_size"]  # the kernels' parallel threshold (in elements)
try:
    import torch
    import torch.nn.functional as TF
except ImportError:  # the torch comparisons are skipped without it
    torch = None
needs_torch = pytest.mark.skipif(torch is None, reason="needs PyTorch")
needs_gpu = pytest.mark.skipif(not ember.cuda.is_available(), reason="needs a CUDA GPU")


def arr(*shape, dtype=np.float64):
    return RNG.standard_normal(shape).astype(dtype)


def classes(*shape, n, ignore=None):
    t = RNG.integers(0, n, size=shape)
    if ignore is not None and t.size:
        t.reshape(-1)[::3] = ignore
    return t


def t64(*shape):
    return ember.tensor(arr(*shape), requires_grad=True)


def close(x, y, rtol=1e-5, atol=1e-6):
    if torch is not None and isinstance(y, torch.Tensor):
        y = y.detach().float().numpy() if y.dtype in (torch.float16, torch.bfloat16) else y.detach().numpy()
    y = np.asarray(y)
    x = x.detach().float().numpy() if x.dtype in (ember.float16, ember.bfloat16) else x.detach().numpy()
    np.testing.assert_allclose(x, y, rtol=rtol, atol=atol)


# ---------------------------------------------------------------- NumPy references

def np_nll(x, t, weight=None, reduction="mean", ignore_index=-100):
    """x (C), (N, C) or (N, C, d...) of log-probabilities, t the class targets."""
    if x.ndim == 1:
        x, t = x[None], np.asarray(t).reshape(1)
    rows = np.moveaxis(x, 1, -1).reshape(-1, x.shape[1])
    flat = np.asarray(t).reshape(-1)
    keep = flat != ignore_index
    safe = np.where(keep, flat, 0)
    w = (np.ones(x.shape[1]) if weight is None else weight)[safe] * keep
    loss = -rows[np.arange(len(flat)), safe] * w
    if reduction == "none":
        return loss.reshape(np.shape(t))
    with np.errstate(invalid="ignore"):
        return loss.sum() / w.sum() if reduction == "mean" else loss.sum()


def np_log_softmax(x, dim):
    m = x.max(axis=dim, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=dim, keepdims=True))


def np_bce(x, t, weight=None, reduction="mean"):
    with np.errstate(divide="ignore"):
        loss = -(t * np.maximum(np.log(x), -100) + (1 - t) * np.maximum(np.log1p(-x), -100))
    if weight is not None:
        loss = loss * weight
    return {"none": loss, "mean": loss.mean() if loss.size else np.nan, "sum": loss.sum()}[reduction]


# ---------------------------------------------------------------- nll_loss

@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape", [(5,), (4, 5), (3, 5, 4), (2, 5, 3, 4), (2, 5, 2, 3, 2)])
@pytest.mark.parametrize("weighted", [False, True])
def test_nll_loss_matches_numpy_and_torch(shape, reduction, weighted):
    x = arr(*shape)
    C = shape[0] if len(shape) == 1 else shape[1]
    tshape = () if len(shape) == 1 else (shape[0],) + shape[2:]
    t = classes(*tshape, n=C, ignore=-100 if len(shape) > 1 else None)
    w = np.abs(arr(C)) + 0.1 if weighted else None
    got = F.nll_loss(ember.tensor(x), ember.tensor(t), ember.tensor(w) if weighted else None, reduction=reduction)
    close(got, np_nll(x, t, w, reduction), rtol=1e-12, atol=1e-12)
    if torch is not None:
        want = TF.nll_loss(torch.tensor(x), torch.tensor(t), torch.tensor(w) if weighted else None, reduction=reduction)
        assert tuple(got.shape) == tuple(want.shape)
        close(got, want, rtol=1e-12, atol=1e-12)


def test_nll_loss_ignore_index_and_all_ignored():
    x, t = arr(4, 3), np.array([0, 2, 7, 7])
    close(F.nll_loss(ember.tensor(x), ember.tensor(t), ignore_index=7), np_nll(x, t, ignore_index=7))
    # Every target ignored: the mean divides 0 by a total weight of 0 (nan, as PyTorch), the sum is 0.
    all_ignored = ember.tensor([-100] * 4)
    assert np.isnan(F.nll_loss(ember.tensor(x), all_ignored).item())
    assert F.nll_loss(ember.tensor(x), all_ignored, reduction="sum").item() == 0.0
    assert F.cross_entropy(ember.tensor(x), all_ignored, reduction="sum").item() == 0.0
    assert np.isnan(F.cross_entropy(ember.tensor(x), all_ignored, label_smoothing=0.3).item())
    # An empty batch: nan for the mean, 0 for the sum, an empty loss per target.
    for shape in ((2, 3, 0, 4), (0, 3, 2, 2, 2)):  # empty K-dim inputs
        tshape = (shape[0],) + shape[2:]
        assert tuple(F.nll_loss(ember.zeros(*shape), ember.zeros(*tshape, dtype=ember.int64), reduction="none").shape) == tshape
        assert F.nll_loss(ember.zeros(*shape), ember.zeros(*tshape, dtype=ember.int64), reduction="sum").item() == 0.0
    e = ember.zeros(0, 3, dtype=F64)
    assert np.isnan(F.nll_loss(e, ember.zeros(0, dtype=ember.int64)).item())
    assert F.nll_loss(e, ember.zeros(0, dtype=ember.int64), reduction="sum").item() == 0.0
    assert tuple(F.nll_loss(e, ember.zeros(0, dtype=ember.int64), reduction="none").shape) == (0,)


def test_nll_loss_takes_uint8_targets_and_keeps_the_input_dtype():
    x = arr(4, 5)
    got = F.nll_loss(ember.tensor(x), ember.tensor(np.array([1, 0, 4, 2], dtype=np.uint8)))
    close(got, np_nll(x, np.array([1, 0, 4, 2])), rtol=1e-12)
    for dtype in (ember.float32, ember.float16, ember.bfloat16):
        out = F.nll_loss(ember.tensor(x).to(dtype), ember.tensor([1, 0, 4, 2]), reduction="none")
        assert out.dtype == dtype
        close(out, np_nll(x, [1, 0, 4, 2], reduction="none"), rtol=1e-2, atol=2e-2)


def test_nll_loss_noncontiguous_inputs():
    x = arr(6, 4)
    xt = ember.tensor(x.T.copy()).t()  # (6, 4) transposed storage
    t = classes(6, n=4)
    for reduction in REDUCTIONS:
        close(F.nll_loss(xt, ember.tensor(t), reduction=reduction), np_nll(x, t, reduction=reduction), rtol=1e-12)
    x4 = arr(2, 3, 4, 5)
    x4_strided = ember.tensor(x4).permute(0, 1, 3, 2)  # (2, 3, 5, 4), not contiguous
    t4 = classes(2, 5, 4, n=3)
    want = np_nll(np.transpose(x4, (0, 1, 3, 2)), t4, reduction="none")
    close(F.nll_loss(x4_strided, ember.tensor(t4), reduction="none"), want, rtol=1e-12)
    t_half = classes(2, 2, 5, n=3)
    close(F.nll_loss(ember.tensor(x4)[:, :, ::2], ember.tensor(t_half), reduction="sum"),
          np_nll(x4[:, :, ::2], t_half, reduction="sum"), rtol=1e-12)


def test_nll_loss_errors():
    x = ember.tensor(arr(3, 5))
    with pytest.raises(IndexError, match="Target 5 is out of bounds."):
        F.nll_loss(x, ember.tensor([1, 5, 2]))
    with pytest.raises(IndexError, match="Target -3 is out of bounds."):
        F.nll_loss(x, ember.tensor([1, -3, 2]))
    with pytest.raises(IndexError, match="Target 9 is out of bounds."):
        F.cross_entropy(ember.tensor(arr(2, 5, 3)), ember.tensor([[0, 1, 2], [3, 9, 4]]))
    with pytest.raises(RuntimeError, match="expected target dtype to be Long or Byte, but got Int"):
        F.nll_loss(x, ember.tensor([1, 2, 2], dtype=ember.int32))
    with pytest.raises(RuntimeError, match="Long or Byte, but got Float"):
        F.nll_loss(x, ember.tensor([1.0, 2.0, 2.0]))
    with pytest.raises(ValueError, match=r"Expected input batch_size \(3\) to match target batch_size \(2\)"):
        F.nll_loss(x, ember.tensor([1, 2]))
    with pytest.raises(RuntimeError, match=r"weight tensor should be defined either for all 5 classes or no classes "
                                           r"but got weight tensor of shape: \[4\]"):
        F.nll_loss(x, ember.tensor([1, 2, 3]), weight=ember.ones(4, dtype=F64))
    with pytest.raises(RuntimeError, match="expected scalar type Double but found Float"):
        F.nll_loss(x, ember.tensor([1, 2, 3]), weight=ember.ones(5))
    with pytest.raises(ValueError, match=r"Expected 1 or more dimensions \(got 0\)"):
        F.nll_loss(ember.tensor(1.0), ember.tensor(0))
    with pytest.raises(RuntimeError, match=r"Expected target size \[2, 4\], got \[2, 5\]"):
        F.nll_loss(ember.tensor(arr(2, 3, 4)), ember.zeros(2, 5, dtype=ember.int64))
    with pytest.raises(RuntimeError, match=r"only batches of spatial targets supported \(3D tensors\)"):
        F.nll_loss(ember.tensor(arr(2, 3, 4, 5)), ember.zeros(2, 4, dtype=ember.int64))
    with pytest.raises(RuntimeError, match=r"size mismatch \(got input: \[2, 3, 4, 5\], target: \[2, 4, 6\]\)"):
        F.nll_loss(ember.tensor(arr(2, 3, 4, 5)), ember.zeros(2, 4, 6, dtype=ember.int64))
    with pytest.raises(RuntimeError, match="input tensor should be 1D or 2D"):
        ember._C._nn.nll_loss(ember.tensor(arr(2, 3, 4)), ember.zeros(2, 4, dtype=ember.int64))
    with pytest.raises(ValueError, match="bad is not a valid value for reduction"):
        F.nll_loss(x, ember.tensor([1, 2, 3]), reduction="bad")
    with pytest.raises(ValueError, match="not a valid value for reduction"):
        ember._C._nn.nll_loss(x, ember.tensor([1, 2, 3]), None, 3)
    with pytest.raises(NotImplementedError, match="_nll_loss_forward"):
        F.nll_loss(x.to(ember.int32), ember.tensor([1, 2, 3]))


@needs_torch
def test_nll_loss_legacy_arguments_warn_and_map_as_torch():
    x, t = arr(4, 3), classes(4, n=3)
    for size_average, reduce in [(False, None), (None, False), (True, True)]:
        with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated"):
            got = F.nll_loss(ember.tensor(x), ember.tensor(t), size_average=size_average, reduce=reduce)
        with pytest.warns(UserWarning):
            want = TF.nll_loss(torch.tensor(x), torch.tensor(t), size_average=size_average, reduce=reduce)
        close(got, want, rtol=1e-12)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape", [(4, 5), (5,), (2, 5, 3)])
def test_nll_loss_gradients(shape, reduction):
    C = shape[0] if len(shape) == 1 else shape[1]
    t = ember.tensor(classes(*(() if len(shape) == 1 else (shape[0],) + shape[2:]), n=C))
    w = ember.tensor(np.abs(arr(C)) + 0.1)
    x = t64(*shape)
    assert gradcheck(lambda a: F.nll_loss(a, t, w, reduction=reduction), (x,))
    assert gradgradcheck(lambda a: F.nll_loss(a * a, t, w, reduction=reduction), (x,))
    if torch is not None:
        xt = torch.tensor(x.detach().numpy(), requires_grad=True)
        TF.nll_loss(xt, torch.tensor(t.numpy()), torch.tensor(w.numpy()), reduction=reduction).sum().backward()
        F.nll_loss(x, t, w, reduction=reduction).sum().backward()
        close(x.grad, xt.grad, rtol=1e-12, atol=1e-14)


def test_nll_loss_backward_kernel_is_linear_in_its_grad():
    # nll_loss_backward's own gradient (grad_output) and its JVP: gradgradcheck of the kernel pair.
    t = ember.tensor([0, 2, 1])
    x = ember.tensor(arr(3, 4))
    for reduction in (0, 1, 2):
        out, total = ember._nll_loss_forward(x, t, None, reduction, -100)
        g = ember.tensor(arr(*out.shape), requires_grad=True)
        assert gradcheck(lambda go: ember._nll_loss_backward(go * go, x, t, None, reduction, -100, total), (g,))


# ---------------------------------------------------------------- cross_entropy

@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("smoothing", [0.0, 0.25])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("shape", [(6, 5), (5,), (2, 5, 3), (2, 5, 2, 2)])
def test_cross_entropy_class_indices(shape, weighted, smoothing, reduction):
    x = arr(*shape)
    C = shape[0] if len(shape) == 1 else shape[1]
    t = classes(*(() if len(shape) == 1 else (shape[0],) + shape[2:]), n=C, ignore=None if len(shape) == 1 else 2)
    ignore_index = 2 if len(shape) > 1 else -100
    w = np.abs(arr(C)) + 0.1 if weighted else None
    got = F.cross_entropy(ember.tensor(x), ember.tensor(t), ember.tensor(w) if weighted else None,
                          ignore_index=ignore_index, reduction=reduction, label_smoothing=smoothing)
    # NumPy: (1 - s) nll + s / C * smooth, smooth normalised as nll's mean.
    class_dim = 0 if len(shape) == 1 else 1
    lp = np_log_softmax(x, class_dim)
    nll = np_nll(lp, t, w, reduction, ignore_index)
    wc = np.ones(C) if w is None else w
    wshape = [C] + [1] * (x.ndim - class_dim - 1)
    keep = np.asarray(t) != ignore_index
    smooth = -(lp * wc.reshape(wshape)).sum(class_dim) * keep
    denom = (wc[np.where(keep, t, 0)] * keep).sum()
    part = {"none": smooth, "sum": smooth.sum(), "mean": smooth.sum() / denom}[reduction]
    close(got, (1 - smoothing) * nll + smoothing / C * part, rtol=1e-10, atol=1e-12)
    if torch is not None:
        want = TF.cross_entropy(torch.tensor(x), torch.tensor(t), torch.tensor(w) if weighted else None,
                                ignore_index=ignore_index, reduction=reduction, label_smoothing=smoothing)
        assert tuple(got.shape) == tuple(want.shape)
        close(got, want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("smoothing", [0.0, 0.3])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("shape", [(4, 5), (5,), (2, 5, 3)])
def test_cross_entropy_class_probabilities(shape, weighted, smoothing, reduction):
    x = arr(*shape)
    class_dim = 0 if len(shape) == 1 else 1
    C = shape[class_dim]
    p = np.exp(np_log_softmax(arr(*shape), class_dim))
    w = np.abs(arr(C)) + 0.1 if weighted else None
    got = F.cross_entropy(ember.tensor(x), ember.tensor(p), ember.tensor(w) if weighted else None,
                          reduction=reduction, label_smoothing=smoothing)
    q = p * (1 - smoothing) + smoothing / C
    terms = np_log_softmax(x, class_dim) * q * (np.ones(C) if w is None else w).reshape([C] + [1] * (x.ndim - class_dim - 1))
    loss = -terms.sum(class_dim)
    want = {"none": loss, "sum": loss.sum(), "mean": loss.sum() / (x.size // C)}[reduction]
    close(got, want, rtol=1e-10, atol=1e-12)
    if torch is not None:
        close(got, TF.cross_entropy(torch.tensor(x), torch.tensor(p), torch.tensor(w) if weighted else None,
                                    reduction=reduction, label_smoothing=smoothing), rtol=1e-10, atol=1e-12)


def test_cross_entropy_errors():
    x = ember.tensor(arr(3, 5))
    with pytest.raises(RuntimeError, match="ignore_index is not supported for floating point target"):
        F.cross_entropy(x, ember.rand(3, 5, dtype=F64), ignore_index=3)
    with pytest.raises(RuntimeError, match="Expected floating point type for target with class probabilities, got Long"):
        F.cross_entropy(x, ember.zeros(3, 5, dtype=ember.int64))
    with pytest.raises(RuntimeError, match="label_smoothing must be between 0.0 and 1.0. Got: 1.5"):
        F.cross_entropy(x, ember.tensor([1, 4, 2]), label_smoothing=1.5)
    with pytest.raises(RuntimeError, match="label_smoothing must be between 0.0 and 1.0. Got: 1.5"):
        F.cross_entropy(x, ember.rand(3, 5, dtype=F64), label_smoothing=1.5)
    with pytest.raises(RuntimeError, match="0D or 1D target tensor expected, multi-target not supported"):
        F.cross_entropy(x, ember.rand(3, 4, dtype=F64))
    with pytest.raises(RuntimeError, match=r"cross_entropy: weight tensor should be defined either for all 5 classes"):
        F.cross_entropy(x, ember.rand(3, 5, dtype=F64), weight=ember.ones(4, dtype=F64))
    with pytest.raises(IndexError, match="Target 5 is out of bounds."):
        F.cross_entropy(x, ember.tensor([1, 5, 2]), label_smoothing=0.1)
    assert np.isnan(F.cross_entropy(ember.zeros(0, 5), ember.zeros(0, 5)).item())


@pytest.mark.parametrize("smoothing", [0.0, 0.2])
@pytest.mark.parametrize("probabilities", [False, True])
def test_cross_entropy_gradients(probabilities, smoothing):
    x = t64(4, 3, 2)
    w = ember.tensor(np.abs(arr(3)) + 0.1)
    if probabilities:
        t = ember.tensor(np.exp(np_log_softmax(arr(4, 3, 2), 1)), requires_grad=True)
        fn = lambda a, p: F.cross_entropy(a, p, w, label_smoothing=smoothing)  # noqa: E731
        assert gradcheck(fn, (x, t)) and gradgradcheck(fn, (x, t))
    else:
        t = ember.tensor(classes(4, 2, n=3, ignore=-100))
        fn = lambda a: F.cross_entropy(a, t, w, label_smoothing=smoothing)  # noqa: E731
        assert gradcheck(fn, (x,)) and gradgradcheck(fn, (x,))


def test_cross_entropy_half_types_and_float32_track_float64():
    x, t = arr(8, 6), classes(8, n=6)
    want = F.cross_entropy(ember.tensor(x), ember.tensor(t)).item()
    for dtype, tol in ((ember.float32, 1e-6), (ember.float16, 5e-3), (ember.bfloat16, 3e-2)):
        got = F.cross_entropy(ember.tensor(x).to(dtype), ember.tensor(t))
        assert got.dtype == dtype
        assert abs(got.float().item() - want) <= tol * max(1.0, abs(want))


# ---------------------------------------------------------------- parallel kernels

@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_nll_and_cross_entropy_above_the_parallel_threshold(threads, reduction):
    # Enough targets and rows that the forward blocks and the backward rows split among threads.
    n, C = 3 * GRAIN // 8 + 17, 40
    x32 = arr(n, C, dtype=np.float32)
    t = classes(n, n=C, ignore=-100)
    w = (np.abs(arr(C)) + 0.1).astype(np.float32)
    xe = ember.tensor(x32, requires_grad=True)
    got = F.cross_entropy(xe, ember.tensor(t), ember.tensor(w), reduction=reduction)
    lp = np_log_softmax(x32.astype(np.float64), 1)
    close(got, np_nll(lp, t, w.astype(np.float64), reduction), rtol=2e-5, atol=1e-5)
    got.sum().backward()
    grad = np.exp(lp)
    keep = t != -100
    scale = w[np.where(keep, t, 0)] * keep
    if reduction == "mean":
        scale = scale / scale.sum()
    onehot = np.zeros_like(grad)
    onehot[np.arange(n), np.where(keep, t, 0)] = 1
    close(xe.grad, (grad - onehot) * scale[:, None], rtol=1e-4, atol=1e-6)
    # The same bits at every thread count: fixed blocks, summed in order.
    again = F.nll_loss(ember.tensor(lp), ember.tensor(t), reduction=reduction)
    ember.set_num_threads(1)
    try:
        serial = F.nll_loss(ember.tensor(lp), ember.tensor(t), reduction=reduction)
    finally:
        ember.set_num_threads(threads)
    assert np.array_equal(again.numpy(), serial.numpy())


def test_binary_cross_entropy_above_the_parallel_threshold(threads):
    n = GRAIN + 123
    x, y = RNG.uniform(0.01, 0.99, n), RNG.uniform(0, 1, n)
    for reduction in REDUCTIONS:
        close(F.binary_cross_entropy(ember.tensor(x), ember.tensor(y), reduction=reduction), np_bce(x, y, None, reduction),
              rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------- binary cross entropy

@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weight_shape", [None, (3,), (2, 3)])
def test_binary_cross_entropy_matches_numpy_and_torch(weight_shape, reduction):
    x, y = RNG.uniform(0, 1, (2, 3)), RNG.uniform(0, 1, (2, 3))
    x[0, 0], x[1, 2], y[0, 0] = 0.0, 1.0, 1.0  # log(0) clamped at -100
    w = np.abs(arr(*weight_shape)) if weight_shape else None
    got = F.binary_cross_entropy(ember.tensor(x), ember.tensor(y), ember.tensor(w) if w is not None else None,
                                 reduction=reduction)
    close(got, np_bce(x, y, w, reduction), rtol=1e-12, atol=1e-12)
    if torch is not None:
        want = TF.binary_cross_entropy(torch.tensor(x), torch.tensor(y), torch.tensor(w) if w is not None else None,
                                       reduction=reduction)
        close(got, want, rtol=1e-12, atol=1e-12)


def test_binary_cross_entropy_dtypes_and_noncontiguous():
    x, y = RNG.uniform(0.05, 0.95, (4, 3)), RNG.uniform(0, 1, (4, 3))
    for dtype, tol in ((ember.float32, 1e-6), (ember.float16, 2e-3), (ember.bfloat16, 2e-2)):
        got = F.binary_cross_entropy(ember.tensor(x).to(dtype), ember.tensor(y).to(dtype), reduction="none")
        assert got.dtype == dtype
        close(got, np_bce(x, y, None, "none"), rtol=tol, atol=tol)
    xt, yt = ember.tensor(x.T.copy()).t(), ember.tensor(y)[:, [2, 1, 0]]
    close(F.binary_cross_entropy(xt, yt, reduction="none"), np_bce(x, y[:, [2, 1, 0]], None, "none"), rtol=1e-12)


def test_binary_cross_entropy_errors():
    with pytest.raises(RuntimeError, match="all elements of input should be between 0 and 1"):
        F.binary_cross_entropy(ember.tensor([0.5, 1.5]), ember.tensor([0.0, 1.0]))
    with pytest.raises(RuntimeError, match="all elements of input should be between 0 and 1"):
        F.binary_cross_entropy(ember.tensor([0.5, float("nan")]), ember.tensor([0.0, 1.0]))
    with pytest.raises(ValueError, match="is different to the input size"):
        F.binary_cross_entropy(ember.tensor([0.5, 1.0]), ember.tensor([0.0, 1.0, 1.0]))
    with pytest.raises(RuntimeError, match="Found dtype Double but expected Float"):
        F.binary_cross_entropy(ember.tensor([0.5, 1.0]), ember.tensor([0.0, 1.0], dtype=F64))
    with pytest.raises(RuntimeError, match=r"target of shape \[3\] does not match input of shape \[2, 3\]"):
        ember._C._nn.binary_cross_entropy(ember.rand(2, 3), ember.rand(3))
    with pytest.raises(RuntimeError, match="size of tensor a"):
        F.binary_cross_entropy(ember.tensor([0.5, 1.0]), ember.tensor([0.0, 1.0]), weight=ember.ones(3))
    with pytest.raises(NotImplementedError, match="binary_cross_entropy"):
        F.binary_cross_entropy(ember.tensor([0, 1]), ember.tensor([0, 1]))


def test_binary_cross_entropy_input_gradient_is_finite_at_0_and_1():
    # PyTorch's backward divides by max(x (1 - x), 1e-12): finite where the log was clamped.
    x = ember.tensor([0.0, 1.0, 0.3], dtype=F64, requires_grad=True)
    y = ember.tensor([1.0, 0.0, 0.6], dtype=F64, requires_grad=True)
    F.binary_cross_entropy(x, y, reduction="sum").backward()
    assert np.isfinite(x.grad.numpy()).all()
    assert list(y.grad.numpy()[:2]) == [np.inf, -np.inf]  # the target's gradient is not clamped, as PyTorch's
    if torch is not None:
        xt = torch.tensor([0.0, 1.0, 0.3], dtype=torch.float64, requires_grad=True)
        yt = torch.tensor([1.0, 0.0, 0.6], dtype=torch.float64, requires_grad=True)
        TF.binary_cross_entropy(xt, yt, reduction="sum").backward()
        close(x.grad, xt.grad, rtol=1e-12)
        close(y.grad, yt.grad, rtol=1e-12)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropy_gradcheck(reduction):
    x = ember.tensor(RNG.uniform(0.1, 0.9, (3, 4)), requires_grad=True)
    y = ember.tensor(RNG.uniform(0, 1, (3, 4)), requires_grad=True)
    w = ember.tensor(np.abs(arr(4)) + 0.1)
    fn = lambda a, b: F.binary_cross_entropy(a, b, w, reduction=reduction)  # noqa: E731
    assert gradcheck(fn, (x, y)) and gradgradcheck(fn, (x, y))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropy_with_logits(reduction):
    x, y = arr(3, 4) * 30, RNG.uniform(0, 1, (3, 4))  # large logits: no overflow
    w, pw = np.abs(arr(3, 4)), np.abs(arr(4)) + 0.5
    got = F.binary_cross_entropy_with_logits(ember.tensor(x), ember.tensor(y), ember.tensor(w), reduction=reduction,
                                             pos_weight=ember.tensor(pw))
    loss = ((1 - y) * x + (1 + (pw - 1) * y) * np.logaddexp(0, -x)) * w
    close(got, {"none": loss, "mean": loss.mean(), "sum": loss.sum()}[reduction], rtol=1e-12, atol=1e-12)
    if torch is not None:
        close(got, TF.binary_cross_entropy_with_logits(torch.tensor(x), torch.tensor(y), torch.tensor(w),
                                                       reduction=reduction, pos_weight=torch.tensor(pw)), rtol=1e-12)
    x32 = F.binary_cross_entropy_with_logits(ember.tensor(x).float(), ember.tensor(y).float(), reduction=reduction)
    assert x32.dtype == ember.float32
    with pytest.raises(ValueError, match="must be the same as input size"):
        F.binary_cross_entropy_with_logits(ember.tensor(x), ember.tensor(y[0]))
    with pytest.raises(NotImplementedError):
        F.binary_cross_entropy_with_logits(ember.tensor([[1, 2]]), ember.rand(1, 2))


# ---------------------------------------------------------------- kl_div, soft margin

@pytest.mark.parametrize("reduction", ["none", "mean", "sum", "batchmean"])
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div(reduction, log_target):
    x = np_log_softmax(arr(4, 5), 1)
    p = np.exp(np_log_softmax(arr(4, 5), 1))
    p[0, 0] = 0.0  # 0 log 0 = 0
    t = np.log(p + 1e-3) if log_target else p
    with pytest.warns(UserWarning, match="batchmean") if reduction == "mean" else _no_warning():
        got = F.kl_div(ember.tensor(x), ember.tensor(t), reduction=reduction, log_target=log_target)
    with np.errstate(divide="ignore", invalid="ignore"):
        loss = np.exp(t) * (t - x) if log_target else np.where(t == 0, 0, t * np.log(np.where(t == 0, 1, t))) - t * x
    want = {"none": loss, "mean": loss.mean(), "sum": loss.sum(), "batchmean": loss.sum() / 4}[reduction]
    close(got, want, rtol=1e-12, atol=1e-12)
    if torch is not None:
        with pytest.warns(UserWarning) if reduction == "mean" else _no_warning():
            close(got, TF.kl_div(torch.tensor(x), torch.tensor(t), reduction=reduction, log_target=log_target), rtol=1e-12)


def test_kl_div_errors_and_gradients():
    with pytest.raises(RuntimeError, match="kl_div: Integral inputs not supported."):
        ember.kl_div(ember.tensor([[1, 2]]), ember.rand(1, 2))
    with pytest.raises(ValueError, match="bad is not a valid value for reduction"):
        F.kl_div(ember.rand(2, 3), ember.rand(2, 3), reduction="bad")
    x, t = t64(3, 4), ember.tensor(RNG.uniform(0.1, 1, (3, 4)), requires_grad=True)
    for log_target in (False, True):
        fn = lambda a, b: F.kl_div(a, b, reduction="batchmean", log_target=log_target)  # noqa: E731
        assert gradcheck(fn, (x, t)) and gradgradcheck(fn, (x, t))


class _no_warning:
    def __enter__(self):
        import warnings
        self._ctx = warnings.catch_warnings()
        self._ctx.__enter__()
        warnings.simplefilter("error")

    def __exit__(self, *exc):
        self._ctx.__exit__(*exc)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_soft_margin_and_multilabel_soft_margin(reduction):
    x, y = arr(3, 4) * 50, np.sign(arr(3, 4))  # -y x up to ~150: softplus, no overflow in float64
    got = F.soft_margin_loss(ember.tensor(x), ember.tensor(y), reduction=reduction)
    loss = np.logaddexp(0, -y * x)
    close(got, {"none": loss, "mean": loss.mean(), "sum": loss.sum()}[reduction], rtol=1e-12, atol=1e-12)
    if torch is not None:
        close(got, TF.soft_margin_loss(torch.tensor(x), torch.tensor(y), reduction=reduction), rtol=1e-12)
        x2, y2, w = arr(3, 4), (arr(3, 4) > 0).astype(np.float64), np.abs(arr(4))
        close(F.multilabel_soft_margin_loss(ember.tensor(x2), ember.tensor(y2), ember.tensor(w), reduction=reduction),
              TF.multilabel_soft_margin_loss(torch.tensor(x2), torch.tensor(y2), torch.tensor(w), reduction=reduction),
              rtol=1e-12)


# ---------------------------------------------------------------- CUDA slots

@needs_gpu
def test_cuda_slots_name_the_op_and_device():
    x = ember.ones(2, 3).cuda()
    with pytest.raises(NotImplementedError, match="_nll_loss_forward: .*cuda"):
        ember._nll_loss_forward(x, ember.tensor([0, 1]).cuda(), None, 1, -100)
    with pytest.raises(NotImplementedError, match="_nll_loss_backward: .*cuda"):
        ember._nll_loss_backward(ember.ones(()).cuda(), x, ember.tensor([0, 1]).cuda(), None, 1, -100,
                                 ember.ones(()).cuda())
    with pytest.raises(NotImplementedError, match="binary_cross_entropy: .*cuda"):
        ember._C._nn.binary_cross_entropy(x * 0.5, x * 0.5, None, 1)


# ---------------------------------------------------------------- gradgradcheck cases (test_higher_order.py), JVPs

def _t(*shape):
    return ember.tensor(arr(*shape), requires_grad=True)


def _unit(*shape):
    return ember.tensor(RNG.uniform(0.1, 0.9, shape), requires_grad=True)


_T3 = ember.tensor([0, 2, 1])
_T23 = ember.tensor([[0, 2, -100], [1, 1, 0]])
_W3 = ember.tensor([0.5, 2.0, 1.5], dtype=F64)

GRAD_CASES = {
    "_nll_loss_forward": [(lambda a: ember._nll_loss_forward(a, _T3, _W3, 1, -100)[0], lambda: (_t(3, 3),), {}),
                          (lambda a: ember._nll_loss_forward(a, _T23, None, 0, -100)[0], lambda: (_t(2, 3, 3),), {})],
    "_nll_loss_backward": [(lambda g: ember._nll_loss_backward(g, ember.zeros(3, 3, dtype=F64), _T3, _W3, 0, -100,
                                                               ember.tensor(4.0, dtype=F64)), lambda: (_t(3),), {}),
                           (lambda g: ember._nll_loss_backward(g, ember.zeros(3, 3, dtype=F64), _T3, None, 1, -100,
                                                               ember.tensor(3.0, dtype=F64)), lambda: (_t(),), {})],
    "nll_loss": [(lambda a: ember._C._nn.nll_loss(a, _T3, _W3, 2, 1), lambda: (_t(3, 3),), {})],
    "nll_loss2d": [(lambda a: ember._C._nn.nll_loss2d(a, ember.tensor([[[0, 2], [1, 1]]]), None, 1, -100),
                    lambda: (_t(1, 3, 2, 2),), {})],
    "nll_loss_nd": [(lambda a: ember._C._nn.nll_loss_nd(a, _T23, _W3, 1, -100), lambda: (_t(2, 3, 3),), {})],
    "cross_entropy_loss": [(lambda a: ember._C._nn.cross_entropy_loss(a, _T3, _W3, 1, -100, 0.2), lambda: (_t(3, 3),), {}),
                           (lambda a, p: ember._C._nn.cross_entropy_loss(a, p.softmax(1), None, 0, -100, 0.1),
                            lambda: (_t(2, 3, 2), _t(2, 3, 2)), {})],
    "binary_cross_entropy": [(lambda a, b: ember._C._nn.binary_cross_entropy(a, b, _W3, 1), lambda: (_unit(2, 3), _unit(2, 3)), {}),
                             (lambda a, b: ember._C._nn.binary_cross_entropy(a, b, None, 0), lambda: (_unit(4), _unit(4)), {})],
    "_binary_cross_entropy_backward": [(lambda g, a: ember._binary_cross_entropy_backward(g, a, ember.tensor([0.2, 0.9], dtype=F64), None, 0),
                                        lambda: (_t(2), _unit(2)), {})],
    "_binary_cross_entropy_target_backward": [(lambda g, a: ember._binary_cross_entropy_target_backward(g, a, ember.tensor([0.2, 0.9], dtype=F64), _W3[:2], 1),
                                               lambda: (_t(), _unit(2)), {})],
}
ALL_CASES = [(f"{name}-{i}", *case) for name, cases in GRAD_CASES.items() for i, case in enumerate(cases)]


@pytest.mark.parametrize("name,fn,inputs,options", ALL_CASES, ids=[c[0] for c in ALL_CASES])
def test_forward_mode_agrees_with_reverse_mode(name, fn, inputs, options):
    # <J v, u> from the JVP must equal <v, J^T u> from backward, for random v and u.
    primals = [a.detach().requires_grad_(True) for a in inputs()]
    tangents = [ember.tensor(arr(*a.shape)) for a in primals]
    with fwAD.dual_level():
        dual_out = fn(*[fwAD.make_dual(p.detach(), t) for p, t in zip(primals, tangents)])
        jv = fwAD.unpack_dual(dual_out).tangent.numpy()
    out = fn(*primals)
    u = arr(*out.shape)
    vjp = ember.autograd.grad((out * ember.tensor(u)).sum(), primals, allow_unused=True)
    reverse = sum(float((g.numpy() * t.numpy()).sum()) for g, t in zip(vjp, tangents) if g is not None)
    np.testing.assert_allclose(float((jv * u).sum()), reverse, rtol=1e-9, atol=1e-10)
