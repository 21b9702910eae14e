"""Small models built from the layers-b modules (issue 12): reprs and state_dict keys as PyTorch's, a
PyTorch state_dict loaded and trained side by side for several SGD steps (losses, gradients, running
stats), pickling and deep copies keeping parameters and buffers."""
import copy
import pickle

import numpy as np
import pytest

import ember
import ember.nn as nn
from harness.nn_modules import assert_close, copy_state

try:
    import torch
except ImportError:  # the torch comparisons are skipped without it
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="needs PyTorch")
RNG = np.random.default_rng(21)


def text_model(lib):
    """An embedding classifier: Embedding, LayerNorm, Dropout, GELU, PReLU and a LogSoftmax head."""
    return lib.Sequential(lib.Embedding(20, 8, padding_idx=0), lib.LayerNorm(8), lib.Dropout(0.0), lib.Linear(8, 16),
                          lib.GELU(approximate="tanh"), lib.PReLU(), lib.Linear(16, 5), lib.LogSoftmax(dim=-1))


def signal_model(lib):
    """A 1-D signal model: BatchNorm1d, GroupNorm, InstanceNorm1d, activations, RMSNorm."""
    return lib.Sequential(lib.BatchNorm1d(4, momentum=None), lib.ReLU(), lib.GroupNorm(2, 4),
                          lib.InstanceNorm1d(4, affine=True, track_running_stats=True), lib.Flatten(),
                          lib.Linear(24, 6), lib.RMSNorm(6), lib.SiLU(), lib.Linear(6, 3))


EXPECTED_TEXT_REPR = """Sequential(
  (0): Embedding(20, 8, padding_idx=0)
  (1): LayerNorm((8,), eps=1e-05, elementwise_affine=True, bias=True)
  (2): Dropout(p=0.0, inplace=False)
  (3): Linear(in_features=8, out_features=16, bias=True)
  (4): GELU(approximate='tanh')
  (5): PReLU(num_parameters=1)
  (6): Linear(in_features=16, out_features=5, bias=True)
  (7): LogSoftmax(dim=-1)
)"""


def test_text_model_repr_keys_and_training():
    model = text_model(nn)
    assert repr(model) == EXPECTED_TEXT_REPR
    assert list(model.state_dict()) == ["0.weight", "1.weight", "1.bias", "3.weight", "3.bias", "5.weight",
                                        "6.weight", "6.bias"]
    tokens = ember.tensor(RNG.integers(0, 20, (6, 7)))
    labels = ember.tensor(RNG.integers(0, 5, (6, 7)))
    loss_fn = nn.NLLLoss(ignore_index=2)
    losses = []
    for _ in range(15):
        model.zero_grad()
        loss = loss_fn(model(tokens).reshape(-1, 5), labels.reshape(-1))
        loss.backward()
        assert float(model[0].weight.grad[0].abs().sum()) == 0.0  # the padding row learns nothing
        with ember.no_grad():
            for p in model.parameters():
                p -= 0.5 * p.grad
        losses.append(float(loss))
    assert losses[-1] < losses[0] * 0.8


@needs_torch
@pytest.mark.parametrize("build, shape, loss_name", [("text", (6, 7), "CrossEntropyLoss"),
                                                     ("signal", (5, 4, 6), "MultiMarginLoss")])
def test_model_trains_as_torch_does(build, shape, loss_name):
    if build == "text":
        t_model, e_model = text_model(torch.nn), text_model(nn)
    else:
        t_model = signal_model(torch.nn)
        e_model = signal_model(nn)
    assert repr(e_model) == repr(t_model)
    assert list(e_model.state_dict()) == list(t_model.state_dict())
    copy_state(t_model, e_model)
    t_loss_fn, e_loss_fn = getattr(torch.nn, loss_name)(), getattr(nn, loss_name)()
    for step in range(4):
        if build == "text":
            x = RNG.integers(0, 20, shape)
            y = RNG.integers(0, 5, shape[:1])
        else:
            x = (RNG.standard_normal(shape) * 2 + step).astype(np.float32)
            y = RNG.integers(0, 3, shape[:1])
        t_out, e_out = t_model(torch.tensor(x)), e_model(ember.tensor(x))
        if build == "text":
            t_out, e_out = t_out[:, -1], e_out[:, -1]
        t_loss, e_loss = t_loss_fn(t_out, torch.tensor(y)), e_loss_fn(e_out, ember.tensor(y))
        assert_close(e_loss, t_loss, rtol=1e-4, atol=1e-5)
        t_model.zero_grad()
        e_model.zero_grad()
        t_loss.backward()
        e_loss.backward()
        e_params = dict(e_model.named_parameters())
        with torch.no_grad(), ember.no_grad():
            for name, t_param in t_model.named_parameters():
                assert_close(e_params[name].grad, t_param.grad, rtol=1e-3, atol=1e-5)
                t_param -= 0.1 * t_param.grad
                e_params[name] -= 0.1 * e_params[name].grad
        e_buffers = dict(e_model.named_buffers())
        for name, t_buffer in t_model.named_buffers():
            assert_close(e_buffers[name], t_buffer, rtol=1e-4, atol=1e-5)
    t_model.eval()
    e_model.eval()
    x = RNG.integers(0, 20, shape) if build == "text" else RNG.standard_normal(shape).astype(np.float32)
    assert_close(e_model(ember.tensor(x)), t_model(torch.tensor(x)), rtol=1e-4, atol=1e-5)


def test_pickle_and_deepcopy_keep_parameters_and_buffers():
    model = nn.Sequential(nn.BatchNorm1d(3), nn.Embedding(5, 3), nn.CrossEntropyLoss(weight=ember.ones(3)),
                          nn.Softmax(dim=1), nn.PReLU(3, init=0.5))
    model[0](ember.randn(4, 3) + 2)
    for clone in (pickle.loads(pickle.dumps(model)), copy.deepcopy(model)):
        assert repr(clone) == repr(model)
        assert list(clone.state_dict()) == list(model.state_dict())
        for (name, a), (_, b) in zip(clone.state_dict().items(), model.state_dict().items()):
            np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=name)
        assert int(clone[0].num_batches_tracked) == 1 and clone[3].dim == 1
        assert clone[1].weight is not model[1].weight
