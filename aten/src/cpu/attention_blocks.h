#pragma once
// What the flash attention kernels (attention.cpp forward, attention_backward.cpp)
// share: single-threaded GEMMs on row-major blocks, the mask's strided view,
// the split of work items into per-thread ranges of equal cost, and the
// vectorised row steps of the softmax (glibc's vector exp through ember/math.h).
#include <algorithm>
#include <cblas.h>
#include <cstdint>
#include <limits>
#include <vector>

#include "ember/math.h"
#include "ember/tensor.h"

namespace ember::cpu::attention {

// C (m x n, ldc) = alpha * op(A) * op(B) + beta * C, row-major, on the calling thread.
inline void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                 int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  scipy_cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
                    (blasint)m, (blasint)n, (blasint)k, alpha, a, (blasint)lda, b, (blasint)ldb, beta, c,
                    (blasint)ldc);
}
inline void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha, const double* a,
                 int64_t lda, const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  scipy_cblas_dgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
                    (blasint)m, (blasint)n, (blasint)k, alpha, a, (blasint)lda, b, (blasint)ldb, beta, c,
                    (blasint)ldc);
}

// The mask's element for batch b, row i, key j: `mask` is expanded to (batch..., L, S) by strides.
struct MaskView {
  const void* data = nullptr;
  bool is_bool = false;
  DimVector batch_sizes, batch_strides;
  int64_t row_stride = 0, col_stride = 0;

  int64_t batch_offset(int64_t b) const {
    int64_t off = 0;
    for (int64_t d = (int64_t)batch_sizes.size() - 1; d >= 0; --d) {
      off += (b % batch_sizes[d]) * batch_strides[d];
      b /= batch_sizes[d];
    }
    return off;
  }

  // Applies row i's mask to its scores s[0, n) for keys j0..j0+n (-inf where a bool mask is false).
  template <typename T>
  void apply(T* s, int64_t base, int64_t i, int64_t j0, int64_t n) const {
    const int64_t off = base + i * row_stride + j0 * col_stride;
    if (is_bool) {
      const bool* m = static_cast<const bool*>(data) + off;
      for (int64_t c = 0; c < n; ++c)
        if (!m[c * col_stride]) s[c] = -std::numeric_limits<T>::infinity();
    } else {
      const T* m = static_cast<const T*>(data) + off;
      for (int64_t c = 0; c < n; ++c) s[c] += m[c * col_stride];
    }
  }
};

// A [batch..., rows, cols] operand used in place: row r of batch entry b (row-major over the batch
// dims) starts at row(b, r); columns are unit-strided and ld >= cols, as BLAS needs.
template <typename P>
struct Rows {
  P data;
  std::vector<int64_t> offsets;
  int64_t ld;
  P row(int64_t b, int64_t r) const { return data + offsets[b] + r * ld; }
};

// `t` when BLAS can read its rows in place (unit column stride, row stride >= cols), else a contiguous copy:
// the views of a fused qkv projection ([B, H, L, E] of a [B, L, 3 H E] tensor) are read without copying.
Tensor rows_in_place(const Tensor& t);
// Each batch entry's element offset and the row stride of a rows_in_place tensor.
std::vector<int64_t> batch_offsets(const Tensor& t);
int64_t row_stride(const Tensor& t);

template <typename T, typename P = const T*>
Rows<P> rows_of(const Tensor& t) {
  return Rows<P>{const_cast<P>(t.data<T>()), batch_offsets(t), row_stride(t)};
}

// An uninitialised tensor of `sizes` whose dims are laid out in the order of `like`'s strides (the last dim
// innermost), as PyTorch's CPU flash attention lays out its output like the query ([B, L, H, E] storage).
Tensor empty_in_layout_of(const Tensor& like, const DimVector& sizes);

// attn_mask expanded to (batch..., L, S) (undefined when it is), checked to be bool or `dtype`.
Tensor expand_mask(const Tensor& attn_mask, const DimVector& batch_shape, int64_t L, int64_t S, ScalarType dtype,
                   const char* op);
// An expanded mask as a MaskView; undefined: no mask.
MaskView mask_view(const Tensor& mask, const DimVector& batch_shape);

// Splits work items 0..n (item u costing cost(u)) into at most `parts` contiguous ranges of about
// equal cost: range p is [bounds[p], bounds[p + 1]). Causal attention's items differ in cost.
template <typename Cost>
std::vector<int64_t> split_by_cost(int64_t n, int64_t parts, Cost cost) {
  parts = std::max<int64_t>(1, std::min(parts, n));
  std::vector<int64_t> prefix(n + 1, 0);
  for (int64_t u = 0; u < n; ++u) prefix[u + 1] = prefix[u] + cost(u);
  std::vector<int64_t> bounds(parts + 1, n);
  bounds[0] = 0;
  for (int64_t p = 1; p < parts; ++p) {
    const int64_t target = prefix[n] * p / parts;
    bounds[p] = std::lower_bound(prefix.begin() + bounds[p - 1], prefix.end(), target) - prefix.begin();
    bounds[p] = std::min(bounds[p], n);
  }
  return bounds;
}

// How many threads a kernel of `work` multiply-adds uses: one below the parallel GEMM threshold.
int64_t attention_threads(int64_t work);

// The causal (top-left) number of keys j0.. that row i sees in a block of `cols` keys.
inline int64_t causal_cols(int64_t i, int64_t j0, int64_t cols) { return std::clamp<int64_t>(i + 1 - j0, 0, cols); }

template <typename T>
T row_max(const T* s, int64_t n) {
  T m = -std::numeric_limits<T>::infinity();
#pragma omp simd reduction(max : m)
  for (int64_t c = 0; c < n; ++c) m = s[c] > m ? s[c] : m;  // std::max here would not vectorise (GCC 12)
  return m;
}

// s[c] = exp(s[c] - shift) for c < n; returns their sum.
template <typename T>
T exp_shifted_sum(T* s, int64_t n, T shift) {
  T sum = 0;
#pragma omp simd reduction(+ : sum)
  for (int64_t c = 0; c < n; ++c) {
    const T e = math::exp(s[c] - shift);
    s[c] = e;
    sum += e;
  }
  return sum;
}

template <typename T>
void scale_row(T* a, int64_t n, T factor) {
#pragma omp simd
  for (int64_t c = 0; c < n; ++c) a[c] *= factor;
}

}  // namespace ember::cpu::attention
