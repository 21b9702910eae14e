"""index2 (issue 11): scatter (src/value, reduce), scatter_reduce, index_add/copy/fill, masked_scatter,
masked_select, take, take_along_dim, put, nonzero/argwhere/where(cond) (the scans and shapes of the
group are in test_index2_shapes.py).
Values against PyTorch (NumPy where it has the op) on every dtype, duplicates, non-contiguous and
empty inputs, PyTorch's errors, gradients (gradcheck/gradgradcheck here and in test_higher_order.py),
forward-mode JVPs against finite differences, and the parallel kernels at 1-3 threads."""
import warnings

import numpy as np
import pytest

import ember
from ember.autograd import gradcheck, gradgradcheck
from ember.autograd import forward_ad as fwAD
from test_index_ops import as_np, sample

try:
    import torch
except ImportError:                      # the comparisons with PyTorch skip without it
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="compares with PyTorch")
DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]
GRAIN = ember._C._thresholds()["grain_size"]
REDUCES = ["sum", "prod", "mean", "amax", "amin"]


def to_torch(t):
    if t.dtype == ember.bfloat16:
        return torch.tensor(t.to(ember.float32).numpy()).to(torch.bfloat16)
    return torch.tensor(t.numpy())


def from_torch(t):
    return t.float().numpy() if t.dtype in (torch.bfloat16, torch.float16) else t.numpy()


def assert_same(got, want, exact=True):
    got_np = as_np(got) if isinstance(got, ember.Tensor) else got
    if isinstance(want, ember.Tensor):
        want_np = as_np(want)
    else:
        want_np = from_torch(want) if torch is not None and isinstance(want, torch.Tensor) else want
    assert tuple(got_np.shape) == tuple(want_np.shape)
    if exact:
        np.testing.assert_array_equal(got_np.astype(np.float64), np.asarray(want_np).astype(np.float64))
    else:
        np.testing.assert_allclose(got_np.astype(np.float64), np.asarray(want_np).astype(np.float64), rtol=2e-2, atol=1e-2)


def f64(*shape, low=-2.0, high=2.0, seed=0):
    rng = np.random.default_rng(seed)
    return ember.tensor(rng.uniform(low, high, size=shape), dtype=ember.float64, requires_grad=True)


def jvp_matches_finite_differences(f, primals, tangents, eps=1e-6):
    """The forward-mode tangent of f against a central difference along the tangents."""
    primals, tangents = [p.detach() for p in primals], [t.detach() for t in tangents]
    with fwAD.dual_level():
        out = f(*[fwAD.make_dual(p, t) for p, t in zip(primals, tangents)])
        outs = out if isinstance(out, (tuple, list)) else [out]
        got = [fwAD.unpack_dual(o).tangent for o in outs]
    plus = f(*[p + eps * t for p, t in zip(primals, tangents)])
    minus = f(*[p - eps * t for p, t in zip(primals, tangents)])
    plus, minus = (x if isinstance(x, (tuple, list)) else [x] for x in (plus, minus))
    for g, hi, lo in zip(got, plus, minus):
        want = ((hi - lo) / (2 * eps)).numpy()
        g = np.zeros_like(want) if g is None else g.numpy()
        np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-6)


# ----------------------------------------------------------------------------- scatter
@needs_torch
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_scatter_src_and_value_match_torch(dtype, dim):
    rng = np.random.default_rng(0)
    a, src = sample((4, 5), dtype, rng), sample((4, 5), dtype, rng)
    # distinct targets per line, so the result does not depend on the write order
    idx = np.stack([rng.permutation(a.shape[dim])[:3] for _ in range(4)], axis=1 if dim == 0 else 0)
    idx = idx[:3, :4] if dim == 0 else idx[:4, :3]
    got = ember.scatter(a, dim, ember.tensor(idx), src)
    assert got.dtype == a.dtype
    assert_same(got, torch.scatter(to_torch(a), dim, torch.tensor(idx), to_torch(src)))
    value = True if dtype == "bool" else 3
    assert_same(a.scatter(dim, ember.tensor(idx), value), to_torch(a).scatter(dim, torch.tensor(idx), value))
    b = a.clone()
    assert b.scatter_(dim, ember.tensor(idx), src) is b
    assert_same(b, got)
    out = ember.empty_like(a)
    assert ember.scatter(a, dim, ember.tensor(idx), src, out=out) is out
    assert_same(out, got)


@needs_torch
@pytest.mark.parametrize("dtype", ["int64", "float32", "float64", "bfloat16"])
@pytest.mark.parametrize("reduce", ["add", "multiply"])
def test_scatter_reduce_argument_matches_torch_with_duplicates(dtype, reduce):
    rng = np.random.default_rng(1)
    a, src = sample((4, 5), dtype, rng, 1, 4), sample((4, 5), dtype, rng, 1, 4)
    idx = rng.integers(0, 4, size=(6, 5)) % 4  # duplicates
    idx = idx[:4]
    got = ember.scatter(a, 0, ember.tensor(idx), src, reduce=reduce)
    with warnings.catch_warnings():  # PyTorch deprecates reduce= with a src tensor
        warnings.simplefilter("ignore")
        want = to_torch(a).scatter(0, torch.tensor(idx), to_torch(src), reduce=reduce)
    assert_same(got, want, exact=dtype != "bfloat16")
    assert_same(a.scatter(1, ember.tensor(idx), 2, reduce=reduce), to_torch(a).scatter(1, torch.tensor(idx), 2, reduce=reduce))
    b = a.clone()
    b.scatter_(0, ember.tensor(idx), src, reduce=reduce)
    assert_same(b, got)


@needs_torch
@pytest.mark.parametrize("dtype", ["int32", "int64", "float16", "float32", "float64"])
@pytest.mark.parametrize("reduce", REDUCES)
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_matches_torch(dtype, reduce, include_self):
    rng = np.random.default_rng(2)
    a, src = sample((5, 6), dtype, rng), sample((7, 6), dtype, rng)
    idx = rng.integers(0, 5, size=(7, 6))  # many duplicates, some targets untouched
    got = ember.scatter_reduce(a, 0, ember.tensor(idx), src, reduce, include_self=include_self)
    want = torch.scatter_reduce(to_torch(a), 0, torch.tensor(idx), to_torch(src), reduce, include_self=include_self)
    assert got.dtype == a.dtype
    assert_same(got, want, exact=dtype not in ("float16",) and reduce != "mean")
    b = a.clone()
    b.scatter_reduce_(0, ember.tensor(idx), src, reduce, include_self=include_self)
    assert_same(b, got)


@needs_torch
@pytest.mark.parametrize("reduce", REDUCES)
def test_scatter_reduce_non_contiguous_and_smaller_index(reduce):
    rng = np.random.default_rng(3)
    base = ember.tensor(rng.standard_normal((6, 8)).astype(np.float32))
    a = base.t()                       # (8, 6), transposed
    src = ember.tensor(rng.standard_normal((5, 12)).astype(np.float32))[:, ::2]  # strided
    idx = ember.tensor(rng.integers(0, 6, size=(8, 4))).t().t()
    idx = ember.tensor(rng.integers(0, 6, size=(4, 8))).t()  # (8, 4) transposed index
    idx = idx[:5]
    got = ember.scatter_reduce(a, 1, idx, src, reduce)
    want = torch.scatter_reduce(to_torch(a.contiguous()), 1, to_torch(idx.contiguous()), to_torch(src.contiguous()), reduce)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)


def test_scatter_empty_index_and_zero_dim():
    a = ember.arange(6.).reshape(2, 3)
    empty = ember.zeros(0, 3, dtype=ember.int64)
    for r in REDUCES:
        np.testing.assert_array_equal(a.scatter_reduce(0, empty, a, r).numpy(), a.numpy())
    np.testing.assert_array_equal(a.scatter(0, empty, 1.0).numpy(), a.numpy())
    s = ember.tensor(2.0)
    assert s.scatter(0, ember.tensor(0), ember.tensor(5.0)).item() == 5.0
    assert s.scatter_reduce(0, ember.tensor(0), ember.tensor(5.0), "prod").item() == 10.0


def test_scatter_errors_match_torch():
    a, idx = ember.zeros(2, 3), ember.tensor([[0, 1, 2]])
    with pytest.raises(RuntimeError, match="index 5 is out of bounds for dimension 0 with size 2"):
        a.scatter(0, ember.tensor([[5]]), 1.0)
    with pytest.raises(RuntimeError, match="index -1 is out of bounds for dimension 1 with size 3"):
        a.scatter_reduce(1, ember.tensor([[-1]]), a, "sum")
    with pytest.raises(RuntimeError, match="reduce argument must be either add or multiply."):
        a.scatter(0, idx, a, reduce="max")
    with pytest.raises(RuntimeError, match="reduce argument must be either sum, prod, mean, amax or amin, got max"):
        a.scatter_reduce(0, idx, a, "max")
    with pytest.raises(RuntimeError, match="Expected self.dtype to be equal to src.dtype"):
        a.scatter(0, idx, a.double())
    with pytest.raises(RuntimeError, match="Expected dtype int32/int64 for index"):
        a.scatter(0, idx.float(), a)
    with pytest.raises(RuntimeError, match="Index tensor must have the same number of dimensions as self tensor"):
        a.scatter(0, ember.tensor([0]), a)
    with pytest.raises(RuntimeError, match=r"Expected index \[3, 3\] to be no larger than self \[2, 3\]"):
        a.scatter(1, ember.zeros(3, 3, dtype=ember.int64), ember.zeros(3, 3))


# --------------------------------------------------------------- scatter_reduce gradients
def _grads(lib, a, src, idx, reduce, include_self):
    x = lib.tensor(a, requires_grad=True) if lib is ember else torch.tensor(a, requires_grad=True)
    s = lib.tensor(src, requires_grad=True) if lib is ember else torch.tensor(src, requires_grad=True)
    i = lib.tensor(idx)
    g = lib.tensor(np.linspace(-1.0, 2.0, a.size).reshape(a.shape))
    (x.scatter_reduce(0, i, s, reduce, include_self=include_self) * g).sum().backward()
    return x.grad.numpy(), s.grad.numpy()


@needs_torch
@pytest.mark.parametrize("reduce", REDUCES)
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_gradients_match_torch_with_ties_and_zeros(reduce, include_self):
    a = np.array([[1.0, 0.0, 2.0, 3.0], [2.0, 5.0, 0.0, -1.0], [0.5, 1.5, 2.5, 4.0]])
    # ties with self and among src (amax/amin), one and two zeros in a target (prod)
    src = np.array([[2.0, 5.0, 0.0, 3.0], [2.0, 1.0, 0.0, -1.0], [1.0, 5.0, 3.0, 0.0]])
    idx = np.array([[1, 1, 0, 0], [1, 0, 0, 1], [2, 1, 1, 1]])
    if not include_self:
        # self is left out of the scattered targets: keep it off their values, where PyTorch would still
        # count a coincidentally equal self among amax/amin's ties (ember gives src the whole share)
        a = a + 10
    got, want = _grads(ember, a, src, idx, reduce, include_self), _grads(torch, a, src, idx, reduce, include_self)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("reduce", REDUCES)
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_gradcheck_gradgradcheck(reduce, include_self):
    a, src = f64(4, 3, low=0.5, high=2.0), f64(5, 3, low=0.5, high=2.0, seed=1)
    idx = ember.tensor([[0, 1, 3], [0, 2, 3], [1, 2, 0], [3, 2, 0], [0, 0, 0]])
    fn = lambda x, s: ember.scatter_reduce(x, 0, idx, s, reduce, include_self=include_self)
    assert gradcheck(fn, (a, src))
    assert gradgradcheck(fn, (a, src))


@pytest.mark.parametrize("reduce", REDUCES)
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_jvp(reduce, include_self):
    a, src = f64(4, 3, low=0.5, high=2.0), f64(5, 3, low=0.5, high=2.0, seed=1)
    ta, ts = f64(4, 3, seed=2), f64(5, 3, seed=3)
    idx = ember.tensor([[0, 1, 3], [0, 2, 3], [1, 2, 0], [3, 2, 0], [0, 0, 0]])
    jvp_matches_finite_differences(lambda x, s: ember.scatter_reduce(x, 0, idx, s, reduce, include_self=include_self),
                                   (a, src), (ta, ts))
    jvp_matches_finite_differences(lambda x: ember.scatter_reduce(x, 0, idx, src.detach(), reduce, include_self=include_self),
                                   (a,), (ta,))


def test_scatter_gradients_and_jvp():
    a, src = f64(3, 4), f64(2, 4, seed=1)
    idx = ember.tensor([[2, 0, 1, 1], [0, 1, 2, 0]])  # distinct targets per column
    assert gradcheck(lambda x, s: ember.scatter(x, 0, idx, s), (a, src))
    assert gradgradcheck(lambda x: ember.scatter(x * x, 0, idx, 1.5), (a,))
    jvp_matches_finite_differences(lambda x, s: ember.scatter(x, 0, idx, s), (a, src), (f64(3, 4, seed=2), f64(2, 4, seed=3)))
    jvp_matches_finite_differences(lambda x: ember.scatter(x, 0, idx, -2.0), (a,), (f64(3, 4, seed=2),))
    with pytest.raises(RuntimeError, match="derivative for aten::scatter"):
        ember.scatter(a, 0, idx, src, reduce="add").sum().backward()


# ------------------------------------------------------------ index_add / copy / fill, put
@needs_torch
@pytest.mark.parametrize("dtype", ["int64", "float32", "float64", "bfloat16", "bool"])
def test_index_add_copy_fill_match_torch(dtype):
    rng = np.random.default_rng(4)
    a, src = sample((5, 4), dtype, rng), sample((3, 4), dtype, rng)
    ta, tsrc = to_torch(a), to_torch(src)
    dup, uniq = [4, 0, 4], [4, 0, 2]
    if dtype != "bool":
        assert_same(a.index_add(0, ember.tensor(dup), src, alpha=2), ta.index_add(0, torch.tensor(dup), tsrc, alpha=2),
                    exact=dtype != "bfloat16")
        assert_same(a.index_add(1, ember.tensor([3, 3, 1, 0]), a), ta.index_add(1, torch.tensor([3, 3, 1, 0]), ta))
    assert_same(a.index_copy(0, ember.tensor(uniq), src), ta.index_copy(0, torch.tensor(uniq), tsrc))
    value = True if dtype == "bool" else 7
    assert_same(a.index_fill(1, ember.tensor([-1, 1]), value), ta.index_fill(1, torch.tensor([-1, 1]), value))
    assert_same(a.index_fill(0, ember.tensor(2), ember.tensor(value).to(a.dtype)),
                ta.index_fill(0, torch.tensor(2), torch.tensor(value).to(ta.dtype)))
    b = a.clone()
    assert b.index_copy_(0, ember.tensor(uniq), src) is b
    assert_same(b, ta.index_copy(0, torch.tensor(uniq), tsrc))
    c = a.clone()
    c.index_fill_(1, ember.tensor([0]), value)
    assert_same(c, ta.index_fill(1, torch.tensor([0]), value))


@needs_torch
def test_index_ops_non_contiguous_empty_and_zero_dim():
    rng = np.random.default_rng(5)
    a = ember.tensor(rng.standard_normal((4, 6)).astype(np.float32)).t()  # (6, 4) transposed
    src = ember.tensor(rng.standard_normal((6, 6)).astype(np.float32))[:, ::2]  # (6, 3) strided
    ta, tsrc = to_torch(a.contiguous()), to_torch(src.contiguous())
    idx = ember.tensor([2, 0, 2])
    np.testing.assert_allclose(a.index_add(1, idx, src).numpy(), ta.index_add(1, torch.tensor([2, 0, 2]), tsrc).numpy(), rtol=1e-6)
    np.testing.assert_array_equal(a.index_fill(0, ember.tensor([], dtype=ember.int64), 1.0).numpy(), a.numpy())
    assert a.index_add(0, ember.tensor([], dtype=ember.int64), ember.zeros(0, 4)).shape == (6, 4)
    s = ember.tensor(1.5)
    assert s.index_add(0, ember.tensor([0]), ember.tensor(2.0)).item() == 3.5
    assert s.index_fill(0, ember.tensor(0), -1.0).item() == -1.0
    assert s.index_copy(0, ember.tensor([0]), ember.tensor(4.0)).item() == 4.0


def test_index_ops_errors_match_torch():
    a = ember.arange(6.).reshape(2, 3)
    with pytest.raises(RuntimeError, match="index -1 is out of bounds for dimension 0 with size 2"):
        a.index_add(0, ember.tensor([-1]), ember.ones(1, 3))
    with pytest.raises(IndexError, match=r"index_copy_\(\): index 5 is out of bounds for dimension 0 with size 2"):
        a.index_copy(0, ember.tensor([5]), ember.ones(1, 3))
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 0 with size 2"):
        a.index_fill(0, ember.tensor([5]), 1.0)
    with pytest.raises(RuntimeError, match=r"index_add_\(\): self \(Float\) and source \(Double\) must have the same scalar type"):
        a.index_add(0, ember.tensor([0]), ember.ones(1, 3, dtype=ember.float64))
    with pytest.raises(RuntimeError, match=r"Number of indices \(1\) should be equal to source.size\(dim\): \(2\), for dim: 0"):
        a.index_add(0, ember.tensor([0]), ember.ones(2, 3))
    with pytest.raises(RuntimeError, match=r"index_add_\(\): Expected dtype int32/int64 for index but got: Float"):
        a.index_add(0, ember.tensor([0.0]), ember.ones(1, 3))
    with pytest.raises(RuntimeError, match=r"source \[1, 2\] must have the shape of self \[2, 3\] apart from dimension 0"):
        a.index_copy(0, ember.tensor([0]), ember.ones(1, 2))
    with pytest.raises(RuntimeError, match="Index has to be a vector/scalar"):
        a.index_fill(0, ember.tensor([[0]]), 1.0)
    with pytest.raises(RuntimeError, match="index_fill_ only supports a 0-dimensional value tensor, but got tensor with 1 dimension"):
        a.index_fill(0, ember.tensor([0]), ember.ones(2))


@needs_torch
@pytest.mark.parametrize("accumulate", [False, True])
def test_put_and_take_match_torch(accumulate):
    rng = np.random.default_rng(6)
    a = ember.tensor(rng.standard_normal((3, 5)).astype(np.float32)).t()  # non-contiguous
    ta = to_torch(a.contiguous())
    idx = [[0, -1, 7], [3, 3 if accumulate else 4, -15]]
    src = ember.tensor(rng.standard_normal((2, 3)).astype(np.float32))
    got = a.put(ember.tensor(idx), src, accumulate=accumulate)
    want = ta.put(torch.tensor(idx), to_torch(src), accumulate=accumulate)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
    b = a.clone()
    assert b.put_(ember.tensor(idx), src, accumulate=accumulate) is b
    np.testing.assert_allclose(b.numpy(), want.numpy(), rtol=1e-6)
    np.testing.assert_array_equal(ember.take(a, ember.tensor(idx)).numpy(), torch.take(ta, torch.tensor(idx)).numpy())
    assert ember.take(a, ember.tensor(3)).shape == ()
    assert ember.take(ember.zeros(0), ember.tensor([], dtype=ember.int64)).shape == (0,)


def test_put_and_take_errors_match_torch():
    a = ember.arange(6.).reshape(2, 3)
    with pytest.raises(IndexError, match=r"out of range: tried to access index 10 on a tensor of 6 elements."):
        a.take(ember.tensor([10]))
    with pytest.raises(IndexError, match=r"out of range: tried to access index -7 on a tensor of 6 elements."):
        a.put_(ember.tensor([-7]), ember.tensor([1.0]))
    with pytest.raises(IndexError, match=r"put_\(\): Expected source and index to have the same number of elements, but got source.numel\(\) = 1, index.numel\(\) = 2"):
        a.put(ember.tensor([0, 1]), ember.tensor([9.0]))
    with pytest.raises(RuntimeError, match=r"take\(\): Expected a long tensor for index, but got Float"):
        a.take(ember.tensor([0.0]))
    with pytest.raises(IndexError, match="take from an empty tensor"):
        ember.zeros(0).take(ember.tensor([0]))


@needs_torch
def test_take_along_dim_matches_torch():
    rng = np.random.default_rng(7)
    a = ember.tensor(rng.standard_normal((4, 5)).astype(np.float32))
    ta = to_torch(a)
    for idx, dim in (([[0], [2], [1], [4]], 1), ([[3, 0, 1, 1, 2]], 0), ([[1, 0]], None)):
        got = ember.take_along_dim(a, ember.tensor(idx), dim)
        want = torch.take_along_dim(ta, torch.tensor(idx), dim)
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    idx = np.argsort(a.numpy(), axis=1)
    np.testing.assert_array_equal(ember.take_along_dim(a.t(), ember.tensor(idx).t(), 0).numpy(),
                                  np.take_along_axis(a.numpy().T, idx.T, 0))
    # broadcasting over the other dims, as torch
    got = ember.take_along_dim(ember.ones(2, 1, 3), ember.zeros(1, 4, 1, dtype=ember.int64), 2)
    assert got.shape == (2, 4, 1)
    with pytest.raises(RuntimeError, match="input and indices should have the same number of dimensions"):
        ember.take_along_dim(a, ember.tensor([0]), 0)
    with pytest.raises(RuntimeError, match="index 5 is out of bounds for dimension 1 with size 5"):
        ember.take_along_dim(a, ember.tensor([[5]]), 1)


# ------------------------------------------------------------------- masks and nonzero
@needs_torch
@pytest.mark.parametrize("dtype", DTYPES)
def test_masked_scatter_and_select_match_torch(dtype):
    rng = np.random.default_rng(8)
    a, src = sample((3, 4), dtype, rng), sample((4, 4), dtype, rng)
    mask = ember.tensor(rng.integers(0, 2, size=(4,)) > 0)  # broadcast over rows
    ta, tsrc, tmask = to_torch(a), to_torch(src), torch.tensor(mask.numpy())
    assert_same(a.masked_scatter(mask, src), ta.masked_scatter(tmask, tsrc))
    assert_same(a.masked_select(mask), ta.masked_select(tmask))
    assert_same(ember.masked_select(a.t(), mask.reshape(4, 1)), torch.masked_select(ta.t(), tmask.reshape(4, 1)))
    b = a.clone()
    assert b.masked_scatter_(mask, src) is b
    assert_same(b, ta.masked_scatter(tmask, tsrc))
    out = ember.empty(0, dtype=a.dtype)
    assert ember.masked_select(a, mask, out=out) is out
    assert_same(out, ta.masked_select(tmask))


def test_masked_ops_zero_dim_empty_and_errors():
    assert ember.tensor(2.0).masked_select(ember.tensor(True)).tolist() == [2.0]
    assert ember.tensor(2.0).masked_scatter(ember.tensor(True), ember.tensor([5.0, 6.0])).item() == 5.0
    assert ember.zeros(0, 3).masked_select(ember.zeros(0, 3, dtype=ember.bool)).shape == (0,)
    a = ember.zeros(2, 3)
    with pytest.raises(RuntimeError, match="masked_select: expected BoolTensor for mask"):
        a.masked_select(ember.tensor([1, 0, 1]))
    with pytest.raises(RuntimeError, match="masked_scatter_ only supports boolean masks, but got mask with dtype Long"):
        a.masked_scatter(ember.tensor([1, 0, 1]), ember.ones(6))
    with pytest.raises(RuntimeError, match="Number of elements of source < number of ones in mask"):
        a.masked_scatter(ember.tensor([True, True, True]), ember.ones(2))
    with pytest.raises(RuntimeError, match=r"\[2, 3\].*\[4\]|\[4\].*\[2, 3\]|size of tensor"):
        a.masked_select(ember.ones(4, dtype=ember.bool))


@pytest.mark.parametrize("dtype", DTYPES)
def test_nonzero_argwhere_where_match_numpy(dtype):
    rng = np.random.default_rng(9)
    a = sample((3, 4, 2), dtype, rng, -1, 2)
    want = np.argwhere(as_np(a))
    np.testing.assert_array_equal(a.nonzero().numpy(), want)
    np.testing.assert_array_equal(ember.nonzero(a).numpy(), want)
    np.testing.assert_array_equal(ember.argwhere(a).numpy(), want)
    for got, w in zip(a.nonzero(as_tuple=True), np.nonzero(as_np(a))):
        np.testing.assert_array_equal(got.numpy(), w)
    for got, w in zip(ember.where(a.to(ember.bool)), np.nonzero(as_np(a))):
        np.testing.assert_array_equal(got.numpy(), w)
    t = a.transpose(0, 2)  # non-contiguous
    np.testing.assert_array_equal(t.nonzero().numpy(), np.argwhere(as_np(a).transpose(2, 1, 0)))
    out = ember.empty(0, dtype=ember.int64)
    assert ember.nonzero(a, out=out) is out
    np.testing.assert_array_equal(out.numpy(), want)


def test_nonzero_zero_dim_and_empty():
    assert ember.tensor(3.0).nonzero().shape == (1, 0)
    assert ember.tensor(0.0).nonzero().shape == (0, 0)
    assert ember.argwhere(ember.tensor(0.0)).shape == (0, 0)
    assert [t.tolist() for t in ember.tensor(3.0).nonzero(as_tuple=True)] == [[0]]
    assert [t.tolist() for t in ember.where(ember.tensor(True))] == [[0]]
    assert ember.zeros(0, 3).nonzero().shape == (0, 2)
    assert ember.tensor([float("nan"), -0.0, 0.0]).nonzero().tolist() == [[0]]
    assert ember.nonzero(ember.ones(2, 2)).dtype == ember.int64


def test_where_with_python_scalars():
    c = ember.tensor([True, False, True])
    x = ember.tensor([1.0, 2.0, 3.0])
    assert ember.where(c, x, 0.0).tolist() == [1.0, 0.0, 3.0]
    assert ember.where(c, 5, x).tolist() == [5.0, 2.0, 5.0]
    assert ember.where(c, 1, 0).dtype == ember.int64


# ------------------------------------------------------------- JVPs of the composites
def test_index_composites_jvp():
    a, s = f64(3, 4), f64(2, 4, seed=1)
    ta, ts = f64(3, 4, seed=2), f64(2, 4, seed=3)
    idx = ember.tensor([2, 0])
    check = jvp_matches_finite_differences
    check(lambda x, y: ember.index_add(x, 0, idx, y, alpha=2), (a, s), (ta, ts))
    check(lambda x, y: ember.index_copy(x, 0, idx, y), (a, s), (ta, ts))
    check(lambda x, v: ember.index_fill(x, 1, idx, v), (a, f64(seed=4)), (ta, f64(seed=5)))
    check(lambda x: ember.index_fill(x, 1, idx, 2.0), (a,), (ta,))
    mask = a.detach() > 0
    check(lambda x, y: ember.masked_scatter(x, mask, y.reshape(-1).repeat(2)), (a, s), (ta, ts))
    check(lambda x: ember.masked_select(x, mask), (a,), (ta,))
    check(lambda x: ember.take(x, ember.tensor([[0, -1], [5, 5]])), (a,), (ta,))
    check(lambda x: ember.take_along_dim(x, ember.tensor([[1], [3], [0]]), 1), (a,), (ta,))
    check(lambda x, y: ember.put(x, ember.tensor([0, 0, 3, -1, 5, 6, 7, 8]), y.reshape(-1), accumulate=True), (a, s), (ta, ts))
    check(lambda x, y: ember.put(x, ember.tensor([0, 1, 3, -1, 5, 6, 7, 8]), y.reshape(-1)), (a, s), (ta, ts))
    check(lambda x: x[ember.where(mask)], (a,), (ta,))
    check(lambda x: x[ember.argwhere(mask)[:, 0]], (a,), (ta,))
    check(lambda g, x: ember._scatter_reduce_backward(g, x, 0, ember.tensor([[1, 0, 2, 2]]), s.detach()[:1], "sum",
                                                      True, x, False), (a, a), (ta, ta))
    check(lambda t: ember._logcumsumexp_jvp(t, a.detach(), 1), (ta,), (a,))
    check(lambda g: ember._logcumsumexp_backward(g, a.detach(), ember.logcumsumexp(a.detach(), 1), 1), (ta,), (a,))
    check(lambda t: ember._scatter_reduce_jvp(t, ts.detach(), a.detach(), 0, ember.tensor([[1, 0, 2, 2]]), s.detach()[:1],
                                              "amax", True, ember.scatter_reduce(a.detach(), 0, ember.tensor([[1, 0, 2, 2]]),
                                                                                 s.detach()[:1], "amax")), (ta,), (a,))


def test_index_composites_gradcheck():
    a, s = f64(3, 4), f64(2, 4, seed=1)
    idx = ember.tensor([2, 0])
    assert gradcheck(lambda x, y: ember.index_add(x, 0, idx, y, alpha=-1.5), (a, s))
    assert gradcheck(lambda x, y: ember.index_copy(x, 0, idx, y), (a, s))
    assert gradcheck(lambda x, v: ember.index_fill(x, 1, ember.tensor([3, -1, 0]), v), (a, f64(seed=4)))
    assert gradcheck(lambda x, y: ember.masked_scatter(x, x.detach() > 0, y), (a, s))
    assert gradcheck(lambda x: ember.take(x, ember.tensor([[0, 0], [11, -12]])), (a,))
    y = (a * 1).index_add_(1, ember.tensor([0, 0, 3]), ember.ones(3, 3, dtype=ember.float64))
    y.sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), np.ones((3, 4)))


# ------------------------------------------------------------ realistic sizes, threads
@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("rows", [1, GRAIN // 64 - 1, GRAIN // 64 + 1, 3 * GRAIN // 64 + 5])
def test_parallel_scatter_reduce_is_deterministic(threads, rows):
    """Rows split across threads around the grain size: every reduction bit-identical to one thread."""
    old = ember.get_num_threads()
    try:
        rng = np.random.default_rng(rows)
        a = ember.tensor(rng.standard_normal((rows, 64)).astype(np.float32))
        idx = ember.tensor(rng.integers(0, 64, size=(rows, 64)))
        src = ember.tensor(rng.standard_normal((rows, 64)).astype(np.float32))
        results = {}
        for n in (1, threads):
            ember.set_num_threads(n)
            results[n] = [a.scatter_reduce(1, idx, src, r, include_self=inc).numpy() for r in REDUCES for inc in (True, False)]
            results[n] += [a.scatter(1, idx, src).numpy(), a.scatter_add(1, idx, src).numpy(),
                           a.cummax(1).values.numpy(), a.cummin(0).indices.numpy(), a.logcumsumexp(1).numpy()]
        for serial, parallel in zip(results[1], results[threads]):
            np.testing.assert_array_equal(parallel, serial)
        bad = idx.clone()
        bad[-1, -1] = 64
        with pytest.raises(RuntimeError, match="index 64 is out of bounds for dimension 1 with size 64"):
            a.scatter_reduce(1, bad, src, "amax")
    finally:
        ember.set_num_threads(old)


@needs_torch
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_realistic_sizes_match_torch(threads):
    old = ember.get_num_threads()
    try:
        ember.set_num_threads(threads)
        rng = np.random.default_rng(11)
        a = rng.standard_normal((512, 300)).astype(np.float32)
        idx = rng.integers(0, 512, size=(700, 300))
        src = rng.standard_normal((700, 300)).astype(np.float32)
        for r in REDUCES:
            got = ember.scatter_reduce(ember.tensor(a), 0, ember.tensor(idx), ember.tensor(src), r)
            want = torch.scatter_reduce(torch.tensor(a), 0, torch.tensor(idx), torch.tensor(src), r)
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-4, atol=1e-5)
        big = ember.tensor(a)
        np.testing.assert_allclose(ember.logcumsumexp(big, 0).numpy(), torch.logcumsumexp(torch.tensor(a), 0).numpy(), rtol=1e-5, atol=1e-5)
        got, want = ember.cummax(big, 1), torch.cummax(torch.tensor(a), 1)
        np.testing.assert_array_equal(got.indices.numpy(), want.indices.numpy())
        mask = a > 0
        np.testing.assert_array_equal(ember.masked_select(big, ember.tensor(mask)).numpy(), a[mask])
        np.testing.assert_array_equal(ember.nonzero(ember.tensor(mask)).numpy(), np.argwhere(mask))
    finally:
        ember.set_num_threads(old)


@pytest.mark.skipif(not ember.cuda.is_available(), reason="needs a CUDA GPU")
def test_cuda_slots_raise_naming_op_and_device():
    a = ember.ones(3, 4).cuda()
    idx = ember.tensor([[0]]).cuda()
    for name, call in (("scatter", lambda: a.scatter(0, idx, 1.0)), ("scatter_reduce", lambda: a.scatter_reduce(0, idx, a, "sum")),
                       ("nonzero", lambda: a.nonzero()), ("cummax", lambda: a.cummax(0)), ("cummin", lambda: a.cummin(0)),
                       ("logcumsumexp", lambda: a.logcumsumexp(0))):
        with pytest.raises(NotImplementedError, match=f"{name}: .*not implemented on cuda"):
            call()


def test_inplace_forms_on_non_leaf_and_views():
    """The in-place forms on a non-leaf self and on a view of a non-leaf base: gradcheck and gradgradcheck."""
    a, s, v = f64(3, 4), f64(2, 4, seed=1), f64(seed=2)
    distinct = ember.tensor([[2, 0, 1, 1], [0, 1, 2, 0]])
    rows = ember.tensor([2, 0])
    mask = ember.tensor([True, False, False, True])
    forms = {
        "scatter_ src": (lambda x, y: (x * x).scatter_(0, distinct, y * y) * x, (a, s)),
        "scatter_ value": (lambda x: (x * x).scatter_(0, distinct, 1.5) * x, (a,)),
        "scatter_reduce_": (lambda x, y: (x * x).scatter_reduce_(0, distinct, y * y, "prod", include_self=False), (a, s)),
        "index_add_": (lambda x, y: (x * x).index_add_(0, rows, y * y, alpha=2) * x, (a, s)),
        "index_copy_": (lambda x, y: (x * x).index_copy_(0, rows, y * y) * x, (a, s)),
        "index_fill_ Scalar": (lambda x: (x * x).index_fill_(1, rows, -1.0) * x, (a,)),
        "index_fill_ Tensor": (lambda x, w: (x * x).index_fill_(1, rows, w * w) * x, (a, v)),
        "masked_scatter_": (lambda x, y: (x * x).masked_scatter_(mask, y * y) * x, (a, s)),
        "put_": (lambda x, y: (x * x).put_(ember.tensor([0, 5, 5, -1]), (y * y)[0], accumulate=True) * x, (a, s)),
    }

    along_rows = ember.tensor([[2, 0, 1, 3], [3, 1, 0, 2]])  # distinct targets along dim 1

    def on_view(x, y, w):
        base = x * x
        base[1:].scatter_(1, along_rows, y[:, :4])
        base[0].index_fill_(0, rows, w)
        base[:, 1].masked_scatter_(mask[:3], y[0])
        base[1:].scatter_reduce_(1, along_rows, y, "amax")
        base.t()[1:].index_add_(0, rows, x.t()[1:3])
        base[:2].index_copy_(1, rows, y[:, :2])
        base[2].put_(ember.tensor([3]), y[0, :1])
        return base * x

    forms["views"] = (on_view, (a, s, v))
    for name, (fn, inputs) in forms.items():
        assert gradcheck(fn, inputs), name
        assert gradgradcheck(fn, inputs), name
