"""ember.nn.init (issue 12): gains and fans against hand values and torch.nn.init's, each initializer's
distribution (Kolmogorov-Smirnov distance to its CDF, bounds, moments), orthogonality, the exact
eye/dirac patterns, generators, the deprecated aliases and PyTorch's errors."""
import math
import warnings

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.nn import init

try:
    import torch
except ImportError:  # the torch comparisons are skipped without it
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="needs torch")
N = 20000


def gen(seed=0):
    g = ember.Generator()
    g.manual_seed(seed)
    return g


def ks_distance(sample, cdf):
    """The largest gap between the sample's empirical CDF and `cdf`."""
    x = np.sort(np.asarray(sample, dtype=np.float64).ravel())
    model = cdf(x)
    n = len(x)
    return max(np.max(np.arange(1, n + 1) / n - model), np.max(model - np.arange(n) / n))


def assert_follows(sample, cdf):
    """The sample passes the Kolmogorov-Smirnov test against cdf at the 0.1% level."""
    n = np.asarray(sample).size
    assert ks_distance(sample, cdf) < 1.95 / math.sqrt(n)


def normal_cdf(mean, std):
    erf = np.vectorize(math.erf)
    return lambda x: 0.5 * (1 + erf((x - mean) / (std * math.sqrt(2))))


def uniform_cdf(a, b):
    return lambda x: np.clip((x - a) / (b - a), 0, 1)


GAINS = [("linear", None, 1), ("conv1d", None, 1), ("conv2d", None, 1), ("conv3d", None, 1),
         ("conv_transpose1d", None, 1), ("conv_transpose2d", None, 1), ("conv_transpose3d", None, 1),
         ("sigmoid", None, 1), ("tanh", None, 5 / 3), ("relu", None, math.sqrt(2)), ("selu", None, 0.75),
         ("leaky_relu", None, math.sqrt(2 / (1 + 0.01 ** 2))), ("leaky_relu", 0.2, math.sqrt(2 / 1.04)),
         ("leaky_relu", 3, math.sqrt(2 / 10)), ("leaky_relu", math.sqrt(5), math.sqrt(1 / 3))]


@pytest.mark.parametrize("nonlinearity,param,expected", GAINS)
def test_calculate_gain(nonlinearity, param, expected):
    assert init.calculate_gain(nonlinearity, param) == pytest.approx(expected, rel=1e-15)
    if torch is not None:
        assert init.calculate_gain(nonlinearity, param) == torch.nn.init.calculate_gain(nonlinearity, param)


def test_calculate_gain_errors():
    with pytest.raises(ValueError, match="^Unsupported nonlinearity gelu$"):
        init.calculate_gain("gelu")
    for bad in (True, "0.1", [0.1]):
        with pytest.raises(ValueError, match=f"^negative_slope {bad} not a valid number$".replace("[", r"\[")
                           .replace("]", r"\]")):
            init.calculate_gain("leaky_relu", bad)


FAN_SHAPES = [((3, 5), (5, 3)), ((4, 2, 3), (6, 12)), ((8, 3, 5, 7), (105, 280)), ((2, 3, 1, 2, 2), (12, 8)),
              ((6, 0), (0, 6))]


@pytest.mark.parametrize("shape,fans", FAN_SHAPES)
def test_fans(shape, fans):
    t = ember.empty(shape)
    assert init._calculate_fan_in_and_fan_out(t) == fans
    assert init._calculate_correct_fan(t, "fan_in") == fans[0]
    assert init._calculate_correct_fan(t, "FAN_OUT") == fans[1]
    if torch is not None:
        assert fans == torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(shape))


def test_fan_errors():
    msg = "^Fan in and fan out can not be computed for tensor with fewer than 2 dimensions$"
    for shape in [(5,), ()]:
        with pytest.raises(ValueError, match=msg):
            init._calculate_fan_in_and_fan_out(ember.empty(shape))
        with pytest.raises(ValueError, match=msg):
            init.xavier_uniform_(ember.empty(shape))
    with pytest.raises(ValueError, match=r"^Mode fan_avg not supported, please use one of \['fan_in', 'fan_out'\]$"):
        init.kaiming_uniform_(ember.empty(3, 4), mode="fan_avg")


def test_uniform_and_normal_distributions():
    t = ember.empty(N)
    assert init.uniform_(t, -0.5, 2.0, generator=gen(1)) is t
    v = t.numpy()
    assert v.min() >= -0.5 and v.max() <= 2.0
    assert_follows(v, uniform_cdf(-0.5, 2.0))
    t64 = ember.empty(100, N // 100, dtype=ember.float64)
    assert init.normal_(t64, 3.0, 0.5, generator=gen(2)) is t64
    assert_follows(t64.numpy(), normal_cdf(3.0, 0.5))
    # defaults: U(0, 1) and N(0, 1)
    assert_follows(init.uniform_(ember.empty(N), generator=gen(3)).numpy(), uniform_cdf(0, 1))
    assert_follows(init.normal_(ember.empty(N), generator=gen(4)).numpy(), normal_cdf(0, 1))


def truncated_normal_cdf(mean, std, a, b):
    base = normal_cdf(mean, std)
    lo, hi = base(np.array(a)), base(np.array(b))
    return lambda x: np.clip((base(x) - lo) / (hi - lo), 0, 1)


@pytest.mark.parametrize("mean,std,a,b", [(0.0, 1.0, -2.0, 2.0), (0.0, 0.02, -0.04, 0.04), (1.0, 2.0, -0.5, 6.0),
                                          (0.0, 1.0, 1.5, 3.0), (2.0, 0.5, -1.0, 1.5)])
def test_trunc_normal(mean, std, a, b):
    t = ember.empty(N)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert init.trunc_normal_(t, mean, std, a, b, generator=gen(5)) is t
    v = t.numpy()
    assert v.min() >= a and v.max() <= b
    assert_follows(v, truncated_normal_cdf(mean, std, a, b))


def test_trunc_normal_defaults_and_warning():
    v = init.trunc_normal_(ember.empty(N), generator=gen(6)).numpy()
    assert v.min() >= -2 and v.max() <= 2
    assert_follows(v, truncated_normal_cdf(0, 1, -2, 2))
    with pytest.warns(UserWarning, match=r"mean is more than 2 std from \[a, b\] in nn.init.trunc_normal_"):
        v = init.trunc_normal_(ember.empty(100), mean=5.0, std=1.0, a=-1.0, b=1.0).numpy()
    assert v.min() >= -1 and v.max() <= 1


def test_constant_ones_zeros():
    t = ember.empty(3, 4)
    assert init.constant_(t, 2.5) is t
    np.testing.assert_array_equal(t.numpy(), np.full((3, 4), 2.5, np.float32))
    assert init.ones_(t) is t
    np.testing.assert_array_equal(t.numpy(), np.ones((3, 4), np.float32))
    assert init.zeros_(t) is t
    np.testing.assert_array_equal(t.numpy(), np.zeros((3, 4), np.float32))
    i = ember.empty(5, dtype=ember.int64)
    np.testing.assert_array_equal(init.constant_(i, 7).numpy(), np.full(5, 7))


def test_initializers_on_leaf_parameters_run_without_grad():
    # A leaf that requires grad is filled in place (no_grad), and keeps requires_grad and no grad_fn.
    w = ember.empty(4, 6, requires_grad=True)
    for fill in (lambda t: init.uniform_(t), lambda t: init.normal_(t), lambda t: init.trunc_normal_(t),
                 init.ones_, init.zeros_, lambda t: init.constant_(t, 1.0), init.eye_, init.xavier_uniform_,
                 init.xavier_normal_, init.kaiming_uniform_, init.kaiming_normal_, init.orthogonal_,
                 lambda t: init.sparse_(t, 0.5)):
        assert fill(w) is w
        assert w.requires_grad and w.grad_fn is None and w.is_leaf
    c = ember.empty(4, 2, 3, requires_grad=True)
    assert init.dirac_(c) is c and c.grad_fn is None


@pytest.mark.parametrize("shape", [(3, 3), (2, 5), (6, 4)])
def test_eye(shape):
    t = ember.empty(shape)
    assert init.eye_(t) is t
    np.testing.assert_array_equal(t.numpy(), np.eye(*shape, dtype=np.float32))


def test_eye_and_dirac_errors():
    for shape in [(3,), (2, 3, 4)]:
        with pytest.raises(ValueError, match="^Only tensors with 2 dimensions are supported$"):
            init.eye_(ember.empty(shape))
    for shape in [(3, 3), (1, 2, 3, 4, 5, 6)]:
        with pytest.raises(ValueError, match="^Only tensors with 3, 4, or 5 dimensions are supported$"):
            init.dirac_(ember.empty(shape))
    with pytest.raises(ValueError, match="^dim 0 must be divisible by groups$"):
        init.dirac_(ember.empty(5, 2, 3), groups=2)


def dirac_reference(shape, groups):
    w = np.zeros(shape, np.float32)
    per_group = shape[0] // groups
    centre = tuple(s // 2 for s in shape[2:])
    for g in range(groups):
        for d in range(min(per_group, shape[1])):
            w[(g * per_group + d, d) + centre] = 1
    return w


@pytest.mark.parametrize("shape,groups", [((4, 4, 3), 1), ((6, 3, 5), 2), ((3, 5, 4), 1), ((4, 2, 3, 3), 2),
                                          ((2, 3, 4, 5), 1), ((4, 2, 3, 3, 3), 1), ((6, 1, 1, 2, 3), 3)])
def test_dirac_pattern(shape, groups):
    t = ember.full(shape, 5.0)
    assert init.dirac_(t, groups) is t
    np.testing.assert_array_equal(t.numpy(), dirac_reference(shape, groups))
    if torch is not None:
        np.testing.assert_array_equal(t.numpy(), torch.nn.init.dirac_(torch.empty(shape), groups).numpy())


@pytest.mark.parametrize("conv,spatial", [(F.conv1d, (7,)), (F.conv2d, (5, 6))])
def test_dirac_convolution_keeps_the_input(conv, spatial):
    # A padded convolution with a dirac weight of groups g copies each group's first channels.
    x = ember.randn((2, 4) + spatial)
    w = init.dirac_(ember.empty((4, 2) + (3,) * len(spatial)), groups=2)
    y = conv(x, w, padding=1, groups=2)
    np.testing.assert_array_equal(y.numpy(), x.numpy())


def test_xavier():
    t = ember.empty(200, 300)
    bound = 1.7 * math.sqrt(6 / 500)
    assert init.xavier_uniform_(t, gain=1.7, generator=gen(7)) is t
    assert_follows(t.numpy(), uniform_cdf(-bound, bound))
    v = init.xavier_normal_(ember.empty(40, 50, 3), generator=gen(8)).numpy()
    assert_follows(v, normal_cdf(0, math.sqrt(2 / 270)))


@pytest.mark.parametrize("a,mode,nonlinearity", [(0, "fan_in", "leaky_relu"), (math.sqrt(5), "fan_in", "leaky_relu"),
                                                 (0, "fan_out", "relu"), (0.3, "fan_out", "tanh"),
                                                 (0, "fan_in", "selu")])
def test_kaiming(a, mode, nonlinearity):
    shape = (60, 30, 4)
    fan = 120 if mode == "fan_in" else 240
    std = init.calculate_gain(nonlinearity, a) / math.sqrt(fan)
    t = ember.empty(shape)
    assert init.kaiming_uniform_(t, a, mode, nonlinearity, generator=gen(9)) is t
    assert_follows(t.numpy(), uniform_cdf(-std * math.sqrt(3), std * math.sqrt(3)))
    assert init.kaiming_normal_(t, a=a, mode=mode, nonlinearity=nonlinearity, generator=gen(10)) is t
    assert_follows(t.numpy(), normal_cdf(0, std))


def test_kaiming_zero_element_warns():
    for fill in (init.kaiming_uniform_, init.kaiming_normal_):
        t = ember.empty(0, 3)
        with pytest.warns(UserWarning, match="^Initializing zero-element tensors is a no-op$"):
            assert fill(t) is t


@pytest.mark.parametrize("shape", [(5, 5), (4, 9), (9, 4), (6, 2, 3), (3, 2, 2, 2), (1, 7), (7, 1)])
@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
def test_orthogonal(shape, dtype):
    t = ember.empty(shape, dtype=dtype)
    assert init.orthogonal_(t, gain=2.0, generator=gen(11)) is t
    w = t.numpy().reshape(shape[0], -1).astype(np.float64) / 2.0
    rows, cols = w.shape
    tol = 1e-5 if dtype == ember.float32 else 1e-12
    if rows <= cols:
        np.testing.assert_allclose(w @ w.T, np.eye(rows), atol=tol)
    else:
        np.testing.assert_allclose(w.T @ w, np.eye(cols), atol=tol)


def test_orthogonal_sign_fix_makes_it_haar():
    # Without the sign fix every QR's R has a non-negative diagonal bias; with it, the first entry
    # of Q's first column is symmetric around 0 (Haar), so its mean over many draws is near 0.
    g = gen(12)
    firsts = [init.orthogonal_(ember.empty(3, 3), generator=g).numpy()[0, 0] for _ in range(600)]
    # Under Haar measure W[0, 0] is the coordinate of a uniform unit vector in R^3: U(-1, 1).
    assert_follows(firsts, uniform_cdf(-1, 1))


def test_orthogonal_errors_and_empty():
    with pytest.raises(ValueError, match="^Only tensors with 2 or more dimensions are supported$"):
        init.orthogonal_(ember.empty(4))
    t = ember.empty(0, 3)
    assert init.orthogonal_(t) is t


@pytest.mark.parametrize("shape,sparsity", [((10, 6), 0.3), ((7, 4), 0.5), ((5, 3), 0.0), ((4, 4), 1.0)])
def test_sparse(shape, sparsity):
    t = ember.empty(shape)
    assert init.sparse_(t, sparsity, std=0.5, generator=gen(13)) is t
    v = t.numpy()
    zeros = math.ceil(sparsity * shape[0])
    np.testing.assert_array_equal((v == 0).sum(axis=0), np.full(shape[1], zeros))


def test_sparse_distribution_and_errors():
    v = init.sparse_(ember.empty(400, 50), 0.25, std=0.3, generator=gen(14)).numpy()
    kept = v[v != 0]
    assert kept.size == 300 * 50
    assert_follows(kept, normal_cdf(0, 0.3))
    with pytest.raises(ValueError, match="^Only tensors with 2 dimensions are supported$"):
        init.sparse_(ember.empty(2, 3, 4), 0.1)


GENERATED = [lambda t, g: init.uniform_(t, generator=g), lambda t, g: init.normal_(t, generator=g),
             lambda t, g: init.trunc_normal_(t, generator=g), lambda t, g: init.xavier_uniform_(t, generator=g),
             lambda t, g: init.xavier_normal_(t, generator=g), lambda t, g: init.kaiming_uniform_(t, generator=g),
             lambda t, g: init.kaiming_normal_(t, generator=g), lambda t, g: init.orthogonal_(t, generator=g),
             lambda t, g: init.sparse_(t, 0.5, generator=g)]


@pytest.mark.parametrize("fill", GENERATED)
def test_generator_reproduces(fill):
    first = fill(ember.empty(6, 5), gen(21)).numpy()
    np.testing.assert_array_equal(first, fill(ember.empty(6, 5), gen(21)).numpy())
    assert not np.array_equal(first, fill(ember.empty(6, 5), gen(22)).numpy())


DEPRECATED = [("uniform", ()), ("normal", ()), ("constant", (0.5,)), ("eye", ()), ("xavier_uniform", ()),
              ("xavier_normal", ()), ("kaiming_uniform", ()), ("kaiming_normal", ()), ("orthogonal", ()),
              ("sparse", (0.5,))]


@pytest.mark.parametrize("name,args", DEPRECATED)
def test_deprecated_aliases(name, args):
    old = getattr(init, name)
    assert old.__name__ == name
    t = ember.empty(4, 5)
    with pytest.warns(FutureWarning, match=f"^`nn.init.{name}` is now deprecated in favor of `nn.init.{name}_`.$"):
        assert old(t, *args) is t


def test_deprecated_dirac():
    with pytest.warns(FutureWarning, match="^`nn.init.dirac` is now deprecated in favor of `nn.init.dirac_`.$"):
        np.testing.assert_array_equal(init.dirac(ember.empty(2, 2, 3)).numpy(), dirac_reference((2, 2, 3), 1))


@needs_torch
def test_names_match_torch():
    public = {n for n in dir(torch.nn.init) if not n.startswith("_") and callable(getattr(torch.nn.init, n))
              and getattr(torch.nn.init, n).__module__ == "torch.nn.init"}
    assert public <= set(dir(init))
