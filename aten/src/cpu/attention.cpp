// scaled_dot_product_attention's forward as a blocked ("flash") kernel: for each
// block of query rows it walks the key blocks with an online softmax (running row
// max and sum), so the L x S score matrix is never held, only a block of it.
#include <algorithm>
#include <cblas.h>
#include <cmath>
#include <limits>
#include <tuple>
#include <vector>

#include "ember/blas.h"
#include "ember/dispatch.h"
#include "ember/ops/_sdpa_flash.h"
#include "ember/ops/contiguous.h"
#include "ember/ops/expand.h"
#include "ember/parallel.h"
#include "ember/tensor.h"

namespace ember::cpu {

namespace {

constexpr int64_t kQueryBlock = 64;   // query rows a task owns: its scores and accumulator stay in L2
constexpr int64_t kKeyBlock = 256;    // keys per step: one GEMM of kQueryBlock x kKeyBlock scores

// C (m x n, row-major, ldc) = alpha * A (m x k, row-major) * op(B) + beta * C, single-threaded.
void gemm(bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda, const float* b,
          int64_t ldb, float beta, float* c, int64_t ldc) {
  scipy_cblas_sgemm(CblasRowMajor, CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, (blasint)m, (blasint)n,
                    (blasint)k, alpha, a, (blasint)lda, b, (blasint)ldb, beta, c, (blasint)ldc);
}
void gemm(bool trans_b, int64_t m, int64_t n, int64_t k, double alpha, const double* a, int64_t lda, const double* b,
          int64_t ldb, double beta, double* c, int64_t ldc) {
  scipy_cblas_dgemm(CblasRowMajor, CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, (blasint)m, (blasint)n,
                    (blasint)k, alpha, a, (blasint)lda, b, (blasint)ldb, beta, c, (blasint)ldc);
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
};

template <typename T>
void flash_forward(const T* q, const T* k, const T* v, T* out, T* lse, int64_t batch, int64_t L, int64_t S,
                   int64_t E, int64_t Ev, bool causal, T scale, const MaskView& mask) {
  const int64_t q_blocks = (L + kQueryBlock - 1) / kQueryBlock;
  const T neg_inf = -std::numeric_limits<T>::infinity();
  parallel_for(batch * q_blocks, 1, [&](int64_t t0, int64_t t1) {
    std::vector<T> scores(kQueryBlock * kKeyBlock), acc(kQueryBlock * Ev), row_max(kQueryBlock), row_sum(kQueryBlock);
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t b = t / q_blocks, i0 = (t % q_blocks) * kQueryBlock, rows = std::min(kQueryBlock, L - i0);
      const T* qb = q + (b * L + i0) * E;
      const T* kb = k + b * S * E;
      const T* vb = v + b * S * Ev;
      const int64_t mask_base = mask.data ? mask.batch_offset(b) : 0;
      std::fill(acc.begin(), acc.begin() + rows * Ev, T(0));
      std::fill(row_max.begin(), row_max.end(), neg_inf);
      std::fill(row_sum.begin(), row_sum.end(), T(0));
      // Causal (top-left aligned, as PyTorch): row i sees keys j <= i, so keys past the block's last row are skipped.
      const int64_t key_end = causal ? std::min(S, i0 + rows) : S;
      for (int64_t j0 = 0; j0 < key_end; j0 += kKeyBlock) {
        const int64_t cols = std::min(kKeyBlock, key_end - j0);
        gemm(true, rows, cols, E, scale, qb, E, kb + j0 * E, E, T(0), scores.data(), kKeyBlock);
        for (int64_t r = 0; r < rows; ++r) {
          T* s = scores.data() + r * kKeyBlock;
          const int64_t i = i0 + r;
          if (mask.data) {
            const int64_t row_off = mask_base + i * mask.row_stride + j0 * mask.col_stride;
            if (mask.is_bool) {
              const bool* m = static_cast<const bool*>(mask.data) + row_off;
              for (int64_t c = 0; c < cols; ++c) if (!m[c * mask.col_stride]) s[c] = neg_inf;
            } else {
              const T* m = static_cast<const T*>(mask.data) + row_off;
              for (int64_t c = 0; c < cols; ++c) s[c] += m[c * mask.col_stride];
            }
          }
          if (causal) for (int64_t c = std::max<int64_t>(0, i + 1 - j0); c < cols; ++c) s[c] = neg_inf;
          T block_max = neg_inf;
          for (int64_t c = 0; c < cols; ++c) block_max = std::max(block_max, s[c]);
          const T new_max = std::max(row_max[r], block_max);
          if (new_max == neg_inf) {  // every key so far masked: nothing to add
            for (int64_t c = 0; c < cols; ++c) s[c] = T(0);
            continue;
          }
          T sum = 0;
          for (int64_t c = 0; c < cols; ++c) {
            s[c] = std::exp(s[c] - new_max);
            sum += s[c];
          }
          const T correction = std::exp(row_max[r] - new_max);  // 0 the first time (row_max = -inf)
          if (correction != T(1)) {
            T* a = acc.data() + r * Ev;
            for (int64_t c = 0; c < Ev; ++c) a[c] *= correction;
          }
          row_sum[r] = row_sum[r] * correction + sum;
          row_max[r] = new_max;
        }
        gemm(false, rows, Ev, cols, T(1), scores.data(), kKeyBlock, vb + j0 * Ev, Ev, T(1), acc.data(), Ev);
      }
      for (int64_t r = 0; r < rows; ++r) {
        T* o = out + (b * L + i0 + r) * Ev;
        const T* a = acc.data() + r * Ev;
        // A row whose keys are all masked gives zeros, as PyTorch's CPU kernels do.
        const T inv = row_sum[r] > 0 ? T(1) / row_sum[r] : T(0);
        for (int64_t c = 0; c < Ev; ++c) o[c] = a[c] * inv;
        lse[b * L + i0 + r] = row_sum[r] > 0 ? row_max[r] + std::log(row_sum[r]) : neg_inf;
      }
    }
  });
}

}  // namespace

std::tuple<Tensor, Tensor> sdpa_flash_cpu(const Tensor& query, const Tensor& key, const Tensor& value,
                                          const Tensor& attn_mask, bool is_causal, double scale) {
  const int64_t nd = query.dim();
  EMBER_CHECK(nd >= 2 && key.dim() == nd && value.dim() == nd, Runtime,
              "_sdpa_flash: query, key and value must have the same number of dims (at least 2)");
  const DimVector batch_shape(query.sizes().begin(), query.sizes().end() - 2);
  const int64_t L = query.size(-2), E = query.size(-1), S = key.size(-2), Ev = value.size(-1);
  EMBER_CHECK(key.size(-1) == E && value.size(-2) == S, Runtime, "_sdpa_flash: mismatched key or value shape");
  int64_t batch = 1;
  for (int64_t d = 0; d < nd - 2; ++d) {
    EMBER_CHECK(key.size(d) == query.size(d) && value.size(d) == query.size(d), Runtime,
                "_sdpa_flash: query, key and value must share their batch dims");
    batch *= query.size(d);
  }
  const Tensor q = ember::contiguous(query), k = ember::contiguous(key), v = ember::contiguous(value);
  DimVector out_shape = batch_shape, lse_shape = batch_shape;
  out_shape.push_back(L);
  out_shape.push_back(Ev);
  lse_shape.push_back(L);
  Tensor out = empty_tensor(out_shape, query.dtype()), lse = empty_tensor(lse_shape, query.dtype());
  MaskView view;
  Tensor mask;
  if (attn_mask.defined()) {
    DimVector full = batch_shape;
    full.push_back(L);
    full.push_back(S);
    mask = ember::expand(attn_mask, full);
    EMBER_CHECK(mask.dtype() == ScalarType::Bool || mask.dtype() == query.dtype(), Runtime,
                "_sdpa_flash: attn_mask must be bool or of query's dtype");
    view.data = mask.data_ptr();
    view.is_bool = mask.dtype() == ScalarType::Bool;
    view.batch_sizes = batch_shape;
    view.batch_strides.assign(mask.strides().begin(), mask.strides().end() - 2);
    view.row_stride = mask.stride(-2);
    view.col_stride = mask.stride(-1);
  }
  if (out.numel() == 0) return {out, lse};
  keep_blas_single_threaded();
  if (query.dtype() == ScalarType::Float32) {
    flash_forward<float>(q.data<float>(), k.data<float>(), v.data<float>(), out.data<float>(), lse.data<float>(),
                         batch, L, S, E, Ev, is_causal, (float)scale, view);
  } else {
    flash_forward<double>(q.data<double>(), k.data<double>(), v.data<double>(), out.data<double>(),
                          lse.data<double>(), batch, L, S, E, Ev, is_causal, scale, view);
  }
  return {out, lse};
}

}  // namespace ember::cpu
