"""Normalization functionals and embeddings (issue 11): layer_norm and batch_norm's fused CPU
kernels (values, gradients and running stats against PyTorch and NumPy, at realistic sizes and
1, 2, 3 threads), group_norm, instance_norm, rms_norm, embedding (padding_idx, max_norm,
scale_grad_by_freq), embedding_bag, one_hot; their errors; JVPs. The float64 gradcheck and
gradgradcheck of GRAD_CASES run in tests/test_higher_order.py (the harness cannot sample these ops)."""
import numpy as np
import pytest

import ember
import ember.nn.functional as F
from harness.forward_ad import assert_jvp_matches_finite_differences

try:
    import torch
    import torch.nn.functional as TF
except ImportError:  # the torch comparisons are skipped without it
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="needs PyTorch")
needs_gpu = pytest.mark.skipif(not ember.cuda.is_available(), reason="needs a CUDA GPU")
GRAIN = ember._C._thresholds()["grain_size"]
F64 = ember.float64
RNG = np.random.default_rng(11)


def arr(*shape, dtype=np.float64):
    return RNG.standard_normal(shape).astype(dtype)


def em(a, grad=False):
    return ember.tensor(a, requires_grad=grad)


def th(a, grad=False):
    return torch.tensor(a, requires_grad=grad)


def close(x, y, rtol=1e-5, atol=1e-6):
    y = y.detach().numpy() if torch is not None and isinstance(y, torch.Tensor) else y
    np.testing.assert_allclose(x.detach().float().numpy() if x.dtype in (ember.float16, ember.bfloat16)
                               else x.detach().numpy(), np.asarray(y, dtype=np.float64) if np.asarray(y).dtype.kind == "f"
                               and x.dtype == F64 else y, rtol=rtol, atol=atol)


def backward_both(out, tout, g, pairs, **tol):
    """Backpropagates g through ember's and torch's outputs and compares each pair of leaves' grads."""
    out.backward(em(g))
    tout.backward(th(g))
    for e, t in pairs:
        close(e.grad, t.grad, **tol)


def np_layer_norm(x, nd, w=None, b=None, eps=1e-5):
    axes = tuple(range(x.ndim - nd, x.ndim))
    y = (x - x.mean(axes, keepdims=True)) / np.sqrt(x.var(axes, keepdims=True) + eps)
    return y * (1 if w is None else w) + (0 if b is None else b)


# ---------------------------------------------------------------- layer_norm

@pytest.mark.parametrize("shape,nd", [((4, 6), 1), ((2, 3, 5), 2), ((3, 1, 7), 1), ((2, 2, 3, 4), 3)])
@pytest.mark.parametrize("affine", [(True, True), (True, False), (False, True), (False, False)])
def test_layer_norm_matches_numpy_and_torch(shape, nd, affine):
    x = arr(*shape)
    ns = list(shape[-nd:])
    w = arr(*ns) if affine[0] else None
    b = arr(*ns) if affine[1] else None
    got = F.layer_norm(em(x), ns, None if w is None else em(w), None if b is None else em(b))
    close(got, np_layer_norm(x, nd, w, b), rtol=1e-10, atol=1e-12)
    if torch is not None:
        want = TF.layer_norm(th(x), ns, None if w is None else th(w), None if b is None else th(b))
        close(got, want, rtol=1e-12, atol=1e-12)


@needs_torch
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_layer_norm_gradients_match_torch(dtype):
    x, w, b, g = arr(5, 3, 8, dtype=dtype), arr(8, dtype=dtype), arr(8, dtype=dtype), arr(5, 3, 8, dtype=dtype)
    ex, ew, eb = em(x, True), em(w, True), em(b, True)
    tx, tw, tb = th(x, True), th(w, True), th(b, True)
    F.layer_norm(ex, [8], ew, eb).backward(em(g))
    TF.layer_norm(tx, [8], tw, tb).backward(th(g))
    tol = dict(rtol=1e-4, atol=1e-5) if dtype == "float32" else dict(rtol=1e-10, atol=1e-12)
    for e, t in ((ex, tx), (ew, tw), (eb, tb)):
        close(e.grad, t.grad, **tol)


@needs_torch
def test_layer_norm_noncontiguous_and_native_outputs():
    x = arr(6, 4)
    ex = em(x).t()  # (4, 6), transposed
    out, mean, rstd = ember.native_layer_norm(ex, [6], None, None, 1e-5)
    tout, tmean, trstd = torch.native_layer_norm(th(x).t(), [6], None, None, 1e-5)
    assert tuple(mean.shape) == tuple(tmean.shape) == (4, 1)
    for e, t in ((out, tout), (mean, tmean), (rstd, trstd)):
        close(e, t, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_layer_norm_half_types_compute_in_float(dtype):
    x = arr(8, 64, dtype=np.float32)
    got = F.layer_norm(em(x).to(getattr(ember, dtype)), [64])
    assert got.dtype == getattr(ember, dtype)
    tol = 2e-3 if dtype == "float16" else 2e-2
    close(got, np_layer_norm(x.astype(np.float64), 1), rtol=tol, atol=tol * 4)


def test_layer_norm_errors():
    x = em(arr(2, 3, 4))
    with pytest.raises(RuntimeError, match=r"Given normalized_shape=\[3\], expected input with shape \[\*, 3\], "
                                           r"but got input of size\[2, 3, 4\]"):
        F.layer_norm(x, [3])
    with pytest.raises(RuntimeError, match=r"Expected weight to be of same shape as normalized_shape, but got "
                                           r"weight of shape \[3\] and normalized_shape = \[4\]"):
        F.layer_norm(x, [4], em(arr(3)))
    with pytest.raises(RuntimeError, match=r"Expected bias to be of same shape"):
        F.layer_norm(x, [4], em(arr(4)), em(arr(2)))
    with pytest.raises(RuntimeError, match="at least 1-dimensional"):
        F.layer_norm(x, [])
    with pytest.raises(RuntimeError, match="native_layer_norm: expected weight to have the input's dtype"):
        F.layer_norm(x, [4], em(arr(4, dtype=np.float32)))
    with pytest.raises(NotImplementedError, match="native_layer_norm"):
        F.layer_norm(ember.ones(2, 3, dtype=ember.int64), [3])


def test_layer_norm_empty_rows():
    assert tuple(F.layer_norm(ember.zeros(0, 4), [4]).shape) == (0, 4)


@needs_torch
@pytest.mark.parametrize("rows,cols", [(1, 5), (3, GRAIN // 2 + 3), (513, 1024), (GRAIN // 64 + 1, 64)])
def test_layer_norm_realistic_sizes_and_threads(threads, rows, cols):
    x, w, b, g = (arr(rows, cols, dtype=np.float32), arr(cols, dtype=np.float32), arr(cols, dtype=np.float32),
                  arr(rows, cols, dtype=np.float32))
    ex, ew, eb = em(x, True), em(w, True), em(b, True)
    tx, tw, tb = th(x, True), th(w, True), th(b, True)
    out = F.layer_norm(ex, [cols], ew, eb)
    tout = TF.layer_norm(tx, [cols], tw, tb)
    close(out, tout, rtol=1e-4, atol=1e-4)
    out.backward(em(g))
    tout.backward(th(g))
    close(ex.grad, tx.grad, rtol=1e-3, atol=1e-3)
    close(ew.grad, tw.grad, rtol=1e-3, atol=2e-3 * np.sqrt(rows))
    close(eb.grad, tb.grad, rtol=1e-3, atol=1e-3 * np.sqrt(rows))


# The forward's row sums run in blocks of 32 float (16 double) lanes plus a tail.
@needs_torch
@pytest.mark.parametrize("cols", [1, 15, 16, 17, 31, 32, 33, 100, 1029])
@pytest.mark.parametrize("dtype,tol", [("float64", 1e-12), ("float32", 1e-5), ("float16", 2e-3), ("bfloat16", 2e-2)])
def test_layer_norm_rows_at_and_around_the_lane_width(threads, cols, dtype, tol):
    rows = max(3, 2 * GRAIN // cols + 1)  # split among the threads
    x = (arr(cols, rows) * 3 + 5).T  # non-contiguous, off-centre rows
    w, b = arr(cols), arr(cols)
    ed, td = getattr(ember, dtype), getattr(torch, dtype)
    out, mean, rstd = ember.native_layer_norm(em(x).to(ed), [cols], em(w).to(ed), em(b).to(ed), 1e-5)
    want = torch.native_layer_norm(th(x).to(td), [cols], th(w).to(td), th(b).to(td), 1e-5)
    for e, t in zip((out, mean, rstd), want):
        assert e.dtype == ed and tuple(e.shape) == tuple(t.shape)
        close(e.double(), t.double(), rtol=tol, atol=tol * 10)
    if dtype in ("float64", "float32"):  # and against float64 math on the same inputs
        xin = x.astype(np.float32).astype(np.float64) if dtype == "float32" else x
        close(out.double(), np_layer_norm(xin, 1, w, b), rtol=tol, atol=tol * 10)


# ---------------------------------------------------------------- batch_norm

def np_batch_norm_train(x, eps=1e-5):
    axes = (0,) + tuple(range(2, x.ndim))
    return (x - x.mean(axes, keepdims=True)) / np.sqrt(x.var(axes, keepdims=True) + eps)


@needs_torch
@pytest.mark.parametrize("shape", [(4, 3), (3, 5, 7), (2, 4, 3, 5)])
@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("with_stats", [True, False])
def test_batch_norm_values_gradients_and_running_stats_match_torch(shape, training, with_stats):
    if not training and not with_stats:
        return
    C = shape[1]
    x, w, b, g = arr(*shape), arr(C), arr(C), arr(*shape)
    rm, rv = arr(C), np.abs(arr(C)) + 0.5
    ex, ew, eb = em(x, True), em(w, True), em(b, True)
    tx, tw, tb = th(x, True), th(w, True), th(b, True)
    erm, erv = (em(rm), em(rv)) if with_stats else (None, None)
    trm, trv = (th(rm), th(rv)) if with_stats else (None, None)
    out = F.batch_norm(ex, erm, erv, ew, eb, training, 0.3, 1e-4)
    tout = TF.batch_norm(tx, trm, trv, tw, tb, training, 0.3, 1e-4)
    close(out, tout, rtol=1e-10, atol=1e-12)
    if training:
        close(out, np_batch_norm_train(x, 1e-4) * w.reshape((1, C) + (1,) * (len(shape) - 2))
              + b.reshape((1, C) + (1,) * (len(shape) - 2)), rtol=1e-10, atol=1e-12)
    if with_stats:  # updated in place: momentum and the unbiased variance, as torch
        close(erm, trm, rtol=1e-14, atol=1e-15)
        close(erv, trv, rtol=1e-14, atol=1e-15)
    backward_both(out, tout, g, ((ex, tx), (ew, tw), (eb, tb)), rtol=1e-9, atol=1e-11)


@needs_torch
def test_batch_norm_float32_running_stats_bitwise_close_and_noncontiguous():
    x = arr(6, 3, 4, 5, dtype=np.float32)
    ex = em(x).permute(0, 3, 2, 1).permute(0, 3, 2, 1)  # same values, different strides
    ex = em(np.ascontiguousarray(x.transpose(1, 0, 2, 3))).transpose(0, 1)
    assert not ex.is_contiguous()
    erm, erv = ember.zeros(3), ember.ones(3)
    trm, trv = torch.zeros(3), torch.ones(3)
    for _ in range(3):
        out = F.batch_norm(ex, erm, erv, training=True)
        tout = TF.batch_norm(th(x), trm, trv, training=True)
    close(out, tout, rtol=1e-5, atol=1e-5)
    close(erm, trm, rtol=1e-6, atol=1e-7)
    close(erv, trv, rtol=1e-6, atol=1e-7)


@needs_torch
@pytest.mark.parametrize("shape", [(32, 16, 14, 14), (3, GRAIN + 5), (2, 3, GRAIN // 2 + 1)])
def test_batch_norm_realistic_sizes_and_threads(threads, shape):
    C = shape[1]
    x, g, w, b = arr(*shape, dtype=np.float32), arr(*shape, dtype=np.float32), arr(C, dtype=np.float32), arr(C, dtype=np.float32)
    ex, ew, eb = em(x, True), em(w, True), em(b, True)
    tx, tw, tb = th(x, True), th(w, True), th(b, True)
    erm, erv, trm, trv = ember.zeros(C), ember.ones(C), torch.zeros(C), torch.ones(C)
    out = F.batch_norm(ex, erm, erv, ew, eb, training=True)
    tout = TF.batch_norm(tx, trm, trv, tw, tb, training=True)
    close(out, tout, rtol=1e-4, atol=1e-4)
    close(erm, trm, rtol=1e-4, atol=1e-6)
    close(erv, trv, rtol=1e-4, atol=1e-6)
    out.backward(em(g))
    tout.backward(th(g))
    n = x.size // C
    close(ex.grad, tx.grad, rtol=1e-3, atol=1e-3)
    close(ew.grad, tw.grad, rtol=1e-3, atol=1e-4 * np.sqrt(n))
    close(eb.grad, tb.grad, rtol=1e-3, atol=1e-4 * np.sqrt(n))


def test_batch_norm_errors():
    with pytest.raises(ValueError, match="Expected more than 1 value per channel when training"):
        F.batch_norm(ember.ones(1, 3), None, None, training=True)
    with pytest.raises(RuntimeError, match="running_mean must be defined in evaluation mode"):
        F.batch_norm(ember.ones(2, 3), None, None, training=False)
    with pytest.raises(RuntimeError, match="running_mean should contain 3 elements not 4"):
        F.batch_norm(ember.ones(2, 3), ember.zeros(4), ember.ones(4))
    with pytest.raises(RuntimeError, match="weight should contain 3 elements not 2"):
        F.batch_norm(ember.ones(2, 3), None, None, ember.ones(2), training=True)
    with pytest.raises(RuntimeError, match="at least 2 dims"):
        ember.batch_norm(ember.ones(3), None, None, None, None, True, 0.1, 1e-5, False)


# ---------------------------------------------------------------- group_norm, instance_norm, rms_norm

@needs_torch
@pytest.mark.parametrize("shape,groups", [((2, 6, 4), 3), ((3, 4, 2, 3), 2), ((2, 4), 4), ((2, 6, 5), 1)])
def test_group_norm_matches_torch(shape, groups):
    C = shape[1]
    x, w, b, g = arr(*shape), arr(C), arr(C), arr(*shape)
    ex, ew, eb = em(x, True), em(w, True), em(b, True)
    tx, tw, tb = th(x, True), th(w, True), th(b, True)
    out = F.group_norm(ex, groups, ew, eb, 1e-4)
    tout = TF.group_norm(tx, groups, tw, tb, 1e-4)
    close(out, tout, rtol=1e-10, atol=1e-12)
    close(F.group_norm(ex, groups), TF.group_norm(tx, groups), rtol=1e-10, atol=1e-12)
    backward_both(out, tout, g, ((ex, tx), (ew, tw), (eb, tb)), rtol=1e-9, atol=1e-11)


def test_group_norm_errors():
    with pytest.raises(RuntimeError, match=r"Expected number of channels in input to be divisible by num_groups, but "
                                           r"got input of shape \[2, 6, 4\] and num_groups=4"):
        F.group_norm(ember.ones(2, 6, 4), 4)
    with pytest.raises(RuntimeError, match=r"Expected weight to be a vector of size equal to the number of channels "
                                           r"in input, but got weight of shape \[5\] and input of shape \[2, 6, 4\]"):
        F.group_norm(ember.randn(2, 6, 4), 3, ember.ones(5))
    with pytest.raises(RuntimeError, match="Expected at least 2 dimensions for input tensor but received 1"):
        F.group_norm(ember.ones(4), 2)


@needs_torch
@pytest.mark.parametrize("use_input_stats", [True, False])
@pytest.mark.parametrize("n", [1, 3])
def test_instance_norm_matches_torch_with_running_stats(use_input_stats, n):
    x, w, b, g = arr(n, 4, 5, 3), arr(4), arr(4), arr(n, 4, 5, 3)
    rm, rv = arr(4), np.abs(arr(4)) + 0.5
    ex, ew, eb = em(x, True), em(w, True), em(b, True)
    tx, tw, tb = th(x, True), th(w, True), th(b, True)
    erm, erv, trm, trv = em(rm), em(rv), th(rm), th(rv)
    out = F.instance_norm(ex, erm, erv, ew, eb, use_input_stats, 0.2, 1e-4)
    tout = TF.instance_norm(tx, trm, trv, tw, tb, use_input_stats, 0.2, 1e-4)
    close(out, tout, rtol=1e-10, atol=1e-12)
    close(erm, trm, rtol=1e-12, atol=1e-14)
    close(erv, trv, rtol=1e-12, atol=1e-14)
    backward_both(out, tout, g, ((ex, tx), (ew, tw), (eb, tb)), rtol=1e-9, atol=1e-11)
    close(F.instance_norm(em(x)), TF.instance_norm(th(x)), rtol=1e-10, atol=1e-12)


def test_instance_norm_needs_more_than_one_spatial_element():
    with pytest.raises(ValueError, match="Expected more than 1 spatial element when training"):
        F.instance_norm(ember.ones(2, 3, 1))


@needs_torch
@pytest.mark.parametrize("eps", [None, 1e-3])
@pytest.mark.parametrize("dtype", ["float64", "float32", "bfloat16"])
def test_rms_norm_matches_torch(eps, dtype):
    x, w, g = arr(3, 4, 5), arr(4, 5), arr(3, 4, 5)
    ex = em(x).to(getattr(ember, dtype)).requires_grad_()
    ew = em(w).to(getattr(ember, dtype)).requires_grad_()
    tx = th(x).to(getattr(torch, dtype)).requires_grad_()
    tw = th(w).to(getattr(torch, dtype)).requires_grad_()
    out = F.rms_norm(ex, [4, 5], ew, eps)
    tout = TF.rms_norm(tx, [4, 5], tw, eps)
    assert out.dtype == ex.dtype
    tol = {"float64": 1e-12, "float32": 1e-5, "bfloat16": 2e-2}[dtype]
    close(out, tout.float() if dtype == "bfloat16" else tout, rtol=tol, atol=tol)
    if dtype != "bfloat16":
        out.backward(em(g).to(ex.dtype))
        tout.backward(th(g).to(tx.dtype))
        close(ex.grad, tx.grad, rtol=tol * 10, atol=tol * 10)
        close(ew.grad, tw.grad, rtol=tol * 10, atol=tol * 10)


def test_rms_norm_errors():
    with pytest.raises(RuntimeError, match=r"Expected weight to be of same shape as normalized_shape"):
        F.rms_norm(ember.ones(2, 4), [4], ember.ones(3))
    with pytest.raises(RuntimeError, match=r"Given normalized_shape=\[5\], expected input with shape \[\*5\]"):
        F.rms_norm(ember.ones(2, 4), [5])


# ---------------------------------------------------------------- embedding

@needs_torch
@pytest.mark.parametrize("padding_idx", [None, 2, -1])
@pytest.mark.parametrize("scale", [False, True])
@pytest.mark.parametrize("index_dtype", ["int64", "int32"])
def test_embedding_values_and_gradients_match_torch(padding_idx, scale, index_dtype):
    w, idx = arr(7, 3), np.array([[1, 2, 6], [2, 2, 0]])
    ew, tw = em(w, True), th(w, True)
    ei = ember.tensor(idx).to(getattr(ember, index_dtype))
    ti = torch.tensor(idx).to(getattr(torch, index_dtype))
    out = F.embedding(ei, ew, padding_idx, scale_grad_by_freq=scale)
    tout = TF.embedding(ti, tw, padding_idx, scale_grad_by_freq=scale)
    assert tuple(out.shape) == (2, 3, 3)
    close(out, tout, rtol=0, atol=0)
    g = arr(2, 3, 3)
    out.backward(em(g))
    tout.backward(th(g))
    close(ew.grad, tw.grad, rtol=1e-12, atol=1e-14)


@needs_torch
@pytest.mark.parametrize("norm_type", [2.0, 1.0, float("inf")])
def test_embedding_max_norm_renormalises_rows_in_place(norm_type):
    w, idx = arr(6, 4) * 3, np.array([0, 3, 3, 5])
    ew, tw = em(w), th(w)
    out = F.embedding(ember.tensor(idx), ew, max_norm=1.5, norm_type=norm_type)
    tout = TF.embedding(torch.tensor(idx), tw, max_norm=1.5, norm_type=norm_type)
    close(out, tout, rtol=1e-12, atol=1e-14)
    close(ew, tw, rtol=1e-12, atol=1e-14)  # the used rows, in place; the others untouched
    np.testing.assert_array_equal(ew.numpy()[[1, 2, 4]], w[[1, 2, 4]])


def test_embedding_strided_weight_and_all_dtypes():
    w = ember.arange(0, 24).reshape(4, 6)[:, ::2]
    np.testing.assert_array_equal(ember.embedding(w, ember.tensor([3, 0])).numpy(), w.numpy()[[3, 0]])
    for dt in (ember.int8, ember.float16, ember.bool):
        wt = ember.ones(3, 2, dtype=dt)
        assert ember.embedding(wt, ember.tensor([1])).dtype == dt


def test_embedding_errors():
    w = ember.randn(5, 3)
    with pytest.raises(IndexError, match="index out of range in self"):
        F.embedding(ember.tensor([0, 5]), w)
    with pytest.raises(IndexError, match="index out of range in self"):
        F.embedding(ember.tensor([-1]), w)
    with pytest.raises(RuntimeError, match="'indices' to have one of the following scalar types: Long, Int"):
        F.embedding(ember.tensor([0.0, 1.0]), w)
    with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
        F.embedding(ember.tensor([0]), w, padding_idx=5)
    with pytest.raises(RuntimeError, match="'weight' must be 2-D"):
        F.embedding(ember.tensor([0]), ember.randn(5))


@needs_torch
@pytest.mark.parametrize("rows,dim,n", [(50, 8, 3), (5000, 64, 20000), (3, GRAIN + 1, 7), (GRAIN // 4, 4, 100)])
def test_embedding_backward_realistic_sizes_and_threads(threads, rows, dim, n):
    w = arr(rows, dim, dtype=np.float32)
    idx = RNG.integers(0, rows, size=n)
    g = arr(n, dim, dtype=np.float32)
    ew, tw = em(w, True), th(w, True)
    out = F.embedding(ember.tensor(idx), ew, padding_idx=int(idx[0]))
    tout = TF.embedding(torch.tensor(idx), tw, padding_idx=int(idx[0]))
    close(out, tout, rtol=0, atol=0)
    out.backward(em(g))
    tout.backward(th(g))
    close(ew.grad, tw.grad, rtol=1e-5, atol=1e-5)


# 1000 rows of 100 split into 3 chunks of rows (one per thread at 3 threads): the indices
# crowd the rows either side of each chunk boundary, repeat, and leave most rows untouched.
EMB_ROWS, EMB_DIM = 1000, 100
EMB_CROWDED = [0, 332, 333, 334, 665, 666, 667, 999]


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_embedding_gradient_sums_each_row_in_index_order(threads, dtype):
    assert EMB_ROWS * EMB_DIM >= 3 * GRAIN  # three chunks at three threads
    idx = np.concatenate([RNG.choice(EMB_CROWDED, size=3000), RNG.integers(0, EMB_ROWS, size=300)])
    RNG.shuffle(idx)
    g = arr(len(idx), EMB_DIM, dtype=dtype)
    w = em(np.zeros((EMB_ROWS, EMB_DIM), dtype=dtype), True)
    F.embedding(ember.tensor(idx), w).backward(em(g))
    # np.add.at adds in index order, each float16 sum rounded as the kernel rounds it.
    want = np.zeros((EMB_ROWS, EMB_DIM), dtype=dtype)
    np.add.at(want, idx, g)
    np.testing.assert_array_equal(w.grad.numpy(), want)


@needs_torch
@pytest.mark.parametrize("dtype", ["float64", "float16", "bfloat16"])
@pytest.mark.parametrize("scale", [False, True])
def test_embedding_gradient_scaled_and_padded_matches_torch(threads, dtype, scale):
    idx = np.concatenate([RNG.choice(EMB_CROWDED, size=500), RNG.integers(0, EMB_ROWS, size=200)])
    g = arr(len(idx), EMB_DIM, dtype=np.float32)
    ew = ember.zeros(EMB_ROWS, EMB_DIM, dtype=getattr(ember, dtype), requires_grad=True)
    tw = torch.zeros(EMB_ROWS, EMB_DIM, dtype=getattr(torch, dtype), requires_grad=True)
    F.embedding(ember.tensor(idx), ew, padding_idx=333, scale_grad_by_freq=scale).backward(
        em(g).to(getattr(ember, dtype)))
    TF.embedding(torch.tensor(idx), tw, padding_idx=333, scale_grad_by_freq=scale).backward(
        th(g).to(getattr(torch, dtype)))
    tol = {"float64": 1e-6, "float16": 2e-2, "bfloat16": 1e-1}[dtype]
    close(ew.grad.double(), tw.grad.double(), rtol=tol, atol=tol)
    assert not ew.grad[333].any()


def test_embedding_gradient_of_no_indices_is_zero(threads):
    w = ember.randn(EMB_ROWS, EMB_DIM, requires_grad=True)
    out = F.embedding(ember.tensor(np.zeros((2, 0), dtype=np.int64)), w)
    out.backward(ember.ones(2, 0, EMB_DIM))
    assert w.grad.shape == (EMB_ROWS, EMB_DIM) and not w.grad.any()


@needs_torch
def test_embedding_non_contiguous_gradient_matches_torch(threads):
    idx = RNG.integers(0, EMB_ROWS, size=(64, 30))
    g = arr(30, 64, EMB_DIM)
    w = arr(EMB_ROWS, EMB_DIM)
    ew, tw = em(w, True), th(w, True)
    F.embedding(ember.tensor(idx), ew).backward(em(g).transpose(0, 1))
    TF.embedding(torch.tensor(idx), tw).backward(th(g).transpose(0, 1))
    close(ew.grad, tw.grad, rtol=1e-12, atol=1e-12)


@needs_gpu
def test_cuda_slots_name_the_op_and_device():
    x = ember.ones(2, 3).cuda()
    with pytest.raises(NotImplementedError, match="native_layer_norm: .*cuda"):
        F.layer_norm(x, [3])
    with pytest.raises(NotImplementedError, match="native_batch_norm: .*cuda"):
        F.batch_norm(x, None, None, training=True)
    with pytest.raises(NotImplementedError, match="embedding: .*cuda"):
        F.embedding(ember.tensor([0]).cuda(), x)
    with pytest.raises(NotImplementedError, match="embedding_bag: .*cuda"):
        F.embedding_bag(ember.tensor([0]).cuda(), x, ember.tensor([0]).cuda())
    with pytest.raises(NotImplementedError, match="embedding_bag: .*cuda"):
        ember.embedding_bag(x, ember.tensor([0]).cuda(), ember.tensor([0]).cuda())


# ---------------------------------------------------------------- embedding_bag

@needs_torch
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("include_last_offset", [False, True])
@pytest.mark.parametrize("padding_idx", [None, 4])
def test_embedding_bag_matches_torch(mode, include_last_offset, padding_idx):
    w, idx = arr(8, 3), np.array([1, 4, 2, 7, 4, 0, 3])
    offsets = np.array([0, 2, 2, 5] + ([7] if include_last_offset else []))
    ew, tw = em(w, True), th(w, True)
    out = F.embedding_bag(ember.tensor(idx), ew, ember.tensor(offsets), mode=mode,
                          include_last_offset=include_last_offset, padding_idx=padding_idx)
    tout = TF.embedding_bag(torch.tensor(idx), tw, torch.tensor(offsets), mode=mode,
                            include_last_offset=include_last_offset, padding_idx=padding_idx)
    close(out, tout, rtol=1e-12, atol=1e-14)
    g = arr(*out.shape)
    out.backward(em(g))
    tout.backward(th(g))
    close(ew.grad, tw.grad, rtol=1e-12, atol=1e-14)


@needs_torch
def test_embedding_bag_2d_input_and_per_sample_weights():
    w, idx, psw = arr(6, 4), np.array([[0, 2, 5], [1, 1, 3]]), arr(2, 3)
    ew, tw = em(w, True), th(w, True)
    ep, tp = em(psw, True), th(psw, True)
    out = F.embedding_bag(ember.tensor(idx), ew, mode="sum", per_sample_weights=ep)
    tout = TF.embedding_bag(torch.tensor(idx), tw, mode="sum", per_sample_weights=tp)
    close(out, tout, rtol=1e-12, atol=1e-14)
    out.sum().backward()
    tout.sum().backward()
    close(ew.grad, tw.grad, rtol=1e-12, atol=1e-14)
    close(ep.grad, tp.grad, rtol=1e-12, atol=1e-14)
    close(F.embedding_bag(ember.tensor(idx), ew), TF.embedding_bag(torch.tensor(idx), tw), rtol=1e-12, atol=1e-14)


def test_embedding_bag_errors():
    w = ember.randn(5, 3)
    with pytest.raises(NotImplementedError, match="per_sample_weights is only supported for mode='sum'"):
        F.embedding_bag(ember.tensor([0, 1, 2]), w, ember.tensor([0, 2]), mode="max", per_sample_weights=ember.ones(3))
    with pytest.raises(RuntimeError, match="offsets\\[0\\] has to be 0"):
        F.embedding_bag(ember.tensor([0, 1, 2]), w, ember.tensor([1, 2]))
    with pytest.raises(ValueError, match="if input is 2D, then offsets has to be None"):
        F.embedding_bag(ember.tensor([[0, 1, 2]]), w, ember.tensor([0]))
    with pytest.raises(RuntimeError, match=r"Index 2 of input takes value 7 which is not in the valid range \[0, 5\)"):
        F.embedding_bag(ember.tensor([0, 1, 7]), w, ember.tensor([0]))
    with pytest.raises(ValueError, match="mode has to be one of sum, mean or max"):
        F.embedding_bag(ember.tensor([0, 1, 2]), w, ember.tensor([0, 2]), mode="foo")
    with pytest.raises(ValueError, match="offsets has to be a 1D Tensor but got None"):
        F.embedding_bag(ember.tensor([0, 1, 2]), w)
    with pytest.raises(ValueError, match="max mode does not support sparse weights"):
        F.embedding_bag(ember.tensor([0, 1, 2]), w, ember.tensor([0]), mode="max", sparse=True)


# ---------------------------------------------------------------- one_hot

def test_one_hot_values_and_errors():
    idx = ember.tensor([[0, 2], [1, 3]])
    np.testing.assert_array_equal(F.one_hot(idx).numpy(), np.eye(4, dtype=np.int64)[idx.numpy()])
    assert F.one_hot(idx, 6).dtype == ember.int64 and tuple(F.one_hot(idx, 6).shape) == (2, 2, 6)
    assert tuple(F.one_hot(ember.tensor(2)).shape) == (3,)
    assert tuple(F.one_hot(ember.tensor([], dtype=ember.int64), 4).shape) == (0, 4)
    with pytest.raises(RuntimeError, match="Class values must be smaller than num_classes."):
        F.one_hot(ember.tensor([0, 3]), 3)
    with pytest.raises(RuntimeError, match="Class values must be non-negative."):
        F.one_hot(ember.tensor([0, -1]))
    with pytest.raises(RuntimeError, match="one_hot is only applicable to index tensor of type LongTensor."):
        F.one_hot(ember.tensor([0.0, 1.0]))
    with pytest.raises(RuntimeError, match="Can not infer total number of classes from empty tensor."):
        F.one_hot(ember.tensor([], dtype=ember.int64))


# ---------------------------------------------------------------- gradcheck, gradgradcheck, JVPs (float64)

def t64(*shape):
    return ember.tensor(arr(*shape), requires_grad=True)


def _stats(a, nd):
    return ember.native_layer_norm(a.detach(), list(a.shape[-nd:]), None, None, 1e-5)[1:]


def _bn_stats(a, training, rm, rv):
    if not training:
        return rm, 1 / (rv + 1e-5).sqrt()
    return ember.native_batch_norm(a.detach(), None, None, None, None, True, 0.1, 1e-5)[1:]


def _flat(outs):
    return ember.cat([o.reshape(-1) for o in outs if o is not None])


RM, RV = ember.tensor(arr(3)), ember.tensor(np.abs(arr(3)) + 0.5)
IDX = ember.tensor([[0, 2], [3, 2]])

# Ops the harness cannot sample: op -> [(function, input factory, gradcheck options)]. Each is
# gradchecked and gradgradchecked by tests/test_higher_order.py (NOT_IN_HARNESS) and JVP-checked here.
GRAD_CASES = {
    "native_layer_norm": [(lambda a, w, b: ember.native_layer_norm(a, [4], w, b, 1e-5)[0],
                           lambda: (t64(3, 4), t64(4), t64(4)), {}),
                          (lambda a: ember.native_layer_norm(a, [2, 3], None, None, 1e-5)[0], lambda: (t64(2, 2, 3),), {})],
    "_layer_norm_backward": [(lambda g, a, w: _flat(ember._layer_norm_backward(g, a, [4], *_stats(a, 1), w, 1e-5)),
                              lambda: (t64(3, 4), t64(3, 4), t64(4)), {})],
    "_layer_norm_jvp": [(lambda t, w: ember._layer_norm_jvp(t, XL, [4], *_stats(XL, 1), w), lambda: (t64(3, 4), t64(4)), {})],
    "native_batch_norm": [(lambda a, w, b: ember.native_batch_norm(a, w, b, None, None, True, 0.1, 1e-5)[0],
                           lambda: (t64(4, 3, 2), t64(3), t64(3)), {}),
                          (lambda a, w, b: ember.native_batch_norm(a, w, b, RM, RV, False, 0.1, 1e-5)[0],
                           lambda: (t64(4, 3), t64(3), t64(3)), {})],
    "_batch_norm_backward": [(lambda g, a, w: _flat(ember._batch_norm_backward(g, a, w, *_bn_stats(a, True, None, None),
                                                                               True, 1e-5)),
                              lambda: (t64(4, 3, 2), t64(4, 3, 2), t64(3)), {}),
                             (lambda g, a, w: _flat(ember._batch_norm_backward(g, a, w, *_bn_stats(a, False, RM, RV),
                                                                               False, 1e-5)),
                              lambda: (t64(4, 3), t64(4, 3), t64(3)), {})],
    "_batch_norm_jvp": [(lambda t, w: ember._batch_norm_jvp(t, XB, w, *_bn_stats(XB, True, None, None), True),
                         lambda: (t64(4, 3, 2), t64(3)), {})],
    "_batch_norm_param_jvp": [(lambda p: ember._batch_norm_param_jvp(p, XB, *_bn_stats(XB, True, None, None), False)
                               + ember._batch_norm_param_jvp(p * p, XB, *_bn_stats(XB, True, None, None), True),
                               lambda: (t64(3),), {})],
    "batch_norm": [(lambda a, w: ember.batch_norm(a, w, None, None, None, True, 0.1, 1e-5, False),
                    lambda: (t64(3, 3, 2), t64(3)), {})],
    "group_norm": [(lambda a, w, b: ember.group_norm(a, 2, w, b), lambda: (t64(2, 4, 3), t64(4), t64(4)), {})],
    "instance_norm": [(lambda a, w, b: ember.instance_norm(a, w, b, None, None, True, 0.1, 1e-5, False),
                       lambda: (t64(2, 3, 4), t64(3), t64(3)), {})],
    "embedding": [(lambda w: ember.embedding(w * w, IDX), lambda: (t64(5, 3),), {})],
    "_embedding_backward": [(lambda g: ember._embedding_backward(g * g, IDX, [5, 3], 2, True), lambda: (t64(2, 2, 3),), {})],
    "_embedding_bag_reduce": [(lambda w, p: ember._embedding_bag_reduce(w * w, ember.tensor([0, 2, 1, 4]),
                                                                         ember.tensor([0, 1, 3]), 0, p, False, -1),
                               lambda: (t64(5, 3), t64(4)), {}),
                              (lambda w: ember._embedding_bag_reduce(w, ember.tensor([0, 2, 1, 4]), ember.tensor([0, 1, 1]),
                                                                      2, None, False, -1), lambda: (t64(5, 3),), {})],
    "embedding_bag": [(lambda w, p: ember.embedding_bag(w * w, ember.tensor([0, 2, 1, 4]), ember.tensor([0, 1, 3]),
                                                        False, 0, False, p)[0], lambda: (t64(5, 3), t64(4)), {}),
                      (lambda w: ember.embedding_bag(w, ember.tensor([0, 2, 1, 4]), ember.tensor([0, 1, 1]), False, 1,
                                                     False, None, False, 2)[0], lambda: (t64(5, 3),), {})],
    "one_hot": [(lambda a: F.one_hot(IDX, 5) * a, lambda: (t64(2, 2, 5),), {})],
    "layer_norm": [(lambda a, w, b: ember.layer_norm(a, [2, 3], w, b), lambda: (t64(2, 2, 3), t64(2, 3), t64(2, 3)), {}),
                   (lambda a: ember.layer_norm(a, [4]), lambda: (t64(3, 4),), {})],
    "rms_norm": [(lambda a, w: ember.rms_norm(a, [4], w), lambda: (t64(3, 4), t64(4)), {}),
                 (lambda a: ember.rms_norm(a, [2, 3], eps=1e-3), lambda: (t64(2, 2, 3),), {})],
}
XB, XL = ember.tensor(arr(4, 3, 2)), ember.tensor(arr(3, 4))  # fixed inputs of the JVP helpers
ALL_CASES = [(f"{name}-{i}", *case) for name, cases in GRAD_CASES.items() for i, case in enumerate(cases)]


@pytest.mark.parametrize("name,fn,inputs,options", ALL_CASES, ids=[c[0] for c in ALL_CASES])
def test_forward_mode_matches_finite_differences(name, fn, inputs, options):
    primals = [a.detach() for a in inputs()]
    assert_jvp_matches_finite_differences(fn, primals, [ember.tensor(arr(*a.shape)) for a in primals])


def test_fused_backward_runs_once_for_all_three_gradients():
    # The grouped derivative: input, weight and bias gradients from one _layer_norm_backward call.
    from ember import autograd
    a, w, b = t64(3, 4), t64(4), t64(4)
    out = ember.native_layer_norm(a, [4], w, b, 1e-5)[0]
    ga, gw, gb = autograd.grad(out.sum(), [a, w, b])
    want = ember._native_layer_norm_backward(ember.ones(3, 4, dtype=F64), a.detach(), [4], *_stats(a, 1), w.detach())
    for g, e in zip((ga, gw, gb), want):
        close(g, e.numpy(), rtol=1e-12, atol=1e-14)


def test_grouped_derivative_keys_are_checked(tmp_path):
    from codegen.errors import SpecError
    from codegen.model import load_model
    (tmp_path / "ops.yaml").write_text(
        "dtype_sets: {floating: [float32, float64]}\nops:\n"
        "- {func: 'f(Tensor self, Tensor other) -> Tensor', kind: kernel, kernels: {cpu: f_cpu}, dtypes: floating, doc: F.}\n"
        "- {func: 'fb(Tensor self) -> (Tensor a, Tensor b)', kind: composite, doc: G.}\n")
    (tmp_path / "derivatives.yaml").write_text("- op: f\n  self, othr: fb(grad)\n  forward: self_t\n")
    with pytest.raises(SpecError, match="f has no argument 'othr'"):
        load_model(str(tmp_path / "ops.yaml"), str(tmp_path / "derivatives.yaml"))
    (tmp_path / "derivatives.yaml").write_text("- op: f\n  self, other: f(grad, grad)\n  forward: self_t\n")
    with pytest.raises(SpecError, match="must return a tuple"):
        load_model(str(tmp_path / "ops.yaml"), str(tmp_path / "derivatives.yaml"))
