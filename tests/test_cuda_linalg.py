"""mm, bmm, dot and matmul on CUDA, through cuBLAS and through ember's tiled
kernel, against the same ember ops on the CPU; the cuBLAS loader without a GPU."""
import os
import subprocess
import sys

import numpy as np
import pytest

import ember

HAS_GPU = ember.cuda.is_available()
gpu = pytest.mark.skipif(not HAS_GPU, reason="needs a CUDA GPU")
no_gpu = pytest.mark.skipif(HAS_GPU, reason="checks the behaviour without a GPU")

FLOATS = ["float32", "float64", "float16", "bfloat16"]
# Error bound relative to (|A| @ |B|): accumulation order for float32/64
# (TF32 would miss float32's by 50x); for the half types a few roundings to
# the output type (cuBLAS may reduce split-K partials in it, as PyTorch allows).
RTOL = {"float32": 2e-5, "float64": 1e-12, "float16": 4e-3, "bfloat16": 3e-2}
PATHS = ["cublas", "ember"]


@pytest.fixture(params=PATHS)
def path(request):
    """Runs the test with cuBLAS and with ember's kernel (skips cuBLAS when it did not load)."""
    prev = ember.backends.cuda.preferred_blas_library()
    chosen = ember.backends.cuda.preferred_blas_library(request.param)
    try:
        if chosen != request.param:
            pytest.skip(f"cuBLAS is not available: {ember.backends.cuda.cublas_status()}")
        yield request.param
    finally:
        ember.backends.cuda.preferred_blas_library(prev)


def rand(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    t = ember.from_numpy(rng.uniform(-1, 1, size=shape).astype(np.float64))
    return t.to(getattr(ember, dtype))


def as_numpy(t):
    t = t.detach().cpu()
    return np.array(t.to(ember.float64).numpy())


def check(result, a, b, op, dtype):
    """`result` (on the GPU) against `op` on CPU copies of a and b, scaled by |a| op |b|."""
    assert result.is_cuda and result.dtype == getattr(ember, dtype)
    ca, cb = a.detach().cpu(), b.detach().cpu()
    ref = op(ca, cb)
    assert tuple(result.shape) == tuple(ref.shape)
    scale = as_numpy(op(ember.abs(ca).to(ember.float64), ember.abs(cb).to(ember.float64)))
    err = np.abs(as_numpy(result) - as_numpy(ref))
    assert np.all(err <= RTOL[dtype] * scale + 1e-30), f"max error {err.max()} vs scale {scale.max()}"


# ---------------------------------------------------------------- mm
SIZES = [(0, 3, 4), (3, 4, 0), (3, 0, 4), (1, 1, 1), (1, 7, 1), (5, 1, 3), (17, 13, 19), (127, 129, 131),
         (128, 256, 64), (1000, 777, 513)]


@gpu
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("m,k,n", SIZES)
def test_mm_sizes(path, dtype, m, k, n):
    a, b = rand((m, k), dtype, 1).cuda(), rand((k, n), dtype, 2).cuda()
    r = ember.mm(a, b)
    check(r, a, b, ember.mm, dtype)
    assert r.is_contiguous()
    if k == 0:
        assert np.all(as_numpy(r) == 0)


def layouts(t):
    """t's values as: contiguous, a transposed view, every other row, every other column, a 2-D stride."""
    m, n = t.shape
    big = ember.zeros(2 * m + 1, 3 * n + 2, dtype=t.dtype, device=t.device)
    yield "contig", t
    yield "transposed", t.t().contiguous().t()
    rows = big[1::2][:m, :n]
    rows.copy_(t)
    yield "rows", rows
    cols = big[:m, 2::3][:, :n]
    cols.copy_(t)
    yield "cols", cols
    both = big[1::2, 1::3][:m, :n]
    both.copy_(t)
    yield "both", both


@gpu
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("m,k,n", [(1, 9, 1), (37, 41, 43), (130, 70, 129)])
def test_mm_layouts(path, dtype, m, k, n):
    a0, b0 = rand((m, k), dtype, 3), rand((k, n), dtype, 4)
    for ka, a in layouts(a0.cuda()):
        for kb, b in layouts(b0.cuda()):
            check(ember.mm(a, b), a, b, ember.mm, dtype)


@gpu
def test_mm_float32_is_true_fp32(path):
    # 1 + 2^-15 needs 16 mantissa bits: TF32 (10 bits) would return 1.0.
    a = ember.full((64, 64), 1.0 + 2.0 ** -15, dtype=ember.float32).cuda()
    r = ember.mm(a, ember.eye(64).cuda())
    assert np.all(as_numpy(r) == 1.0 + 2.0 ** -15)


@gpu
def test_mm_out_and_method(path):
    a, b = rand((9, 5), "float32").cuda(), rand((5, 7), "float32", 1).cuda()
    out = ember.empty(9, 7, device="cuda")
    ember.mm(a, b, out=out)
    check(out, a, b, ember.mm, "float32")
    check(a.mm(b), a, b, ember.mm, "float32")
    check(a @ b, a, b, ember.mm, "float32")


# ---------------------------------------------------------------- bmm
@gpu
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("batch,m,k,n", [(1, 5, 7, 3), (1, 130, 1, 131), (7, 33, 17, 65), (3, 0, 4, 5),
                                         (4, 3, 0, 2), (0, 3, 4, 5), (64, 64, 64, 64)])
def test_bmm(path, dtype, batch, m, k, n):
    a, b = rand((batch, m, k), dtype, 5).cuda(), rand((batch, k, n), dtype, 6).cuda()
    check(ember.bmm(a, b), a, b, ember.bmm, dtype)


@gpu
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_bmm_layouts(path, dtype):
    a = rand((6, 9, 4), dtype, 7).cuda()
    b = rand((6, 4, 11), dtype, 8).cuda()
    at = a.transpose(1, 2).contiguous().transpose(1, 2)               # column-major matrices
    bp = b.permute(1, 0, 2).contiguous().permute(1, 0, 2)             # batch not outermost
    ae = rand((1, 9, 4), dtype, 9).cuda().expand(6, 9, 4)             # batch stride 0
    bs = ember.zeros(6, 8, 22, dtype=getattr(ember, dtype)).cuda()[:, ::2, ::2]  # both strides > 1
    bs.copy_(b)
    for x in (a, at, ae):
        for y in (b, bp, bs):
            check(ember.bmm(x, y), x, y, ember.bmm, dtype)


@gpu
def test_bmm_more_batches_than_one_grid(path):
    # 70000 > 65535, the grid's z limit: ember's kernel launches in chunks.
    a, b = rand((70000, 2, 3), "float32", 10).cuda(), rand((70000, 3, 2), "float32", 11).cuda()
    check(ember.bmm(a, b), a, b, ember.bmm, "float32")


# ---------------------------------------------------------------- dot and matmul
@gpu
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("n", [0, 1, 2, 257, 1000003])
def test_dot(dtype, n):
    x, y = rand((n,), dtype, 12).cuda(), rand((n,), dtype, 13).cuda()
    r = ember.dot(x, y)
    assert r.dim() == 0 and r.is_cuda
    check(r, x, y, ember.dot, dtype)
    # Strided operands.
    xs, ys = rand((3 * n,), dtype, 14).cuda()[::3], rand((2 * n,), dtype, 15).cuda()[1::2]
    check(ember.dot(xs, ys), xs, ys, ember.dot, dtype)


MATMUL_SHAPES = [((5,), (5,)), ((4, 5), (5,)), ((5,), (5, 3)), ((2, 4, 5), (5, 3)), ((2, 4, 5), (5,)),
                 ((5,), (2, 5, 3)), ((2, 1, 4, 5), (3, 5, 6)), ((3, 4, 5), (1, 5, 2)), ((1, 4, 5), (7, 5, 2))]


@gpu
@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("sa,sb", MATMUL_SHAPES)
def test_matmul_shapes(path, dtype, sa, sb):
    a, b = rand(sa, dtype, 16).cuda(), rand(sb, dtype, 17).cuda()
    check(ember.matmul(a, b), a, b, ember.matmul, dtype)


# ---------------------------------------------------------------- gradients and errors
@gpu
@pytest.mark.parametrize("sa,sb", [((4, 5), (5, 3)), ((2, 4, 5), (2, 5, 3)), ((5,), (5,)), ((2, 1, 4, 5), (3, 5, 6))])
def test_gradients_on_device(path, sa, sb):
    a0, b0 = rand(sa, "float64", 18), rand(sb, "float64", 19)
    ca, cb = a0.clone().requires_grad_(), b0.clone().requires_grad_()
    a, b = a0.cuda().requires_grad_(), b0.cuda().requires_grad_()
    ember.matmul(a, b).sum().backward()
    ember.matmul(ca, cb).sum().backward()
    for g, ref in ((a.grad, ca.grad), (b.grad, cb.grad)):
        assert g.is_cuda
        np.testing.assert_allclose(as_numpy(g), as_numpy(ref), rtol=1e-12, atol=1e-12)


@gpu
def test_mixed_devices_name_both():
    g, c = ember.ones(3, 3, device="cuda"), ember.ones(3, 3)
    for call in (lambda: ember.mm(g, c), lambda: ember.mm(c, g), lambda: ember.matmul(g, c),
                 lambda: ember.bmm(g[None], c[None]), lambda: ember.dot(g[0], c[0])):
        with pytest.raises(RuntimeError, match=r"cuda:0.*cpu|cpu.*cuda:0"):
            call()


@gpu
def test_errors_match_the_cpu():
    def message(f, *args):
        with pytest.raises(RuntimeError) as info:
            f(*args)
        return str(info.value)

    cases = [(ember.mm, (3, 4), (5, 6), "float32", "float32"), (ember.mm, (3,), (3, 2), "float32", "float32"),
             (ember.mm, (3, 4), (4, 2), "float32", "float64"), (ember.bmm, (2, 3, 4), (3, 4, 5), "float32", "float32"),
             (ember.bmm, (3, 4), (4, 5), "float32", "float32"), (ember.dot, (3,), (4,), "float32", "float32"),
             (ember.dot, (3,), (3,), "float16", "float32")]
    for f, sa, sb, da, db in cases:
        a, b = ember.ones(*sa, dtype=getattr(ember, da)), ember.ones(*sb, dtype=getattr(ember, db))
        assert message(f, a.cuda(), b.cuda()) == message(f, a, b)


@gpu
@pytest.mark.parametrize("dtype", ["uint8", "int8", "int16", "int32", "int64"])
def test_integer_products_raise_on_the_gpu(dtype):
    """Integer mm/bmm/dot/mv/matmul run on the CPU only: on a GPU they name the op and the device."""
    a = ember.ones(2, 2, dtype=getattr(ember, dtype)).cuda()
    v = ember.ones(2, dtype=getattr(ember, dtype)).cuda()
    for name, f in (("mm", lambda: ember.mm(a, a)), ("bmm", lambda: ember.bmm(a[None], a[None])),
                    ("dot", lambda: ember.dot(v, v)), ("mm", lambda: ember.mv(a, v)), ("mm", lambda: a @ a)):
        with pytest.raises(NotImplementedError, match=f"{name}: .*not implemented on cuda"):
            f()


# ---------------------------------------------------------------- which path runs
@gpu
def test_disable_cublas_env_forces_our_kernel():
    code = ("import ember, numpy as np\n"
            "assert ember.backends.cuda.preferred_blas_library() == 'ember'\n"
            "assert not ember.backends.cuda.cublas_available()\n"
            "a = ember.ones(300, 200).cuda()\n"
            "assert np.all(ember.mm(a, a.t()).cpu().numpy() == 200)\n")
    env = dict(os.environ, EMBER_DISABLE_CUBLAS="1")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr


@gpu
def test_cublas_from_pip_package_loads():
    from ember.cuda import _nvidia_library_dirs
    if not any(f.startswith("libcublas.so") for d in _nvidia_library_dirs() for f in os.listdir(d)):
        pytest.skip("no nvidia-cublas package installed")
    code = "import ember; print(ember.backends.cuda.cublas_status()); assert ember.backends.cuda.cublas_available()"
    env = {k: v for k, v in os.environ.items() if k not in ("EMBER_DISABLE_CUBLAS", "EMBER_CUBLAS_PATH")}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr


@no_gpu
def test_cublas_query_without_gpu():
    assert ember.backends.cuda.cublas_available() is False
    assert ember.backends.cuda.preferred_blas_library() == "ember"
    assert ember.backends.cuda.preferred_blas_library("cublas") == "ember"   # asking does not make it so
    assert ember.backends.cuda.preferred_blas_library("ember") == "ember"
    assert isinstance(ember.backends.cuda.cublas_status(), str)


def test_preferred_blas_library_rejects_unknown_names():
    with pytest.raises(ValueError, match="cublas"):
        ember.backends.cuda.preferred_blas_library("rocblas")


@pytest.mark.parametrize("target", ["/nonexistent/libcublas.so.13", "libm.so.6", "/"])
def test_loader_fails_cleanly(target):
    # A wrong EMBER_CUBLAS_PATH (missing file, a library without cuBLAS's
    # symbols, a directory without it) is reported, never a crash.
    code = ("import ember\n"
            "s = ember.backends.cuda.cublas_status()\n"
            "print(s)\n"
            "assert isinstance(s, str) and s\n"
            "assert ember.backends.cuda.cublas_available() in (True, False)\n")
    env = dict(os.environ, EMBER_CUBLAS_PATH=target)
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    status = done.stdout
    if ember.cuda.is_built() and "loaded from" not in status:
        assert "cuBLAS not found" in status
        if target == "libm.so.6":
            assert "missing symbol cublasCreate_v2" in status


FAKE_CUBLAS = r"""
int cublasCreate_v2(void** handle) { *handle = 0; return 1; }   /* CUBLAS_STATUS_NOT_INITIALIZED */
int cublasDestroy_v2(void* handle) { return 0; }
int cublasSetStream_v2(void* handle, void* stream) { return 0; }
int cublasSetMathMode(void* handle, int mode) { return 0; }
int cublasGemmEx(void) { return 7; }
int cublasGemmStridedBatchedEx(void) { return 7; }
"""


@pytest.mark.skipif(not ember.cuda.is_built(), reason="the loader is part of the CUDA backend")
def test_loader_takes_a_directory_and_survives_a_failing_library(tmp_path):
    # A library with cuBLAS's symbols whose cublasCreate fails: it loads, and on
    # a GPU mm falls back to ember's kernel instead of failing.
    src = tmp_path / "fake.c"
    src.write_text(FAKE_CUBLAS)
    lib = tmp_path / "libcublas.so.13"
    try:
        subprocess.run(["cc", "-shared", "-fPIC", "-o", str(lib), str(src)], check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("no C compiler to build the fake library")
    code = ("import ember, numpy as np\n"
            "if ember.cuda.is_available():\n"
            "    a = ember.ones(5, 4).cuda()\n"
            "    assert np.all(ember.mm(a, a.t()).cpu().numpy() == 4)\n"
            "print(ember.backends.cuda.cublas_status())\n")
    env = dict(os.environ, EMBER_CUBLAS_PATH=str(tmp_path))
    env.pop("EMBER_DISABLE_CUBLAS", None)
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert f"cuBLAS loaded from {lib}" in done.stdout
    if HAS_GPU:
        assert "no cuBLAS handle on cuda:0" in done.stdout
