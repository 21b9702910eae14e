"""mm, bmm and dot on the CPU (OpenBLAS) against NumPy: dtypes, transposed and
strided operands, empty and k=0 products, and PyTorch's error messages."""
import numpy as np
import pytest

import ember

FLOATS = ["float16", "bfloat16", "float32", "float64"]
NP = {"float16": np.float16, "bfloat16": np.float32, "float32": np.float32, "float64": np.float64,
      "int64": np.int64, "int32": np.int32}
TOL = {"float16": 1e-2, "bfloat16": 5e-2, "float32": 1e-5, "float64": 1e-12}


def round_bf16(a):
    a = np.asarray(a, dtype=np.float32)
    u = a.view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16 << 16
    return u.astype(np.uint32).view(np.float32)


def values(shape, dtype, rng):
    """Random values exactly representable in `dtype` (so the reference sees what ember sees)."""
    a = rng.uniform(-1, 1, size=shape).astype(np.float32)
    if dtype == "float16":
        return a.astype(np.float16).astype(np.float64)
    if dtype == "bfloat16":
        return round_bf16(a).astype(np.float64)
    if dtype == "float64":
        return rng.uniform(-1, 1, size=shape)
    return a.astype(np.float64)


def tensor(a, dtype):
    t = ember.from_numpy(np.array(np.asarray(a).astype(NP[dtype]), order="C"))
    return t.to(ember.bfloat16) if dtype == "bfloat16" else t


def numpy(t):
    if t.dtype == ember.bfloat16:
        t = t.float()
    return np.array(t.numpy()).astype(np.float64)


def layout(a, dtype, kind):
    """`a`'s values as a contiguous tensor, a transpose of a contiguous one, or every other row of a taller one."""
    if kind == "contig":
        return tensor(a, dtype)
    if kind == "transposed":
        return ember.transpose(tensor(np.ascontiguousarray(np.swapaxes(a, -1, -2)), dtype), -1, -2)
    if kind == "strided":     # every other row: a leading dimension larger than the row (BLAS takes it as is)
        base = np.repeat(a, 2, axis=-2)
        return ember.slice(tensor(base, dtype), a.ndim - 2, None, None, 2)
    if kind == "colstrided":  # every other column: inner stride 2 (copied before BLAS)
        base = np.repeat(a, 2, axis=-1)
        return ember.slice(tensor(base, dtype), a.ndim - 1, None, None, 2)
    raise ValueError(kind)


def close(t, ref, dtype, k=1):
    tol = TOL[dtype] * max(1.0, np.sqrt(k))
    np.testing.assert_allclose(numpy(t), ref, rtol=tol, atol=tol)


KINDS = ["contig", "transposed", "strided", "colstrided"]


# ---------------------------------------------------------------- mm

@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("ka", KINDS)
@pytest.mark.parametrize("kb", KINDS)
def test_mm_layouts(dtype, ka, kb):
    rng = np.random.default_rng(0)
    a, b = values((5, 7), dtype, rng), values((7, 3), dtype, rng)
    r = ember.mm(layout(a, dtype, ka), layout(b, dtype, kb))
    assert r.dtype == getattr(ember, dtype) and tuple(r.shape) == (5, 3)
    assert r.is_contiguous()
    close(r, a @ b, dtype, 7)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (1, 5, 1), (4, 1, 6), (1, 8, 9), (9, 8, 1), (33, 17, 65)])
def test_mm_shapes(dtype, m, k, n):
    rng = np.random.default_rng(1)
    a, b = values((m, k), dtype, rng), values((k, n), dtype, rng)
    close(ember.mm(tensor(a, dtype), tensor(b, dtype)), a @ b, dtype, k)
    # Transposed operands of degenerate shapes.
    at = ember.transpose(tensor(np.ascontiguousarray(a.T), dtype), 0, 1)
    bt = ember.transpose(tensor(np.ascontiguousarray(b.T), dtype), 0, 1)
    close(ember.mm(at, bt), a @ b, dtype, k)


@pytest.mark.parametrize("dtype", FLOATS)
def test_mm_empty(dtype):
    r = ember.mm(tensor(np.zeros((0, 4)), dtype), tensor(np.ones((4, 2)), dtype))
    assert tuple(r.shape) == (0, 2) and r.dtype == getattr(ember, dtype)
    r = ember.mm(tensor(np.ones((3, 4)), dtype), tensor(np.ones((4, 0)), dtype))
    assert tuple(r.shape) == (3, 0)
    r = ember.mm(tensor(np.ones((3, 0)), dtype), tensor(np.ones((0, 2)), dtype))
    assert tuple(r.shape) == (3, 2)
    np.testing.assert_array_equal(numpy(r), np.zeros((3, 2)))


def test_mm_large_float32_and_method():
    rng = np.random.default_rng(2)
    a = rng.standard_normal((300, 200)).astype(np.float32)
    b = rng.standard_normal((200, 250)).astype(np.float32)
    ta, tb = tensor(a, "float32"), tensor(b, "float32")
    np.testing.assert_allclose(numpy(ta.mm(tb)), a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
    # A transposed operand: (b.T).T @ ... through the transpose flag.
    tbt = ember.transpose(tensor(np.ascontiguousarray(b.T), "float32"), 0, 1)
    np.testing.assert_allclose(numpy(ember.mm(ta, tbt)), a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("ka", KINDS)
@pytest.mark.parametrize("kb", KINDS)
@pytest.mark.parametrize("m,n", [(150, 70), (70, 150)])  # split by rows, then by columns
def test_mm_split_over_threads(dtype, ka, kb, m, n):
    # Large enough that the product is cut into strips, one per thread, with a
    # ragged last strip; 1 thread takes the single-call path on the same data.
    rng = np.random.default_rng(3)
    a, b = values((m, 90), dtype, rng), values((90, n), dtype, rng)
    ea, eb = layout(a, dtype, ka), layout(b, dtype, kb)
    prev = ember.get_num_threads()
    try:
        for threads in (3, 1):
            ember.set_num_threads(threads)
            close(ember.mm(ea, eb), a @ b, dtype, 90)
    finally:
        ember.set_num_threads(prev)


def strip_extents():
    """Extents around every strip boundary of the split GEMM at 2 and 3 threads (read from the library)."""
    w = ember._C._thresholds()["gemm_strip_width"]
    sizes = {65, 130, 33, 513, 257, 129}
    for threads in (2, 3):
        for k in (1, 2, 3, 5):
            for d in (-1, 0, 1):
                sizes.add(threads * w * k + d)
    return sorted(s for s in sizes if s >= w)


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_mm_every_strip_written(threads):
    # Every row and column of C must be written whatever the strip rounding:
    # (65,130)@(130,33) once left its last row unwritten at 2 threads.
    work = ember._C._thresholds()["parallel_gemm_work"]
    rng = np.random.default_rng(4)
    prev = ember.get_num_threads()
    ember.set_num_threads(threads)
    try:
        for extent in strip_extents():
            other = 33
            k = max(8, -(-work // (extent * other)))  # enough work to take the split path
            for m, n in ((extent, other), (other, extent)):
                a = rng.standard_normal((m, k)).astype(np.float32)
                b = rng.standard_normal((k, n)).astype(np.float32)
                got = ember.mm(ember.from_numpy(a), ember.from_numpy(b)).numpy()
                np.testing.assert_allclose(got, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-3 * np.sqrt(k),
                                           err_msg=f"({m},{k})@({k},{n}) at {threads} threads")
    finally:
        ember.set_num_threads(prev)


def test_mm_expanded_operand():
    row = tensor(np.array([[1.0, 2.0, 3.0]]), "float64")
    a = row.expand([4, 3])            # stride 0 along dim 0
    b = tensor(np.arange(6.0).reshape(3, 2), "float64")
    np.testing.assert_allclose(numpy(ember.mm(a, b)), np.tile([[1.0, 2.0, 3.0]], (4, 1)) @ np.arange(6.0).reshape(3, 2))


def test_mm_errors():
    m = tensor(np.ones((2, 3)), "float32")
    with pytest.raises(RuntimeError, match="self must be a matrix"):
        ember.mm(tensor(np.ones(3), "float32"), m)
    with pytest.raises(RuntimeError, match="mat2 must be a matrix"):
        ember.mm(m, tensor(np.ones(3), "float32"))
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x5\)"):
        ember.mm(m, tensor(np.ones((4, 5)), "float32"))
    with pytest.raises(RuntimeError, match="expected m1 and m2 to have the same dtype, but got: float != double"):
        ember.mm(m, tensor(np.ones((3, 2)), "float64"))
    with pytest.raises(RuntimeError, match="same dtype"):
        ember.mm(m, tensor(np.ones((3, 2)), "int64"))


# ---------------------------------------------------------------- integer products

INTS = ["uint8", "int8", "int16", "int32", "int64"]
NP_INT = {"uint8": np.uint8, "int8": np.int8, "int16": np.int16, "int32": np.int32, "int64": np.int64}


def full_range(shape, dtype, rng):
    """Integers over the dtype's whole range, so that products and sums wrap around."""
    info = np.iinfo(NP_INT[dtype])
    return rng.integers(info.min, info.max, size=shape, dtype=np.int64, endpoint=True).astype(NP_INT[dtype])


def int_layout(a, kind):
    t = ember.from_numpy(np.ascontiguousarray(a))
    if kind == "transposed":
        return ember.from_numpy(np.ascontiguousarray(a.T)).t()
    if kind == "strided":
        return ember.slice(ember.from_numpy(np.repeat(a, 2, axis=0)), 0, None, None, 2)
    return t


def wrapped_product(a, b, dtype):
    """NumPy's int64 product wraps modulo 2**64, so its low bits are the dtype's wrapped result."""
    with np.errstate(over="ignore"):
        return np.matmul(a.astype(np.int64), b.astype(np.int64)).astype(NP_INT[dtype])


@pytest.mark.parametrize("dtype", INTS)
@pytest.mark.parametrize("ka", ["contig", "transposed", "strided"])
@pytest.mark.parametrize("kb", ["contig", "transposed", "strided"])
def test_integer_mm_wraps_like_pytorch(dtype, ka, kb):
    rng = np.random.default_rng(len(dtype) * 7 + len(ka) + 3 * len(kb))
    a, b = full_range((37, 129), dtype, rng), full_range((129, 21), dtype, rng)
    r = ember.mm(int_layout(a, ka), int_layout(b, kb))
    assert r.dtype == getattr(ember, dtype)
    np.testing.assert_array_equal(r.numpy(), wrapped_product(a, b, dtype))


def test_integer_mm_int8_example_from_pytorch():
    a = ember.full((2, 3), 100, dtype=ember.int8)
    b = ember.full((3, 2), 100, dtype=ember.int8)
    assert ember.mm(a, b).tolist() == [[48, 48], [48, 48]]          # 30000 mod 256, as torch gives


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_integer_mm_split_over_threads(threads):
    """Past the parallel work size the rows are split over the threads; every row is written."""
    rng = np.random.default_rng(threads)
    m = threads * ember._C._thresholds()["gemm_strip_width"] * 4 + 1
    k = ember._C._thresholds()["parallel_gemm_work"] // (m * 33) + 3
    a, b = full_range((m, k), "int32", rng), full_range((k, 33), "int32", rng)
    previous = ember.get_num_threads()
    ember.set_num_threads(threads)
    try:
        r = ember.mm(ember.from_numpy(a), ember.from_numpy(b))
    finally:
        ember.set_num_threads(previous)
    np.testing.assert_array_equal(r.numpy(), wrapped_product(a, b, "int32"))


@pytest.mark.parametrize("dtype", INTS)
def test_integer_bmm_matmul_dot_mv(dtype):
    rng = np.random.default_rng(5)
    a, b = full_range((3, 17, 9), dtype, rng), full_range((3, 9, 5), dtype, rng)
    np.testing.assert_array_equal(ember.bmm(ember.from_numpy(a), ember.from_numpy(b)).numpy(),
                                  wrapped_product(a, b, dtype))
    c = full_range((2, 1, 4, 9), dtype, rng)
    np.testing.assert_array_equal(ember.matmul(ember.from_numpy(c), ember.from_numpy(b)).numpy(),
                                  wrapped_product(c, b, dtype))
    x, y = full_range((1001,), dtype, rng), full_range((1001,), dtype, rng)
    d = ember.dot(ember.from_numpy(x), ember.slice(ember.from_numpy(np.repeat(y, 2)), 0, None, None, 2))
    assert d.dtype == getattr(ember, dtype) and d.shape == ()
    assert d.item() == wrapped_product(x, y, dtype).item()
    m = full_range((6, 9), dtype, rng)
    v = full_range((9,), dtype, rng)
    np.testing.assert_array_equal(ember.mv(ember.from_numpy(m), ember.from_numpy(v)).numpy(),
                                  wrapped_product(m, v, dtype))
    np.testing.assert_array_equal((ember.from_numpy(m) @ ember.from_numpy(v)).numpy(), wrapped_product(m, v, dtype))


def test_integer_products_empty_and_k0():
    z = ember.mm(ember.ones(3, 0, dtype=ember.int64), ember.ones(0, 2, dtype=ember.int64))
    assert z.tolist() == [[0, 0]] * 3
    assert ember.dot(ember.ones(0, dtype=ember.int8), ember.ones(0, dtype=ember.int8)).item() == 0
    assert ember.mm(ember.ones(0, 4, dtype=ember.int16), ember.ones(4, 2, dtype=ember.int16)).shape == (0, 2)


def test_bool_products_raise_like_pytorch():
    t = ember.ones(2, 2, dtype=ember.bool)
    v = ember.ones(2, dtype=ember.bool)
    for name, f in (("mm", lambda: ember.mm(t, t)), ("bmm", lambda: ember.bmm(t[None], t[None])),
                    ("dot", lambda: ember.dot(v, v)), ("mm", lambda: ember.mv(t, v)), ("mm", lambda: t @ t)):
        with pytest.raises(RuntimeError, match=name):       # NotImplementedError is a RuntimeError
            f()


def test_mv_errors_and_values():
    m = tensor(np.arange(6.0).reshape(2, 3), "float64")
    np.testing.assert_allclose(numpy(ember.mv(m, tensor(np.ones(3), "float64"))), [3.0, 12.0])
    np.testing.assert_allclose(numpy(m.mv(tensor(np.ones(3), "float64"))), [3.0, 12.0])
    with pytest.raises(RuntimeError, match=r"size mismatch, got input \(2\), mat \(2x3\), vec \(2\)"):
        ember.mv(m, tensor(np.ones(2), "float64"))
    with pytest.raises(RuntimeError, match="vector \\+ matrix @ vector expected, got 1, 2, 2"):
        ember.mv(m, tensor(np.ones((3, 1)), "float64"))


# ---------------------------------------------------------------- bmm

@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("ka", KINDS)
@pytest.mark.parametrize("kb", ["contig", "transposed", "strided"])
def test_bmm_layouts(dtype, ka, kb):
    rng = np.random.default_rng(3)
    a, b = values((3, 4, 5), dtype, rng), values((3, 5, 2), dtype, rng)
    r = ember.bmm(layout(a, dtype, ka), layout(b, dtype, kb))
    assert r.dtype == getattr(ember, dtype) and tuple(r.shape) == (3, 4, 2)
    close(r, a @ b, dtype, 5)


def test_bmm_batch_noncontiguous():
    rng = np.random.default_rng(4)
    a = rng.standard_normal((4, 3, 5))
    b = rng.standard_normal((4, 5, 2))
    # Batch as the last dim in memory: permute a (3, 5, 4) base.
    ta = ember.permute(tensor(np.ascontiguousarray(a.transpose(1, 2, 0)), "float64"), [2, 0, 1])
    # Every other batch of a doubled base.
    tb = ember.slice(tensor(np.repeat(b, 2, axis=0), "float64"), 0, None, None, 2)
    np.testing.assert_allclose(numpy(ember.bmm(ta, tb)), a @ b, rtol=1e-12, atol=1e-12)
    # Broadcast batch (stride 0).
    one = tensor(b[:1], "float64")
    np.testing.assert_allclose(numpy(ember.bmm(ta, one.expand([4, 5, 2]))), a @ b[:1], rtol=1e-12, atol=1e-12)


def test_bmm_empty_and_k0():
    r = ember.bmm(tensor(np.ones((0, 2, 3)), "float32"), tensor(np.ones((0, 3, 2)), "float32"))
    assert tuple(r.shape) == (0, 2, 2)
    r = ember.bmm(tensor(np.ones((2, 0, 3)), "float32"), tensor(np.ones((2, 3, 4)), "float32"))
    assert tuple(r.shape) == (2, 0, 4)
    r = ember.bmm(tensor(np.ones((2, 3, 0)), "float64"), tensor(np.ones((2, 0, 4)), "float64"))
    assert tuple(r.shape) == (2, 3, 4)
    np.testing.assert_array_equal(numpy(r), np.zeros((2, 3, 4)))


def test_bmm_many_small():
    rng = np.random.default_rng(5)
    a = rng.standard_normal((500, 4, 3)).astype(np.float32)
    b = rng.standard_normal((500, 3, 6)).astype(np.float32)
    np.testing.assert_allclose(numpy(tensor(a, "float32").bmm(tensor(b, "float32"))), a.astype(np.float64) @ b,
                               rtol=1e-5, atol=1e-5)


def test_bmm_errors():
    b3 = tensor(np.ones((2, 3, 4)), "float32")
    with pytest.raises(RuntimeError, match="batch1 must be a 3D tensor"):
        ember.bmm(tensor(np.ones((3, 4)), "float32"), b3)
    with pytest.raises(RuntimeError, match="batch2 must be a 3D tensor"):
        ember.bmm(b3, tensor(np.ones((4, 2)), "float32"))
    with pytest.raises(RuntimeError, match=r"Expected size for first two dimensions of batch2 tensor to be: \[2, 4\] "
                                           r"but got: \[3, 4\]\."):
        ember.bmm(b3, tensor(np.ones((3, 4, 5)), "float32"))
    with pytest.raises(RuntimeError, match=r"batch2 tensor to be: \[2, 4\] but got: \[2, 3\]"):
        ember.bmm(b3, tensor(np.ones((2, 3, 5)), "float32"))
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Double"):
        ember.bmm(b3, tensor(np.ones((2, 4, 5)), "float64"))


# ---------------------------------------------------------------- dot

@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("n", [1, 5, 1000])
def test_dot(dtype, n):
    rng = np.random.default_rng(6)
    a, b = values((n,), dtype, rng), values((n,), dtype, rng)
    r = ember.dot(tensor(a, dtype), tensor(b, dtype))
    assert r.dtype == getattr(ember, dtype) and tuple(r.shape) == ()
    close(r, np.dot(a, b), dtype, n)
    # Strided operands: every other element of a doubled vector.
    sa = ember.slice(tensor(np.repeat(a, 2), dtype), 0, None, None, 2)
    sb = ember.slice(tensor(np.repeat(b, 2), dtype), 0, None, None, 2)
    close(sa.dot(sb), np.dot(a, b), dtype, n)


def test_dot_empty_and_expanded():
    r = ember.dot(tensor(np.zeros(0), "float32"), tensor(np.zeros(0), "float32"))
    assert tuple(r.shape) == () and r.item() == 0.0
    x = tensor(np.array([2.0]), "float64").expand([5])
    y = tensor(np.arange(5.0), "float64")
    assert ember.dot(x, y).item() == 20.0
    assert ember.dot(y, x).item() == 20.0


def test_dot_errors():
    v3 = tensor(np.ones(3), "float32")
    with pytest.raises(RuntimeError, match="1D tensors expected, but got 2D and 1D tensors"):
        ember.dot(tensor(np.ones((3, 1)), "float32"), v3)
    with pytest.raises(RuntimeError, match=r"inconsistent tensor size, expected tensor \[3\] and src \[4\] to have "
                                           r"the same number of elements"):
        ember.dot(v3, tensor(np.ones(4), "float32"))
    with pytest.raises(RuntimeError, match="expected both vectors to have same dtype, but found Float and Double"):
        ember.dot(v3, tensor(np.ones(3), "float64"))
