// LAPACK decompositions on the CPU through scipy-openblas32 (every symbol carries a scipy_
// prefix, integers are 32-bit), float32 and float64. Each matrix is copied column-major (as
// LAPACK reads it) into a work buffer of [batch, cols, rows]; a batch is split over ember's
// OpenMP threads, with OpenBLAS itself single-threaded as for the BLAS ops (linalg.cpp).
#include <cblas.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cctype>
#include <cstring>
#include <limits>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "ember/blas.h"
#include "ember/dtype.h"
#include "ember/errors.h"
#include "ember/lapack_checks.h"
#include "ember/ops/_linalg_eigh_packed.h"
#include "ember/ops/_linalg_qr_packed.h"
#include "ember/ops/_linalg_slogdet_packed.h"
#include "ember/ops/_linalg_solve.h"
#include "ember/ops/_linalg_svd_packed.h"
#include "ember/ops/expand.h"
#include "ember/ops/linalg_cholesky_ex.h"
#include "ember/ops/linalg_det.h"
#include "ember/ops/linalg_inv_ex.h"
#include "ember/ops/zeros.h"
#include "ember/parallel.h"
#include "ember/tensor.h"
#include "lapack_support.h"

namespace ember {

namespace {

const char* half_name(ScalarType t) { return dtype_title(t); }

std::string batch_prefix(bool batched, int64_t b) {
  return batched ? str("(Batch element ", b, "): ") : std::string();
}

}  // namespace

void check_lapack_input(const Tensor& A, const char* op, const char* half_kernel, bool square) {
  EMBER_CHECK(A.dim() >= 2, Runtime, op, ": The input tensor A must have at least 2 dimensions.");
  const ScalarType t = A.dtype();
  if (t == ScalarType::Float16 || t == ScalarType::BFloat16) {
    if (half_kernel) fail_dtype_not_implemented(half_kernel, t);
    EMBER_FAIL(Runtime, op, ": Low precision dtypes not supported. Got ", half_name(t));
  }
  EMBER_CHECK(t == ScalarType::Float32 || t == ScalarType::Float64, Runtime, op,
              ": Expected a floating point or complex tensor as input. Got ", dtype_title(t));
  EMBER_CHECK(!square || A.size(-1) == A.size(-2), Runtime, op,
              ": A must be batches of square matrices, but they are ", A.size(-2), " by ", A.size(-1), " matrices");
}

void raise_lapack_failure(const Tensor& info, bool batched, const char* op, LapackFailure what) {
  const int32_t* p = info.data<int32_t>();  // info is always a fresh contiguous tensor
  for (int64_t b = 0; b < info.numel(); ++b) {
    const int32_t i = p[b];
    if (i == 0) continue;
    if (what == LapackFailure::ZeroPivot)
      EMBER_FAIL(Runtime, op, ": ", batch_prefix(batched, b), "U[", i, ",", i, "] is zero and using it on lu_solve "
                 "would result in a division by zero. If you still want to perform the factorization, consider "
                 "calling linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)");
    if (what == LapackFailure::Singular)
      EMBER_FAIL(LinAlg, op, ": ", batch_prefix(batched, b), "The diagonal element ", i,
                 " is zero, the inversion could not be completed because the input matrix is singular.");
    EMBER_FAIL(LinAlg, op, ": ", batch_prefix(batched, b),
               "The factorization could not be completed because the input is not positive-definite (the leading "
               "minor of order ", i, " is not positive-definite).");
  }
}

namespace cpu {

std::tuple<Tensor, Tensor> linalg_inv_ex_cpu(const Tensor& A, bool check_errors) {
  check_lapack_input(A, "linalg.inv_ex", nullptr);
  const int64_t n = A.size(-1);
  check_lapack_int(n, "linalg.inv_ex");
  const DimVector batch_dims = batch_shape(A);
  const int64_t batch = product(batch_dims);
  Tensor work = column_major_copy(A);
  Tensor info = int_zeros(batch_dims);
  if (work.numel() == 0) return {from_column_major(work), info};
  dispatch_float(A.dtype(), [&]<typename T>() {
    T* base = work.data<T>();
    int32_t* infos = info.data<int32_t>();
    T query = 0;
    int qinfo = 0;
    getri<T>((int)n, nullptr, nullptr, &query, -1, &qinfo);
    const int lwork = std::max<int>(1, (int)query);
    for_each_matrix(batch, n, [&](int64_t lo, int64_t hi) {
      std::vector<int> ipiv(n);
      std::vector<T> scratch(lwork);
      for (int64_t b = lo; b < hi; ++b) {
        T* a = base + b * n * n;
        int status = 0;
        getrf<T>((int)n, a, ipiv.data(), &status);
        infos[b] = status;
        if (status == 0) {
          getri<T>((int)n, a, ipiv.data(), scratch.data(), lwork, &status);
        } else {
          // Singular: solve against the identity anyway, as PyTorch does (infs and nans).
          std::vector<T> lu(a, a + n * n);
          std::fill(a, a + n * n, T(0));
          for (int64_t i = 0; i < n; ++i) a[i * n + i] = T(1);
          getrs<T>((int)n, (int)n, lu.data(), ipiv.data(), a, &status);
        }
      }
    });
  });
  if (check_errors) raise_lapack_failure(info, A.dim() > 2, "linalg.inv_ex", LapackFailure::Singular);
  return {from_column_major(work), info};
}

// A (…, n, n) and B (…, n, k) with broadcast batch dims; the vector and left=False forms are
// linalg_solve's (composite) business.
Tensor linalg_solve_cpu(const Tensor& A, const Tensor& B) {
  check_lapack_input(A, "linalg.solve", "lu_cpu");
  EMBER_CHECK(B.dim() >= 2, Runtime, "linalg.solve: The input tensor B must have at least 2 dimensions.");
  EMBER_CHECK(A.dtype() == B.dtype(), Runtime, "linalg.solve: Expected A and B to have the same dtype, but found A of type ",
              dtype_title(A.dtype()), " and B of type ", dtype_title(B.dtype()), " instead");
  const int64_t n = A.size(-1), k = B.size(-1);
  EMBER_CHECK(B.size(-2) == n, Runtime, "linalg.solve: Incompatible shapes of A and B for the equation AX = B (", n, "x",
              n, " and ", B.size(-2), "x", k, ")");
  check_lapack_int(n, "linalg.solve");
  check_lapack_int(k, "linalg.solve");
  const DimVector batch_dims = broadcast_shapes(batch_shape(A), batch_shape(B), "linalg.solve");
  const int64_t batch = product(batch_dims);
  Tensor lu = column_major_copy(ember::expand(A, with_matrix(batch_dims, n, n)));
  Tensor x = column_major_copy(ember::expand(B, with_matrix(batch_dims, n, k)));
  if (x.numel() == 0 || n == 0) return from_column_major(x);
  Tensor info = int_zeros(batch_dims);
  dispatch_float(A.dtype(), [&]<typename T>() {
    T* pa = lu.data<T>();
    T* px = x.data<T>();
    int32_t* infos = info.data<int32_t>();
    for_each_matrix(batch, n, [&](int64_t lo, int64_t hi) {
      std::vector<int> ipiv(n);
      for (int64_t b = lo; b < hi; ++b) {
        int status = 0;
        getrf<T>((int)n, pa + b * n * n, ipiv.data(), &status);
        infos[b] = status;
        if (status == 0) getrs<T>((int)n, (int)k, pa + b * n * n, ipiv.data(), px + b * n * k, &status);
      }
    });
  });
  const int32_t* p = info.data<int32_t>();
  for (int64_t b = 0; b < batch; ++b)
    EMBER_CHECK(p[b] == 0, LinAlg, "torch.linalg.solve: ", batch_prefix(batch_dims.size() > 0, b),
                "The solver failed because the input matrix is singular.");
  return from_column_major(x);
}

std::tuple<Tensor, Tensor> linalg_cholesky_ex_cpu(const Tensor& A, bool upper, bool check_errors) {
  check_lapack_input(A, "linalg.cholesky_ex", "cholesky_cpu");
  const int64_t n = A.size(-1);
  check_lapack_int(n, "linalg.cholesky_ex");
  const DimVector batch_dims = batch_shape(A);
  const int64_t batch = product(batch_dims);
  Tensor work = column_major_copy(A);
  Tensor info = int_zeros(batch_dims);
  if (work.numel() == 0) return {from_column_major(work), info};
  dispatch_float(A.dtype(), [&]<typename T>() {
    T* base = work.data<T>();
    int32_t* infos = info.data<int32_t>();
    for_each_matrix(batch, n, [&](int64_t lo, int64_t hi) {
      for (int64_t b = lo; b < hi; ++b) {
        T* a = base + b * n * n;
        int status = 0;
        potrf<T>(upper ? 'U' : 'L', (int)n, a, &status);
        infos[b] = status;
        // Column-major: a[j * n + i] is (i, j). Zero the triangle LAPACK leaves untouched.
        for (int64_t j = 0; j < n; ++j)
          for (int64_t i = 0; i < n; ++i)
            if (upper ? i > j : i < j) a[j * n + i] = T(0);
      }
    });
  });
  if (check_errors) raise_lapack_failure(info, A.dim() > 2, "linalg.cholesky_ex", LapackFailure::NotPositiveDefinite);
  return {from_column_major(work), info};
}

namespace {

// Factors each matrix of A (LU with partial pivoting, on a column-major copy) and calls
// visit(b, lu, ipiv, n) for matrix b; ipiv is LAPACK's (1-based).
template <typename T, typename F>
void for_each_lu(const Tensor& A, F&& visit) {
  const int64_t n = A.size(-1);
  const int64_t batch = product(batch_shape(A));
  Tensor work = column_major_copy(A);
  T* base = work.data<T>();
  for_each_matrix(batch, n, [&](int64_t lo, int64_t hi) {
    std::vector<int> ipiv(std::max<int64_t>(n, 1));
    for (int64_t b = lo; b < hi; ++b) {
      T* a = base + b * n * n;
      int status = 0;
      if (n > 0) getrf<T>((int)n, a, ipiv.data(), &status);
      visit(b, (const T*)a, (const int*)ipiv.data(), n);
    }
  });
}

}  // namespace

Tensor linalg_det_cpu(const Tensor& A) {
  check_lapack_input(A, "linalg.det", "lu_cpu");
  check_lapack_int(A.size(-1), "linalg.det");
  Tensor out = empty_tensor(batch_shape(A), A.dtype(), A.device());
  if (out.numel() == 0) return out;
  dispatch_float(A.dtype(), [&]<typename T>() {
    T* det = out.data<T>();
    // The product of the pivots, each row swap flipping the sign (a zero pivot gives 0).
    for_each_lu<T>(A, [&](int64_t b, const T* lu, const int* ipiv, int64_t n) {
      T d = 1;
      for (int64_t i = 0; i < n; ++i) d *= (ipiv[i] != i + 1) ? -lu[i * n + i] : lu[i * n + i];
      det[b] = d;
    });
  });
  return out;
}

Tensor linalg_slogdet_cpu(const Tensor& A) {
  check_lapack_input(A, "linalg.slogdet", nullptr);
  check_lapack_int(A.size(-1), "linalg.slogdet");
  DimVector shape = batch_shape(A);
  shape.push_back(2);
  Tensor out = empty_tensor(shape, A.dtype(), A.device());
  if (out.numel() == 0) return out;
  dispatch_float(A.dtype(), [&]<typename T>() {
    T* p = out.data<T>();
    for_each_lu<T>(A, [&](int64_t b, const T* lu, const int* ipiv, int64_t n) {
      T sign = 1, logabs = 0;
      for (int64_t i = 0; i < n; ++i) {
        const T d = lu[i * n + i];
        if ((ipiv[i] != i + 1) != (d < 0)) sign = -sign;
        logabs += std::log(std::abs(d));
      }
      if (logabs == -std::numeric_limits<T>::infinity()) sign = 0;  // a zero pivot: singular
      p[2 * b] = sign;
      p[2 * b + 1] = logabs;
    });
  });
  return out;
}

namespace {

// Workspace sizes from LAPACK's own query (lwork = -1).
template <typename T>
int queried(T size) { return std::max<int>(1, (int)size); }

void check_convergence(const Tensor& info, bool batched, const char* op, const char* what) {
  const int32_t* p = info.data<int32_t>();
  for (int64_t b = 0; b < info.numel(); ++b)
    EMBER_CHECK(p[b] == 0, LinAlg, op, ": ", batch_prefix(batched, b),
                "The algorithm failed to converge because the input matrix is ill-conditioned or has too many repeated ",
                what, " (error code: ", p[b], ").");
}

}  // namespace

Tensor linalg_eigh_cpu(const Tensor& A, const std::string& UPLO, bool compute_v) {
  EMBER_CHECK(UPLO == "L" || UPLO == "U" || UPLO == "l" || UPLO == "u", Runtime,
              "Expected UPLO argument to be 'L' or 'U', but got ", UPLO);
  if (A.dim() >= 2 && A.dtype() != ScalarType::Float32 && A.dtype() != ScalarType::Float64)
    fail_dtype_not_implemented("linalg_eigh_cpu", A.dtype());
  check_lapack_input(A, "linalg.eigh", "linalg_eigh_cpu");
  const int64_t n = A.size(-1);
  check_lapack_int(n, "linalg.eigh");
  const DimVector batch_dims = batch_shape(A);
  const int64_t batch = product(batch_dims), rows = 1 + (compute_v ? n : 0);
  Tensor out = empty_tensor(with_matrix(batch_dims, rows, n), A.dtype(), A.device());
  if (out.numel() == 0) return out;
  Tensor work = column_major_copy(A);
  Tensor info = int_zeros(batch_dims);
  const char jobz = compute_v ? 'V' : 'N', uplo = (char)std::toupper(UPLO[0]);
  dispatch_float(A.dtype(), [&]<typename T>() {
    T* base = work.data<T>();
    T* dst = out.data<T>();
    int32_t* infos = info.data<int32_t>();
    T lwork_query = 0;
    int liwork_query = 0, qinfo = 0;
    syevd<T>(jobz, uplo, (int)n, nullptr, nullptr, &lwork_query, -1, &liwork_query, -1, &qinfo);
    const int lwork = queried(lwork_query), liwork = std::max(1, liwork_query);
    for_each_matrix(batch, n, [&](int64_t lo, int64_t hi) {
      std::vector<T> scratch(lwork);
      std::vector<int> iscratch(liwork);
      for (int64_t b = lo; b < hi; ++b) {
        T* a = base + b * n * n;
        T* o = dst + b * rows * n;
        int status = 0;
        syevd<T>(jobz, uplo, (int)n, a, o, scratch.data(), lwork, iscratch.data(), liwork, &status);
        infos[b] = status;
        if (compute_v)  // column-major eigenvectors become row-major rows 1..n
          for (int64_t i = 0; i < n; ++i)
            for (int64_t j = 0; j < n; ++j) o[(1 + i) * n + j] = a[j * n + i];
      }
    });
  });
  check_convergence(info, A.dim() > 2, "linalg.eigh", "eigenvalues");
  return out;
}

Tensor linalg_qr_cpu(const Tensor& A, bool complete, bool compute_q) {
  check_lapack_input(A, "linalg.qr", "geqrf_cpu", false);
  const int64_t m = A.size(-2), n = A.size(-1), k = std::min(m, n);
  check_lapack_int(m * std::max(m, n), "linalg.qr");
  const int64_t kq = !compute_q ? 0 : complete ? m : k;
  const int64_t kr = complete ? m : k, cols = kq + n;
  const DimVector batch_dims = batch_shape(A);
  const int64_t batch = product(batch_dims);
  Tensor out = ember::zeros(with_matrix(batch_dims, m, cols), A.dtype(), A.device());
  if (out.numel() == 0) return out;
  Tensor src = column_major_copy(A);
  const int64_t width = std::max(n, kq);  // orgqr builds the complete Q in A's place
  dispatch_float(A.dtype(), [&]<typename T>() {
    const T* from = src.data<T>();
    T* dst = out.data<T>();
    T q1 = 0, q2 = 0;
    int qinfo = 0;
    if (k > 0) {
      geqrf_raw<T>((int)m, (int)n, nullptr, nullptr, &q1, -1, &qinfo);
      if (kq > 0) orgqr<T>((int)m, (int)kq, (int)k, nullptr, nullptr, &q2, -1, &qinfo);
    }
    const int lwork = std::max(queried(q1), queried(q2));
    for_each_matrix(batch, std::max(m, n), [&](int64_t lo, int64_t hi) {
      std::vector<T> a(m * width), tau(std::max<int64_t>(k, 1)), scratch(lwork);
      for (int64_t b = lo; b < hi; ++b) {
        std::copy(from + b * m * n, from + (b + 1) * m * n, a.begin());
        T* o = dst + b * m * cols;
        int status = 0;
        if (k > 0) geqrf_raw<T>((int)m, (int)n, a.data(), tau.data(), scratch.data(), lwork, &status);
        for (int64_t j = 0; j < n; ++j)  // R: the upper triangle of the first kr rows
          for (int64_t i = 0; i <= std::min(j, kr - 1); ++i) o[i * cols + kq + j] = a[j * m + i];
        if (kq == 0) continue;
        if (k > 0) orgqr<T>((int)m, (int)kq, (int)k, a.data(), tau.data(), scratch.data(), lwork, &status);
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < kq; ++j) o[i * cols + j] = k > 0 ? a[j * m + i] : T(i == j);
      }
    });
  });
  return out;
}

Tensor linalg_svd_cpu(const Tensor& A, bool full_matrices, bool compute_uv) {
  check_lapack_input(A, "linalg.svd", "linalg_svd_cpu", false);
  const int64_t m = A.size(-2), n = A.size(-1), k = std::min(m, n);
  check_lapack_int(m * n, "linalg.svd");
  const int64_t ku = compute_uv ? (full_matrices ? m : k) : 0, kv = compute_uv ? (full_matrices ? n : k) : 0;
  const int64_t size = m * ku + k + kv * n;
  const DimVector batch_dims = batch_shape(A);
  const int64_t batch = product(batch_dims);
  DimVector shape = batch_dims;
  shape.push_back(size);
  Tensor out = ember::zeros(shape, A.dtype(), A.device());
  if (out.numel() == 0) return out;
  Tensor work = column_major_copy(A);
  Tensor info = int_zeros(batch_dims);
  const char jobz = !compute_uv ? 'N' : full_matrices ? 'A' : 'S';
  dispatch_float(A.dtype(), [&]<typename T>() {
    T* base = work.data<T>();
    T* dst = out.data<T>();
    int32_t* infos = info.data<int32_t>();
    const int ldu = (int)std::max<int64_t>(m, 1), ldvt = (int)std::max<int64_t>(kv, 1);
    T query = 0;
    int qinfo = 0;
    std::vector<int> qi(std::max<int64_t>(8 * k, 1));
    if (k > 0) gesdd<T>(jobz, (int)m, (int)n, nullptr, nullptr, nullptr, ldu, nullptr, ldvt, &query, -1, qi.data(), &qinfo);
    const int lwork = queried(query);
    for_each_matrix(batch, std::max(m, n), [&](int64_t lo, int64_t hi) {
      std::vector<T> u(m * ku), vt(kv * n), scratch(lwork);
      std::vector<int> iscratch(std::max<int64_t>(8 * k, 1));
      for (int64_t b = lo; b < hi; ++b) {
        T* o = dst + b * size;
        int status = 0;
        if (k > 0)
          gesdd<T>(jobz, (int)m, (int)n, base + b * m * n, o + m * ku, u.data(), ldu, vt.data(), ldvt, scratch.data(),
                   lwork, iscratch.data(), &status);
        infos[b] = status;
        // Row-major U (m x ku) before S, Vh (kv x n) after; with k = 0 the full factors are identities.
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < ku; ++j) o[i * ku + j] = k > 0 ? u[j * m + i] : T(i == j);
        T* vh = o + m * ku + k;
        for (int64_t i = 0; i < kv; ++i)
          for (int64_t j = 0; j < n; ++j) vh[i * n + j] = k > 0 ? vt[j * kv + i] : T(i == j);
      }
    });
  });
  check_convergence(info, A.dim() > 2, "linalg.svd", "singular values");
  return out;
}

}  // namespace cpu
}  // namespace ember
