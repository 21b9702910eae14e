"""Issue 12's "Done when" over a zoo of small real models (tests/zoo_models.py): reprs, state_dict keys
and parameter/buffer/module names as PyTorch's; a PyTorch state_dict loads into the ember model and gives
PyTorch's outputs and gradients to float32 rounding, and ember's state_dict loads back into torch.
Without torch: an ember state_dict round trip into a fresh model gives equal outputs and the right shapes."""
import copy
from collections import OrderedDict

import numpy as np
import pytest

import ember
from zoo_models import to_lib, without_dropout, zoo

try:
    import torch
except ImportError:  # the torch comparisons are skipped without it
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="needs PyTorch")
NAMES = list(zoo(ember))


def _build(lib, name, seed=0):
    item = zoo(lib)[name]
    if item.build is None:
        pytest.skip(f"{lib.__name__}.nn.LSTM is not in this build (the fused recurrent kernel is on branch i12-rnn)")
    lib.manual_seed(seed)
    return item.build()


def _inputs(name, seed=1):
    return zoo(ember)[name].inputs(np.random.default_rng(seed))


def _run(lib, model, arrays):
    return model(*[to_lib(lib, a) for a in arrays])


def _pair(name):
    """The torch model and an ember model holding torch's weights and buffers."""
    t_model = _build(torch, name)
    e_model = _build(ember, name)
    t_state = t_model.state_dict()
    e_state = OrderedDict((k, to_lib(ember, v)) for k, v in t_state.items())
    e_state._metadata = t_state._metadata  # module versions, as a torch checkpoint carries them
    assert e_model.state_dict()._metadata == t_state._metadata
    result = e_model.load_state_dict(e_state)
    assert list(result.missing_keys) == [] and list(result.unexpected_keys) == []
    return t_model, e_model


def _close(e_value, t_value, what):
    np.testing.assert_allclose(to_np(e_value), to_np(t_value), rtol=1e-4, atol=1e-5, err_msg=what)


def to_np(value):
    return value.detach().numpy() if hasattr(value, "detach") else np.asarray(value)


def _loss_weights(shape, seed=2):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("name", NAMES)
def test_ember_state_dict_round_trip_gives_equal_outputs(name):
    source, target = _build(ember, name, seed=3), _build(ember, name, seed=4)
    arrays = _inputs(name)
    source.eval(), target.eval()
    if any(p.ndim > 1 for p in source.parameters()):
        assert not np.allclose(to_np(_run(ember, source, arrays)), to_np(_run(ember, target, arrays)))
    target.load_state_dict(source.state_dict())
    out = _run(ember, target, arrays)
    assert tuple(out.shape) == zoo(ember)[name].out_shape
    np.testing.assert_array_equal(to_np(out), to_np(_run(ember, source, arrays)))
    for (key, a), (key_b, b) in zip(source.state_dict().items(), target.state_dict().items()):
        assert key == key_b
        np.testing.assert_array_equal(to_np(a), to_np(b), err_msg=key)


@pytest.mark.parametrize("name", NAMES)
def test_ember_grads_reach_every_parameter(name):
    model = without_dropout(_build(ember, name))
    out = _run(ember, model, _inputs(name))
    (out * to_lib(ember, _loss_weights(tuple(out.shape)))).sum().backward()
    for key, param in model.named_parameters():
        assert param.grad is not None and param.grad.shape == param.shape, key
        assert np.isfinite(to_np(param.grad)).all(), key


@needs_torch
@pytest.mark.parametrize("name", NAMES)
def test_repr_matches_torch(name):
    # ember's dtypes print as `ember.float32` (as torch's print `torch.float32`): ParameterList/Dict name them
    e_repr = str(_build(ember, name)).replace("[ember.", "[torch.")
    assert e_repr == str(_build(torch, name))


@needs_torch
@pytest.mark.parametrize("name", NAMES)
def test_names_match_torch(name):
    t_model, e_model = _build(torch, name), _build(ember, name)
    assert list(e_model.state_dict().keys()) == list(t_model.state_dict().keys())
    for method in ("named_parameters", "named_buffers", "named_modules", "named_children"):
        e_names = [n for n, _ in getattr(e_model, method)()]
        assert e_names == [n for n, _ in getattr(t_model, method)()], method
    for (key, e_value), t_value in zip(e_model.state_dict().items(), t_model.state_dict().values()):
        assert tuple(e_value.shape) == tuple(t_value.shape), key
        assert str(e_value.dtype).split(".")[-1] == str(t_value.dtype).split(".")[-1], key


@needs_torch
@pytest.mark.parametrize("name", NAMES)
def test_torch_weights_give_torch_outputs_in_eval(name):
    t_model, e_model = _pair(name)
    t_model.eval(), e_model.eval()
    arrays = _inputs(name)
    with torch.no_grad(), ember.no_grad():
        _close(_run(ember, e_model, arrays), _run(torch, t_model, arrays), f"{name} eval output")


@needs_torch
@pytest.mark.parametrize("name", NAMES)
def test_torch_weights_give_torch_outputs_grads_and_buffers_in_train(name):
    t_model, e_model = _pair(name)
    without_dropout(t_model), without_dropout(e_model)
    arrays = _inputs(name)
    t_out, e_out = _run(torch, t_model, arrays), _run(ember, e_model, arrays)
    _close(e_out, t_out, f"{name} train output")
    weights = _loss_weights(tuple(t_out.shape))
    (t_out * torch.tensor(weights)).sum().backward()
    (e_out * ember.tensor(weights)).sum().backward()
    t_params = dict(t_model.named_parameters())
    for key, e_param in e_model.named_parameters():
        _close(e_param.grad, t_params[key].grad, f"{name} grad of {key}")
    t_buffers = dict(t_model.named_buffers())
    for key, e_buffer in e_model.named_buffers():
        _close(e_buffer, t_buffers[key], f"{name} buffer {key} after a train step")


@needs_torch
@pytest.mark.parametrize("name", NAMES)
def test_ember_state_dict_loads_into_torch(name):
    t_model, e_model = _build(torch, name, seed=5), _build(ember, name, seed=6)
    result = t_model.load_state_dict({k: torch.from_numpy(to_np(v).copy()) for k, v in e_model.state_dict().items()})
    assert list(result.missing_keys) == [] and list(result.unexpected_keys) == []
    t_model.eval(), e_model.eval()
    arrays = _inputs(name)
    with torch.no_grad(), ember.no_grad():
        _close(_run(torch, t_model, arrays), _run(ember, e_model, arrays), f"{name} eval output after loading into torch")


def test_tied_weight_is_one_parameter_with_two_keys():
    model = _build(ember, "containers")
    assert model.tail.weight is model.head.weight
    names = [n for n, _ in model.named_parameters()]
    assert "head.weight" in names and "tail.weight" not in names
    assert "tail.weight" in model.state_dict()
    assert len(list(model.parameters())) == len(names) == 13


def test_non_persistent_buffer_is_not_in_state_dict():
    model = _build(ember, "buffers")
    assert list(model.state_dict().keys()) == ["running_mean", "steps", "fc.weight", "fc.bias"]
    assert [n for n, _ in model.named_buffers()] == ["running_mean", "steps", "mask"]
    model(ember.ones(3, 4))
    model(ember.ones(3, 4))
    np.testing.assert_allclose(to_np(model.running_mean), np.full(4, 0.19, np.float32), rtol=1e-6)
    assert int(model.steps) == 2



@pytest.mark.parametrize("name", NAMES)
def test_deepcopy_and_double_keep_outputs(name):
    model = _build(ember, name).eval()
    arrays = _inputs(name)
    expected = to_np(_run(ember, model, arrays))
    twin = copy.deepcopy(model)
    assert [n for n, _ in twin.named_parameters()] == [n for n, _ in model.named_parameters()]
    np.testing.assert_array_equal(to_np(_run(ember, twin, arrays)), expected)
    if name == "containers":
        assert twin.tail.weight is twin.head.weight and twin.head.weight is not model.head.weight
    doubled = twin.double()
    assert doubled is twin and all(p.dtype == ember.float64 for p in twin.parameters())
    arrays64 = [a.astype(np.float64) if a.dtype == np.float32 else a for a in arrays]
    np.testing.assert_allclose(to_np(_run(ember, twin, arrays64)), expected, rtol=1e-4, atol=1e-5)
