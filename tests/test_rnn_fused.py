"""The fused recurrent layer kernel (issue 12, point 4): ember._rnn_fused and its backward
against a slow reference written here in ember ops (one sequence at a time, so independent
of the kernel's packed-row bookkeeping), for every cell type, with and without biases and an
LSTM projection, both directions, packed layouts, at 1-3 threads and around the parallel
threshold; float64 gradcheck, gradgradcheck (through the ember-ops rerun) and forward-mode AD."""
import numpy as np
import pytest

import ember
from ember.autograd import gradcheck, gradgradcheck

MODES = ["RNN_TANH", "RNN_RELU", "LSTM", "GRU"]
GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}
GRAIN = ember._C._thresholds()["rnn_gate_grain"]


def ref_cell(mode, x, h, c, w_ih, w_hh, b_ih, b_hh, w_hr):
    """One step of one sequence (x: (1, I)) in plain ember ops; returns (h', c')."""
    gi = x @ w_ih.t() + (b_ih if b_ih is not None else 0)
    gh = h @ w_hh.t() + (b_hh if b_hh is not None else 0)
    if mode == "LSTM":
        i, f, g, o = (gi + gh).chunk(4, 1)
        c = f.sigmoid() * c + i.sigmoid() * g.tanh()
        h = o.sigmoid() * c.tanh()
        return (h @ w_hr.t() if w_hr is not None else h), c
    if mode == "GRU":
        ir, iz, in_ = gi.chunk(3, 1)
        hr, hz, hn = gh.chunk(3, 1)
        r, z = (ir + hr).sigmoid(), (iz + hz).sigmoid()
        n = (in_ + r * hn).tanh()
        return (1 - z) * n + z * h, None
    a = gi + gh
    return (a.tanh() if mode == "RNN_TANH" else a.relu()), None


def ref_layer(input, hx, cx, w_ih, w_hh, b_ih, b_hh, w_hr, batch_sizes, mode, reverse):
    """_rnn_fused's `states`, sequence by sequence."""
    offsets = np.concatenate([[0], np.cumsum(batch_sizes)[:-1]])
    rows = {}
    for b in range(batch_sizes[0]):
        steps = [t for t in range(len(batch_sizes)) if batch_sizes[t] > b]
        h, c = hx[b:b + 1], (cx[b:b + 1] if cx is not None else None)
        for t in (reversed(steps) if reverse else steps):
            r = int(offsets[t]) + b
            h, c = ref_cell(mode, input[r:r + 1], h, c, w_ih, w_hh, b_ih, b_hh, w_hr)
            rows[r] = ember.cat([h, c], 1) if c is not None else h
    return ember.cat([rows[r] for r in range(len(rows))])


def make_args(rng, mode, batch_sizes, I=3, H=4, proj=0, bias=True, dtype=ember.float64):
    G, N, B = GATES[mode], sum(batch_sizes), batch_sizes[0]
    hout = proj or H

    def t(*shape):
        return ember.tensor(rng.uniform(-0.8, 0.8, shape), dtype=dtype)

    return [t(N, I), t(B, hout), t(B, H) if mode == "LSTM" else None, t(G * H, I), t(G * H, hout),
            t(G * H) if bias else None, t(G * H) if bias else None, t(hout, H) if proj else None]


CASES = [(mode, sizes, reverse, bias, proj)
         for mode in MODES
         for sizes in ([3, 3, 3, 3], [4, 3, 3, 1], [2])
         for reverse in (False, True)
         for bias, proj in ((True, 0), (False, 0)) + (((True, 2),) if mode == "LSTM" else ())]


def case_id(c):
    mode, sizes, reverse, bias, proj = c
    return f"{mode}-{'x'.join(map(str, sizes))}-{'rev' if reverse else 'fwd'}-{'b' if bias else 'nob'}-p{proj}"


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_forward_and_gradients_match_reference(case):
    mode, sizes, reverse, bias, proj = case
    rng = np.random.default_rng(len(case_id(case)))
    args = make_args(rng, mode, sizes, proj=proj, bias=bias)
    for a in args:
        if a is not None:
            a.requires_grad_(True)
    states, _ = ember._rnn_fused(*args, sizes, mode, reverse)
    expected = ref_layer(*args, sizes, mode, reverse)
    np.testing.assert_allclose(states.detach().numpy(), expected.detach().numpy(), rtol=1e-12, atol=1e-12)
    # The C++ ember-ops rerun (the double-backward fallback) agrees too.
    np.testing.assert_allclose(ember._rnn_reference(*args, sizes, mode, reverse).detach().numpy(),
                               expected.detach().numpy(), rtol=1e-12, atol=1e-12)
    cot = ember.tensor(rng.standard_normal(tuple(states.shape)))
    present = [a for a in args if a is not None]
    got = ember.autograd.grad([states], present, [cot])
    want = ember.autograd.grad([expected], present, [cot])
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("mode", MODES)
def test_gradcheck_gradgradcheck_and_forward_ad(mode):
    rng = np.random.default_rng(3)
    sizes = [3, 2, 2]
    proj = 2 if mode == "LSTM" else 0
    args = make_args(rng, mode, sizes, I=2, H=3, proj=proj)
    present = [i for i, a in enumerate(args) if a is not None]
    for i in present:
        args[i].requires_grad_(True)

    def fn(*xs):
        full = list(args)
        for i, x in zip(present, xs):
            full[i] = x
        return ember._rnn_fused(*full, sizes, mode, True)[0]

    inputs = [args[i] for i in present]
    assert gradcheck(fn, inputs, check_forward_ad=True)
    assert gradgradcheck(fn, inputs)


@pytest.mark.parametrize("mode", MODES)
def test_threads_and_parallel_threshold(threads, mode):
    # Steps whose gate elements (rows x gates x hidden) sit just below, at and above the grain.
    G, H = GATES[mode], 32
    rows_at_grain = max(1, GRAIN // (G * H))
    rng = np.random.default_rng(5)
    for B in sorted({max(1, rows_at_grain - 1), rows_at_grain, rows_at_grain + 1, 2 * rows_at_grain + 3}):
        sizes = [B, B, max(1, B - 2)]
        args = make_args(rng, mode, sizes, I=5, H=H, dtype=ember.float32)
        states, workspace = ember._rnn_fused(*args, sizes, mode, False)
        with ember.no_grad():
            expected = ember._rnn_reference(*args, sizes, mode, False)
        np.testing.assert_allclose(states.numpy(), expected.numpy(), rtol=2e-5, atol=2e-5)
        grad = ember.tensor(rng.standard_normal(tuple(states.shape)), dtype=ember.float32)
        got = ember._rnn_fused_backward(grad, *args, states, workspace, sizes, mode, False)
        # The float64 kernel is the reference for the float32 one's threading.
        args64 = [a.double() if a is not None else None for a in args]
        s64, w64 = ember._rnn_fused(*args64, sizes, mode, False)
        want = ember._rnn_fused_backward(grad.double(), *args64, s64, w64, sizes, mode, False)
        for g, w in zip(got, want):
            if w is not None:
                np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-3, atol=1e-4)


def test_noncontiguous_inputs():
    rng = np.random.default_rng(8)
    sizes = [3, 3, 2]
    args = make_args(rng, "LSTM", sizes, I=4, H=5)
    # Transposed weights and strided rows read as their values.
    strided = [None if a is None else (a.t().contiguous().t() if a.dim() == 2 else a[::1]) for a in args]
    strided[0] = ember.cat([args[0], args[0]], 1)[:, ::2]
    states = ember._rnn_fused(*strided, sizes, "LSTM", False)[0]
    np.testing.assert_allclose(states.numpy(), ref_layer(*strided, sizes, "LSTM", False).numpy(), rtol=1e-12,
                               atol=1e-12)


def test_bad_arguments():
    rng = np.random.default_rng(0)
    args = make_args(rng, "GRU", [2, 2])
    with pytest.raises(ValueError, match="_rnn_fused: unknown recurrent mode 'LSTMX'"):
        ember._rnn_fused(*args, [2, 2], "LSTMX", False)
    with pytest.raises(RuntimeError, match="batch_sizes must be positive and non-increasing"):
        ember._rnn_fused(*args, [1, 3], "GRU", False)
    with pytest.raises(RuntimeError, match=r"expected input of size \[5, input_size\]"):
        ember._rnn_fused(*args, [3, 2], "GRU", False)
    lstm = make_args(rng, "LSTM", [2, 2])
    with pytest.raises(RuntimeError, match="cx is given exactly for an LSTM"):
        ember._rnn_fused(lstm[0], lstm[1], None, *lstm[3:], [2, 2], "LSTM", False)
    with pytest.raises(RuntimeError, match="expected every tensor to have the input's dtype"):
        ember._rnn_fused(*lstm[:3], lstm[3].float(), *lstm[4:], [2, 2], "LSTM", False)
    with pytest.raises(RuntimeError, match="_rnn_fused.* not implemented for 'Long'"):
        ember._rnn_fused(args[0].long(), *args[1:], [2, 2], "GRU", False)


@pytest.mark.skipif(not ember.cuda.is_available(), reason="needs a CUDA GPU")
def test_cuda_slot_raises_naming_op_and_device():
    args = [a.cuda() if a is not None else None for a in make_args(np.random.default_rng(0), "GRU", [2])]
    with pytest.raises(NotImplementedError, match="_rnn_fused: .*not implemented on cuda"):
        ember._rnn_fused(*args, [2], "GRU", False)
    states = ember.zeros(2, 4).cuda()
    with pytest.raises(NotImplementedError, match="_rnn_fused_backward: .*not implemented on cuda"):
        ember._rnn_fused_backward(states, *args, states, ember.zeros(2, 16).cuda(), [2], "GRU", False)


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
def test_composites_gradcheck_and_forward_ad(mode):
    # The ember-ops rerun, the gradient router on its differentiable path and the tangent.
    rng = np.random.default_rng(4)
    sizes = [2, 2, 1]
    args = make_args(rng, mode, sizes, I=2, H=2)
    present = [i for i, a in enumerate(args) if a is not None]
    weights = [args[i].requires_grad_(True) for i in present]

    def with_inputs(xs):
        full = list(args)
        for i, x in zip(present, xs):
            full[i] = x
        return full

    assert gradcheck(lambda *xs: ember._rnn_reference(*with_inputs(xs), sizes, mode, False), weights,
                     check_forward_ad=True)
    states, workspace = ember._rnn_fused(*[a.detach() if a is not None else None for a in args], sizes, mode, False)
    grad = ember.tensor(rng.standard_normal(tuple(states.shape)), requires_grad=True)

    def backward(g, *xs):
        return [r for r in ember._rnn_backward(g, *with_inputs(xs), states, workspace, sizes, mode, False)
                if r is not None]

    assert gradcheck(backward, [grad] + weights, check_forward_ad=True)
    tangents = [ember.tensor(rng.standard_normal(tuple(w.shape)), requires_grad=True) for w in weights]

    def jvp(*ts):
        full_t = with_inputs(ts)
        return ember._rnn_fused_jvp(*full_t, *[a.detach() if a is not None else None for a in args], sizes, mode,
                                    False)

    assert gradcheck(jvp, tangents)


def _higher_order_case(op, mode):
    """(fn, make_inputs, options) for test_higher_order: `op` as a function of the present
    float64 tensors of an LSTM-with-projection or GRU layer (the fused op, its backward, its
    ember-ops rerun and its JVP)."""
    sizes, proj = [3, 2, 2], (2 if mode == "LSTM" else 0)

    def make_inputs():
        args = make_args(np.random.default_rng(5), mode, sizes, I=2, H=3, proj=proj)
        return tuple(a.requires_grad_(True) for a in args if a is not None)

    def full(xs):
        it = iter(xs)
        template = make_args(np.random.default_rng(5), mode, sizes, I=2, H=3, proj=proj)
        return [None if a is None else next(it) for a in template]

    def fn(*xs):
        args = full(xs)
        if op == "_rnn_fused":
            return ember._rnn_fused(*args, sizes, mode, True)[0]
        if op == "_rnn_reference":
            return ember._rnn_reference(*args, sizes, mode, True)
        if op == "_rnn_fused_jvp":  # a function of the tangents (xs squared) at fixed primals: the op detaches
            primals = make_args(np.random.default_rng(6), mode, sizes, I=2, H=3, proj=proj)  # (reverse-over-forward
            return ember._rnn_fused_jvp(*[None if a is None else a * a for a in args], *primals, sizes, mode, True)  # unsupported)
        states, workspace = ember._rnn_fused(*args, sizes, mode, True)
        grads = ember._rnn_backward(states * states, *args, states, workspace, sizes, mode, True)
        return [g for g in grads if g is not None and g.numel()]

    return fn, make_inputs, {}


HIGHER_ORDER_CASES = {op: [_higher_order_case(op, "LSTM"), _higher_order_case(op, "GRU")]
                      for op in ("_rnn_fused", "_rnn_backward", "_rnn_reference", "_rnn_fused_jvp")}


@pytest.mark.parametrize("mode", MODES)
def test_reverse_over_forward_through_the_jvp(mode):
    """The JVP of _rnn_fused keeps its graph to the primals: its tangent equals the ember-ops reference
    layer's, and the gradient by the weights of a function of it matches central differences."""
    import ember.autograd.forward_ad as fwAD
    rng = np.random.default_rng(11)
    sizes = [3, 2, 2]
    proj = 2 if mode == "LSTM" else 0
    args = make_args(rng, mode, sizes, I=2, H=3, proj=proj)
    tangents = [None if a is None else ember.tensor(rng.standard_normal(tuple(a.shape))) for a in args]
    tangents[3] = None  # w_ih: no tangent, a primal that only requires grad
    for a in args[3:]:
        if a is not None:
            a.requires_grad_(True)
    weights = [a for a in args[3:] if a is not None]

    def tangent_of(layer, values):
        with fwAD.dual_level():
            duals = [a if a is None or t is None else fwAD.make_dual(a, t) for a, t in zip(values, tangents)]
            return fwAD.unpack_dual(layer(*duals)).tangent

    def fused(*xs):
        return ember._rnn_fused(*xs, sizes, mode, False)[0]

    tangent = tangent_of(fused, args)
    with ember.no_grad():
        expected = tangent_of(lambda *xs: ref_layer(*xs, sizes, mode, False), args)
    np.testing.assert_allclose(tangent.detach().numpy(), expected.numpy(), rtol=1e-10, atol=1e-12)
    cot = ember.tensor(rng.standard_normal(tuple(tangent.shape)))
    grads = ember.autograd.grad([(tangent * cot).sum()], weights)
    directions = [ember.tensor(rng.standard_normal(tuple(w.shape))) for w in weights]
    eps = 1e-6

    def f(sign):
        with ember.no_grad():
            steps = iter(directions)
            moved = list(args[:3]) + [None if a is None else a + sign * eps * next(steps) for a in args[3:]]
            return float((tangent_of(fused, moved) * cot).sum())
    numeric = (f(1) - f(-1)) / (2 * eps)
    analytic = sum(float((g * d).sum()) for g, d in zip(grads, directions))
    assert abs(numeric - analytic) <= 1e-6 * max(1.0, abs(analytic))
