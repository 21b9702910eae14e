"""Random ops (issue 11): in-place distributions, bernoulli, normal's overloads, multinomial,
randperm and dropout, drawn from the counter-based generator. Samples are checked against the
distributions' moments and CDFs, seeded draws against each other (generator=, thread counts),
and errors against PyTorch's wording."""
import math
import warnings

import numpy as np
import pytest

import ember
import ember.autograd.forward_ad as fwAD
import ember.nn.functional as F

F64 = ember.float64
N = 200_000  # past every parallel threshold of the fill and the transforms
FLOATS = [ember.float32, ember.float64, ember.float16, ember.bfloat16]


def seeded(seed=0):
    g = ember.Generator()
    g.manual_seed(seed)
    return g


def np_of(t):
    return t.to(ember.float64).numpy() if t.dtype in (ember.float16, ember.bfloat16) else t.numpy()


def ks_distance(samples, cdf):
    """Kolmogorov-Smirnov statistic of samples against a CDF (vectorised)."""
    x = np.sort(samples)
    f = cdf(x)
    n = len(x)
    return max(np.max(np.arange(1, n + 1) / n - f), np.max(f - np.arange(n) / n))


KS_LIMIT = 1.63 / math.sqrt(N) * 1.5  # beyond the 1% critical value, with room for low-precision dtypes


# ---------------------------------------------------------------- in-place distributions
@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
@pytest.mark.parametrize("name, args, cdf", [
    ("uniform_", (2.0, 5.0), lambda x: np.clip((x - 2) / 3, 0, 1)),
    ("normal_", (1.0, 2.0), lambda x: 0.5 * (1 + np.vectorize(math.erf)((x - 1) / (2 * math.sqrt(2))))),
    ("exponential_", (2.0,), lambda x: 1 - np.exp(-2 * x)),
    ("log_normal_", (0.5, 0.75), lambda x: 0.5 * (1 + np.vectorize(math.erf)((np.log(x) - 0.5) / (0.75 * math.sqrt(2))))),
    ("cauchy_", (1.0, 2.0), lambda x: 0.5 + np.arctan((x - 1) / 2) / math.pi),
])
def test_continuous_fills_follow_their_distribution(dtype, name, args, cdf):
    t = getattr(ember.empty(N, dtype=dtype), name)(*args, generator=seeded(1))
    assert ks_distance(t.numpy(), cdf) < KS_LIMIT


def test_uniform_bounds_and_low_precision_dtypes():
    for dtype in FLOATS:
        x = np_of(ember.empty(N, dtype=dtype).uniform_(-3, 7))
        assert x.min() >= -3 and x.max() <= 7 and abs(x.mean() - 2) < 0.05
        y = np_of(ember.empty(N, dtype=dtype).normal_(3, 0.5))
        assert abs(y.mean() - 3) < 0.02 and abs(y.std() - 0.5) < 0.02
        e = np_of(ember.empty(N, dtype=dtype).exponential_(4))
        assert e.min() >= 0 and abs(e.mean() - 0.25) < 0.01


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64, ember.int64, ember.int16, ember.float16])
def test_geometric_pmf(dtype):
    p = 0.3
    x = np_of(ember.empty(N, dtype=dtype).geometric_(p, generator=seeded(2)))
    assert x.min() >= 1 and np.all(x == np.round(x))
    for k in range(1, 6):
        expected = (1 - p) ** (k - 1) * p
        assert abs(np.mean(x == k) - expected) < 5 * math.sqrt(expected / N) + 1e-3


def test_fills_write_every_element_of_strided_self_and_keep_the_rest():
    base = ember.zeros(300, 400)
    view = base.t()[::2]  # non-contiguous, every other row of the transpose
    view.uniform_(1, 2)
    b = base.numpy()
    assert np.all(b[:, ::2] >= 1) and np.all(b[:, 1::2] == 0)
    e = ember.zeros(4, 1).expand(4, 3)
    with pytest.raises(RuntimeError, match="more than one element"):
        e.normal_()


def test_seeded_draws_repeat_and_do_not_depend_on_thread_count():
    threads = ember.get_num_threads()
    try:
        results = []
        for n in (1, 2, 3):
            ember.set_num_threads(n)
            results.append([getattr(ember.empty(N), name)(generator=seeded(5)).numpy()
                            for name in ("uniform_", "normal_", "exponential_", "cauchy_", "log_normal_")]
                           + [ember.empty(N).geometric_(0.2, generator=seeded(5)).numpy(),
                              ember.empty(N).random_(generator=seeded(5)).numpy(),
                              ember.empty(N).bernoulli_(0.4, generator=seeded(5)).numpy(),
                              ember.randperm(N, generator=seeded(5)).numpy(),
                              ember.multinomial(ember.rand(3, 50, generator=seeded(1)), 20, generator=seeded(5)).numpy()])
        for other in results[1:]:
            for a, b in zip(results[0], other):
                # Same draws; sin/cos (cauchy_) may round differently in a SIMD body and a scalar tail.
                np.testing.assert_allclose(a, b, rtol=1e-6, atol=0)
    finally:
        ember.set_num_threads(threads)
    # The default generator: manual_seed repeats it, and draws in a row differ.
    ember.manual_seed(7)
    a = ember.empty(10).normal_()
    b = ember.empty(10).normal_()
    ember.manual_seed(7)
    assert ember.equal(ember.empty(10).normal_(), a) if hasattr(ember, "equal") else bool((ember.empty(10).normal_() == a).all())
    assert not bool((a == b).all())


def test_random_integer_ranges_by_dtype():
    cases = [(ember.uint8, 0, 255), (ember.int8, 0, 127), (ember.int16, 0, 32767), (ember.bool, 0, 1),
             (ember.float16, 0, 2048), (ember.bfloat16, 0, 256)]
    for dtype, lo, hi in cases:
        x = np_of(ember.empty(N, dtype=dtype).random_(generator=seeded(3))).astype(np.float64)
        assert x.min() == lo and x.max() == hi, dtype
    x = ember.empty(N, dtype=ember.float32).random_().numpy()
    assert x.min() >= 0 and x.max() <= 2 ** 24 and x.max() > 2 ** 23 and np.all(x == np.round(x))
    x = ember.empty(N, dtype=ember.int64).random_(-5, 6).numpy()
    assert x.min() == -5 and x.max() == 5 and abs(x.mean()) < 0.05
    x = ember.empty(N, dtype=ember.int8).random_(-100, None).numpy()
    assert x.min() == -100 and x.max() == 127
    x = ember.empty(N, dtype=ember.int32).random_(10).numpy()
    assert x.min() == 0 and x.max() == 9
    counts = np.bincount(x, minlength=10) / N
    assert np.all(np.abs(counts - 0.1) < 0.005)


@pytest.mark.parametrize("call, cls, message", [
    (lambda: ember.zeros(3).uniform_(1, 0), RuntimeError, r"uniform_ expects to return a \[from, to\) range, but found from=1 > to=0"),
    (lambda: ember.zeros(3).normal_(0, -1), RuntimeError, "normal expects std >= 0.0, but found std -1"),
    (lambda: ember.zeros(3).exponential_(0), RuntimeError, "exponential_ expects lambda > 0.0, but found lambda=0"),
    (lambda: ember.zeros(3).geometric_(1), RuntimeError, r"geometric_ expects p to be in \(0, 1\), but got p=1"),
    (lambda: ember.zeros(3).log_normal_(1, 0), RuntimeError, "log_normal_ expects std > 0.0, but found std=0"),
    (lambda: ember.zeros(3).cauchy_(0, 0), RuntimeError, "cauchy_ expects sigma > 0.0, but found sigma=0"),
    (lambda: ember.zeros(3).random_(5, 3), RuntimeError, "random_ expects 'from' to be less than 'to', but got from=5 >= to=3"),
    (lambda: ember.zeros(3, dtype=ember.int8).random_(0, 1000), RuntimeError, "to - 1 is out of bounds for signed char"),
    (lambda: ember.zeros(3, dtype=ember.uint8).random_(-1, 5), RuntimeError, "from is out of bounds for unsigned char"),
    (lambda: ember.zeros(3, dtype=ember.int64).uniform_(), NotImplementedError, "\"uniform_\" not implemented for 'Long'"),
    (lambda: ember.zeros(3, dtype=ember.int64).normal_(), NotImplementedError, "not implemented for 'Long'"),
    (lambda: ember.zeros(3, dtype=ember.int64).exponential_(), RuntimeError,
     "Exponential distribution is a continuous probability distribution. dtype must be a floating point but you "
     "specified Long"),
    (lambda: ember.zeros(3, dtype=ember.int16).cauchy_(), RuntimeError, "but you specified short int"),
    (lambda: ember.zeros(3, dtype=ember.int64).cauchy_(), RuntimeError, "but you specified long int"),
    (lambda: ember.zeros(3, dtype=ember.bool).cauchy_(), RuntimeError, "but you specified bool$"),
    (lambda: ember.zeros(3).bernoulli_(1.5), RuntimeError, r"bernoulli_ expects p to be in \[0, 1\], but got p=1.5"),
    (lambda: ember.bernoulli(ember.tensor([0.5, 1.5])), RuntimeError, "Expected p_in >= 0 && p_in <= 1 to be true"),
    (lambda: ember.zeros(3, requires_grad=True).uniform_(), RuntimeError, "a leaf Variable that requires grad"),
    (lambda: ember.zeros(3).uniform_(generator=5), TypeError, "generator"),
])
def test_errors_match_pytorch(call, cls, message):
    with pytest.raises(cls, match=message):
        call()


def test_inplace_fills_give_zero_gradient_to_the_overwritten_values():
    a = ember.ones(4, requires_grad=True)
    for name, args in (("uniform_", ()), ("normal_", ()), ("exponential_", ()), ("bernoulli_", (0.5,)),
                       ("random_", (0, 3))):
        c = (a * 2).clone()
        getattr(c, name)(*args)
        (c * 3).sum().backward()
        np.testing.assert_array_equal(a.grad.numpy(), np.zeros(4))
        a.grad = None


FILL_CALLS = {
    "uniform_": lambda x: x.uniform_(-2, 3), "uniform_()": lambda x: x.uniform_(),
    "normal_": lambda x: x.normal_(1, 2), "normal_()": lambda x: x.normal_(),
    "exponential_": lambda x: x.exponential_(2.0), "geometric_": lambda x: x.geometric_(0.3),
    "log_normal_": lambda x: x.log_normal_(), "cauchy_": lambda x: x.cauchy_(),
    "random_": lambda x: x.random_(0, 10), "bernoulli_": lambda x: x.bernoulli_(0.3),
}


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("name", sorted(FILL_CALLS))
def test_inplace_fills_count_one_write(name, dtype):
    # PyTorch's version counter moves once per in-place op, however many passes the fill takes;
    # views share the count.
    x = ember.zeros(3, 4, dtype=getattr(ember, dtype))
    view = x[1]
    before = x._version
    FILL_CALLS[name](view)
    assert (x._version - before, view._version - before) == (1, 1)
    FILL_CALLS[name](x)
    assert x._version - before == 2


# ---------------------------------------------------------------- bernoulli and normal
def test_bernoulli_forms():
    p = ember.rand(1000, 200, generator=seeded(4))
    x = ember.bernoulli(p, generator=seeded(6))
    assert x.dtype == ember.float32 and set(np.unique(x.numpy())) <= {0.0, 1.0}
    assert abs(float(x.mean()) - float(p.mean())) < 0.005
    # P(x = 1) follows p: elements with p < 0.1 are rarely 1, with p > 0.9 rarely 0.
    xn, pn = x.numpy(), p.numpy()
    assert xn[pn < 0.1].mean() < 0.1 and xn[pn > 0.9].mean() > 0.9
    assert abs(float(ember.bernoulli(ember.zeros(N, dtype=ember.float64), 0.25).mean()) - 0.25) < 0.005
    y = ember.empty(400, 500, dtype=ember.int64).bernoulli_(ember.tensor([0.0, 1.0] * 250))
    assert y.dtype == ember.int64 and np.all(y.numpy()[:, ::2] == 0) and np.all(y.numpy()[:, 1::2] == 1)
    with pytest.raises(RuntimeError):
        ember.empty(3).bernoulli_(ember.rand(4))
    pr = ember.full((3,), 0.5, requires_grad=True)
    out = ember.bernoulli(pr)
    assert out.requires_grad and out.grad_fn.name() == "BernoulliBackward0"
    out.sum().backward()
    np.testing.assert_array_equal(pr.grad.numpy(), np.zeros(3))


def test_normal_overloads():
    mean = ember.arange(6, dtype=ember.float32).reshape(2, 3) * 10
    x = ember.normal(mean, 0.0)
    np.testing.assert_array_equal(x.numpy(), mean.numpy())
    assert ember.normal(mean, 2.0).shape == (2, 3)
    z = ember.normal(ember.zeros(N), ember.full((N,), 3.0), generator=seeded(8))
    assert abs(float(z.std()) - 3) < 0.03
    w = ember.normal(5.0, ember.full((N,), 0.5, dtype=ember.float64))
    assert w.dtype == ember.float64 and abs(float(w.mean()) - 5) < 0.01
    assert ember.normal(ember.zeros(2, 1), ember.ones(3)).shape == (2, 3)
    f = ember.normal(2.0, 3.0, (400, 500), generator=seeded(9), dtype=ember.float64)
    assert f.dtype == ember.float64 and abs(float(f.mean()) - 2) < 0.03 and abs(float(f.std()) - 3) < 0.03
    out = ember.empty(3)
    assert ember.normal(ember.zeros(3), 1.0, out=out) is out
    m = ember.zeros(3, requires_grad=True)
    s = ember.ones(3, requires_grad=True)
    for r, name in ((ember.normal(m, 1.0), "NormalBackward1"), (ember.normal(0.0, s), "NormalBackward2"),
                    (ember.normal(m, s), "NormalBackward3")):
        assert r.grad_fn.name() == name
    ember.normal(m, s).sum().backward()
    np.testing.assert_array_equal(m.grad.numpy(), np.zeros(3))
    np.testing.assert_array_equal(s.grad.numpy(), np.zeros(3))
    with pytest.raises(RuntimeError, match="normal expects all elements of std >= 0.0"):
        ember.normal(m, -s)
    with pytest.raises(RuntimeError, match="normal expects std >= 0.0, but found std -1"):
        ember.normal(m, -1.0)


# ---------------------------------------------------------------- multinomial and randperm
def test_multinomial_with_replacement_frequencies():
    p = ember.tensor([[0.1, 0.0, 0.6, 0.3], [1.0, 1.0, 1.0, 1.0]])  # unnormalised weights are fine
    x = ember.multinomial(p, N, replacement=True, generator=seeded(10)).numpy()
    assert x.shape == (2, N) and x.dtype == np.int64
    f0 = np.bincount(x[0], minlength=4) / N
    f1 = np.bincount(x[1], minlength=4) / N
    assert f0[1] == 0 and np.all(np.abs(f0 - [0.1, 0.0, 0.6, 0.3]) < 0.006)
    assert np.all(np.abs(f1 - 0.25) < 0.006)


def test_multinomial_without_replacement():
    weights = np.array([0.5, 0.2, 0.2, 0.1, 0.0])
    draws = ember.multinomial(ember.tensor(weights).expand(20000, 5).contiguous(), 4, generator=seeded(11)).numpy()
    for row in draws[:200]:
        assert len(set(row.tolist())) == 4 and 4 not in row  # distinct; the zero weight only after all others
    first = np.bincount(draws[:, 0], minlength=5) / len(draws)
    assert np.all(np.abs(first - weights) < 0.015)
    # Second draw of sequential sampling: P(second = j) = sum_i w_i * w_j / (1 - w_i).
    second = np.bincount(draws[:, 1], minlength=5) / len(draws)
    expected = [sum(weights[i] * weights[j] / (1 - weights[i]) for i in range(5) if i != j) for j in range(5)]
    assert np.all(np.abs(second - expected) < 0.015)
    one_d = ember.multinomial(ember.tensor([1.0, 0.0, 0.0]), 3)
    assert one_d.shape == (3,) and one_d[0].item() == 0 and sorted(one_d.tolist()) == [0, 1, 2]


@pytest.mark.parametrize("call, message", [
    (lambda: ember.multinomial(ember.tensor([0.2, 0.8]), 3), "cannot sample n_sample > prob_dist.size\\(-1\\) samples without replacement"),
    (lambda: ember.multinomial(ember.tensor([0.2, -0.8]), 1), "probability tensor contains either `inf`, `nan` or element < 0"),
    (lambda: ember.multinomial(ember.tensor([0.2, float("nan")]), 1), "probability tensor contains either `inf`, `nan` or element < 0"),
    (lambda: ember.multinomial(ember.tensor([0.0, 0.0]), 1), "invalid multinomial distribution \\(sum of probabilities <= 0\\)"),
    (lambda: ember.multinomial(ember.tensor([0.2, 0.8]), 0), "cannot sample n_sample <= 0 samples"),
    (lambda: ember.multinomial(ember.ones(2, 2, 2), 1), "prob_dist must be 1 or 2 dim"),
    (lambda: ember.multinomial(ember.tensor([1, 2]), 1), "multinomial only supports floating-point dtypes for input, got: Long"),
])
def test_multinomial_errors(call, message):
    with pytest.raises(RuntimeError, match=message):
        call()


def test_randperm():
    for n in (0, 1, 2, 7, 1000, N):
        p = ember.randperm(n, generator=seeded(n))
        assert p.dtype == ember.int64 and p.shape == (n,)
        np.testing.assert_array_equal(np.sort(p.numpy()), np.arange(n))
    assert ember.randperm(5, dtype=ember.float32).dtype == ember.float32
    # Each position takes each value about equally often.
    counts = np.zeros((4, 4))
    for s in range(4000):
        counts[np.arange(4), ember.randperm(4, generator=seeded(s)).numpy()] += 1
    assert np.all(np.abs(counts / 4000 - 0.25) < 0.04)
    with pytest.raises(RuntimeError, match="negative dimension -1"):
        ember.randperm(-1)
    with pytest.raises(RuntimeError, match="n cannot be greater than 2049 for Half type."):
        ember.randperm(3000, dtype=ember.float16)
    with pytest.raises(RuntimeError, match="value cannot be converted to type int8_t without overflow"):
        ember.randperm(300, dtype=ember.int8)
    with pytest.raises(NotImplementedError, match="'Bool'"):
        ember.randperm(5, dtype=ember.bool)
    assert ember.randperm(3, requires_grad=True, dtype=ember.float32).requires_grad


# ---------------------------------------------------------------- dropout
def test_dropout_masks_and_scales():
    x = ember.ones(1000, 300, dtype=ember.float64)
    for p in (0.1, 0.5, 0.9):
        y = F.dropout(x, p).numpy()
        kept = y != 0
        assert abs(kept.mean() - (1 - p)) < 0.01
        np.testing.assert_allclose(y[kept], 1 / (1 - p))
    assert F.dropout(x, 0.5, training=False) is x and F.dropout(x, 0.0) is x
    np.testing.assert_array_equal(F.dropout(x, 1.0).numpy(), 0)
    np.testing.assert_array_equal(ember.dropout(x, 0.5, False).numpy(), x.numpy())
    for dtype in (ember.float16, ember.bfloat16, ember.float32):
        y = F.dropout(ember.ones(N, dtype=dtype), 0.25)
        assert y.dtype == dtype and abs(float(y.to(ember.float32).mean()) - 1) < 0.02


def test_dropout_backward_uses_the_same_mask():
    x = ember.randn(50, 40, requires_grad=True)
    y = F.dropout(x, 0.3)
    y.backward(ember.ones(50, 40))
    mask = (y.detach() != 0).numpy()
    np.testing.assert_allclose(x.grad.numpy(), mask / 0.7, rtol=1e-6)


def test_inplace_dropout_writes_input():
    x = ember.ones(200, 100)
    out = F.dropout(x, 0.5, inplace=True)
    assert out is x or out.data_ptr() == x.data_ptr()
    assert set(np.unique(x.numpy())) == {0.0, 2.0}
    leaf = ember.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        F.dropout(leaf, 0.5, inplace=True)


def test_channel_dropout_forms():
    x = ember.ones(64, 32, 5, 5)
    y = F.dropout2d(x, 0.5).numpy()
    per_channel = y.reshape(64, 32, -1)
    assert np.all(per_channel.min(-1) == per_channel.max(-1))  # whole channels kept or dropped
    assert abs((per_channel[:, :, 0] == 0).mean() - 0.5) < 0.05
    assert F.dropout1d(ember.ones(3, 4)).shape == (3, 4)
    y1 = F.dropout1d(ember.ones(8, 16, 10)).numpy()
    assert np.all(y1.min(-1) == y1.max(-1))
    y3 = F.dropout3d(ember.ones(4, 8, 2, 3, 3)).numpy().reshape(4, 8, -1)
    assert np.all(y3.min(-1) == y3.max(-1))
    unbatched = ember.ones(8, 2, 3, 3)
    assert F.dropout3d(unbatched).shape == unbatched.shape
    F.dropout3d(unbatched, inplace=True)
    u = unbatched.numpy().reshape(8, -1)
    assert np.all(u.min(-1) == u.max(-1))
    with pytest.raises(RuntimeError, match="dropout1d: Expected 2D or 3D input, but received a 4D input"):
        F.dropout1d(ember.ones(2, 3, 4, 5))
    with pytest.warns(UserWarning, match="dropout2d: Received a 2-D input to dropout2d"):
        F.dropout2d(ember.ones(3, 4))
    with pytest.warns(UserWarning, match="assuming that channel-wise 1D dropout"):
        F.dropout2d(ember.ones(3, 4, 5))
    with pytest.raises(RuntimeError, match="Feature dropout requires at least 2 dimensions in the input"):
        ember.feature_dropout(ember.ones(3), 0.5, True)


def test_alpha_dropout_keeps_selu_statistics():
    x = ember.randn(N, dtype=ember.float64, generator=seeded(12))
    for p in (0.1, 0.3):
        y = F.alpha_dropout(x, p, training=True).numpy()
        assert abs(y.mean()) < 0.01 and abs(y.std() - 1) < 0.01
    assert F.alpha_dropout(x, 0.5) is x  # training defaults to False
    z = F.feature_alpha_dropout(ember.randn(500, 64, 4, 4, dtype=ember.float64), 0.2, training=True).numpy()
    assert abs(z.mean()) < 0.02 and abs(z.std() - 1) < 0.02


@pytest.mark.parametrize("fn", [F.dropout, F.alpha_dropout, F.feature_alpha_dropout, F.dropout1d, F.dropout2d,
                                F.dropout3d])
def test_dropout_probability_out_of_range_is_a_value_error(fn):
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 1.5"):
        fn(ember.ones(2, 3, 4, 5), 1.5)
    with pytest.raises(RuntimeError, match="dropout probability has to be between 0 and 1, but got -0.5"):
        ember.dropout(ember.ones(3), -0.5, True)


@pytest.mark.skipif(not ember.cuda.is_available(), reason="needs a CUDA GPU")
def test_cuda_slots_raise_naming_op_and_device():
    p = ember.ones(3).cuda()
    for call, name in ((lambda: ember.multinomial(p, 1), "_multinomial_from_uniforms"),
                       (lambda: ember.bernoulli(p * 0.5), "bernoulli"), (lambda: ember.normal(p, 1.0), "normal")):
        with pytest.raises(NotImplementedError, match=f"{name}: .*not implemented on cuda"):
            call()


# ---------------------------------------------------------------- derivatives
def _seeded(fn):
    """A random op made repeatable for gradcheck and finite differences: the same draws on every call."""
    def call(*args):
        ember.manual_seed(11)
        return fn(*args)
    return call


def _t64(values):
    return ember.tensor(values, dtype=F64, requires_grad=True)


def _inputs(*shapes):
    return lambda: tuple(_t64(np.linspace(0.3, 0.9, math.prod(s)).reshape(s).tolist()) for s in shapes)


_P = ember.tensor([0.2, 0.7, 0.5], dtype=F64)
# op -> [(function, inputs, gradcheck kwargs)]: each a random op inside a differentiable expression;
# tests/test_higher_order.py gradgradchecks them and test_random_ops_jvp checks their JVPs.
RANDOM_OP_CASES = {
    "dropout": [(_seeded(lambda a: ember.dropout(a * a, 0.4, True) * a), _inputs((4, 3)), {})],
    "dropout_": [(_seeded(lambda a: ember.dropout_(a * a, 0.4, True) * a), _inputs((4, 3)), {})],
    "feature_dropout": [(_seeded(lambda a: ember.feature_dropout(a * a, 0.5, True) * a), _inputs((2, 3, 2)), {})],
    "feature_dropout_": [(_seeded(lambda a: ember.feature_dropout_(a * a, 0.5, True) * a), _inputs((2, 3, 2)), {})],
    "alpha_dropout": [(_seeded(lambda a: ember.alpha_dropout(a * a, 0.3, True) * a), _inputs((4, 3)), {})],
    "alpha_dropout_": [(_seeded(lambda a: ember.alpha_dropout_(a * a, 0.3, True) * a), _inputs((4, 3)), {})],
    "feature_alpha_dropout": [(_seeded(lambda a: ember.feature_alpha_dropout(a * a, 0.3, True) * a),
                               _inputs((2, 3, 2)), {})],
    "feature_alpha_dropout_": [(_seeded(lambda a: ember.feature_alpha_dropout_(a * a, 0.3, True) * a),
                                _inputs((2, 3, 2)), {})],
    "bernoulli": [(_seeded(lambda p: ember.bernoulli(p * p) * p), _inputs((3,)), {})],
    "bernoulli.p": [(_seeded(lambda a: ember.bernoulli(a, 0.5) * a), _inputs((3,)), {})],
    "bernoulli_.Tensor": [(_seeded(lambda a: (a * a).bernoulli_(_P) * a + a * a), _inputs((3,)), {})],
    "bernoulli_.float": [(_seeded(lambda a: (a * a).bernoulli_(0.5) * a + a * a), _inputs((3,)), {})],
    "uniform_": [(_seeded(lambda a: (a * a).uniform_(-1, 2) * a + a * a), _inputs((3,)), {})],
    "normal_": [(_seeded(lambda a: (a * a).normal_(1, 2) * a + a * a), _inputs((3,)), {})],
    "exponential_": [(_seeded(lambda a: (a * a).exponential_(2) * a + a * a), _inputs((3,)), {})],
    "geometric_": [(_seeded(lambda a: (a * a).geometric_(0.3) * a + a * a), _inputs((3,)), {})],
    "log_normal_": [(_seeded(lambda a: (a * a).log_normal_(0, 0.5) * a + a * a), _inputs((3,)), {})],
    "cauchy_": [(_seeded(lambda a: (a * a).cauchy_() * a + a * a), _inputs((3,)), {})],
    "random_": [(_seeded(lambda a: (a * a).random_() / 2 ** 53 * a + a * a), _inputs((3,)), {})],  # draws up to 2**53
    "random_.from": [(_seeded(lambda a: (a * a).random_(-3, 4) * a + a * a), _inputs((3,)), {})],
    "random_.to": [(_seeded(lambda a: (a * a).random_(5) * a + a * a), _inputs((3,)), {})],
    "multinomial": [(_seeded(lambda a: ember.multinomial(a * a, 2, True).to(F64) * a[:2]), _inputs((3,)), {})],
    # normal's output moves with its mean and std, but PyTorch defines their gradients as zero: the
    # parameters enter as x - x.detach() + c, numerically constant, so both derivatives are zero.
    "normal.Tensor_float": [(_seeded(lambda m: ember.normal(m - m.detach() + 0.5, 1.5) * m), _inputs((3,)), {})],
    "normal.float_Tensor": [(_seeded(lambda s: ember.normal(0.5, s - s.detach() + 2) * s), _inputs((3,)), {})],
    "normal.Tensor_Tensor": [(_seeded(lambda m, s: ember.normal(m - m.detach(), s - s.detach() + 1) * (m + s)),
                              _inputs((3,), (2, 1)), {})],
}


@pytest.mark.parametrize("name", sorted(RANDOM_OP_CASES))
def test_random_ops_gradcheck(name):
    for fn, inputs, kwargs in RANDOM_OP_CASES[name]:
        assert ember.autograd.gradcheck(fn, inputs(), **kwargs)


@pytest.mark.parametrize("name", sorted(RANDOM_OP_CASES))
def test_random_ops_jvp(name):
    for fn, inputs, _ in RANDOM_OP_CASES[name]:
        primals = [p.detach() for p in inputs()]
        tangents = [ember.randn(*p.shape, dtype=F64) for p in primals]
        with fwAD.dual_level():
            got = fwAD.unpack_dual(fn(*[fwAD.make_dual(p, t) for p, t in zip(primals, tangents)])).tangent
        eps = 1e-6
        plus = fn(*[p + eps * t for p, t in zip(primals, tangents)])
        minus = fn(*[p - eps * t for p, t in zip(primals, tangents)])
        expected = (plus - minus).numpy() / (2 * eps)
        np.testing.assert_allclose(got.numpy(), expected, rtol=1e-6, atol=1e-7)
