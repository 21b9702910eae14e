"""linalg.lu_factor / lu_factor_ex, lu_unpack, linalg.lu_solve, linalg.solve_triangular and geqrf (issue 12):
values against SciPy and NumPy (batched, non-contiguous, wide and tall), float32/float64, the out= tuples,
PyTorch's errors, float64 gradients (gradcheck, gradgradcheck, forward AD) and, when installed, torch's."""
import pickle

import numpy as np
import pytest

import ember
from ember.autograd import forward_ad, gradcheck, gradgradcheck

scipy_linalg = pytest.importorskip("scipy.linalg")
try:
    import torch
except ImportError:  # the torch comparisons are skipped without it
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="needs PyTorch")
RNG = np.random.default_rng(5)
TOL = {np.float32: dict(rtol=2e-4, atol=2e-5), np.float64: dict(rtol=1e-10, atol=1e-12)}


def matrices(shape, dtype=np.float64):
    return RNG.standard_normal(shape).astype(dtype)


def noncontig(a):
    """The same values as `a` in a transposed (non-contiguous) ember tensor."""
    t = ember.tensor(np.ascontiguousarray(np.swapaxes(a, -1, -2))).transpose(-2, -1)
    assert not t.is_contiguous() or min(a.shape[-2:]) == 1
    return t


def scipy_lu(a):
    """scipy's LU and 1-based int32 pivots per matrix of a batch (any m, n)."""
    flat = a.reshape(-1, *a.shape[-2:])
    lus, pivs = zip(*(scipy_linalg.lu_factor(m) for m in flat)) if len(flat) else ((), ())
    k = min(a.shape[-2:])
    lu = np.array(lus, dtype=a.dtype).reshape(a.shape)
    piv = (np.array(pivs).reshape(*a.shape[:-2], k) + 1).astype(np.int32)
    return lu, piv


# ---------------------------------------------------------------- lu_factor
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(4, 4), (3, 5, 5), (2, 2, 3, 3), (1, 1), (6, 4), (4, 6), (2, 5, 3), (2, 3, 5)])
def test_lu_factor_matches_scipy(shape, dtype, threads):
    a = matrices(shape, dtype)
    lu, piv = scipy_lu(a)
    for x in (ember.tensor(a), noncontig(a)):
        LU, pivots = ember.linalg.lu_factor(x)
        assert LU.dtype == x.dtype and pivots.dtype == ember.int32 and tuple(pivots.shape) == piv.shape
        np.testing.assert_array_equal(pivots.numpy(), piv)
        np.testing.assert_allclose(LU.numpy(), lu, **TOL[dtype])
        ex = ember.linalg.lu_factor_ex(x)
        assert type(ex).__name__ == "linalg_lu_factor_ex" and ex.info.dtype == ember.int32
        assert tuple(ex.info.shape) == shape[:-2] and not ex.info.numpy().any()
        np.testing.assert_array_equal(ex.LU.numpy(), LU.numpy())


def test_lu_unpack_rebuilds_the_matrix():
    for shape in [(5, 5), (2, 4, 6), (3, 6, 4)]:
        a = matrices(shape)
        P, L, U = ember.lu_unpack(*ember.linalg.lu_factor(ember.tensor(a)))
        np.testing.assert_allclose((P @ L @ U).numpy(), a, rtol=1e-12, atol=1e-12)
        k = min(shape[-2:])
        assert tuple(L.shape) == shape[:-1] + (k,) and tuple(U.shape) == shape[:-2] + (k, shape[-1])
        for m, p, l, u in zip(a.reshape(-1, *shape[-2:]), P.numpy().reshape(-1, shape[-2], shape[-2]),
                              L.numpy().reshape(-1, shape[-2], k), U.numpy().reshape(-1, k, shape[-1])):
            sp, sl, su = scipy_linalg.lu(m)
            np.testing.assert_allclose(p, sp, atol=0)
            np.testing.assert_allclose(l, sl, rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(u, su, rtol=1e-12, atol=1e-12)
    LU, piv = ember.linalg.lu_factor(ember.tensor(matrices((3, 3))))
    P, L, U = ember.lu_unpack(LU, piv, unpack_data=False)
    assert tuple(L.shape) == (0,) and tuple(U.shape) == (0,) and tuple(P.shape) == (3, 3)
    P, L, U = ember.lu_unpack(LU, piv, unpack_pivots=False)
    assert tuple(P.shape) == (0,) and tuple(L.shape) == (3, 3)


def test_lu_factor_singular_and_errors():
    zeros = ember.zeros(2, 3, 3)
    LU, pivots, info = ember.linalg.lu_factor_ex(zeros)
    assert info.tolist() == [1, 1] and pivots.tolist() == [[1, 2, 3]] * 2
    message = ("U[1,1] is zero and using it on lu_solve would result in a division by zero. If you still want to "
               "perform the factorization, consider calling linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)")
    with pytest.raises(RuntimeError) as e:
        ember.linalg.lu_factor(zeros)
    assert str(e.value) == "torch.linalg.lu_factor: (Batch element 0): " + message
    with pytest.raises(RuntimeError) as e:
        ember.linalg.lu_factor_ex(ember.zeros(3, 3), check_errors=True)
    assert str(e.value) == "torch.linalg.lu_factor_ex: " + message
    singular = ember.tensor([[1.0, 2.0], [2.0, 4.0]])
    assert int(ember.linalg.lu_factor_ex(singular).info) == 2
    with pytest.raises(RuntimeError, match=r"^torch.lu_factor: Expected tensor with 2 or more dimensions. Got size: "
                                           r"\[3\] instead$"):
        ember.linalg.lu_factor(ember.zeros(3))
    with pytest.raises(NotImplementedError, match="\"lu_cpu\" not implemented for 'Long'"):
        ember.linalg.lu_factor(ember.zeros(3, 3, dtype=ember.int64))
    with pytest.raises(NotImplementedError, match="\"lu_cpu\" not implemented for 'Half'"):
        ember.linalg.lu_factor_ex(ember.zeros(3, 3, dtype=ember.float16))
    with pytest.raises(RuntimeError, match="^linalg.lu_factor: LU without pivoting is not implemented on the CPU$"):
        ember.linalg.lu_factor(ember.eye(3), pivot=False)
    empty = ember.linalg.lu_factor(ember.zeros(0, 3))
    assert tuple(empty.LU.shape) == (0, 3) and tuple(empty.pivots.shape) == (0,)
    with pytest.raises(RuntimeError, match="LU_pivots is expected to be a contiguous tensor of torch.int32 dtype"):
        ember.lu_unpack(ember.eye(3), ember.tensor([1, 2, 3]))
    with pytest.raises(RuntimeError, match="pivots passed to lu_unpack must be between 1 and LU.size"):
        ember.lu_unpack(ember.eye(3), ember.tensor([1, 4, 3], dtype=ember.int32))


def test_lu_factor_out_tuples():
    a = ember.tensor(matrices((2, 4, 4)))
    LU, piv = ember.empty(0, dtype=ember.float64), ember.empty(0, dtype=ember.int32)
    r = ember.linalg.lu_factor(a, out=(LU, piv))
    assert type(r).__name__ == "linalg_lu_factor_out" and r.LU is LU and r.pivots is piv
    expected = ember.linalg.lu_factor(a)
    assert LU.equal(expected.LU) and piv.equal(expected.pivots)
    info = ember.empty(0, dtype=ember.int32)
    r = ember.linalg.lu_factor_ex(a, out=(ember.empty(0, dtype=ember.float64), ember.empty(0, dtype=ember.int32), info))
    assert type(r).__name__ == "linalg_lu_factor_ex_out" and r.info is info and tuple(info.shape) == (2,)
    import ember.return_types as return_types
    assert type(r) is return_types.linalg_lu_factor_ex_out and "linalg_lu_factor_ex_out" in return_types.__all__
    back = pickle.loads(pickle.dumps(r))
    assert type(back) is type(r) and back.LU.equal(r.LU)
    with pytest.raises(RuntimeError, match="^Expected out tensor to have dtype int, but got float instead$"):
        ember.linalg.lu_factor(a, out=(ember.empty(0, dtype=ember.float64), ember.empty(0)))
    with pytest.raises(TypeError, match="expected tuple of 2 elements but got 1"):
        ember.linalg.lu_factor(a, out=(LU,))
    P, L, U = ember.empty(0, dtype=ember.float64), ember.empty(0, dtype=ember.float64), ember.empty(0, dtype=ember.float64)
    r = ember.lu_unpack(*expected, out=(P, L, U))
    assert type(r).__name__ == "lu_unpack_out" and (P @ L @ U).allclose(a)


# ---------------------------------------------------------------- solve_triangular, lu_solve
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_solve_triangular_matches_scipy(dtype, threads):
    n, k = 5, 3
    a = matrices((4, n, n), dtype) + 3 * np.eye(n, dtype=dtype)
    for upper in (True, False):
        for unit in (True, False):
            for left in (True, False):
                b = matrices((4, n, k) if left else (4, k, n), dtype)
                x = ember.linalg.solve_triangular(noncontig(a), ember.tensor(b), upper=upper, left=left,
                                                  unitriangular=unit)
                for i in range(4):
                    if left:
                        want = scipy_linalg.solve_triangular(a[i], b[i], lower=not upper, unit_diagonal=unit)
                    else:  # X A = B is A^T X^T = B^T
                        want = scipy_linalg.solve_triangular(a[i], b[i].T, trans="T", lower=not upper,
                                                             unit_diagonal=unit).T
                    np.testing.assert_allclose(x[i].numpy(), want, rtol=1e-4 if dtype == np.float32 else 1e-10,
                                               atol=1e-5 if dtype == np.float32 else 1e-12)
    # batch dims broadcast
    b = matrices((3, 1, n, 2), dtype)
    x = ember.linalg.solve_triangular(ember.tensor(a), ember.tensor(b), upper=True)
    assert tuple(x.shape) == (3, 4, n, 2)
    np.testing.assert_allclose((ember.tensor(a).triu() @ x).numpy(), np.broadcast_to(b, (3, 4, n, 2)),
                               **{k: 20 * v for k, v in TOL[dtype].items()})


def test_solve_triangular_errors():
    A = ember.eye(3)
    st = ember.linalg.solve_triangular
    with pytest.raises(RuntimeError, match="The input tensor B must have at least 2 dimensions"):
        st(A, ember.ones(3), upper=True)
    with pytest.raises(RuntimeError, match="A must be batches of square matrices, but they are 2 by 3 matrices"):
        st(ember.ones(2, 3), ember.ones(3, 1), upper=True)
    with pytest.raises(RuntimeError, match=r"Incompatible shapes of A and B for the equation XA = B \(3x3 and 1x4\)"):
        st(A, ember.ones(1, 4), upper=True, left=False)
    with pytest.raises(NotImplementedError, match="\"triangular_solve_cpu\" not implemented for 'Long'"):
        st(A.long(), A.long(), upper=True)
    with pytest.raises(TypeError):
        st(A, A)  # upper is required
    assert st(A, ember.ones(3, 2, dtype=ember.float64), upper=True).dtype == ember.float64


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_lu_solve_matches_numpy(dtype, threads):
    n = 4
    a = matrices((3, n, n), dtype)
    LU, piv = ember.linalg.lu_factor(noncontig(a))
    for left in (True, False):
        for adjoint in (True, False):
            b = matrices((3, n, 2) if left else (3, 2, n), dtype)
            x = ember.linalg.lu_solve(LU, piv, ember.tensor(b), left=left, adjoint=adjoint).numpy()
            op = np.swapaxes(a, -1, -2) if adjoint else a
            want = np.linalg.solve(op, b) if left else np.swapaxes(np.linalg.solve(np.swapaxes(op, -1, -2),
                                                                                   np.swapaxes(b, -1, -2)), -1, -2)
            np.testing.assert_allclose(x, want, rtol=1e-3 if dtype == np.float32 else 1e-9,
                                       atol=1e-4 if dtype == np.float32 else 1e-11)
    out = ember.empty(0, dtype=LU.dtype)
    assert ember.linalg.lu_solve(LU, piv, ember.tensor(matrices((3, n, 1), dtype)), out=out) is out
    with pytest.raises(RuntimeError, match="pivots should be a Tensor of scalar type torch.int32"):
        ember.linalg.lu_solve(LU, piv.long(), ember.tensor(matrices((3, n, 1), dtype)))
    with pytest.raises(RuntimeError, match=r"Incompatible shapes of A and B for the equation AX = B \(4x4 and 2x2\)"):
        ember.linalg.lu_solve(LU, piv, ember.tensor(matrices((3, 2, 2), dtype)))
    with pytest.raises(RuntimeError, match="Expected LU and B to have the same dtype"):
        ember.linalg.lu_solve(LU, piv, ember.ones(3, n, 1, dtype=ember.float16))


# ---------------------------------------------------------------- gradients
@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 3), (3, 5), (5, 3)])
def test_lu_factor_gradients(shape):
    a = ember.tensor(matrices(shape) + np.eye(*shape[-2:]) * 2, requires_grad=True)

    def factor(x):
        return ember.linalg.lu_factor_ex(x).LU
    assert gradcheck(factor, (a,))
    assert gradgradcheck(factor, (a,))
    assert type(factor(a).grad_fn).__name__ == "LinalgLuFactorExBackward0"
    tangent = ember.tensor(matrices(shape))
    with forward_ad.dual_level():
        dual = forward_ad.make_dual(a.detach(), tangent)
        jvp = forward_ad.unpack_dual(factor(dual)).tangent
    eps = 1e-6
    numeric = (factor(a.detach() + eps * tangent) - factor(a.detach() - eps * tangent)) / (2 * eps)
    np.testing.assert_allclose(jvp.numpy(), numeric.numpy(), rtol=1e-6, atol=1e-7)


def test_solve_triangular_and_lu_solve_gradients():
    n = 4
    a = ember.tensor(matrices((2, n, n)) + 3 * np.eye(n), requires_grad=True)
    b = ember.tensor(matrices((2, n, 2)), requires_grad=True)
    for upper, left, unit in [(True, True, False), (False, False, True), (True, False, False)]:
        bb = b if left else b.transpose(-2, -1)
        assert gradcheck(lambda x, y: ember.linalg.solve_triangular(x, y, upper=upper, left=left, unitriangular=unit),
                         (a, bb))
        assert gradgradcheck(lambda x, y: ember.linalg.solve_triangular(x, y, upper=upper, left=left,
                                                                        unitriangular=unit), (a, bb))
    LU, piv = ember.linalg.lu_factor(a.detach())
    LU.requires_grad_()
    for left, adjoint in [(True, False), (True, True), (False, True)]:
        bb = b if left else b.transpose(-2, -1)
        assert gradcheck(lambda lu, y: ember.linalg.lu_solve(lu, piv, y, left=left, adjoint=adjoint), (LU, bb))


def test_geqrf_matches_scipy_and_has_no_gradient(threads):
    for shape, dtype in [((5, 3), np.float64), ((3, 5), np.float32), ((4, 4), np.float64), ((2, 6, 4), np.float64)]:
        a = matrices(shape, dtype)
        got = ember.geqrf(noncontig(a))
        assert type(got).__name__ == "geqrf" and got.a.dtype == got.tau.dtype
        for i, m in enumerate(a.reshape(-1, *shape[-2:])):
            (h, tau), _ = scipy_linalg.qr(m, mode="raw")
            np.testing.assert_allclose(got.a.numpy().reshape(-1, *shape[-2:])[i], h, **TOL[dtype])
            np.testing.assert_allclose(got.tau.numpy().reshape(-1, min(shape[-2:]))[i], tau, **TOL[dtype])
    a_out, tau_out = ember.empty(0, dtype=ember.float64), ember.empty(0, dtype=ember.float64)
    r = ember.geqrf(ember.tensor(matrices((4, 3))), out=(a_out, tau_out))
    assert type(r).__name__ == "geqrf_out" and tuple(a_out.shape) == (4, 3) and tuple(tau_out.shape) == (3,)
    with pytest.raises(RuntimeError, match="^torch.geqrf: input must have at least 2 dimensions.$"):
        ember.geqrf(ember.ones(3))
    with pytest.raises(NotImplementedError, match="\"geqrf_cpu\" not implemented for 'Half'"):
        ember.geqrf(ember.ones(3, 3, dtype=ember.float16))
    x = ember.tensor(matrices((3, 3)), requires_grad=True)
    with pytest.raises(NotImplementedError, match="^the derivative for 'geqrf' is not implemented.$"):
        ember.geqrf(x)[0].sum().backward()


@needs_torch
@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 3), (3, 5), (2, 5, 3)])
def test_lu_matches_torch(shape):
    a = matrices(shape)
    ours = ember.tensor(a, requires_grad=True)
    theirs = torch.tensor(a, requires_grad=True)
    e_lu, e_piv = ember.linalg.lu_factor(ours)
    t_lu, t_piv = torch.linalg.lu_factor(theirs)
    np.testing.assert_array_equal(e_piv.numpy(), t_piv.numpy())
    np.testing.assert_allclose(e_lu.detach().numpy(), t_lu.detach().numpy(), rtol=1e-10, atol=1e-12)
    weights = matrices(shape)
    (e_lu * ember.tensor(weights)).sum().backward()
    (t_lu * torch.tensor(weights)).sum().backward()
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-8, atol=1e-10)
    for e, t in zip(ember.lu_unpack(e_lu, e_piv), torch.lu_unpack(t_lu, t_piv)):
        np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=1e-10, atol=1e-12)
    e_qr, t_qr = ember.geqrf(ember.tensor(a)), torch.geqrf(torch.tensor(a))
    for e, t in zip(e_qr, t_qr):
        np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-10, atol=1e-12)


# ---------------------------------------------------------------- forward AD of every op of the group
def _m(shape, shift=0.0):
    return ember.tensor(matrices(shape) + shift * np.eye(*shape[-2:]), requires_grad=True)


_LU = ember.linalg.lu_factor(ember.tensor(matrices((3, 3)) + 2 * np.eye(3)))
_TRI = dict(upper=True, left=True, unitriangular=False)
JVP_CASES = {
    "linalg_lu_factor_ex": [(lambda a: ember.linalg.lu_factor_ex(a).LU, lambda: (_m((4, 4), 2),))],
    "linalg_lu_factor": [(lambda a: ember.linalg.lu_factor(a).LU, lambda: (_m((3, 5), 2),))],
    "_linalg_lu_factor_ex_backward": [(lambda g: ember._linalg_lu_factor_ex_backward(g * g, *_LU, True),
                                       lambda: (_m((3, 3)),))],
    "_linalg_lu_factor_ex_jvp": [(lambda v: ember._linalg_lu_factor_ex_jvp(v * v, *_LU, True), lambda: (_m((3, 3)),))],
    "lu_unpack": [(lambda lu: ember.lu_unpack(lu, _LU.pivots)[1:], lambda: (_m((3, 3)),))],
    "linalg_lu_solve": [(lambda lu, b: ember.linalg.lu_solve(lu, _LU.pivots, b, adjoint=True),
                         lambda: (_m((3, 3), 3), _m((3, 2))))],
    "linalg_solve_triangular": [(lambda a, b: ember.linalg.solve_triangular(a, b, upper=False, left=False),
                                 lambda: (_m((3, 3), 3), _m((2, 3))))],
    "_linalg_solve_triangular_backward": [
        (lambda g, a: ember._linalg_solve_triangular_backward(g, a, ember.linalg.solve_triangular(a, g, **_TRI), True,
                                                              True, False), lambda: (_m((3, 2)), _m((3, 3), 3)))],
    "_linalg_solve_triangular_jvp": [(lambda v, a: ember._linalg_solve_triangular_jvp(v, a, a.mT, True, True, True),
                                      lambda: (_m((3, 3)), _m((3, 3), 3)))],
}
JVP_CHECKED = set(JVP_CASES) | {"geqrf"}  # for tests/test_forward_ad.py OWN_CHECKS
# for tests/test_higher_order.py (gradcheck and gradgradcheck of each)
HIGHER_ORDER_CASES = {name: [(fn, make_inputs, {}) for fn, make_inputs in cases] for name, cases in JVP_CASES.items()}


@pytest.mark.parametrize("name", sorted(JVP_CASES))
def test_jvps_of_every_op_of_the_group(name):
    for fn, make_inputs in JVP_CASES[name]:
        assert gradcheck(fn, make_inputs(), check_forward_ad=True)


def test_geqrf_forward_ad_raises():
    with forward_ad.dual_level():
        dual = forward_ad.make_dual(ember.tensor(matrices((3, 3))), ember.tensor(matrices((3, 3))))
        with pytest.raises(NotImplementedError, match="the derivative for 'geqrf' is not implemented."):
            ember.geqrf(dual)
