// scaled_dot_product_attention's forward as a blocked ("flash") kernel: each task owns a tile
// of query rows and walks the key blocks with an online softmax (running row max and sum), so
// the L x S score matrix is never held, only a tile x block of it.
#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>
#include <vector>

#include "attention_blocks.h"
#include "ember/blas.h"
#include "ember/dispatch.h"
#include "ember/ops/_sdpa_flash.h"
#include "ember/ops/contiguous.h"
#include "ember/ops/expand.h"
#include "ember/parallel.h"
#include "ember/tensor.h"
#include "ember/thresholds.h"

namespace ember::cpu {

namespace attention {

Tensor expand_mask(const Tensor& attn_mask, const DimVector& batch_shape, int64_t L, int64_t S, ScalarType dtype,
                   const char* op) {
  if (!attn_mask.defined()) return attn_mask;
  DimVector full = batch_shape;
  full.push_back(L);
  full.push_back(S);
  Tensor mask = ember::expand(attn_mask, full);
  EMBER_CHECK(mask.dtype() == ScalarType::Bool || mask.dtype() == dtype, Runtime, op,
              ": attn_mask must be bool or of query's dtype");
  return mask;
}

MaskView mask_view(const Tensor& mask, const DimVector& batch_shape) {
  MaskView view;
  if (!mask.defined()) return view;
  view.data = mask.data_ptr();
  view.is_bool = mask.dtype() == ScalarType::Bool;
  view.batch_sizes = batch_shape;
  view.batch_strides.assign(mask.strides().begin(), mask.strides().end() - 2);
  view.row_stride = mask.stride(-2);
  view.col_stride = mask.stride(-1);
  return view;
}

Tensor rows_in_place(const Tensor& t) {
  const int64_t rows = t.size(-2), cols = t.size(-1);
  const bool unit_cols = cols <= 1 || t.stride(-1) == 1;
  const bool rows_apart = rows <= 1 || t.stride(-2) >= std::max<int64_t>(1, cols);
  return unit_cols && rows_apart ? t : ember::contiguous(t);
}

std::vector<int64_t> batch_offsets(const Tensor& t) {
  const int64_t batch_dims = t.dim() - 2;
  int64_t batch = 1;
  for (int64_t d = 0; d < batch_dims; ++d) batch *= t.size(d);
  std::vector<int64_t> offsets(batch);
  for (int64_t b = 0; b < batch; ++b) {
    int64_t off = 0;
    for (int64_t d = batch_dims - 1, rest = b; d >= 0; --d) {
      off += (rest % t.size(d)) * t.stride(d);
      rest /= t.size(d);
    }
    offsets[b] = off;
  }
  return offsets;
}

int64_t row_stride(const Tensor& t) { return t.size(-2) <= 1 ? std::max<int64_t>(1, t.size(-1)) : t.stride(-2); }

Tensor empty_in_layout_of(const Tensor& like, const DimVector& sizes) {
  const int64_t nd = (int64_t)sizes.size();
  std::vector<int64_t> order(nd - 1);  // outermost first; ties keep dim order
  for (int64_t d = 0; d < nd - 1; ++d) order[d] = d;
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return like.stride(a) > like.stride(b); });
  order.push_back(nd - 1);
  DimVector strides(nd);
  int64_t step = 1;
  for (int64_t i = nd - 1; i >= 0; --i) {
    strides[order[i]] = step;
    step *= std::max<int64_t>(1, sizes[order[i]]);
  }
  return empty_strided_tensor(sizes, strides, like.dtype(), like.device());
}

int64_t attention_threads(int64_t work) {
  return work < thresholds::kParallelGemmWork || in_parallel_region() ? 1 : get_num_threads();
}

}  // namespace attention

namespace {

using namespace attention;

constexpr int64_t kQueryTile = 64;   // query rows a task owns: its scores and accumulator stay in L2
constexpr int64_t kKeyBlock = 256;   // keys per step: one GEMM of kQueryTile x kKeyBlock scores

// One query tile (rows i0.., `rows` of them) of batch entry b: out and lse of those rows.
template <typename T>
struct ForwardTile {
  const Rows<const T*>&q, &k, &v;
  const Rows<T*>& out;
  int64_t L, S, E, Ev;
  bool causal;
  T scale;
  const MaskView& mask;
  T* scores;    // kQueryTile x kKeyBlock
  T* acc;       // kQueryTile x Ev: the unnormalised output
  T* run_max;   // kQueryTile: each row's running max and sum of exps
  T* run_sum;

  void run(int64_t b, int64_t i0, int64_t rows, T* lse) const {
    const T neg_inf = -std::numeric_limits<T>::infinity();
    const T* qb = q.row(b, i0);
    const T* kb = k.row(b, 0);
    const T* vb = v.row(b, 0);
    const int64_t mask_base = mask.data ? mask.batch_offset(b) : 0;
    std::fill(acc, acc + rows * Ev, T(0));
    std::fill(run_max, run_max + rows, neg_inf);
    std::fill(run_sum, run_sum + rows, T(0));
    // Causal (top-left aligned, as PyTorch): row i sees keys j <= i, so keys past the tile's last row are skipped.
    const int64_t key_end = causal ? std::min(S, i0 + rows) : S;
    for (int64_t j0 = 0; j0 < key_end; j0 += kKeyBlock) {
      const int64_t cols = std::min(kKeyBlock, key_end - j0);
      gemm(false, true, rows, cols, E, scale, qb, q.ld, kb + j0 * k.ld, k.ld, T(0), scores, kKeyBlock);
      for (int64_t r = 0; r < rows; ++r) {
        T* s = scores + r * kKeyBlock;
        // Under causality, keys past row i are left out rather than masked (a block below the diagonal has none).
        const int64_t n = causal ? causal_cols(i0 + r, j0, cols) : cols;
        if (mask.data) mask.apply(s, mask_base, i0 + r, j0, n);
        const T new_max = std::max(run_max[r], row_max(s, n));
        if (new_max == neg_inf) {  // every key so far masked: nothing to add
          std::fill(s, s + cols, T(0));
          continue;
        }
        const T sum = exp_shifted_sum(s, n, new_max);
        std::fill(s + n, s + cols, T(0));
        const T correction = std::exp(run_max[r] - new_max);  // 0 the first time (run_max = -inf)
        if (correction != T(1)) scale_row(acc + r * Ev, Ev, correction);
        run_sum[r] = run_sum[r] * correction + sum;
        run_max[r] = new_max;
      }
      gemm(false, false, rows, Ev, cols, T(1), scores, kKeyBlock, vb + j0 * v.ld, v.ld, T(1), acc, Ev);
    }
    for (int64_t r = 0; r < rows; ++r) {
      // A row whose keys are all masked gives zeros, as PyTorch's CPU kernels do.
      const T inv = run_sum[r] > 0 ? T(1) / run_sum[r] : T(0);
      T* o = out.row(b, i0 + r);
      const T* a = acc + r * Ev;
#pragma omp simd
      for (int64_t c = 0; c < Ev; ++c) o[c] = a[c] * inv;
      lse[b * L + i0 + r] = run_sum[r] > 0 ? run_max[r] + std::log(run_sum[r]) : neg_inf;
    }
  }
};

template <typename T>
void flash_forward(const Tensor& query, const Tensor& key, const Tensor& value, const Tensor& output, T* lse,
                   int64_t batch, bool causal, T scale, const MaskView& mask) {
  const Rows<const T*> q = rows_of<T>(query), k = rows_of<T>(key), v = rows_of<T>(value);
  const Rows<T*> out = rows_of<T, T*>(output);
  const int64_t L = query.size(-2), E = query.size(-1), S = key.size(-2), Ev = value.size(-1);
  const int64_t tiles = (L + kQueryTile - 1) / kQueryTile;
  // A tile's cost is the keys it visits (its GEMMs and exps), plus a little for its rows.
  const auto cost = [&](int64_t u) {
    const int64_t i0 = (u % tiles) * kQueryTile, rows = std::min(kQueryTile, L - i0);
    return rows * ((causal ? std::min(S, i0 + rows) : S) + 8);
  };
  const int64_t work = batch * L * S * (E + Ev) / (causal ? 2 : 1);
  const std::vector<int64_t> bounds = split_by_cost(batch * tiles, attention_threads(work), cost);
  parallel_for((int64_t)bounds.size() - 1, 1, [&](int64_t p0, int64_t p1) {
    std::vector<T> scratch(kQueryTile * (kKeyBlock + Ev + 2));
    const ForwardTile<T> tile{q, k, v, out, L, S, E, Ev, causal, scale, mask, scratch.data(),
                              scratch.data() + kQueryTile * kKeyBlock, scratch.data() + kQueryTile * (kKeyBlock + Ev),
                              scratch.data() + kQueryTile * (kKeyBlock + Ev + 1)};
    for (int64_t u = bounds[p0]; u < bounds[p1]; ++u) {
      const int64_t b = u / tiles, i0 = (u % tiles) * kQueryTile;
      tile.run(b, i0, std::min(kQueryTile, L - i0), lse);
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
  EMBER_CHECK(key.dtype() == query.dtype() && value.dtype() == query.dtype(), Runtime,
              "_sdpa_flash: query, key and value must have the same dtype");
  int64_t batch = 1;
  for (int64_t d = 0; d < nd - 2; ++d) {
    EMBER_CHECK(key.size(d) == query.size(d) && value.size(d) == query.size(d), Runtime,
                "_sdpa_flash: query, key and value must share their batch dims");
    batch *= query.size(d);
  }
  const Tensor q = rows_in_place(query), k = rows_in_place(key), v = rows_in_place(value);
  DimVector out_shape = batch_shape, lse_shape = batch_shape;
  out_shape.push_back(L);
  out_shape.push_back(Ev);
  lse_shape.push_back(L);
  Tensor out = empty_in_layout_of(query, out_shape), lse = empty_tensor(lse_shape, query.dtype());
  const Tensor mask = expand_mask(attn_mask, batch_shape, L, S, query.dtype(), "_sdpa_flash");
  const MaskView view = mask_view(mask, batch_shape);
  if (out.numel() == 0) return {out, lse};
  keep_blas_single_threaded();
  if (query.dtype() == ScalarType::Float32)
    flash_forward<float>(q, k, v, out, lse.data<float>(), batch, is_causal, (float)scale, view);
  else
    flash_forward<double>(q, k, v, out, lse.data<double>(), batch, is_causal, scale, view);
  return {out, lse};
}

}  // namespace ember::cpu
