"""Multi-head attention and the Transformer modules (issue 12): F.multi_head_attention_forward against a
NumPy reference over mask kinds, bias_k/bias_v, zero attention, kdim/vdim and unbatched inputs; with
PyTorch installed, the modules given the same state_dict as PyTorch's return the same outputs, attention
weights and gradients, and have the same reprs and state_dict keys; PyTorch's errors and warnings."""
import math
import warnings

import numpy as np
import pytest

import ember
import ember.nn.functional as F

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch not installed")


def randn(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def causal_mask(T):
    """The additive causal mask: -inf above the diagonal."""
    return np.triu(np.full((T, T), -np.inf, np.float32), 1)


def seq_input(rng, batch_first, T, N, E=8):
    """A random (T, N, E) sequence batch, or (N, T, E) with batch_first."""
    return randn(rng, *((N, T, E) if batch_first else (T, N, E)))


def as_additive(mask):
    """A bool mask (True: not attended) as the float mask it means; float masks as they are."""
    if mask is None or mask.dtype != bool:
        return mask
    return np.where(mask, -np.inf, 0.0)


def np_mha(query, key, value, num_heads, w, key_padding_mask=None, attn_mask=None, add_zero_attn=False,
           average=True):
    """float64 multi-head attention of (L, N, E) query and (S, N, Ek/Ev) key/value; `w` holds the weights
    (q/k/v weights and biases, out weight and bias, bias_k/bias_v or None). Returns (L, N, E) and the weights."""
    f = {k: (None if a is None else a.astype(np.float64)) for k, a in w.items()}
    q = query.astype(np.float64) @ f["wq"].T + (0 if f["bq"] is None else f["bq"])
    k = key.astype(np.float64) @ f["wk"].T + (0 if f["bk"] is None else f["bk"])
    v = value.astype(np.float64) @ f["wv"].T + (0 if f["bv"] is None else f["bv"])
    L, N, E = q.shape
    d = E // num_heads
    kpm = as_additive(key_padding_mask)
    am = as_additive(attn_mask)
    if f.get("bias_k") is not None:  # one more key/value, always attended
        k = np.concatenate([k, np.broadcast_to(f["bias_k"], (1, N, E))])
        v = np.concatenate([v, np.broadcast_to(f["bias_v"], (1, N, E))])
        kpm = None if kpm is None else np.pad(kpm, ((0, 0), (0, 1)))
        am = None if am is None else np.pad(am, [(0, 0)] * (am.ndim - 1) + [(0, 1)])
    heads = lambda x: x.reshape(x.shape[0], N, num_heads, d).transpose(1, 2, 0, 3)  # noqa: E731  (N, H, T, d)
    q, k, v = heads(q), heads(k), heads(v)
    if add_zero_attn:
        k = np.concatenate([k, np.zeros((N, num_heads, 1, d))], axis=2)
        v = np.concatenate([v, np.zeros((N, num_heads, 1, d))], axis=2)
        kpm = None if kpm is None else np.pad(kpm, ((0, 0), (0, 1)))
        am = None if am is None else np.pad(am, [(0, 0)] * (am.ndim - 1) + [(0, 1)])
    s = q @ k.transpose(0, 1, 3, 2) / math.sqrt(d)
    S = s.shape[-1]
    if am is not None:
        s = s + (am if am.ndim == 2 else am.reshape(N, num_heads, L, S))
    if kpm is not None:
        s = s + kpm[:, None, None, :]
    p = np.exp(s - s.max(-1, keepdims=True))
    p = p / p.sum(-1, keepdims=True)
    out = (p @ v).transpose(2, 0, 1, 3).reshape(L, N, E) @ f["wo"].T + (0 if f["bo"] is None else f["bo"])
    return out, (p.mean(1) if average else p)


def make_weights(rng, E, kdim=None, vdim=None, bias=True, bias_kv=False):
    kdim, vdim = kdim or E, vdim or E
    w = dict(wq=randn(rng, E, E) / 2, wk=randn(rng, E, kdim) / 2, wv=randn(rng, E, vdim) / 2,
             wo=randn(rng, E, E) / 2, bq=None, bk=None, bv=None, bo=None, bias_k=None, bias_v=None)
    if bias:
        w.update(bq=randn(rng, E), bk=randn(rng, E), bv=randn(rng, E), bo=randn(rng, E))
    if bias_kv:
        w.update(bias_k=randn(rng, 1, 1, E), bias_v=randn(rng, 1, 1, E))
    return w


def call_functional(query, key, value, num_heads, w, separate=False, lib=ember, **kw):
    """`lib`'s (ember's or torch's) F.multi_head_attention_forward on NumPy inputs and the weights of
    make_weights; the output and weights as NumPy arrays."""
    t = lambda a: None if a is None else lib.from_numpy(np.ascontiguousarray(a))  # noqa: E731
    in_bias = None if w["bq"] is None else t(np.concatenate([w["bq"], w["bk"], w["bv"]]))
    if separate:
        kw.update(use_separate_proj_weight=True, q_proj_weight=t(w["wq"]), k_proj_weight=t(w["wk"]),
                  v_proj_weight=t(w["wv"]))
        in_w = None
    else:
        in_w = t(np.concatenate([w["wq"], w["wk"], w["wv"]]))
    for name in ("key_padding_mask", "attn_mask"):
        if isinstance(kw.get(name), np.ndarray):
            kw[name] = t(kw[name])
    q = t(query)
    k = q if key is query else t(key)
    v = k if value is key else t(value)
    out, weights = lib.nn.functional.multi_head_attention_forward(
        q, k, v, query.shape[-1], num_heads, in_w, in_bias, t(w["bias_k"]), t(w["bias_v"]),
        kw.pop("add_zero_attn", False), 0.0, t(w["wo"]), t(w["bo"]), **kw)
    return out.detach().numpy(), None if weights is None else weights.detach().numpy()


MASKS = ["none", "bool_attn", "float_attn", "bool_kpm", "float_kpm", "both_bool", "attn_3d"]


def make_masks(rng, kind, N, H, L, S):
    attn = kpm = None
    if kind in ("bool_attn", "both_bool"):
        attn = rng.random((L, S)) < 0.3
        attn[:, 0] = False  # every query keeps a key
    if kind == "float_attn":
        attn = randn(rng, L, S)
    if kind == "attn_3d":
        attn = randn(rng, N * H, L, S)
    if kind in ("bool_kpm", "both_bool"):
        kpm = np.zeros((N, S), bool)
        kpm[:, S - 2:] = True
    if kind == "float_kpm":
        kpm = randn(rng, N, S)
    return attn, kpm


@pytest.mark.parametrize("mask_kind", MASKS)
@pytest.mark.parametrize("need_weights", [True, False])
@pytest.mark.parametrize("attn_kind", ["self", "encdec", "separate"])
def test_functional_matches_numpy(mask_kind, need_weights, attn_kind):
    rng = np.random.default_rng(0)
    L, S, N, E, H = 5, 6, 3, 8, 2
    x = randn(rng, L, N, E)
    if attn_kind == "self":
        S, key = L, x
    else:
        key = randn(rng, S, N, E)
    value = key if attn_kind != "separate" else randn(rng, S, N, E)
    w = make_weights(rng, E)
    attn, kpm = make_masks(rng, mask_kind, N, H, L, S)
    out, weights = call_functional(x, key, value, H, w, separate=attn_kind == "separate", attn_mask=attn,
                                   key_padding_mask=kpm, need_weights=need_weights)
    ref_out, ref_w = np_mha(x, key, value, H, w, kpm, attn)
    np.testing.assert_allclose(out, ref_out, rtol=1e-4, atol=1e-4)
    if need_weights:
        np.testing.assert_allclose(weights, ref_w, rtol=1e-4, atol=1e-5)
    else:
        assert weights is None


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("bias_kv", [True, False])
@pytest.mark.parametrize("add_zero_attn", [True, False])
def test_functional_bias_kv_zero_attn_kdim_vdim(bias, bias_kv, add_zero_attn):
    rng = np.random.default_rng(1)
    L, S, N, E, H, kdim, vdim = 4, 7, 2, 6, 3, 5, 9
    query, key, value = randn(rng, L, N, E), randn(rng, S, N, kdim), randn(rng, S, N, vdim)
    w = make_weights(rng, E, kdim, vdim, bias=bias, bias_kv=bias_kv)
    attn, kpm = make_masks(rng, "both_bool", N, H, L, S)
    for need_weights in (True, False):
        out, weights = call_functional(query, key, value, H, w, separate=True, attn_mask=attn, key_padding_mask=kpm,
                                       add_zero_attn=add_zero_attn, need_weights=need_weights,
                                       average_attn_weights=False)
        ref_out, ref_w = np_mha(query, key, value, H, w, kpm, attn, add_zero_attn=add_zero_attn, average=False)
        np.testing.assert_allclose(out, ref_out, rtol=1e-4, atol=1e-4)
        if need_weights:
            assert weights.shape == (N, H, L, S + bias_kv + add_zero_attn)
            np.testing.assert_allclose(weights, ref_w, rtol=1e-4, atol=1e-5)


def test_functional_unbatched_and_causal():
    rng = np.random.default_rng(2)
    L, E, H = 6, 8, 4
    x = randn(rng, L, E)
    w = make_weights(rng, E)
    causal = causal_mask(L)
    ref_out, ref_w = np_mha(x[:, None], x[:, None], x[:, None], H, w, attn_mask=causal)
    for need_weights in (True, False):
        out, weights = call_functional(x, x, x, H, w, attn_mask=causal, is_causal=True, need_weights=need_weights)
        assert out.shape == (L, E)
        np.testing.assert_allclose(out, ref_out[:, 0], rtol=1e-4, atol=1e-4)
        if need_weights:
            np.testing.assert_allclose(weights, ref_w[0], rtol=1e-4, atol=1e-5)
            assert np.all(weights[np.triu_indices(L, 1)] == 0)
    kpm = np.array([False] * (L - 1) + [True])
    out, weights = call_functional(x, x, x, H, w, key_padding_mask=kpm)
    ref_out, ref_w = np_mha(x[:, None], x[:, None], x[:, None], H, w, key_padding_mask=kpm[None])
    np.testing.assert_allclose(out, ref_out[:, 0], rtol=1e-4, atol=1e-4)
    assert np.all(weights[:, -1] == 0)


def test_functional_gradients_match_finite_differences():
    rng = np.random.default_rng(3)
    L, N, E, H = 3, 2, 4, 2
    x = ember.from_numpy(rng.standard_normal((L, N, E))).requires_grad_()
    in_w = ember.from_numpy(rng.standard_normal((3 * E, E)) / 2).requires_grad_()
    in_b = ember.from_numpy(rng.standard_normal(3 * E)).requires_grad_()
    out_w = ember.from_numpy(rng.standard_normal((E, E)) / 2).requires_grad_()
    out_b = ember.from_numpy(rng.standard_normal(E)).requires_grad_()
    kpm = ember.tensor([[False, False, True], [False, False, False]])
    for need_weights in (True, False):
        def fn(x, in_w, in_b, out_w, out_b):
            return F.multi_head_attention_forward(x, x, x, E, H, in_w, in_b, None, None, False, 0.0, out_w, out_b,
                                                  key_padding_mask=kpm, need_weights=need_weights)[0]
        assert ember.autograd.gradcheck(fn, (x, in_w, in_b, out_w, out_b))


def test_functional_errors():
    rng = np.random.default_rng(4)
    x = randn(rng, 4, 2, 6)
    w = make_weights(rng, 6)
    with pytest.raises(AssertionError, match="embed_dim 6 not divisible by num_heads 4"):
        call_functional(x, x, x, 4, w)
    with pytest.raises(RuntimeError,
                       match=r"^The shape of the 2D attn_mask is ember.Size\(\[4, 5\]\), but should be \(4, 4\).$"):
        call_functional(x, x, x, 2, w, attn_mask=np.zeros((4, 5), np.float32))
    with pytest.raises(RuntimeError, match=r"^The shape of the 3D attn_mask is ember.Size\(\[2, 4, 4\]\), "
                                           r"but should be \(4, 4, 4\).$"):
        call_functional(x, x, x, 2, w, attn_mask=np.zeros((2, 4, 4), np.float32))
    with pytest.raises(AssertionError, match="only bool and floating types of attn_mask are supported"):
        call_functional(x, x, x, 2, w, attn_mask=np.zeros((4, 4), np.int64))
    with pytest.raises(AssertionError, match="For batched \\(3-D\\) `query`, expected `key_padding_mask` to be "
                                             "`None` or 2-D but found 1-D tensor instead"):
        call_functional(x, x, x, 2, w, key_padding_mask=np.zeros(4, bool))
    with pytest.raises(AssertionError, match="Expected key_padded_mask.shape\\[1\\] to be 4, but got 3"):
        call_functional(x, x, x, 2, w, key_padding_mask=np.zeros((2, 3), bool))
    with pytest.raises(AssertionError, match="query should be unbatched 2D or batched 3D tensor but received 1-D"):
        call_functional(x[0, 0], x[0, 0], x[0, 0], 2, w)
    with pytest.raises(RuntimeError, match="Need attn_mask if specifying the is_causal hint"):
        call_functional(x, x, x, 2, w, is_causal=True)
    with pytest.warns(UserWarning, match="Support for mismatched key_padding_mask and attn_mask is deprecated"):
        call_functional(x, x, x, 2, w, key_padding_mask=np.zeros((2, 4), bool), attn_mask=np.zeros((4, 4), np.float32))


# ---------------------------------------------------------------- against PyTorch's functional

@needs_torch
@pytest.mark.parametrize("mask_kind", MASKS)
@pytest.mark.parametrize("extras", [{}, {"add_zero_attn": True}, {"bias_kv": True}, {"average_attn_weights": False}])
def test_functional_matches_torch(mask_kind, extras):
    rng = np.random.default_rng(5)
    L, S, N, E, H = 5, 7, 2, 12, 3
    extras = dict(extras)
    w = make_weights(rng, E, bias_kv=extras.pop("bias_kv", False))
    query, key = randn(rng, L, N, E), randn(rng, S, N, E)
    attn, kpm = make_masks(rng, mask_kind, N, H, L, S)
    for need_weights in (True, False):
        kw = dict(extras, attn_mask=attn, key_padding_mask=kpm, need_weights=need_weights)
        out, weights = call_functional(query, key, key, H, w, **dict(kw))
        t_out, t_weights = call_functional(query, key, key, H, w, lib=torch, **dict(kw))
        np.testing.assert_allclose(out, t_out, rtol=1e-5, atol=1e-5)
        if need_weights:
            np.testing.assert_allclose(weights, t_weights, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- modules

def to_ember(t):
    return ember.from_numpy(t.detach().numpy().copy())


def to_numpy(t):
    return t.detach().numpy()


def load_from_torch(e_module, t_module):
    """The PyTorch module's state_dict loaded into the ember module (same keys, in the same order)."""
    t_state = t_module.state_dict()
    assert list(e_module.state_dict().keys()) == list(t_state.keys())
    e_module.load_state_dict({k: to_ember(v) for k, v in t_state.items()})


def assert_grads_equal(e_module, t_module, rtol=1e-4, atol=1e-5):
    e_params = dict(e_module.named_parameters())
    t_params = dict(t_module.named_parameters())
    assert e_params.keys() == t_params.keys()
    for name, tp in t_params.items():
        if tp.grad is None:
            assert e_params[name].grad is None, name
            continue
        np.testing.assert_allclose(to_numpy(e_params[name].grad), tp.grad.numpy(), rtol=rtol, atol=atol,
                                   err_msg=name)


def test_multihead_attention_module_matches_functional():
    rng = np.random.default_rng(6)
    mha = ember.nn.MultiheadAttention(8, 2, kdim=5, vdim=3, add_bias_kv=True)
    names = [n for n, _ in mha.named_parameters()]
    assert names == ["q_proj_weight", "k_proj_weight", "v_proj_weight", "in_proj_bias", "bias_k", "bias_v",
                     "out_proj.weight", "out_proj.bias"]
    assert mha.in_proj_weight is None and mha.head_dim == 4 and not mha._qkv_same_embed_dim
    assert np.all(to_numpy(mha.in_proj_bias) == 0) and np.all(to_numpy(mha.out_proj.bias) == 0)
    # xavier_uniform_ bound for an (8, 5) weight
    assert np.abs(to_numpy(mha.k_proj_weight)).max() <= math.sqrt(6 / 13)
    w = dict(wq=to_numpy(mha.q_proj_weight), wk=to_numpy(mha.k_proj_weight), wv=to_numpy(mha.v_proj_weight),
             bq=to_numpy(mha.in_proj_bias)[:8], bk=to_numpy(mha.in_proj_bias)[8:16], bv=to_numpy(mha.in_proj_bias)[16:],
             wo=to_numpy(mha.out_proj.weight), bo=to_numpy(mha.out_proj.bias), bias_k=to_numpy(mha.bias_k),
             bias_v=to_numpy(mha.bias_v))
    q, k, v = randn(rng, 4, 2, 8), randn(rng, 6, 2, 5), randn(rng, 6, 2, 3)
    out, weights = mha(ember.from_numpy(q), ember.from_numpy(k), ember.from_numpy(v))
    ref_out, ref_w = np_mha(q, k, v, 2, w)
    np.testing.assert_allclose(to_numpy(out), ref_out, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(to_numpy(weights), ref_w, rtol=1e-4, atol=1e-5)


def test_multihead_attention_constructor_errors():
    with pytest.raises(ValueError, match="embed_dim and num_heads must be greater than 0, got embed_dim=0 and "
                                         "num_heads=2 instead"):
        ember.nn.MultiheadAttention(0, 2)
    with pytest.raises(AssertionError, match="embed_dim must be divisible by num_heads"):
        ember.nn.MultiheadAttention(6, 4)


def test_generate_square_subsequent_mask():
    m = ember.nn.Transformer.generate_square_subsequent_mask(3)
    inf = np.inf
    expected = np.array([[0, -inf, -inf], [0, 0, -inf], [0, 0, 0]], np.float32)
    assert m.dtype == ember.float32
    np.testing.assert_array_equal(to_numpy(m), expected)
    assert ember.nn.Transformer.generate_square_subsequent_mask(3, dtype=ember.float64).dtype == ember.float64


def hand_written_block(layer, x, memory=None, mask=None):
    """An encoder (memory None) or decoder layer in eval mode from its parts: each sublayer f adds
    f(norm(x)) with norm_first, else x becomes norm(x + f(x))."""
    attend = lambda attn, q, kv, m=None: attn(q, kv, kv, attn_mask=m, need_weights=False)[0]  # noqa: E731
    feedforward = lambda h: layer.linear2(F.gelu(layer.linear1(h)))  # noqa: E731
    sublayers = [lambda h: attend(layer.self_attn, h, h, mask)]
    if memory is not None:
        sublayers.append(lambda h: attend(layer.multihead_attn, h, memory))
    sublayers.append(feedforward)
    for i, f in enumerate(sublayers, 1):
        norm = getattr(layer, f"norm{i}")
        x = x + f(norm(x)) if layer.norm_first else norm(x + f(x))
    return x


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("decoder", [False, True])
def test_layers_match_hand_written_blocks(norm_first, decoder):
    ember.manual_seed(0)
    cls = ember.nn.TransformerDecoderLayer if decoder else ember.nn.TransformerEncoderLayer
    layer = cls(8, 2, dim_feedforward=16, dropout=0.3, activation="gelu", batch_first=True,
                norm_first=norm_first).eval()
    with ember.no_grad():
        for p in layer.parameters():  # LayerNorm's ones/zeros would hide a swapped norm
            p.add_(ember.randn(p.shape) * 0.1)
    x, memory = ember.randn(3, 5, 8), ember.randn(3, 7, 8)
    mask = ember.from_numpy(causal_mask(5))
    with ember.no_grad():
        out = layer(x, memory, tgt_mask=mask) if decoder else layer(x, src_mask=mask)
        expected = hand_written_block(layer, x, memory if decoder else None, mask)
    np.testing.assert_allclose(to_numpy(out), to_numpy(expected), rtol=1e-5, atol=1e-5)
    # dropout acts in training mode: the output changes from call to call
    layer.train()
    with ember.no_grad():
        a = layer(x, memory) if decoder else layer(x)
        b = layer(x, memory) if decoder else layer(x)
    assert not np.allclose(to_numpy(a), to_numpy(b))


def test_clones_are_deep_copies_and_activation_strings():
    layer = ember.nn.TransformerEncoderLayer(4, 2, 8, activation="gelu")
    assert layer.activation is F.gelu and layer.activation_relu_or_gelu == 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        enc = ember.nn.TransformerEncoder(layer, 3)
    assert len(enc.layers) == 3 and all(m is not layer for m in enc.layers)
    ptrs = {m.linear1.weight.data_ptr() for m in enc.layers}
    assert len(ptrs) == 3  # separate parameters
    np.testing.assert_array_equal(to_numpy(enc.layers[2].linear1.weight), to_numpy(layer.linear1.weight))
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
        ember.nn.TransformerEncoderLayer(4, 2, activation="tanh")
    custom = ember.nn.TransformerDecoderLayer(4, 2, 8, activation=ember.tanh)
    assert custom.activation is ember.tanh


# ---------------------------------------------------------------- modules against PyTorch's

def seeded_pair(factory_name, *args, **kwargs):
    """The same module built by ember and torch, the torch state loaded into ember; both in eval mode."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # enable_nested_tensor's warning (compared in its own test)
        t_mod = getattr(torch.nn, factory_name)(*args, **kwargs)
        e_mod = getattr(ember.nn, factory_name)(*args, **kwargs)
    load_from_torch(e_mod, t_mod)
    return e_mod.eval(), t_mod.eval()


def torch_mask(mask):
    return None if mask is None else torch.from_numpy(mask)


def ember_mask(mask):
    return None if mask is None else ember.from_numpy(mask)


@needs_torch
@pytest.mark.parametrize("mask_kind", MASKS)
@pytest.mark.parametrize("config", [
    {}, {"batch_first": True}, {"kdim": 5, "vdim": 7}, {"add_bias_kv": True}, {"add_zero_attn": True},
    {"bias": False}, {"batch_first": True, "kdim": 3, "vdim": 4, "add_bias_kv": True, "add_zero_attn": True},
])
def test_multihead_attention_matches_torch(mask_kind, config):
    rng = np.random.default_rng(7)
    E, H, L, S, N = 8, 2, 4, 6, 3
    e_mha, t_mha = seeded_pair("MultiheadAttention", E, H, **config)
    assert repr(e_mha) == repr(t_mha)
    bf = config.get("batch_first", False)
    shape = lambda T, D: (N, T, D) if bf else (T, N, D)  # noqa: E731
    q = randn(rng, *shape(L, E))
    k = randn(rng, *shape(S, config.get("kdim", E)))
    v = randn(rng, *shape(S, config.get("vdim", E)))
    attn, kpm = make_masks(rng, mask_kind, N, H, L, S)
    for need_weights, average in ((True, True), (True, False), (False, True)):
        eq, ek, ev = (ember.from_numpy(a).requires_grad_() for a in (q, k, v))
        tq, tk, tv = (torch.from_numpy(a).requires_grad_() for a in (q, k, v))
        e_mha.zero_grad()
        t_mha.zero_grad()
        e_out, e_w = e_mha(eq, ek, ev, key_padding_mask=ember_mask(kpm), attn_mask=ember_mask(attn),
                           need_weights=need_weights, average_attn_weights=average)
        t_out, t_w = t_mha(tq, tk, tv, key_padding_mask=torch_mask(kpm), attn_mask=torch_mask(attn),
                           need_weights=need_weights, average_attn_weights=average)
        np.testing.assert_allclose(to_numpy(e_out), to_numpy(t_out), rtol=1e-5, atol=1e-5)
        if need_weights:
            np.testing.assert_allclose(to_numpy(e_w), to_numpy(t_w), rtol=1e-5, atol=1e-6)
        else:
            assert e_w is None and t_w is None
        g = randn(rng, *e_out.shape)
        e_out.backward(ember.from_numpy(g))
        t_out.backward(torch.from_numpy(g))
        for e_in, t_in in ((eq, tq), (ek, tk), (ev, tv)):
            np.testing.assert_allclose(to_numpy(e_in.grad), t_in.grad.numpy(), rtol=1e-4, atol=1e-5)
        assert_grads_equal(e_mha, t_mha)


@needs_torch
@pytest.mark.parametrize("batch_first", [False, True])
def test_multihead_self_attention_unbatched_and_causal_matches_torch(batch_first):
    rng = np.random.default_rng(8)
    e_mha, t_mha = seeded_pair("MultiheadAttention", 8, 4, batch_first=batch_first)
    x = randn(rng, 5, 8)  # unbatched: batch_first does not apply
    causal = causal_mask(5)
    for need_weights in (True, False):
        ex, tx = ember.from_numpy(x), torch.from_numpy(x)
        e_out, e_w = e_mha(ex, ex, ex, attn_mask=ember.from_numpy(causal), is_causal=True, need_weights=need_weights)
        t_out, t_w = t_mha(tx, tx, tx, attn_mask=torch.from_numpy(causal), is_causal=True, need_weights=need_weights)
        np.testing.assert_allclose(to_numpy(e_out), t_out.detach().numpy(), rtol=1e-5, atol=1e-5)
        if need_weights:
            np.testing.assert_allclose(to_numpy(e_w), t_w.detach().numpy(), rtol=1e-5, atol=1e-6)


LAYER_CONFIGS = [
    {}, {"batch_first": True}, {"norm_first": True}, {"activation": "gelu"}, {"bias": False},
    {"layer_norm_eps": 1e-3, "batch_first": True, "norm_first": True}, {"nhead": 1},
]


def layer_args(config):
    config = dict(config)
    return (8, config.pop("nhead", 2)), dict(config, dim_feedforward=16, dropout=0.25)


def src_masks(rng, kind, N, S, H):
    if kind == "causal":
        return causal_mask(S), None
    return make_masks(rng, kind, N, H, S, S)


@needs_torch
@pytest.mark.parametrize("mask_kind", ["none", "bool_kpm", "causal", "both_bool", "float_attn"])
@pytest.mark.parametrize("config", LAYER_CONFIGS)
def test_encoder_layer_matches_torch(mask_kind, config):
    rng = np.random.default_rng(9)
    args, kwargs = layer_args(config)
    e_layer, t_layer = seeded_pair("TransformerEncoderLayer", *args, **kwargs)
    assert repr(e_layer) == repr(t_layer)
    N, S = 3, 5
    bf = kwargs.get("batch_first", False)
    x = seq_input(rng, bf, S, N)
    attn, kpm = src_masks(rng, mask_kind, N, S, args[1])
    ex, tx = ember.from_numpy(x).requires_grad_(), torch.from_numpy(x).requires_grad_()
    e_out = e_layer(ex, src_mask=ember_mask(attn), src_key_padding_mask=ember_mask(kpm))
    t_out = t_layer(tx, src_mask=torch_mask(attn), src_key_padding_mask=torch_mask(kpm))
    np.testing.assert_allclose(to_numpy(e_out), to_numpy(t_out), rtol=1e-4, atol=1e-5)
    g = randn(rng, *x.shape)
    e_out.backward(ember.from_numpy(g))
    t_out.backward(torch.from_numpy(g))
    np.testing.assert_allclose(to_numpy(ex.grad), tx.grad.numpy(), rtol=1e-4, atol=1e-4)
    assert_grads_equal(e_layer, t_layer)


@needs_torch
@pytest.mark.parametrize("config", LAYER_CONFIGS)
def test_decoder_layer_matches_torch(config):
    rng = np.random.default_rng(10)
    args, kwargs = layer_args(config)
    e_layer, t_layer = seeded_pair("TransformerDecoderLayer", *args, **kwargs)
    assert repr(e_layer) == repr(t_layer)
    N, T, S = 2, 4, 6
    bf = kwargs.get("batch_first", False)
    tgt = seq_input(rng, bf, T, N)
    mem = seq_input(rng, bf, S, N)
    causal = causal_mask(T)
    mem_kpm = np.zeros((N, S), bool)
    mem_kpm[1, -2:] = True
    e_in = [ember.from_numpy(a).requires_grad_() for a in (tgt, mem)]
    t_in = [torch.from_numpy(a).requires_grad_() for a in (tgt, mem)]
    e_out = e_layer(*e_in, tgt_mask=ember.from_numpy(causal), memory_key_padding_mask=ember.from_numpy(mem_kpm),
                    tgt_is_causal=True)
    t_out = t_layer(*t_in, tgt_mask=torch.from_numpy(causal), memory_key_padding_mask=torch.from_numpy(mem_kpm),
                    tgt_is_causal=True)
    np.testing.assert_allclose(to_numpy(e_out), to_numpy(t_out), rtol=1e-4, atol=1e-5)
    g = randn(rng, *tgt.shape)
    e_out.backward(ember.from_numpy(g))
    t_out.backward(torch.from_numpy(g))
    for e, t in zip(e_in, t_in):
        np.testing.assert_allclose(to_numpy(e.grad), t.grad.numpy(), rtol=1e-4, atol=1e-4)
    assert_grads_equal(e_layer, t_layer)


@needs_torch
@pytest.mark.parametrize("config", [{}, {"batch_first": True}, {"norm_first": True, "batch_first": True},
                                    {"activation": "gelu", "bias": False}])
@pytest.mark.parametrize("train", [False, True])
def test_transformer_matches_torch(config, train):
    rng = np.random.default_rng(11)
    kwargs = dict(config, d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=2, dim_feedforward=16,
                  dropout=0.0 if train else 0.2)
    e_model, t_model = seeded_pair("Transformer", **kwargs)
    assert repr(e_model) == repr(t_model)
    if train:  # dropout 0: training mode computes the same function
        e_model.train()
        t_model.train()
    N, S, T = 2, 6, 5
    bf = kwargs.get("batch_first", False)
    src = seq_input(rng, bf, S, N)
    tgt = seq_input(rng, bf, T, N)
    tgt_mask = causal_mask(T)
    src_kpm = np.zeros((N, S), bool)
    src_kpm[0, -2:] = True
    masks = dict(tgt_mask=tgt_mask, src_key_padding_mask=src_kpm, memory_key_padding_mask=src_kpm)
    e_out = e_model(ember.from_numpy(src), ember.from_numpy(tgt), **{k: ember.from_numpy(m) for k, m in masks.items()})
    t_out = t_model(torch.from_numpy(src), torch.from_numpy(tgt), **{k: torch.from_numpy(m) for k, m in masks.items()})
    np.testing.assert_allclose(to_numpy(e_out), to_numpy(t_out), rtol=1e-4, atol=1e-5)
    g = randn(rng, *tgt.shape)
    e_out.backward(ember.from_numpy(g))
    t_out.backward(torch.from_numpy(g))
    assert_grads_equal(e_model, t_model)


@needs_torch
@pytest.mark.parametrize("enable_nested_tensor", [True, False])
@pytest.mark.parametrize("no_grad", [True, False])
@pytest.mark.parametrize("left_aligned", [True, False])
def test_encoder_padding_positions_match_torch(enable_nested_tensor, no_grad, left_aligned):
    """PyTorch's encoder in eval mode without grad runs key-padding-masked batches as nested tensors:
    the padded positions come out 0 before the final norm. ember gives the same values."""
    rng = np.random.default_rng(12)
    t_layer = torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.1, batch_first=True)
    t_enc = torch.nn.TransformerEncoder(t_layer, 2, norm=torch.nn.LayerNorm(8),
                                        enable_nested_tensor=enable_nested_tensor).eval()
    e_layer = ember.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.1, batch_first=True)
    e_enc = ember.nn.TransformerEncoder(e_layer, 2, norm=ember.nn.LayerNorm(8),
                                        enable_nested_tensor=enable_nested_tensor)
    load_from_torch(e_enc, t_enc)
    e_enc.eval()
    x = randn(rng, 3, 5, 8)
    kpm = np.zeros((3, 5), bool)
    kpm[0, 3:] = True
    kpm[2, 1:] = True
    if not left_aligned:  # PyTorch checks the mask (mask_check) and keeps the padded computation
        kpm[1, 1] = True
    with ember.set_grad_enabled(not no_grad):
        e_out = e_enc(ember.from_numpy(x), src_key_padding_mask=ember.from_numpy(kpm))
    with torch.set_grad_enabled(not no_grad), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PyTorch's "nested tensors are in prototype stage"
        t_out = t_enc(torch.from_numpy(x), src_key_padding_mask=torch.from_numpy(kpm))
    if no_grad and enable_nested_tensor and left_aligned:  # the padded positions are LayerNorm(0) = its bias
        np.testing.assert_allclose(to_numpy(e_out)[2, 1:], np.broadcast_to(to_numpy(e_enc.norm.bias), (4, 8)))
    np.testing.assert_allclose(to_numpy(e_out), to_numpy(t_out), rtol=1e-4, atol=1e-5)


@needs_torch
def test_encoder_nested_tensor_warning_matches_torch():
    for kwargs in ({}, {"batch_first": True, "norm_first": True}, {"batch_first": True, "nhead": 1},
                   {"batch_first": True, "activation": ember.tanh}):
        t_kwargs = dict(kwargs)
        if "activation" in t_kwargs:
            t_kwargs["activation"] = torch.tanh
        nhead = t_kwargs.pop("nhead", 2)
        e_kwargs = dict(kwargs)
        e_kwargs.pop("nhead", None)
        with warnings.catch_warnings(record=True) as t_w:
            warnings.simplefilter("always")
            torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(8, nhead, 16, **t_kwargs), 1)
        with warnings.catch_warnings(record=True) as e_w:
            warnings.simplefilter("always")
            ember.nn.TransformerEncoder(ember.nn.TransformerEncoderLayer(8, nhead, 16, **e_kwargs), 1)
        assert [str(w.message) for w in e_w] == [str(w.message) for w in t_w]


@needs_torch
def test_state_dict_keys_and_reprs_match_torch():
    for name, args, kwargs in [
        ("MultiheadAttention", (8, 2), {}),
        ("MultiheadAttention", (8, 2), {"kdim": 4, "vdim": 6, "add_bias_kv": True, "bias": False}),
        ("TransformerEncoderLayer", (8, 2), {"dim_feedforward": 16}),
        ("TransformerDecoderLayer", (8, 2), {"dim_feedforward": 16, "bias": False}),
        ("Transformer", (), {"d_model": 8, "nhead": 2, "num_encoder_layers": 1, "num_decoder_layers": 2,
                             "dim_feedforward": 16}),
    ]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t_mod = getattr(torch.nn, name)(*args, **kwargs)
            e_mod = getattr(ember.nn, name)(*args, **kwargs)
        assert repr(e_mod) == repr(t_mod)
        assert list(e_mod.state_dict()) == list(t_mod.state_dict())
        assert [tuple(v.shape) for v in e_mod.state_dict().values()] == \
            [tuple(v.shape) for v in t_mod.state_dict().values()]


@needs_torch
def test_transformer_errors_match_torch():
    e_model, t_model = seeded_pair("Transformer", d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=1,
                                   dim_feedforward=16)
    for src_shape, tgt_shape in (((5, 2, 8), (4, 3, 8)), ((5, 2, 8), (4, 2, 6))):
        src, tgt = np.zeros(src_shape, np.float32), np.zeros(tgt_shape, np.float32)
        with pytest.raises(RuntimeError) as t_err:
            t_model(torch.from_numpy(src), torch.from_numpy(tgt))
        with pytest.raises(RuntimeError) as e_err:
            e_model(ember.from_numpy(src), ember.from_numpy(tgt))
        assert str(e_err.value) == str(t_err.value)


@pytest.mark.parametrize("need_weights", [True, False])
def test_attention_dropout_only_in_training(need_weights):
    ember.manual_seed(1)
    mha = ember.nn.MultiheadAttention(8, 2, dropout=0.5, dtype=ember.float64)
    x = ember.randn(4, 3, 8, dtype=ember.float64)
    a, b = (mha(x, x, x, need_weights=need_weights)[0] for _ in range(2))
    assert a.dtype == ember.float64 and not np.allclose(to_numpy(a), to_numpy(b))
    mha.eval()
    a, b = (mha(x, x, x, need_weights=need_weights)[0] for _ in range(2))
    np.testing.assert_array_equal(to_numpy(a), to_numpy(b))


def test_transformer_pickles_and_deep_copies():
    import copy
    import pickle
    model = ember.nn.Transformer(d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=16,
                                 activation="gelu", batch_first=True).eval()
    src, tgt = ember.randn(2, 5, 8), ember.randn(2, 4, 8)
    expected = to_numpy(model(src, tgt))
    for clone in (pickle.loads(pickle.dumps(model)), copy.deepcopy(model)):
        assert clone.decoder.layers[0].activation is F.gelu
        assert list(clone.state_dict()) == list(model.state_dict())
        np.testing.assert_array_equal(to_numpy(clone(src, tgt)), expected)


def test_functional_static_kv_replace_the_projected_keys_and_values():
    rng = np.random.default_rng(13)
    L, S, N, E, H = 3, 5, 2, 8, 2
    d = E // H
    w = make_weights(rng, E)
    query, key = randn(rng, L, N, E), randn(rng, S, N, E)
    heads = lambda x: x.reshape(S, N * H, d).transpose(1, 0, 2).copy()  # noqa: E731  (N * H, S, d)
    static_k = heads(key.astype(np.float64) @ w["wk"].T + w["bk"]).astype(np.float32)
    static_v = heads(key.astype(np.float64) @ w["wv"].T + w["bv"]).astype(np.float32)
    other = randn(rng, S, N, E)  # key/value inputs the statics override
    out, weights = call_functional(query, other, other, H, w, static_k=ember.from_numpy(static_k),
                                   static_v=ember.from_numpy(static_v))
    ref_out, ref_w = np_mha(query, key, key, H, w)
    np.testing.assert_allclose(out, ref_out, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(weights, ref_w, rtol=1e-4, atol=1e-5)
    with pytest.raises(AssertionError, match="expecting static_k.size\\(0\\) of 4, but got 2"):
        call_functional(query, other, other, H, w, static_k=ember.from_numpy(static_k[:2]))
    with pytest.raises(AssertionError, match="bias cannot be added to static key."):
        call_functional(query, other, other, H, dict(w, bias_k=randn(rng, 1, 1, E), bias_v=randn(rng, 1, 1, E)),
                        static_k=ember.from_numpy(static_k))
