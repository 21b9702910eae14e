"""Activation modules (issue 12): every torch.nn activation but MultiheadAttention, each against its
ember.nn.functional form and (when installed) the same torch.nn module: outputs, gradients, reprs,
inplace=, PReLU's parameter, RReLU's train/eval behaviour, the softmax family's dims and PyTorch's
errors."""
import warnings

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from harness.nn_modules import assert_same_step, assert_same_structure, copy_state

try:
    import torch
except ImportError:  # the torch comparisons are skipped without it
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="needs PyTorch")
RNG = np.random.default_rng(7)

# (class name, constructor kwargs, expected repr, functional equivalent)
CASES = [
    ("Threshold", dict(threshold=0.1, value=20.0), "Threshold(threshold=0.1, value=20.0)",
     lambda x: F.threshold(x, 0.1, 20.0)),
    ("ReLU", {}, "ReLU()", F.relu),
    ("RReLU", {}, "RReLU(lower=0.125, upper=0.3333333333333333)", lambda x: F.rrelu(x, training=False)),
    ("RReLU", dict(lower=0.2, upper=0.4), "RReLU(lower=0.2, upper=0.4)",
     lambda x: F.rrelu(x, 0.2, 0.4, training=False)),
    ("Hardtanh", {}, "Hardtanh(min_val=-1.0, max_val=1.0)", F.hardtanh),
    ("Hardtanh", dict(min_val=-2, max_val=0.5), "Hardtanh(min_val=-2, max_val=0.5)",
     lambda x: F.hardtanh(x, -2, 0.5)),
    ("ReLU6", {}, "ReLU6()", F.relu6),
    ("Sigmoid", {}, "Sigmoid()", ember.sigmoid),
    ("Hardsigmoid", {}, "Hardsigmoid()", F.hardsigmoid),
    ("Tanh", {}, "Tanh()", ember.tanh),
    ("SiLU", {}, "SiLU()", F.silu),
    ("Mish", {}, "Mish()", F.mish),
    ("Hardswish", {}, "Hardswish()", F.hardswish),
    ("ELU", {}, "ELU(alpha=1.0)", F.elu),
    ("ELU", dict(alpha=0.5), "ELU(alpha=0.5)", lambda x: F.elu(x, 0.5)),
    ("CELU", dict(alpha=2.0), "CELU(alpha=2.0)", lambda x: F.celu(x, 2.0)),
    ("SELU", {}, "SELU()", F.selu),
    ("GLU", {}, "GLU(dim=-1)", F.glu),
    ("GLU", dict(dim=0), "GLU(dim=0)", lambda x: F.glu(x, 0)),
    ("GELU", {}, "GELU(approximate='none')", F.gelu),
    ("GELU", dict(approximate="tanh"), "GELU(approximate='tanh')", lambda x: F.gelu(x, approximate="tanh")),
    ("Hardshrink", {}, "Hardshrink(0.5)", F.hardshrink),
    ("Hardshrink", dict(lambd=1), "Hardshrink(1)", lambda x: F.hardshrink(x, 1)),
    ("LeakyReLU", {}, "LeakyReLU(negative_slope=0.01)", F.leaky_relu),
    ("LeakyReLU", dict(negative_slope=0.2), "LeakyReLU(negative_slope=0.2)", lambda x: F.leaky_relu(x, 0.2)),
    ("LogSigmoid", {}, "LogSigmoid()", F.logsigmoid),
    ("Softplus", {}, "Softplus(beta=1.0, threshold=20.0)", F.softplus),
    ("Softplus", dict(beta=2, threshold=1), "Softplus(beta=2, threshold=1)", lambda x: F.softplus(x, 2, 1)),
    ("Softshrink", dict(lambd=0.3), "Softshrink(0.3)", lambda x: F.softshrink(x, 0.3)),
    ("PReLU", {}, "PReLU(num_parameters=1)", lambda x: F.prelu(x, ember.tensor([0.25]))),
    ("Softsign", {}, "Softsign()", F.softsign),
    ("Tanhshrink", {}, "Tanhshrink()", F.tanhshrink),
    ("Softmin", dict(dim=1), "Softmin(dim=1)", lambda x: F.softmin(x, 1)),
    ("Softmax", dict(dim=-1), "Softmax(dim=-1)", lambda x: F.softmax(x, -1)),
    ("Softmax2d", {}, "Softmax2d()", lambda x: F.softmax(x, -3)),
    ("LogSoftmax", dict(dim=0), "LogSoftmax(dim=0)", lambda x: F.log_softmax(x, 0)),
]
INPLACE = [("Threshold", dict(threshold=0.1, value=2.0), "Threshold(threshold=0.1, value=2.0, inplace=True)"),
           ("ReLU", {}, "ReLU(inplace=True)"), ("RReLU", {}, "RReLU(lower=0.125, upper=0.3333333333333333, "
                                                                  "inplace=True)"),
           ("Hardtanh", {}, "Hardtanh(min_val=-1.0, max_val=1.0, inplace=True)"), ("ReLU6", {}, "ReLU6(inplace=True)"),
           ("Hardsigmoid", {}, "Hardsigmoid()"), ("SiLU", {}, "SiLU(inplace=True)"), ("Mish", {}, "Mish(inplace=True)"),
           ("Hardswish", {}, "Hardswish()"), ("ELU", {}, "ELU(alpha=1.0, inplace=True)"),
           ("CELU", {}, "CELU(alpha=1.0, inplace=True)"), ("SELU", {}, "SELU(inplace=True)"),
           ("LeakyReLU", {}, "LeakyReLU(negative_slope=0.01, inplace=True)")]


def sample(shape=(2, 4, 3, 2)):
    return (RNG.standard_normal(shape) * 2).astype(np.float32)


@pytest.mark.parametrize("name, kwargs, expected, functional", CASES, ids=[c[2] for c in CASES])
def test_activation_against_its_functional(name, kwargs, expected, functional):
    module = getattr(nn, name)(**kwargs)
    assert repr(module) == expected
    assert list(module.state_dict()) == (["weight"] if name == "PReLU" else [])
    module.eval()  # RReLU's deterministic mode
    x = ember.tensor(sample())
    np.testing.assert_allclose(module(x).detach().numpy(), functional(x).detach().numpy(), rtol=1e-6, atol=1e-7)


@needs_torch
@pytest.mark.parametrize("name, kwargs, expected, functional", CASES, ids=[c[2] for c in CASES])
def test_activation_matches_torch(name, kwargs, expected, functional):
    t_mod, e_mod = getattr(torch.nn, name)(**kwargs).eval(), getattr(nn, name)(**kwargs).eval()
    copy_state(t_mod, e_mod)
    assert_same_structure(e_mod, t_mod)
    assert_same_step(e_mod, t_mod, sample(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name, kwargs, expected", INPLACE, ids=[c[2] for c in INPLACE])
def test_inplace_activation_writes_into_its_input(name, kwargs, expected):
    module = getattr(nn, name)(inplace=True, **kwargs).eval()
    assert module.inplace is True and repr(module) == expected
    data = sample()
    reference = getattr(nn, name)(**kwargs).eval()(ember.tensor(data)).numpy()
    x = ember.tensor(data)
    out = module(x)
    np.testing.assert_allclose(x.numpy(), reference, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(out.numpy(), reference, rtol=1e-6, atol=1e-7)
    if torch is not None:
        assert repr(getattr(torch.nn, name)(inplace=True, **kwargs)) == expected


def test_inplace_relu_in_a_graph_keeps_gradients():
    lin = nn.Linear(3, 4)
    out = nn.ReLU(inplace=True)(lin(ember.randn(5, 3)))
    out.sum().backward()
    assert lin.weight.grad.shape == (4, 3)


@needs_torch
@pytest.mark.parametrize("name, kwargs, expected", INPLACE, ids=[c[2] for c in INPLACE])
def test_inplace_activation_gradients_match_torch(name, kwargs, expected):
    # in place on a non-leaf: the graph must see the overwritten values as PyTorch's does
    x = sample()
    results = []
    for lib in (ember, torch):
        leaf = lib.tensor(x, requires_grad=True)
        out = getattr(lib.nn, name)(inplace=True, **kwargs).eval()(leaf * 2)
        (out * out).sum().backward()
        results.append((out.detach().numpy(), leaf.grad.numpy()))
    for e, t in zip(*results):
        np.testing.assert_allclose(e, t, rtol=1e-5, atol=1e-5)


def test_prelu_parameters_init_and_gradient():
    m = nn.PReLU(3, init=0.1)
    assert repr(m) == "PReLU(num_parameters=3)" and m.init == 0.1
    np.testing.assert_allclose(m.weight.detach().numpy(), [0.1] * 3, rtol=1e-7)
    x = sample((2, 3, 4))
    out = m(ember.tensor(x))
    np.testing.assert_allclose(out.detach().numpy(), np.where(x > 0, x, 0.1 * x), rtol=1e-6)
    out.sum().backward()
    np.testing.assert_allclose(m.weight.grad.numpy(), np.minimum(x, 0).sum((0, 2)), rtol=1e-5)
    with ember.no_grad():
        m.weight.fill_(7.0)
    m.reset_parameters()
    assert float(m.weight[0]) == pytest.approx(0.1)
    assert nn.PReLU(dtype=ember.float64).weight.dtype == ember.float64


@needs_torch
def test_prelu_per_channel_matches_torch():
    t_mod, e_mod = torch.nn.PReLU(4, init=0.3), nn.PReLU(4, init=0.3)
    with torch.no_grad():
        t_mod.weight.normal_()
    copy_state(t_mod, e_mod)
    assert_same_step(e_mod, t_mod, sample((3, 4, 5)))


def test_rrelu_random_slopes_only_in_training():
    m = nn.RReLU(0.1, 0.3)
    x = -np.abs(sample((2000,))) - 0.1
    slopes = m(ember.tensor(x)).numpy() / x
    assert slopes.min() >= 0.1 - 1e-6 and slopes.max() <= 0.3 + 1e-6 and slopes.std() > 0.02
    m.eval()
    np.testing.assert_allclose(m(ember.tensor(x)).numpy() / x, 0.2, rtol=1e-5)


def test_hardtanh_arguments():
    with pytest.raises(AssertionError, match=r"max_val \(-1.0\) must be greater than min_val \(1.0\)"):
        nn.Hardtanh(1.0, -1.0)
    with pytest.warns(FutureWarning, match="keyword argument `min_value` is deprecated and renamed to `min_val`"):
        m = nn.Hardtanh(min_value=-3.0)
    assert m.min_val == -3.0 and repr(m) == "Hardtanh(min_val=-3.0, max_val=1.0)"
    with pytest.warns(FutureWarning, match="`max_value` is deprecated"):
        assert nn.Hardtanh(max_value=2.0).max_val == 2.0
    assert isinstance(nn.ReLU6(), nn.Hardtanh) and (nn.ReLU6().min_val, nn.ReLU6().max_val) == (0.0, 6.0)


def test_softmax_family_dims():
    x = ember.tensor(sample((2, 3, 4)))
    np.testing.assert_allclose(nn.Softmax(dim=1)(x).sum(1).numpy(), np.ones((2, 4)), rtol=1e-6)
    assert repr(nn.Softmax()) == "Softmax(dim=None)" and repr(nn.LogSoftmax()) == "LogSoftmax(dim=None)"
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax has been deprecated"):
        out = nn.Softmax()(x)  # a 3-D input: dim 0, as PyTorch's legacy rule
    np.testing.assert_allclose(out.numpy(), F.softmax(x, 0).numpy(), rtol=1e-6)
    with pytest.warns(UserWarning, match="Implicit dimension choice for log_softmax"):
        nn.LogSoftmax()(x)
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmin"):
        nn.Softmin()(x)
    with pytest.raises(ValueError, match="Softmax2d: expected input to be 3D or 4D, got 2D instead"):
        nn.Softmax2d()(ember.randn(3, 4))
    np.testing.assert_allclose(nn.Softmax2d()(x).sum(0).numpy(), np.ones((3, 4)), rtol=1e-6)


def test_softmax_unpickled_without_dim_gets_none():
    m = nn.Softmax(1)
    state = dict(m.__dict__)
    del state["dim"]
    fresh = nn.Softmax.__new__(nn.Softmax)
    fresh.__setstate__(state)
    assert fresh.dim is None


def test_activation_modules_are_not_each_others_subclasses():
    # as torch.nn: CELU is no ELU, Softshrink no Hardshrink (only ReLU6 is a Hardtanh)
    assert not isinstance(nn.CELU(), nn.ELU) and not isinstance(nn.Softshrink(), nn.Hardshrink)
    assert not isinstance(nn.ReLU6(), nn.ReLU) and not isinstance(nn.LogSoftmax(), nn.Softmax)


def test_activations_in_a_sequential_model():
    model = nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.Linear(8, 8), nn.SiLU(), nn.Linear(8, 3), nn.LogSoftmax(1))
    assert repr(model).splitlines()[2] == "  (1): GELU(approximate='none')"
    out = model(ember.randn(5, 4))
    np.testing.assert_allclose(out.exp().sum(1).detach().numpy(), np.ones(5), rtol=1e-5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out.sum().backward()
