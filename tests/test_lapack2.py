"""ember.linalg beyond the decompositions (issue 11, lapack2): the LAPACK ops give the same
results at 1, 2 and 3 ember threads, and ember keeps libgomp's idle threads from spinning
for milliseconds (which made them ~20x slower at 2 threads on a busy machine)."""
import os
import subprocess
import sys

import numpy as np
import pytest

import ember

LA = ember.linalg


def _random(shape, seed, dtype):
    rng = np.random.default_rng(seed)
    n = shape[-1]
    # Diagonally shifted so every matrix is well conditioned.
    return (rng.standard_normal(shape) + 2 * np.sqrt(n) * np.eye(n)).astype(dtype)


def _lapack_results(a, b):
    x, y = ember.tensor(a), ember.tensor(b)
    spd = ember.tensor(a @ np.swapaxes(a, -1, -2))  # NumPy's product: ember's own splits by threads
    q, r = LA.qr(x)
    u, s, vh = LA.svd(x, full_matrices=False)
    sign, logabsdet = LA.slogdet(x)
    return [LA.inv(x), LA.solve(x, y), LA.det(x), sign, logabsdet, q, r, s, LA.eigvalsh(x + x.mT),
            LA.cholesky(spd)]


# One matrix (never split), batches whose work is just below and above the split (n^3 per
# matrix against 2^15), the batched 64x(32x32) and 512x512 of the bench.
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(1, 64, 64), (3, 32, 32), (64, 32, 32), (5, 33, 33), (7, 3, 3), (512, 512)])
def test_lapack_results_agree_at_1_2_and_3_threads(dtype, shape):
    a = _random(shape, 0, dtype)
    b = np.random.default_rng(1).standard_normal(shape[:-1] + (2,)).astype(dtype)
    prev = ember.get_num_threads()
    try:
        results = {}
        for n in (1, 2, 3):
            ember.set_num_threads(n)
            results[n] = [r.numpy() for r in _lapack_results(a, b)]
    finally:
        ember.set_num_threads(prev)
    for n in (2, 3):
        for got, want in zip(results[n], results[1]):
            # Each matrix goes through the same serial LAPACK call on whichever thread: bitwise equal.
            np.testing.assert_array_equal(got, want)


def test_import_leaves_the_openmp_environment_alone():
    # ember keeps libgomp's default wait policy and never writes the user's OpenMP settings.
    code = "import os, ember; print(os.environ.get('GOMP_SPINCOUNT'), os.environ.get('OMP_WAIT_POLICY'))"
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["None", "None"]
    env["OMP_WAIT_POLICY"] = "active"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["None", "active"]


# ---------------------------------------------------------------- values
try:
    import torch
except ImportError:  # the torch comparisons are skipped without it
    torch = None
from ember.autograd import gradcheck, gradgradcheck  # noqa: E402

needs_torch = pytest.mark.skipif(torch is None, reason="needs torch")
DTYPES = [np.float32, np.float64]
TOL = {np.float32: dict(rtol=2e-4, atol=2e-4), np.float64: dict(rtol=1e-9, atol=1e-9)}
SING = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]])  # rank 2


def close(got, want, dtype=np.float64):
    np.testing.assert_allclose(got.numpy() if hasattr(got, "numpy") else got, want, **TOL[dtype])


def forms(a):
    """a as a contiguous tensor and as one whose last two dims are transposed in memory."""
    return [ember.tensor(a), ember.tensor(np.ascontiguousarray(np.swapaxes(a, -1, -2))).transpose(-2, -1)]


def arr(shape, seed=0, dtype=np.float64):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("ord", ["nuc", 2, -2])
@pytest.mark.parametrize("shape,dim", [((3, 4), (-2, -1)), ((2, 3, 4), (2, 0)), ((4, 3), (1, 0)),
                                       ((2, 5, 3, 2), (1, 2)), ((3, 3), (0, 1))])
@pytest.mark.parametrize("keepdim", [False, True])
def test_singular_value_matrix_norms_match_numpy(dtype, ord, shape, dim, keepdim):
    a = arr(shape, dtype=dtype)
    want = np.linalg.norm(a.astype(np.float64), ord=ord, axis=dim, keepdims=keepdim)
    for x in forms(a):
        got = LA.matrix_norm(x, ord, dim, keepdim)
        assert got.dtype == x.dtype
        close(got, want, dtype)
        close(LA.norm(x, ord, dim, keepdim), want, dtype)
    if ord == "nuc":
        close(ember.norm(ember.tensor(a), "nuc", dim, keepdim), want, dtype)
        close(ember.tensor(a).norm("nuc", dim, keepdim), want, dtype)


def test_singular_value_norms_of_2d_inputs_dtype_and_empty():
    a = arr((3, 4))
    for ord in ("nuc", 2, -2):
        close(LA.norm(ember.tensor(a), ord), np.linalg.norm(a, ord))
        got = LA.matrix_norm(ember.tensor(a).float(), ord, dtype=ember.float64)
        assert got.dtype == ember.float64
        close(got, np.linalg.norm(a, ord), np.float32)
    close(ember.norm(ember.tensor(a), "nuc"), np.linalg.norm(a, "nuc"))
    # No singular values: 0, as PyTorch (NumPy refuses).
    assert LA.matrix_norm(ember.zeros(0, 3), 2).item() == 0
    assert LA.matrix_norm(ember.zeros(3, 0), "nuc").item() == 0
    assert tuple(LA.matrix_norm(ember.zeros(2, 0, 3), "nuc", keepdim=True).shape) == (2, 1, 1)
    assert tuple(LA.matrix_norm(ember.zeros(0, 2, 3), -2).shape) == (0,)
    # A rank-deficient matrix: its -2 norm is 0.
    assert abs(LA.matrix_norm(ember.tensor(SING), -2).item()) < 1e-12


@pytest.mark.parametrize("dtype", DTYPES)
def test_matrix_rank_matches_numpy(dtype):
    mats = np.stack([SING, np.eye(3), np.zeros((3, 3)), arr((3, 3), 1), np.outer([1.0, 2, 3], [1.0, -1, 2])])
    mats = mats.astype(dtype)
    want = np.linalg.matrix_rank(mats.astype(np.float64))
    for x in forms(mats):
        got = LA.matrix_rank(x)
        assert got.dtype == ember.int64 and tuple(got.shape) == (5,)
        np.testing.assert_array_equal(got.numpy(), want)
        np.testing.assert_array_equal(LA.matrix_rank(x + x.mT, hermitian=True).numpy(),
                                      np.linalg.matrix_rank((mats + np.swapaxes(mats, -1, -2)).astype(np.float64),
                                                            hermitian=True))
    wide = arr((2, 3, 5), 2, dtype)
    np.testing.assert_array_equal(LA.matrix_rank(ember.tensor(wide)).numpy(), [3, 3])
    # Tolerances: singular values of diag(1, 0.1, 0.001).
    d = ember.tensor(np.diag([1.0, 0.1, 0.001]).astype(dtype))
    assert LA.matrix_rank(d, atol=0.05).item() == 2
    assert LA.matrix_rank(d, rtol=0.05).item() == 2
    assert LA.matrix_rank(d, atol=0.0005, rtol=0.05).item() == 2
    assert LA.matrix_rank(d, atol=0.5, rtol=0.0).item() == 1
    assert LA.matrix_rank(d, 0.01).item() == 2  # legacy tol: atol
    assert LA.matrix_rank(d, tol=ember.tensor(0.5)).item() == 1
    batch = ember.tensor(np.stack([np.diag([1.0, 0.1, 0.001])] * 2).astype(dtype))
    np.testing.assert_array_equal(LA.matrix_rank(batch, atol=ember.tensor([0.05, 0.0001])).numpy(), [2, 3])
    np.testing.assert_array_equal(LA.matrix_rank(batch, rtol=ember.tensor([0.5, 0.01])).numpy(), [1, 2])
    assert LA.matrix_rank(ember.zeros(2, 0, 3)).numpy().tolist() == [0, 0]


@needs_torch
@pytest.mark.parametrize("kwargs", [{}, {"atol": 0.5}, {"rtol": 0.3}, {"atol": 0.1, "rtol": 0.2}, {"hermitian": True},
                                    {"atol": 1.0, "hermitian": True}, {"tol": 0.7}])
def test_matrix_rank_and_pinv_tolerances_match_torch(kwargs):
    a = np.stack([SING + SING.T, np.diag([3.0, 0.4, 0.05]), arr((3, 3), 3) + arr((3, 3), 3).T])
    e, t = ember.tensor(a), torch.tensor(a)
    np.testing.assert_array_equal(LA.matrix_rank(e, **kwargs).numpy(), torch.linalg.matrix_rank(t, **kwargs).numpy())
    pk = {("rcond" if k == "tol" else k): v for k, v in kwargs.items()}
    close(LA.pinv(e, **pk), torch.linalg.pinv(t, **pk).numpy())
    tensor_kwargs = {k: (v if isinstance(v, bool) else ember.tensor([v, v / 10, v])) for k, v in pk.items()}
    torch_kwargs = {k: (v if isinstance(v, bool) else torch.tensor([v, v / 10, v])) for k, v in pk.items()}
    if "rcond" not in pk:
        np.testing.assert_array_equal(LA.matrix_rank(e, **tensor_kwargs).numpy(),
                                      torch.linalg.matrix_rank(t, **torch_kwargs).numpy())
    close(LA.pinv(e, **tensor_kwargs), torch.linalg.pinv(t, **torch_kwargs).numpy())


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(3, 3), (4, 3), (2, 3, 5), (2, 2, 4, 4), (1, 1)])
def test_pinv_matches_numpy(dtype, shape):
    a = arr(shape, 4, dtype)
    for x in forms(a):
        got = LA.pinv(x)
        assert got.dtype == x.dtype and tuple(got.shape) == shape[:-2] + (shape[-1], shape[-2])
        close(got, np.linalg.pinv(a.astype(np.float64)), dtype)
        close(ember.pinverse(x), np.linalg.pinv(a.astype(np.float64)), dtype)
        close(x.pinverse(), np.linalg.pinv(a.astype(np.float64)), dtype)
    if shape[-1] == shape[-2]:
        s = a + np.swapaxes(a, -1, -2)
        close(LA.pinv(ember.tensor(s), hermitian=True), np.linalg.pinv(s.astype(np.float64), hermitian=True), dtype)


def test_pinv_of_singular_matrices_and_rcond():
    for x in forms(SING):
        close(LA.pinv(x), np.linalg.pinv(SING))
        close(LA.pinv(x, rcond=0.3), np.linalg.pinv(SING, rcond=0.3))
        close(LA.pinv(x, 0.3), np.linalg.pinv(SING, rcond=0.3))
        close(LA.pinv(x, rcond=ember.tensor(0.3)), np.linalg.pinv(SING, rcond=0.3))
        close(LA.pinv(x + x.mT, hermitian=True), np.linalg.pinv(SING + SING.T, hermitian=True))
    close(LA.pinv(ember.zeros(3, 4)), np.zeros((4, 3)))
    assert tuple(LA.pinv(ember.zeros(2, 0, 3)).shape) == (2, 3, 0)
    # The Moore-Penrose conditions.
    p = LA.pinv(ember.tensor(SING)).numpy()
    close(SING @ p @ SING, SING)
    close(p @ SING @ p, p)


COND_ORDS = [None, 2, -2, 1, -1, np.inf, -np.inf, "fro", "nuc"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("p", COND_ORDS)
def test_cond_matches_numpy(dtype, p):
    a = arr((2, 4, 4), 5, dtype) + 3 * np.eye(4, dtype=dtype)
    want = np.linalg.cond(a.astype(np.float64), p)
    for x in forms(a):
        got = LA.cond(x) if p is None else LA.cond(x, p)
        assert got.dtype == x.dtype and tuple(got.shape) == (2,)
        close(got, want, dtype)
    if p in (None, 2, -2):
        r = arr((3, 5), 6, dtype)
        close(LA.cond(ember.tensor(r), p), np.linalg.cond(r.astype(np.float64), p), dtype)


@pytest.mark.parametrize("p", [1, -1, np.inf, "fro", "nuc"])
def test_cond_of_singular_and_empty_matrices(p):
    assert LA.cond(ember.tensor(SING), p).item() == np.inf
    assert LA.cond(ember.zeros(3, 3), p).item() == np.inf
    got = LA.cond(ember.zeros(2, 0, 0), p)
    assert got.numpy().tolist() == [0.0, 0.0]
    assert np.isnan(LA.cond(ember.zeros(3, 3)).item())  # 0 / 0 in the 2-norm, as PyTorch


@pytest.mark.parametrize("n", [-3, -2, -1, 0, 1, 2, 3, 6, 7])
@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4), (0, 2, 2), (0, 0)])
def test_matrix_power_matches_numpy(n, shape):
    a = arr(shape, 7) / 2 + np.eye(shape[-1])
    want = np.linalg.matrix_power(a, n) if a.size else np.zeros(shape)
    for x in forms(a):
        got = LA.matrix_power(x, n)
        close(got, want)
        close(ember.matrix_power(x, n), want)
        close(x.matrix_power(n), want)
        if n == 1:
            assert got.data_ptr() != x.data_ptr()  # a copy, as PyTorch
    ints = np.arange(9).reshape(3, 3) % 4 - 1
    for n_ in (0, 1, 2, 5):
        got = LA.matrix_power(ember.tensor(ints), n_)
        assert got.dtype == ember.int64
        np.testing.assert_array_equal(got.numpy(), np.linalg.matrix_power(ints, n_))


# ---------------------------------------------------------------- lstsq
def _np_lstsq(a, b, rcond=None):
    """NumPy's per-matrix lstsq (solution, rank, singular values) over any batch."""
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a2 = np.broadcast_to(a, batch + a.shape[-2:]).reshape(-1, *a.shape[-2:])
    b2 = np.broadcast_to(b, batch + b.shape[-2:]).reshape(-1, *b.shape[-2:])
    out = [np.linalg.lstsq(x, y, rcond=rcond) for x, y in zip(a2, b2)]
    sol = np.stack([o[0] for o in out]).reshape(batch + (a.shape[-1], b.shape[-1]))
    return sol, np.array([o[2] for o in out]).reshape(batch)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("sa,sb", [((5, 3), (5, 2)), ((3, 5), (3, 2)), ((4, 4), (4, 1)), ((2, 6, 3), (2, 6, 4)),
                                   ((2, 6, 3), (1, 6, 2)), ((3, 4, 2), (3, 4))])
def test_lstsq_matches_numpy(dtype, sa, sb):
    a, b = arr(sa, 8, dtype), arr(sb, 9, dtype)
    vector = len(sb) == len(sa) - 1
    want, want_rank = _np_lstsq(a.astype(np.float64), (b[..., None] if vector else b).astype(np.float64))
    if vector:
        want = want[..., 0]
    for x in forms(a):
        r = LA.lstsq(x, ember.tensor(b))
        assert r.solution.dtype == x.dtype
        close(r.solution, want, dtype)
        np.testing.assert_array_equal(r.rank.numpy(), want_rank)
        assert tuple(r.residuals.shape) == (0,) and tuple(r.singular_values.shape) == (0,)  # gelsy's
        sol, residuals, rank, sv = LA.lstsq(x, ember.tensor(b), driver="gelsd")
        close(sol, want, dtype)
        close(sv, np.linalg.svd(a.astype(np.float64), compute_uv=False), dtype)
        if sa[-2] > sa[-1]:
            bb = b[..., None] if vector else b
            res = ((np.matmul(a.astype(np.float64), want[..., None] if vector else want) - bb) ** 2).sum(-2)
            close(residuals, res, dtype)
        else:
            assert tuple(residuals.shape) == (0,)


def test_lstsq_rank_deficient_rcond_and_drivers():
    a = SING[:, :2] @ np.array([[1.0, 0.5, 2.0], [0.0, 0.0, 0.0]])  # rank 1, 3 x 3
    b = arr((3, 2), 10)
    r = LA.lstsq(ember.tensor(a), ember.tensor(b))
    want, _, want_rank, _ = np.linalg.lstsq(a, b, rcond=None)
    close(r.solution, want)
    assert r.rank.item() == want_rank == 1
    d = np.diag([1.0, 0.1, 0.001])
    for rcond, rank in ((0.05, 2), (0.5, 1), (None, 3)):
        got = LA.lstsq(ember.tensor(d), ember.tensor(b), rcond)
        assert got.rank.item() == rank
        close(got.solution, np.linalg.lstsq(d, b, rcond=rcond if rcond is not None else -1)[0])
    tall = arr((5, 3), 11)
    res = LA.lstsq(ember.tensor(tall), ember.tensor(arr((5, 2), 12)), driver="gels")
    assert tuple(res.rank.shape) == (0,) and tuple(res.residuals.shape) == (2,)
    # A rank-deficient tall system has no residuals.
    ones = LA.lstsq(ember.tensor(np.ones((5, 3))), ember.tensor(arr((5, 2), 12)), driver="gelsd")
    assert tuple(ones.residuals.shape) == (0,)
    empty = LA.lstsq(ember.zeros(0, 3, dtype=ember.float64), ember.zeros(0, 2, dtype=ember.float64))
    assert empty.solution.numpy().tolist() == [[0.0, 0.0]] * 3 and empty.rank.item() == 0
    wide0 = LA.lstsq(ember.zeros(4, 0, dtype=ember.float64), ember.zeros(4, 2, dtype=ember.float64), driver="gelsd")
    assert tuple(wide0.solution.shape) == (0, 2) and wide0.residuals.numpy().tolist() == [0.0, 0.0]


@needs_torch
@pytest.mark.parametrize("driver", [None, "gels", "gelsy", "gelsd", "gelss"])
@pytest.mark.parametrize("sa,sb", [((5, 3), (5, 2)), ((3, 5), (3,)), ((2, 4, 3), (2, 4, 2)), ((2, 4, 3), (2, 4))])
def test_lstsq_matches_torch(driver, sa, sb):
    a, b = arr(sa, 13), arr(sb, 14)
    got = LA.lstsq(ember.tensor(a), ember.tensor(b), driver=driver)
    want = torch.linalg.lstsq(torch.tensor(a), torch.tensor(b), driver=driver)
    for g, w in zip(got, want):
        assert tuple(g.shape) == tuple(w.shape) and str(g.dtype)[6:] == str(w.dtype)[6:]
        close(g, w.numpy())


# ---------------------------------------------------------------- errors
def _err(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 (the class is what is compared)
        return type(e), str(e)
    return None, ""


ERROR_CASES = {
    "matrix_norm bad ord": lambda m: m.linalg.matrix_norm(m.ones(3, 3), 3),
    "matrix_norm bad str ord": lambda m: m.linalg.matrix_norm(m.ones(3, 3), "abc"),
    "matrix_norm 1-D nuc": lambda m: m.linalg.matrix_norm(m.ones(3), "nuc"),
    "matrix_norm 1-D 2": lambda m: m.linalg.matrix_norm(m.ones(3), 2),
    "matrix_norm int": lambda m: m.linalg.matrix_norm(m.ones(3, 3, dtype=m.int64), "nuc"),
    "matrix_norm same dims": lambda m: m.linalg.matrix_norm(m.ones(3, 3), -2, dim=(1, 1)),
    "matrix_norm empty -2": lambda m: m.linalg.matrix_norm(m.ones(3, 0), -2),
    "norm nuc 1-D": lambda m: m.linalg.norm(m.ones(3), "nuc"),
    "matrix_rank 1-D": lambda m: m.linalg.matrix_rank(m.ones(3)),
    "matrix_rank hermitian non-square": lambda m: m.linalg.matrix_rank(m.ones(3, 4), hermitian=True),
    "pinv 1-D": lambda m: m.linalg.pinv(m.ones(3)),
    "pinv int": lambda m: m.linalg.pinv(m.ones(3, 4, dtype=m.int32)),
    "pinv hermitian non-square": lambda m: m.linalg.pinv(m.ones(3, 4), hermitian=True),
    "cond 1-D": lambda m: m.linalg.cond(m.ones(3)),
    "cond bad ord": lambda m: m.linalg.cond(m.ones(3, 3), 3.5),
    "cond bad str ord": lambda m: m.linalg.cond(m.ones(3, 3), "abc"),
    "cond 1 non-square": lambda m: m.linalg.cond(m.ones(3, 4), 1),
    "cond inf non-square": lambda m: m.linalg.cond(m.ones(3, 4), float("inf")),
    "cond fro non-square": lambda m: m.linalg.cond(m.ones(3, 4), "fro"),
    "matrix_power non-square": lambda m: m.linalg.matrix_power(m.ones(3, 4), 2),
    "matrix_power 1-D": lambda m: m.linalg.matrix_power(m.ones(3), 2),
    "matrix_power int negative": lambda m: m.linalg.matrix_power(m.ones(3, 3, dtype=m.int64), -1),
    "lstsq 1-D A": lambda m: m.linalg.lstsq(m.ones(3), m.ones(3)),
    "lstsq 0-D B": lambda m: m.linalg.lstsq(m.ones(3, 2), m.ones(())),
    "lstsq dims": lambda m: m.linalg.lstsq(m.ones(3, 2), m.ones(2, 3, 2)),
    "lstsq rows": lambda m: m.linalg.lstsq(m.ones(3, 2), m.ones(4, 2)),
    "lstsq vector rows": lambda m: m.linalg.lstsq(m.ones(3, 2), m.ones(2)),
    "lstsq dtypes": lambda m: m.linalg.lstsq(m.ones(3, 2), m.ones(3, 2, dtype=m.float64)),
    "lstsq driver": lambda m: m.linalg.lstsq(m.ones(3, 2), m.ones(3, 2), driver="foo"),
}

# Without torch, the messages of the new checks (the others are checked by the other suites).
ERROR_MESSAGES = {
    "matrix_norm bad ord": "linalg.matrix_norm: Order 3 not supported.",
    "matrix_rank 1-D": "torch.linalg.matrix_rank: The input tensor input must have at least 2 dimensions.",
    "pinv 1-D": "linalg.pinv(Float{[3]}): expected a tensor with 2 or more dimensions of float, double",
    "cond bad ord": "linalg.cond got an invalid norm type: 3.5",
    "cond 1 non-square": "linalg.cond(ord=1): A must be batches of square matrices, but they are 3 by 4 matrices",
    "cond fro non-square": "linalg.cond(ord=fro): A must be batches of square matrices, but they are 3 by 4 matrices",
    "matrix_power non-square": "linalg.matrix_power: A must be batches of square matrices, but they are 3 by 4",
    "matrix_power 1-D": "linalg.matrix_power: The input tensor A must have at least 2 dimensions.",
    "lstsq rows": "torch.linalg.lstsq: input.size(-2) should match other.size(-2)",
    "lstsq driver": "torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)",
}


@pytest.mark.parametrize("name", sorted(ERROR_CASES))
def test_errors(name):
    cls, msg = _err(lambda: ERROR_CASES[name](ember))
    assert cls is not None, f"{name}: no error"
    if name in ERROR_MESSAGES:
        assert issubclass(cls, RuntimeError) and ERROR_MESSAGES[name] in msg
    if torch is not None:
        want_cls, want_msg = _err(lambda: ERROR_CASES[name](torch))
        assert cls.__name__ == want_cls.__name__, (msg, want_msg)
        first = want_msg.splitlines()[0].split(" (")[0]
        assert first.replace("torch.", "ember.") in msg or first in msg, (msg, want_msg)


# ---------------------------------------------------------------- gradients
def _m(values):
    return ember.tensor(values, dtype=ember.float64, requires_grad=True)


_A = [[2.0, -0.5, 0.3], [0.4, 1.5, -0.2], [-0.3, 0.6, 1.8]]
_W = [[1.0, -2.0, 0.5], [0.5, 3.0, -1.0], [1.5, 2.0, 0.25], [-0.5, 1.0, 2.0]]  # 4 x 3, distinct singular values


def _sym(x):
    return (x + x.mT) / 2


# name -> [(fn, make_inputs, gradcheck options)]: gradgradchecks of the new ops (their harness
# entries are skipped), merged into test_higher_order.NOT_IN_HARNESS; JVPs checked below.
HIGHER_ORDER_CASES = {
    # integer results: a constant factor to the graph around them
    "linalg_matrix_rank.atol_rtol_tensor": [(lambda a: LA.matrix_rank(a.detach(), atol=ember.tensor(0.1)) * a,
                                             lambda: (_m(_A),), {})],
    "linalg_matrix_rank.atol_rtol_float": [(lambda a: LA.matrix_rank(a.detach(), rtol=0.1) * a, lambda: (_m(_A),), {})],
    "linalg_matrix_rank": [(lambda a: LA.matrix_rank(a.detach(), 0.1) * a, lambda: (_m(_A),), {})],
    "linalg_matrix_rank.tol_tensor": [(lambda a: LA.matrix_rank(a.detach(), ember.tensor(0.1)) * a,
                                       lambda: (_m(_A),), {})],
    "linalg_pinv.atol_rtol_tensor": [(lambda a: LA.pinv(a, atol=ember.tensor(0.01)), lambda: (_m(_W),), {}),
                                     (lambda a: LA.pinv(_sym(a), hermitian=True), lambda: (_m(_A),), {})],
    "linalg_pinv.atol_rtol_float": [(lambda a: LA.pinv(a, rtol=0.01), lambda: (_m(_W).mT,), {})],
    "linalg_pinv": [(lambda a: LA.pinv(a, 0.01), lambda: (_m(_A),), {})],
    "linalg_pinv.rcond_tensor": [(lambda a: LA.pinv(a, ember.tensor(0.01)), lambda: (_m(_W),), {})],
    "pinverse": [(ember.pinverse, lambda: (_m(_W),), {})],
    "linalg_cond": [(LA.cond, lambda: (_m(_W),), {}), (lambda a: LA.cond(a, -2), lambda: (_m(_A),), {}),
                    (lambda a: LA.cond(a, 1), lambda: (_m(_A),), {})],
    "linalg_cond.p_str": [(lambda a: LA.cond(a, "fro"), lambda: (_m(_A),), {}),
                          (lambda a: LA.cond(a, "nuc"), lambda: (_m(_A),), {})],
    "linalg_matrix_power": [(lambda a: LA.matrix_power(a, 3), lambda: (_m(_A),), {}),
                            (lambda a: LA.matrix_power(a, -2), lambda: (_m(_A),), {}),
                            (lambda a: LA.matrix_power(a, 0) * a, lambda: (_m(_A),), {})],
    "matrix_power": [(lambda a: ember.matrix_power(a, 5), lambda: (_m(_A),), {})],
    "linalg_lstsq": [(lambda a, b: LA.lstsq(a, b).solution, lambda: (_m(_W), _m(_W[::-1])), {}),
                     (lambda a, b: LA.lstsq(a, b, driver="gelsd")[:2], lambda: (_m(_W), _m(_W[::-1])), {}),
                     (lambda a, b: LA.lstsq(a, b).solution, lambda: (_m(_W).mT, _m(_A[0])), {})],
}
JVP_CHECKED = set(HIGHER_ORDER_CASES)  # for tests/test_forward_ad.py OWN_CHECKS


@pytest.mark.parametrize("name", sorted(HIGHER_ORDER_CASES))
def test_gradients_and_jvps_of_the_new_ops(name):
    for fn, make_inputs, options in HIGHER_ORDER_CASES[name]:
        assert gradcheck(fn, make_inputs(), check_forward_ad=True, **options)
        assert gradgradcheck(fn, make_inputs(), **options)


# The singular-value norms extend ops whose other orders are checked in tests/test_blas.py.
@pytest.mark.parametrize("fn", [
    lambda a: LA.matrix_norm(a, "nuc"), lambda a: LA.matrix_norm(a, 2), lambda a: LA.matrix_norm(a, -2),
    lambda a: LA.matrix_norm(a.reshape(2, 2, 3), -2, dim=(0, 2), keepdim=True), lambda a: LA.norm(a, "nuc"),
    lambda a: LA.norm(a, 2), lambda a: LA.norm(a, -2, dim=(1, 0)), lambda a: ember.norm(a, "nuc"),
])
def test_singular_value_norm_gradients(fn):
    assert gradcheck(fn, (_m(_W),), check_forward_ad=True)
    assert gradgradcheck(fn, (_m(_W),))


@needs_torch
def test_gradients_match_torch():
    a = np.array(_W)
    cases = [(lambda m, x: m.linalg.pinv(x)), (lambda m, x: m.linalg.cond(x)),
             (lambda m, x: m.linalg.matrix_norm(x, "nuc")), (lambda m, x: m.linalg.matrix_norm(x, -2)),
             (lambda m, x: m.linalg.matrix_power(x[:3], -2)),
             (lambda m, x: m.linalg.lstsq(x, x[:, :2] * 2 + 1).solution)]
    # (torch's cond(p=1) has no gradient: it fills its inverse in place)
    for fn in cases:
        e = ember.tensor(a, requires_grad=True)
        t = torch.tensor(a, requires_grad=True)
        fn(ember, e).sum().backward()
        fn(torch, t).sum().backward()
        close(e.grad, t.grad.numpy())
