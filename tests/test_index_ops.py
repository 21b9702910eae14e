"""gather and scatter_add (issue 11, index group): values against NumPy and PyTorch on every
dtype, layouts (0-d, empty, non-contiguous, int32 index), PyTorch's errors, float64 gradcheck,
gradgradcheck and forward-mode JVPs, and the parallel kernels around the grain size at 1-3 threads."""
import numpy as np
import pytest

import ember
from ember.autograd import gradcheck, gradgradcheck
from ember.autograd import forward_ad as fwAD

try:
    import torch
except ImportError:                      # the comparisons with PyTorch skip without it
    torch = None

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]
GRAIN = ember._C._thresholds()["grain_size"]


def np_gather(a, dim, idx):
    out = np.empty(idx.shape, a.dtype)
    for pos in np.ndindex(*idx.shape):
        source = list(pos)
        source[dim] = idx[pos]
        out[pos] = a[tuple(source)]
    return out


def np_scatter_add(a, dim, idx, src):
    out = a.astype(np.float64 if a.dtype.kind == "f" else a.dtype).copy()
    for pos in np.ndindex(*idx.shape):
        target = list(pos)
        target[dim] = idx[pos]
        out[tuple(target)] += src[pos]
    return out.astype(a.dtype)


def sample(shape, dtype, rng, low=-4, high=5):
    values = rng.integers(low, high, size=shape)
    if dtype == "bool":
        return ember.tensor(values > 0)
    if dtype == "uint8":
        values = np.abs(values)
    return ember.tensor(values).to(getattr(ember, dtype))


def as_np(t):
    return t.to(ember.float64).numpy() if t.dtype in (ember.float16, ember.bfloat16) else t.numpy()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_gather_matches_numpy(dtype, dim):
    rng = np.random.default_rng(0)
    a = sample((4, 5), dtype, rng)
    size = a.shape[dim]
    idx = rng.integers(0, size, size=(3, 4) if dim == 0 else (4, 3))
    got = ember.gather(a, dim, ember.tensor(idx))
    assert got.dtype == a.dtype and got.shape == idx.shape
    np.testing.assert_array_equal(as_np(got), np_gather(as_np(a), dim, idx))
    np.testing.assert_array_equal(as_np(a.gather(dim, ember.tensor(idx))), as_np(got))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim", [0, 1])
def test_scatter_add_matches_numpy(dtype, dim):
    rng = np.random.default_rng(1)
    a, src = sample((4, 5), dtype, rng), sample((4, 5), dtype, rng)
    idx = rng.integers(0, a.shape[dim], size=(3, 4))      # duplicates included
    got = ember.scatter_add(a, dim, ember.tensor(idx), src)
    want = np_scatter_add(as_np(a), dim, idx, as_np(src)[:3, :4])
    assert got.dtype == a.dtype and got.shape == a.shape
    if dtype == "bool":
        want = np_scatter_add(as_np(a).astype(np.int64), dim, idx, as_np(src)[:3, :4].astype(np.int64)) > 0
    np.testing.assert_allclose(as_np(got).astype(np.float64), want.astype(np.float64), rtol=1e-2)
    before = as_np(a).copy()
    a.scatter_add_(dim, ember.tensor(idx), src)
    np.testing.assert_array_equal(as_np(a), as_np(got))
    assert not np.array_equal(before, as_np(a)) or dtype == "bool"


def test_layouts_0d_empty_noncontiguous_and_int32_index():
    x = ember.tensor(2.5)
    np.testing.assert_array_equal(x.gather(0, ember.tensor([0, 0])).numpy(), [2.5, 2.5])
    assert x.gather(0, ember.tensor(0)).shape == ()
    assert ember.scatter_add(x, 0, ember.tensor(0), ember.tensor(1.0)).item() == 3.5
    a = ember.randn(5, 4)
    empty = ember.gather(a, 1, ember.zeros(0, 2, dtype=ember.int64))
    assert empty.shape == (0, 2)
    np.testing.assert_array_equal(ember.scatter_add(a, 0, ember.zeros(0, 4, dtype=ember.int64), a).numpy(), a.numpy())
    t = a.t()                                             # non-contiguous self, index and src
    idx = ember.tensor(np.random.default_rng(2).integers(0, 5, size=(5, 4))).t()
    np.testing.assert_array_equal(t.gather(1, idx).numpy(), np_gather(t.numpy(), 1, idx.numpy()))
    np.testing.assert_allclose(ember.scatter_add(t, 1, idx, t).numpy(),
                               np_scatter_add(t.numpy(), 1, idx.numpy(), t.numpy()), rtol=1e-6)
    np.testing.assert_array_equal(t.gather(1, idx.to(ember.int32)).numpy(), t.gather(1, idx).numpy())


def test_out_forms():
    a, idx = ember.randn(3, 4), ember.tensor([[1, 3], [0, 0]])
    out = ember.empty(0)
    assert ember.gather(a, 1, idx, out=out) is out
    np.testing.assert_array_equal(out.numpy(), a.gather(1, idx).numpy())
    out2 = ember.empty(3, 4)
    ember.scatter_add(a, 1, idx, a, out=out2)
    np.testing.assert_array_equal(out2.numpy(), ember.scatter_add(a, 1, idx, a).numpy())


def error_of(fn, *args):
    try:
        fn(*args)
    except Exception as e:                # noqa: BLE001 - the class and message are compared
        return type(e).__name__, str(e)
    return None


CASES = [
    lambda m: m.gather(m.randn(3, 4), 1, m.tensor([[5]])),
    lambda m: m.gather(m.randn(3, 4), 1, m.tensor([[-1]])),
    lambda m: m.gather(m.randn(3, 4), 1, m.tensor([1])),
    lambda m: m.gather(m.randn(3, 4), 1, m.zeros(4, 1, dtype=m.int64)),
    lambda m: m.gather(m.randn(3, 4), 2, m.zeros(1, 1, dtype=m.int64)),
    lambda m: m.gather(m.randn(3, 4), 1, m.zeros(1, 1)),
    lambda m: m.scatter_add(m.randn(3, 4), 1, m.tensor([[4]]), m.ones(1, 1)),
    lambda m: m.scatter_add(m.randn(3, 4), 1, m.tensor([[1]]), m.ones(1, 1, dtype=m.float64)),
    lambda m: m.scatter_add(m.randn(3, 4), 1, m.zeros(2, 2, dtype=m.int64), m.ones(1, 1)),
    lambda m: m.scatter_add(m.randn(3), 0, m.zeros(1), m.ones(1)),
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_errors_match_pytorch(case):
    got = error_of(CASES[case], ember)
    assert got is not None
    if torch is None:
        pytest.skip("PyTorch is not installed")
    want = error_of(CASES[case], torch)
    assert got[0] == want[0]
    # ember names the op in front of shape messages; the text after it is PyTorch's
    assert got[1].endswith(want[1].split("\n")[0].removeprefix("gather(): ")) or got[1] == want[1], (got, want)


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
def test_against_pytorch_at_size():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((300, 200)).astype(np.float32)
    for dim in (0, 1):
        idx = rng.integers(0, a.shape[dim], size=(300, 150) if dim == 1 else (250, 200))
        got = ember.gather(ember.tensor(a), dim, ember.tensor(idx)).numpy()
        np.testing.assert_array_equal(got, torch.gather(torch.tensor(a), dim, torch.tensor(idx)).numpy())
        src = rng.standard_normal(idx.shape).astype(np.float32)
        got = ember.scatter_add(ember.tensor(a), dim, ember.tensor(idx), ember.tensor(src)).numpy()
        want = torch.scatter_add(torch.tensor(a), dim, torch.tensor(idx), torch.tensor(src)).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("rows", [1, 2, GRAIN // 64 - 1, GRAIN // 64 + 1, 3 * GRAIN // 64 + 5])
def test_parallel_rows_are_deterministic(threads, rows):
    """Rows split across threads around the grain size; scatter_add's sums are bit-identical."""
    old = ember.get_num_threads()
    try:
        rng = np.random.default_rng(rows)
        a = rng.standard_normal((rows, 64)).astype(np.float32)
        idx = rng.integers(0, 64, size=(rows, 64))
        src = rng.standard_normal((rows, 64)).astype(np.float32)
        ember.set_num_threads(1)
        serial = ember.scatter_add(ember.tensor(a), 1, ember.tensor(idx), ember.tensor(src)).numpy()
        ember.set_num_threads(threads)
        got = ember.gather(ember.tensor(a), 1, ember.tensor(idx)).numpy()
        np.testing.assert_array_equal(got, np_gather(a, 1, idx))
        got = ember.scatter_add(ember.tensor(a), 1, ember.tensor(idx), ember.tensor(src)).numpy()
        np.testing.assert_array_equal(got, serial)
        np.testing.assert_allclose(got, np_scatter_add(a, 1, idx, src), rtol=1e-5, atol=1e-5)
        bad = idx.copy()
        bad[-1, -1] = 64
        with pytest.raises(RuntimeError, match="index 64 is out of bounds for dimension 1 with size 64"):
            ember.gather(ember.tensor(a), 1, ember.tensor(bad))
        with pytest.raises(RuntimeError, match="index 64 is out of bounds for dimension 1 with size 64"):
            ember.scatter_add(ember.tensor(a), 1, ember.tensor(bad), ember.tensor(src))
    finally:
        ember.set_num_threads(old)


def f64(*shape):
    return ember.randn(*shape, dtype=ember.float64, requires_grad=True)


IDX = ember.tensor([[0, 2, 2], [1, 0, 1]])


def test_gradcheck_and_gradgradcheck():
    a, src = f64(3, 4), f64(2, 3)
    assert gradcheck(lambda x: ember.gather(x, 1, IDX), (a,))
    assert gradgradcheck(lambda x: ember.gather(x, 0, IDX) ** 2, (a,))
    assert gradcheck(lambda x, s: ember.scatter_add(x, 0, IDX, s), (a, src))
    assert gradgradcheck(lambda x, s: ember.scatter_add(x * x, 1, IDX, s * s), (a, src))
    assert gradcheck(lambda x, s: (x * 1).scatter_add_(1, IDX, s), (a, src))


def test_forward_mode_jvp():
    a, src = ember.randn(3, 4, dtype=ember.float64), ember.randn(2, 3, dtype=ember.float64)
    ta, ts = ember.randn(3, 4, dtype=ember.float64), ember.randn(2, 3, dtype=ember.float64)
    with fwAD.dual_level():
        out = ember.gather(fwAD.make_dual(a, ta), 1, IDX)
        np.testing.assert_array_equal(fwAD.unpack_dual(out).tangent.numpy(), ember.gather(ta, 1, IDX).numpy())
        out = ember.scatter_add(fwAD.make_dual(a, ta), 0, IDX, fwAD.make_dual(src, ts))
        np.testing.assert_allclose(fwAD.unpack_dual(out).tangent.numpy(), ember.scatter_add(ta, 0, IDX, ts).numpy())
        out = ember.scatter_add(a, 0, IDX, fwAD.make_dual(src, ts))
        np.testing.assert_allclose(fwAD.unpack_dual(out).tangent.numpy(),
                                   ember.scatter_add(ember.zeros_like(a), 0, IDX, ts).numpy())


@pytest.mark.skipif(not ember.cuda.is_available(), reason="needs a CUDA GPU")
def test_cuda_slot_raises_naming_op_and_device():
    a = ember.ones(3, 4).cuda()
    idx = ember.tensor([[0]]).cuda()
    with pytest.raises(NotImplementedError, match="gather: .*not implemented on cuda"):
        ember.gather(a, 1, idx)
    with pytest.raises(NotImplementedError, match="scatter_add: .*not implemented on cuda"):
        ember.scatter_add(a, 1, idx, a)


# ---------------------------------------------------------------- index_select, masked_fill
@pytest.mark.parametrize("dtype", DTYPES)
def test_index_select_and_masked_fill_match_numpy(dtype):
    rng = np.random.default_rng(4)
    a = sample((4, 5), dtype, rng)
    for dim in (0, 1, -1):
        idx = rng.integers(0, a.shape[dim], size=6)
        for index in (ember.tensor(idx), ember.tensor(idx).to(ember.int32)):
            got = a.index_select(dim, index)
            assert got.dtype == a.dtype
            np.testing.assert_array_equal(as_np(got), np.take(as_np(a), idx, axis=dim))
    mask = rng.integers(0, 2, size=5).astype(bool)
    value = True if dtype == "bool" else 3
    want = np.where(mask, np.array(value).astype(as_np(a).dtype), as_np(a))
    got = a.masked_fill(ember.tensor(mask), value)
    assert got.dtype == a.dtype
    np.testing.assert_array_equal(as_np(got), want)
    np.testing.assert_array_equal(as_np(a.masked_fill(ember.tensor(mask), ember.tensor(value))), want)
    a.masked_fill_(ember.tensor(mask), value)
    np.testing.assert_array_equal(as_np(a), want)


def test_index_select_and_masked_fill_layouts():
    x = ember.tensor(3.0)
    assert x.index_select(0, ember.tensor([0])).shape == ()
    a = ember.randn(4, 3).t()                               # non-contiguous
    np.testing.assert_array_equal(a.index_select(1, ember.tensor(2)).numpy(), a.numpy()[:, [2]])
    assert a.index_select(0, ember.zeros(0, dtype=ember.int64)).shape == (0, 4)
    out = ember.empty(0)
    ember.index_select(a, 1, ember.tensor([3, 3]), out=out)
    np.testing.assert_array_equal(out.numpy(), a.numpy()[:, [3, 3]])
    # out-of-place masked_fill broadcasts self and mask, as PyTorch's
    got = ember.zeros(3).masked_fill(ember.tensor([[True], [False]]), 1)
    np.testing.assert_array_equal(got.numpy(), [[1, 1, 1], [0, 0, 0]])
    ints = ember.zeros(3, dtype=ember.int64).masked_fill(ember.tensor([True, False, True]), 2.7)
    assert ints.dtype == ember.int64 and ints.tolist() == [2, 0, 2]


MORE_CASES = [
    lambda m: m.randn(3, 4).index_select(0, m.tensor([5])),
    lambda m: m.randn(3, 4).index_select(0, m.tensor([[1]])),
    lambda m: m.randn(3, 4).index_select(0, m.tensor([1.0])),
    lambda m: m.tensor(3.0).index_select(0, m.tensor([0, 0])),
    lambda m: m.randn(3, 4).masked_fill(m.ones(3, 4), 1.0),
    lambda m: m.randn(3, 4).masked_fill(m.ones(3, 4, dtype=m.bool), m.ones(2)),
    lambda m: m.randn(3, 4).masked_fill_(m.ones(2, 3, 4, dtype=m.bool), 1.0),
    lambda m: m.randn(3, 4).masked_fill(m.ones(2, 4, dtype=m.bool), 1.0),
]


@pytest.mark.parametrize("case", range(len(MORE_CASES)))
def test_index_select_and_masked_fill_errors_match_pytorch(case):
    got = error_of(MORE_CASES[case], ember)
    assert got is not None
    if torch is None:
        pytest.skip("PyTorch is not installed")
    want = error_of(MORE_CASES[case], torch)
    assert got[0] == want[0], (got, want)


def test_index_select_and_masked_fill_autograd():
    a, v = f64(3, 4), ember.tensor(0.5, dtype=ember.float64, requires_grad=True)
    idx, mask = ember.tensor([2, 0, 2]), ember.tensor([True, False, False, True])
    assert gradcheck(lambda x: x.index_select(1, idx), (a,))
    assert gradgradcheck(lambda x: x.index_select(0, idx) ** 2, (a,))
    assert gradcheck(lambda x, y: x.masked_fill(mask, y), (a, v))
    assert gradgradcheck(lambda x, y: (x * x).masked_fill(mask, y * y), (a, v))
    assert gradcheck(lambda x: (x * 1).masked_fill_(mask, 2.0), (a,))
    ta, tv = ember.randn(3, 4, dtype=ember.float64), ember.tensor(2.0, dtype=ember.float64)
    with fwAD.dual_level():
        out = fwAD.make_dual(a.detach(), ta).index_select(1, idx)
        np.testing.assert_array_equal(fwAD.unpack_dual(out).tangent.numpy(), ta.numpy()[:, [2, 0, 2]])
        out = fwAD.make_dual(a.detach(), ta).masked_fill(mask, fwAD.make_dual(v.detach(), tv))
        np.testing.assert_array_equal(fwAD.unpack_dual(out).tangent.numpy(), np.where(mask.numpy(), 2.0, ta.numpy()))


def test_inplace_forms_on_non_leaf_and_views():
    """scatter_add_ and masked_fill_ (both overloads) on a non-leaf self and on a view of a non-leaf base."""
    a, src, v = f64(3, 4), f64(2, 3), ember.tensor(0.5, dtype=ember.float64, requires_grad=True)
    mask = ember.tensor([True, False, False, True])
    forms = {
        "scatter_add_": (lambda x, s: (x * x).scatter_add_(0, IDX, s * s), (a, src)),
        "masked_fill_ Scalar": (lambda x: (x * x).masked_fill_(mask, 2.0) * x, (a,)),
        "masked_fill_ Tensor": (lambda x, y: (x * x).masked_fill_(mask, y * y) * x, (a, v)),
    }

    def on_view(x, s, y):
        base = x * x
        base[1:].scatter_add_(1, IDX, s)
        base[0].masked_fill_(mask, y)
        return base * x

    forms["views"] = (on_view, (a, src, v))
    for name, (fn, inputs) in forms.items():
        assert gradcheck(fn, inputs), name
        assert gradgradcheck(fn, inputs), name
