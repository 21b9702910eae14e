"""Embedding, EmbeddingBag and the dropout modules (issue 12): weights and their init (padding_idx
row zeroed, its gradient zero), max_norm, from_pretrained (freeze), bags with offsets, modes and
per-sample weights, reprs and errors as PyTorch's; dropout's train/eval behaviour, channel-wise
masks and scaling. Compared with NumPy and (when installed) the same torch.nn modules."""
import numpy as np
import pytest

import ember
import ember.nn as nn
from harness.nn_modules import assert_same_step, assert_same_structure, copy_state

try:
    import torch
except ImportError:  # the torch comparisons are skipped without it
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="needs PyTorch")
RNG = np.random.default_rng(5)


# ---------------------------------------------------------------- Embedding

def test_embedding_weight_init_and_repr():
    ember.manual_seed(0)
    emb = nn.Embedding(1000, 8)
    w = emb.weight.detach().numpy()
    assert emb.weight.shape == (1000, 8) and emb.weight.requires_grad
    assert abs(w.mean()) < 0.05 and abs(w.std() - 1) < 0.05  # init.normal_: N(0, 1)
    assert repr(emb) == "Embedding(1000, 8)" and list(emb.state_dict()) == ["weight"]
    assert repr(nn.Embedding(5, 2, padding_idx=-1, max_norm=1.0, norm_type=1.0, scale_grad_by_freq=True,
                             sparse=True)) == \
        "Embedding(5, 2, padding_idx=4, max_norm=1.0, norm_type=1.0, scale_grad_by_freq=True, sparse=True)"


def test_embedding_lookup_and_padding_idx():
    emb = nn.Embedding(6, 3, padding_idx=2)
    np.testing.assert_array_equal(emb.weight[2].detach().numpy(), np.zeros(3, np.float32))
    idx = np.array([[0, 2, 5], [2, 2, 1]])
    out = emb(ember.tensor(idx))
    np.testing.assert_array_equal(out.detach().numpy(), emb.weight.detach().numpy()[idx])
    g = RNG.standard_normal((2, 3, 3)).astype(np.float32)
    out.backward(ember.tensor(g))
    expected = np.zeros((6, 3), np.float32)
    np.add.at(expected, idx, g)
    expected[2] = 0  # the padding row's gradient stays zero
    np.testing.assert_allclose(emb.weight.grad.numpy(), expected, rtol=1e-6)
    emb.reset_parameters()
    assert float(emb.weight[2].abs().sum()) == 0.0
    assert nn.Embedding(6, 3, padding_idx=-2).padding_idx == 4


def test_embedding_max_norm_renormalises_looked_up_rows():
    emb = nn.Embedding(4, 3, max_norm=1.0)
    with ember.no_grad():
        emb.weight.mul_(10)
    emb(ember.tensor([0, 1]))
    norms = np.linalg.norm(emb.weight.detach().numpy(), axis=1)
    assert np.all(norms[:2] <= 1.0 + 1e-5) and np.all(norms[2:] > 1.5)


def test_embedding_from_pretrained():
    table = ember.tensor(RNG.standard_normal((4, 2)).astype(np.float32))
    emb = nn.Embedding.from_pretrained(table)
    assert not emb.weight.requires_grad and emb.num_embeddings == 4 and emb.embedding_dim == 2
    np.testing.assert_array_equal(emb(ember.tensor([3])).numpy(), table[3:4].numpy())
    emb = nn.Embedding.from_pretrained(table, freeze=False, padding_idx=1)
    assert emb.weight.requires_grad and emb.padding_idx == 1
    assert float(emb.weight[1].abs().sum()) > 0  # a pretrained padding row is kept
    with pytest.raises(AssertionError, match="Embeddings parameter is expected to be 2-dimensional"):
        nn.Embedding.from_pretrained(ember.ones(3))


def test_embedding_errors():
    with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
        nn.Embedding(3, 2, padding_idx=3)
    with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
        nn.Embedding(3, 2, padding_idx=-4)
    with pytest.raises(AssertionError, match="Shape of weight does not match num_embeddings and embedding_dim"):
        nn.Embedding(3, 2, _weight=ember.ones(2, 3))
    with pytest.raises(AssertionError, match="padding_idx must be within num_embeddings"):
        nn.EmbeddingBag(3, 2, padding_idx=5)


def _sparse_training(lib, opt_name, sparse, steps=4):
    """Losses and final weights of a small model with Embedding(sparse=...) and EmbeddingBag(sparse=...)."""
    lib.manual_seed(0)
    rng = np.random.default_rng(0)
    emb, bag = lib.nn.Embedding(10, 3, sparse=sparse), lib.nn.EmbeddingBag(10, 3, sparse=sparse)
    with lib.no_grad():
        emb.weight.copy_(lib.tensor(rng.standard_normal((10, 3)).astype(np.float32)))
        bag.weight.copy_(lib.tensor(rng.standard_normal((10, 3)).astype(np.float32)))
    params = list(emb.parameters()) + list(bag.parameters())
    opt = {"SGD": lambda: lib.optim.SGD(params, lr=0.5, momentum=0.9),
           "SGD-plain": lambda: lib.optim.SGD(params, lr=0.5),
           "Adagrad": lambda: lib.optim.Adagrad(params, lr=0.3)}[opt_name]()
    x = lib.tensor([[1, 2, 4], [4, 4, 7]])
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = ((emb(x).sum(1) - bag(x)) ** 2).mean() + emb(x[:, :1]).square().sum()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, emb.weight.detach().numpy().copy(), bag.weight.detach().numpy().copy()


@pytest.mark.filterwarnings("ignore:Sparse invariant checks")  # torch's Adagrad on its sparse gradient
@pytest.mark.parametrize("opt_name", ["SGD", "SGD-plain", "Adagrad"])
def test_sparse_true_trains_with_a_dense_gradient(opt_name):
    """ember has no sparse tensors: sparse=True is kept (repr, state) and the gradient is dense; the
    optimizers then update exactly as with sparse=False, and as PyTorch's do with its sparse gradient."""
    emb = nn.Embedding(5, 2, sparse=True)
    assert emb.sparse and list(emb.state_dict()) == ["weight"]
    emb(ember.tensor([1, 1, 3])).sum().backward()
    assert not emb.weight.grad.is_sparse
    np.testing.assert_array_equal(emb.weight.grad.numpy(), [[0, 0], [2, 2], [0, 0], [1, 1], [0, 0]])
    ours = _sparse_training(ember, opt_name, True)
    dense = _sparse_training(ember, opt_name, False)
    for a, b in zip(ours, dense):
        np.testing.assert_array_equal(a, b)
    torch = pytest.importorskip("torch")
    theirs = _sparse_training(torch, opt_name, True)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-5)
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ours[2], theirs[2], rtol=1e-5, atol=1e-6)


@needs_torch
@pytest.mark.parametrize("kwargs", [{}, dict(padding_idx=1), dict(scale_grad_by_freq=True),
                                    dict(max_norm=1.5, norm_type=1.0)])
def test_embedding_matches_torch(kwargs):
    t_mod, e_mod = torch.nn.Embedding(7, 4, **kwargs), nn.Embedding(7, 4, **kwargs)
    copy_state(t_mod, e_mod)
    assert_same_structure(e_mod, t_mod)
    idx = np.array([[1, 2, 1, 6], [0, 1, 3, 3]])
    assert_same_step(e_mod, t_mod, idx)
    assert_same_step(e_mod, t_mod, idx[0])  # max_norm renormalised the same rows in place: equal weights
    np.testing.assert_allclose(e_mod.weight.detach().numpy(), t_mod.weight.detach().numpy(), rtol=1e-6)


# ---------------------------------------------------------------- EmbeddingBag

def test_embedding_bag_modes_and_offsets():
    bag = nn.EmbeddingBag(10, 3, mode="sum")
    assert repr(bag) == "EmbeddingBag(10, 3, mode='sum')"
    w = bag.weight.detach().numpy()
    idx, offsets = np.array([1, 2, 4, 5, 4, 3, 2, 9]), np.array([0, 4])
    out = bag(ember.tensor(idx), ember.tensor(offsets))
    np.testing.assert_allclose(out.detach().numpy(), [w[idx[:4]].sum(0), w[idx[4:]].sum(0)], rtol=1e-6)
    psw = RNG.random(8).astype(np.float32)
    out = bag(ember.tensor(idx), ember.tensor(offsets), per_sample_weights=ember.tensor(psw))
    weighted = w[idx] * psw[:, None]
    np.testing.assert_allclose(out.detach().numpy(), [weighted[:4].sum(0), weighted[4:].sum(0)], rtol=1e-5)
    bag.mode = "max"
    out = bag(ember.tensor(idx.reshape(2, 4)))  # a 2-D input: one bag per row
    np.testing.assert_allclose(out.detach().numpy(), [w[idx[:4]].max(0), w[idx[4:]].max(0)], rtol=1e-6)
    bag.include_last_offset = True  # ignored for a 2-D input, as PyTorch does
    assert bag(ember.tensor(idx.reshape(2, 4))).shape == (2, 3)


def test_embedding_bag_mean_include_last_offset_and_padding():
    bag = nn.EmbeddingBag(6, 2, include_last_offset=True, padding_idx=0)
    assert repr(bag) == "EmbeddingBag(6, 2, mode='mean', padding_idx=0)"
    assert float(bag.weight[0].abs().sum()) == 0.0
    w = bag.weight.detach().numpy()
    out = bag(ember.tensor([0, 1, 2, 3, 4]), ember.tensor([0, 3, 5]))
    # the padding entry is left out of its bag's mean
    np.testing.assert_allclose(out.detach().numpy(), [w[[1, 2]].mean(0), w[[3, 4]].mean(0)], rtol=1e-6)
    out.sum().backward()
    assert float(bag.weight.grad[0].abs().sum()) == 0.0


def test_embedding_bag_from_pretrained_and_errors():
    table = ember.tensor(RNG.standard_normal((5, 3)).astype(np.float32))
    bag = nn.EmbeddingBag.from_pretrained(table, mode="sum", max_norm=2.0)
    assert not bag.weight.requires_grad and repr(bag) == "EmbeddingBag(5, 3, max_norm=2.0, mode='sum')"
    assert nn.EmbeddingBag.from_pretrained(table, freeze=False).weight.requires_grad
    with pytest.raises(ValueError, match="offsets has to be a 1D Tensor but got None"):
        nn.EmbeddingBag(5, 3)(ember.tensor([1, 2]))
    with pytest.raises(ValueError, match="mode has to be one of sum, mean or max"):
        nn.EmbeddingBag(5, 3, mode="min")(ember.tensor([[1, 2]]))


@needs_torch
@pytest.mark.parametrize("kwargs, weighted", [(dict(mode="sum"), True), (dict(mode="mean"), False),
                                              (dict(mode="max"), False),
                                              (dict(mode="mean", include_last_offset=True, padding_idx=2), False)])
def test_embedding_bag_matches_torch(kwargs, weighted):
    t_mod, e_mod = torch.nn.EmbeddingBag(8, 3, **kwargs), nn.EmbeddingBag(8, 3, **kwargs)
    copy_state(t_mod, e_mod)
    assert_same_structure(e_mod, t_mod)
    # with include_last_offset the last offset is the input's length (PyTorch's contract)
    last = [8] if kwargs.get("include_last_offset") else []
    inputs = [np.array([1, 2, 4, 5, 4, 3, 2, 7]), np.array([0, 3, 3, 6] + last)]
    if weighted:
        inputs.append(RNG.random(8).astype(np.float32))
    assert_same_step(e_mod, t_mod, *inputs)


# ---------------------------------------------------------------- dropout

@pytest.mark.parametrize("name", ["Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout",
                                  "FeatureAlphaDropout"])
def test_dropout_repr_and_errors(name):
    cls = getattr(nn, name)
    assert repr(cls()) == f"{name}(p=0.5, inplace=False)"
    assert repr(cls(0.2, True)) == f"{name}(p=0.2, inplace=True)"
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 1.5"):
        cls(1.5)
    if torch is not None:
        assert repr(getattr(torch.nn, name)(0.2, True)) == f"{name}(p=0.2, inplace=True)"


@pytest.mark.parametrize("name, shape", [("Dropout", (4, 5, 6)), ("Dropout1d", (4, 5, 6)),
                                         ("Dropout2d", (4, 5, 3, 3)), ("Dropout3d", (2, 5, 2, 2, 2)),
                                         ("AlphaDropout", (4, 5, 6)), ("FeatureAlphaDropout", (4, 5, 3, 3))])
def test_dropout_is_identity_in_eval(name, shape):
    m = getattr(nn, name)(0.4).eval()
    x = ember.randn(*shape)
    np.testing.assert_array_equal(m(x).numpy(), x.numpy())


def test_dropout_training_zeroes_and_scales():
    ember.manual_seed(3)
    m = nn.Dropout(0.25)
    x = ember.ones(200, 50)
    out = m(x).numpy()
    assert set(np.unique(out)) <= {0.0, np.float32(1 / 0.75)}
    assert abs((out == 0).mean() - 0.25) < 0.02
    y = ember.ones(10, 10)
    assert nn.Dropout(0.5, inplace=True)(y) is y and set(np.unique(y.numpy())) <= {0.0, 2.0}
    assert np.all(nn.Dropout(1.0)(x).numpy() == 0)


@pytest.mark.parametrize("name, shape, channel_dims", [
    ("Dropout1d", (30, 20, 7), 2), ("Dropout1d", (400, 7), 1), ("Dropout2d", (30, 20, 3, 3), 2),
    ("Dropout3d", (10, 40, 2, 2, 2), 2), ("Dropout3d", (400, 2, 2, 2), 1),
])
def test_channel_dropout_drops_whole_channels(name, shape, channel_dims):
    ember.manual_seed(2)
    out = getattr(nn, name)(0.5)(ember.ones(*shape)).numpy()
    channels = out.reshape(int(np.prod(shape[:channel_dims])), -1)  # one row per (sample, channel)
    assert np.all((channels == 0).all(1) | (channels == 2).all(1))
    assert 0.4 < (channels[:, 0] == 0).mean() < 0.6  # at least 400 channels: 4 sigma


def test_alpha_dropout_keeps_mean_and_variance():
    ember.manual_seed(1)
    x = ember.randn(400, 500)
    out = nn.AlphaDropout(0.2)(x).numpy()
    assert abs(out.mean()) < 0.02 and abs(out.std() - 1) < 0.02
    assert not np.allclose(out, x.numpy())
    masks = nn.FeatureAlphaDropout(0.5)(ember.ones(50, 40, 3, 3)).numpy().reshape(2000, 9)
    assert np.all(masks.max(1) == masks.min(1))  # whole channels share their fate


def test_dropout_follows_the_model_mode():
    model = nn.Sequential(nn.Linear(20, 20), nn.Dropout(0.5))
    x = ember.randn(8, 20)
    model.eval()
    np.testing.assert_array_equal(model(x).detach().numpy(), model(x).detach().numpy())
    model.train()
    assert not np.array_equal(model(x).detach().numpy(), model(x).detach().numpy())
