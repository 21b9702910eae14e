"""torch's pre-linalg functions, over ember.linalg: svd (V, not Vh), qr (some=), triangular_solve,
cholesky_solve, cholesky_inverse, matrix_exp, orgqr/ormqr; and the ones PyTorch removed (solve, lstsq, eig,
symeig), which raise its RuntimeError pointing at the replacement."""
import collections
import warnings

from . import _C


def _named_tuple(name, fields):
    cls = collections.namedtuple(name, fields)
    cls.__module__ = "ember.return_types"

    def __repr__(self):
        body = ",\n".join(f"{field}={value!r}" for field, value in zip(fields, self))
        return f"ember.return_types.{name}(\n{body})"

    cls.__repr__ = __repr__
    return cls


svd_result = _named_tuple("svd", ["U", "S", "V"])
qr_result = _named_tuple("qr", ["Q", "R"])
triangular_solve_result = _named_tuple("triangular_solve", ["solution", "cloned_coefficient"])
RETURN_TYPES = {"svd": svd_result, "qr": qr_result, "triangular_solve": triangular_solve_result}


def _linalg():
    from . import linalg
    return linalg


def svd(input, some=True, compute_uv=True, *, out=None):
    """input = U diag(S) V^T (V, not V^T); with some=False, U and V are square; without compute_uv,
    U and V are zeros."""
    U, S, Vh = _linalg().svd(input, full_matrices=not some)
    if not compute_uv:  # as torch: zero-filled square U and V beside the singular values
        m, n = input.shape[-2], input.shape[-1]
        batch = tuple(input.shape[:-2])
        return svd_result(_C.zeros(batch + (m, m), dtype=input.dtype, device=input.device), S.detach(),
                          _C.zeros(batch + (n, n), dtype=input.dtype, device=input.device))
    return svd_result(U, S, Vh.transpose(-2, -1))


def qr(input, some=True, *, out=None):
    """Deprecated form of linalg.qr: some=True is mode 'reduced', some=False 'complete'."""
    warnings.warn("torch.qr is deprecated in favor of torch.linalg.qr and will be removed in a future PyTorch "
                  "release.\nThe boolean parameter 'some' has been replaced with a string parameter 'mode'.\n"
                  "Q, R = torch.qr(A, some)\nshould be replaced with\n"
                  "Q, R = torch.linalg.qr(A, 'reduced' if some else 'complete')", UserWarning, stacklevel=2)
    Q, R = _linalg().qr(input, "reduced" if some else "complete")
    return qr_result(Q, R)


def _triangle(A, upper, unitriangular):
    T = A.triu() if upper else A.tril()
    if unitriangular:
        eye = _C.eye(A.shape[-1], dtype=A.dtype, device=A.device)
        T = T * (1 - eye) + eye
    return T


def triangular_solve(b, A, upper=True, transpose=False, unitriangular=False, *, out=None):
    """X with A X = b for a triangular A (only its upper or lower triangle is read); returns
    (solution, a copy of A)."""
    warnings.warn("torch.triangular_solve is deprecated in favor of torch.linalg.solve_triangularand will be removed "
                  "in a future PyTorch release.\ntorch.linalg.solve_triangular has its arguments reversed and does not "
                  "return a copy of one of the inputs.\nX = torch.triangular_solve(B, A).solution\nshould be replaced "
                  "with\nX = torch.linalg.solve_triangular(A, B).", UserWarning, stacklevel=2)
    if b.dim() < 2 or A.dim() < 2:
        raise RuntimeError(f"torch.triangular_solve: Expected b to have at least 2 dimensions, but it has "
                           f"{b.dim()} dimensions instead" if b.dim() < 2 else
                           f"torch.triangular_solve: Expected A to have at least 2 dimensions, but it has "
                           f"{A.dim()} dimensions instead")
    T = _triangle(A, upper, unitriangular)
    if transpose:
        T = T.transpose(-2, -1)
    return triangular_solve_result(_linalg().solve(T, b), A.clone())


def cholesky_solve(B, L, upper=False, *, out=None):
    """X with (L L^T) X = B (U^T U when upper), L a Cholesky factor."""
    if B.dim() < 2 or L.dim() < 2:
        raise RuntimeError(f"b should have at least 2 dimensions, but has {B.dim()} dimensions instead"
                           if B.dim() < 2 else f"u should have at least 2 dimensions, but has {L.dim()} dimensions "
                           "instead")
    T = L.triu() if upper else L.tril()
    factor = T.transpose(-2, -1) if upper else T  # lower factor F with A = F F^T
    linalg = _linalg()
    result = linalg.solve(factor.transpose(-2, -1), linalg.solve(factor, B))
    return result if out is None else out.copy_(result)


def cholesky_inverse(L, upper=False, *, out=None):
    """The inverse of L L^T (U^T U when upper) from its Cholesky factor."""
    if L.dim() < 2:
        raise RuntimeError(f"cholesky_inverse: The input tensor A must have at least 2 dimensions.")
    eye = _C.eye(L.shape[-1], dtype=L.dtype, device=L.device).expand(L.shape)
    return cholesky_solve(eye, L, upper, out=out)


def matrix_exp(A):
    """The matrix exponential, by scaling and squaring of a degree-18 Taylor polynomial evaluated
    in float64-safe steps (autograd goes through the products)."""
    if A.dim() < 2 or A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.matrix_exp: A must be batches of square matrices, but they are "
                           f"{A.shape[-2] if A.dim() >= 2 else 1} by {A.shape[-1] if A.dim() else 1} matrices")
    n = A.shape[-1]
    if n == 0 or A.numel() == 0:
        return A.clone()
    norm = A.detach().abs().sum(-2).amax(-1).amax().item() if A.numel() else 0.0
    squarings = 0
    while norm > 0.5:
        norm /= 2
        squarings += 1
    X = A / (2 ** squarings)
    eye = _C.eye(n, dtype=A.dtype, device=A.device).expand(A.shape)
    result, term = eye, eye
    for k in range(1, 19):  # ||X|| <= 0.5: the remainder is below 0.5^19 / 19!, far under float64's epsilon
        term = _C.matmul(term, X) / k
        result = result + term
    for _ in range(squarings):
        result = _C.matmul(result, result)
    return result


def _householder_q(input, tau, columns):
    """H_1 ... H_k (H_i = I - tau_i v_i v_i^T, v_i the i-th column of input below the diagonal, 1 on it),
    its first `columns` columns; batched over the leading dims."""
    m = input.shape[-2]
    q = _C.eye(m, dtype=input.dtype, device=input.device).expand(input.shape[:-2] + (m, m))
    rows = _C.arange(m, device=input.device)
    for i in range(tau.shape[-1]):
        below = (rows > i).to(input.dtype)
        v = input[..., :, i] * below + (rows == i).to(input.dtype)
        qv = _C.matmul(q, v.unsqueeze(-1))
        q = q - tau[..., i, None, None] * _C.matmul(qv, v.unsqueeze(-2))
    return q[..., :columns]


def orgqr(input, tau):
    """The first n columns of Q from geqrf's Householder form (input, tau), as linalg.householder_product."""
    if input.dim() < 2 or input.shape[-2] < input.shape[-1]:
        raise RuntimeError("torch.linalg.householder_product: input.shape[-2] must be greater than or equal to "
                           "input.shape[-1]")
    if tau.shape[-1] > input.shape[-1]:
        raise RuntimeError("torch.linalg.householder_product: input.shape[-1] must be greater than or equal to "
                           "tau.shape[-1]")
    return _householder_q(input, tau, input.shape[-1])


def ormqr(input, tau, other, left=True, transpose=False, *, out=None):
    """other multiplied by Q (Q^T with transpose) from geqrf's (input, tau): on the left or the right."""
    q = _householder_q(input, tau, input.shape[-2])
    if transpose:
        q = q.transpose(-2, -1)
    result = _C.matmul(q, other) if left else _C.matmul(other, q)
    return result if out is None else out.copy_(result)


_REMOVED = {
    "solve": "`torch.solve` is deprecated in favor of `torch.linalg.solve`. `torch.linalg.solve` has its arguments "
             "reversed and does not return the LU factorization.\n\nX = torch.solve(B, A).solution should be replaced "
             "with:\nX = torch.linalg.solve(A, B)",
    "lstsq": "`torch.lstsq` is deprecated in favor of `torch.linalg.lstsq`.\n`torch.linalg.lstsq` has reversed "
             "arguments and does not return the QR decomposition in the returned tuple.\n\nX = "
             "torch.linalg.lstsq(A, B).solution",
    "eig": "`torch.linalg.eig` returns complex tensors of dtype `cfloat` or `cdouble` rather than real tensors "
           "mimicking complex tensors.",
    "symeig": "The default behavior has changed from using the upper triangular portion of the matrix by default to "
              "using the lower triangular portion.\n\nL, V = torch.symeig(A, eigenvectors=True) should be replaced "
              "with:\nL, V = torch.linalg.eigh(A, UPLO='U' if upper else 'L')",
}


def _removed(name):
    def removed(*args, **kwargs):
        raise RuntimeError("This function was deprecated since version 1.9 and is now removed. " + _REMOVED[name])
    removed.__name__ = removed.__qualname__ = name
    removed.__doc__ = f"Removed from PyTorch (1.9): raises, naming the torch.linalg replacement."
    return removed


solve, lstsq, eig, symeig = (_removed(n) for n in ("solve", "lstsq", "eig", "symeig"))
