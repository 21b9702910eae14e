"""The blas group of issue 11: addmm/addmv/addbmm/baddbmm, cross, cdist, tensordot, einsum,
cartesian_prod, linalg.norm/matrix_norm and F.normalize (outer, ger, kron, dist,
cosine_similarity and pairwise_distance also run in the op harness). Values against NumPy
(and PyTorch where installed), errors, out= and in-place forms, float64 gradcheck,
gradgradcheck and forward-mode JVPs."""
import itertools
import math
import warnings

import numpy as np
import pytest

import ember
from ember.autograd import forward_ad as fwAD
from ember.autograd import gradcheck, gradgradcheck

try:
    import torch
except ImportError:                      # the comparisons with PyTorch skip without it
    torch = None

F64 = ember.float64
RNG = np.random.default_rng(11)


def arr(*shape, dtype=np.float64):
    if np.issubdtype(dtype, np.integer):
        return RNG.integers(-3, 4, size=shape).astype(dtype)
    return RNG.standard_normal(shape).astype(dtype)


def t64(*shape):
    return ember.tensor(arr(*shape), dtype=F64, requires_grad=True)


def close(got, expected, rtol=1e-6, atol=1e-6):
    np.testing.assert_allclose(got.numpy().astype(np.float64), np.asarray(expected, np.float64), rtol=rtol, atol=atol)


def check_grads(fn, *inputs):
    assert gradcheck(fn, inputs)
    assert gradgradcheck(fn, inputs)


def check_jvp(fn, *primals, eps=1e-6):
    """The forward-mode tangent of fn against central differences."""
    tangents = [ember.tensor(arr(*p.shape), dtype=F64) for p in primals]
    primals = [p.detach() for p in primals]
    with fwAD.dual_level():
        got = fwAD.unpack_dual(fn(*[fwAD.make_dual(p, t) for p, t in zip(primals, tangents)]))[1]
    with ember.no_grad():
        hi = fn(*[p + eps * t for p, t in zip(primals, tangents)]).numpy()
        lo = fn(*[p - eps * t for p, t in zip(primals, tangents)]).numpy()
    np.testing.assert_allclose(got.numpy(), (hi - lo) / (2 * eps), rtol=1e-6, atol=1e-7)


# ---------------------------------------------------------------- addmm, addmv, addbmm, baddbmm

def np_addmm(c, a, b, beta, alpha):
    return (0 if beta == 0 else beta * c) + alpha * (a @ b)


def np_addbmm(c, a, b, beta, alpha):
    return (0 if beta == 0 else beta * c) + alpha * np.einsum("bij,bjk->ik", a, b)


# op, shapes of (self, operand 1, operand 2), NumPy reference
PRODUCTS = [
    ("addmm", [(5,), (3, 4), (4, 5)], np_addmm),
    ("addmm", [(3, 5), (3, 4), (4, 5)], np_addmm),
    ("addmv", [(3,), (3, 4), (4,)], np_addmm),
    ("addmv", [(1,), (3, 4), (4,)], np_addmm),
    ("baddbmm", [(2, 3, 5), (2, 3, 4), (2, 4, 5)], np_addmm),
    ("baddbmm", [(3, 1), (2, 3, 4), (2, 4, 5)], np_addmm),
    ("addbmm", [(3, 5), (2, 3, 4), (2, 4, 5)], np_addbmm),
    ("addbmm", [(5,), (6, 3, 4), (6, 4, 5)], np_addbmm),
]


@pytest.mark.parametrize("name,shapes,ref", PRODUCTS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.int32])
@pytest.mark.parametrize("beta,alpha", [(1, 1), (0.5, 2), (0, -1.5), (2, 0)])
def test_scaled_products_match_numpy(name, shapes, ref, dtype, beta, alpha):
    if np.issubdtype(dtype, np.integer):
        beta, alpha = int(beta), int(alpha)
    c, a, b = (arr(*s, dtype=dtype) for s in shapes)
    got = getattr(ember, name)(ember.tensor(c), ember.tensor(a), ember.tensor(b), beta=beta, alpha=alpha)
    expected = ref(c, a, b, beta, alpha)
    assert got.dtype == ember.tensor(c).dtype and tuple(got.shape) == expected.shape
    close(got, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [ember.float16, ember.bfloat16])
def test_addmm_half_types(dtype):
    c, a, b = arr(3, 5), arr(3, 4), arr(4, 5)
    got = ember.addmm(ember.tensor(c).to(dtype), ember.tensor(a).to(dtype), ember.tensor(b).to(dtype), alpha=0.5)
    assert got.dtype == dtype
    close(got.float(), c + 0.5 * (a @ b), rtol=2e-2, atol=5e-2)


@pytest.mark.parametrize("name,shapes,ref", PRODUCTS)
@pytest.mark.parametrize("dtype", [ember.bfloat16, ember.float16])
def test_half_type_products_round_once(name, shapes, ref, dtype):
    """bfloat16/float16: beta * self + alpha * product summed in float32 and rounded once, as PyTorch's gemm
    (rounding the product first is off by one unit in the last place for some elements)."""
    rng = np.random.default_rng(5)
    shapes = [tuple(8 * d if d > 1 else d for d in s) for s in shapes]  # long sums: the two roundings differ
    c, a, b = (ember.tensor(rng.standard_normal(s), dtype=ember.float32).to(dtype) for s in shapes)
    for beta, alpha in ((1, 1), (0.5, 2)):
        got = getattr(ember, name)(c, a, b, beta=beta, alpha=alpha)
        once = getattr(ember, name)(c.float(), a.float(), b.float(), beta=beta, alpha=alpha).to(dtype)
        assert got.dtype == dtype and got.shape == once.shape
        np.testing.assert_array_equal(got.float().numpy(), once.float().numpy())
        close(got.float(), ref(*(x.float().numpy().astype(np.float64) for x in (c, a, b)), beta, alpha),
              rtol=2e-2, atol=5e-2)
    x = a.float().requires_grad_()
    getattr(ember, name)(c.float(), x, b.float()).sum().backward()  # the float32 path records as before
    assert x.grad is not None


def test_bfloat16_addmm_rounds_once_as_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(6)
    c, a, b = (rng.standard_normal(s).astype(np.float32) for s in ((64, 48), (64, 96), (96, 48)))
    ours = ember.addmm(*(ember.tensor(x).bfloat16() for x in (c, a, b)), beta=0.5, alpha=2)
    theirs = torch.addmm(*(torch.tensor(x).bfloat16() for x in (c, a, b)), beta=0.5, alpha=2)
    np.testing.assert_array_equal(ours.float().numpy(), theirs.float().numpy())
    twice = ember.tensor(c).bfloat16() * 0.5 + (ember.tensor(a).bfloat16() @ ember.tensor(b).bfloat16()) * 2
    assert not ours.equal(twice)  # the case tells the two roundings apart
    la = ember.tensor(a).bfloat16().requires_grad_()
    ours = ember.nn.functional.linear(la, ember.tensor(b.T.copy()).bfloat16(), ember.tensor(c[0]).bfloat16())
    ta = torch.tensor(a).bfloat16().requires_grad_()
    theirs = torch.nn.functional.linear(ta, torch.tensor(b.T.copy()).bfloat16(), torch.tensor(c[0]).bfloat16())
    np.testing.assert_array_equal(ours.detach().float().numpy(), theirs.detach().float().numpy())
    assert ours.grad_fn.name() == theirs.grad_fn.name() == "AddmmBackward0"
    ours.sum().backward()
    theirs.sum().backward()
    np.testing.assert_allclose(la.grad.float().numpy(), ta.grad.float().numpy(), rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("name,shapes,ref", PRODUCTS)
def test_beta_zero_ignores_nan_and_inf_in_self(name, shapes, ref):
    c = np.full(shapes[0], np.nan)
    c.flat[0] = np.inf
    a, b = arr(*shapes[1]), arr(*shapes[2])
    got = getattr(ember, name)(ember.tensor(c), ember.tensor(a), ember.tensor(b), beta=0, alpha=2)
    close(got, ref(np.zeros(shapes[0]), a, b, 0, 2))
    assert not np.isnan(got.numpy()).any()


@pytest.mark.parametrize("name,shapes,ref", PRODUCTS)
def test_scaled_products_out_and_in_place(name, shapes, ref):
    c, a, b = (arr(*s) for s in shapes)
    expected = ref(c, a, b, 0.5, 3)
    out = ember.empty(0, dtype=F64)
    r = getattr(ember, name)(ember.tensor(c), ember.tensor(a), ember.tensor(b), beta=0.5, alpha=3, out=out)
    assert r is out
    close(out, expected)
    if expected.shape == c.shape:
        x = ember.tensor(c)
        assert getattr(x, name + "_")(ember.tensor(a), ember.tensor(b), beta=0.5, alpha=3) is x
        close(x, expected)
    else:  # self is broadcast: it cannot hold the result
        with pytest.raises(RuntimeError):
            getattr(ember.tensor(c), name + "_")(ember.tensor(a), ember.tensor(b))


def test_scaled_products_on_non_contiguous_operands():
    a, b, c = arr(4, 3), arr(5, 4), arr(5, 3)
    got = ember.addmm(ember.tensor(c).t(), ember.tensor(a).t(), ember.tensor(b).t(), beta=2)
    close(got, 2 * c.T + a.T @ b.T)
    ba = ember.tensor(arr(2, 4, 3)).transpose(1, 2)
    bb = ember.tensor(arr(2, 4, 6))[:, :, ::2]
    close(ember.baddbmm(ember.zeros(1, dtype=F64), ba, bb), ba.numpy() @ bb.numpy())
    close(ember.addbmm(ember.zeros(1, dtype=F64), ba, bb), (ba.numpy() @ bb.numpy()).sum(0))


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_addmm_at_a_realistic_size(threads):
    a, b, c = arr(300, 257, dtype=np.float32), arr(257, 190, dtype=np.float32), arr(190, dtype=np.float32)
    before = ember.get_num_threads()
    ember.set_num_threads(threads)
    try:
        got = ember.addmm(ember.tensor(c), ember.tensor(a), ember.tensor(b), beta=0.25, alpha=-1)
        got_b = ember.addbmm(ember.tensor(c), ember.tensor(a).expand(3, 300, 257), ember.tensor(b).expand(3, 257, 190))
    finally:
        ember.set_num_threads(before)
    close(got, 0.25 * c - a.astype(np.float64) @ b, rtol=1e-4, atol=1e-3)
    close(got_b, c + 3 * (a.astype(np.float64) @ b), rtol=1e-4, atol=3e-3)


def test_scaled_product_errors_name_the_shapes():
    f = ember.randn
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 2x4\)"):
        ember.addmm(f(4), f(2, 3), f(2, 4))
    with pytest.raises(RuntimeError, match=r"The expanded size of the tensor"):
        ember.addmm(f(5), f(2, 3), f(3, 4))
    with pytest.raises(RuntimeError, match="mat1 must be a matrix, got 3-D tensor"):
        ember.addmm(f(4), f(2, 3, 1), f(3, 4))
    with pytest.raises(RuntimeError, match="self and mat2 must have the same dtype, but got Float and Double"):
        ember.addmm(f(4), f(2, 3), f(3, 4, dtype=F64))
    with pytest.raises(RuntimeError, match=r"size mismatch, got input \(2\), mat \(2x3\), vec \(4\)"):
        ember.addmv(f(2), f(2, 3), f(4))
    with pytest.raises(RuntimeError, match="vector \\+ matrix @ vector expected, got 1, 3, 1"):
        ember.addmv(f(2), f(2, 3, 1), f(3))
    with pytest.raises(RuntimeError, match="addmv input tensors must have the same dtype, but got Double, Float, and Float"):
        ember.addmv(f(2, dtype=F64), f(2, 3), f(3))
    with pytest.raises(RuntimeError, match="batch1 and batch2 must have same number of batches, got 5 and 4"):
        ember.addbmm(f(2, 4), f(5, 2, 3), f(4, 3, 4))
    with pytest.raises(RuntimeError, match=r"Incompatible matrix sizes for bmm \(2x3 and 4x4\)"):
        ember.addbmm(f(2, 4), f(5, 2, 3), f(5, 4, 4))
    with pytest.raises(RuntimeError, match=r"Expected size for first two dimensions of batch2 tensor to be: \[5, 3\]"):
        ember.baddbmm(f(2, 4), f(5, 2, 3), f(4, 3, 4))


def test_addmm_blas_gradients_and_jvp():
    """The fused kernel addmm runs under autograd, called directly: its own derivative and JVP formulas."""
    inputs = [t64(4), t64(2, 3), t64(3, 4)]
    check_grads(lambda c, a, b: ember._addmm_blas(c, a, b, 0.5, -2), *inputs)
    check_jvp(lambda c, a, b: ember._addmm_blas(c, a, b, 0.5, -2), *inputs)
    check_jvp(lambda c, a, b: ember._addmm_blas(c, a.t(), b.t(), 1, 1), t64(2, 1), t64(3, 2), t64(4, 3))


@pytest.mark.parametrize("name,shapes,ref", PRODUCTS)
def test_scaled_products_gradients(name, shapes, ref):
    op = getattr(ember, name)
    inputs = [t64(*s) for s in shapes]
    check_grads(lambda c, a, b: op(c, a, b, beta=0.5, alpha=-2), *inputs)
    check_grads(lambda c, a, b: op(c * c, a, b, beta=0), *inputs)  # self gets a zero gradient
    check_jvp(lambda c, a, b: op(c, a, b, beta=0.5, alpha=-2), *inputs)


@pytest.mark.parametrize("name,shapes,ref", PRODUCTS)
def test_in_place_scaled_products_gradients(name, shapes, ref):
    c, a, b = (t64(*s) for s in shapes)
    expected = ref(c.detach().numpy(), a.detach().numpy(), b.detach().numpy(), 0.5, 2)
    if expected.shape != tuple(c.shape):
        return
    check_grads(lambda c, a, b: getattr(c * 1, name + "_")(a, b, beta=0.5, alpha=2), c, a, b)


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
def test_scaled_products_match_torch_gradients():
    c, a, b = arr(3, 5), arr(3, 4), arr(4, 5)
    e = [ember.tensor(x, requires_grad=True) for x in (c, a, b)]
    t = [torch.tensor(x, requires_grad=True) for x in (c, a, b)]
    (ember.addmm(*e, beta=0.5, alpha=3) ** 2).sum().backward()
    (torch.addmm(*t, beta=0.5, alpha=3) ** 2).sum().backward()
    for x, y in zip(e, t):
        close(x.grad, y.grad.numpy())


# ---------------------------------------------------------------- cross

@pytest.mark.parametrize("sa,sb,dim", [((4, 3), (4, 3), -1), ((3, 5), (3, 5), 0), ((2, 1, 3), (1, 4, 3), 2),
                                       ((2, 3, 4), (2, 3, 1), 1)])
def test_linalg_cross_matches_numpy(sa, sb, dim):
    a, b = arr(*sa), arr(*sb)
    got = ember.linalg.cross(ember.tensor(a), ember.tensor(b), dim=dim)
    close(got, np.cross(a, b, axis=dim))
    close(ember.cross(ember.tensor(a), ember.tensor(b), dim), np.cross(a, b, axis=dim))
    out = ember.empty(0, dtype=F64)
    assert ember.linalg.cross(ember.tensor(a), ember.tensor(b), dim=dim, out=out) is out
    close(out, np.cross(a, b, axis=dim))


def test_linalg_cross_integers_and_default_dim():
    a, b = arr(2, 3, dtype=np.int64), arr(2, 3, dtype=np.int64)
    got = ember.linalg.cross(ember.tensor(a), ember.tensor(b))
    assert got.dtype == ember.int64
    np.testing.assert_array_equal(got.numpy(), np.cross(a, b))


def test_cross_without_dim_takes_the_first_dim_of_size_3_and_warns():
    a, b = arr(3, 3, 2), arr(3, 3, 2)
    with pytest.warns(UserWarning, match="Using torch.cross without specifying the dim arg is deprecated"):
        got = ember.cross(ember.tensor(a), ember.tensor(b))
    close(got, np.cross(a, b, axis=0))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ember.cross(ember.tensor(a), ember.tensor(b), dim=1)  # an explicit dim does not warn
    with pytest.raises(RuntimeError, match="no dimension of size 3 in input"):
        ember.cross(ember.randn(4, 5), ember.randn(4, 5))


def test_cross_errors():
    with pytest.raises(RuntimeError, match="linalg.cross: inputs dimension -1 must have length 3. Got 5 and 5"):
        ember.linalg.cross(ember.randn(4, 5), ember.randn(4, 5))
    with pytest.raises(RuntimeError, match="linalg.cross: inputs must have the same number of dimensions."):
        ember.linalg.cross(ember.randn(2, 1, 3), ember.randn(4, 3))
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Double"):
        ember.linalg.cross(ember.randn(4, 3), ember.randn(4, 3, dtype=F64))
    with pytest.raises(IndexError, match="Dimension out of range"):
        ember.linalg.cross(ember.randn(4, 3), ember.randn(4, 3), dim=2)


def test_cross_gradients():
    a, b = t64(2, 3), t64(1, 3)
    check_grads(lambda a, b: ember.linalg.cross(a, b), a, b)
    check_grads(lambda a, b: ember.cross(a.t(), b.t().expand(3, 2), dim=0), a, b)
    check_jvp(lambda a, b: ember.linalg.cross(a, b), a, b)
    check_jvp(lambda a, b: ember.cross(a, b, 1), a, b)


# ---------------------------------------------------------------- cdist, cosine_similarity, pairwise_distance, F.normalize

def np_cdist(a, b, p):
    d = np.abs(a[..., :, None, :] - b[..., None, :, :])
    if p == 0:
        return (d != 0).sum(-1).astype(np.float64)
    if math.isinf(p):
        return d.max(-1)
    return (d ** p).sum(-1) ** (1 / p)


@pytest.mark.parametrize("rows", [(3, 5), (25, 25), (26, 4), (4, 26), (40, 33)])
@pytest.mark.parametrize("mode", ["use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist",
                                  "donot_use_mm_for_euclid_dist"])
def test_cdist_euclidean_around_the_mm_threshold(rows, mode):
    a, b = arr(rows[0], 6), arr(rows[1], 6)
    got = ember.cdist(ember.tensor(a), ember.tensor(b), compute_mode=mode)
    close(got, np_cdist(a, b, 2), rtol=1e-7, atol=1e-7)
    if torch is not None:
        expected = torch.cdist(torch.tensor(a, dtype=torch.float32), torch.tensor(b, dtype=torch.float32),
                               compute_mode=mode)
        close(ember.cdist(ember.tensor(a).float(), ember.tensor(b).float(), compute_mode=mode), expected.numpy(),
              rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("p", [0, 1, 1.5, 3, math.inf])
def test_cdist_other_norms_and_batches(p):
    a, b = arr(2, 1, 4, 3), arr(5, 6, 3)
    got = ember.cdist(ember.tensor(a), ember.tensor(b), p=p)
    assert tuple(got.shape) == (2, 5, 4, 6)
    close(got, np_cdist(a, b, p))


def test_cdist_errors():
    with pytest.raises(RuntimeError, match="X1 and X2 must have the same number of columns. X1: 4 X2: 3"):
        ember.cdist(ember.randn(3, 4), ember.randn(5, 3))
    with pytest.raises(RuntimeError, match="cdist only supports at least 2D tensors, X1 got: 1D"):
        ember.cdist(ember.randn(4), ember.randn(5, 4))
    with pytest.raises(RuntimeError, match="cdist only supports non-negative p values"):
        ember.cdist(ember.randn(3, 4), ember.randn(5, 4), p=-1)
    with pytest.raises(ValueError, match="x is not a valid value for compute_mode"):
        ember.cdist(ember.randn(3, 4), ember.randn(5, 4), compute_mode="x")
    with pytest.raises(RuntimeError, match="cdist only supports floating-point dtypes, X1 got: Long"):
        ember.cdist(ember.ones(2, 2, dtype=ember.int64), ember.randn(5, 2))


def test_cdist_gradients():
    a, b = t64(3, 4), t64(2, 4)
    for mode in ("use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist"):
        check_grads(lambda a, b: ember.cdist(a, b, compute_mode=mode), a, b)
        check_jvp(lambda a, b: ember.cdist(a, b, compute_mode=mode), a, b)
    check_grads(lambda a, b: ember.cdist(a, b, p=3), a, b)


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
@pytest.mark.parametrize("sa,sb,dim", [((3, 4), (4,), 1), ((2, 3, 4), (2, 1, 4), -1), ((5,), (5,), 0), ((0, 3), (1, 3), 1)])
def test_cosine_similarity_and_pairwise_distance_broadcast_as_torch(sa, sb, dim):
    a, b = arr(*sa), arr(*sb)
    close(ember.cosine_similarity(ember.tensor(a), ember.tensor(b), dim=dim),
          torch.cosine_similarity(torch.tensor(a), torch.tensor(b), dim=dim).numpy())
    close(ember.nn.functional.cosine_similarity(ember.tensor(a), ember.tensor(b), dim, 0.5),
          torch.nn.functional.cosine_similarity(torch.tensor(a), torch.tensor(b), dim, 0.5).numpy())
    for p, keepdim in [(2, False), (1, True), (3.5, False)]:
        close(ember.nn.functional.pairwise_distance(ember.tensor(a), ember.tensor(b), p, 1e-3, keepdim),
              torch.nn.functional.pairwise_distance(torch.tensor(a), torch.tensor(b), p, 1e-3, keepdim).numpy())


def test_cosine_similarity_promotes_and_refuses_integers():
    got = ember.cosine_similarity(ember.randn(3, 4), ember.randn(3, 4, dtype=F64))
    assert got.dtype == F64
    with pytest.raises(RuntimeError, match="expected common dtype to be floating point, yet common dtype is Long"):
        ember.cosine_similarity(ember.arange(4), ember.arange(4), dim=0)


def test_distance_gradients_with_broadcasting():
    a, b = t64(3, 4), t64(4)
    check_grads(lambda a, b: ember.cosine_similarity(a, b), a, b)
    check_grads(lambda a, b: ember.pairwise_distance(a, b, 3.0), a, b)
    check_jvp(lambda a, b: ember.cosine_similarity(a, b), a, b)
    check_jvp(lambda a, b: ember.pairwise_distance(a, b), a, b)


@pytest.mark.parametrize("p,dim", [(2.0, 1), (1.0, 0), (3.0, -1), (math.inf, 1)])
def test_normalize(p, dim):
    x = arr(3, 4)
    x[1] = 0  # a zero row is divided by eps, not by 0
    got = ember.nn.functional.normalize(ember.tensor(x), p=p, dim=dim)
    norm = np.max(np.abs(x), axis=dim, keepdims=True) if math.isinf(p) else \
        np.sum(np.abs(x) ** p, axis=dim, keepdims=True) ** (1 / p)
    close(got, x / np.maximum(norm, 1e-12))
    out = ember.empty(3, 4, dtype=F64)
    assert ember.nn.functional.normalize(ember.tensor(x), p, dim, out=out) is out
    close(out, x / np.maximum(norm, 1e-12))
    if torch is not None:
        close(got, torch.nn.functional.normalize(torch.tensor(x), p=p, dim=dim).numpy())


def test_normalize_gradients():
    x = t64(3, 4)
    check_grads(lambda x: ember.nn.functional.normalize(x), x)
    check_grads(lambda x: ember.nn.functional.normalize(x, p=3, dim=0), x)
    check_jvp(lambda x: ember.nn.functional.normalize(x, dim=-1), x)


# ---------------------------------------------------------------- tensordot, einsum, cartesian_prod

@pytest.mark.parametrize("sa,sb,dims,np_axes", [
    ((3, 4, 5), (4, 5, 2), 2, 2), ((3, 4), (4, 2), 1, 1), ((3, 4), (2, 5), 0, 0),
    ((3, 2, 5), (2, 4, 3), ([1, 0], [0, 2]), ([1, 0], [0, 2])), ((3, 4), (4, 3), ([0, 1], [1, 0]), ([0, 1], [1, 0])),
    ((2, 3), (3, 4), [[1], [0]], ([1], [0]))])
def test_tensordot_matches_numpy(sa, sb, dims, np_axes):
    a, b = arr(*sa), arr(*sb)
    expected = np.tensordot(a, b, axes=np_axes)
    close(ember.tensordot(ember.tensor(a), ember.tensor(b), dims=dims), expected)
    close(ember.tensordot(ember.tensor(a), ember.tensor(b), ember.tensor(dims)), expected)
    out = ember.empty(0, dtype=F64)
    assert ember.tensordot(ember.tensor(a), ember.tensor(b), dims, out=out) is out
    close(out, expected)


def test_tensordot_broadcasts_size_one_contracted_dims_and_errors():
    a, b = arr(3, 1), arr(4, 2)
    close(ember.tensordot(ember.tensor(a), ember.tensor(b), ([1], [0])), a.sum(1)[:, None] * b.sum(0)[None, :])
    with pytest.raises(RuntimeError, match="contracted dimensions need to match, but first has size 3 in dim 1 and "
                                           "second has size 4 in dim 0"):
        ember.tensordot(ember.randn(2, 3), ember.randn(4, 3), dims=([1], [0]))
    with pytest.raises(RuntimeError, match="both dimension lists should have same length"):
        ember.tensordot(ember.randn(2, 3), ember.randn(4, 3), dims=([1], [0, 1]))
    with pytest.raises(RuntimeError, match="tensordot expects dims >= 0, but got dims=-1"):
        ember.tensordot(ember.randn(2, 3), ember.randn(3, 4), dims=-1)
    with pytest.raises(RuntimeError, match="both inputs should have same dtype"):
        ember.tensordot(ember.randn(2, 3), ember.randn(3, 4, dtype=F64), dims=1)


def test_tensordot_gradients():
    a, b = t64(3, 2, 4), t64(2, 4, 3)
    check_grads(lambda a, b: ember.tensordot(a, b, dims=([2, 1], [1, 0])), a, b)
    check_jvp(lambda a, b: ember.tensordot(a, b, dims=([2, 1], [1, 0])), a, b)


EINSUMS = [
    ("ij,jk->ik", [(2, 3), (3, 4)]), ("ij,jk", [(2, 3), (3, 4)]), ("ii->i", [(3, 3)]), ("ii", [(3, 3)]),
    ("iji->j", [(3, 2, 3)]), ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]),
    ("bhqd,bhkd->bhqk", [(2, 3, 4, 5), (2, 3, 6, 5)]), ("i,j->ij", [(3,), (4,)]), ("i,i->", [(3,), (3,)]),
    ("i,i", [(3,), (1,)]), ("abc,cd,de->ae", [(2, 3, 4), (4, 5), (5, 6)]), ("a...->...", [(2, 3, 4)]),
    ("ba", [(2, 3)]), ("bA", [(2, 3)]), ("i...->", [(2, 3)]), ("...", [(2, 3)]), ("", [()]),
    (" i j , j k -> i k ", [(2, 3), (3, 4)]), ("ab,ab,ab->a", [(2, 3), (2, 3), (2, 3)]),
    ("ij,ij->ij", [(2, 1), (1, 3)]), ("iij->", [(2, 2, 3)]), ("bij,bjk->", [(2, 3, 4), (2, 4, 5)]),
    ("ij->ji", [(2, 3)]), ("b...,b->...b", [(2, 3, 4), (2,)]), ("ik,jk->ij", [(0, 3), (2, 3)]),
    # products without a contracted label (PyTorch's mul), broadcasting against a later operand
    ("i,j,ij->ij", [(3,), (1,), (3, 4)]), ("ij,ij->ji", [(2, 3), (2, 3)]), ("i,j->", [(3,), (4,)]),
    ("ij,i->i", [(2, 3), (2,)]), ("ijk->kj", [(2, 3, 4)]), ("bi,bj,bk->bijk", [(2, 3), (2, 2), (2, 4)]),
]


@pytest.mark.parametrize("equation,shapes", EINSUMS)
def test_einsum_matches_numpy(equation, shapes):
    ops = [arr(*s) for s in shapes]
    # NumPy's einsum neither sums an ellipsis left out of the output nor takes "ii" as a trace.
    special = {"ii": np.trace, "i...->": np.sum}
    expected = special[equation](*ops) if equation in special else np.einsum(equation.replace(" ", ""), *ops)
    got = ember.einsum(equation, *[ember.tensor(o) for o in ops])
    assert tuple(got.shape) == np.shape(expected)
    close(got, expected)
    close(ember.einsum(equation, [ember.tensor(o) for o in ops]), expected)
    if torch is not None:
        close(got, torch.einsum(equation, *[torch.tensor(o) for o in ops]).numpy())


def test_einsum_sublist_form_integers_and_a_large_contraction():
    a, b = arr(2, 3), arr(3, 4)
    close(ember.einsum(ember.tensor(a), [0, 1], ember.tensor(b), [1, 2], [0, 2]), a @ b)
    close(ember.einsum(ember.tensor(a), [Ellipsis, 1], ember.tensor(b), [1, 27]), a @ b)
    i = arr(3, 4, dtype=np.int64)
    got = ember.einsum("ij,ij->i", ember.tensor(i), ember.tensor(i))
    assert got.dtype == ember.int64
    np.testing.assert_array_equal(got.numpy(), (i * i).sum(1))
    q, k = arr(2, 4, 96, 64, dtype=np.float32), arr(2, 4, 80, 64, dtype=np.float32)
    close(ember.einsum("bhqd,bhkd->bhqk", ember.tensor(q), ember.tensor(k)),
          np.einsum("bhqd,bhkd->bhqk", q.astype(np.float64), k), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("equation,shapes,message", [
    ("ij,jk", [(2, 3)], "einsum(): fewer operands were provided than specified in the equation"),
    ("ij", [(2, 3), (3, 4)], "einsum(): more operands were provided than specified in the equation"),
    ("ij,jk", [(2, 3), (4, 5)],
     "einsum(): subscript j has size 4 for operand 1 which does not broadcast with previously seen size 3"),
    ("ijk", [(2, 3)], "einsum(): the number of subscripts in the equation (3) does not match the number of "
                      "dimensions (2) for operand 0 and no ellipsis was given"),
    ("ijk...", [(2, 3)], "einsum(): the number of subscripts in the equation (3) is more than the number of "
                         "dimensions (2) for operand 0"),
    ("ij->k", [(2, 3)], "einsum(): output subscript k does not appear in the equation for any input operand"),
    ("ij->ii", [(2, 3)], "einsum(): output subscript i appears more than once in the output"),
    ("i1", [(2, 3)], "einsum(): invalid subscript given at index 1 in the equation string, subscripts must be in [a-zA-Z]"),
    ("ii", [(2, 3)], "einsum(): subscript i is repeated for operand 0 but the sizes don't match, 3 != 2"),
    ("i..j.", [(2, 3)], "einsum(): found '.' for operand 0 that is not part of any ellipsis"),
])
def test_einsum_errors_as_torch(equation, shapes, message):
    with pytest.raises(RuntimeError) as e:
        ember.einsum(equation, *[ember.randn(*s) for s in shapes])
    assert str(e.value).startswith(message)
    if torch is not None:
        with pytest.raises(RuntimeError) as te:
            torch.einsum(equation, *[torch.randn(*s) for s in shapes])
        assert str(te.value).startswith(message)


def test_einsum_dtype_mismatch():
    with pytest.raises(RuntimeError, match="expected scalar type Long but found Float"):
        ember.einsum("ij,jk", ember.ones(2, 3, dtype=ember.int64), ember.randn(3, 4))


@pytest.mark.parametrize("equation,shapes", [("ij,jk->ik", [(2, 3), (3, 4)]), ("ii->i", [(3, 3)]),
                                             ("...ij,...jk", [(2, 1, 3, 2), (3, 2, 2)]), ("abc,cd,de->ae", [(2, 2, 3), (3, 2), (2, 2)]),
                                             ("ij,ij->", [(2, 3), (1, 3)]), ("i,j,ij->ji", [(3,), (1,), (3, 2)]),
                                             ("ijk->kj", [(2, 3, 2)]), ("ij,ij->ij", [(2, 3), (2, 3)])])
def test_einsum_gradients(equation, shapes):
    inputs = [t64(*s) for s in shapes]
    check_grads(lambda *ops: ember.einsum(equation, *ops), *inputs)
    check_jvp(lambda *ops: ember.einsum(equation, *ops), *inputs)


def test_cartesian_prod():
    a, b, c = arr(2), arr(3), arr(2)
    got = ember.cartesian_prod(ember.tensor(a), ember.tensor(b), ember.tensor(c))
    np.testing.assert_array_equal(got.numpy(), np.array(list(itertools.product(a, b, c))))
    close(ember.cartesian_prod(ember.tensor(a)), a)
    assert tuple(ember.cartesian_prod(ember.tensor(a), ember.zeros(0, dtype=F64)).shape) == (0, 2)
    with pytest.raises(RuntimeError, match=r"Expect a 1D vector, but got shape \[3, 1\]"):
        ember.cartesian_prod(ember.randn(2), ember.randn(3, 1))
    with pytest.raises(RuntimeError, match="meshgrid expects all tensors to have the same dtype"):
        ember.cartesian_prod(ember.randn(2), ember.randn(3, dtype=F64))
    with pytest.raises(RuntimeError, match="meshgrid expects a non-empty TensorList"):
        ember.cartesian_prod()
    x, y = t64(2), t64(3)
    check_grads(lambda x, y: ember.cartesian_prod(x, y), x, y)
    check_jvp(lambda x, y: ember.cartesian_prod(x, y), x, y)


# ---------------------------------------------------------------- norms

@pytest.mark.parametrize("ord", [1, -1, math.inf, -math.inf, "fro"])
@pytest.mark.parametrize("shape,dim", [((3, 4), (-2, -1)), ((2, 3, 4), (2, 0)), ((4, 3), (1, 0))])
@pytest.mark.parametrize("keepdim", [False, True])
def test_matrix_norm_matches_numpy(ord, shape, dim, keepdim):
    x = arr(*shape)
    expected = np.linalg.norm(x, ord=ord, axis=dim, keepdims=keepdim)
    close(ember.linalg.matrix_norm(ember.tensor(x), ord, dim, keepdim), expected)
    close(ember.linalg.norm(ember.tensor(x), ord, dim, keepdim), expected)
    out = ember.empty(0, dtype=F64)
    assert ember.linalg.matrix_norm(ember.tensor(x), ord, dim, keepdim, out=out) is out
    close(out, expected)


def test_matrix_norm_default_dtype_and_empty():
    x = arr(2, 3, 4)
    close(ember.linalg.matrix_norm(ember.tensor(x)), np.linalg.norm(x, "fro", axis=(-2, -1)))
    got = ember.linalg.matrix_norm(ember.tensor(x).float(), 1, dtype=F64)
    assert got.dtype == F64
    for o in (1, math.inf):
        assert ember.linalg.matrix_norm(ember.zeros(0, 3), o).item() == 0
        assert ember.linalg.matrix_norm(ember.zeros(3, 0), o).item() == 0


@pytest.mark.parametrize("ord,dim", [(None, None), (None, 1), (None, (0, 1)), (3, None), (3, 0), (1, None),
                                     (math.inf, None), ("fro", None), ("fro", (1, 0)), (0.5, 1)])
def test_linalg_norm_matches_numpy(ord, dim):
    for x in (arr(5), arr(3, 4)):
        if x.ndim == 1 and (ord == "fro" or (isinstance(dim, tuple)) or dim == 1):
            continue
        if x.ndim == 2 and dim is None and ord in (3, 0.5):
            with pytest.raises(RuntimeError, match=f"linalg.matrix_norm: Order {ord} not supported."):
                ember.linalg.norm(ember.tensor(x), ord, dim)
            continue
        expected = np.linalg.norm(x, ord=ord, axis=dim)
        close(ember.linalg.norm(ember.tensor(x), ord, dim), expected)
        if torch is not None:
            close(ember.linalg.norm(ember.tensor(x), ord, dim), torch.linalg.norm(torch.tensor(x), ord, dim).numpy())


def test_tensor_norm_forms():
    x = arr(2, 3, 4)
    t = ember.tensor(x)
    close(t.norm(), np.sqrt((x ** 2).sum()))
    close(ember.norm(t, "fro", dim=(0, 1)), np.sqrt((x ** 2).sum((0, 1))))
    close(t.norm(p=1, dim=2, keepdim=True), np.abs(x).sum(2, keepdims=True))
    close(t.norm(math.inf, [0, 2]), np.abs(x).max((0, 2)))
    assert t.float().norm(dtype=F64).dtype == F64


def test_norm_errors():  # ord 'nuc', 2 and -2: tests/test_lapack2.py
    x = ember.randn(3, 3)
    with pytest.raises(RuntimeError, match="linalg.matrix_norm: Order 3 not supported."):
        ember.linalg.matrix_norm(x, 3)
    with pytest.raises(RuntimeError, match="linalg.matrix_norm: Order abc not supported."):
        ember.linalg.matrix_norm(x, "abc")
    with pytest.raises(RuntimeError, match="linalg.matrix_norm: The input tensor A must have at least 2 dimensions."):
        ember.linalg.matrix_norm(ember.randn(3), 1)
    with pytest.raises(RuntimeError, match=r"linalg.matrix_norm: dims must be different. Got \(0, 0\)"):
        ember.linalg.matrix_norm(x, 1, dim=(0, 0))
    with pytest.raises(RuntimeError, match="linalg.matrix_norm: dim must be a 2-tuple. Got"):
        ember.linalg.matrix_norm(x, 1, dim=(0,))
    with pytest.raises(RuntimeError, match="linalg.matrix_norm: Expected a floating point or complex tensor as input. Got Long"):
        ember.linalg.matrix_norm(ember.ones(3, 3, dtype=ember.int64), 1)
    with pytest.raises(RuntimeError, match="linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got 3D."):
        ember.linalg.norm(ember.randn(2, 3, 4), 2)
    with pytest.raises(RuntimeError, match=r"linalg.norm: If dim is specified, it must be of length 1 or 2. Got \[0, 1, 2\]"):
        ember.linalg.norm(ember.randn(2, 3, 4), 2, dim=(0, 1, 2))


def test_norm_gradients():
    x = t64(3, 4)
    for ord in (1, -1, math.inf, -math.inf):
        check_grads(lambda x: ember.linalg.matrix_norm(x, ord), x)
        check_jvp(lambda x: ember.linalg.matrix_norm(x, ord), x)
    check_grads(lambda x: ember.linalg.matrix_norm(x, "fro", dim=(1, 0), keepdim=True), x)
    check_grads(lambda x: ember.linalg.norm(x), x)
    check_grads(lambda x: ember.linalg.norm(x, 3, 1), x)
    check_grads(lambda x: ember.linalg.norm(x, "fro"), x)
    check_jvp(lambda x: ember.linalg.norm(x, "fro"), x)
    check_jvp(lambda x: ember.linalg.norm(x, 1, 0), x)


# ---------------------------------------------------------------- for the coverage lists of other files

def _t(*shape):
    return lambda: t64(*shape)


# op -> [(function, inputs, gradcheck options)]: tests/test_higher_order.py gradgradchecks these.
GRADGRAD_CASES = {
    "addmm": [(lambda c, a, b: ember.addmm(c, a, b, beta=0.5, alpha=2), lambda: (t64(4), t64(2, 3), t64(3, 4)), {})],
    "_addmm_blas": [(lambda c, a, b: ember._addmm_blas(c, a, b, 0.5, -2), lambda: (t64(4), t64(2, 3), t64(3, 4)), {})],
    "addmv": [(lambda c, a, b: ember.addmv(c, a, b, alpha=-1), lambda: (t64(2), t64(2, 3), t64(3)), {})],
    "addbmm": [(lambda c, a, b: ember.addbmm(c, a, b, beta=2), lambda: (t64(2, 4), t64(3, 2, 3), t64(3, 3, 4)), {})],
    "baddbmm": [(lambda c, a, b: ember.baddbmm(c, a, b), lambda: (t64(2, 4), t64(3, 2, 3), t64(3, 3, 4)), {})],
    "linalg_cross": [(lambda a, b: ember.linalg.cross(a, b), lambda: (t64(2, 3), t64(1, 3)), {})],
    "cross": [(lambda a, b: ember.cross(a, b, 0), lambda: (t64(3, 2), t64(3, 2)), {})],
    "cdist": [(lambda a, b: ember.cdist(a, b, compute_mode="use_mm_for_euclid_dist"), lambda: (t64(3, 4), t64(2, 4)), {}),
              (lambda a, b: ember.cdist(a, b, p=3), lambda: (t64(3, 4), t64(2, 4)), {})],
    "tensordot": [(lambda a, b: ember.tensordot(a, b, 1), lambda: (t64(2, 3), t64(3, 2)), {})],
    "einsum": [(lambda a, b: ember.einsum("bij,bjk->bk", a, b), lambda: (t64(2, 2, 3), t64(2, 3, 2)), {})],
    "cartesian_prod": [(lambda a, b: ember.cartesian_prod(a * a, b), lambda: (t64(2), t64(3)), {})],
    "linalg_norm": [(lambda a: ember.linalg.norm(a, math.inf), lambda: (t64(3, 4),), {})],
    "linalg_norm.ord_str": [(lambda a: ember.linalg.norm(a, "fro"), lambda: (t64(3, 4),), {})],
    "linalg_matrix_norm": [(lambda a: ember.linalg.matrix_norm(a, -1, dim=(1, 0)), lambda: (t64(2, 3, 4),), {})],
    "linalg_matrix_norm.str_ord": [(lambda a: ember.linalg.matrix_norm(a, keepdim=True), lambda: (t64(2, 3, 4),), {})],
}
# Ops whose JVPs (check_jvp above) and in-place gradients are checked in this file.
OWN_JVP_CHECKS = set(GRADGRAD_CASES)
OWN_INPLACE_CHECKS = {"addmm", "addmv", "addbmm", "baddbmm"}


def _graph_names(t):
    names, stack = set(), [t.grad_fn]
    while stack:
        f = stack.pop()
        if f is not None:
            names.add(f.name())
            stack.extend(g for g, _ in f.next_functions)
    return names


def test_einsum_contracts_through_one_product_without_sums():
    # The contracted label goes into the product, not into a batch dim summed afterwards.
    q, k = ember.randn(2, 3, 4, 5, requires_grad=True), ember.randn(2, 3, 6, 5, requires_grad=True)
    names = _graph_names(ember.einsum("bhqd,bhkd->bhqk", q, k))
    assert "BmmBackward0" in names and not any(n.startswith("Sum") for n in names)
    names = _graph_names(ember.einsum("ij,jk->ik", ember.randn(2, 3, requires_grad=True), ember.randn(3, 4)))
    assert "MmBackward0" in names and not any(n.startswith("Sum") for n in names)


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
def test_fused_addmm_kernel_matches_the_composite_path(threads, dtype):
    """addmm is one gemm (_addmm_blas) with or without autograd; it agrees with NumPy and with mm then add
    (the composite path, as under forward AD) on every layout, around the parallel gemm's threshold, with
    broadcast selves and k = 0."""
    before = ember.get_num_threads()
    ember.set_num_threads(threads)
    try:
        for (m, k, n), self_shape in [((3, 4, 5), (5,)), ((70, 90, 130), (70, 130)), ((130, 64, 33), (130, 1)),
                                      ((8, 0, 5), (8, 5)), ((0, 3, 4), (4,)), ((200, 150, 40), ())]:
            c = ember.tensor(arr(*self_shape)).to(dtype)
            for a, b in [(ember.tensor(arr(m, k)), ember.tensor(arr(k, n))),
                         (ember.tensor(arr(k, m)).t(), ember.tensor(arr(n, k)).t()),
                         (ember.tensor(arr(m, 2 * k))[:, ::2], ember.tensor(arr(k, n)))]:
                a, b = a.to(dtype), b.to(dtype)
                fused = ember._addmm_blas(c, a, b, 0.5, -2)
                got = ember.addmm(c, a, b, beta=0.5, alpha=-2)
                trained = ember.addmm(c.requires_grad_(), a, b, beta=0.5, alpha=-2)
                assert trained.grad_fn.name() == "AddmmBackward0"
                c = c.detach()
                composite = c * 0.5 + (a @ b) * -2
                reference = np_addmm(c.double().numpy(), a.double().numpy(), b.double().numpy(), 0.5, -2)
                assert tuple(fused.shape) == (m, n) and fused.dtype == dtype
                tol = 1e-4 if dtype == ember.float32 else 1e-10
                for result in (fused, got, trained.detach(), composite):
                    close(result, reference, rtol=tol, atol=tol)
    finally:
        ember.set_num_threads(before)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fused_addmm_gradients_in_training(threads, dtype):
    """A Linear in training runs _addmm_blas: gradients of the broadcast bias, the input and the transposed
    weight (laid out as the weight) against NumPy and torch, at a GPT layer's size and around the threshold."""
    rng = np.random.default_rng(9)
    limit = ember._C._thresholds()["parallel_gemm_work"]
    sizes = [(2048, 256, 1024), (60, 70, 60), (64, 64, 65), (3, 5, 2)]
    assert 60 * 70 * 60 < limit < 64 * 64 * 65  # either side of the split over threads
    for m, k, n in sizes:
        x, w, bias, g = (rng.standard_normal(s).astype(dtype) for s in ((m, k), (n, k), (n,), (m, n)))
        args = [ember.from_numpy(t).requires_grad_() for t in (x, w, bias)]
        out = ember.nn.functional.linear(*args)
        assert out.grad_fn.name() == "AddmmBackward0"
        out.backward(ember.from_numpy(g))
        tol = 2e-4 if dtype == np.float32 else 1e-10
        x64, w64, g64 = x.astype(np.float64), w.astype(np.float64), g.astype(np.float64)
        close(out.detach(), x64 @ w64.T + bias, rtol=tol, atol=tol)
        for got, ref in zip(args, (g64 @ w64, g64.T @ x64, g64.sum(0))):
            close(got.grad, ref, rtol=tol, atol=tol * 10)
        assert args[1].grad.is_contiguous()
        try:
            import torch
        except ImportError:
            continue
        targs = [torch.from_numpy(t).requires_grad_() for t in (x, w, bias)]
        torch.nn.functional.linear(*targs).backward(torch.from_numpy(g))
        for got, ref in zip(args, targs):
            close(got.grad, ref.grad.numpy(), rtol=tol, atol=tol * 10)


def test_fused_addmm_gradcheck_gradgradcheck_and_jvp():
    c, a, b = t64(5), t64(4, 3), t64(5, 3)
    assert gradcheck(lambda c, a, b: ember.addmm(c, a, b.t(), beta=0.5, alpha=-2), (c, a, b))
    assert gradgradcheck(lambda c, a, b: ember.addmm(c, a, b.t(), beta=0.5, alpha=-2), (c, a, b))
    tangents = [ember.randn(*t.shape, dtype=ember.float64) for t in (c, a, b)]
    with fwAD.dual_level():
        duals = [fwAD.make_dual(t.detach(), d) for t, d in zip((c, a, b), tangents)]
        got = fwAD.unpack_dual(ember._addmm_blas(duals[0], duals[1], duals[2].t(), 0.5, -2)).tangent
    expected = 0.5 * tangents[0] - 2 * (tangents[1] @ b.detach().t() + a.detach() @ tangents[2].t())
    close(got, expected.numpy(), rtol=1e-12, atol=1e-12)


def test_fused_addmm_kernel_checks_and_cuda_slot():
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 2x4\)"):
        ember._addmm_blas(ember.randn(4), ember.randn(2, 3), ember.randn(2, 4), 1, 1)
    with pytest.raises(NotImplementedError, match="\"_addmm_blas\" not implemented for 'Long'"):
        ember._addmm_blas(ember.ones(4, dtype=ember.int64), ember.ones(2, 3, dtype=ember.int64),
                          ember.ones(3, 4, dtype=ember.int64), 1, 1)
    if ember.cuda.is_available():
        with pytest.raises(NotImplementedError, match="_addmm_blas: no kernel for device cuda"):
            ember._addmm_blas(ember.ones(4).cuda(), ember.ones(2, 3).cuda(), ember.ones(3, 4).cuda(), 1, 1)


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("batch", [6, 5, 1])
def test_large_batched_products_split_by_batch_or_by_product(threads, batch):
    # 256 x 128 x 160 is above the small-product threshold: a batch that splits evenly over
    # the threads runs whole products per thread, another splits each product.
    assert 256 * 128 * 160 > ember._C._thresholds()["small_batched_product"]
    a, b = arr(batch, 256, 160), arr(batch, 128, 160)
    before = ember.get_num_threads()
    ember.set_num_threads(threads)
    try:
        got = ember.einsum("bqd,bkd->bqk", ember.tensor(a), ember.tensor(b))
        got_f = ember.bmm(ember.tensor(a).float(), ember.tensor(b).float().transpose(1, 2))
    finally:
        ember.set_num_threads(before)
    expected = a @ b.transpose(0, 2, 1)
    close(got, expected, rtol=1e-10, atol=1e-10)
    close(got_f, expected, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("n, k, m", [(5, 4, 8), (1, 3, 1), (7, 1, 6), (64, 33, 17)])
def test_linear_weight_gradient_is_row_major(n, k, m):
    # mm's gradient for a transposed mat2 (x @ w.t(), nn.Linear) is built transposed, so w.grad
    # comes out row-major with no copy, and equal to the plain formula.
    x = ember.randn(n, k, dtype=ember.float64, requires_grad=True)
    w = ember.randn(m, k, dtype=ember.float64, requires_grad=True)
    (x @ w.t()).pow(2).sum().backward()
    g = 2 * (x.detach().numpy() @ w.detach().numpy().T)
    np.testing.assert_allclose(w.grad.numpy(), g.T @ x.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), g @ w.detach().numpy(), rtol=1e-12)
    assert w.grad.is_contiguous()
