"""ember.nn.functional's losses (composites of ember ops): values against NumPy
references and, when it is installed, PyTorch over the reductions, weights,
ignore_index, label smoothing and K-dim inputs; float64 gradcheck (with the
forward-mode JVP) and gradgradcheck (with forward-over-reverse); the legacy
size_average/reduce arguments; and the errors."""
import warnings

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.autograd import gradcheck, gradgradcheck

try:
    import torch
    import torch.nn.functional as TF
except ImportError:  # the comparisons with PyTorch skip; the rest runs
    torch = TF = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
REDUCTIONS = ["none", "mean", "sum"]


def _reduce(x, reduction):
    return x.mean() if reduction == "mean" else (x.sum() if reduction == "sum" else x)


def _t(a, requires_grad=False):
    return ember.tensor(np.asarray(a), requires_grad=requires_grad)


def _log_softmax(x, axis):
    m = x.max(axis=axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))


# (name, NumPy reference of the unreduced loss of (input x, target y), kwargs)
POINTWISE = [
    ("mse_loss", lambda x, y: (x - y) ** 2, {}),
    ("l1_loss", lambda x, y: np.abs(x - y), {}),
    ("smooth_l1_loss", lambda x, y: np.where(np.abs(x - y) < 1, 0.5 * (x - y) ** 2, np.abs(x - y) - 0.5), {}),
    ("smooth_l1_loss", lambda x, y: np.where(np.abs(x - y) < 0.5, (x - y) ** 2, np.abs(x - y) - 0.25),
     {"beta": 0.5}),
    ("smooth_l1_loss", lambda x, y: np.abs(x - y), {"beta": 0.0}),
    ("huber_loss", lambda x, y: np.where(np.abs(x - y) < 2, 0.5 * (x - y) ** 2, 2 * (np.abs(x - y) - 1)),
     {"delta": 2.0}),
]


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("name,ref,kwargs", POINTWISE)
def test_pointwise_losses_match_numpy(name, ref, kwargs, reduction):
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((7, 5)) * 2, rng.standard_normal((7, 5))
    got = getattr(F, name)(_t(x), _t(y), reduction=reduction, **kwargs)
    np.testing.assert_allclose(got.numpy(), _reduce(ref(x, y), reduction), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", ["mse_loss", "l1_loss", "huber_loss"])
def test_per_element_weight_mean_divides_by_weight_sum(name):
    # huber_loss is the exception, as in PyTorch 2.13: its weighted mean divides by the element count
    rng = np.random.default_rng(1)
    x, y, w = rng.standard_normal((4, 3)), rng.standard_normal((4, 3)), rng.random((4, 3))
    unweighted = getattr(F, name)(_t(x), _t(y), reduction="none").numpy()
    got = getattr(F, name)(_t(x), _t(y), reduction="mean", weight=_t(w))
    want = (unweighted * w).mean() if name == "huber_loss" else (unweighted * w).sum() / w.sum()
    np.testing.assert_allclose(got.item(), want, rtol=1e-12)
    with pytest.raises(ValueError, match="Weights and input must have the same size"):
        getattr(F, name)(_t(x), _t(y), weight=_t(w[:2]))


def test_pointwise_losses_broadcast_with_a_warning():
    x, y = _t(np.arange(6.0).reshape(2, 3)), _t(np.array([1.0, 2.0, 3.0]))
    with pytest.warns(UserWarning, match="different to the input size"):
        got = F.mse_loss(x, y, reduction="none")
    np.testing.assert_allclose(got.numpy(), (np.arange(6.0).reshape(2, 3) - [1, 2, 3]) ** 2)
    with pytest.warns(UserWarning), pytest.raises(RuntimeError, match=r"^The size of tensor a \(3\) must match the size of tensor b \(4\) at "
                                                                 "non-singleton dimension 0$"):
        F.mse_loss(_t(np.zeros(3)), _t(np.zeros(4)))


def test_legacy_size_average_and_reduce():
    x, y = _t(np.array([1.0, 2.0, 4.0])), _t(np.zeros(3))
    cases = [({"size_average": False}, "sum", 21.0), ({"reduce": False}, "none", None),
             ({"size_average": True, "reduce": True}, "mean", 7.0)]
    for kwargs, expected, value in cases:
        with pytest.warns(UserWarning, match=f"please use reduction='{expected}' instead"):
            got = F.mse_loss(x, y, **kwargs)
        if value is None:
            assert got.shape == (3,)
        else:
            assert got.item() == value
    with pytest.warns(UserWarning, match="reduction='sum'"):
        F.nll_loss(_t(np.zeros((2, 3))), _t(np.array([0, 1])), size_average=False)


@pytest.mark.parametrize("name", ["mse_loss", "l1_loss", "smooth_l1_loss", "binary_cross_entropy",
                                  "binary_cross_entropy_with_logits", "nll_loss", "cross_entropy"])
def test_bad_reduction_raises_value_error(name):
    x = _t(np.full((2, 3), 0.5))
    y = _t(np.array([0, 1])) if name in ("nll_loss", "cross_entropy") else x
    with pytest.raises(ValueError, match="foo is not a valid value for reduction"):
        getattr(F, name)(x, y, reduction="foo")


def test_beta_and_delta_bounds():
    x = _t(np.zeros(3))
    with pytest.raises(RuntimeError, match="smooth_l1_loss does not support negative values for beta"):
        F.smooth_l1_loss(x, x, beta=-1.0)
    with pytest.raises(RuntimeError, match="huber_loss does not support non-positive values for delta"):
        F.huber_loss(x, x, delta=0.0)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropy_matches_numpy(reduction):
    rng = np.random.default_rng(2)
    x, y, w = rng.random((5, 4)), rng.random((5, 4)), rng.random(4)
    got = F.binary_cross_entropy(_t(x), _t(y), weight=_t(w), reduction=reduction)
    ref = -(y * np.log(x) + (1 - y) * np.log(1 - x)) * w
    np.testing.assert_allclose(got.numpy(), _reduce(ref, reduction), rtol=1e-12)


def test_binary_cross_entropy_clamps_log_at_minus_100_and_checks_range():
    got = F.binary_cross_entropy(_t(np.array([0.0, 1.0])), _t(np.array([1.0, 0.0])), reduction="none")
    np.testing.assert_array_equal(got.numpy(), [100.0, 100.0])
    with pytest.raises(RuntimeError, match="all elements of input should be between 0 and 1"):
        F.binary_cross_entropy(_t(np.array([1.5])), _t(np.array([1.0])))
    with pytest.raises(ValueError, match="different to the input size"):
        F.binary_cross_entropy(_t(np.array([0.5, 0.5])), _t(np.array([1.0])))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_bce_with_logits_is_stable_and_matches_numpy(reduction):
    rng = np.random.default_rng(3)
    z = rng.standard_normal((6, 4)) * 200  # exp(200) overflows the naive formula
    y, w, pw = rng.random((6, 4)), rng.random((6, 4)), rng.random(4) * 3
    got = F.binary_cross_entropy_with_logits(_t(z), _t(y), weight=_t(w), pos_weight=_t(pw), reduction=reduction)
    log_sig = -np.logaddexp(0, -z)
    log_one_minus_sig = -np.logaddexp(0, z)
    ref = -(pw * y * log_sig + (1 - y) * log_one_minus_sig) * w
    assert np.isfinite(got.numpy()).all()
    np.testing.assert_allclose(got.numpy(), _reduce(ref, reduction), rtol=1e-10)
    with pytest.raises(ValueError, match="Target size .* must be the same as input size"):
        F.binary_cross_entropy_with_logits(_t(z), _t(y[:2]))


def _nll_ref(logp, target, weight, ignore_index, reduction):
    """(N, C, d...) log-probabilities and (N, d...) targets, by loops."""
    logp = np.moveaxis(logp, 1, -1).reshape(-1, logp.shape[1]) if logp.ndim > 1 else logp[None]
    flat = target.reshape(-1)
    losses, weights = np.zeros(flat.size), np.zeros(flat.size)
    for i, c in enumerate(flat):
        if c != ignore_index:
            weights[i] = 1.0 if weight is None else weight[c]
            losses[i] = -logp[i, c] * weights[i]
    if reduction == "none":
        return losses.reshape(target.shape)
    return losses.sum() / weights.sum() if reduction == "mean" else losses.sum()


SHAPES = [((6, 5), (6,)), ((5,), ()), ((3, 5, 2, 4), (3, 2, 4)), ((2, 5, 3), (2, 3))]


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape,target_shape", SHAPES)
@pytest.mark.parametrize("weighted", [False, True])
def test_nll_loss_and_cross_entropy_match_numpy(shape, target_shape, reduction, weighted):
    rng = np.random.default_rng(4)
    x = rng.standard_normal(shape)
    target = rng.integers(0, 5, target_shape)
    if target.ndim:
        target.flat[0] = -100  # ignore_index
    weight = rng.random(5) if weighted else None
    w = None if weight is None else _t(weight)
    got = F.nll_loss(_t(x), _t(target), w, reduction=reduction)
    np.testing.assert_allclose(got.numpy(), _nll_ref(x, target, weight, -100, reduction), rtol=1e-12)
    logp = _log_softmax(x, 0 if x.ndim == 1 else 1)
    got = F.cross_entropy(_t(x), _t(target), w, reduction=reduction)
    np.testing.assert_allclose(got.numpy(), _nll_ref(logp, target, weight, -100, reduction), rtol=1e-12)


def test_nll_loss_custom_ignore_index():
    x = np.log(np.full((3, 4), 0.25))
    got = F.nll_loss(_t(x), _t(np.array([1, 7, 2])), ignore_index=7, reduction="none")
    np.testing.assert_allclose(got.numpy(), [np.log(4), 0.0, np.log(4)])


@pytest.mark.parametrize("name", ["nll_loss", "cross_entropy"])
def test_out_of_range_targets_raise_index_error(name):
    x = _t(np.zeros((2, 3)))
    for bad in (3, -2):
        with pytest.raises(IndexError, match=f"Target {bad} is out of bounds."):
            getattr(F, name)(x, _t(np.array([0, bad])))
    with pytest.raises(ValueError, match=r"Expected input batch_size \(2\) to match target batch_size \(3\)"):
        getattr(F, name)(x, _t(np.array([0, 1, 1])))
    with pytest.raises(RuntimeError, match="weight tensor should be defined"):
        getattr(F, name)(x, _t(np.array([0, 1])), weight=_t(np.ones(2)))


def test_cross_entropy_label_smoothing_by_hand():
    rng = np.random.default_rng(5)
    x, target, eps = rng.standard_normal((4, 3)), np.array([0, 2, 1, 2]), 0.2
    logp = _log_softmax(x, 1)
    smoothed = np.full((4, 3), eps / 3) + (1 - eps) * np.eye(3)[target]
    got = F.cross_entropy(_t(x), _t(target), label_smoothing=eps)
    np.testing.assert_allclose(got.item(), -(smoothed * logp).sum(1).mean(), rtol=1e-12)
    with pytest.raises(RuntimeError, match="label_smoothing must be between 0.0 and 1.0"):
        F.cross_entropy(_t(x), _t(target), label_smoothing=1.5)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy_with_probabilities_by_hand(reduction):
    rng = np.random.default_rng(6)
    x, p, w = rng.standard_normal((2, 3, 4)), rng.random((2, 3, 4)), rng.random(3)
    got = F.cross_entropy(_t(x), _t(p), weight=_t(w), reduction=reduction)
    ref = -(_log_softmax(x, 1) * p * w[:, None]).sum(1)
    np.testing.assert_allclose(got.numpy(), _reduce(ref, reduction), rtol=1e-12)


def _grad_cases():
    rng = np.random.default_rng(7)
    y = _t(rng.standard_normal((3, 4)))
    probs = _t(rng.random((3, 4)) * 0.8 + 0.1)
    target = _t(np.array([0, 3, -100]))
    kdim_target = _t(rng.integers(0, 4, (2, 3)))
    w = _t(rng.random(4))
    return [
        ("mse_loss", lambda x: F.mse_loss(x, y), (3, 4)),
        ("l1_loss", lambda x: F.l1_loss(x, y, reduction="sum"), (3, 4)),
        ("smooth_l1_loss", lambda x: F.smooth_l1_loss(x, y, beta=0.5), (3, 4)),
        ("huber_loss", lambda x: F.huber_loss(x, y, delta=0.7, reduction="none"), (3, 4)),
        ("binary_cross_entropy", lambda x: F.binary_cross_entropy(x.sigmoid(), probs, weight=w), (3, 4)),
        ("bce_with_logits", lambda x: F.binary_cross_entropy_with_logits(x, probs, pos_weight=w), (3, 4)),
        ("nll_loss", lambda x: F.nll_loss(x, target, weight=w), (3, 4)),
        ("cross_entropy", lambda x: F.cross_entropy(x, target, weight=w, label_smoothing=0.1), (3, 4)),
        ("cross_entropy_kdim", lambda x: F.cross_entropy(x, kdim_target, reduction="none"), (2, 4, 3)),
        ("cross_entropy_probs", lambda x: F.cross_entropy(x, probs, label_smoothing=0.2), (3, 4)),
    ]


@pytest.mark.parametrize("case", _grad_cases(), ids=lambda c: c[0])
def test_gradcheck_and_gradgradcheck(case):
    _, fn, shape = case
    # Away from the kinks of l1/smooth_l1/huber so the numerical derivative is smooth.
    x = ember.tensor(np.random.default_rng(8).standard_normal(shape) * 3 + 0.05, requires_grad=True)
    assert gradcheck(fn, (x,), check_forward_ad=True)
    assert gradgradcheck(fn, (x,), check_fwd_over_rev=True)


@needs_torch
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_against_torch(reduction):
    rng = np.random.default_rng(9)
    for shape, target_shape in SHAPES:
        x = rng.standard_normal(shape)
        target = rng.integers(0, 5, target_shape)
        if target.ndim:
            target.flat[-1] = 2
            target.flat[0] = -100
        for weight in (None, rng.random(5)):
            ew = None if weight is None else _t(weight)
            tw = None if weight is None else torch.tensor(weight)
            for eps in (0.0, 0.3):
                got = F.cross_entropy(_t(x), _t(target), ew, reduction=reduction, label_smoothing=eps)
                ref = TF.cross_entropy(torch.tensor(x), torch.tensor(target), tw, reduction=reduction,
                                       label_smoothing=eps)
                np.testing.assert_allclose(got.numpy(), ref.numpy(), rtol=1e-10, atol=1e-12)
                p = rng.random(shape)
                got = F.cross_entropy(_t(x), _t(p), ew, reduction=reduction, label_smoothing=eps)
                ref = TF.cross_entropy(torch.tensor(x), torch.tensor(p), tw, reduction=reduction,
                                       label_smoothing=eps)
                np.testing.assert_allclose(got.numpy(), ref.numpy(), rtol=1e-10, atol=1e-12)
    z, y, pw = rng.standard_normal((4, 5)) * 30, rng.random((4, 5)), rng.random(5)
    got = F.binary_cross_entropy_with_logits(_t(z), _t(y), pos_weight=_t(pw), reduction=reduction)
    ref = TF.binary_cross_entropy_with_logits(torch.tensor(z), torch.tensor(y), pos_weight=torch.tensor(pw),
                                              reduction=reduction)
    np.testing.assert_allclose(got.numpy(), ref.numpy(), rtol=1e-10)


def test_float32_cross_entropy_at_a_realistic_size():
    rng = np.random.default_rng(10)
    x = rng.standard_normal((256, 1000)).astype(np.float32)
    target = rng.integers(0, 1000, 256)
    xt = ember.tensor(x, requires_grad=True)
    loss = F.cross_entropy(xt, _t(target))
    loss.backward()
    logp = _log_softmax(x.astype(np.float64), 1)
    np.testing.assert_allclose(loss.item(), -logp[np.arange(256), target].mean(), rtol=1e-5)
    expected_grad = (np.exp(logp) - np.eye(1000)[target]) / 256
    np.testing.assert_allclose(xt.grad.numpy(), expected_grad, rtol=1e-4, atol=1e-7)
    assert loss.dtype == ember.float32


def _xlogy(t):
    return np.where(t == 0, 0.0, t * np.log(np.where(t == 0, 1.0, t)))


def _softplus(z):
    return np.logaddexp(0, z)


def _second_group_refs(rng):
    """(name, ember call, NumPy reference of the 'none' loss) on fixed random data."""
    x, y, z = (rng.standard_normal((4, 5)) for _ in range(3))
    probs = rng.random((4, 5))
    probs[0, 0] = 0.0  # xlogy's 0 * log 0 = 0
    counts = rng.integers(0, 5, (4, 5)).astype(float)
    sign_rows, sign = np.array([1.0, -1.0, 1.0, -1.0]), np.sign(rng.standard_normal((4, 5)))
    var = rng.random((4, 5)) + 0.1
    labels = (rng.random((4, 5)) > 0.5).astype(float)
    w = rng.random(5)
    stirling = np.where(counts > 1, counts * np.log(np.maximum(counts, 1)) - counts
                        + 0.5 * np.log(2 * np.pi * np.maximum(counts, 1)), 0.0)
    cos = (x * y).sum(1) / np.sqrt(((x * x).sum(1) + 1e-12) * ((y * y).sum(1) + 1e-12))
    d = lambda a, b, p: (np.abs(a - b + 1e-6) ** p).sum(-1) ** (1 / p)  # noqa: E731
    return [
        ("kl_div", lambda r: F.kl_div(_t(x), _t(probs), reduction=r), _xlogy(probs) - probs * x),
        ("kl_div_log_target", lambda r: F.kl_div(_t(x), _t(y), reduction=r, log_target=True), np.exp(y) * (y - x)),
        ("poisson_nll_loss", lambda r: F.poisson_nll_loss(_t(x), _t(counts), reduction=r), np.exp(x) - counts * x),
        ("poisson_nll_loss_full", lambda r: F.poisson_nll_loss(_t(np.abs(x)), _t(counts), log_input=False,
                                                               full=True, reduction=r),
         np.abs(x) - counts * np.log(np.abs(x) + 1e-8) + stirling),
        ("gaussian_nll_loss", lambda r: F.gaussian_nll_loss(_t(x), _t(y), _t(var), full=True, reduction=r),
         0.5 * (np.log(var) + (x - y) ** 2 / var) + 0.5 * np.log(2 * np.pi)),
        ("gaussian_nll_loss_homoscedastic", lambda r: F.gaussian_nll_loss(_t(x), _t(y), _t(var[:, 0]), reduction=r),
         0.5 * (np.log(var[:, :1]) + (x - y) ** 2 / var[:, :1])),
        ("margin_ranking_loss", lambda r: F.margin_ranking_loss(_t(x), _t(y), _t(sign), margin=0.3, reduction=r),
         np.maximum(0, -sign * (x - y) + 0.3)),
        ("hinge_embedding_loss", lambda r: F.hinge_embedding_loss(_t(x), _t(sign), margin=0.7, reduction=r),
         np.where(sign == 1, x, np.maximum(0, 0.7 - x))),
        ("soft_margin_loss", lambda r: F.soft_margin_loss(_t(x * 100), _t(sign), reduction=r),
         _softplus(-sign * x * 100)),
        ("multilabel_soft_margin_loss", lambda r: F.multilabel_soft_margin_loss(_t(x), _t(labels), _t(w),
                                                                                reduction=r),
         ((labels * _softplus(-x) + (1 - labels) * _softplus(x)) * w).mean(1)),
        ("cosine_embedding_loss", lambda r: F.cosine_embedding_loss(_t(x), _t(y), _t(sign_rows), margin=0.2,
                                                                    reduction=r),
         np.where(sign_rows == 1, 1 - cos, np.maximum(0, cos - 0.2))),
        ("triplet_margin_loss", lambda r: F.triplet_margin_loss(_t(x), _t(y), _t(z), margin=0.5, reduction=r),
         np.maximum(0, 0.5 + d(x, y, 2) - d(x, z, 2))),
        ("triplet_margin_loss_swap_p1", lambda r: F.triplet_margin_loss(_t(x), _t(y), _t(z), margin=0.5, p=1,
                                                                        swap=True, reduction=r),
         np.maximum(0, 0.5 + d(x, y, 1) - np.minimum(d(x, z, 1), d(y, z, 1)))),
    ]


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("index", range(13))
def test_second_group_matches_numpy(index, reduction):
    name, call, ref = _second_group_refs(np.random.default_rng(11))[index]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # kl_div's 'mean' warning, checked below
        got = call(reduction)
    np.testing.assert_allclose(got.numpy(), _reduce(ref, reduction), rtol=1e-10, atol=1e-12, err_msg=name)


def test_kl_div_batchmean_and_mean_warning():
    rng = np.random.default_rng(12)
    x, t = rng.standard_normal((4, 3)), rng.random((4, 3))
    got = F.kl_div(_t(x), _t(t), reduction="batchmean")
    np.testing.assert_allclose(got.item(), (_xlogy(t) - t * x).sum() / 4, rtol=1e-12)
    with pytest.warns(UserWarning, match="'batchmean' divides only by the batch size"):
        F.kl_div(_t(x), _t(t))


def test_second_group_errors():
    x = _t(np.zeros((3, 4)))
    with pytest.raises(ValueError, match="var has negative entry"):
        F.gaussian_nll_loss(x, x, -1.0)
    with pytest.raises(ValueError, match="var is of incorrect size"):
        F.gaussian_nll_loss(x, x, _t(np.ones((2, 4))))
    with pytest.raises(ValueError, match="margin must be greater than 0, got 0"):
        F.triplet_margin_loss(x, x, x, margin=0)
    with pytest.raises(RuntimeError, match="triplet_margin_loss"):
        F.triplet_margin_loss(x, x, _t(np.zeros(4)))
    with pytest.raises(RuntimeError, match="margin_ranking_loss : All input tensors should have same dimension"):
        F.margin_ranking_loss(_t(np.zeros(3)), _t(np.zeros(3)), _t(np.ones((3, 1))))
    with pytest.raises(RuntimeError, match="0D or 1D target tensor expected"):
        F.cosine_embedding_loss(x, x, _t(np.ones((3, 1))))
    with pytest.raises(RuntimeError, match="cosine_embedding_loss"):
        F.cosine_embedding_loss(_t(np.zeros(4)), _t(np.zeros(4)), _t(np.ones(3)))
    with pytest.raises(ValueError, match="foo is not"):
        F.multilabel_soft_margin_loss(x, x, reduction="foo")


def test_gaussian_nll_loss_clamp_passes_the_gradient_through():
    x, y = _t(np.array([1.0, 2.0])), _t(np.array([0.0, 0.0]))
    var = ember.tensor(np.array([0.0, 1.0]), requires_grad=True)
    F.gaussian_nll_loss(x, y, var, eps=0.5, reduction="sum").backward()
    # d/dv 0.5 (log v + d^2 / v) at the clamped v = 0.5 and at v = 1, as PyTorch's no_grad clamp gives
    np.testing.assert_allclose(var.grad.numpy(), [0.5 * (1 / 0.5 - 1 / 0.25), 0.5 * (1 - 4)])


def _second_group_grad_cases():
    rng = np.random.default_rng(13)
    y, z = _t(rng.standard_normal((3, 4))), _t(rng.standard_normal((3, 4)))
    probs, counts = _t(rng.random((3, 4))), _t(rng.integers(0, 5, (3, 4)).astype(float))
    sign, sign_rows = _t(np.sign(rng.standard_normal((3, 4)))), _t(np.array([1.0, -1.0, -1.0]))
    labels = _t((rng.random((3, 4)) > 0.5).astype(float))
    return [
        ("kl_div", lambda x: F.kl_div(x, probs, reduction="batchmean")),
        ("kl_div_log_target", lambda x: F.kl_div(y, x, reduction="sum", log_target=True)),
        ("poisson_nll_loss", lambda x: F.poisson_nll_loss(x, counts)),
        ("poisson_nll_loss_rate", lambda x: F.poisson_nll_loss(x.exp(), counts, log_input=False, full=True)),
        ("gaussian_nll_loss_input", lambda x: F.gaussian_nll_loss(x, y, probs + 0.1, reduction="none")),
        ("gaussian_nll_loss_var", lambda x: F.gaussian_nll_loss(y, z, x.exp())),
        ("margin_ranking_loss", lambda x: F.margin_ranking_loss(x, y, sign, margin=0.1)),
        ("hinge_embedding_loss", lambda x: F.hinge_embedding_loss(x, sign, margin=0.5, reduction="sum")),
        ("soft_margin_loss", lambda x: F.soft_margin_loss(x, sign)),
        ("multilabel_soft_margin_loss", lambda x: F.multilabel_soft_margin_loss(x, labels, reduction="none")),
        ("cosine_embedding_loss", lambda x: F.cosine_embedding_loss(x, y, sign_rows, margin=-0.9)),
        ("triplet_margin_loss", lambda x: F.triplet_margin_loss(x, y, z, margin=5.0, swap=True)),
    ]


@pytest.mark.parametrize("case", _second_group_grad_cases(), ids=lambda c: c[0])
def test_second_group_gradcheck_and_gradgradcheck(case):
    _, fn = case
    x = ember.tensor(np.random.default_rng(14).standard_normal((3, 4)) * 2 + 0.05, requires_grad=True)
    assert gradcheck(fn, (x,), check_forward_ad=True)
    assert gradgradcheck(fn, (x,), check_fwd_over_rev=True)


@needs_torch
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_second_group_against_torch(reduction):
    rng = np.random.default_rng(15)
    x, y, z = (rng.standard_normal((4, 5)) for _ in range(3))
    t, sign, rows = rng.random((4, 5)), np.sign(rng.standard_normal((4, 5))), np.array([1.0, -1.0, 1.0, -1.0])
    counts = rng.integers(0, 5, (4, 5)).astype(float)
    calls = [
        ("kl_div", (x, t), {"reduction": reduction}),
        ("poisson_nll_loss", (np.abs(x), counts), {"log_input": False, "full": True, "reduction": reduction}),
        ("gaussian_nll_loss", (x, y, t[:, :1]), {"full": True, "reduction": reduction}),
        ("margin_ranking_loss", (x, y, sign), {"margin": 0.2, "reduction": reduction}),
        ("hinge_embedding_loss", (x, sign), {"reduction": reduction}),
        ("soft_margin_loss", (x, sign), {"reduction": reduction}),
        ("multilabel_soft_margin_loss", (x, t.round()), {"reduction": reduction}),
        ("cosine_embedding_loss", (x, y, rows), {"margin": 0.1, "reduction": reduction}),
        ("triplet_margin_loss", (x, y, z), {"p": 3, "swap": True, "reduction": reduction}),
    ]
    for name, args, kwargs in calls:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = getattr(F, name)(*map(_t, args), **kwargs)
            ref = getattr(TF, name)(*map(torch.tensor, args), **kwargs)
        np.testing.assert_allclose(got.numpy(), ref.numpy(), rtol=1e-10, atol=1e-12, err_msg=name)
