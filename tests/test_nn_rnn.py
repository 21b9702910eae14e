"""nn.RNN, nn.LSTM, nn.GRU and their cells (issue 12, point 4): outputs, final states and every
parameter's gradient against PyTorch with the same state_dict (1-2 layers, bidirectional,
batch_first, packed sequences of unequal lengths, unbatched input, initial states, projection),
and against a reference written in ember ops (without torch); parameter names, shapes, init
bounds, reprs, dropout, and PyTorch's errors."""
import math
import warnings

import numpy as np
import pytest
from test_rnn_fused import ref_cell

import ember
from ember import nn
from ember.nn.utils import rnn as rnn_utils

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="needs torch")
I, H = 3, 5

CONFIGS = [
    ("RNN", {}),
    ("RNN", {"nonlinearity": "relu", "num_layers": 2, "bidirectional": True}),
    ("LSTM", {"num_layers": 2}),
    ("LSTM", {"bidirectional": True, "batch_first": True}),
    ("LSTM", {"proj_size": 3, "num_layers": 2, "bidirectional": True}),
    ("LSTM", {"bias": False, "proj_size": 2}),
    ("GRU", {"num_layers": 2, "bidirectional": True}),
    ("GRU", {"batch_first": True, "bias": False}),
]
INPUTS = ["padded", "padded+h0", "packed", "packed+h0", "unbatched", "unbatched+h0"]


def config_id(c):
    return c[0] + "-" + "-".join(f"{k}={v}" for k, v in c[1].items())


def to_ember(t):
    return ember.from_numpy(t.detach().numpy().copy())


def hidden_shapes(cls, kw, B):
    D = 2 if kw.get("bidirectional") else 1
    L = kw.get("num_layers", 1)
    hout = kw.get("proj_size") or H
    shapes = [(L * D, B, hout)] + ([(L * D, B, H)] if cls == "LSTM" else [])
    return shapes


def make_inputs(rng, cls, kw, kind):
    """numpy arrays: x (padded or unbatched), lengths (packed), initial states or None."""
    T, B = 4, 3
    if kind.startswith("unbatched"):
        x = rng.standard_normal((T, I))
        shapes = [s[:1] + s[2:] for s in hidden_shapes(cls, kw, 1)]
    else:
        x = rng.standard_normal((B, T, I) if kw.get("batch_first") else (T, B, I))
        shapes = hidden_shapes(cls, kw, B)
    states = [rng.standard_normal(s) for s in shapes] if kind.endswith("+h0") else None
    lengths = [2, 4, 1] if kind.startswith("packed") else None
    return x, lengths, states


def run(lib, module, x, lengths, states, batch_first):
    """Forward + backward of a weighted sum of every output; returns outputs, input grad."""
    xt = lib.tensor(x, dtype=lib.float64, requires_grad=True)
    inp = xt
    if lengths is not None:
        inp = lib.nn.utils.rnn.pack_padded_sequence(xt, lengths, batch_first=batch_first, enforce_sorted=False)
    hx = None
    if states is not None:
        hx = [lib.tensor(s, dtype=lib.float64, requires_grad=True) for s in states]
        hx = tuple(hx) if len(hx) == 2 else hx[0]
    out, hidden = module(inp, hx)
    if lengths is not None:
        out, _ = lib.nn.utils.rnn.pad_packed_sequence(out, batch_first=batch_first)
    hiddens = list(hidden) if isinstance(hidden, tuple) else [hidden]
    loss = sum((t * lib.linspace(-1, 1, t.numel(), dtype=lib.float64).reshape(t.shape)).sum()
               for t in [out] + hiddens)
    loss.backward()
    grads = [xt.grad] + ([h.grad for h in (hx if isinstance(hx, tuple) else [hx])] if hx is not None else [])
    return [t.detach().numpy() for t in [out] + hiddens], [g.numpy() for g in grads]


@needs_torch
@pytest.mark.parametrize("kind", INPUTS)
@pytest.mark.parametrize("config", CONFIGS, ids=config_id)
def test_matches_torch(config, kind):
    cls, kw = config
    torch.manual_seed(0)
    tm = getattr(torch.nn, cls)(I, H, **kw).double()
    em = getattr(nn, cls)(I, H, **kw).double()
    assert list(em.state_dict()) == list(tm.state_dict())
    em.load_state_dict({k: to_ember(v) for k, v in tm.state_dict().items()})
    x, lengths, states = make_inputs(np.random.default_rng(1), cls, kw, kind)
    t_out, t_grads = run(torch, tm, x, lengths, states, kw.get("batch_first", False))
    e_out, e_grads = run(ember, em, x, lengths, states, kw.get("batch_first", False))
    for e, t in zip(e_out + e_grads, t_out + t_grads):
        assert e.shape == t.shape
        np.testing.assert_allclose(e, t, rtol=1e-10, atol=1e-12)
    t_params = dict(tm.named_parameters())
    for name, p in em.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), t_params[name].grad.numpy(), rtol=1e-10, atol=1e-12)


@needs_torch
@pytest.mark.parametrize("cls", ["LSTM", "GRU"])
def test_float32_two_layer_packed_matches_torch(cls):
    torch.manual_seed(2)
    tm = getattr(torch.nn, cls)(8, 16, num_layers=2, bidirectional=True)
    em = getattr(nn, cls)(8, 16, num_layers=2, bidirectional=True)
    em.load_state_dict({k: to_ember(v) for k, v in tm.state_dict().items()})
    seqs = [np.random.default_rng(i).standard_normal((n, 8)).astype(np.float32) for i, n in enumerate([5, 7, 2])]
    t_out, t_h = tm(torch.nn.utils.rnn.pack_sequence([torch.from_numpy(s) for s in seqs], enforce_sorted=False))
    e_out, e_h = em(rnn_utils.pack_sequence([ember.from_numpy(s) for s in seqs], enforce_sorted=False))
    np.testing.assert_allclose(e_out.data.detach().numpy(), t_out.data.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(e_out.batch_sizes.numpy(), t_out.batch_sizes.numpy())
    np.testing.assert_array_equal(e_out.unsorted_indices.numpy(), t_out.unsorted_indices.numpy())
    for e, t in zip(e_h if cls == "LSTM" else [e_h], t_h if cls == "LSTM" else [t_h]):
        np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- against ember ops, no torch
def ref_module(module, x, h0=None, c0=None):
    """The module's forward for a padded time-major (T, B, I) input, step by step in ember ops."""
    mode = module.mode
    D = 2 if module.bidirectional else 1
    T, B = x.shape[0], x.shape[1]
    hout = module.proj_size or module.hidden_size
    h0 = h0 if h0 is not None else ember.zeros(module.num_layers * D, B, hout, dtype=x.dtype)
    if mode == "LSTM" and c0 is None:
        c0 = ember.zeros(module.num_layers * D, B, module.hidden_size, dtype=x.dtype)
    layer_in, hs, cs = x, [], []
    for layer in range(module.num_layers):
        outs = []
        for d in range(D):
            w = module.all_weights[layer * D + d]
            w_ih, w_hh = w[0], w[1]
            b_ih, b_hh = (w[2], w[3]) if module.bias else (None, None)
            w_hr = w[-1] if module.proj_size else None
            h, c = h0[layer * D + d], (c0[layer * D + d] if mode == "LSTM" else None)
            steps = [None] * T
            for t in (reversed(range(T)) if d else range(T)):
                h, c = ref_cell(mode, layer_in[t], h, c, w_ih, w_hh, b_ih, b_hh, w_hr)
                steps[t] = h
            outs.append(ember.stack(steps))
            hs.append(h)
            cs.append(c)
        layer_in = ember.cat(outs, 2)
    return layer_in, ember.stack(hs), (ember.stack(cs) if mode == "LSTM" else None)


@pytest.mark.parametrize("config", CONFIGS, ids=config_id)
def test_matches_ember_ops_reference(config):
    cls, kw = config
    ember.manual_seed(3)
    m = getattr(nn, cls)(I, H, **kw).double()
    rng = np.random.default_rng(4)
    x = ember.tensor(rng.standard_normal((6, 2, I)))
    out, hidden = m(x.transpose(0, 1) if kw.get("batch_first") else x)
    if kw.get("batch_first"):
        out = out.transpose(0, 1)
    ref_out, ref_h, ref_c = ref_module(m, x)
    np.testing.assert_allclose(out.detach().numpy(), ref_out.detach().numpy(), rtol=1e-12, atol=1e-12)
    h = hidden[0] if cls == "LSTM" else hidden
    np.testing.assert_allclose(h.detach().numpy(), ref_h.detach().numpy(), rtol=1e-12, atol=1e-12)
    if cls == "LSTM":
        np.testing.assert_allclose(hidden[1].detach().numpy(), ref_c.detach().numpy(), rtol=1e-12, atol=1e-12)
    params = list(m.parameters())
    got = ember.autograd.grad([out.sum() + (h * h).sum()], params)
    want = ember.autograd.grad([ref_out.sum() + (ref_h * ref_h).sum()], params)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-10, atol=1e-12)


def test_packed_equals_each_sequence_alone():
    # A packed batch gives each sequence what it gives on its own (no torch needed).
    ember.manual_seed(5)
    m = nn.LSTM(I, H, num_layers=2, bidirectional=True).double()
    seqs = [ember.tensor(np.random.default_rng(n).standard_normal((n, I))) for n in (3, 6, 1, 4)]
    out, (h, c) = m(rnn_utils.pack_sequence(seqs, enforce_sorted=False))
    padded, lengths = rnn_utils.pad_packed_sequence(out)
    assert lengths.tolist() == [3, 6, 1, 4]
    for b, s in enumerate(seqs):
        o1, (h1, c1) = m(s)  # unbatched
        np.testing.assert_allclose(padded[: len(s), b].detach().numpy(), o1.detach().numpy(), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(padded[len(s):, b].detach().numpy(), 0)
        np.testing.assert_allclose(h[:, b].detach().numpy(), h1.detach().numpy(), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(c[:, b].detach().numpy(), c1.detach().numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("cls", ["RNNCell", "LSTMCell", "GRUCell"])
def test_cells_match_reference(cls):
    ember.manual_seed(6)
    cell = getattr(nn, cls)(I, H).double()
    mode = {"RNNCell": "RNN_TANH", "LSTMCell": "LSTM", "GRUCell": "GRU"}[cls]
    rng = np.random.default_rng(7)
    x, h = ember.tensor(rng.standard_normal((2, I))), ember.tensor(rng.standard_normal((2, H)))
    c = ember.tensor(rng.standard_normal((2, H)))
    got = cell(x, (h, c)) if mode == "LSTM" else cell(x, h)
    want = ref_cell(mode, x, h, c if mode == "LSTM" else None, cell.weight_ih, cell.weight_hh, cell.bias_ih,
                    cell.bias_hh, None)
    got = got if mode == "LSTM" else (got,)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.detach().numpy(), w.detach().numpy(), rtol=1e-12, atol=1e-12)
    unbatched = cell(x[0], (h[0], c[0])) if mode == "LSTM" else (cell(x[0], h[0]),)
    for g, u in zip(got, unbatched):
        np.testing.assert_allclose(g[0].detach().numpy(), u.detach().numpy(), rtol=1e-12, atol=1e-12)
    zero = cell(x)
    zero_want = ref_cell(mode, x, 0 * h, 0 * c if mode == "LSTM" else None, cell.weight_ih, cell.weight_hh,
                         cell.bias_ih, cell.bias_hh, None)
    np.testing.assert_allclose((zero[0] if mode == "LSTM" else zero).detach().numpy(),
                               zero_want[0].detach().numpy(), rtol=1e-12, atol=1e-12)


@needs_torch
@pytest.mark.parametrize("cls", ["RNNCell", "LSTMCell", "GRUCell"])
@pytest.mark.parametrize("kw", [{}, {"bias": False}], ids=["bias", "nobias"])
def test_cells_match_torch(cls, kw):
    if cls == "RNNCell":
        kw = {**kw, "nonlinearity": "relu"}
    tc = getattr(torch.nn, cls)(I, H, **kw).double()
    ec = getattr(nn, cls)(I, H, **kw).double()
    ec.load_state_dict({k: to_ember(v) for k, v in tc.state_dict().items()})
    rng = np.random.default_rng(9)
    x, h = rng.standard_normal((4, I)), rng.standard_normal((4, H))
    results = []
    for lib, cell in ((torch, tc), (ember, ec)):
        xt, ht = lib.tensor(x, requires_grad=True), lib.tensor(h, requires_grad=True)
        out = cell(xt, (ht, ht * 0.5)) if cls == "LSTMCell" else cell(xt, ht)
        outs = list(out) if isinstance(out, tuple) else [out]
        sum((o * (k + 1)).sum() for k, o in enumerate(outs)).backward()
        grads = [xt.grad, ht.grad] + [p.grad for p in cell.parameters()]
        results.append([t.detach().numpy() for t in outs + grads])
    for e, t in zip(results[1], results[0]):
        np.testing.assert_allclose(e, t, rtol=1e-10, atol=1e-12)


# ---------------------------------------------------------------- parameters, init, repr
def test_parameter_names_shapes_and_init_bounds():
    m = nn.LSTM(7, 6, num_layers=2, bidirectional=True, proj_size=2)
    shapes = {k: tuple(v.shape) for k, v in m.named_parameters()}
    assert shapes["weight_ih_l0"] == (24, 7) and shapes["weight_hh_l0"] == (24, 2)
    assert shapes["weight_ih_l1_reverse"] == (24, 4) and shapes["weight_hr_l1_reverse"] == (2, 6)
    assert shapes["bias_ih_l1"] == (24,) and len(shapes) == 20
    bound = 1 / math.sqrt(6)
    for p in m.parameters():
        assert p.abs().max().item() <= bound and p.std().item() > bound / 4
    g = nn.GRU(4, 3, bias=False)
    assert [k for k, _ in g.named_parameters()] == ["weight_ih_l0", "weight_hh_l0"]
    assert tuple(g.weight_ih_l0.shape) == (9, 4)
    assert len(g.all_weights) == 1 and len(g.all_weights[0]) == 2
    g.flatten_parameters()  # a no-op, as PyTorch's on the CPU


@needs_torch
def test_reprs_and_state_dict_keys_match_torch():
    modules = [("RNN", (3, 4), {"nonlinearity": "relu"}),
               ("RNN", (3, 4, 2), {"bias": False, "batch_first": True, "dropout": 0.5, "bidirectional": True}),
               ("LSTM", (3, 4), {"proj_size": 2}), ("GRU", (3, 4), {"num_layers": 3}),
               ("RNNCell", (3, 4), {"nonlinearity": "relu", "bias": False}), ("LSTMCell", (3, 4), {}),
               ("GRUCell", (3, 4), {"bias": False})]
    for name, args, kw in modules:
        t, e = getattr(torch.nn, name)(*args, **kw), getattr(nn, name)(*args, **kw)
        assert repr(e) == repr(t)
        assert list(e.state_dict()) == list(t.state_dict())


def test_dropout_between_layers_only_in_training():
    ember.manual_seed(11)
    m = nn.GRU(I, H, num_layers=2, dropout=0.5).double()
    x = ember.tensor(np.random.default_rng(0).standard_normal((4, 2, I)))
    m.eval()
    a, b = m(x)[0], m(x)[0]
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    np.testing.assert_allclose(a.detach().numpy(), ref_module(m, x)[0].detach().numpy(), rtol=1e-12, atol=1e-12)
    m.train()
    c, d = m(x)[0], m(x)[0]
    assert not np.allclose(c.detach().numpy(), d.detach().numpy())
    # The last layer's output is not dropped: the first layer alone (no dropout) is deterministic.
    one = nn.GRU(I, H, num_layers=1).double()
    np.testing.assert_array_equal(one(x)[0].detach().numpy(), one(x)[0].detach().numpy())


# ---------------------------------------------------------------- errors, as PyTorch's
def test_constructor_errors():
    with pytest.raises(ValueError, match=r"Unknown nonlinearity 'x'. Select from 'tanh' or 'relu'."):
        nn.RNN(3, 4, nonlinearity="x")
    with pytest.raises(ValueError, match="proj_size argument is only supported for LSTM, not RNN or GRU"):
        nn.GRU(3, 4, proj_size=2)
    with pytest.raises(ValueError, match="proj_size has to be smaller than hidden_size"):
        nn.LSTM(3, 4, proj_size=4)
    with pytest.raises(ValueError, match="dropout should be a number in range"):
        nn.LSTM(3, 4, dropout=1.5)
    with pytest.raises(ValueError, match="hidden_size must be greater than zero"):
        nn.LSTM(3, 0)
    with pytest.raises(TypeError, match="hidden_size should be of type int, got: float"):
        nn.LSTM(3, 4.0)
    with pytest.raises(ValueError, match="num_layers must be greater than zero"):
        nn.LSTM(3, 4, 0)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        nn.LSTM(3, 4, dropout=0.5)
    assert "non-zero dropout expects num_layers greater than 1" in str(w[0].message)


@pytest.mark.parametrize("cls", ["RNN", "LSTM", "GRU"])
def test_forward_errors(cls):
    m = getattr(nn, cls)(3, 4)
    lstm = cls == "LSTM"
    kind = " tensor" if cls == "RNN" else ""
    with pytest.raises(ValueError, match=f"{cls}: Expected input to be 2D or 3D, got 4D{kind} instead"):
        m(ember.randn(2, 3, 4, 3))
    with pytest.raises(RuntimeError, match="input.size\\(-1\\) must be equal to input_size. Expected 3, got 4"):
        m(ember.randn(2, 3, 4))
    with pytest.raises(ValueError, match=r"RNN input dtype \(ember.float64\) does not match weight dtype"):
        m(ember.randn(2, 3, dtype=ember.float64))
    bad = (ember.randn(1, 4), ember.randn(1, 1, 4)) if lstm else ember.randn(1, 1, 4)
    msg = "hx and cx should also be 2-D but got \\(2-D, 3-D\\)" if lstm else "hx should also be 2-D but got 3-D"
    with pytest.raises(RuntimeError, match=f"For unbatched 2-D input, {msg}"):
        m(ember.randn(2, 3), bad)
    wrong = (ember.randn(1, 3, 4), ember.randn(1, 3, 4)) if lstm else ember.randn(1, 3, 4)
    label = "hidden\\[0\\] size" if lstm else "hidden size"
    with pytest.raises(RuntimeError, match=f"Expected {label} \\(1, 2, 4\\), got \\[1, 3, 4\\]"):
        m(ember.randn(5, 2, 3), wrong)


@pytest.mark.parametrize("cls", ["RNNCell", "LSTMCell", "GRUCell"])
def test_cell_errors(cls):
    c = getattr(nn, cls)(3, 4)
    with pytest.raises(ValueError, match=f"{cls}: Expected input to be 1D or 2D, got 3D instead"):
        c(ember.randn(2, 3, 3))
    with pytest.raises(RuntimeError, match="input has inconsistent input_size: got 5 expected 3"):
        c(ember.randn(2, 5))
    h = ember.randn(3, 4)
    with pytest.raises(RuntimeError, match="Input batch size 2 doesn't match hidden0 batch size 3"):
        c(ember.randn(2, 3), (h, h) if cls == "LSTMCell" else h)
    which = "hx\\[0\\]" if cls == "LSTMCell" else "hidden"
    h3 = ember.randn(2, 3, 4)
    with pytest.raises(ValueError, match=f"{cls}: Expected {which} to be 1D or 2D, got 3D instead"):
        c(ember.randn(2, 3), (h3, h3) if cls == "LSTMCell" else h3)


def test_double_backward_through_two_layers_matches_reference():
    # create_graph: the kernel's gradient falls back to the ember-ops rerun, whose gradient is
    # differentiated again (the second layer's input is a non-leaf: the first layer's output).
    ember.manual_seed(12)
    m = nn.LSTM(I, 4, num_layers=2, proj_size=2).double()
    x = ember.tensor(np.random.default_rng(13).standard_normal((3, 2, I)), requires_grad=True)
    params = list(m.parameters()) + [x]

    def penalty(out):
        grads = ember.autograd.grad([(out * out).sum()], params, create_graph=True)
        return sum((g * g).sum() for g in grads)

    got = ember.autograd.grad([penalty(m(x)[0])], params)
    want = ember.autograd.grad([penalty(ref_module(m, x)[0])], params)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-9, atol=1e-11)
