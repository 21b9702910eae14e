"""ember.linalg decompositions over LAPACK (issue 11): values against NumPy on random
well-conditioned matrices (batched, empty, 0x0, transposed inputs; 1, 2 and 3 threads around
the batch split), PyTorch's errors and messages, and float64 gradcheck, gradgradcheck and
forward-mode checks (these ops take square or structured matrices, which the generic harness
does not sample)."""
import warnings

import numpy as np
import pytest

import ember
from ember.autograd import gradcheck, gradgradcheck

try:
    import torch
except ImportError:  # the torch comparisons are skipped without it
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="needs torch")
needs_gpu = pytest.mark.skipif(not ember.cuda.is_available(), reason="needs a CUDA GPU")
LA = ember.linalg
DTYPES = [np.float32, np.float64]
TOL = {np.float32: dict(rtol=2e-4, atol=2e-4), np.float64: dict(rtol=1e-9, atol=1e-9)}

# Batch shapes: one matrix, batches, an empty batch; the matrices from 0x0 up.
BATCHES = [(), (3,), (2, 3), (0,)]
SIZES = [0, 1, 3, 6]


def well_conditioned(shape, seed=0, dtype=np.float64):
    """Random square matrices with singular values in [1, 3] (so inverses are accurate)."""
    rng = np.random.default_rng(seed)
    *batch, n, _ = shape
    q1 = np.linalg.qr(rng.standard_normal((*batch, n, n)))[0]
    q2 = np.linalg.qr(rng.standard_normal((*batch, n, n)))[0]
    s = rng.uniform(1.0, 3.0, (*batch, n))
    return ((q1 * s[..., None, :]) @ q2).astype(dtype)


def spd(shape, seed=0, dtype=np.float64):
    """Random symmetric positive-definite matrices with eigenvalues in [1, 3]."""
    rng = np.random.default_rng(seed)
    *batch, n, _ = shape
    q = np.linalg.qr(rng.standard_normal((*batch, n, n)))[0]
    lam = rng.uniform(1.0, 3.0, (*batch, n))
    a = (q * lam[..., None, :]) @ np.swapaxes(q, -1, -2)
    return ((a + np.swapaxes(a, -1, -2)) / 2).astype(dtype)


def t(a, requires_grad=False):
    return ember.tensor(a, requires_grad=requires_grad)


def close(got, want, dtype):
    np.testing.assert_allclose(got.numpy() if hasattr(got, "numpy") else got, want, **TOL[dtype])


def transposed(a):
    """An ember tensor with a's values whose last two dims are not contiguous."""
    return ember.tensor(np.ascontiguousarray(np.swapaxes(a, -1, -2))).transpose(-2, -1)


# ---------------------------------------------------------------- values
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("n", SIZES)
def test_inv_det_slogdet_match_numpy(dtype, batch, n):
    a = well_conditioned((*batch, n, n), seed=n, dtype=dtype)
    for x in (t(a), transposed(a)):
        inv = LA.inv(x)
        assert inv.dtype == x.dtype and tuple(inv.shape) == a.shape
        close(inv, np.linalg.inv(a) if a.size else a, dtype)
        close(ember.inverse(x), np.linalg.inv(a) if a.size else a, dtype)
        inverse, info = LA.inv_ex(x)
        close(inverse, np.linalg.inv(a) if a.size else a, dtype)
        assert info.dtype == ember.int32 and tuple(info.shape) == batch and not info.numpy().any()
        close(LA.det(x), np.linalg.det(a), dtype)
        close(ember.det(x), np.linalg.det(a), dtype)
        sign, logabsdet = LA.slogdet(x)
        want_sign, want_log = np.linalg.slogdet(a)
        close(sign, want_sign, dtype)
        close(logabsdet, want_log, dtype)
        assert sign.dtype == x.dtype and tuple(sign.shape) == batch
        close(ember.slogdet(x).logabsdet, want_log, dtype)
        with np.errstate(invalid="ignore"):
            close(ember.logdet(x), np.log(np.linalg.det(a)), dtype)
        assert x.det().shape == x.logdet().shape


@pytest.mark.parametrize("dtype", DTYPES)
def test_det_and_slogdet_of_singular_and_negative_matrices(dtype):
    np.testing.assert_allclose(ember._linalg_det_backward(ember.tensor(1.0), ember.tensor([[1.0, 2.0], [2.0, 4.0]]),
                                                          ember.tensor(0.0)).numpy(), [[4.0, -2.0], [-2.0, 1.0]],
                               rtol=1e-5, atol=1e-6)  # the cofactors
    a = np.array([[[1.0, 2.0], [2.0, 4.0]], [[0.0, 1.0], [1.0, 0.0]], [[0.0, 0.0], [0.0, 0.0]]], dtype=dtype)
    close(LA.det(t(a)), [0.0, -1.0, 0.0], dtype)
    sign, logabsdet = LA.slogdet(t(a))
    close(sign, [0.0, -1.0, 0.0], dtype)
    assert logabsdet.numpy()[0] == -np.inf and logabsdet.numpy()[2] == -np.inf
    got = ember.logdet(t(a)).numpy()
    assert got[0] == -np.inf and np.isnan(got[1]) and got[2] == -np.inf


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shapes", [((4, 4), (4, 2)), ((4, 4), (4,)), ((3, 4, 4), (4,)), ((3, 4, 4), (3, 4)),
                                    ((2, 1, 4, 4), (3, 4, 5)), ((4, 4), (5, 3, 4, 2)), ((0, 3, 3), (3, 1)),
                                    ((3, 3), (3, 0)), ((0, 0), (0, 2)), ((2, 3, 3), (3, 3))])
def test_solve_matches_numpy_with_broadcasting(dtype, shapes):
    sa, sb = shapes
    a = well_conditioned(sa, seed=1, dtype=dtype)
    b = np.random.default_rng(2).standard_normal(sb).astype(dtype)
    vector = len(sb) == 1 or (len(sb) == len(sa) - 1 and sb == sa[:-1])
    want = np.linalg.solve(a, b[..., None])[..., 0] if vector else (
        np.linalg.solve(a, b) if a.size and b.size else np.zeros(np.broadcast_shapes(sa[:-2], sb[:-2]) + sb[-2:], dtype))
    for x in (t(a), transposed(a)):
        got = LA.solve(x, t(b))
        assert got.dtype == x.dtype and tuple(got.shape) == want.shape
        close(got, want, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_solve_left_false(dtype):
    a = well_conditioned((2, 4, 4), seed=3, dtype=dtype)
    b = np.random.default_rng(4).standard_normal((2, 3, 4)).astype(dtype)
    got = LA.solve(t(a), t(b), left=False)
    close(got, np.swapaxes(np.linalg.solve(np.swapaxes(a, -1, -2), np.swapaxes(b, -1, -2)), -1, -2), dtype)
    close(got.numpy() @ a, b, dtype)
    v = np.random.default_rng(5).standard_normal(4).astype(dtype)
    close(LA.solve(t(a[0]), t(v), left=False).numpy() @ a[0], v, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("n", SIZES)
def test_cholesky_matches_numpy(dtype, batch, n):
    a = spd((*batch, n, n), seed=n, dtype=dtype)
    want = np.linalg.cholesky(a) if a.size else a
    for x in (t(a), transposed(a)):
        close(LA.cholesky(x), want, dtype)
        close(LA.cholesky(x, upper=True), np.swapaxes(want, -1, -2), dtype)
        L, info = LA.cholesky_ex(x)
        close(L, want, dtype)
        assert info.dtype == ember.int32 and tuple(info.shape) == batch and not info.numpy().any()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            close(ember.cholesky(x), want, dtype)
            close(x.cholesky(upper=True), np.swapaxes(want, -1, -2), dtype)


def test_cholesky_warns_as_deprecated():
    with pytest.warns(UserWarning, match="torch.cholesky is deprecated"):
        ember.cholesky(ember.eye(2))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(200, 8, 8), (5, 40, 40), (64, 3, 3), (1, 120, 120)])
def test_batches_split_over_threads(threads, dtype, shape):
    a = well_conditioned(shape, seed=7, dtype=dtype)
    p = spd(shape, seed=8, dtype=dtype)
    b = np.random.default_rng(9).standard_normal(shape[:-1] + (2,)).astype(dtype)
    close(LA.inv(t(a)), np.linalg.inv(a), dtype)
    close(LA.solve(t(a), t(b)), np.linalg.solve(a, b), dtype)
    close(LA.det(t(a)), np.linalg.det(a), dtype)
    close(LA.slogdet(t(a)).logabsdet, np.linalg.slogdet(a)[1], dtype)
    close(LA.cholesky(t(p)), np.linalg.cholesky(p), dtype)


# ---------------------------------------------------------------- errors
def _err(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 (the class is compared with torch's)
        return e
    return None


SINGULAR = [[1.0, 2.0], [2.0, 4.0]]
ERROR_CASES = [
    ("inv singular", lambda m: m.linalg.inv(m.tensor(SINGULAR))),
    ("inv batch singular", lambda m: m.linalg.inv(m.stack([m.eye(2), m.tensor(SINGULAR)]))),
    ("inv_ex check_errors", lambda m: m.linalg.inv_ex(m.tensor(SINGULAR), check_errors=True)),
    ("inv not square", lambda m: m.linalg.inv(m.ones(2, 3))),
    ("inv 1-D", lambda m: m.linalg.inv(m.ones(3))),
    ("inv half", lambda m: m.linalg.inv(m.ones(2, 2, dtype=m.float16))),
    ("inv bfloat16", lambda m: m.linalg.inv(m.ones(2, 2, dtype=m.bfloat16))),
    ("inv int", lambda m: m.linalg.inv(m.ones(2, 2, dtype=m.int64))),
    ("inverse not square", lambda m: m.inverse(m.ones(2, 3))),
    ("solve singular", lambda m: m.linalg.solve(m.tensor(SINGULAR), m.ones(2))),
    ("solve not square", lambda m: m.linalg.solve(m.ones(2, 3), m.ones(2))),
    ("solve vector shape", lambda m: m.linalg.solve(m.eye(2), m.ones(3))),
    ("solve matrix shape", lambda m: m.linalg.solve(m.eye(2), m.ones(3, 4))),
    ("solve dtypes", lambda m: m.linalg.solve(m.eye(2), m.ones(2, dtype=m.float64))),
    ("solve half", lambda m: m.linalg.solve(m.eye(2, dtype=m.float16), m.ones(2, dtype=m.float16))),
    ("solve int", lambda m: m.linalg.solve(m.ones(2, 2, dtype=m.int64), m.ones(2, 2, dtype=m.int64))),
    ("solve 1-D", lambda m: m.linalg.solve(m.ones(2), m.ones(2))),
    ("solve batch", lambda m: m.linalg.solve(m.eye(2).expand(3, 2, 2), m.ones(4, 2, 1))),
    ("solve vector batch", lambda m: m.linalg.solve(m.eye(2).expand(3, 2, 2), m.ones(4, 3, 2))),
    ("solve left=False shape", lambda m: m.linalg.solve(m.eye(2), m.ones(2, 3), left=False)),
    ("cholesky not pd", lambda m: m.linalg.cholesky(m.tensor(SINGULAR))),
    ("cholesky negative", lambda m: m.linalg.cholesky(-m.eye(3))),
    ("cholesky batch", lambda m: m.linalg.cholesky(m.stack([m.eye(2), m.tensor(SINGULAR)]))),
    ("cholesky_ex check_errors", lambda m: m.linalg.cholesky_ex(m.tensor(SINGULAR), check_errors=True)),
    ("cholesky not square", lambda m: m.linalg.cholesky(m.ones(2, 3))),
    ("cholesky 1-D", lambda m: m.linalg.cholesky(m.ones(2))),
    ("cholesky half", lambda m: m.linalg.cholesky(m.ones(2, 2, dtype=m.float16))),
    ("cholesky int", lambda m: m.linalg.cholesky(m.ones(2, 2, dtype=m.int64))),
    ("old cholesky not square", lambda m: m.cholesky(m.ones(2, 3))),
    ("det not square", lambda m: m.linalg.det(m.ones(3, 2))),
    ("det 1-D", lambda m: m.linalg.det(m.ones(2))),
    ("det half", lambda m: m.linalg.det(m.ones(3, 3, dtype=m.float16))),
    ("det int", lambda m: m.linalg.det(m.ones(3, 3, dtype=m.int64))),
    ("torch.det not square", lambda m: m.det(m.ones(2, 3))),
    ("slogdet not square", lambda m: m.linalg.slogdet(m.ones(3, 2))),
    ("slogdet half", lambda m: m.linalg.slogdet(m.ones(3, 3, dtype=m.float16))),
    ("slogdet int", lambda m: m.linalg.slogdet(m.ones(2, 2, dtype=m.int64))),
    ("torch.slogdet not square", lambda m: m.slogdet(m.ones(2, 3))),
    ("logdet half", lambda m: m.logdet(m.ones(3, 3, dtype=m.float16))),
    ("logdet not square", lambda m: m.logdet(m.ones(2, 3))),
    ("logdet 1-D", lambda m: m.logdet(m.ones(2))),
]

ERROR_CASES += [
    ("eigh not square", lambda m: m.linalg.eigh(m.ones(3, 2))),
    ("eigh UPLO", lambda m: m.linalg.eigh(m.ones(3, 3), UPLO="X")),
    ("eigh half", lambda m: m.linalg.eigh(m.ones(3, 3, dtype=m.float16))),
    ("eigh int", lambda m: m.linalg.eigh(m.ones(2, 2, dtype=m.int64))),
    ("eigh 1-D", lambda m: m.linalg.eigh(m.ones(2))),
    ("eigvalsh half", lambda m: m.linalg.eigvalsh(m.ones(3, 3, dtype=m.float16))),
    ("eigvalsh int", lambda m: m.linalg.eigvalsh(m.ones(2, 2, dtype=m.int64))),
    ("qr mode", lambda m: m.linalg.qr(m.ones(3, 2), mode="bad")),
    ("qr 1-D", lambda m: m.linalg.qr(m.ones(3))),
    ("qr half", lambda m: m.linalg.qr(m.ones(3, 3, dtype=m.float16))),
    ("qr int", lambda m: m.linalg.qr(m.ones(2, 2, dtype=m.int64))),
    ("svd 1-D", lambda m: m.linalg.svd(m.ones(3))),
    ("svd half", lambda m: m.linalg.svd(m.ones(3, 3, dtype=m.float16))),
    ("svd int", lambda m: m.linalg.svd(m.ones(3, 3, dtype=m.int32))),
    ("svdvals half", lambda m: m.linalg.svdvals(m.ones(3, 3, dtype=m.float16))),
    ("svdvals int", lambda m: m.linalg.svdvals(m.ones(2, 2, dtype=m.int64))),
    ("qr r backward", lambda m: m.linalg.qr(m.ones(4, 3).requires_grad_(), mode="r").R.sum().backward()),
    ("qr complete backward", lambda m: m.linalg.qr(m.eye(4, 3).requires_grad_(), mode="complete").Q.sum().backward()),
]


@needs_torch
@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("name,fn", ERROR_CASES, ids=[c[0] for c in ERROR_CASES])
def test_errors_match_torch(name, fn):
    want, got = _err(lambda: fn(torch)), _err(lambda: fn(ember))
    assert want is not None and got is not None, (want, got)
    assert str(got) == str(want)
    if isinstance(want, torch.linalg.LinAlgError):
        assert isinstance(got, ember.linalg.LinAlgError)
    assert isinstance(got, RuntimeError) == isinstance(want, RuntimeError)
    assert isinstance(got, NotImplementedError) == isinstance(want, NotImplementedError)


def test_linalg_error_is_a_runtime_error():
    assert issubclass(ember.linalg.LinAlgError, RuntimeError)
    with pytest.raises(ember.linalg.LinAlgError, match=r"^linalg.inv: The diagonal element 2 is zero, the inversion "
                       r"could not be completed because the input matrix is singular.$"):
        LA.inv(ember.tensor(SINGULAR))


def test_ex_forms_report_failures_in_info():
    inverse, info = LA.inv_ex(ember.stack([ember.eye(2), ember.tensor(SINGULAR)]))
    assert info.tolist() == [0, 2]
    assert not np.isfinite(inverse.numpy()[1]).all()
    np.testing.assert_array_equal(inverse.numpy()[0], np.eye(2))
    L, info = LA.cholesky_ex(ember.stack([ember.eye(2), -ember.eye(2)]))
    assert info.tolist() == [0, 1]


@needs_gpu
def test_cuda_slots_name_the_op_and_device():
    x = ember.eye(3).cuda()
    for fn, name in ((LA.inv_ex, "linalg_inv_ex"), (LA.det, "linalg_det"), (LA.cholesky_ex, "linalg_cholesky_ex")):
        with pytest.raises(NotImplementedError, match=f"{name}: .*cuda"):
            fn(x)


# ---------------------------------------------------------------- gradients (float64)
def _check(fn, inputs, forward=True):
    assert gradcheck(fn, inputs, check_forward_ad=forward)
    assert gradgradcheck(fn, inputs)


def _sym(x):
    """A symmetric positive-definite function of x (whose gradient reaches both triangles)."""
    return x @ x.mT + 3 * ember.eye(x.shape[-1], dtype=x.dtype)


@pytest.mark.parametrize("shape", [(3, 3), (2, 3, 3), (1, 1)])
def test_inv_gradients(shape):
    a = t(well_conditioned(shape, seed=11), requires_grad=True)
    _check(LA.inv, (a,))
    _check(lambda x: LA.inv_ex(x).inverse, (a,))
    _check(ember.inverse, (a,))


@pytest.mark.parametrize("sa,sb", [((3, 3), (3, 2)), ((3, 3), (3,)), ((2, 3, 3), (3, 1)), ((3, 3), (2, 3, 2)),
                                   ((2, 3, 3), (2, 3))])
def test_solve_gradients(sa, sb):
    a = t(well_conditioned(sa, seed=12), requires_grad=True)
    b = t(np.random.default_rng(13).standard_normal(sb), requires_grad=True)
    _check(LA.solve, (a, b))
    if len(sb) >= 2 and sb[-1] == 3:
        _check(lambda x, y: LA.solve(x, y, left=False), (a, b))


@pytest.mark.parametrize("shape", [(3, 3), (2, 3, 3), (1, 1)])
@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_gradients(shape, upper):
    x = t(well_conditioned(shape, seed=14) / 2, requires_grad=True)
    _check(lambda y: LA.cholesky(_sym(y), upper=upper), (x,))
    _check(lambda y: LA.cholesky_ex(_sym(y), upper=upper).L, (x,))


@pytest.mark.parametrize("shape", [(3, 3), (2, 3, 3), (1, 1), (0, 0)])
def test_det_slogdet_logdet_gradients(shape):
    a = t(well_conditioned(shape, seed=15), requires_grad=True)
    _check(LA.det, (a,))
    _check(lambda x: LA.slogdet(x).logabsdet, (a,))
    _check(lambda x: LA.slogdet(x)[0] + LA.slogdet(x)[1], (a,))
    _check(lambda x: ember.logdet(x @ x.mT), (a,))


@pytest.mark.parametrize("n", [2, 3])
def test_det_gradient_of_singular_matrices(n):
    """The cofactor matrix from the SVD where A^-1 does not exist (rank n - 1 and below)."""
    rng = np.random.default_rng(16)
    a = rng.standard_normal((n, n))
    a[-1] = a[0] * 2.0  # rank n - 1
    x = t(a, requires_grad=True)
    assert abs(LA.det(x).item()) < 1e-12
    _check(LA.det, (x,), forward=True)
    x.grad = None
    LA.det(x).backward()
    cofactors = np.array([[(-1) ** (i + j) * np.linalg.det(np.delete(np.delete(a, i, 0), j, 1)) for j in range(n)]
                          for i in range(n)])
    np.testing.assert_allclose(x.grad.numpy(), cofactors, rtol=1e-6, atol=1e-9)
    z = t(np.zeros((2, n, n)), requires_grad=True)
    LA.det(z).sum().backward()
    np.testing.assert_array_equal(z.grad.numpy(), np.zeros((2, n, n)))  # the cofactors of 0 are 0


# ---------------------------------------------------------------- eigh, qr, svd values
def _sign_fixed(v, axis):
    """v with each vector (along `axis`) multiplied by the sign of its largest entry."""
    idx = np.expand_dims(np.argmax(np.abs(v), axis=axis), axis)
    return v * np.sign(np.take_along_axis(v, idx, axis))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("n", SIZES)
def test_eigh_matches_numpy(dtype, batch, n):
    a = spd((*batch, n, n), seed=n + 20, dtype=dtype) - 2 * np.eye(n, dtype=dtype)  # mixed signs
    rng = np.random.default_rng(n)
    noisy = a + np.triu(rng.standard_normal(a.shape), 1).astype(dtype)  # only the lower triangle is read
    for x, uplo, ref in ((t(noisy), "L", a), (transposed(noisy.swapaxes(-1, -2).copy()), "U", a)):
        L, V = LA.eigh(x, UPLO=uplo)
        want_l, want_v = np.linalg.eigh(ref)
        close(L, want_l, dtype)
        close(LA.eigvalsh(x, UPLO=uplo), want_l, dtype)
        assert tuple(V.shape) == a.shape and L.dtype == x.dtype
        if n:
            close(_sign_fixed(V.numpy(), -2), _sign_fixed(want_v, -2), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4), (2, 5, 3), (2, 3, 3, 5), (0, 3), (3, 0), (0, 4, 2), (1, 1)])
@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
def test_qr_matches_numpy(dtype, shape, mode):
    a = np.random.default_rng(21).standard_normal(shape).astype(dtype)
    for x in (t(a), transposed(a)):
        Q, R = LA.qr(x, mode=mode)
        if mode == "r":
            assert tuple(Q.shape) == (0,)
            want_r = np.linalg.qr(a, mode="r") if a.size else np.zeros(shape[:-2] + (min(shape[-2:]), shape[-1]), dtype)
            close(np.abs(R.numpy()), np.abs(want_r), dtype)
            continue
        want_q, want_r = np.linalg.qr(a, mode=mode) if a.size else (None, None)
        m, n = shape[-2:]
        kq = min(m, n) if mode == "reduced" else m
        assert tuple(Q.shape) == shape[:-2] + (m, kq) and tuple(R.shape) == shape[:-2] + (kq, n)
        if a.size:
            close(Q, want_q, dtype)
            close(R, want_r, dtype)
        close(Q.numpy() @ R.numpy(), a, dtype)
        close(np.swapaxes(Q.numpy(), -1, -2) @ Q.numpy(), np.broadcast_to(np.eye(kq), shape[:-2] + (kq, kq)), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4), (2, 5, 3), (2, 3, 3, 5), (0, 3), (3, 0), (0, 4, 2), (1, 1)])
@pytest.mark.parametrize("full", [False, True])
def test_svd_matches_numpy(dtype, shape, full):
    a = np.random.default_rng(22).standard_normal(shape).astype(dtype)
    m, n = shape[-2:]
    k = min(m, n)
    for x in (t(a), transposed(a)):
        U, S, Vh = LA.svd(x, full_matrices=full)
        ku, kv = (m, n) if full else (k, k)
        assert tuple(U.shape) == shape[:-2] + (m, ku) and tuple(S.shape) == shape[:-2] + (k,)
        assert tuple(Vh.shape) == shape[:-2] + (kv, n) and S.dtype == x.dtype
        want_s = np.linalg.svd(a, compute_uv=False) if a.size else np.zeros(shape[:-2] + (k,), dtype)
        close(S, want_s, dtype)
        close(LA.svdvals(x), want_s, dtype)
        u, vh = U.numpy()[..., :k], Vh.numpy()[..., :k, :]
        close((u * S.numpy()[..., None, :]) @ vh, a, dtype)
        close(np.swapaxes(U.numpy(), -1, -2) @ U.numpy(), np.broadcast_to(np.eye(ku), shape[:-2] + (ku, ku)), dtype)
        close(Vh.numpy() @ np.swapaxes(Vh.numpy(), -1, -2), np.broadcast_to(np.eye(kv), shape[:-2] + (kv, kv)), dtype)
        if a.size:
            want_u, _, want_vh = np.linalg.svd(a, full_matrices=full)
            close(_sign_fixed(u, -2), _sign_fixed(want_u[..., :k], -2), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(300, 6, 6), (4, 50, 30), (1, 100, 100)])
def test_eigh_qr_svd_over_threads(threads, dtype, shape):
    a = np.random.default_rng(23).standard_normal(shape).astype(dtype)
    s = spd(shape[:-1] + (shape[-2],), seed=24, dtype=dtype)
    close(LA.eigvalsh(t(s)), np.linalg.eigvalsh(s), dtype)
    close(LA.svdvals(t(a)), np.linalg.svd(a, compute_uv=False), dtype)
    Q, R = LA.qr(t(a))
    close(Q.numpy() @ R.numpy(), a, dtype)


# ---------------------------------------------------------------- eigh, qr, svd gradients
def _eigh_invariant(x, uplo="L"):
    """Eigenvalues, and eigenvectors times their first row (each column's sign cancels)."""
    L, V = LA.eigh(_sym(x), UPLO=uplo)
    return L, V[..., :1, :] * V


def _svd_invariant(x, full=False):
    U, S, Vh = LA.svd(x, full_matrices=full)
    k = S.shape[-1]
    return S, U[..., :k] @ Vh[..., :k, :], U[..., :1, :k] * U[..., :k]


@pytest.mark.parametrize("shape", [(3, 3), (2, 3, 3), (1, 1)])
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh_gradients(shape, uplo):
    x = t(well_conditioned(shape, seed=25) / 2, requires_grad=True)
    _check(lambda y: _eigh_invariant(y, uplo), (x,))
    _check(lambda y: LA.eigvalsh(_sym(y), UPLO=uplo), (x,))


@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (3, 3), (2, 4, 3), (2, 3, 5)])
def test_qr_gradients(shape):
    x = t(np.random.default_rng(26).standard_normal(shape), requires_grad=True)
    _check(lambda y: LA.qr(y), (x,))
    if shape[-2] <= shape[-1]:
        _check(lambda y: LA.qr(y, mode="complete"), (x,))


@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (3, 3), (2, 4, 3), (2, 3, 5)])
def test_svd_gradients(shape):
    x = t(np.random.default_rng(27).standard_normal(shape), requires_grad=True)
    _check(_svd_invariant, (x,))
    _check(LA.svdvals, (x,))
    square = shape[-1] == shape[-2]
    assert gradcheck(lambda y: _svd_invariant(y, True)[:2], (x,), check_forward_ad=square)
    assert gradgradcheck(lambda y: _svd_invariant(y, True)[:2], (x,))


def test_svdvals_and_eigvalsh_skip_the_vectors_without_gradients():
    a = t(np.random.default_rng(28).standard_normal((3, 3)))
    assert tuple(ember._linalg_svd_packed(a, False, False).shape) == (3,)
    with ember.no_grad():
        x = t(a.numpy(), requires_grad=True)
        close(LA.svdvals(x), np.linalg.svd(a.numpy(), compute_uv=False), np.float64)


# ---------------------------------------------------------------- higher order, for tests/test_higher_order.py
def _m(values):
    return ember.tensor(values, dtype=ember.float64, requires_grad=True)


_A = [[2.0, -0.5, 0.3], [0.4, 1.5, -0.2], [-0.3, 0.6, 1.8]]
_B = [[1.0, -2.0], [0.5, 3.0], [1.5, 2.0]]
_W = [[1.0, -2.0, 0.5], [0.5, 3.0, -1.0], [1.5, 2.0, 0.25], [-0.5, 1.0, 2.0]]  # 4 x 3
_SING = [[1.0, 2.0, 0.5], [2.0, 4.0, 1.0], [0.3, -0.7, 1.1]]


def _old_cholesky(x):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # deprecated, as torch.cholesky
        return ember.cholesky(x)


def _chol():
    return LA.cholesky(_sym(ember.tensor(_A, dtype=ember.float64)))


def _eigh_packed():
    return ember._linalg_eigh_packed(_sym(ember.tensor(_A, dtype=ember.float64)))


def _qr_packed(a):
    return ember._linalg_qr_packed(ember.tensor(a, dtype=ember.float64))


def _svd_packed(a):
    return ember._linalg_svd_packed(ember.tensor(a, dtype=ember.float64), False)


# name -> [(fn, make_inputs, gradcheck options)]: the gradgradchecks of every differentiable op
# of this group (their harness entries are skipped), merged into test_higher_order.NOT_IN_HARNESS.
HIGHER_ORDER_CASES = {
    "linalg_inv_ex": [(lambda a: LA.inv_ex(a).inverse, lambda: (_m(_A),), {})],
    "linalg_inv": [(LA.inv, lambda: (_m(_A),), {})],
    "inverse": [(ember.inverse, lambda: (_m(_A),), {})],
    "_linalg_solve": [(ember._linalg_solve, lambda: (_m(_A), _m(_B)), {})],
    "linalg_solve": [(LA.solve, lambda: (_m(_A), _m(_B)), {}),
                     (lambda a, b: LA.solve(a, b, left=False), lambda: (_m(_A), _m(_W)), {})],
    "linalg_cholesky_ex": [(lambda x: LA.cholesky_ex(_sym(x)).L, lambda: (_m(_A),), {})],
    "linalg_cholesky": [(lambda x: LA.cholesky(_sym(x), upper=True), lambda: (_m(_A),), {})],
    "cholesky": [(lambda x: _old_cholesky(_sym(x)), lambda: (_m(_A),), {})],
    "_linalg_cholesky_backward": [(lambda g: ember._linalg_cholesky_backward(g * g, _chol(), False),
                                   lambda: (_m(_A),), {})],
    "_linalg_cholesky_jvp": [(lambda g: ember._linalg_cholesky_jvp(g * g, _chol(), True), lambda: (_m(_A),), {})],
    "linalg_det": [(LA.det, lambda: (_m(_A),), {}), (LA.det, lambda: (_m(_SING),), {})],
    "det": [(ember.det, lambda: (_m(_A),), {})],
    "_linalg_det_backward": [(lambda g, a: ember._linalg_det_backward(g, a, LA.det(a)),
                              lambda: (_m(1.5), _m(_A)), {})],
    "_linalg_slogdet_packed": [(ember._linalg_slogdet_packed, lambda: (_m(_A),), {})],
    "_linalg_slogdet_jvp": [(lambda v, a: ember._linalg_slogdet_jvp(v, a), lambda: (_m(_W[:3]), _m(_A)), {})],
    "linalg_slogdet": [(LA.slogdet, lambda: (_m(_A),), {})],
    "slogdet": [(lambda a: ember.slogdet(a).logabsdet, lambda: (_m(_A),), {})],
    "logdet": [(ember.logdet, lambda: (_m(_A),), {})],
    "_linalg_eigh_packed": [(lambda x: ember._linalg_eigh_packed(_sym(x))[..., :1, :],
                             lambda: (_m(_A),), {})],
    "_linalg_eigh_backward": [(lambda g: ember._linalg_eigh_backward(g * g, _eigh_packed()),
                               lambda: (_m(_W),), {})],
    "_linalg_eigh_jvp": [(lambda v: ember._linalg_eigh_jvp(v * v, _eigh_packed()), lambda: (_m(_A),), {})],
    "linalg_eigh": [(_eigh_invariant, lambda: (_m(_A),), {})],
    "linalg_eigvalsh": [(lambda x: LA.eigvalsh(_sym(x)), lambda: (_m(_A),), {})],
    "_linalg_qr_packed": [(ember._linalg_qr_packed, lambda: (_m(_W),), {})],
    "_linalg_qr_backward": [(lambda g: ember._linalg_qr_backward(g * g, _qr_packed(_W), [4, 3], False, True),
                             lambda: (_m([r + [0.5, -1.0, 2.0] for r in _W]),), {})],
    "_linalg_qr_jvp": [(lambda v: ember._linalg_qr_jvp(v * v, _qr_packed(_W), [4, 3], False, True),
                        lambda: (_m(_W),), {})],
    "linalg_qr": [(LA.qr, lambda: (_m(_W),), {}), (LA.qr, lambda: (_m(_B).mT,), {})],
    "_linalg_svd_packed": [(lambda a: ember._linalg_svd_packed(a, False, True), lambda: (_m(_W),), {})],
    "_linalg_svd_backward": [(lambda g: ember._linalg_svd_backward(g * g, _svd_packed(_W), [4, 3], False),
                              lambda: (_m([1.0] * 24),), {})],
    "_linalg_svd_jvp": [(lambda v: ember._linalg_svd_jvp(v * v, _svd_packed(_W), [4, 3], False),
                         lambda: (_m(_W),), {})],
    "linalg_svd": [(_svd_invariant, lambda: (_m(_W),), {})],
    "linalg_svdvals": [(LA.svdvals, lambda: (_m(_W),), {})],
}
JVP_CHECKED = set(HIGHER_ORDER_CASES)  # for tests/test_forward_ad.py OWN_CHECKS


@pytest.mark.parametrize("name", sorted(HIGHER_ORDER_CASES))
def test_jvps_of_every_op_of_the_group(name):
    for fn, make_inputs, options in HIGHER_ORDER_CASES[name]:
        assert gradcheck(fn, make_inputs(), check_forward_ad=True, **options)
