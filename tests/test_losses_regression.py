"""The regression and margin losses (ops.yaml's losses-regression section and their
ember.nn.functional wrappers): values against NumPy (and PyTorch when it is installed) for
every reduction, broadcasting and its warning, non-contiguous and empty inputs, half types,
gradients of the target, PyTorch's errors and legacy arguments, 1-3 threads above the parallel
thresholds, and the JVPs of the ops the harness cannot sample (GRAD_CASES, whose gradcheck and
gradgradcheck run in tests/test_higher_order.py)."""
import math
import warnings

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from harness.forward_ad import assert_jvp_matches_finite_differences

try:
    import torch
    import torch.nn.functional as TF
except ImportError:  # the comparisons with PyTorch skip; the NumPy ones run
    torch = TF = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
F64 = ember.float64
REDUCTIONS = ("none", "mean", "sum")
RNG = np.random.default_rng(11)


def arr(*shape, low=-2.0, high=2.0):
    return RNG.uniform(low, high, size=shape)


def t64(*shape):
    return ember.tensor(arr(*shape), requires_grad=True)


def np_reduce(loss, reduction):
    if reduction == "none":
        return loss
    with np.errstate(all="ignore"):
        return np.mean(loss) if reduction == "mean" else np.sum(loss)


def np_huber(d, delta):
    return np.where(np.abs(d) < delta, 0.5 * d * d, delta * (np.abs(d) - 0.5 * delta))


# (F name, kwargs, NumPy loss of d = input - target)
POINTWISE = [
    ("mse_loss", {}, lambda d: d * d),
    ("l1_loss", {}, np.abs),
    ("smooth_l1_loss", {}, lambda d: np_huber(d, 1.0)),
    ("smooth_l1_loss", {"beta": 0.5}, lambda d: np_huber(d, 0.5) / 0.5),
    ("smooth_l1_loss", {"beta": 0.0}, np.abs),
    ("huber_loss", {}, lambda d: np_huber(d, 1.0)),
    ("huber_loss", {"delta": 0.25}, lambda d: np_huber(d, 0.25)),
]
POINTWISE_IDS = [f"{n}-{kw}" if kw else n for n, kw, _ in POINTWISE]


def close(got, want, rtol=1e-6, atol=1e-8):
    got = got.detach().numpy() if hasattr(got, "detach") else got
    np.testing.assert_allclose(np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64),
                               rtol=rtol, atol=atol, equal_nan=True)


def to_torch(t):
    return torch.tensor(t.detach().numpy())


# ---------------------------------------------------------------- pointwise losses: values

@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,kwargs,np_loss", POINTWISE, ids=POINTWISE_IDS)
def test_pointwise_losses_match_numpy_and_torch(name, kwargs, np_loss, dtype, reduction):
    x, y = arr(4, 5), arr(4, 5)
    a, b = ember.tensor(x, dtype=getattr(ember, dtype)), ember.tensor(y, dtype=getattr(ember, dtype))
    got = getattr(F, name)(a, b, reduction=reduction, **kwargs)
    assert got.dtype == a.dtype
    assert tuple(got.shape) == ((4, 5) if reduction == "none" else ())
    rtol = 1e-5 if dtype == "float32" else 1e-12
    close(got, np_reduce(np_loss(x.astype(dtype) - y.astype(dtype)), reduction), rtol=rtol, atol=1e-6)
    if torch is not None:
        want = getattr(TF, name)(to_torch(a), to_torch(b), reduction=reduction, **kwargs)
        close(got, want.numpy(), rtol=rtol, atol=1e-6)


@pytest.mark.parametrize("name,kwargs,np_loss", POINTWISE, ids=POINTWISE_IDS)
def test_pointwise_losses_on_non_contiguous_inputs(name, kwargs, np_loss):
    x, y = arr(5, 4), arr(10, 4)
    a = ember.tensor(x).t()                  # transposed
    b = ember.tensor(y)[::2].t()             # strided and transposed
    want = np_loss(x.T - y[::2].T)
    close(getattr(F, name)(a, b, reduction="none", **kwargs), want, rtol=1e-12)
    close(getattr(F, name)(a, b, reduction="sum", **kwargs), want.sum(), rtol=1e-12)


@pytest.mark.parametrize("name,kwargs,np_loss", POINTWISE, ids=POINTWISE_IDS)
def test_broadcast_targets_warn_as_torch_and_broadcast(name, kwargs, np_loss):
    x, y = arr(3, 1), arr(1, 4)
    with pytest.warns(UserWarning, match=r"Using a target size .* that is different to the input size"):
        got = getattr(F, name)(ember.tensor(x), ember.tensor(y), reduction="none", **kwargs)
    close(got, np_loss(x - y), rtol=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("error")        # same sizes: no warning
        getattr(F, name)(ember.tensor(x), ember.tensor(x), **kwargs)


@pytest.mark.parametrize("name,kwargs,np_loss", POINTWISE, ids=POINTWISE_IDS)
def test_empty_inputs(name, kwargs, np_loss):
    a, b = ember.zeros(0, 3), ember.zeros(0, 3)
    assert tuple(getattr(F, name)(a, b, reduction="none", **kwargs).shape) == (0, 3)
    assert math.isnan(getattr(F, name)(a, b, reduction="mean", **kwargs).item())  # as torch: 0 / 0
    assert getattr(F, name)(a, b, reduction="sum", **kwargs).item() == 0.0


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("name,kwargs,np_loss", POINTWISE, ids=POINTWISE_IDS)
def test_half_types_compute_in_float32(name, kwargs, np_loss, dtype):
    a = ember.tensor(arr(3, 4), dtype=getattr(ember, dtype))
    b = ember.tensor(arr(3, 4), dtype=getattr(ember, dtype))
    x, y = a.to(ember.float64).numpy(), b.to(ember.float64).numpy()
    for reduction in REDUCTIONS:
        got = getattr(F, name)(a, b, reduction=reduction, **kwargs)
        assert got.dtype == a.dtype
        rtol = 4e-3 if dtype == "float16" else 3e-2
        close(got.to(ember.float64), np_reduce(np_loss(x - y), reduction), rtol=rtol, atol=rtol)
        if torch is not None:
            tdtype = getattr(torch, dtype)
            want = getattr(TF, name)(torch.tensor(x).to(tdtype), torch.tensor(y).to(tdtype), reduction=reduction,
                                     **kwargs)
            assert str(want.dtype) == f"torch.{dtype}"
            close(got.to(ember.float64), want.double().numpy(), rtol=rtol, atol=rtol)


def test_result_dtypes_follow_torch():
    half, single = ember.ones(2, 3, dtype=ember.float16), ember.ones(2, 3)
    assert ember._C._nn.mse_loss(half, single, 1).dtype == ember.float32       # promoted
    assert ember._C._nn.l1_loss(single, ember.ones((), dtype=F64), 0).dtype == ember.float32  # 0-d: category only
    assert ember._C._nn.smooth_l1_loss(single, ember.ones(2, 3, dtype=F64), 2).dtype == F64
    assert ember._C._nn.huber_loss(half, single, 1).dtype == ember.float16     # self's dtype, as torch
    assert ember._C._nn.huber_loss(single, ember.ones(2, 3, dtype=F64), 0).dtype == ember.float32
    assert ember.hinge_embedding_loss(single, ember.ones(2, 3, dtype=F64), 1.0, 0).dtype == ember.float32
    assert ember.hinge_embedding_loss(half, ember.ones(2, 3, dtype=ember.bfloat16), 1.0, 2).dtype == ember.float16
    ints = ember.tensor([[1, -3], [4, 2]])
    assert ember._C._nn.l1_loss(ints, ember.tensor([[0, 1], [1, 1]]), 2).item() == 9  # integers, as torch
    assert ember._C._nn.l1_loss(ints, ints, 0).dtype == ember.int64


def test_reduction_argument_of_the_ops():
    a, b = ember.tensor(arr(2, 3)), ember.tensor(arr(2, 3))
    assert tuple(ember._C._nn.mse_loss(a, b).shape) == ()                    # ATen's default: mean
    close(ember._C._nn.mse_loss(a, b, 2), ((a - b) ** 2).sum().item(), rtol=1e-12)
    for op in (ember._C._nn.mse_loss, ember._C._nn.l1_loss, ember._C._nn.smooth_l1_loss, ember._C._nn.huber_loss):
        with pytest.raises(RuntimeError, match=f"{op.__name__}: reduction must be 0"):
            op(a, b, 3)


def test_out_forms():
    a, b = ember.tensor(arr(2, 3)), ember.tensor(arr(2, 3))
    for name in ("mse_loss", "smooth_l1_loss", "huber_loss"):
        out = ember.empty(0, dtype=F64)
        got = getattr(ember._C._nn, name)(a, b, 0, out=out)
        assert got is out
        close(out, getattr(ember._C._nn, name)(a, b, 0), rtol=0)


# ---------------------------------------------------------------- pointwise losses: gradients

@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("name,kwargs,np_loss", POINTWISE, ids=POINTWISE_IDS)
def test_gradients_of_input_and_target(name, kwargs, np_loss, reduction):
    x, y = arr(3, 4), arr(3, 4)
    a, b = ember.tensor(x, requires_grad=True), ember.tensor(y, requires_grad=True)
    out = getattr(F, name)(a, b, reduction=reduction, **kwargs)
    (out if reduction != "none" else out * ember.tensor(np.linspace(0.5, 2, 12).reshape(3, 4))).sum().backward()
    close(a.grad, -b.grad.numpy(), rtol=0, atol=0)           # d loss / d target = -d loss / d input
    if torch is not None:
        ta, tb = torch.tensor(x, requires_grad=True), torch.tensor(y, requires_grad=True)
        tout = getattr(TF, name)(ta, tb, reduction=reduction, **kwargs)
        (tout if reduction != "none" else tout * torch.tensor(np.linspace(0.5, 2, 12).reshape(3, 4))).sum().backward()
        close(a.grad, ta.grad.numpy(), rtol=1e-12, atol=1e-15)
        close(b.grad, tb.grad.numpy(), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("name,kwargs", [("l1_loss", {}), ("smooth_l1_loss", {"beta": 0.0}),
                                         ("smooth_l1_loss", {}), ("huber_loss", {}), ("mse_loss", {})])
def test_gradient_at_zero_difference_is_zero(name, kwargs):
    # l1's subgradient at 0 is 0 (sign(0)), as torch's; beta = 0 goes through l1_loss.
    a = ember.tensor([0.5, -1.0, 2.0], dtype=F64, requires_grad=True)
    getattr(F, name)(a, a.detach().clone(), reduction="sum", **kwargs).backward()
    assert a.grad.numpy().tolist() == [0.0, 0.0, 0.0]


@pytest.mark.parametrize("name,kwargs,kink", [("smooth_l1_loss", {"beta": 0.5}, 0.5),
                                              ("huber_loss", {"delta": 0.5}, 0.5)])
def test_second_derivative_is_zero_outside_the_quadratic_zone(name, kwargs, kink):
    from ember import autograd
    d = np.array([-2.0, -0.25, 0.0, 0.3, 1.5])
    a = ember.tensor(d, requires_grad=True)
    loss = getattr(F, name)(a, ember.zeros(5, dtype=F64), reduction="sum", **kwargs)
    g, = autograd.grad(loss, [a], create_graph=True)
    gg, = autograd.grad(g.sum(), [a])
    scale = 1 / kink if name == "smooth_l1_loss" else 1.0
    assert gg.numpy().tolist() == [0.0, scale, scale, scale, 0.0]


@pytest.mark.parametrize("name,kwargs,np_loss", POINTWISE, ids=POINTWISE_IDS)
def test_gradcheck_and_gradgradcheck_of_the_functional_forms(name, kwargs, np_loss):
    from ember.autograd import gradcheck, gradgradcheck
    a, b = t64(3, 4), t64(3, 4)   # differences away from the kinks at 0 and +-beta with this seed
    fn = lambda x, y: getattr(F, name)(x * 1.0, y, reduction="mean", **kwargs)  # noqa: E731
    assert gradcheck(fn, (a, b), eps=1e-6, atol=1e-5, rtol=1e-3)
    assert gradgradcheck(fn, (a, b), eps=1e-6, atol=1e-5, rtol=1e-3)


# ---------------------------------------------------------------- weights, legacy arguments, errors

@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("name", ["mse_loss", "l1_loss", "huber_loss"])
def test_weighted_losses_as_torch(name, reduction):
    x, y, w = arr(3, 4), arr(3, 4), arr(3, 4, low=0.1, high=2.0)
    got = getattr(F, name)(ember.tensor(x), ember.tensor(y), reduction=reduction, weight=ember.tensor(w))
    per = {"mse_loss": (x - y) ** 2, "l1_loss": np.abs(x - y), "huber_loss": np_huber(x - y, 1.0)}[name] * w
    want = per if reduction == "none" else per.sum()
    if reduction == "mean":   # mse and l1 divide by the weights' sum, huber by the element count
        want = per.mean() if name == "huber_loss" else per.sum() / w.sum()
    close(got, want, rtol=1e-12)
    if torch is not None:
        t = getattr(TF, name)(torch.tensor(x), torch.tensor(y), reduction=reduction, weight=torch.tensor(w))
        close(got, t.numpy(), rtol=1e-12)
    with pytest.raises(ValueError, match="Weights and input must have the same size."):
        getattr(F, name)(ember.tensor(x), ember.tensor(y), weight=ember.tensor(w[0]))


def test_legacy_size_average_and_reduce():
    a, b = ember.tensor(arr(2, 3)), ember.tensor(arr(2, 3))
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated"):
        got = F.mse_loss(a, b, size_average=False)
    close(got, ((a - b) ** 2).sum().item(), rtol=1e-12)
    with pytest.warns(UserWarning, match="reduction='none' instead"):
        assert tuple(F.l1_loss(a, b, reduce=False).shape) == (2, 3)
    with pytest.warns(UserWarning, match="reduction='sum' instead"):
        F.margin_ranking_loss(a, b, ember.ones(2, 3), size_average=False)
    with pytest.warns(UserWarning, match="elementwise_mean"):
        F.smooth_l1_loss(a, b, reduction="elementwise_mean")


@pytest.mark.parametrize("call,exc,match", [
    (lambda a, b: F.mse_loss(a, b, reduction="avg"), ValueError, "avg is not a valid value for reduction"),
    (lambda a, b: F.hinge_embedding_loss(a, b, reduction="avg"), ValueError, "avg is not a valid value for reduction"),
    (lambda a, b: F.poisson_nll_loss(a, b, reduction="avg"), ValueError, "avg is not a valid value for reduction"),
    (lambda a, b: F.mse_loss(a, b, reduction="avg", weight=a), ValueError, "Invalid reduction mode: avg"),
    (lambda a, b: F.smooth_l1_loss(a, b, beta=-1.0), RuntimeError,
     "smooth_l1_loss does not support negative values for beta."),
    (lambda a, b: F.huber_loss(a, b, delta=0.0), RuntimeError,
     "huber_loss does not support non-positive values for delta."),
    (lambda a, b: F.mse_loss(a, b.t()), RuntimeError,
     r"^The size of tensor a \(3\) must match the size of tensor b \(2\) at non-singleton dimension 1$"),
    (lambda a, b: ember.hinge_embedding_loss(a, b.t()), RuntimeError,
     r"^The size of tensor a \(\d\) must match the size of tensor b \(\d\) at non-singleton dimension \d$"),
    (lambda a, b: F.margin_ranking_loss(a, b, b[0]), RuntimeError, "All input tensors should have same dimension"),
    (lambda a, b: F.cosine_embedding_loss(a, b, ember.ones(2, 2)), RuntimeError,
     "0D or 1D target tensor expected, multi-target not supported"),
    (lambda a, b: F.cosine_embedding_loss(a, b, ember.ones(())), RuntimeError,
     r"0D target tensor expects 1D input tensors, but found inputs with sizes \[2, 3\] and \[2, 3\]."),
    (lambda a, b: F.cosine_embedding_loss(a[0], b[0], ember.ones(2)), RuntimeError,
     r"1D target tensor expects 2D input tensors, but found inputs with sizes \[3\] and \[3\]."),
    (lambda a, b: F.triplet_margin_loss(a, b, b[0]), RuntimeError,
     "anchor 2D, positive 2D, and negative 1D inputs"),
    (lambda a, b: F.triplet_margin_loss(a, b, b, margin=0.0), ValueError, "margin must be greater than 0, got 0.0"),
    (lambda a, b: F.triplet_margin_with_distance_loss(a, b, b[0]), RuntimeError,
     "anchor 2D, positive 2D, and negative 1D inputs"),
    (lambda a, b: F.triplet_margin_with_distance_loss(a, b, b, margin=-1.0), ValueError,
     "margin must be greater than 0"),
    (lambda a, b: F.triplet_margin_with_distance_loss(a, b, b, reduction="x"), ValueError, "x is not a valid value"),
    (lambda a, b: F.gaussian_nll_loss(a, b, -a * a - 1), ValueError, "var has negative entry/entries"),
    (lambda a, b: F.gaussian_nll_loss(a, b, a[:, :2].abs()), ValueError, "var is of incorrect size"),
])
@pytest.mark.filterwarnings("ignore:Using a target size")
def test_errors_as_torch(call, exc, match):
    """PyTorch's classes and messages (each written down from PyTorch 2.13)."""
    a, b = ember.tensor(arr(2, 3)), ember.tensor(arr(2, 3))
    with pytest.raises(exc, match=match):
        call(a, b)


def test_integer_inputs_raise_naming_the_op():
    ints = ember.tensor([[1, 2], [3, 4]])
    for name in ("mse_loss", "smooth_l1_loss", "huber_loss"):
        with pytest.raises((RuntimeError, TypeError, NotImplementedError), match=name.replace("_loss", "")):
            getattr(F, name)(ints, ints)


# ---------------------------------------------------------------- margin and likelihood losses

def np_margin_ranking(x1, x2, t, margin):
    return np.maximum(0, -t * (x1 - x2) + margin)


def np_hinge(x, t, margin):
    return np.where(t != 1, np.maximum(margin - x, 0), 0) + np.where(t != -1, x, 0)


def np_cosine(x1, x2, t, margin):
    cos = (x1 * x2).sum(-1) / np.sqrt(((x1 * x1).sum(-1) + 1e-12) * ((x2 * x2).sum(-1) + 1e-12))
    return np.where(t == 1, 1 - cos, 0) + np.where(t == -1, np.maximum(cos - margin, 0), 0)


def np_pairwise(x1, x2, p, eps):
    d = np.abs(x1 - x2 + eps)
    return d.max(-1) if p == math.inf else (d ** p).sum(-1) ** (1 / p)


def np_triplet(a, p_, n, margin, p, eps, swap):
    d_pos, d_neg = np_pairwise(a, p_, p, eps), np_pairwise(a, n, p, eps)
    if swap:
        d_neg = np.minimum(d_neg, np_pairwise(p_, n, p, eps))
    return np.maximum(margin + d_pos - d_neg, 0)


def signs(*shape):
    return np.where(RNG.random(shape) < 0.5, -1.0, 1.0)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("margin", [0.0, 0.5])
def test_margin_ranking_loss(reduction, margin):
    x1, x2, t = arr(6), arr(6), signs(6)
    got = F.margin_ranking_loss(ember.tensor(x1), ember.tensor(x2), ember.tensor(t), margin=margin, reduction=reduction)
    close(got, np_reduce(np_margin_ranking(x1, x2, t, margin), reduction), rtol=1e-12)
    if torch is not None:
        want = TF.margin_ranking_loss(torch.tensor(x1), torch.tensor(x2), torch.tensor(t), margin=margin,
                                      reduction=reduction)
        close(got, want.numpy(), rtol=1e-12)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_hinge_embedding_loss(reduction):
    x, t = arr(3, 5), signs(3, 5)
    for target in (t, t.astype(np.int64)):
        got = F.hinge_embedding_loss(ember.tensor(x), ember.tensor(target), margin=0.75, reduction=reduction)
        close(got, np_reduce(np_hinge(x, t, 0.75), reduction), rtol=1e-12)
        if torch is not None:
            want = TF.hinge_embedding_loss(torch.tensor(x), torch.tensor(target), margin=0.75, reduction=reduction)
            close(got, want.numpy(), rtol=1e-12)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("batched", [True, False])
def test_cosine_embedding_loss(reduction, batched):
    shape = (4, 5) if batched else (5,)
    x1, x2 = arr(*shape), arr(*shape)
    t = signs(4) if batched else np.array(-1.0)
    got = F.cosine_embedding_loss(ember.tensor(x1), ember.tensor(x2), ember.tensor(t), margin=-0.2, reduction=reduction)
    close(got, np_reduce(np_cosine(x1, x2, t, -0.2), reduction), rtol=1e-12)
    if torch is not None:
        want = TF.cosine_embedding_loss(torch.tensor(x1), torch.tensor(x2), torch.tensor(t), margin=-0.2,
                                        reduction=reduction)
        close(got, want.numpy(), rtol=1e-12)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("p,swap", [(2, False), (1, True), (3, False), (2, True)])
def test_triplet_margin_loss(reduction, p, swap):
    a, pos, neg = arr(4, 6), arr(4, 6), arr(4, 6)
    got = F.triplet_margin_loss(ember.tensor(a), ember.tensor(pos), ember.tensor(neg), margin=1.5, p=p, swap=swap,
                                reduction=reduction)
    close(got, np_reduce(np_triplet(a, pos, neg, 1.5, p, 1e-6, swap), reduction), rtol=1e-12)
    if torch is not None:
        want = TF.triplet_margin_loss(torch.tensor(a), torch.tensor(pos), torch.tensor(neg), margin=1.5, p=p,
                                      swap=swap, reduction=reduction)
        close(got, want.numpy(), rtol=1e-12)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("swap", [False, True])
def test_triplet_margin_with_distance_loss(reduction, swap):
    a, pos, neg = arr(4, 6), arr(4, 6), arr(4, 6)
    e = [ember.tensor(v) for v in (a, pos, neg)]
    got = F.triplet_margin_with_distance_loss(*e, swap=swap, reduction=reduction)
    close(got, np_reduce(np_triplet(a, pos, neg, 1.0, 2, 1e-6, swap), reduction), rtol=1e-12)
    l1 = lambda x, y: (x - y).abs().sum(-1)  # noqa: E731
    got = F.triplet_margin_with_distance_loss(*e, distance_function=l1, margin=0.5, swap=swap, reduction=reduction)
    close(got, np_reduce(np_triplet(a, pos, neg, 0.5, 1, 0.0, swap), reduction), rtol=1e-12)
    if torch is not None:
        want = TF.triplet_margin_with_distance_loss(*[torch.tensor(v) for v in (a, pos, neg)], distance_function=l1,
                                                    margin=0.5, swap=swap, reduction=reduction)
        close(got, want.numpy(), rtol=1e-12)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("log_input,full", [(True, False), (False, False), (True, True), (False, True)])
def test_poisson_nll_loss(reduction, log_input, full):
    x = arr(3, 4, low=0.05, high=2.0)
    t = RNG.integers(0, 5, size=(3, 4)).astype(np.float64)  # counts, some of them 0 and 1
    got = F.poisson_nll_loss(ember.tensor(x), ember.tensor(t), log_input=log_input, full=full, reduction=reduction)
    loss = np.exp(x) - t * x if log_input else x - t * np.log(x + 1e-8)
    if full:
        safe = np.where(t > 1, t, 1.0)
        loss = loss + np.where(t > 1, safe * np.log(safe) - safe + 0.5 * np.log(2 * np.pi * safe), 0.0)
    close(got, np_reduce(loss, reduction), rtol=1e-12)
    if torch is not None:
        want = TF.poisson_nll_loss(torch.tensor(x), torch.tensor(t), log_input=log_input, full=full,
                                   reduction=reduction)
        close(got, want.numpy(), rtol=1e-12)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("var_shape,full", [((3, 4), False), ((3,), True), ((3, 1), False), (None, True)])
def test_gaussian_nll_loss(reduction, var_shape, full):
    x, y = arr(3, 4), arr(3, 4)
    var = 0.75 if var_shape is None else np.abs(arr(*var_shape)) + 1e-7  # some below eps after the clamp
    e_var = var if var_shape is None else ember.tensor(var, requires_grad=True)
    a = ember.tensor(x, requires_grad=True)
    got = F.gaussian_nll_loss(a, ember.tensor(y), e_var, full=full, reduction=reduction)
    v = np.maximum(np.asarray(var) if var_shape != (3,) else var[:, None], 1e-6)
    loss = 0.5 * (np.log(v) + (x - y) ** 2 / v) + (0.5 * math.log(2 * math.pi) if full else 0)
    close(got, np_reduce(loss, reduction), rtol=1e-12)
    if torch is not None:
        t_var = var if var_shape is None else torch.tensor(var, requires_grad=True)
        ta = torch.tensor(x, requires_grad=True)
        want = TF.gaussian_nll_loss(ta, torch.tensor(y), t_var, full=full, reduction=reduction)
        close(got, want.detach().numpy(), rtol=1e-12)
        got.sum().backward()
        want.sum().backward()
        close(a.grad, ta.grad.numpy(), rtol=1e-10)
        if var_shape is not None:
            close(e_var.grad, t_var.grad.numpy(), rtol=1e-10)


def test_margin_losses_on_empty_and_non_contiguous_inputs():
    e = ember.zeros(0, 4)
    assert math.isnan(F.triplet_margin_loss(e, e, e).item())
    assert F.margin_ranking_loss(ember.zeros(0), ember.zeros(0), ember.zeros(0), reduction="sum").item() == 0.0
    x = arr(6, 4)
    a = ember.tensor(x).t()   # (4, 6), non-contiguous
    close(F.hinge_embedding_loss(a, ember.ones(4, 6), reduction="none"), x.T, rtol=0)
    close(F.cosine_embedding_loss(a, a, ember.ones(4), reduction="none"), np_cosine(x.T, x.T, np.ones(4), 0.0),
          rtol=1e-12, atol=1e-15)


# ---------------------------------------------------------------- threads, sizes above the thresholds

@pytest.mark.parametrize("name,kwargs,np_loss", POINTWISE, ids=POINTWISE_IDS)
def test_large_inputs_at_1_2_3_threads(name, kwargs, np_loss, threads):
    n = 3 * ember._C._thresholds()["grain_size"] + 17
    x, y = arr(n), arr(n)
    a, b = ember.tensor(x, dtype=ember.float32), ember.tensor(y, dtype=ember.float32)
    want = np_loss(a.to(F64).numpy() - b.to(F64).numpy())
    close(getattr(F, name)(a, b, reduction="none", **kwargs), want, rtol=1e-6, atol=1e-6)
    close(getattr(F, name)(a, b, reduction="sum", **kwargs), want.sum(), rtol=1e-5)
    close(getattr(F, name)(a, b, reduction="mean", **kwargs), want.mean(), rtol=1e-5)
    a.requires_grad_(True)
    getattr(F, name)(a, b, reduction="sum", **kwargs).backward()
    assert np.isfinite(a.grad.numpy()).all()


# ---------------------------------------------------------------- gradcheck, gradgradcheck, JVPs (float64)

def _signs(n):
    return ember.tensor(np.array([1.0, -1.0, -1.0, 1.0, -1.0, 1.0])[:n], dtype=F64)


# Ops the harness cannot sample: op -> [(function, input factory, gradcheck options)]. Each is
# gradchecked and gradgradchecked by tests/test_higher_order.py (NOT_IN_HARNESS) and JVP-checked here.
GRAD_CASES = {
    "huber_loss": [(lambda a, b: ember._C._nn.huber_loss(a, b, 1, 0.75), lambda: (t64(3, 4), t64(3, 4)), {}),
                   (lambda a, b: ember._C._nn.huber_loss(a * a, b, 0, 1.5), lambda: (t64(2, 3), t64(3)), {})],
    "hinge_embedding_loss": [(lambda a: ember.hinge_embedding_loss(a, _signs(6).reshape(2, 3), 0.5, 1),
                              lambda: (t64(2, 3),), {}),
                             (lambda a, t: ember.hinge_embedding_loss(a, t, 1.25, 0), lambda: (t64(3), t64(3)), {})],
    "margin_ranking_loss": [(lambda a, b: ember.margin_ranking_loss(a, b, _signs(6), 0.1, 1),
                             lambda: (t64(6), t64(6)), {}),
                            (lambda a, b, t: ember.margin_ranking_loss(a, b, t, -0.2, 0),
                             lambda: (t64(2, 3), t64(2, 3), t64(2, 3)), {})],
    "cosine_embedding_loss": [(lambda a, b: ember.cosine_embedding_loss(a, b, _signs(4), -0.3, 1),
                               lambda: (t64(4, 5), t64(4, 5)), {}),
                              (lambda a, b: ember.cosine_embedding_loss(a, b, _signs(1)[0], 0.0, 0),
                               lambda: (t64(5), t64(5)), {})],
    "triplet_margin_loss": [(lambda a, p, n: ember.triplet_margin_loss(a, p, n, 2.0, 2.0, 1e-6, False, 1),
                             lambda: (t64(3, 4), t64(3, 4), t64(3, 4)), {}),
                            (lambda a, p, n: ember.triplet_margin_loss(a, p, n, 3.0, 3.0, 1e-6, True, 0),
                             lambda: (t64(3, 4), t64(3, 4), t64(3, 4)), {})],
}
ALL_CASES = [(f"{name}-{i}", *case) for name, cases in GRAD_CASES.items() for i, case in enumerate(cases)]


@pytest.mark.parametrize("name,fn,inputs,options", ALL_CASES, ids=[c[0] for c in ALL_CASES])
def test_forward_mode_matches_finite_differences(name, fn, inputs, options):
    primals = [a.detach() for a in inputs()]
    assert_jvp_matches_finite_differences(fn, primals, [ember.tensor(arr(*a.shape)) for a in primals])
