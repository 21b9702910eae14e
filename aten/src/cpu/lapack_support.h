#pragma once
// What the LAPACK kernels share (lapack.cpp, lapack_lu.cpp): scipy-openblas32's LAPACK symbols
// (a scipy_ prefix, 32-bit integers), typed entry points, and the column-major batch helpers.
#include <algorithm>
#include <climits>
#include <type_traits>

#include "ember/blas.h"
#include "ember/dtype.h"
#include "ember/errors.h"
#include "ember/ops/copy_.h"
#include "ember/ops/transpose.h"
#include "ember/ops/zeros.h"
#include "ember/parallel.h"
#include "ember/tensor.h"

extern "C" {
void scipy_sgetrf_(const int* m, const int* n, float* a, const int* lda, int* ipiv, int* info);
void scipy_dgetrf_(const int* m, const int* n, double* a, const int* lda, int* ipiv, int* info);
void scipy_sgetri_(const int* n, float* a, const int* lda, const int* ipiv, float* work, const int* lwork, int* info);
void scipy_dgetri_(const int* n, double* a, const int* lda, const int* ipiv, double* work, const int* lwork, int* info);
void scipy_sgetrs_(const char* trans, const int* n, const int* nrhs, const float* a, const int* lda, const int* ipiv,
                   float* b, const int* ldb, int* info, size_t);
void scipy_dgetrs_(const char* trans, const int* n, const int* nrhs, const double* a, const int* lda, const int* ipiv,
                   double* b, const int* ldb, int* info, size_t);
void scipy_spotrf_(const char* uplo, const int* n, float* a, const int* lda, int* info, size_t);
void scipy_dpotrf_(const char* uplo, const int* n, double* a, const int* lda, int* info, size_t);
void scipy_ssyevd_(const char* jobz, const char* uplo, const int* n, float* a, const int* lda, float* w, float* work,
                   const int* lwork, int* iwork, const int* liwork, int* info, size_t, size_t);
void scipy_dsyevd_(const char* jobz, const char* uplo, const int* n, double* a, const int* lda, double* w, double* work,
                   const int* lwork, int* iwork, const int* liwork, int* info, size_t, size_t);
void scipy_sgeqrf_(const int* m, const int* n, float* a, const int* lda, float* tau, float* work, const int* lwork,
                   int* info);
void scipy_dgeqrf_(const int* m, const int* n, double* a, const int* lda, double* tau, double* work, const int* lwork,
                   int* info);
void scipy_sorgqr_(const int* m, const int* n, const int* k, float* a, const int* lda, const float* tau, float* work,
                   const int* lwork, int* info);
void scipy_dorgqr_(const int* m, const int* n, const int* k, double* a, const int* lda, const double* tau, double* work,
                   const int* lwork, int* info);
void scipy_sgesdd_(const char* jobz, const int* m, const int* n, float* a, const int* lda, float* s, float* u,
                   const int* ldu, float* vt, const int* ldvt, float* work, const int* lwork, int* iwork, int* info,
                   size_t);
void scipy_dgesdd_(const char* jobz, const int* m, const int* n, double* a, const int* lda, double* s, double* u,
                   const int* ldu, double* vt, const int* ldvt, double* work, const int* lwork, int* iwork, int* info,
                   size_t);
}

namespace ember {
namespace cpu {

// Batches whose total work (about n^3 per matrix) is below this stay on one thread.
constexpr int64_t kSerialLapackWork = 1 << 15;

inline void check_lapack_int(int64_t v, const char* op) {
  EMBER_CHECK(v <= INT_MAX, Runtime, op, ": dimension ", v, " is too large for LAPACK (32-bit integers)");
}

// ---- typed LAPACK entry points
template <typename T>
void getrf(int m, int n, T* a, int* ipiv, int* info) {  // an m x n matrix, lda m
  if constexpr (std::is_same_v<T, float>) scipy_sgetrf_(&m, &n, a, &m, ipiv, info);
  else scipy_dgetrf_(&m, &n, a, &m, ipiv, info);
}
template <typename T>
void getrf(int n, T* a, int* ipiv, int* info) { getrf<T>(n, n, a, ipiv, info); }
template <typename T>
void getri(int n, T* a, const int* ipiv, T* work, int lwork, int* info) {
  if constexpr (std::is_same_v<T, float>) scipy_sgetri_(&n, a, &n, ipiv, work, &lwork, info);
  else scipy_dgetri_(&n, a, &n, ipiv, work, &lwork, info);
}
template <typename T>
void getrs(int n, int nrhs, const T* lu, const int* ipiv, T* b, int* info, char trans = 'N') {
  if constexpr (std::is_same_v<T, float>) scipy_sgetrs_(&trans, &n, &nrhs, lu, &n, ipiv, b, &n, info, 1);
  else scipy_dgetrs_(&trans, &n, &nrhs, lu, &n, ipiv, b, &n, info, 1);
}
template <typename T>
void potrf(char uplo, int n, T* a, int* info) {
  if constexpr (std::is_same_v<T, float>) scipy_spotrf_(&uplo, &n, a, &n, info, 1);
  else scipy_dpotrf_(&uplo, &n, a, &n, info, 1);
}

template <typename T>
void syevd(char jobz, char uplo, int n, T* a, T* w, T* work, int lwork, int* iwork, int liwork, int* info) {
  if constexpr (std::is_same_v<T, float>)
    scipy_ssyevd_(&jobz, &uplo, &n, a, &n, w, work, &lwork, iwork, &liwork, info, 1, 1);
  else scipy_dsyevd_(&jobz, &uplo, &n, a, &n, w, work, &lwork, iwork, &liwork, info, 1, 1);
}
template <typename T>
void geqrf_raw(int m, int n, T* a, T* tau, T* work, int lwork, int* info) {
  if constexpr (std::is_same_v<T, float>) scipy_sgeqrf_(&m, &n, a, &m, tau, work, &lwork, info);
  else scipy_dgeqrf_(&m, &n, a, &m, tau, work, &lwork, info);
}
template <typename T>
void orgqr(int m, int n, int k, T* a, const T* tau, T* work, int lwork, int* info) {
  if constexpr (std::is_same_v<T, float>) scipy_sorgqr_(&m, &n, &k, a, &m, tau, work, &lwork, info);
  else scipy_dorgqr_(&m, &n, &k, a, &m, tau, work, &lwork, info);
}
template <typename T>
void gesdd(char jobz, int m, int n, T* a, T* s, T* u, int ldu, T* vt, int ldvt, T* work, int lwork, int* iwork,
           int* info) {
  if constexpr (std::is_same_v<T, float>)
    scipy_sgesdd_(&jobz, &m, &n, a, &m, s, u, &ldu, vt, &ldvt, work, &lwork, iwork, info, 1);
  else scipy_dgesdd_(&jobz, &m, &n, a, &m, s, u, &ldu, vt, &ldvt, work, &lwork, iwork, info, 1);
}

template <typename F>
void dispatch_float(ScalarType t, F&& f) {
  if (t == ScalarType::Float32) f.template operator()<float>();
  else f.template operator()<double>();
}

inline DimVector batch_shape(const Tensor& A) { return DimVector(A.sizes().begin(), A.sizes().end() - 2); }

inline int64_t product(const DimVector& d) {
  int64_t p = 1;
  for (int64_t v : d) p *= v;
  return p;
}

inline DimVector with_matrix(DimVector batch, int64_t rows, int64_t cols) {
  batch.push_back(rows);
  batch.push_back(cols);
  return batch;
}

// A fresh [*batch, n, m] tensor holding the (…, m, n) matrices of A transposed: row-major
// rows of it are the columns of A, so each matrix is column-major for LAPACK.
inline Tensor column_major_copy(const Tensor& A) {
  const int64_t m = A.size(-2), n = A.size(-1);
  Tensor work = empty_tensor(with_matrix(batch_shape(A), n, m), A.dtype(), A.device());
  if (work.numel()) ember::copy_(work, ember::transpose(A, -2, -1), false);
  return work;
}

// The (…, m, n) matrices held column-major in `work` ([*batch, n, m]), as a view.
inline Tensor from_column_major(const Tensor& work) { return ember::transpose(work, -2, -1); }

// Runs f(begin, end) over the batch of matrices of size n, in parallel when the batch is large.
template <typename F>
void for_each_matrix(int64_t batch, int64_t n, F&& f) {
  const int64_t work = std::max<int64_t>(1, n * n * n);
  keep_blas_single_threaded();
  parallel_for(batch, std::max<int64_t>(1, kSerialLapackWork / work), f);
}

inline Tensor int_zeros(const DimVector& shape) { return ember::zeros(shape, ScalarType::Int32, Device()); }

}  // namespace cpu
}  // namespace ember
