// linalg.matrix_rank, pinv, cond, matrix_power and lstsq as PyTorch's composites (BatchLinearAlgebra.cpp,
// LinearAlgebra.cpp) over svd/svdvals, eigh/eigvalsh, inv and matmul: autograd records those.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <tuple>

#include "ember/errors.h"
#include "ember/lapack_checks.h"
#include "ember/ops/abs.h"
#include "ember/ops/all.h"
#include "ember/ops/amax.h"
#include "ember/ops/clone.h"
#include "ember/ops/div.h"
#include "ember/ops/empty.h"
#include "ember/ops/eq.h"
#include "ember/ops/expand.h"
#include "ember/ops/eye.h"
#include "ember/ops/full.h"
#include "ember/ops/gt.h"
#include "ember/ops/linalg_cond.h"
#include "ember/ops/linalg_eigh.h"
#include "ember/ops/linalg_eigvalsh.h"
#include "ember/ops/linalg_inv.h"
#include "ember/ops/linalg_inv_ex.h"
#include "ember/ops/linalg_lstsq.h"
#include "ember/ops/linalg_matrix_norm.h"
#include "ember/ops/linalg_matrix_power.h"
#include "ember/ops/linalg_matrix_rank.h"
#include "ember/ops/linalg_pinv.h"
#include "ember/ops/linalg_svd.h"
#include "ember/ops/linalg_svdvals.h"
#include "ember/ops/masked_fill.h"
#include "ember/ops/matmul.h"
#include "ember/ops/matrix_power.h"
#include "ember/ops/maximum.h"
#include "ember/ops/mul.h"
#include "ember/ops/nan_to_num.h"
#include "ember/ops/narrow.h"
#include "ember/ops/pinverse.h"
#include "ember/ops/reciprocal.h"
#include "ember/ops/squeeze.h"
#include "ember/ops/sub.h"
#include "ember/ops/sum.h"
#include "ember/ops/to.h"
#include "ember/ops/transpose.h"
#include "ember/ops/unsqueeze.h"
#include "ember/ops/where.h"
#include "ember/ops/zeros.h"
#include "ember/tensor.h"

namespace ember::native {
namespace {

Tensor double_scalar(double v, const Tensor& like) {
  return ember::full({}, Scalar(v), ScalarType::Float64, like.device());
}

double epsilon_of(ScalarType t) {
  return t == ScalarType::Float64 ? std::numeric_limits<double>::epsilon() : std::numeric_limits<float>::epsilon();
}

DimVector batch_of(const Tensor& A) { return DimVector(A.sizes().begin(), A.sizes().end() - 2); }

// atol defaults to 0; rtol to eps * max(m, n) when not given, or 0 where atol > 0 (undefined: not given).
std::tuple<Tensor, Tensor> tolerances(const Tensor& A, const Tensor& atol, const Tensor& rtol) {
  Tensor a = atol.defined() ? atol : double_scalar(0.0, A);
  if (rtol.defined()) return {a, rtol};
  Tensor fallback = double_scalar(epsilon_of(A.dtype()) * (double)std::max(A.size(-1), A.size(-2)), A);
  if (!atol.defined()) return {a, fallback};
  return {a, ember::where(ember::gt(atol, double_scalar(0.0, A)), double_scalar(0.0, A), fallback)};
}

std::tuple<Tensor, Tensor> float_tolerances(const Tensor& A, std::optional<double> atol, std::optional<double> rtol) {
  const double a = atol.value_or(0.0);
  const double r = rtol ? *rtol : (a > 0 ? 0.0 : epsilon_of(A.dtype()) * (double)std::max(A.size(-1), A.size(-2)));
  return {double_scalar(a, A), double_scalar(r, A)};
}

// Singular values (or |eigenvalues|) above this count: max(atol, rtol * the largest), per matrix.
Tensor cutoff(const Tensor& largest, const Tensor& atol, const Tensor& rtol) {
  return ember::maximum(ember::unsqueeze(atol, -1), ember::mul(ember::unsqueeze(rtol, -1), largest));
}

Tensor matrix_norm_of(const Tensor& A, const Scalar& ord) { return ember::linalg_matrix_norm(A, ord); }
Tensor matrix_norm_of(const Tensor& A, const std::string& ord) { return ember::linalg_matrix_norm_str_ord(A, ord); }

void check_matrix(const Tensor& A, const char* message_prefix) {
  EMBER_CHECK(A.dim() >= 2, Runtime, message_prefix, " must have at least 2 dimensions.");
}

std::string ord_str(const Scalar& s) {
  const double v = s.to_double();
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (v == std::floor(v) && std::abs(v) < 1e15) return str((int64_t)v);
  return str(v);
}

// norm(A) * norm(A^-1) of square matrices; a singular one (info > 0) gives inf, as NumPy.
template <typename Ord>
Tensor cond_through_inverse(const Tensor& A, const Ord& ord, const std::string& ord_text) {
  check_lapack_input(A, ("linalg.cond(ord=" + ord_text + ")").c_str(), nullptr);
  auto [inverse, info] = ember::linalg_inv_ex(A, false);
  Tensor singular = ember::unsqueeze(ember::unsqueeze(ember::gt(info, double_scalar(0.0, info)), -1), -1);
  inverse = ember::masked_fill_Scalar(inverse, singular, Scalar(INFINITY));
  Tensor r = ember::mul(matrix_norm_of(A, ord), matrix_norm_of(inverse, ord));
  return ember::nan_to_num(r, INFINITY, INFINITY, -INFINITY);
}

}  // namespace

// ---------------------------------------------------------------- matrix_rank
Tensor linalg_matrix_rank_atol_rtol_tensor(const Tensor& input, const Tensor& atol, const Tensor& rtol,
                                           bool hermitian) {
  check_matrix(input, "torch.linalg.matrix_rank: The input tensor input");
  auto [a, r] = tolerances(input, atol, rtol);
  if (input.numel() == 0) return ember::zeros(batch_of(input), ScalarType::Int64, input.device());
  Tensor S, largest;
  if (!hermitian) {
    S = ember::linalg_svdvals(input);
    largest = ember::narrow(S, -1, 0, 1);  // descending
  } else {
    S = ember::abs(ember::linalg_eigvalsh(input, "L"));
    largest = ember::amax(S, IntList{-1}, true);
  }
  return ember::sum(ember::gt(S, cutoff(largest, a, r)), IntList{-1}, false);
}

Tensor linalg_matrix_rank_atol_rtol_float(const Tensor& self, std::optional<double> atol, std::optional<double> rtol,
                                          bool hermitian) {
  check_matrix(self, "torch.linalg.matrix_rank: The input tensor input");
  auto [a, r] = float_tolerances(self, atol, rtol);
  return ember::linalg_matrix_rank_atol_rtol_tensor(self, a, r, hermitian);
}

Tensor linalg_matrix_rank(const Tensor& self, double tol, bool hermitian) {
  return ember::linalg_matrix_rank_atol_rtol_float(self, tol, 0.0, hermitian);
}

Tensor linalg_matrix_rank_tol_tensor(const Tensor& input, const Tensor& tol, bool hermitian) {
  return ember::linalg_matrix_rank_atol_rtol_tensor(input, tol, ember::zeros({}, ScalarType::Float64, input.device()),
                                                    hermitian);
}

// ---------------------------------------------------------------- pinv
Tensor linalg_pinv_atol_rtol_tensor(const Tensor& self, const Tensor& atol, const Tensor& rtol, bool hermitian) {
  EMBER_CHECK(self.dim() >= 2 && (self.dtype() == ScalarType::Float32 || self.dtype() == ScalarType::Float64), Runtime,
              "linalg.pinv(", dtype_title(self.dtype()), "{", self.sizes(),
              "}): expected a tensor with 2 or more dimensions of float, double, cfloat or cdouble types");
  if (self.numel() == 0) {
    DimVector shape = batch_of(self);
    shape.push_back(self.size(-1));
    shape.push_back(self.size(-2));
    return ember::zeros(shape, self.dtype(), self.device());
  }
  auto [a, r] = tolerances(self, atol, rtol);
  Tensor U, S, Vh, S_abs, largest;
  if (!hermitian) {
    std::tie(U, S, Vh) = ember::linalg_svd(self, false);
    S_abs = S;
    largest = ember::narrow(S, -1, 0, 1);
  } else {
    std::tie(S, U) = ember::linalg_eigh(self, "L");
    Vh = ember::transpose(U, -2, -1);
    S_abs = ember::abs(S);
    largest = ember::amax(S_abs, IntList{-1}, true);
  }
  Tensor kept = ember::gt(S_abs, cutoff(largest, a, r));
  // 1/S where kept, 0 elsewhere; the dropped ones never reach reciprocal (their gradient would be 0 * inf).
  Tensor one = ember::full({}, Scalar(1.0), S.dtype(), S.device());
  Tensor zero = ember::zeros({}, S.dtype(), S.device());
  Tensor inv_S = ember::to_dtype(ember::where(kept, ember::reciprocal(ember::where(kept, S, one)), zero), self.dtype());
  // V diag(1/S) U^T
  Tensor V_scaled = ember::mul(ember::transpose(Vh, -2, -1), ember::unsqueeze(inv_S, -2));
  return ember::matmul(V_scaled, ember::transpose(U, -2, -1));
}

Tensor linalg_pinv_atol_rtol_float(const Tensor& self, std::optional<double> atol, std::optional<double> rtol,
                                   bool hermitian) {
  auto [a, r] = float_tolerances(self, atol, rtol);
  return ember::linalg_pinv_atol_rtol_tensor(self, a, r, hermitian);
}

Tensor linalg_pinv(const Tensor& self, double rcond, bool hermitian) {
  return ember::linalg_pinv_atol_rtol_float(self, 0.0, rcond, hermitian);
}

Tensor linalg_pinv_rcond_tensor(const Tensor& self, const Tensor& rcond, bool hermitian) {
  return ember::linalg_pinv_atol_rtol_tensor(self, ember::zeros({}, rcond.dtype(), rcond.device()), rcond, hermitian);
}

Tensor pinverse(const Tensor& self, double rcond) { return ember::linalg_pinv(self, rcond, false); }

// ---------------------------------------------------------------- cond
Tensor linalg_cond(const Tensor& self, const std::optional<Scalar>& p) {
  EMBER_CHECK(self.dim() >= 2, Runtime, "linalg.cond: The input tensor must have at least 2 dimensions.");
  const Scalar ord = p.value_or(Scalar(int64_t(2)));
  const double o = ord.to_double();
  EMBER_CHECK(std::abs(o) == 2 || std::abs(o) == 1 || std::isinf(o), Runtime,
              "linalg.cond got an invalid norm type: ", ord_str(ord));
  if (self.numel() == 0) {
    check_lapack_input(self, "linalg.cond", nullptr, false);
    return ember::zeros(batch_of(self), self.dtype(), self.device());
  }
  if (std::abs(o) == 2) {
    Tensor S = ember::linalg_svdvals(self);
    Tensor s_max = ember::narrow(S, -1, 0, 1), s_min = ember::narrow(S, -1, S.size(-1) - 1, 1);
    Tensor r = o < 0 ? ember::div(s_min, s_max) : ember::div(s_max, s_min);
    return ember::squeeze(r, -1);
  }
  return cond_through_inverse(self, ord, ord_str(ord));
}

Tensor linalg_cond_p_str(const Tensor& self, const std::string& p) {
  EMBER_CHECK(self.dim() >= 2, Runtime, "linalg.cond: The input tensor must have at least 2 dimensions.");
  // PyTorch checks the shape before the name here.
  if (self.numel() != 0) check_lapack_input(self, ("linalg.cond(ord=" + p + ")").c_str(), nullptr);
  EMBER_CHECK(p == "fro" || p == "nuc", Runtime, "linalg.cond got an invalid norm type: ", p);
  if (self.numel() == 0) {
    check_lapack_input(self, "linalg.cond", nullptr, false);
    return ember::zeros(batch_of(self), self.dtype(), self.device());
  }
  return cond_through_inverse(self, p, p);
}

// ---------------------------------------------------------------- matrix_power
Tensor linalg_matrix_power(const Tensor& A, int64_t n) {
  EMBER_CHECK(A.dim() >= 2, Runtime, "linalg.matrix_power: The input tensor A must have at least 2 dimensions.");
  EMBER_CHECK(A.size(-1) == A.size(-2), Runtime,
              "linalg.matrix_power: A must be batches of square matrices, but they are ", A.size(-2), " by ",
              A.size(-1), " matrices");
  if (n == 0) {
    Tensor I = ember::eye(A.size(-1), std::nullopt, A.dtype(), A.device());
    return ember::clone(ember::expand(I, A.sizes()));
  }
  Tensor base = n < 0 ? ember::linalg_inv(A) : A;
  uint64_t k = n < 0 ? -(uint64_t)n : (uint64_t)n;
  if (k == 1) return n < 0 ? base : ember::clone(A);
  // Repeated squaring: result collects base^(2^i) for the set bits of k.
  Tensor result;
  while (true) {
    if (k & 1) result = result.defined() ? ember::matmul(result, base) : base;
    k >>= 1;
    if (!k) break;
    base = ember::matmul(base, base);
  }
  return result;
}

Tensor matrix_power(const Tensor& self, int64_t n) { return ember::linalg_matrix_power(self, n); }

// ---------------------------------------------------------------- lstsq
std::tuple<Tensor, Tensor, Tensor, Tensor> linalg_lstsq(const Tensor& self, const Tensor& b,
                                                        std::optional<double> rcond,
                                                        const std::optional<std::string>& driver) {
  EMBER_CHECK(self.dim() >= 2, Runtime, "torch.linalg.lstsq: input must have at least 2 dimensions.");
  EMBER_CHECK(b.dim() >= 1, Runtime, "torch.linalg.lstsq: other must have at least 1 dimension.");
  EMBER_CHECK(self.dtype() == b.dtype(), Runtime,
              "torch.linalg.lstsq: Expected input and other to have the same dtype, but got input's dtype ",
              dtype_title(self.dtype()), " and other's dtype ", dtype_title(b.dtype()));
  EMBER_CHECK(self.dim() >= b.dim() && self.dim() - b.dim() <= 1, Runtime,
              "torch.linalg.lstsq: input.dim() must be greater or equal to other.dim() and (input.dim() - other.dim()) "
              "<= 1");
  const std::string how = driver.value_or("gelsy");
  EMBER_CHECK(how == "gels" || how == "gelsy" || how == "gelsd" || how == "gelss", Runtime,
              "torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)");
  const bool vector = b.dim() == self.dim() - 1;
  const Tensor B = vector ? ember::unsqueeze(b, -1) : b;
  EMBER_CHECK(self.size(-2) == B.size(-2), Runtime, "torch.linalg.lstsq: input.size(-2) should match other.size(",
              vector ? -1 : -2, ")");
  check_lapack_input(self, "linalg.svd", "linalg_svd_cpu", false);
  const int64_t m = self.size(-2), n = self.size(-1);
  const double cut = rcond.value_or(epsilon_of(self.dtype()) * (double)std::max(m, n));
  // X = V diag(1/S) U^T B over the singular values above cut * the largest.
  auto [U, S, Vh] = ember::linalg_svd(self, false);
  Tensor kept = S.size(-1) ? ember::gt(S, ember::mul(ember::narrow(S, -1, 0, 1), double_scalar(cut, S)))
                           : ember::gt(S, double_scalar(0.0, S));
  Tensor one = ember::full({}, Scalar(1.0), S.dtype(), S.device()), zero = ember::zeros({}, S.dtype(), S.device());
  Tensor inv_S = ember::where(kept, ember::reciprocal(ember::where(kept, S, one)), zero);
  Tensor X = ember::matmul(ember::transpose(Vh, -2, -1),
                           ember::mul(ember::unsqueeze(inv_S, -1), ember::matmul(ember::transpose(U, -2, -1), B)));
  Tensor rank = ember::sum(kept, IntList{-1}, false);
  Tensor none = ember::empty({0}, self.dtype(), self.device());
  Tensor residuals = none;
  // torch's drivers other than gelsy return the squared residuals of full-rank overdetermined systems.
  const bool full_rank =
      ember::all(ember::eq(rank, ember::full({}, Scalar(n), ScalarType::Int64, rank.device()))).item().to<bool>();
  if (how != "gelsy" && m > n && full_rank) {
    Tensor r = ember::sub(ember::matmul(self, X), B);
    residuals = ember::sum(ember::mul(r, r), IntList{-2}, false);
  }
  if (vector) X = ember::squeeze(X, -1);
  return {X, residuals, how == "gels" ? ember::empty({0}, ScalarType::Int64, self.device()) : rank,
          how == "gelsd" || how == "gelss" ? S : none};
}

}  // namespace ember::native
