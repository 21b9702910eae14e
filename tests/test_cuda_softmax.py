"""softmax / log_softmax on CUDA against the CPU kernels (skipped without a GPU):
every float dtype and dim, the three CUDA kernels (a warp per short row, a
block per long row with and without the shared-memory cache, a thread per line
when the dim is not the last), layouts, empty and 0-d inputs, dtype=, -inf and
NaN, and gradients that stay on the device."""
import numpy as np
import pytest

import ember

gpu = pytest.mark.skipif(not ember.cuda.is_available(), reason="needs a CUDA GPU")
pytestmark = gpu

FLOATS = ["float16", "bfloat16", "float32", "float64"]
TOL = {"float16": 1e-3, "bfloat16": 8e-3, "float32": 2e-6, "float64": 1e-12}
OPS = [ember.softmax, ember.log_softmax]


def numpy(t):
    t = t.cpu()
    if t.dtype == ember.bfloat16:
        t = t.float()
    return np.array(t.numpy())


def randn(shape, dtype, seed=0, scale=3.0):
    rng = np.random.default_rng(seed)
    a = (rng.standard_normal(shape) * scale).astype(np.float64 if dtype == "float64" else np.float32)
    return ember.from_numpy(a).to(getattr(ember, dtype))


def check(op, x_cpu, dim, dtype=None, tol=None):
    """op on the CUDA copy of x_cpu matches op on the CPU."""
    x = x_cpu.cuda()
    got = op(x, dim) if dtype is None else op(x, dim, dtype=dtype)
    want = op(x_cpu, dim) if dtype is None else op(x_cpu, dim, dtype=dtype)
    assert got.is_cuda and got.dtype == want.dtype and tuple(got.shape) == tuple(want.shape)
    t = tol if tol is not None else TOL[str(want.dtype).replace("ember.", "")]
    np.testing.assert_allclose(numpy(got), numpy(want), rtol=t, atol=t)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(7,), (3, 5), (4, 33), (6, 128), (5, 300), (3, 1000), (2, 1024)])
def test_last_dim_warp_rows(op, dtype, shape):
    check(op, randn(shape, dtype), -1)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("cols", [1025, 4000, 4099, 8192, 12288, 20000, 65536])
def test_last_dim_block_rows(op, dtype, cols):
    # 4099: not a multiple of the vector width; 20000 / 65536 floats: too long for the cache.
    check(op, randn((3, cols), dtype, seed=cols), 1)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("dim", [0, 1, 2, -1, -2, -3])
def test_every_dim(op, dtype, dim):
    check(op, randn((4, 37, 9), dtype), dim)


@pytest.mark.parametrize("op", OPS)
def test_big_8192_square(op):
    check(op, randn((8192, 8192), "float32", seed=1), 1)


@pytest.mark.parametrize("op", OPS)
def test_misaligned_long_rows(op):
    # A view starting one element in: the 16-byte path must not be taken.
    flat = randn((2 * 8192 + 1,), "float32")
    x = flat.cuda()[1:].reshape(2, 8192)
    np.testing.assert_allclose(numpy(op(x, 1)), numpy(op(flat[1:].reshape(2, 8192), 1)), rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", FLOATS)
def test_noncontiguous_inputs(op, dtype):
    x = randn((30, 40), dtype)
    for view in (lambda t: t.t(), lambda t: t[::2, 1::3], lambda t: t.t()[:, ::2]):
        for dim in (0, 1):
            g = view(x.cuda())
            assert not g.is_contiguous()
            got = op(g, dim)
            np.testing.assert_allclose(numpy(got), numpy(op(view(x), dim)), rtol=TOL[dtype], atol=TOL[dtype])


@pytest.mark.parametrize("op", OPS)
def test_empty_and_zero_d(op):
    for shape, dim in [((0, 5), 1), ((5, 0), 1), ((5, 0), 0), ((2, 0, 3), 2)]:
        r = op(ember.zeros(shape, device="cuda"), dim)
        assert r.is_cuda and tuple(r.shape) == shape
    s = ember.tensor(1.5).cuda()
    for dim in (0, -1):
        np.testing.assert_array_equal(numpy(op(s, dim)), numpy(op(ember.tensor(1.5), dim)))
    with pytest.raises(IndexError):
        op(s, 1)


@pytest.mark.parametrize("op", OPS)
def test_dtype_argument(op):
    x = randn((6, 2000), "float16")
    check(op, x, 1, dtype=ember.float32, tol=2e-6)
    check(op, randn((6, 50), "float32"), 1, dtype=ember.float64, tol=1e-12)
    check(op, randn((6, 50), "float32"), 0, dtype=ember.bfloat16)


def test_integer_input_raises():
    x = ember.ones(3, 4, dtype=ember.int64).cuda()
    with pytest.raises(RuntimeError, match="softmax"):
        ember.softmax(x, 1)
    r = ember.softmax(x, 1, dtype=ember.float32)     # dtype= converts first
    np.testing.assert_allclose(numpy(r), np.full((3, 4), 0.25, np.float32))


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("cols", [5, 700, 3000, 30000])
def test_infinities_and_nan(op, cols):
    a = np.random.default_rng(2).standard_normal((4, cols)).astype(np.float32)
    a[0, :] = -np.inf                  # a line of -inf: NaN, as on the CPU
    a[1, ::2] = -np.inf                # some -inf: they get 0 (or -inf)
    a[2, cols // 2] = np.nan           # NaN spoils its line
    a[3, cols - 1] = 80.0              # one large value
    check(op, ember.from_numpy(a), 1)
    check(op, ember.from_numpy(np.ascontiguousarray(a.T)), 0)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("shape,dim", [((8, 300), 1), ((3, 5000), 1), ((6, 7, 5), 1)])
def test_gradients_stay_on_device(op, shape, dim):
    x_cpu = randn(shape, "float32", seed=3)
    w_cpu = randn(shape, "float32", seed=4)
    x = x_cpu.cuda().detach().requires_grad_()
    (op(x, dim) * w_cpu.cuda()).sum().backward()
    xc = x_cpu.detach().requires_grad_()
    (op(xc, dim) * w_cpu).sum().backward()
    assert x.grad.is_cuda
    np.testing.assert_allclose(numpy(x.grad), numpy(xc.grad), rtol=1e-5, atol=1e-6)
