"""Normalization modules (issue 12): BatchNorm1d/2d/3d and SyncBatchNorm (running stats with
momentum and momentum=None's cumulative average, track_running_stats, affine, bias, eval, old
checkpoints), InstanceNorm1d/2d/3d, LayerNorm, GroupNorm, RMSNorm, LocalResponseNorm and
CrossMapLRN2d: parameters, buffers, reprs, state_dict keys and PyTorch's errors, against NumPy and
(when installed) the same torch.nn module over several train steps."""
import warnings

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from harness.nn_modules import assert_close, assert_same_step, assert_same_structure, copy_state

try:
    import torch
except ImportError:  # the torch comparisons are skipped without it
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="needs PyTorch")
RNG = np.random.default_rng(12)


def randn(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def np_batch_stats(x):
    """The per-channel mean, biased and unbiased variance of an (N, C, ...) array."""
    axes = (0,) + tuple(range(2, x.ndim))
    n = x.size // x.shape[1]
    var = x.var(axes, dtype=np.float64)
    return x.mean(axes, dtype=np.float64), var, var * n / (n - 1)


def channel(v, ndim):
    return np.asarray(v).reshape((1, -1) + (1,) * (ndim - 2))


def np_normalize(x, mean, var, w, b, eps=1e-5):
    return (x - channel(mean, x.ndim)) / np.sqrt(channel(var, x.ndim) + eps) * channel(w, x.ndim) + channel(b, x.ndim)


# ---------------------------------------------------------------- BatchNorm: construction and repr

def test_batchnorm_parameters_buffers_and_keys():
    bn = nn.BatchNorm2d(3)
    assert bn.weight.shape == (3,) and bn.bias.shape == (3,)
    assert isinstance(bn.weight, nn.Parameter)
    np.testing.assert_array_equal(bn.weight.detach().numpy(), np.ones(3, np.float32))
    np.testing.assert_array_equal(bn.bias.detach().numpy(), np.zeros(3, np.float32))
    np.testing.assert_array_equal(bn.running_mean.numpy(), np.zeros(3, np.float32))
    np.testing.assert_array_equal(bn.running_var.numpy(), np.ones(3, np.float32))
    assert bn.num_batches_tracked.dtype == ember.int64 and bn.num_batches_tracked.dim() == 0
    assert int(bn.num_batches_tracked) == 0
    assert list(bn.state_dict()) == ["weight", "bias", "running_mean", "running_var", "num_batches_tracked"]
    assert [n for n, _ in bn.named_parameters()] == ["weight", "bias"]
    assert repr(bn) == "BatchNorm2d(3, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)"


def test_batchnorm_options_change_parameters_and_repr():
    bn = nn.BatchNorm1d(4, eps=1e-3, momentum=None, affine=False, track_running_stats=False)
    assert bn.weight is None and bn.bias is None
    assert bn.running_mean is None and bn.running_var is None and bn.num_batches_tracked is None
    assert list(bn.state_dict()) == []
    assert repr(bn) == ("BatchNorm1d(4, eps=0.001, momentum=None, affine=False, bias=False, "
                        "track_running_stats=False)")
    no_bias = nn.BatchNorm3d(2, bias=False)
    assert no_bias.bias is None and list(no_bias.state_dict())[:2] == ["weight", "running_mean"]
    assert "affine=True, bias=False" in repr(no_bias)
    f64 = nn.BatchNorm1d(2, dtype=ember.float64)
    assert f64.weight.dtype == ember.float64 and f64.running_var.dtype == ember.float64
    assert f64.num_batches_tracked.dtype == ember.int64


@pytest.mark.parametrize("cls, good, bad, message", [
    (nn.BatchNorm1d, (4, 3), (4, 3, 2, 2), "expected 2D or 3D input (got 4D input)"),
    (nn.BatchNorm1d, (4, 3, 5), (3,), "expected 2D or 3D input (got 1D input)"),
    (nn.BatchNorm2d, (2, 3, 2, 2), (2, 3, 4), "expected 4D input (got 3D input)"),
    (nn.BatchNorm3d, (2, 3, 2, 2, 2), (2, 3, 2, 2), "expected 5D input (got 4D input)"),
    (nn.SyncBatchNorm, (2, 3, 4), (3,), "expected at least 2D input (got 1D input)"),
])
def test_batchnorm_input_dims(cls, good, bad, message):
    bn = cls(3)
    assert bn(ember.randn(*good)).shape == good
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        bn(ember.randn(*bad))


def test_batchnorm_one_value_per_channel_when_training():
    bn = nn.BatchNorm1d(3)
    with pytest.raises(ValueError, match=r"Expected more than 1 value per channel when training, got input size"):
        bn(ember.randn(1, 3))
    bn.eval()
    assert bn(ember.randn(1, 3)).shape == (1, 3)  # eval uses the running stats


def test_sync_batchnorm_zero_channels():
    with pytest.raises(ValueError, match="SyncBatchNorm number of input channels should be non-zero"):
        nn.SyncBatchNorm(0)(ember.randn(2, 0, 3))


# ---------------------------------------------------------------- BatchNorm: running stats against NumPy

@pytest.mark.parametrize("cls, shape", [(nn.BatchNorm1d, (6, 3)), (nn.BatchNorm1d, (4, 3, 5)),
                                        (nn.BatchNorm2d, (4, 3, 2, 3)), (nn.BatchNorm3d, (2, 3, 2, 2, 3))])
def test_batchnorm_running_stats_with_momentum(cls, shape):
    bn = cls(3, momentum=0.3)
    w, b = randn(3), randn(3)
    with ember.no_grad():
        bn.weight.copy_(ember.tensor(w))
        bn.bias.copy_(ember.tensor(b))
    mean_ref, var_ref = np.zeros(3), np.ones(3)
    for step in range(4):
        x = randn(*shape) * 2 + 1
        out = bn(ember.tensor(x))
        mean, var, unbiased = np_batch_stats(x)
        np.testing.assert_allclose(out.detach().numpy(), np_normalize(x, mean, var, w, b), rtol=1e-4, atol=1e-5)
        mean_ref = 0.7 * mean_ref + 0.3 * mean
        var_ref = 0.7 * var_ref + 0.3 * unbiased
        np.testing.assert_allclose(bn.running_mean.numpy(), mean_ref, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(bn.running_var.numpy(), var_ref, rtol=1e-5, atol=1e-6)
        assert int(bn.num_batches_tracked) == step + 1
    bn.eval()
    x = randn(*shape)
    np.testing.assert_allclose(bn(ember.tensor(x)).detach().numpy(), np_normalize(x, mean_ref, var_ref, w, b),
                               rtol=1e-4, atol=1e-5)
    assert int(bn.num_batches_tracked) == 4  # eval does not count batches


def test_batchnorm_momentum_none_is_a_cumulative_average():
    bn = nn.BatchNorm1d(2, momentum=None)
    means, variances = [], []
    for _ in range(5):
        x = randn(8, 2) * 3 - 1
        bn(ember.tensor(x))
        mean, _, unbiased = np_batch_stats(x)
        means.append(mean)
        variances.append(unbiased)
        # the n-th batch weighs 1/n: the running stats are the plain average of the batches so far
        np.testing.assert_allclose(bn.running_mean.numpy(), np.mean(means, 0), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(bn.running_var.numpy(), np.mean(variances, 0), rtol=1e-5, atol=1e-6)
    bn.reset_running_stats()
    assert int(bn.num_batches_tracked) == 0 and float(bn.running_var.sum()) == 2.0


def test_batchnorm_without_running_stats_uses_batch_stats_in_eval():
    bn = nn.BatchNorm2d(3, track_running_stats=False).eval()
    x = randn(2, 3, 4, 4)
    mean, var, _ = np_batch_stats(x)
    np.testing.assert_allclose(bn(ember.tensor(x)).detach().numpy(), np_normalize(x, mean, var, 1, 0),
                               rtol=1e-4, atol=1e-5)


def test_batchnorm_tracking_off_after_construction_leaves_buffers_alone():
    # PyTorch's rule: training with track_running_stats=False passes no buffers, so they stay put.
    bn = nn.BatchNorm1d(3)
    bn.track_running_stats = False
    bn(ember.randn(5, 3) + 4)
    np.testing.assert_array_equal(bn.running_mean.numpy(), np.zeros(3, np.float32))
    assert int(bn.num_batches_tracked) == 0


def test_batchnorm_train_eval_switch():
    bn = nn.BatchNorm1d(2)
    x = ember.tensor(randn(6, 2) + 5)
    assert bn.training
    train_out = bn(x)
    bn.eval()
    assert not bn.training
    eval_out = bn(x)  # normalised by the running stats, which moved only 10% of the way
    assert not np.allclose(train_out.detach().numpy(), eval_out.detach().numpy())
    bn.train()
    assert bn.training and int(bn.num_batches_tracked) == 1


def test_batchnorm_gradients_reach_weight_and_bias():
    bn = nn.BatchNorm1d(3)
    x = ember.tensor(randn(5, 3), requires_grad=True)
    (bn(x) * ember.tensor(randn(5, 3))).sum().backward()
    assert bn.weight.grad.shape == (3,) and bn.bias.grad.shape == (3,) and x.grad.shape == (5, 3)
    assert bn.running_mean.grad is None and not bn.running_mean.requires_grad


# ---------------------------------------------------------------- BatchNorm: state_dict versions

def test_batchnorm_old_checkpoint_without_num_batches_tracked_loads():
    bn = nn.BatchNorm1d(3)
    state = bn.state_dict()
    del state["num_batches_tracked"]
    state._metadata[""]["version"] = 1  # as saved before num_batches_tracked existed
    result = bn.load_state_dict(state)
    assert result.missing_keys == [] and result.unexpected_keys == []
    del state._metadata  # no metadata at all: also an old checkpoint
    assert bn.load_state_dict(state).missing_keys == []


def test_batchnorm_current_checkpoint_missing_num_batches_tracked_is_an_error():
    bn = nn.BatchNorm1d(3)
    state = bn.state_dict()
    assert state._metadata[""]["version"] == 2
    del state["num_batches_tracked"]
    with pytest.raises(RuntimeError, match='Missing key\\(s\\) in state_dict: "num_batches_tracked"'):
        bn.load_state_dict(state)


def test_batchnorm_state_dict_round_trip_in_a_model():
    model = nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3), nn.ReLU())
    for _ in range(2):
        model(ember.randn(5, 4))
    clone = nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3), nn.ReLU())
    clone.load_state_dict(model.state_dict())
    assert int(clone[1].num_batches_tracked) == 2
    np.testing.assert_array_equal(clone[1].running_var.numpy(), model[1].running_var.numpy())
    x = ember.randn(5, 4)
    np.testing.assert_array_equal(clone.eval()(x).detach().numpy(), model.eval()(x).detach().numpy())


def test_convert_sync_batchnorm_shares_parameters_and_buffers():
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4, momentum=0.2), nn.Sequential(nn.BatchNorm1d(4)))
    model(ember.randn(3, 3))
    model.eval()
    converted = nn.SyncBatchNorm.convert_sync_batchnorm(model)
    assert type(converted[1]) is nn.SyncBatchNorm and type(converted[2][0]) is nn.SyncBatchNorm
    assert converted[1].weight is model[1].weight and converted[1].running_mean is model[1].running_mean
    assert converted[1].momentum == 0.2 and not converted[1].training
    assert repr(converted[1]) == ("SyncBatchNorm(4, eps=1e-05, momentum=0.2, affine=True, bias=True, "
                                  "track_running_stats=True)")


# ---------------------------------------------------------------- BatchNorm against PyTorch

@needs_torch
@pytest.mark.parametrize("name, args, shape", [
    ("BatchNorm1d", dict(num_features=3), (5, 3)),
    ("BatchNorm1d", dict(num_features=3, momentum=None), (4, 3, 6)),
    ("BatchNorm2d", dict(num_features=4, eps=1e-3, momentum=0.25), (3, 4, 5, 5)),
    ("BatchNorm2d", dict(num_features=4, affine=False), (3, 4, 2, 3)),
    ("BatchNorm2d", dict(num_features=4, bias=False), (3, 4, 2, 3)),
    ("BatchNorm2d", dict(num_features=4, track_running_stats=False), (3, 4, 2, 3)),
    ("BatchNorm3d", dict(num_features=2), (2, 2, 3, 2, 4)),
    ("SyncBatchNorm", dict(num_features=3), (4, 3, 5)),
])
def test_batchnorm_matches_torch_over_train_steps(name, args, shape):
    t_mod = getattr(torch.nn, name)(**args)
    e_mod = getattr(nn, name)(**args)
    if t_mod.weight is not None:
        with torch.no_grad():
            t_mod.weight.uniform_(0.5, 1.5)
            if t_mod.bias is not None:
                t_mod.bias.normal_()
    copy_state(t_mod, e_mod)
    assert_same_structure(e_mod, t_mod)
    for step in range(3):
        for p in list(e_mod.parameters()) + list(t_mod.parameters()):
            p.grad = None
        assert_same_step(e_mod, t_mod, randn(*shape) * (step + 1) + step, rtol=1e-4, atol=1e-5, seed=step)
    e_mod.eval()
    t_mod.eval()
    assert_same_step(e_mod, t_mod, randn(*shape), grad_inputs=False, rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------- InstanceNorm

def test_instancenorm_defaults_and_repr():
    m = nn.InstanceNorm2d(3)
    assert m.weight is None and m.running_mean is None and list(m.state_dict()) == []
    assert repr(m) == ("InstanceNorm2d(3, eps=1e-05, momentum=0.1, affine=False, bias=False, "
                       "track_running_stats=False)")
    m = nn.InstanceNorm1d(4, affine=True, track_running_stats=True)
    assert list(m.state_dict()) == ["weight", "bias", "running_mean", "running_var", "num_batches_tracked"]


@pytest.mark.parametrize("cls, shape, spatial", [
    (nn.InstanceNorm1d, (2, 3, 5), 1), (nn.InstanceNorm1d, (3, 5), 1), (nn.InstanceNorm2d, (2, 3, 4, 4), 2),
    (nn.InstanceNorm2d, (3, 4, 4), 2), (nn.InstanceNorm3d, (2, 3, 2, 2, 3), 3), (nn.InstanceNorm3d, (3, 2, 2, 3), 3),
])
def test_instancenorm_normalizes_each_sample_and_channel(cls, shape, spatial):
    x = randn(*shape) * 2 + 3
    out = cls(3)(ember.tensor(x)).numpy()
    axes = tuple(range(x.ndim - spatial, x.ndim))
    ref = (x - x.mean(axes, keepdims=True)) / np.sqrt(x.var(axes, keepdims=True) + 1e-5)
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-5)


def test_instancenorm_running_stats_and_eval():
    m = nn.InstanceNorm1d(2, track_running_stats=True, momentum=0.5)
    x = randn(3, 2, 6)
    m(ember.tensor(x))
    per_instance_mean = x.mean(2)
    per_instance_unbiased = x.var(2, ddof=1)
    np.testing.assert_allclose(m.running_mean.numpy(), 0.5 * per_instance_mean.mean(0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(m.running_var.numpy(), 0.5 + 0.5 * per_instance_unbiased.mean(0), rtol=1e-5)
    m.eval()
    y = randn(1, 2, 6)
    ref = (y - m.running_mean.numpy()[None, :, None]) / np.sqrt(m.running_var.numpy()[None, :, None] + 1e-5)
    np.testing.assert_allclose(m(ember.tensor(y)).numpy(), ref, rtol=1e-4, atol=1e-5)


def test_instancenorm_errors_and_warning():
    with pytest.raises(ValueError, match=r"expected 3D or 4D input \(got 2D input\)"):
        nn.InstanceNorm2d(3)(ember.randn(3, 4))
    with pytest.raises(ValueError, match=r"expected 2D or 3D input \(got 4D input\)"):
        nn.InstanceNorm1d(3)(ember.randn(1, 3, 4, 4))
    with pytest.raises(ValueError, match=r"expected 4D or 5D input \(got 3D input\)"):
        nn.InstanceNorm3d(3)(ember.randn(3, 4, 4))
    with pytest.raises(ValueError, match=r"expected input's size at dim=1 to match num_features \(3\), but got: 4."):
        nn.InstanceNorm1d(3, affine=True)(ember.randn(2, 4, 5))
    with pytest.warns(UserWarning, match="input's size at dim=0 does not match num_features"):
        nn.InstanceNorm1d(3)(ember.randn(4, 5))


def test_instancenorm_old_checkpoint_with_running_stats_is_reported():
    m = nn.InstanceNorm1d(2)
    state = nn.BatchNorm1d(2, affine=False).state_dict()
    del state._metadata
    with pytest.raises(RuntimeError, match=r'Unexpected running stats buffer\(s\) "running_mean" and '
                                           r'"running_var" for InstanceNorm1d with track_running_stats=False'):
        m.load_state_dict(state)


@needs_torch
@pytest.mark.parametrize("name, args, shape", [
    ("InstanceNorm1d", dict(num_features=3, affine=True), (2, 3, 7)),
    ("InstanceNorm2d", dict(num_features=3, affine=True, track_running_stats=True), (2, 3, 4, 5)),
    ("InstanceNorm2d", dict(num_features=3), (3, 4, 5)),
    ("InstanceNorm3d", dict(num_features=2, track_running_stats=True, momentum=None), (2, 2, 3, 2, 2)),
])
def test_instancenorm_matches_torch(name, args, shape):
    t_mod, e_mod = getattr(torch.nn, name)(**args), getattr(nn, name)(**args)
    if t_mod.weight is not None:
        with torch.no_grad():
            t_mod.weight.normal_()
            t_mod.bias.normal_()
    copy_state(t_mod, e_mod)
    assert_same_structure(e_mod, t_mod)
    for step in range(2):
        assert_same_step(e_mod, t_mod, randn(*shape) + step, rtol=1e-4, atol=1e-5, seed=step)
    e_mod.eval()
    t_mod.eval()
    assert_same_step(e_mod, t_mod, randn(*shape), grad_inputs=False, rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------- LayerNorm, GroupNorm, RMSNorm

def test_layernorm_parameters_and_forward():
    m = nn.LayerNorm([2, 3], eps=1e-4)
    assert m.normalized_shape == (2, 3) and m.weight.shape == (2, 3) and m.bias.shape == (2, 3)
    assert repr(m) == "LayerNorm((2, 3), eps=0.0001, elementwise_affine=True, bias=True)"
    x = randn(4, 2, 3)
    w = randn(2, 3)
    with ember.no_grad():
        m.weight.copy_(ember.tensor(w))
    ref = (x - x.mean((1, 2), keepdims=True)) / np.sqrt(x.var((1, 2), keepdims=True) + 1e-4) * w
    np.testing.assert_allclose(m(ember.tensor(x)).detach().numpy(), ref, rtol=1e-4, atol=1e-5)
    assert repr(nn.LayerNorm(5, elementwise_affine=False)) == \
        "LayerNorm((5,), eps=1e-05, elementwise_affine=False, bias=False)"
    no_bias = nn.LayerNorm(5, bias=False)
    assert no_bias.bias is None and list(no_bias.state_dict()) == ["weight"]
    assert repr(no_bias) == "LayerNorm((5,), eps=1e-05, elementwise_affine=True, bias=False)"


def test_groupnorm_parameters_forward_and_errors():
    m = nn.GroupNorm(2, 4)
    assert repr(m) == "GroupNorm(2, 4, eps=1e-05, affine=True, bias=True)"
    x = randn(3, 4, 5)
    g = x.reshape(3, 2, 10)
    ref = ((g - g.mean(2, keepdims=True)) / np.sqrt(g.var(2, keepdims=True) + 1e-5)).reshape(3, 4, 5)
    np.testing.assert_allclose(m(ember.tensor(x)).detach().numpy(), ref, rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match=r"num_channels \(5\) must be divisible by num_groups \(2\)"):
        nn.GroupNorm(2, 5)
    assert repr(nn.GroupNorm(1, 3, affine=False)) == "GroupNorm(1, 3, eps=1e-05, affine=False, bias=False)"
    assert nn.GroupNorm(1, 3, bias=False).bias is None


def test_rmsnorm_parameters_and_forward():
    m = nn.RMSNorm(4)
    assert repr(m) == "RMSNorm((4,), eps=None, elementwise_affine=True)"
    assert list(m.state_dict()) == ["weight"]
    x = randn(3, 4)
    eps = np.finfo(np.float32).eps  # eps=None: the dtype's machine epsilon, as PyTorch's
    ref = x / np.sqrt((x * x).mean(1, keepdims=True) + eps)
    np.testing.assert_allclose(m(ember.tensor(x)).detach().numpy(), ref, rtol=1e-5, atol=1e-6)
    m = nn.RMSNorm([2, 2], eps=1e-3, elementwise_affine=False)
    assert m.weight is None and repr(m) == "RMSNorm((2, 2), eps=0.001, elementwise_affine=False)"


@needs_torch
@pytest.mark.parametrize("name, args, shape", [
    ("LayerNorm", dict(normalized_shape=6), (3, 6)),
    ("LayerNorm", dict(normalized_shape=(2, 3), bias=False), (4, 2, 3)),
    ("GroupNorm", dict(num_groups=3, num_channels=6), (2, 6, 4)),
    ("GroupNorm", dict(num_groups=2, num_channels=4, affine=False), (2, 4, 3, 3)),
    ("RMSNorm", dict(normalized_shape=5), (4, 5)),
    ("RMSNorm", dict(normalized_shape=(2, 5), eps=1e-2), (3, 2, 5)),
    ("LocalResponseNorm", dict(size=3), (2, 5, 4)),
    ("LocalResponseNorm", dict(size=2, alpha=1e-2, beta=0.5, k=2.0), (2, 6, 3, 3)),
    ("CrossMapLRN2d", dict(size=3, alpha=1e-2), (2, 6, 3, 3)),
    ("CrossMapLRN2d", dict(size=4, alpha=0.5, beta=0.6, k=2), (1, 7, 2, 2)),
])
def test_norm_layers_match_torch(name, args, shape):
    t_mod, e_mod = getattr(torch.nn, name)(**args), getattr(nn, name)(**args)
    with torch.no_grad():
        for p in t_mod.parameters():
            p.normal_()
    copy_state(t_mod, e_mod)
    assert_same_structure(e_mod, t_mod)
    assert_same_step(e_mod, t_mod, randn(*shape), rtol=1e-4, atol=1e-5)


def test_local_response_norm_modules():
    m = nn.LocalResponseNorm(2)
    assert repr(m) == "LocalResponseNorm(2, alpha=0.0001, beta=0.75, k=1.0)"
    x = ember.randn(2, 4, 3)
    np.testing.assert_array_equal(m(x).numpy(), F.local_response_norm(x, 2).numpy())
    c = nn.CrossMapLRN2d(3, alpha=0.3)
    assert repr(c) == "CrossMapLRN2d(3, alpha=0.3, beta=0.75, k=1)"
    with pytest.raises(ValueError, match="CrossMapLRN2d: Expected input to be 4D, got 3D instead."):
        c(x)
    # channel c's window: its neighbours within (size - 1) / 2 + 1 and, as PyTorch's running sum, channel 0
    x = randn(1, 5, 1, 1)
    sq = x[0, :, 0, 0] ** 2
    windows = [[0, 1], [0, 1, 2], [0, 1, 2, 3], [0, 2, 3, 4], [0, 3, 4]]
    scale = np.array([1 + 0.1 * sq[w].sum() for w in windows])
    np.testing.assert_allclose(c(ember.tensor(x)).numpy()[0, :, 0, 0], x[0, :, 0, 0] * scale ** -0.75, rtol=1e-5)


def test_norm_modules_warn_nothing_in_normal_use():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for m in (nn.BatchNorm1d(3), nn.InstanceNorm1d(3), nn.LayerNorm(4), nn.GroupNorm(1, 3), nn.RMSNorm(4)):
            m(ember.randn(2, 3, 4) if not isinstance(m, (nn.LayerNorm, nn.RMSNorm)) else ember.randn(2, 4))


# ---------------------------------------------------------------- lazy batch and instance norms

@pytest.mark.parametrize("name, shape, becomes", [
    ("LazyBatchNorm1d", (4, 3), "BatchNorm1d"), ("LazyBatchNorm2d", (2, 3, 4, 4), "BatchNorm2d"),
    ("LazyBatchNorm3d", (2, 3, 2, 2, 2), "BatchNorm3d"), ("LazyInstanceNorm1d", (2, 3, 5), "InstanceNorm1d"),
    ("LazyInstanceNorm2d", (2, 3, 4, 4), "InstanceNorm2d"), ("LazyInstanceNorm3d", (2, 3, 2, 2, 3), "InstanceNorm3d"),
])
def test_lazy_norms_take_their_channels_from_the_first_input(name, shape, becomes):
    m = getattr(nn, name)()
    assert repr(m) == f"{name}(0, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)"
    assert m.has_uninitialized_params()
    x = randn(*shape) + 2
    out = m(ember.tensor(x))
    assert type(m) is getattr(nn, becomes) and m.num_features == 3
    assert repr(m) == f"{becomes}(3, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)"
    assert list(m.state_dict()) == ["weight", "bias", "running_mean", "running_var", "num_batches_tracked"]
    # the materialized parameters start as the eager module's: the same output
    eager = getattr(nn, becomes)(3, affine=True, track_running_stats=True)
    np.testing.assert_allclose(out.detach().numpy(), eager(ember.tensor(x)).detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(m.running_mean.numpy(), eager.running_mean.numpy(), rtol=1e-6)
    assert int(m.num_batches_tracked) == int(eager.num_batches_tracked)  # instance norm counts no batches


def test_lazy_norm_options_and_loading():
    m = nn.LazyBatchNorm1d(affine=False, track_running_stats=False)
    m(ember.randn(4, 3))
    assert type(m) is nn.BatchNorm1d and m.num_features == 0 and list(m.state_dict()) == []  # as PyTorch
    m = nn.LazyBatchNorm1d(momentum=None, bias=False)
    source = nn.BatchNorm1d(5, momentum=None, bias=False)
    source(ember.randn(6, 5))
    m.load_state_dict(source.state_dict())  # loading materializes the uninitialized tensors
    np.testing.assert_array_equal(m.running_var.numpy(), source.running_var.numpy())
    x = ember.randn(6, 5)
    np.testing.assert_allclose(m(x).detach().numpy(), source(x).detach().numpy(), rtol=1e-6)
    assert type(m) is nn.BatchNorm1d and int(m.num_batches_tracked) == 2


@needs_torch
@pytest.mark.parametrize("name, shape", [("LazyBatchNorm2d", (3, 4, 2, 2)), ("LazyInstanceNorm1d", (2, 4, 6))])
def test_lazy_norms_match_torch(name, shape):
    t_mod, e_mod = getattr(torch.nn, name)(momentum=0.3), getattr(nn, name)(momentum=0.3)
    assert repr(e_mod) == repr(t_mod)
    x = randn(*shape)
    assert_close(e_mod(ember.tensor(x)), t_mod(torch.tensor(x)), rtol=1e-4, atol=1e-5)
    assert_same_structure(e_mod, t_mod)
    assert type(e_mod).__name__ == type(t_mod).__name__
    assert_same_step(e_mod, t_mod, randn(*shape) * 2, rtol=1e-4, atol=1e-5)
