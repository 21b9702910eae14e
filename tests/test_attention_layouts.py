"""The flash attention kernels read strided operands in place (the [B, H, L, E] views of a fused qkv
projection), lay their output out as the query (as PyTorch's CPU flash kernel: [B, L, H, E] storage) and each
gradient as its input; layouts BLAS cannot read (non-unit column stride, overlapping rows) are copied first.
Checked against NumPy and PyTorch around the kernels' blocks, at 1, 2 and 3 threads."""
import numpy as np
import pytest

import ember
import ember.nn.functional as F
from test_attention import BACKWARD_KEY_BLOCK, KEY_BLOCK, QUERY_BLOCK, np_sdpa, np_sdpa_grads, randn

try:
    import torch
except ImportError:
    torch = None

LENGTHS = [1, QUERY_BLOCK - 1, QUERY_BLOCK, QUERY_BLOCK + 1, BACKWARD_KEY_BLOCK, BACKWARD_KEY_BLOCK + 1,
           KEY_BLOCK + 1]


def test_lengths_straddle_the_parallel_threshold():
    """The kernels run serially below _thresholds()['parallel_gemm_work'] multiply-adds (causal: half of
    batch * L * S * (E + Ev) forward, twice that backward); LENGTHS (batch 6, head dim 8) cover both sides."""
    limit = ember._C._thresholds()["parallel_gemm_work"]
    work = [6 * n * n * 16 // 2 for n in LENGTHS]
    assert min(work) < limit // 2 and max(work) > limit
    assert any(limit // 2 <= w < limit for w in work)  # forward serial, backward parallel


def qkv_attention(lib, x, heads, causal):
    """GPT's attention on a [B, L, 3 C] projection: the split's [B, H, L, E] views go straight in."""
    b, n, c3 = x.shape
    c = c3 // 3
    q, k, v = (z.view(b, n, heads, c // heads).transpose(1, 2) for z in x.split(c, dim=2))
    return lib.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)


def np_qkv_attention(x, heads, causal, g):
    """Output and the gradient of x (for output gradient g) of qkv_attention, in float64."""
    b, n, c3 = x.shape
    c = c3 // 3
    q, k, v = (np.swapaxes(z.reshape(b, n, heads, c // heads), 1, 2) for z in np.split(x, 3, axis=2))
    grads = np_sdpa_grads(q, k, v, g, causal=causal)
    return np_sdpa(q, k, v, causal=causal), np.concatenate([np.swapaxes(d, 1, 2).reshape(b, n, c) for d in grads], 2)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", LENGTHS)
def test_fused_qkv_views_read_in_place(threads, dtype, n):
    rng = np.random.default_rng(n)
    heads, e = 3, 8
    x, g = randn(rng, 2, n, 3 * heads * e, dtype=dtype), randn(rng, 2, heads, n, e, dtype=dtype)
    tol = 2e-4 if dtype == np.float32 else 1e-10
    for causal in (True, False):
        xe = ember.from_numpy(x).requires_grad_()
        y = qkv_attention(ember, xe, heads, causal)
        assert y.grad_fn.name() == "ScaledDotProductFlashAttentionForCpuBackward0"
        # laid out as the query: merging the heads back is a view, as in PyTorch
        assert y.stride() == (n * heads * e, e, heads * e, 1)
        merged = y.transpose(1, 2).reshape(2, n, heads * e)
        assert merged.data_ptr() == y.data_ptr()
        y.backward(ember.from_numpy(g))
        ref_y, ref_dx = np_qkv_attention(x, heads, causal, g)
        np.testing.assert_allclose(y.detach().numpy(), ref_y, rtol=tol, atol=tol)
        np.testing.assert_allclose(xe.grad.numpy(), ref_dx, rtol=tol, atol=tol)


@pytest.mark.skipif(torch is None, reason="needs torch")
def test_gpt_shape_matches_torch(threads):
    """The bench's GPT attention (batch 16, 4 heads, 128 positions, head dim 64): values, strides, gradients."""
    rng = np.random.default_rng(3)
    x, g = randn(rng, 16, 128, 768), randn(rng, 16, 4, 128, 64)
    xe, xt = ember.from_numpy(x).requires_grad_(), torch.from_numpy(x).requires_grad_()
    ye, yt = qkv_attention(ember, xe, 4, True), qkv_attention(torch, xt, 4, True)
    assert ye.stride() == yt.stride()
    np.testing.assert_allclose(ye.detach().numpy(), yt.detach().numpy(), rtol=1e-4, atol=1e-5)
    ye.backward(ember.from_numpy(g))
    yt.backward(torch.from_numpy(g))
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=1e-4, atol=1e-5)
    ref_y, ref_dx = np_qkv_attention(x, 4, True, g)
    np.testing.assert_allclose(ye.detach().numpy(), ref_y, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(xe.grad.numpy(), ref_dx, rtol=1e-4, atol=1e-5)


def test_layouts_blas_cannot_read_are_copied(threads):
    """A query with unit row stride (columns apart), keys whose rows overlap and values broadcast over the batch."""
    rng = np.random.default_rng(4)
    qt, kbase, v1, g = randn(rng, 2, 3, 8, 65), randn(rng, 2, 3, 80), randn(rng, 1, 3, 70, 5), randn(rng, 2, 3, 65, 5)
    q = ember.from_numpy(qt).transpose(-1, -2)  # [2, 3, 65, 8], column stride 65
    kb = ember.from_numpy(kbase)
    k = kb.as_strided((2, 3, 70, 8), (240, 80, 1, 1))  # row j is kbase[..., j:j + 8]: rows overlap
    v = ember.from_numpy(v1).expand(2, 3, 70, 5)  # batch stride 0
    k_np = np.lib.stride_tricks.sliding_window_view(kbase, 8, axis=-1)[:, :, :70]
    v_np = np.broadcast_to(v1, (2, 3, 70, 5))
    q_np = np.swapaxes(qt, -1, -2)
    for causal in (True, False):
        args = [t.detach().requires_grad_() for t in (q, k, v)]
        out = F.scaled_dot_product_attention(*args, is_causal=causal)
        np.testing.assert_allclose(out.detach().numpy(), np_sdpa(q_np, k_np, v_np, causal=causal), rtol=1e-4, atol=2e-5)
        out.backward(ember.from_numpy(g))
        for got, ref in zip(args, np_sdpa_grads(q_np, k_np, v_np, g, causal=causal)):
            np.testing.assert_allclose(got.grad.numpy(), ref, rtol=1e-4, atol=2e-5)


def test_backward_kernel_reads_strided_grad_and_output(threads):
    """_sdpa_flash_backward called directly with every operand strided, in float64."""
    rng = np.random.default_rng(5)
    x = ember.from_numpy(randn(rng, 3, 130, 4, 3 * 16, dtype=np.float64))
    q, k, v = (t.transpose(1, 2) for t in x.split(16, dim=3))  # [3, 4, 130, 16]; rows 192 apart
    out, lse = ember._sdpa_flash(q, k, v, None, True, 0.3)
    assert out.stride() == (130 * 4 * 16, 16, 4 * 16, 1)
    gbase = ember.from_numpy(randn(rng, 3, 130, 4, 32, dtype=np.float64))
    g = gbase[..., 5:21].transpose(1, 2)
    got = ember._sdpa_flash_backward(g, q, k, v, out, lse, None, True, 0.3)
    qn, kn, vn, gn = (t.numpy() for t in (q, k, v, g))
    np.testing.assert_allclose(out.numpy(), np_sdpa(qn, kn, vn, causal=True, scale=0.3), rtol=1e-12, atol=1e-12)
    for a, b, like in zip(got, np_sdpa_grads(qn, kn, vn, gn, causal=True, scale=0.3), (q, k, v)):
        assert a.stride() == out.stride()  # each gradient laid out as its input ([B, L, H, E] storage)
        np.testing.assert_allclose(a.numpy(), b, rtol=1e-11, atol=1e-12)


def test_gradcheck_through_qkv_views():
    rng = np.random.default_rng(6)
    x = ember.tensor(rng.standard_normal((2, 5, 3 * 2 * 3)), dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(lambda t: qkv_attention(ember, t, 2, True), (x,))
    assert ember.autograd.gradcheck(lambda t: qkv_attention(ember, t, 2, False), (x,))
