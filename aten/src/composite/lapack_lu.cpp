// linalg.lu_factor, lu_unpack and linalg.lu_solve over the LU kernels (aten/src/cpu/lapack_lu.cpp),
// the derivatives of lu_factor_ex and solve_triangular in ember ops (so double backward works), as
// PyTorch's FunctionsManual.cpp for real matrices; and frexp's dtype check.
#include <algorithm>
#include <tuple>

#include "ember/dtype.h"
#include "ember/errors.h"
#include "ember/lapack_checks.h"
#include "ember/ops/_frexp.h"
#include "ember/ops/_linalg_lu_factor_ex_backward.h"
#include "ember/ops/_linalg_lu_factor_ex_jvp.h"
#include "ember/ops/_linalg_solve_triangular_backward.h"
#include "ember/ops/_linalg_solve_triangular_jvp.h"
#include "ember/ops/_lu_permutation.h"
#include "ember/ops/add.h"
#include "ember/ops/cat.h"
#include "ember/ops/empty.h"
#include "ember/ops/eye.h"
#include "ember/ops/frexp.h"
#include "ember/ops/linalg_lu_factor.h"
#include "ember/ops/linalg_lu_factor_ex.h"
#include "ember/ops/linalg_lu_solve.h"
#include "ember/ops/linalg_solve_triangular.h"
#include "ember/ops/lu_unpack.h"
#include "ember/ops/matmul.h"
#include "ember/ops/narrow.h"
#include "ember/ops/neg.h"
#include "ember/ops/sub.h"
#include "ember/ops/transpose.h"
#include "ember/ops/tril.h"
#include "ember/ops/triu.h"
#include "ember/tensor.h"

namespace ember::native {

namespace {

Tensor mT(const Tensor& t) { return ember::transpose(t, -2, -1); }

Tensor solve_tri(const Tensor& A, const Tensor& B, bool upper, bool left, bool unit = false) {
  return ember::linalg_solve_triangular(A, B, upper, left, unit);
}

Tensor empty_like_dtype(const Tensor& t) { return ember::empty(IntList{0}, t.dtype(), t.device()); }

}  // namespace

// ---------------------------------------------------------------- lu_factor
std::tuple<Tensor, Tensor> linalg_lu_factor(const Tensor& A, bool pivot) {
  auto [LU, pivots, info] = ember::linalg_lu_factor_ex(A, pivot, false);
  raise_lapack_failure(info, A.dim() > 2, "torch.linalg.lu_factor", LapackFailure::ZeroPivot);
  return {LU, pivots};
}

// L (m x k) with its unit diagonal and U (k x n) from the packed LU; P from the pivots.
std::tuple<Tensor, Tensor, Tensor> lu_unpack(const Tensor& LU_data, const Tensor& LU_pivots, bool unpack_data,
                                             bool unpack_pivots) {
  EMBER_CHECK(LU_data.dim() >= 2, Runtime, "torch.lu_unpack: Expected tensor with 2 or more dimensions. Got size: ",
              shape_str(LU_data.sizes()), " instead");
  const int64_t m = LU_data.size(-2), n = LU_data.size(-1), k = std::min(m, n);
  // P is a constant of the pivots: no gradient flows into LU_data through it (as PyTorch's).
  Tensor P = unpack_pivots ? ember::_lu_permutation(detach_copy(LU_data), LU_pivots) : empty_like_dtype(LU_data);
  if (!unpack_data) return {P, empty_like_dtype(LU_data), empty_like_dtype(LU_data)};
  Tensor L = ember::add(ember::tril(ember::narrow(LU_data, -1, 0, k), -1),
                        ember::eye(m, k, LU_data.dtype(), LU_data.device(), false));
  Tensor U = ember::triu(ember::narrow(LU_data, -2, 0, k));
  return {P, L, U};
}

// A = P L U: X = U^-1 L^-1 P^T B, and the transposed / right-hand forms by the same two solves.
Tensor linalg_lu_solve(const Tensor& LU, const Tensor& pivots, const Tensor& B, bool left, bool adjoint) {
  EMBER_CHECK(LU.dim() >= 2, Runtime, "linalg.lu_solve: The input tensor A must have at least 2 dimensions.");
  EMBER_CHECK(B.dim() >= 2, Runtime, "linalg.lu_solve: The input tensor B must have at least 2 dimensions.");
  const int64_t n = LU.size(-1);
  EMBER_CHECK(LU.size(-2) == n, Runtime, "linalg.lu_solve: A must be batches of square matrices, but they are ",
              LU.size(-2), " by ", n, " matrices");
  EMBER_CHECK((left ? B.size(-2) : B.size(-1)) == n, Runtime, "linalg.lu_solve: Incompatible shapes of A and B for the ",
              "equation ", left ? "AX = B" : "XA = B", " (", n, "x", n, " and ", B.size(-2), "x", B.size(-1), ")");
  EMBER_CHECK(LU.dtype() == B.dtype(), Runtime, "linalg.lu_solve: Expected LU and B to have the same dtype, but found ",
              "LU of type ", dtype_title(LU.dtype()), " and B of type ", dtype_title(B.dtype()), " instead");
  EMBER_CHECK(pivots.dtype() == ScalarType::Int32, Runtime,
              "linalg.lu_solve: pivots should be a Tensor of scalar type torch.int32");
  auto [P, L, U] = ember::lu_unpack(LU, pivots, true, true);
  if (left && !adjoint) return solve_tri(U, solve_tri(L, ember::matmul(mT(P), B), false, true, true), true, true);
  if (left) return ember::matmul(P, solve_tri(mT(L), solve_tri(mT(U), B, false, true), true, true, true));
  if (!adjoint) return ember::matmul(solve_tri(L, solve_tri(U, B, true, false), false, false, true), mT(P));
  return solve_tri(mT(U), solve_tri(mT(L), ember::matmul(B, P), true, false, true), false, false);
}

// ---------------------------------------------------------------- lu_factor_ex's derivatives
// PyTorch's linalg_lu_backward of L_grad = grad's strict lower part, U_grad = its upper part; for
// wide (m < n) and tall (m > n) matrices the square block is solved, the rest follows from it.
Tensor _linalg_lu_factor_ex_backward(const Tensor& grad, const Tensor& LU, const Tensor& pivots, bool pivot) {
  auto [P, L, U] = ember::lu_unpack(LU, pivots, true, pivot);
  const int64_t m = LU.size(-2), n = LU.size(-1), k = std::min(m, n);
  const Tensor L_grad = ember::tril(ember::narrow(grad, -1, 0, k), -1);
  const Tensor U_grad = ember::triu(ember::narrow(grad, -2, 0, k));
  Tensor A_grad;
  if (m == n) {
    A_grad = ember::add(ember::tril(ember::matmul(mT(L), L_grad), -1), ember::triu(ember::matmul(U_grad, mT(U))));
    A_grad = solve_tri(mT(L), solve_tri(mT(U), A_grad, false, false), true, true, true);
  } else if (m < n) {
    const Tensor U1 = ember::narrow(U, -1, 0, k);
    A_grad = ember::sub(ember::matmul(mT(L), L_grad), ember::matmul(U_grad, mT(U)));
    A_grad = solve_tri(mT(U1), ember::tril(A_grad, -1), false, false);
    A_grad = ember::cat({ember::add(A_grad, ember::narrow(U_grad, -1, 0, k)), ember::narrow(U_grad, -1, k, n - k)}, -1);
    A_grad = solve_tri(mT(L), A_grad, true, true, true);
  } else {
    const Tensor L1 = ember::narrow(L, -2, 0, k);
    A_grad = ember::sub(ember::matmul(U_grad, mT(U)), ember::matmul(mT(L), L_grad));
    A_grad = solve_tri(mT(L1), ember::triu(A_grad), true, true, true);
    A_grad = ember::cat({ember::add(A_grad, ember::narrow(L_grad, -2, 0, k)), ember::narrow(L_grad, -2, k, m - k)}, -2);
    A_grad = solve_tri(mT(U), A_grad, false, false);
  }
  return pivot ? ember::matmul(P, A_grad) : A_grad;
}

// dK = L1^-1 P^T dA1 U1^-1; dL1 = L1 tril(dK, -1), dU1 = triu(dK) U1; the rest of a wide U or a
// tall L from the square block.
Tensor _linalg_lu_factor_ex_jvp(const Tensor& A_t, const Tensor& LU, const Tensor& pivots, bool pivot) {
  auto [P, L, U] = ember::lu_unpack(LU, pivots, true, pivot);
  const int64_t m = A_t.size(-2), n = A_t.size(-1), k = std::min(m, n);
  const Tensor PdA = pivot ? ember::matmul(mT(P), A_t) : A_t;
  const Tensor L1 = ember::narrow(ember::narrow(L, -2, 0, k), -1, 0, k);
  const Tensor U1 = ember::narrow(ember::narrow(U, -2, 0, k), -1, 0, k);
  const Tensor PdA1 = ember::narrow(ember::narrow(PdA, -2, 0, k), -1, 0, k);
  const Tensor dK = solve_tri(U1, solve_tri(L1, PdA1, false, true, true), true, false);
  const Tensor dK_lower = ember::tril(dK, -1), dK_upper = ember::triu(dK);
  const Tensor d1 = ember::add(ember::matmul(L1, dK_lower), ember::matmul(dK_upper, U1));
  if (m == n) return d1;
  if (m < n) {
    const Tensor dU2 = ember::sub(solve_tri(L1, ember::narrow(PdA, -1, k, n - k), false, true, true),
                                  ember::matmul(dK_lower, ember::narrow(U, -1, k, n - k)));
    return ember::cat({d1, dU2}, -1);
  }
  const Tensor dL2 = ember::sub(solve_tri(U1, ember::narrow(PdA, -2, k, m - k), true, false),
                                ember::matmul(ember::narrow(L, -2, k, m - k), dK_upper));
  return ember::cat({d1, dL2}, -2);
}

// ---------------------------------------------------------------- solve_triangular's derivatives
namespace {

// The part of a gradient or tangent of A that the solve reads: its triangle, without the diagonal
// when that is taken as ones.
Tensor triangle_of(const Tensor& t, bool upper, bool unitriangular) {
  return upper ? ember::triu(t, unitriangular ? 1 : 0) : ember::tril(t, unitriangular ? -1 : 0);
}

}  // namespace

std::tuple<Tensor, Tensor> _linalg_solve_triangular_backward(const Tensor& grad, const Tensor& A, const Tensor& X,
                                                             bool upper, bool left, bool unitriangular) {
  const Tensor grad_B = solve_tri(mT(A), grad, !upper, left, unitriangular);
  const Tensor grad_A = ember::neg(left ? ember::matmul(grad_B, mT(X)) : ember::matmul(mT(X), grad_B));
  return {triangle_of(grad_A, upper, unitriangular), grad_B};
}

Tensor _linalg_solve_triangular_jvp(const Tensor& A_t, const Tensor& A, const Tensor& X, bool upper, bool left,
                                    bool unitriangular) {
  const Tensor dA = triangle_of(A_t, upper, unitriangular);
  return ember::neg(solve_tri(A, left ? ember::matmul(dA, X) : ember::matmul(X, dA), upper, left, unitriangular));
}

// ---------------------------------------------------------------- frexp
std::tuple<Tensor, Tensor> frexp_Tensor(const Tensor& self) {
  EMBER_CHECK(is_floating(self.dtype()), Runtime, "torch.frexp() only supports floating-point dtypes");
  return ember::_frexp(self);
}

}  // namespace ember::native
