// ember.linalg decompositions over the LAPACK kernels (aten/src/cpu/lapack.cpp), and their
// derivatives written with ember ops, so that autograd records them and double backward works.
// Formulas for real matrices, as PyTorch's (FunctionsManual.cpp).
#include <limits>
#include <string>
#include <tuple>

#include "ember/autograd.h"
#include "ember/errors.h"
#include "ember/forward_ad.h"
#include "ember/lapack_checks.h"
#include "ember/ops/_linalg_cholesky_backward.h"
#include "ember/ops/_linalg_cholesky_jvp.h"
#include "ember/ops/_linalg_det_backward.h"
#include "ember/ops/_linalg_eigh_backward.h"
#include "ember/ops/_linalg_eigh_jvp.h"
#include "ember/ops/_linalg_eigh_packed.h"
#include "ember/ops/_linalg_qr_backward.h"
#include "ember/ops/_linalg_qr_jvp.h"
#include "ember/ops/_linalg_qr_packed.h"
#include "ember/ops/_linalg_slogdet_jvp.h"
#include "ember/ops/_linalg_slogdet_packed.h"
#include "ember/ops/_linalg_solve.h"
#include "ember/ops/_linalg_svd_backward.h"
#include "ember/ops/_linalg_svd_jvp.h"
#include "ember/ops/_linalg_svd_packed.h"
#include "ember/ops/add.h"
#include "ember/ops/any.h"
#include "ember/ops/cat.h"
#include "ember/ops/cholesky.h"
#include "ember/ops/det.h"
#include "ember/ops/diag_embed.h"
#include "ember/ops/diagonal.h"
#include "ember/ops/empty.h"
#include "ember/ops/eq.h"
#include "ember/ops/eye.h"
#include "ember/ops/flatten.h"
#include "ember/ops/inverse.h"
#include "ember/ops/linalg_cholesky.h"
#include "ember/ops/linalg_cholesky_ex.h"
#include "ember/ops/linalg_det.h"
#include "ember/ops/linalg_eigh.h"
#include "ember/ops/linalg_eigvalsh.h"
#include "ember/ops/linalg_inv.h"
#include "ember/ops/linalg_inv_ex.h"
#include "ember/ops/linalg_qr.h"
#include "ember/ops/linalg_slogdet.h"
#include "ember/ops/linalg_solve.h"
#include "ember/ops/linalg_svd.h"
#include "ember/ops/linalg_svdvals.h"
#include "ember/ops/logdet.h"
#include "ember/ops/lt.h"
#include "ember/ops/matmul.h"
#include "ember/ops/mul.h"
#include "ember/ops/narrow.h"
#include "ember/ops/prod.h"
#include "ember/ops/reciprocal.h"
#include "ember/ops/reshape.h"
#include "ember/ops/select.h"
#include "ember/ops/slogdet.h"
#include "ember/ops/squeeze.h"
#include "ember/ops/stack.h"
#include "ember/ops/sub.h"
#include "ember/ops/sum.h"
#include "ember/ops/transpose.h"
#include "ember/ops/tril.h"
#include "ember/ops/true_divide.h"
#include "ember/ops/unsqueeze.h"
#include "ember/ops/where.h"
#include "ember/ops/zeros.h"
#include "ember/tensor.h"

namespace ember::native {

namespace {

Tensor mT(const Tensor& t) { return ember::transpose(t, -2, -1); }

Tensor number(double v) { return wrap_number(Scalar(v)); }

// The lower triangle of X with its diagonal halved (Phi in the Cholesky derivatives).
Tensor lower_half_diagonal(const Tensor& X) {
  return ember::sub(ember::tril(X), ember::mul(ember::diag_embed(ember::diagonal(X, 0, -2, -1)), number(0.5)));
}

// (…) values broadcast over the last two dims of a matrix batch.
Tensor as_matrix_scale(const Tensor& t) { return ember::unsqueeze(ember::unsqueeze(t, -1), -1); }

}  // namespace

// ---------------------------------------------------------------- inv
Tensor linalg_inv(const Tensor& A) {
  check_lapack_input(A, "linalg.inv", nullptr);
  auto [inverse, info] = ember::linalg_inv_ex(A, false);
  raise_lapack_failure(info, A.dim() > 2, "linalg.inv", LapackFailure::Singular);
  return inverse;
}

Tensor inverse(const Tensor& self) { return ember::linalg_inv(self); }

// ---------------------------------------------------------------- solve
namespace {

// The batch dims of B (all but its last `trailing`) and of A broadcast, as PyTorch's infer_size says.
void check_batch_broadcast(const Tensor& B, int64_t trailing, const Tensor& A) {
  const int64_t nb = B.dim() - trailing, na = A.dim() - 2, dims = std::max(nb, na);
  for (int64_t i = dims - 1; i >= 0; --i) {
    const int64_t offset = dims - 1 - i, db = nb - 1 - offset, da = na - 1 - offset;
    const int64_t sb = db >= 0 ? B.size(db) : 1, sa = da >= 0 ? A.size(da) : 1;
    EMBER_CHECK(sb == sa || sb == 1 || sa == 1, Runtime, "The size of tensor a (", sb,
                ") must match the size of tensor b (", sa, ") at non-singleton dimension ", i);
  }
}

}  // namespace

// B is a batch of vectors when it is 1-D or has A's shape without the last dim (PyTorch's rule);
// X A = B is A^T X^T = B^T.
Tensor linalg_solve(const Tensor& A, const Tensor& B, bool left) {
  check_lapack_input(A, "linalg.solve", "lu_cpu");
  EMBER_CHECK(A.dtype() == B.dtype(), Runtime, "linalg.solve: Expected A and B to have the same dtype, but found A of type ",
              dtype_title(A.dtype()), " and B of type ", dtype_title(B.dtype()), " instead");
  const int64_t n = A.size(-1);
  bool vector = B.dim() == 1 || B.dim() == A.dim() - 1;
  for (int64_t d = 0; vector && B.dim() > 1 && d < B.dim(); ++d) vector = B.size(d) == A.size(d);
  const char* equation = left ? "AX = B" : "XA = B";
  EMBER_CHECK(B.dim() >= 1 && (vector || B.dim() >= 2), Runtime,
              "linalg.solve: The input tensor B must have at least 2 dimensions.");
  if (vector) {
    EMBER_CHECK(B.size(-1) == n, Runtime, "linalg.solve: Incompatible shapes of A and B for the equation ", equation,
                " (", n, "x", n, " and ", B.size(-1), "x1)");
    check_batch_broadcast(B, 1, A);
    return ember::squeeze(ember::_linalg_solve(left ? A : mT(A), ember::unsqueeze(B, -1)), -1);
  }
  EMBER_CHECK((left ? B.size(-2) : B.size(-1)) == n, Runtime, "linalg.solve: Incompatible shapes of A and B for the equation ", equation, " (", n,
              "x", n, " and ", B.size(-2), "x", B.size(-1), ")");
  check_batch_broadcast(B, 2, A);
  if (left) return ember::_linalg_solve(A, B);
  return mT(ember::_linalg_solve(mT(A), mT(B)));
}

// ---------------------------------------------------------------- cholesky
Tensor linalg_cholesky(const Tensor& A, bool upper) {
  check_lapack_input(A, "linalg.cholesky", "cholesky_cpu");
  auto [L, info] = ember::linalg_cholesky_ex(A, upper, false);
  raise_lapack_failure(info, A.dim() > 2, "linalg.cholesky", LapackFailure::NotPositiveDefinite);
  return L;
}

Tensor cholesky(const Tensor& self, bool upper) {
  warn("torch.cholesky is deprecated in favor of torch.linalg.cholesky and will be removed in a future PyTorch "
       "release.");
  check_lapack_input(self, "cholesky", "cholesky_cpu");
  auto [L, info] = ember::linalg_cholesky_ex(self, upper, false);
  raise_lapack_failure(info, self.dim() > 2, "cholesky", LapackFailure::NotPositiveDefinite);
  return L;
}

// gA = L^-T Phi(L^T gL) L^-1, symmetrized: A's two triangles share each gradient entry.
Tensor _linalg_cholesky_backward(const Tensor& grad, const Tensor& L, bool upper) {
  const Tensor lower = upper ? mT(L) : L, g = upper ? mT(grad) : grad;
  const Tensor L_inv = ember::linalg_inv(lower);
  const Tensor phi = lower_half_diagonal(ember::matmul(mT(lower), g));
  const Tensor gA = ember::matmul(ember::matmul(mT(L_inv), phi), L_inv);
  return ember::mul(ember::add(gA, mT(gA)), number(0.5));
}

// dL = L Phi(L^-1 dA L^-T).
Tensor _linalg_cholesky_jvp(const Tensor& A_t, const Tensor& L, bool upper) {
  const Tensor lower = upper ? mT(L) : L;
  const Tensor L_inv = ember::linalg_inv(lower);
  const Tensor dL = ember::matmul(lower, lower_half_diagonal(ember::matmul(ember::matmul(L_inv, A_t), mT(L_inv))));
  return upper ? mT(dL) : dL;
}

// ---------------------------------------------------------------- det, slogdet
Tensor det(const Tensor& self) { return ember::linalg_det(self); }

// d det / dA is the cofactor matrix, det(A) A^-T for an invertible A.
Tensor _linalg_det_backward(const Tensor& grad, const Tensor& A, const Tensor& det) {
  if (A.numel() == 0) return ember::zeros(A.sizes(), A.dtype(), A.device());
  const bool singular = ember::any(ember::eq(det, number(0.0))).item().to<bool>();
  if (!singular) return ember::mul(as_matrix_scale(ember::mul(grad, det)), mT(ember::linalg_inv(A)));
  // A = U S Vh: the cofactor matrix is det(U) det(Vh) U diag(prod_{j != i} S_j) Vh.
  auto [U, S, Vh] = ember::linalg_svd(A, false);
  const int64_t n = A.size(-1);
  const Tensor eye = ember::eye(n, std::nullopt, A.dtype(), A.device());
  const Tensor others = ember::add(ember::mul(ember::unsqueeze(S, -2), ember::sub(number(1.0), eye)), eye);
  const Tensor products = ember::prod(others, -1, false, std::nullopt);
  const Tensor scale = ember::mul(grad, ember::mul(ember::linalg_det(U), ember::linalg_det(Vh)));
  return ember::mul(as_matrix_scale(scale), ember::matmul(U, ember::mul(ember::unsqueeze(products, -1), Vh)));
}

Tensor _linalg_slogdet_jvp(const Tensor& A_t, const Tensor& A) {
  const Tensor d = ember::sum(ember::mul(mT(ember::linalg_inv(A)), A_t), IntList{-2, -1});
  return ember::stack(TensorList{ember::mul(d, number(0.0)), d}, -1);
}

std::tuple<Tensor, Tensor> linalg_slogdet(const Tensor& A) {
  check_lapack_input(A, "linalg.slogdet", nullptr);
  const Tensor packed = ember::_linalg_slogdet_packed(A);
  return {ember::select(packed, -1, 0), ember::select(packed, -1, 1)};
}

std::tuple<Tensor, Tensor> slogdet(const Tensor& self) { return ember::linalg_slogdet(self); }

// log(det): nan for a negative determinant, -inf for a zero one (log|det| is -inf then).
Tensor logdet(const Tensor& self) {
  check_lapack_input(self, "logdet", nullptr);
  const Tensor packed = ember::_linalg_slogdet_packed(self);
  const Tensor sign = ember::select(packed, -1, 0), logabsdet = ember::select(packed, -1, 1);
  return ember::where(ember::lt(sign, number(0.0)), number(std::numeric_limits<double>::quiet_NaN()), logabsdet);
}

// ---------------------------------------------------------------- eigh
namespace {

// 1 / (L_j - L_i) off the diagonal, 0 on it (the eigenvector derivatives' divisors).
Tensor inverse_gaps(const Tensor& L) {
  const int64_t n = L.size(-1);
  const Tensor eye = ember::eye(n, std::nullopt, L.dtype(), L.device());
  const Tensor gaps = ember::add(ember::sub(ember::unsqueeze(L, -2), ember::unsqueeze(L, -1)), eye);
  return ember::mul(ember::reciprocal(gaps), ember::sub(number(1.0), eye));
}

// PyTorch names its kernel for every dtype it lacks, integers included.
void check_eigh_input(const Tensor& A) {
  if (A.dim() >= 2 && A.dtype() != ScalarType::Float32 && A.dtype() != ScalarType::Float64)
    fail_dtype_not_implemented("linalg_eigh_cpu", A.dtype());
  check_lapack_input(A, "linalg.eigh", "linalg_eigh_cpu");
}

bool needs_derivative(const Tensor& A) {
  return autograd::any_requires_grad({&A}) || (forward_ad::maybe_active() && forward_ad::wanted({&A}));
}

}  // namespace

Tensor _linalg_eigh_backward(const Tensor& grad, const Tensor& packed) {
  const int64_t n = packed.size(-1);
  const Tensor L = ember::select(packed, -2, 0), V = ember::narrow(packed, -2, 1, n);
  const Tensor gL = ember::select(grad, -2, 0), gV = ember::narrow(grad, -2, 1, n);
  const Tensor VtgV = ember::matmul(mT(V), gV);
  const Tensor skew = ember::mul(ember::sub(VtgV, mT(VtgV)), number(0.5));
  const Tensor inner = ember::add(ember::mul(skew, inverse_gaps(L)), ember::diag_embed(gL));
  return ember::matmul(V, ember::matmul(inner, mT(V)));
}

Tensor _linalg_eigh_jvp(const Tensor& A_t, const Tensor& packed) {
  const int64_t n = packed.size(-1);
  const Tensor L = ember::select(packed, -2, 0), V = ember::narrow(packed, -2, 1, n);
  const Tensor X = ember::matmul(mT(V), ember::matmul(A_t, V));
  const Tensor dL = ember::diagonal(X, 0, -2, -1);
  const Tensor dV = ember::matmul(V, ember::mul(X, inverse_gaps(L)));
  return ember::cat(TensorList{ember::unsqueeze(dL, -2), dV}, -2);
}

std::tuple<Tensor, Tensor> linalg_eigh(const Tensor& A, const std::string& UPLO) {
  EMBER_CHECK(UPLO == "L" || UPLO == "U" || UPLO == "l" || UPLO == "u", Runtime,
              "Expected UPLO argument to be 'L' or 'U', but got ", UPLO);
  check_eigh_input(A);
  const Tensor packed = ember::_linalg_eigh_packed(A, UPLO, true);
  return {ember::select(packed, -2, 0), ember::narrow(packed, -2, 1, A.size(-1))};
}

Tensor linalg_eigvalsh(const Tensor& A, const std::string& UPLO) {
  EMBER_CHECK(UPLO == "L" || UPLO == "U" || UPLO == "l" || UPLO == "u", Runtime,
              "Expected UPLO argument to be 'L' or 'U', but got ", UPLO);
  check_eigh_input(A);
  return ember::select(ember::_linalg_eigh_packed(A, UPLO, needs_derivative(A)), -2, 0);
}

// ---------------------------------------------------------------- qr
namespace {

struct QR {
  Tensor Q, R;  // R with all of its rows (kr <= m)
};

QR unpack_qr(const Tensor& packed, bool complete, int64_t n) {
  const int64_t m = packed.size(-2), k = std::min(m, n), kq = packed.size(-1) - n;
  const int64_t kr = complete ? m : k;
  return {ember::narrow(packed, -1, 0, kq), ember::narrow(ember::narrow(packed, -1, kq, n), -2, 0, kr)};
}

Tensor pack_qr(const Tensor& Q, const Tensor& R, int64_t m) {
  const int64_t pad = m - R.size(-2);
  Tensor rows = R;
  if (pad > 0) {
    DimVector shape = R.sizes();
    shape[shape.size() - 2] = pad;
    rows = ember::cat(TensorList{R, ember::zeros(shape, R.dtype(), R.device())}, -2);
  }
  return ember::cat(TensorList{Q, rows}, -1);
}

// X R^-1 for an invertible upper-triangular R (as R^T Y^T = X^T).
Tensor right_divide(const Tensor& X, const Tensor& R) { return mT(ember::_linalg_solve(mT(R), mT(X))); }

void check_qr_differentiable(bool complete, bool compute_q, int64_t m, int64_t n) {
  EMBER_CHECK(compute_q, Runtime,
              "The derivative of linalg.qr depends on Q, which is not computed when mode='r'. Please use "
              "linalg.qr(A, mode='reduced') if you are going to differentiate through linalg.qr.");
  EMBER_CHECK(!complete || m <= n, Runtime,
              "The QR decomposition is not differentiable when mode='complete' and nrows > ncols.");
}

// The gradient of a QR with R square (m >= n): (gQ + Q copyltu(M)) R^-T, M = R gR^T - gQ^T Q.
Tensor qr_backward_tall(const Tensor& gQ, const Tensor& gR, const Tensor& Q, const Tensor& R) {
  const Tensor M = ember::sub(ember::matmul(R, mT(gR)), ember::matmul(mT(gQ), Q));
  const Tensor copyltu = ember::add(ember::tril(M), mT(ember::tril(M, -1)));
  return right_divide(ember::add(gQ, ember::matmul(Q, copyltu)), mT(R));
}

// dQ, dR of a QR with R square: C = Q^T dA R^-1, Omega = its strict lower part made skew.
std::pair<Tensor, Tensor> qr_jvp_tall(const Tensor& dA, const Tensor& Q, const Tensor& R) {
  const Tensor dA_Rinv = right_divide(dA, R);
  const Tensor C = ember::matmul(mT(Q), dA_Rinv);
  const Tensor lower = ember::tril(C, -1);
  const Tensor omega = ember::sub(lower, mT(lower));
  const Tensor dR = ember::matmul(ember::sub(C, omega), R);
  const Tensor dQ = ember::add(ember::sub(dA_Rinv, ember::matmul(Q, C)), ember::matmul(Q, omega));
  return {dQ, dR};
}

}  // namespace

// A wide A (m < n) is [X | Y] with X = Q U square and Y = Q V: V's gradient reaches Y as Q gV
// and Q as (Q V) gV^T, the rest is the square case.
Tensor _linalg_qr_backward(const Tensor& grad, const Tensor& packed, const IntList& A_shape, bool complete,
                           bool compute_q) {
  const int64_t m = A_shape[A_shape.size() - 2], n = A_shape[A_shape.size() - 1];
  check_qr_differentiable(complete, compute_q, m, n);
  const QR f = unpack_qr(packed, complete, n);
  const QR g = unpack_qr(grad, complete, n);
  if (m >= n) return qr_backward_tall(g.Q, g.R, f.Q, f.R);
  const Tensor U = ember::narrow(f.R, -1, 0, m), V = ember::narrow(f.R, -1, m, n - m);
  const Tensor gU = ember::narrow(g.R, -1, 0, m), gV = ember::narrow(g.R, -1, m, n - m);
  const Tensor gQ = ember::add(g.Q, ember::matmul(ember::matmul(f.Q, V), mT(gV)));
  return ember::cat(TensorList{qr_backward_tall(gQ, gU, f.Q, U), ember::matmul(f.Q, gV)}, -1);
}

Tensor _linalg_qr_jvp(const Tensor& A_t, const Tensor& packed, const IntList& A_shape, bool complete,
                      bool compute_q) {
  const int64_t m = A_shape[A_shape.size() - 2], n = A_shape[A_shape.size() - 1];
  check_qr_differentiable(complete, compute_q, m, n);
  const QR f = unpack_qr(packed, complete, n);
  if (m >= n) {
    auto [dQ, dR] = qr_jvp_tall(A_t, f.Q, f.R);
    return pack_qr(dQ, dR, m);
  }
  const Tensor U = ember::narrow(f.R, -1, 0, m), V = ember::narrow(f.R, -1, m, n - m);
  auto [dQ, dU] = qr_jvp_tall(ember::narrow(A_t, -1, 0, m), f.Q, U);
  const Tensor dV = ember::matmul(mT(f.Q), ember::sub(ember::narrow(A_t, -1, m, n - m), ember::matmul(dQ, V)));
  return pack_qr(dQ, ember::cat(TensorList{dU, dV}, -1), m);
}

std::tuple<Tensor, Tensor> linalg_qr(const Tensor& A, const std::string& mode) {
  EMBER_CHECK(mode == "reduced" || mode == "complete" || mode == "r", Runtime, "qr received unrecognized mode '", mode,
              "' but expected one of 'reduced' (default), 'r', or 'complete'");
  check_lapack_input(A, "linalg.qr", "geqrf_cpu", false);
  const Tensor packed = ember::_linalg_qr_packed(A, mode == "complete", mode != "r");
  const QR f = unpack_qr(packed, mode == "complete", A.size(-1));
  if (mode == "r") return {ember::empty(IntList{0}, A.dtype(), A.device()), f.R};
  return {f.Q, f.R};
}

// ---------------------------------------------------------------- svd
namespace {

struct SVD {
  Tensor U, S, Vh;
};

SVD unpack_svd(const Tensor& packed, const IntList& A_shape, bool full_matrices) {
  const int64_t m = A_shape[A_shape.size() - 2], n = A_shape[A_shape.size() - 1], k = std::min(m, n);
  const int64_t ku = full_matrices ? m : k, kv = full_matrices ? n : k;
  DimVector batch(packed.sizes().begin(), packed.sizes().end() - 1);
  auto part = [&](int64_t start, int64_t rows, int64_t cols) {
    DimVector shape = batch;
    shape.push_back(rows);
    shape.push_back(cols);
    return ember::reshape(ember::narrow(packed, -1, start, rows * cols), shape);
  };
  return {part(0, m, ku), ember::narrow(packed, -1, m * ku, k), part(m * ku + k, kv, n)};
}

Tensor pack_svd(const Tensor& U, const Tensor& S, const Tensor& Vh) {
  return ember::cat(TensorList{ember::flatten(U, -2, -1), S, ember::flatten(Vh, -2, -1)}, -1);
}

Tensor skew(const Tensor& X) { return ember::sub(X, mT(X)); }

// S_j^2 - S_i^2 off the diagonal, 1 on it.
Tensor square_gaps(const Tensor& S) {
  const Tensor S2 = ember::mul(S, S);
  const Tensor eye = ember::eye(S.size(-1), std::nullopt, S.dtype(), S.device());
  return ember::add(ember::sub(ember::unsqueeze(S2, -2), ember::unsqueeze(S2, -1)), eye);
}

}  // namespace

// PyTorch's svd_backward for real A (FunctionsManual.cpp); full factors are cut to k columns/rows.
Tensor _linalg_svd_backward(const Tensor& grad, const Tensor& packed, const IntList& A_shape, bool full_matrices) {
  const int64_t m = A_shape[A_shape.size() - 2], n = A_shape[A_shape.size() - 1], k = std::min(m, n);
  EMBER_CHECK(packed.size(-1) > k || k == 0 || m * n == 0, Runtime,
              "linalg.svd: the derivative needs the singular vectors: call linalg.svd or linalg.svdvals");
  SVD f = unpack_svd(packed, A_shape, full_matrices), g = unpack_svd(grad, A_shape, full_matrices);
  if (full_matrices) {
    f.U = ember::narrow(f.U, -1, 0, k), g.U = ember::narrow(g.U, -1, 0, k);
    f.Vh = ember::narrow(f.Vh, -2, 0, k), g.Vh = ember::narrow(g.Vh, -2, 0, k);
  }
  if (k == 0) return ember::zeros(DimVector(A_shape.begin(), A_shape.end()), grad.dtype(), grad.device());
  const Tensor& U = f.U;
  const Tensor& S = f.S;
  const Tensor& Vh = f.Vh;
  const Tensor Scol = ember::unsqueeze(S, -1), Srow = ember::unsqueeze(S, -2);
  const Tensor UhgU = skew(ember::matmul(mT(U), g.U));
  const Tensor VhgV = skew(ember::matmul(Vh, mT(g.Vh)));
  Tensor gA = ember::true_divide(ember::add(ember::mul(UhgU, Srow), ember::mul(Scol, VhgV)), square_gaps(S));
  gA = ember::add(gA, ember::diag_embed(g.S));
  if (m > n) {
    gA = ember::matmul(U, gA);
    const Tensor gUSinv = ember::true_divide(g.U, Srow);
    gA = ember::add(gA, ember::sub(gUSinv, ember::matmul(U, ember::matmul(mT(U), gUSinv))));
    return ember::matmul(gA, Vh);
  }
  if (m < n) {
    gA = ember::matmul(gA, Vh);
    const Tensor gVhSinv = ember::true_divide(g.Vh, Scol);
    gA = ember::add(gA, ember::sub(gVhSinv, ember::matmul(ember::matmul(gVhSinv, mT(Vh)), Vh)));
    return ember::matmul(U, gA);
  }
  return ember::matmul(U, ember::matmul(gA, Vh));
}

// With dP = U^T dA V: dS = diag(dP), U^T dU = (dP S + S dP^T) / gaps, V^T dV = (S dP + dP^T S) / gaps,
// plus the parts of dU (dV) outside U's (V's) columns when m > n (n > m).
Tensor _linalg_svd_jvp(const Tensor& A_t, const Tensor& packed, const IntList& A_shape, bool full_matrices) {
  const int64_t m = A_shape[A_shape.size() - 2], n = A_shape[A_shape.size() - 1], k = std::min(m, n);
  EMBER_CHECK(!full_matrices || m == n, Runtime,
              "linalg_svd: forward-mode derivatives with full_matrices=True need a square matrix; use "
              "full_matrices=False");
  const SVD f = unpack_svd(packed, A_shape, full_matrices);
  if (k == 0) return ember::mul(packed, number(0.0));
  const Tensor V = mT(f.Vh);
  const Tensor dP = ember::matmul(mT(f.U), ember::matmul(A_t, V));
  const Tensor dS = ember::diagonal(dP, 0, -2, -1);
  const Tensor Scol = ember::unsqueeze(f.S, -1), Srow = ember::unsqueeze(f.S, -2);
  const Tensor gaps = square_gaps(f.S);
  const Tensor off = ember::sub(number(1.0), ember::eye(k, std::nullopt, f.S.dtype(), f.S.device()));
  const Tensor omegaU = ember::mul(ember::true_divide(ember::add(ember::mul(dP, Srow), ember::mul(Scol, mT(dP))), gaps), off);
  const Tensor omegaV = ember::mul(ember::true_divide(ember::add(ember::mul(Scol, dP), ember::mul(mT(dP), Srow)), gaps), off);
  Tensor dU = ember::matmul(f.U, omegaU), dV = ember::matmul(V, omegaV);
  if (m > n) {
    const Tensor dAVSinv = ember::true_divide(ember::matmul(A_t, V), Srow);
    dU = ember::add(dU, ember::sub(dAVSinv, ember::matmul(f.U, ember::matmul(mT(f.U), dAVSinv))));
  } else if (n > m) {
    const Tensor dAtUSinv = ember::true_divide(ember::matmul(mT(A_t), f.U), Srow);
    dV = ember::add(dV, ember::sub(dAtUSinv, ember::matmul(V, ember::matmul(f.Vh, dAtUSinv))));
  }
  return pack_svd(dU, dS, mT(dV));
}

std::tuple<Tensor, Tensor, Tensor> linalg_svd(const Tensor& A, bool full_matrices) {
  check_lapack_input(A, "linalg.svd", "linalg_svd_cpu", false);
  const SVD f = unpack_svd(ember::_linalg_svd_packed(A, full_matrices, true), A.sizes(), full_matrices);
  return {f.U, f.S, f.Vh};
}

Tensor linalg_svdvals(const Tensor& A) {
  check_lapack_input(A, "linalg.svd", "linalg_svd_cpu", false);
  if (!needs_derivative(A)) return ember::_linalg_svd_packed(A, false, false);
  return unpack_svd(ember::_linalg_svd_packed(A, false, true), A.sizes(), false).S;
}

}  // namespace ember::native
