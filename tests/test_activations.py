"""ember.nn.functional's activations beyond what the op harness samples: values
and gradients over wide ranges (kinks, extremes, inf, nan), PyTorch's
subgradients at the kinks, the `inplace=` flags, prelu, rrelu's random slopes,
and the errors. Compared with PyTorch when it is installed; the kink gradients
and errors are also checked against PyTorch's documented values without it."""
import math
import warnings

import numpy as np
import pytest

import ember
import ember.nn.functional as F

try:
    import torch
    import torch.nn.functional as TF
except ImportError:  # the comparisons below skip; the rest runs
    torch = TF = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")

# (F name, kwargs, the points where the function has a kink or switches formula)
ACTIVATIONS = [
    ("relu", {}, [0.0]),
    ("gelu", {}, []),
    ("gelu", {"approximate": "tanh"}, []),
    ("silu", {}, []),
    ("mish", {}, []),
    ("elu", {}, [0.0]),
    ("elu", {"alpha": 0.5}, [0.0]),
    ("selu", {}, [0.0]),
    ("celu", {"alpha": 2.0}, [0.0]),
    ("leaky_relu", {"negative_slope": 0.2}, [0.0]),
    ("hardtanh", {"min_val": -2.0, "max_val": 3.0}, [-2.0, 3.0]),
    ("relu6", {}, [0.0, 6.0]),
    ("hardsigmoid", {}, [-3.0, 3.0]),
    ("hardswish", {}, [-3.0, 3.0]),
    ("softplus", {}, [20.0]),
    ("softplus", {"beta": 2.0, "threshold": 10.0}, [5.0]),
    ("logsigmoid", {}, []),
    ("softshrink", {"lambd": 0.5}, [-0.5, 0.5]),
    ("hardshrink", {"lambd": 0.5}, [-0.5, 0.5]),
    ("threshold", {"threshold": 0.5, "value": -2.0}, [0.5]),
    ("softsign", {}, []),
    ("tanhshrink", {}, []),
    ("rrelu", {}, [0.0]),  # eval mode: leaky_relu with the mean slope
    ("sigmoid", {}, []),
    ("tanh", {}, []),
]
IDS = [f"{name}-{'-'.join(f'{k}={v}' for k, v in kw.items())}" if kw else name for name, kw, _ in ACTIVATIONS]


def grid(kinks):
    """Dense values over [-30, 30], the kinks and their neighbours, and the extremes."""
    near = [k + d for k in kinks for d in (-1e-6, 0.0, 1e-6)]
    extremes = [-1e4, -700.0, -100.0, -1e-30, 0.0, 1e-30, 100.0, 700.0, 1e4]
    return np.concatenate([np.linspace(-30, 30, 1201), near, extremes])


def call(module, name, x, kwargs):
    return getattr(module, name)(x, **kwargs)


@needs_torch
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,kwargs,kinks", ACTIVATIONS, ids=IDS)
def test_values_and_gradients_match_pytorch_over_wide_ranges(name, kwargs, kinks, dtype):
    values = np.concatenate([grid(kinks), [np.inf, -np.inf, np.nan]]).astype(dtype)
    x = ember.tensor(values, requires_grad=True)
    t = torch.tensor(values, requires_grad=True)
    y, ty = call(F, name, x, kwargs), call(TF, name, t, kwargs)
    # float32: 1 - tanh(u)**2 near tanh = -1 (gelu tanh) is off by float32's eps in both libraries.
    tol = {"rtol": 1e-5, "atol": 2e-6} if dtype == "float32" else {"rtol": 1e-12, "atol": 1e-14}
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), equal_nan=True, **tol)
    y.sum().backward()
    ty.sum().backward()
    grad, expected = x.grad.numpy(), t.grad.numpy()
    if name == "hardsigmoid" and dtype == "float64":
        # PyTorch's float64 kernel multiplies by float32(1/6); ember's slope is 1/6 exactly.
        assert set(np.unique(grad)) == {0.0, 1 / 6}
        tol = {"rtol": 1e-7}
    if name == "softsign":
        # PyTorch differentiates x / (1 + |x|) as a quotient (inf / inf = nan at +-inf); the limit is 0.
        assert (grad[np.isinf(values)] == 0).all()
        expected = np.where(np.isinf(values), 0, expected)
    np.testing.assert_allclose(grad, expected, equal_nan=True, **tol)


# PyTorch's gradient exactly at each kink (its subgradient choice), and just beside it.
KINK_GRADIENTS = {
    "relu": {0.0: 0.0},
    "elu": {0.0: 1.0},
    "selu": {0.0: 1.7580993408473766},  # scale * alpha: PyTorch takes the negative branch at 0
    "celu": {0.0: 1.0},
    "leaky_relu": {0.0: 0.2},
    "hardtanh": {-2.0: 0.0, 3.0: 0.0},
    "relu6": {0.0: 0.0, 6.0: 0.0},
    "hardsigmoid": {-3.0: 0.0, 3.0: 0.0},
    "hardswish": {-3.0: 0.0, 3.0: 1.0},
    "softshrink": {-0.5: 0.0, 0.5: 0.0},
    "hardshrink": {-0.5: 0.0, 0.5: 0.0},
    "threshold": {0.5: 0.0},
}


@pytest.mark.parametrize("name,kwargs,kinks", [a for a in ACTIVATIONS if a[0] in KINK_GRADIENTS and a[1] != {"alpha": 0.5}],
                         ids=lambda v: v if isinstance(v, str) else None)
def test_subgradients_at_the_kinks(name, kwargs, kinks):
    points = sorted(KINK_GRADIENTS[name])
    x = ember.tensor(points, dtype=ember.float64, requires_grad=True)
    call(F, name, x, kwargs).sum().backward()
    assert x.grad.tolist() == pytest.approx([KINK_GRADIENTS[name][p] for p in points], rel=1e-15)
    if torch is not None:  # the table is PyTorch's
        t = torch.tensor(points, dtype=torch.float64, requires_grad=True)
        call(TF, name, t, kwargs).sum().backward()
        assert t.grad.tolist() == pytest.approx(x.grad.tolist(), rel=1e-15)


def test_extremes_stay_finite_where_the_function_is():
    x = ember.tensor([-1e4, -1000.0, 1000.0, 1e4], dtype=ember.float32)
    assert F.logsigmoid(x).tolist() == [-1e4, -1000.0, 0.0, 0.0]
    assert F.softplus(x).tolist() == [0.0, 0.0, 1000.0, 1e4]
    assert F.silu(x).tolist() == [-0.0, -0.0, 1000.0, 1e4]
    assert F.mish(x).tolist() == [-0.0, -0.0, 1000.0, 1e4]
    assert F.gelu(x, approximate="tanh").tolist() == [-0.0, -0.0, 1000.0, 1e4]
    g = ember.tensor([-1e4, 1e4], dtype=ember.float64, requires_grad=True)
    F.logsigmoid(g).sum().backward()
    assert g.grad.tolist() == [1.0, 0.0]


@pytest.mark.parametrize("name,kwargs,kinks", [a for a in ACTIVATIONS if a[0] not in ("sigmoid", "tanh", "gelu",
                                                                                       "softplus", "logsigmoid",
                                                                                       "softshrink", "hardshrink",
                                                                                       "softsign", "tanhshrink")],
                         ids=lambda v: v if isinstance(v, str) else None)
def test_inplace_flag_writes_into_the_input_and_keeps_the_gradient(name, kwargs, kinks):
    values = np.linspace(-8, 8, 33)
    base = ember.tensor(values, dtype=ember.float64, requires_grad=True)
    expected = call(F, name, base, kwargs)
    expected.sum().backward()
    expected_grad = base.grad.clone()
    base.grad = None

    y = base * 1  # a non-leaf, so in-place is allowed with autograd
    out = call(F, name, y, {**kwargs, "inplace": True})
    assert out is y
    np.testing.assert_array_equal(y.detach().numpy(), expected.detach().numpy())
    y.sum().backward()
    np.testing.assert_allclose(base.grad.numpy(), expected_grad.numpy(), rtol=1e-15)
    assert call(F, name, ember.tensor(values), {**kwargs, "inplace": False}) is not None


def test_inplace_function_forms_as_pytorch():
    # F.elu_ and friends, and the top-level ember.selu_ (torch.selu_): each returns its input.
    for fn, args in [(F.elu_, ()), (F.leaky_relu_, (0.1,)), (F.hardtanh_, ()), (F.relu_, ()), (F.selu_, ()),
                     (F.celu_, ()), (F.rrelu_, ()), (F.threshold_, (0.0, 5.0)), (ember.selu_, ()),
                     (ember.celu_, ()), (ember.rrelu_, ()), (ember.threshold_, (0.0, 5.0))]:
        x = ember.tensor([-1.0, 0.5, 2.0])
        assert fn(x, *args) is x, fn
    x = ember.tensor([-1.0, 0.5, 2.0])
    ember.threshold_(x, 1.0, 5.0)
    assert x.tolist() == [5.0, 5.0, 2.0]


def test_leaf_requiring_grad_refuses_inplace():
    x = ember.tensor([1.0, -1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        F.elu(x, inplace=True)


def test_erf_family_against_math():
    values = [-6.0, -2.5, -1.0, -1e-8, 0.0, 1e-8, 0.3, 1.0, 2.5, 6.0, 27.0]
    x = ember.tensor(values, dtype=ember.float64)
    assert ember.erf(x).tolist() == pytest.approx([math.erf(v) for v in values], rel=1e-15, abs=1e-300)
    assert ember.erfc(x).tolist() == pytest.approx([math.erfc(v) for v in values], rel=1e-13, abs=1e-300)
    p = np.array([-1.0, -0.999999, -0.9, -0.5, -1e-10, 0.0, 1e-10, 0.5, 0.9, 0.999999, 1 - 1e-15, 1.0])
    y = ember.erfinv(ember.tensor(p, dtype=ember.float64)).numpy()
    assert y[0] == -np.inf and y[-1] == np.inf
    np.testing.assert_allclose([math.erf(v) for v in y[1:-1]], p[1:-1], rtol=1e-14, atol=1e-16)
    assert math.isnan(ember.erfinv(ember.tensor([1.5])).item())
    assert ember.erfinv(ember.tensor([0.5], dtype=ember.float32)).item() == pytest.approx(0.4769362762, rel=1e-6)


def test_float32_erfc_within_3_ulp_everywhere(threads):
    # float32 erfc is glibc's vector erfcf (libmvec, declared in math.h), not the scalar libm call:
    # check it over every 4099th float in [-10, 10] (subnormal results aside), vector tails included.
    bits = np.arange(0, 2**32, 4099, dtype=np.uint64).astype(np.uint32)
    x = bits.view(np.float32)
    x = x[np.isfinite(x) & (np.abs(x) <= 10)]
    got = ember.erfc(ember.from_numpy(x)).numpy().astype(np.float64)
    exact = np.array([math.erfc(v) for v in x.astype(np.float64)])
    ref32 = exact.astype(np.float32)
    normal = ref32 >= np.finfo(np.float32).tiny
    ulp = np.spacing(ref32[normal]).astype(np.float64)
    assert np.max(np.abs(got[normal] - exact[normal]) / ulp) <= 3.0
    assert np.all(np.abs(got[~normal] - exact[~normal]) <= np.finfo(np.float32).smallest_subnormal * 2)
    special = ember.erfc(ember.tensor([float("nan"), float("inf"), -float("inf"), 0.0, -0.0])).tolist()
    assert math.isnan(special[0]) and special[1:] == [0.0, 2.0, 1.0, 1.0]


@needs_torch
def test_erfinv_tails_match_pytorch():
    p = np.concatenate([np.linspace(-1, 1, 2001), 1 - np.logspace(-16, -1, 50), -1 + np.logspace(-16, -1, 50)])
    for dtype in ("float32", "float64"):
        values = p.astype(dtype)
        mine = ember.erfinv(ember.tensor(values)).numpy()
        theirs = torch.erfinv(torch.tensor(values)).numpy()
        np.testing.assert_allclose(mine, theirs, rtol=2e-6 if dtype == "float32" else 1e-13)


def numeric_vjp(fn, inputs, v, eps=1e-6):
    """Central differences of sum(fn(*inputs) * v) with respect to each input (float64 numpy arrays)."""
    grads = []
    for i, a in enumerate(inputs):
        g = np.zeros_like(a)
        for j in range(a.size):
            plus, minus = [b.copy() for b in inputs], [b.copy() for b in inputs]
            plus[i].flat[j] += eps
            minus[i].flat[j] -= eps
            f = lambda args: float((fn(*[ember.tensor(b) for b in args]).numpy() * v).sum())  # noqa: E731
            g.flat[j] = (f(plus) - f(minus)) / (2 * eps)
        grads.append(g)
    return grads


@pytest.mark.parametrize("shape,weights", [((5,), 1), ((4, 3), 3), ((2, 3, 4), 3), ((2, 3, 2, 2), 3),
                                           ((2, 3, 2, 2), 1), ((), 1)])
def test_prelu_values_and_gradients(shape, weights):
    rng = np.random.default_rng(len(shape) * 10 + weights)
    a = rng.standard_normal(shape)
    w = rng.uniform(0.05, 0.5, weights)
    y = F.prelu(ember.tensor(a), ember.tensor(w)).numpy()
    wshape = (weights,) + (1,) * max(len(shape) - 2, 0) if weights > 1 else ()
    np.testing.assert_allclose(y, np.where(a > 0, a, w.reshape(wshape) * a), rtol=1e-15)

    x, wt = ember.tensor(a, requires_grad=True), ember.tensor(w, requires_grad=True)
    v = rng.standard_normal(shape)
    F.prelu(x, wt).backward(ember.tensor(v))
    nx, nw = numeric_vjp(F.prelu, [a, w], v)
    np.testing.assert_allclose(x.grad.numpy(), nx, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(wt.grad.numpy(), nw, rtol=1e-6, atol=1e-8)
    if torch is not None:
        tx, tw = torch.tensor(a, requires_grad=True), torch.tensor(w, requires_grad=True)
        TF.prelu(tx, tw).backward(torch.tensor(v))
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-14)
        np.testing.assert_allclose(wt.grad.numpy(), tw.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("inplace", [False, True])
def test_rrelu_training_draws_slopes_in_bounds(inplace):
    ember.manual_seed(7)
    lower, upper = 0.1, 0.3
    a = np.where(np.arange(200_000) % 2 == 0, -1.0, 1.0) * np.linspace(0.5, 2.0, 200_000)
    x = ember.tensor(a, requires_grad=True)
    y = F.rrelu(x * 1, lower, upper, training=True, inplace=inplace)
    y.sum().backward()
    out = y.detach().numpy()
    neg = a < 0
    slopes = out[neg] / a[neg]
    assert slopes.min() >= lower and slopes.max() <= upper
    assert slopes.mean() == pytest.approx((lower + upper) / 2, abs=2e-3)
    assert slopes.std() == pytest.approx((upper - lower) / math.sqrt(12), rel=2e-2)  # uniform
    np.testing.assert_array_equal(out[~neg], a[~neg])
    # The gradient is the slope drawn for each element.
    np.testing.assert_allclose(x.grad.numpy()[neg], slopes, rtol=1e-12)
    assert (x.grad.numpy()[~neg] == 1).all()
    # Seeded: the same slopes again.
    ember.manual_seed(7)
    again = F.rrelu(ember.tensor(a), lower, upper, training=True).numpy()
    np.testing.assert_array_equal(again, out)


def test_rrelu_eval_is_leaky_relu_with_the_mean_slope():
    x = ember.tensor([-2.0, -1.0, 0.0, 3.0], dtype=ember.float64)
    assert F.rrelu(x, 0.1, 0.3).tolist() == pytest.approx([-0.4, -0.2, 0.0, 3.0], rel=1e-15)


@pytest.mark.parametrize("shape,dim", [((4, 6), -1), ((4, 6), 0), ((2, 4, 3), 1), ((8,), 0)])
def test_glu_halves(shape, dim):
    a = np.random.default_rng(3).standard_normal(shape)
    first, second = np.split(a, 2, axis=dim)
    got = F.glu(ember.tensor(a), dim).numpy()
    np.testing.assert_allclose(got, first / (1 + np.exp(-second)), rtol=1e-14)


def test_softmax_family_warns_without_dim():
    x = ember.tensor([[1.0, 2.0], [3.0, 5.0]])
    for fn in (F.softmax, F.log_softmax, F.softmin):
        with pytest.warns(UserWarning, match="Implicit dimension choice"):
            implicit = fn(x)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert implicit.tolist() == fn(x, dim=1).tolist()
    np.testing.assert_allclose(F.softmin(x, 1).numpy(), F.softmax(-x, 1).numpy())


# (call, exception class, message) — PyTorch's, checked against it when installed.
ERRORS = [
    (lambda m, F: F.gelu(m.ones(2), approximate="sigmoid"), RuntimeError, "approximate argument must be either"),
    (lambda m, F: F.softshrink(m.ones(2), -1.0), RuntimeError, "lambda must be greater or equal to 0"),
    (lambda m, F: F.hardtanh(m.ones(2), 2.0, 1.0), ValueError, "min_val cannot be greater than max_val"),
    (lambda m, F: F.prelu(m.ones(2, 3), m.ones(2)), RuntimeError, "Mismatch of parameter numbers and input channel"),
    (lambda m, F: F.prelu(m.ones(2, 3), m.ones(3, 1)), RuntimeError, "to be a scalar or 1D tensor"),
    (lambda m, F: F.prelu(m.ones(2, 3), m.ones(3, dtype=m.float64)), RuntimeError, "Type promoting not supported"),
    (lambda m, F: F.prelu(m.tensor(1.0), m.ones(3)), RuntimeError, "Not allow zero-dim input tensor"),
    (lambda m, F: F.glu(m.ones(3, 5)), RuntimeError, "Halving dimension must be even"),
    (lambda m, F: F.glu(m.tensor(1.0)), RuntimeError, "glu does not support scalars"),
    (lambda m, F: F.glu(m.ones(2, 4), 2), IndexError, "Dimension out of range"),
    (lambda m, F: F.rrelu(m.ones(3), 0.5, 0.1, training=True), RuntimeError, "Lower bound should be less than"),
    (lambda m, F: F.elu(m.ones(3, dtype=m.int64)), RuntimeError, "not implemented for 'Long'"),
    (lambda m, F: F.gelu(m.ones(3, dtype=m.int64)), RuntimeError, "not implemented for 'Long'"),
    (lambda m, F: F.hardtanh(m.ones(3, dtype=m.bool)), RuntimeError, "Bool inputs not supported for hardtanh"),
    (lambda m, F: F.relu6(m.ones(3, dtype=m.bool)), RuntimeError, "Bool inputs not supported for hardtanh"),
    (lambda m, F: F.hardtanh(m.ones(3, dtype=m.uint8)), RuntimeError, "unsigned type with negative limits"),
    (lambda m, F: F.hardtanh_(m.ones(3, dtype=m.uint8), -2, 1), RuntimeError, "unsigned type with negative limits"),
    (lambda m, F: F.silu("x"), TypeError, "must be Tensor, not str"),
]


@pytest.mark.parametrize("index", range(len(ERRORS)))
def test_errors_as_pytorch(index):
    fn, cls, message = ERRORS[index]
    with pytest.raises(cls, match=message):
        fn(ember, F)
    if torch is not None:
        with pytest.raises(cls):
            fn(torch, TF)


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_large_inputs_on_every_thread_count(threads):
    # Past the parallel grain, in a transposed layout: the same values as elementwise NumPy.
    previous = ember.get_num_threads()
    ember.set_num_threads(threads)
    try:
        a = np.random.default_rng(threads).standard_normal((700, 900)) * 6
        x = ember.tensor(a, dtype=ember.float64).t()
        np.testing.assert_allclose(F.silu(x).numpy(), a.T / (1 + np.exp(-a.T)), rtol=1e-14)
        np.testing.assert_allclose(F.hardswish(x).numpy(), a.T * np.clip(a.T + 3, 0, 6) / 6, rtol=1e-15)
        softplus = np.where(2 * a.T > 20, a.T, np.logaddexp(0, 2 * a.T) / 2)
        np.testing.assert_allclose(F.softplus(x, 2.0).numpy(), softplus, rtol=1e-14)
    finally:
        ember.set_num_threads(previous)


def test_grad_fn_names_follow_pytorch():
    x = ember.randn(3, 4, requires_grad=True)
    expected = {"gelu": "GeluBackward0", "silu": "SiluBackward0", "mish": "MishBackward0", "elu": "EluBackward0",
                "selu": "EluBackward0", "celu": "CeluBackward0", "leaky_relu": "LeakyReluBackward0",
                "hardtanh": "HardtanhBackward0", "relu6": "HardtanhBackward0",
                "hardsigmoid": "HardsigmoidBackward0", "hardswish": "HardswishBackward0",
                "softplus": "SoftplusBackward0", "logsigmoid": "LogSigmoidBackward0",
                "softshrink": "SoftshrinkBackward0", "hardshrink": "HardshrinkBackward0"}
    for name, node in expected.items():
        assert getattr(F, name)(x).grad_fn.name() == node, name
    assert F.threshold(x, 0.0, 1.0).grad_fn.name() == "ThresholdBackward0"


INTEGRAL = ["uint8", "int8", "int16", "int32", "int64"]


@pytest.mark.parametrize("dtype", INTEGRAL)
@pytest.mark.parametrize("bounds", [(-1.0, 1.0), (-2.7, 1.5), (0.5, 2.5), (0, 6), (-0.5, 0.5)])
def test_hardtanh_clamps_integers_to_truncated_bounds(dtype, bounds):
    # PyTorch clamps an integral input to the bounds converted to its dtype (truncated toward zero).
    lo, hi = bounds
    if dtype == "uint8" and (int(lo) < 0 or int(hi) < 0):
        return  # refused, see ERRORS
    info = np.iinfo(dtype)
    a = np.arange(max(info.min, -300), min(info.max, 300) + 1, 7).astype(dtype)
    expected = np.clip(a, int(lo), int(hi)).astype(dtype)
    x = ember.tensor(a)
    out = F.hardtanh(x, lo, hi)
    assert out.dtype == x.dtype
    np.testing.assert_array_equal(out.numpy(), expected)
    F.hardtanh(x, lo, hi, inplace=True)
    np.testing.assert_array_equal(x.numpy(), expected)
    if torch is not None:
        np.testing.assert_array_equal(TF.hardtanh(torch.tensor(a), lo, hi).numpy(), expected)


@pytest.mark.parametrize("dtype", INTEGRAL)
def test_relu6_clamps_integers(dtype):
    a = np.arange(-40, 41, dtype=np.int64).astype(dtype)  # uint8 wraps the negatives, as PyTorch's input would
    expected = np.clip(a, 0, 6).astype(dtype)
    np.testing.assert_array_equal(F.relu6(ember.tensor(a)).numpy(), expected)
    x = ember.tensor(a)
    F.relu6(x, inplace=True)
    np.testing.assert_array_equal(x.numpy(), expected)
    if torch is not None:
        np.testing.assert_array_equal(TF.relu6(torch.tensor(a)).numpy(), expected)
