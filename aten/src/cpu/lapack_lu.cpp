// LU and QR factors as LAPACK leaves them (getrf, geqrf), the permutation of getrf's pivots, and
// triangular solves (BLAS trsm), on the CPU in float32/float64, batches split over ember's threads
// (lapack_support.h). Messages and error classes as PyTorch's.
#include <cblas.h>

#include <algorithm>
#include <numeric>
#include <tuple>
#include <vector>

#include "ember/dtype.h"
#include "ember/errors.h"
#include "ember/lapack_checks.h"
#include "ember/ops/_geqrf_backward.h"
#include "ember/ops/_lu_permutation.h"
#include "ember/ops/contiguous.h"
#include "ember/ops/copy_.h"
#include "ember/ops/expand.h"
#include "ember/ops/geqrf.h"
#include "ember/ops/linalg_lu_factor_ex.h"
#include "ember/ops/linalg_solve_triangular.h"
#include "ember/ops/to.h"
#include "ember/ops/zeros.h"
#include "ember/tensor.h"
#include "lapack_support.h"

namespace ember::cpu {
namespace {

// float32/float64 only: others raise PyTorch's NotImplementedError naming its kernel ("lu_cpu").
void check_lapack_dtype(ScalarType t, const char* kernel) {
  if (t != ScalarType::Float32 && t != ScalarType::Float64) fail_dtype_not_implemented(kernel, t);
}

// The (*, m, n) matrices of A copied column-major for LAPACK to factor in place.
struct Factoring {
  int64_t m, n, k;
  DimVector batch_dims;
  int64_t batch;
  Tensor work;

  Factoring(const Tensor& A, const char* op)
      : m(A.size(-2)), n(A.size(-1)), k(std::min(m, n)), batch_dims(batch_shape(A)), batch(product(batch_dims)) {
    check_lapack_int(m * n, op);
    work = column_major_copy(A);
  }
  // A fresh (*, k) tensor: one value per pivot or reflector of each matrix.
  Tensor per_step(ScalarType dtype) const {
    DimVector shape = batch_dims;
    shape.push_back(k);
    return empty_tensor(shape, dtype, work.device());
  }
};

}  // namespace

std::tuple<Tensor, Tensor, Tensor> linalg_lu_factor_ex_cpu(const Tensor& A, bool pivot, bool check_errors) {
  EMBER_CHECK(A.dim() >= 2, Runtime, "torch.lu_factor: Expected tensor with 2 or more dimensions. Got size: ",
              shape_str(A.sizes()), " instead");
  check_lapack_dtype(A.dtype(), "lu_cpu");
  EMBER_CHECK(pivot, Runtime, "linalg.lu_factor: LU without pivoting is not implemented on the CPU");
  Factoring f(A, "linalg.lu_factor_ex");
  const int64_t m = f.m, n = f.n, k = f.k, batch = f.batch;
  Tensor work = f.work, pivots = f.per_step(ScalarType::Int32), info = int_zeros(f.batch_dims);
  if (work.numel() > 0) {
    dispatch_float(A.dtype(), [&]<typename T>() {
      T* base = work.data<T>();
      int32_t* piv = pivots.data<int32_t>();
      int32_t* infos = info.data<int32_t>();
      for_each_matrix(batch, std::max(m, n), [&](int64_t lo, int64_t hi) {
        for (int64_t b = lo; b < hi; ++b) getrf<T>((int)m, (int)n, base + b * m * n, piv + b * k, infos + b);
      });
    });
  }
  if (check_errors) raise_lapack_failure(info, A.dim() > 2, "torch.linalg.lu_factor_ex", LapackFailure::ZeroPivot);
  return {from_column_major(work), pivots, info};
}

// P with A = P L U: getrf swapped row i with row pivots[i] - 1, in order, so row i of P^T A is
// row perm[i] of A.
Tensor lu_permutation_cpu(const Tensor& LU_data, const Tensor& LU_pivots) {
  EMBER_CHECK(LU_pivots.dtype() == ScalarType::Int32 && LU_pivots.is_contiguous(), Runtime,
              "torch.lu_unpack: LU_pivots is expected to be a contiguous tensor of torch.int32 dtype.\n"
              "Note: this function is intended to be used with the output produced by torch.linalg.lu_factor");
  const int64_t m = LU_data.size(-2), k = std::min(m, LU_data.size(-1));
  EMBER_CHECK(LU_pivots.dim() >= 1 && LU_pivots.size(-1) == k, Runtime,
              "torch.lu_unpack: LU_pivots.size(-1) must be equal to min(LU_data.size(-2), LU_data.size(-1))");
  const int32_t* piv = LU_pivots.data<int32_t>();
  for (int64_t i = 0; i < LU_pivots.numel(); ++i)
    EMBER_CHECK(piv[i] >= 1 && piv[i] <= m, Runtime, "pivots passed to lu_unpack must be between 1 and LU.size(-2) "
                "inclusive.Did you properly pass the result of lu_factor?");
  DimVector batch_dims(LU_pivots.sizes().begin(), LU_pivots.sizes().end() - 1);
  const int64_t batch = product(batch_dims);
  Tensor P = ember::zeros(with_matrix(batch_dims, m, m), LU_data.dtype(), LU_data.device());
  if (P.numel() == 0) return P;
  visit_dtype(LU_data.dtype(), [&]<typename T>() {
    T* out = P.data<T>();
    parallel_for(batch, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, m * m)), [&](int64_t lo, int64_t hi) {
      std::vector<int64_t> perm(m);
      for (int64_t b = lo; b < hi; ++b) {
        std::iota(perm.begin(), perm.end(), 0);
        for (int64_t i = 0; i < k; ++i) std::swap(perm[i], perm[piv[b * k + i] - 1]);
        for (int64_t i = 0; i < m; ++i) out[b * m * m + perm[i] * m + i] = T(1);
      }
    });
  });
  return P;
}

std::tuple<Tensor, Tensor> geqrf_cpu(const Tensor& self) {
  EMBER_CHECK(self.dim() >= 2, Runtime, "torch.geqrf: input must have at least 2 dimensions.");
  check_lapack_dtype(self.dtype(), "geqrf_cpu");
  Factoring f(self, "geqrf");
  const int64_t m = f.m, n = f.n, k = f.k, batch = f.batch;
  Tensor work = f.work, tau = f.per_step(self.dtype());
  if (k > 0) {
    dispatch_float(self.dtype(), [&]<typename T>() {
      T* base = work.data<T>();
      T* taus = tau.data<T>();
      T query = 0;
      int qinfo = 0;
      geqrf_raw<T>((int)m, (int)n, nullptr, nullptr, &query, -1, &qinfo);
      const int lwork = std::max<int>(1, (int)query);
      for_each_matrix(batch, std::max(m, n), [&](int64_t lo, int64_t hi) {
        std::vector<T> scratch(lwork);
        for (int64_t b = lo; b < hi; ++b) {
          int status = 0;
          geqrf_raw<T>((int)m, (int)n, base + b * m * n, taus + b * k, scratch.data(), lwork, &status);
        }
      });
    });
  }
  return {from_column_major(work), tau};
}

// geqrf's derivative, which PyTorch does not define (a kernel: no second derivative to ask for).
Tensor geqrf_backward_cpu(const Tensor& grad) {
  (void)grad;
  EMBER_FAIL(NotImplemented, "the derivative for 'geqrf' is not implemented.");
}

namespace {

template <typename T>
void trsm(bool left, bool upper, bool unit, int64_t rows, int64_t cols, const T* a, int64_t n, T* x) {
  const CBLAS_SIDE side = left ? CblasLeft : CblasRight;
  const CBLAS_UPLO uplo = upper ? CblasUpper : CblasLower;
  const CBLAS_DIAG diag = unit ? CblasUnit : CblasNonUnit;
  if constexpr (std::is_same_v<T, float>)
    scipy_cblas_strsm(CblasRowMajor, side, uplo, CblasNoTrans, diag, (blasint)rows, (blasint)cols, 1.0f, a,
                      (blasint)n, x, (blasint)cols);
  else
    scipy_cblas_dtrsm(CblasRowMajor, side, uplo, CblasNoTrans, diag, (blasint)rows, (blasint)cols, 1.0, a,
                      (blasint)n, x, (blasint)cols);
}

}  // namespace

Tensor linalg_solve_triangular_cpu(const Tensor& self, const Tensor& B, bool upper, bool left, bool unitriangular) {
  EMBER_CHECK(self.dim() >= 2, Runtime, "linalg.solve_triangular: The input tensor A must have at least 2 dimensions.");
  EMBER_CHECK(B.dim() >= 2, Runtime, "linalg.solve_triangular: The input tensor B must have at least 2 dimensions.");
  const ScalarType t = promote_types(self.dtype(), B.dtype());
  check_lapack_dtype(t, "triangular_solve_cpu");
  const int64_t n = self.size(-1);
  EMBER_CHECK(self.size(-2) == n, Runtime, "linalg.solve_triangular: A must be batches of square matrices, but they are ",
              self.size(-2), " by ", n, " matrices");
  EMBER_CHECK((left ? B.size(-2) : B.size(-1)) == n, Runtime,
              "linalg.solve_triangular: Incompatible shapes of A and B for the equation ", left ? "AX = B" : "XA = B",
              " (", n, "x", n, " and ", B.size(-2), "x", B.size(-1), ")");
  const int64_t rows = B.size(-2), cols = B.size(-1);
  check_lapack_int(std::max(rows, cols) * n, "linalg.solve_triangular");
  const DimVector batch_dims = broadcast_shapes(batch_shape(self), batch_shape(B), "linalg.solve_triangular");
  const int64_t batch = product(batch_dims);
  // Row-major copies: X is overwritten with the solution, A read in place of each batch entry.
  Tensor X = empty_tensor(with_matrix(batch_dims, rows, cols), t, B.device());
  if (X.numel() > 0) ember::copy_(X, ember::expand(B, with_matrix(batch_dims, rows, cols)), false);
  if (X.numel() == 0 || n == 0) return X;
  const Tensor A = ember::contiguous(ember::expand(ember::to_dtype(self, t), with_matrix(batch_dims, n, n)));
  dispatch_float(t, [&]<typename T>() {
    const T* a = A.data<T>();
    T* x = X.data<T>();
    for_each_matrix(batch, n, [&](int64_t lo, int64_t hi) {
      for (int64_t b = lo; b < hi; ++b) trsm<T>(left, upper, unitriangular, rows, cols, a + b * n * n, n, x + b * rows * cols);
    });
  });
  return X;
}

}  // namespace ember::cpu
