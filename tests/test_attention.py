"""scaled_dot_product_attention (issue 11): the blocked kernel (no autograd) and the math path
(autograd) against a NumPy reference over masks, causality, GQA, scale, batch shapes and sizes
around the kernel's blocks, at 1, 2 and 3 threads; gradients by gradcheck/gradgradcheck/JVP;
PyTorch's errors."""
import math

import numpy as np
import pytest

import ember
import ember.autograd.forward_ad as fwAD
import ember.nn.functional as F

try:
    import torch
except ImportError:
    torch = None

QUERY_BLOCK, KEY_BLOCK = 64, 256  # aten/src/cpu/attention.cpp's blocks
BACKWARD_QUERY_TILE, BACKWARD_KEY_BLOCK = 64, 128  # aten/src/cpu/attention_backward.cpp's


def np_weights(q, k, mask=None, causal=False, scale=None):
    """float64 attention weights and the scale used; a row with every key masked is all zeros."""
    q, k = q.astype(np.float64), k.astype(np.float64)
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    s = q @ np.swapaxes(k, -1, -2) * scale
    L, S = s.shape[-2:]
    if causal:
        s = np.where(np.tril(np.ones((L, S), bool)), s, -np.inf)
    if mask is not None:
        s = np.where(mask, s, -np.inf) if mask.dtype == bool else s + mask
    m = s.max(-1, keepdims=True)
    dead = np.isneginf(m)
    p = np.exp(s - np.where(dead, 0, m))
    return np.where(dead, 0, p / np.where(dead, 1, p.sum(-1, keepdims=True))), scale


def np_sdpa(q, k, v, mask=None, causal=False, scale=None):
    return np_weights(q, k, mask, causal, scale)[0] @ v.astype(np.float64)


def np_sdpa_grads(q, k, v, g, mask=None, causal=False, scale=None):
    """float64 gradients of sum(sdpa(q, k, v) * g) for q, k, v."""
    p, scale = np_weights(q, k, mask, causal, scale)
    q, k, v, g = (x.astype(np.float64) for x in (q, k, v, g))
    dv = np.swapaxes(p, -1, -2) @ g
    dp = g @ np.swapaxes(v, -1, -2)
    ds = p * (dp - (p * dp).sum(-1, keepdims=True))
    return ds @ k * scale, np.swapaxes(ds, -1, -2) @ q * scale, dv


def run_grads(q, k, v, g, **kw):
    args = [ember.from_numpy(np.ascontiguousarray(x)).requires_grad_() for x in (q, k, v)]
    if "attn_mask" in kw and isinstance(kw["attn_mask"], np.ndarray):
        kw["attn_mask"] = ember.from_numpy(kw["attn_mask"])
    out = F.scaled_dot_product_attention(*args, **kw)
    out.backward(ember.from_numpy(g))
    return out.grad_fn, [a.grad.numpy() for a in args]


def run(q, k, v, grad=False, **kw):
    args = [ember.from_numpy(np.ascontiguousarray(x)) for x in (q, k, v)]
    if "attn_mask" in kw and isinstance(kw["attn_mask"], np.ndarray):
        kw["attn_mask"] = ember.from_numpy(kw["attn_mask"])
    if grad:
        args[0].requires_grad_()
        return F.scaled_dot_product_attention(*args, **kw).detach().numpy()
    with ember.no_grad():
        return F.scaled_dot_product_attention(*args, **kw).numpy()


def randn(rng, *shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


SIZES = [(1, 1), (5, 7), (QUERY_BLOCK, KEY_BLOCK), (QUERY_BLOCK + 1, KEY_BLOCK + 1), (QUERY_BLOCK - 1, KEY_BLOCK - 1),
         (300, 70), (70, 600)]


@pytest.mark.parametrize("L, S", SIZES)
@pytest.mark.parametrize("grad", [False, True], ids=["kernel", "math"])
def test_matches_reference_around_the_blocks(L, S, grad):
    rng = np.random.default_rng(L * 1000 + S)
    q, k, v = randn(rng, 2, 3, L, 16), randn(rng, 2, 3, S, 16), randn(rng, 2, 3, S, 24)
    bool_mask = rng.random((L, S)) > 0.3
    bool_mask[0] = False  # a row with every key masked gives zeros
    for kw, mask in (({}, None), ({"is_causal": True}, None), ({"attn_mask": bool_mask}, bool_mask),
                     ({"scale": 0.7}, None)):
        ref = np_sdpa(q, k, v, mask=mask, causal=kw.get("is_causal", False), scale=kw.get("scale"))
        np.testing.assert_allclose(run(q, k, v, grad=grad, **kw), ref, rtol=1e-4, atol=2e-5)
    float_mask = randn(rng, 3, 1, S)  # broadcast over batch and rows
    ref = np_sdpa(q, k, v, mask=float_mask)
    np.testing.assert_allclose(run(q, k, v, grad=grad, attn_mask=float_mask), ref, rtol=1e-4, atol=2e-5)


def test_float64_layouts_batch_shapes_and_gqa():
    rng = np.random.default_rng(3)
    q, k, v = randn(rng, 4, 100, 32, dtype=np.float64), randn(rng, 4, 90, 32, dtype=np.float64), randn(rng, 4, 90, 8, dtype=np.float64)
    np.testing.assert_allclose(run(q, k, v), np_sdpa(q, k, v), rtol=1e-12, atol=1e-12)
    # non-contiguous inputs: transposed (batch, seq, heads, dim) -> (batch, heads, seq, dim), as attention layers make
    qt, kt, vt = randn(rng, 2, 70, 4, 16), randn(rng, 2, 90, 4, 16), randn(rng, 2, 90, 4, 16)
    with ember.no_grad():
        got = F.scaled_dot_product_attention(*(ember.from_numpy(x).transpose(1, 2) for x in (qt, kt, vt)), is_causal=True)
    ref = np_sdpa(*(np.swapaxes(x, 1, 2) for x in (qt, kt, vt)), causal=True)
    np.testing.assert_allclose(got.numpy(), ref, rtol=1e-4, atol=2e-5)
    # batch dims broadcast; 2-D inputs; GQA shares each key/value head among query heads
    q2, k2, v2 = randn(rng, 2, 1, 20, 8), randn(rng, 1, 3, 30, 8), randn(rng, 1, 3, 30, 8)
    np.testing.assert_allclose(run(q2, k2, v2), np_sdpa(q2, k2, v2), rtol=1e-4, atol=2e-5)
    q3, k3, v3 = randn(rng, 20, 8), randn(rng, 30, 8), randn(rng, 30, 4)
    np.testing.assert_allclose(run(q3, k3, v3, is_causal=True), np_sdpa(q3, k3, v3, causal=True), rtol=1e-4, atol=2e-5)
    qg, kg, vg = randn(rng, 2, 6, 20, 8), randn(rng, 2, 2, 30, 8), randn(rng, 2, 2, 30, 8)
    ref = np_sdpa(qg, np.repeat(kg, 3, axis=1), np.repeat(vg, 3, axis=1))
    np.testing.assert_allclose(run(qg, kg, vg, enable_gqa=True), ref, rtol=1e-4, atol=2e-5)
    np.testing.assert_allclose(run(qg, kg, vg, grad=True, enable_gqa=True), ref, rtol=1e-4, atol=2e-5)
    empty = run(randn(rng, 2, 0, 8), randn(rng, 2, 5, 8), randn(rng, 2, 5, 3))
    assert empty.shape == (2, 0, 3)


def test_realistic_size_at_1_2_3_threads():
    rng = np.random.default_rng(4)
    q, k, v = randn(rng, 2, 4, 512, 64), randn(rng, 2, 4, 512, 64), randn(rng, 2, 4, 512, 64)
    ref = np_sdpa(q, k, v, causal=True)
    threads = ember.get_num_threads()
    try:
        for n in (1, 2, 3):
            ember.set_num_threads(n)
            np.testing.assert_allclose(run(q, k, v, is_causal=True), ref, rtol=1e-4, atol=2e-5)
    finally:
        ember.set_num_threads(threads)


@pytest.mark.parametrize("L, S", [(300, 520), (520, 300), (QUERY_BLOCK * 3 + 1, QUERY_BLOCK * 3 + 1)])
def test_one_batch_entry_split_by_cost_across_threads(threads, L, S):
    """One (batch, head): the kernel splits its query tiles by cost (causal tiles differ), so every thread
    count cuts the rows elsewhere; causal with L != S is top-left aligned (rows past S see every key)."""
    rng = np.random.default_rng(L + S)
    q, k, v = randn(rng, 1, L, 64), randn(rng, 1, S, 64), randn(rng, 1, S, 32)
    bool_mask = rng.random((L, S)) > 0.2
    float_mask = randn(rng, L, S)
    np.testing.assert_allclose(run(q, k, v, is_causal=True), np_sdpa(q, k, v, causal=True), rtol=1e-4, atol=2e-5)
    np.testing.assert_allclose(run(q, k, v, attn_mask=bool_mask), np_sdpa(q, k, v, mask=bool_mask), rtol=1e-4, atol=2e-5)
    np.testing.assert_allclose(run(q, k, v, attn_mask=float_mask), np_sdpa(q, k, v, mask=float_mask),
                               rtol=1e-4, atol=2e-5)


def test_masked_rows_and_extreme_scores():
    """Rows with every key masked give zeros; scores far apart (exp underflows to 0 for all but the max)."""
    rng = np.random.default_rng(11)
    q, k, v = randn(rng, 2, 130, 16) * 30, randn(rng, 2, 300, 16) * 30, randn(rng, 2, 300, 8)
    mask = rng.random((130, 300)) > 0.5
    mask[5] = False
    mask[70, :260] = False  # its keys only in the second key block
    mask[71, 256:] = False  # only in the first
    ref = np_sdpa(q, k, v, mask=mask)
    got = run(q, k, v, attn_mask=mask)
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)
    assert (got[:, 5] == 0).all()
    with ember.no_grad():
        _, lse = ember._sdpa_flash(*(ember.from_numpy(x) for x in (q, k, v)), ember.from_numpy(mask), False, 0.25)
    s = q.astype(np.float64) @ np.swapaxes(k, -1, -2).astype(np.float64) * 0.25
    s = np.where(mask, s, -np.inf)
    m = s.max(-1, keepdims=True)
    with np.errstate(divide="ignore"):  # log(0) = -inf for the masked row
        ref_lse = np.log(np.exp(s - np.where(np.isneginf(m), 0, m)).sum(-1)) + m[..., 0]
    np.testing.assert_allclose(lse.numpy(), ref_lse, rtol=1e-5, atol=1e-4)


BACKWARD_SIZES = [(1, 1), (5, 7), (BACKWARD_QUERY_TILE - 1, BACKWARD_KEY_BLOCK - 1),
                  (BACKWARD_QUERY_TILE, BACKWARD_KEY_BLOCK), (BACKWARD_QUERY_TILE + 1, BACKWARD_KEY_BLOCK + 1),
                  (200, 300), (300, 200)]


@pytest.mark.parametrize("L, S", BACKWARD_SIZES)
def test_flash_gradients_match_reference_around_the_blocks(L, S):
    """With autograd the forward is the flash kernel and its gradient the blocked _sdpa_flash_backward."""
    rng = np.random.default_rng(L * 7 + S)
    q, k, v, g = randn(rng, 2, 3, L, 16), randn(rng, 2, 3, S, 16), randn(rng, 2, 3, S, 24), randn(rng, 2, 3, L, 24)
    bool_mask = rng.random((L, S)) > 0.3
    bool_mask[0] = False  # a row with every key masked has no gradient
    float_mask = randn(rng, 3, 1, S)
    for kw, mask in (({}, None), ({"is_causal": True}, None), ({"attn_mask": bool_mask}, bool_mask),
                     ({"attn_mask": float_mask}, float_mask), ({"scale": 0.7}, None)):
        grad_fn, got = run_grads(q, k, v, g, **kw)
        assert grad_fn.name() == "ScaledDotProductFlashAttentionForCpuBackward0"
        ref = np_sdpa_grads(q, k, v, g, mask=mask, causal=kw.get("is_causal", False), scale=kw.get("scale"))
        for a, b in zip(got, ref):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=5e-5)


@pytest.mark.parametrize("batch, L, S", [(1, 300, 520), (1, 520, 300), (5, 200, 390)])
def test_flash_gradients_across_threads(threads, batch, L, S):
    """Key blocks split by cost over the threads: a batch entry whose blocks land on several threads
    sums its dQ from per-thread buffers."""
    rng = np.random.default_rng(L + S + batch)
    q, k, v, g = randn(rng, batch, L, 64), randn(rng, batch, S, 64), randn(rng, batch, S, 32), randn(rng, batch, L, 32)
    mask = rng.random((L, S)) > 0.2
    for kw, m in (({"is_causal": True}, None), ({"attn_mask": mask}, mask)):
        _, got = run_grads(q, k, v, g, **kw)
        ref = np_sdpa_grads(q, k, v, g, mask=m, causal=kw.get("is_causal", False))
        for a, b in zip(got, ref):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=5e-5)


def test_flash_gradients_through_gqa_broadcast_and_layouts():
    rng = np.random.default_rng(12)
    qg, kg, vg, g = randn(rng, 2, 6, 70, 8), randn(rng, 2, 2, 90, 8), randn(rng, 2, 2, 90, 8), randn(rng, 2, 6, 70, 8)
    _, got = run_grads(qg, kg, vg, g, enable_gqa=True)
    dq, dk, dv = np_sdpa_grads(qg, np.repeat(kg, 3, axis=1), np.repeat(vg, 3, axis=1), g)
    ref = [dq, dk.reshape(2, 2, 3, 90, 8).sum(2), dv.reshape(2, 2, 3, 90, 8).sum(2)]
    for a, b in zip(got, ref):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=5e-5)
    # transposed (batch, seq, heads, dim) inputs and a key/value batch broadcast against the queries'
    q, k, v, g = randn(rng, 2, 70, 4, 16), randn(rng, 1, 90, 4, 16), randn(rng, 1, 90, 4, 16), randn(rng, 2, 4, 70, 16)
    args = [ember.from_numpy(x).requires_grad_() for x in (q, k, v)]
    F.scaled_dot_product_attention(*(a.transpose(1, 2) for a in args), is_causal=True).backward(ember.from_numpy(g))
    dq, dk, dv = np_sdpa_grads(np.swapaxes(q, 1, 2), *(np.broadcast_to(np.swapaxes(x, 1, 2), (2, 4, 90, 16)) for x in (k, v)),
                               g, causal=True)
    for a, b in zip(args, (np.swapaxes(dq, 1, 2), np.swapaxes(dk.sum(0, keepdims=True), 1, 2),
                          np.swapaxes(dv.sum(0, keepdims=True), 1, 2))):
        np.testing.assert_allclose(a.grad.numpy(), b, rtol=1e-4, atol=5e-5)


def test_mask_needing_a_gradient_takes_the_math_path():
    rng = np.random.default_rng(13)
    q, k, v, g = randn(rng, 2, 10, 8), randn(rng, 2, 12, 8), randn(rng, 2, 12, 4), randn(rng, 2, 10, 4)
    mask = ember.from_numpy(randn(rng, 10, 12)).requires_grad_()
    args = [ember.from_numpy(x).requires_grad_() for x in (q, k, v)]
    out = F.scaled_dot_product_attention(*args, attn_mask=mask)
    assert out.grad_fn.name() != "ScaledDotProductFlashAttentionForCpuBackward0"
    out.backward(ember.from_numpy(g))
    ref = np_sdpa_grads(q, k, v, g, mask=mask.detach().numpy())
    for a, b in zip(args, ref):
        np.testing.assert_allclose(a.grad.numpy(), b, rtol=1e-4, atol=5e-5)
    assert mask.grad is not None and mask.grad.shape == (10, 12)


@pytest.mark.skipif(torch is None, reason="needs torch")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_flash_gradients_match_torch_at_a_realistic_size(dtype):
    rng = np.random.default_rng(14)
    q, k, v, g = (randn(rng, 2, 4, 512, 64, dtype=dtype) for _ in range(4))
    _, got = run_grads(q, k, v, g, is_causal=True)
    tq = [torch.from_numpy(x).requires_grad_() for x in (q, k, v)]
    torch.nn.functional.scaled_dot_product_attention(*tq, is_causal=True).backward(torch.from_numpy(g))
    tol = 1e-4 if dtype == np.float32 else 1e-10
    for a, b in zip(got, tq):
        np.testing.assert_allclose(a, b.grad.numpy(), rtol=tol, atol=tol)


def test_flash_backward_kernel_directly_and_its_errors():
    rng = np.random.default_rng(15)
    q, k, v, g = (ember.from_numpy(randn(rng, *s, dtype=np.float64)) for s in ((2, 9, 4), (2, 11, 4), (2, 11, 3), (2, 9, 3)))
    out, lse = ember._sdpa_flash(q, k, v, None, True, 0.5)
    got = ember._sdpa_flash_backward(g, q, k, v, out, lse, None, True, 0.5)
    ref = np_sdpa_grads(q.numpy(), k.numpy(), v.numpy(), g.numpy(), causal=True, scale=0.5)
    for a, b in zip(got, ref):
        np.testing.assert_allclose(a.numpy(), b, rtol=1e-12, atol=1e-12)
    with pytest.raises(RuntimeError, match="_sdpa_flash_backward: grad_out, out or logsumexp does not match"):
        ember._sdpa_flash_backward(g[:, :5], q, k, v, out, lse, None, True, 0.5)
    with pytest.raises(RuntimeError, match="_sdpa_flash_backward: key, value, grad_out, out and logsumexp must have"):
        ember._sdpa_flash_backward(g, q, k.float(), v, out, lse, None, True, 0.5)
    with pytest.raises(RuntimeError, match="_sdpa_flash: query, key and value must have the same dtype"):
        ember._sdpa_flash(q.float(), k, v, None, True, 0.5)
    with pytest.raises(RuntimeError, match="_sdpa_flash_backward: mismatched key or value shape"):
        ember._sdpa_flash_backward(g, q, k, v[:, :5], out, lse, None, True, 0.5)
    empty = ember._sdpa_flash_backward(g[:, :0], q[:, :0], k, v, out[:, :0], lse[:, :0], None, False, 0.5)
    assert [t.shape for t in empty] == [(2, 0, 4), (2, 11, 4), (2, 11, 3)] and not empty[1].abs().sum().item()


def test_flash_jvp_matches_finite_differences():
    """_sdpa_flash's own forward derivative (scaled_dot_product_attention takes the math under forward AD)."""
    q, k, v = _sdpa64((2, 5, 4), (2, 7, 4), (2, 7, 3))
    mask = ember.from_numpy(np.random.default_rng(16).random((5, 7)) > 0.3)
    for m, causal in ((None, True), (mask, False)):
        f = lambda a, b, c: ember._sdpa_flash(a, b, c, m, causal, 0.6)[0]  # noqa: E731
        tangents = [ember.randn(*t.shape, dtype=ember.float64) for t in (q, k, v)]
        primals = [t.detach() for t in (q, k, v)]
        with fwAD.dual_level():
            got = fwAD.unpack_dual(f(*[fwAD.make_dual(p, t) for p, t in zip(primals, tangents)])).tangent.numpy()
        eps = 1e-6
        fd = f(*[p + eps * t for p, t in zip(primals, tangents)]) - f(*[p - eps * t for p, t in zip(primals, tangents)])
        np.testing.assert_allclose(got, fd.numpy() / (2 * eps), rtol=1e-6, atol=1e-7)


def test_half_precision_and_dropout_take_the_math_path():
    rng = np.random.default_rng(5)
    q, k, v = randn(rng, 2, 10, 8), randn(rng, 2, 12, 8), randn(rng, 2, 12, 8)
    got = F.scaled_dot_product_attention(*(ember.from_numpy(x).to(ember.bfloat16) for x in (q, k, v)))
    assert got.dtype == ember.bfloat16
    np.testing.assert_allclose(got.to(ember.float32).numpy(), np_sdpa(q, k, v), rtol=0.05, atol=0.05)
    ones = ember.ones(2, 12, 12)
    out = F.scaled_dot_product_attention(ember.zeros(2, 10, 8), ember.zeros(2, 12, 8), ones, dropout_p=0.5)
    vals = np.unique(out.numpy())  # uniform weights 1/12, dropped or scaled by 2, summed over 12 ones
    assert out.shape == (2, 10, 12) and vals.min() >= 0 and vals.max() <= 2 + 1e-5 and len(vals) > 3


def _sdpa64(*shapes, **kw):
    rng = np.random.default_rng(6)
    return [ember.tensor(rng.standard_normal(s), dtype=ember.float64, requires_grad=True) for s in shapes]


def _sdpa_backward_flat(g, q, k, v):
    """_sdpa_backward's three gradients in one vector (its out and logsumexp are not differentiated)."""
    out, lse = ember._sdpa_flash(q.detach(), k.detach(), v.detach(), None, True, 0.5)
    return ember.cat([t.reshape(-1) for t in ember._sdpa_backward(g, q, k, v, out, lse, None, True, 0.5)])


# For tests/test_higher_order.py's gradgradcheck and test_forward_ad.py's list of JVP checks (made here).
ATTENTION_CASES = {"scaled_dot_product_attention": [
    (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), lambda: tuple(_sdpa64((2, 3, 4), (2, 5, 4), (2, 5, 3))), {})],
    "_sdpa_flash": [
    (lambda q, k, v: ember._sdpa_flash(q, k, v, None, True, 0.5)[0], lambda: tuple(_sdpa64((2, 3, 4), (2, 5, 4), (2, 5, 3))), {}),
    (lambda q, k, v: ember._sdpa_flash(q, k, v, ember.tensor([[True, False, True], [False, False, False]]), False, 0.8)[0],
     lambda: tuple(_sdpa64((1, 2, 4), (1, 3, 4), (1, 3, 2))), {})],
    "_sdpa_backward": [(_sdpa_backward_flat, lambda: tuple(_sdpa64((2, 3, 2), (2, 3, 4), (2, 5, 4), (2, 5, 2))), {})],
    "_sdpa_flash_jvp": [
    (lambda qt, kt, vt, q: ember._sdpa_flash_jvp(qt, kt, vt, q, q[:, :2] * 2, q[:, 1:, :3], None, True, 0.5),
     lambda: tuple(_sdpa64((2, 3, 4), (2, 2, 4), (2, 2, 3), (2, 3, 4))), {})]}


@pytest.mark.parametrize("kw", [{}, {"is_causal": True}, {"scale": 0.5},
                                {"attn_mask": np.array([[True, False, True, True], [False, False, False, False],
                                                        [True, True, True, False]])}])
def test_gradcheck_gradgradcheck_and_jvp(kw):
    kw = dict(kw)
    if "attn_mask" in kw:
        kw["attn_mask"] = ember.from_numpy(kw["attn_mask"])
    q, k, v = _sdpa64((2, 3, 5), (2, 4, 5), (2, 4, 2))
    f = lambda a, b, c: F.scaled_dot_product_attention(a, b, c, **kw)  # noqa: E731
    assert ember.autograd.gradcheck(f, (q, k, v))
    assert ember.autograd.gradgradcheck(f, (q, k, v))
    tangents = [ember.randn(*t.shape, dtype=ember.float64) for t in (q, k, v)]
    primals = [t.detach() for t in (q, k, v)]
    with fwAD.dual_level():
        got = fwAD.unpack_dual(f(*[fwAD.make_dual(p, t) for p, t in zip(primals, tangents)])).tangent.numpy()
    eps = 1e-6
    fd = (f(*[p + eps * t for p, t in zip(primals, tangents)]) - f(*[p - eps * t for p, t in zip(primals, tangents)]))
    np.testing.assert_allclose(got, fd.numpy() / (2 * eps), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name, case", [(n, c) for n, cases in ATTENTION_CASES.items() for c in cases])
def test_attention_cases_jvp(name, case):
    """The JVPs of the ops of ATTENTION_CASES (tests/test_forward_ad.py leaves them to this file)."""
    f, make, _ = case
    primals = [t.detach() for t in make()]
    tangents = [ember.randn(*t.shape, dtype=ember.float64) for t in primals]
    with fwAD.dual_level():
        got = fwAD.unpack_dual(f(*[fwAD.make_dual(p, t) for p, t in zip(primals, tangents)])).tangent.numpy()
    eps = 1e-6
    fd = f(*[p + eps * t for p, t in zip(primals, tangents)]) - f(*[p - eps * t for p, t in zip(primals, tangents)])
    np.testing.assert_allclose(got, fd.numpy() / (2 * eps), rtol=1e-6, atol=1e-7)


def test_errors():
    q, k, v = ember.randn(2, 4, 8), ember.randn(2, 5, 8), ember.randn(2, 5, 6)
    with pytest.raises(RuntimeError, match="Explicit attn_mask should not be set when is_causal=True"):
        F.scaled_dot_product_attention(q, k, v, attn_mask=ember.ones(4, 5, dtype=ember.bool), is_causal=True)
    with pytest.raises(RuntimeError, match="Expected query, key, and value to have the same dtype, but got "
                                           "query.dtype: double key.dtype: float and value.dtype: float instead."):
        F.scaled_dot_product_attention(q.double(), k, v)
    with pytest.raises(RuntimeError, match=r"query's last dim \(8\) must equal key's \(7\)"):
        F.scaled_dot_product_attention(q, ember.randn(2, 5, 7), v)
    with pytest.raises(RuntimeError, match="must divide the number of heads in query"):
        F.scaled_dot_product_attention(ember.randn(1, 3, 4, 8), ember.randn(1, 2, 5, 8), ember.randn(1, 2, 5, 8),
                                       enable_gqa=True)
    with pytest.raises(RuntimeError, match=r"The size of tensor a \(3\) must match the size of tensor b \(2\) at non-singleton dimension 1"):
        F.scaled_dot_product_attention(ember.randn(2, 3, 4, 8), ember.randn(2, 2, 5, 8), ember.randn(2, 2, 5, 8))


@pytest.mark.skipif(torch is None, reason="needs torch")
def test_matches_torch():
    rng = np.random.default_rng(7)
    q, k, v = randn(rng, 2, 4, 70, 16), randn(rng, 2, 4, 90, 16), randn(rng, 2, 4, 90, 16)
    mask = rng.random((70, 90)) > 0.5
    for kw in ({}, {"is_causal": True}, {"attn_mask": mask}):
        tkw = {key: torch.from_numpy(val) if isinstance(val, np.ndarray) else val for key, val in kw.items()}
        ref = torch.nn.functional.scaled_dot_product_attention(*(torch.from_numpy(x) for x in (q, k, v)), **tkw)
        np.testing.assert_allclose(run(q, k, v, **kw), ref.numpy(), rtol=1e-4, atol=2e-5)


@pytest.mark.skipif(not ember.cuda.is_available(), reason="needs a CUDA GPU")
def test_cuda_slot_raises_naming_op_and_device():
    q = ember.randn(2, 4, 8).cuda()
    with pytest.raises(NotImplementedError, match="_sdpa_flash: .*not implemented on cuda"):
        ember._sdpa_flash(q, q, q, None, False, 1.0)
    lse = ember.zeros(2, 4).cuda()
    with pytest.raises(NotImplementedError, match="_sdpa_flash_backward: .*not implemented on cuda"):
        ember._sdpa_flash_backward(q, q, q, q, q, lse, None, False, 1.0)
