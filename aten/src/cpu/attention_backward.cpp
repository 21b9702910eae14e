// _sdpa_flash_backward: the gradients of the flash forward from its output and per-row
// log-sum-exp, recomputing the probabilities block by block (the L x S matrix is never held).
// A task owns one block of keys of one batch entry, so its dK and dV rows are its own; the
// query tiles it visits add into dQ, which threads sharing a batch entry accumulate privately.
#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>
#include <vector>

#include "attention_blocks.h"
#include "ember/blas.h"
#include "ember/dispatch.h"
#include "ember/ops/_sdpa_flash_backward.h"
#include "ember/ops/contiguous.h"
#include "ember/parallel.h"
#include "ember/tensor.h"

namespace ember::cpu {

namespace {

using namespace attention;

constexpr int64_t kQueryTile = 64;  // query rows per step: P and dP are kQueryTile x kKeyBlock
constexpr int64_t kKeyBlock = 128;  // keys a task owns: with their dK and dV they stay in L2

template <typename T>
struct BackwardArgs {
  const T *dout, *q, *k, *v, *lse, *delta;  // delta[i] = dout[i] . out[i]
  int64_t L, S, E, Ev;
  bool causal;
  T scale;
  const MaskView& mask;
};

// The key block [j0, j0 + cols) of batch entry b: dk and dv rows of those keys, and dq (rows of b) added into.
template <typename T>
void key_block_backward(const BackwardArgs<T>& a, int64_t b, int64_t j0, int64_t cols, T* p, T* dp, T* dq, T* dk,
                        T* dv) {
  const T* kb = a.k + (b * a.S + j0) * a.E;
  const T* vb = a.v + (b * a.S + j0) * a.Ev;
  T* dkb = dk + (b * a.S + j0) * a.E;
  T* dvb = dv + (b * a.S + j0) * a.Ev;
  std::fill(dkb, dkb + cols * a.E, T(0));
  std::fill(dvb, dvb + cols * a.Ev, T(0));
  const int64_t mask_base = a.mask.data ? a.mask.batch_offset(b) : 0;
  // Causal (top-left): rows before j0 see none of these keys.
  for (int64_t i0 = a.causal ? j0 : 0; i0 < a.L; i0 += kQueryTile) {
    const int64_t rows = std::min(kQueryTile, a.L - i0);
    const T* qi = a.q + (b * a.L + i0) * a.E;
    const T* doi = a.dout + (b * a.L + i0) * a.Ev;
    gemm(false, true, rows, cols, a.E, a.scale, qi, a.E, kb, a.E, T(0), p, kKeyBlock);
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t i = i0 + r;
      T* s = p + r * kKeyBlock;
      const T lse = a.lse[b * a.L + i];
      const int64_t n = a.causal ? causal_cols(i, j0, cols) : cols;
      if (lse == -std::numeric_limits<T>::infinity()) {  // a row with every key masked has no gradient
        std::fill(s, s + cols, T(0));
        continue;
      }
      if (a.mask.data) a.mask.apply(s, mask_base, i, j0, n);
      exp_shifted_sum(s, n, lse);
      std::fill(s + n, s + cols, T(0));
    }
    gemm(true, false, cols, a.Ev, rows, T(1), p, kKeyBlock, doi, a.Ev, T(1), dvb, a.Ev);   // dV += P^T dO
    gemm(false, true, rows, cols, a.Ev, T(1), doi, a.Ev, vb, a.Ev, T(0), dp, kKeyBlock);  // dP = dO V^T
    for (int64_t r = 0; r < rows; ++r) {  // dS = P (dP - delta), in p
      T* s = p + r * kKeyBlock;
      const T* d = dp + r * kKeyBlock;
      const T delta = a.delta[b * a.L + i0 + r];
#pragma omp simd
      for (int64_t c = 0; c < cols; ++c) s[c] *= d[c] - delta;
    }
    gemm(true, false, cols, a.E, rows, a.scale, p, kKeyBlock, qi, a.E, T(1), dkb, a.E);         // dK += scale dS^T Q
    gemm(false, false, rows, a.E, cols, a.scale, p, kKeyBlock, kb, a.E, T(1), dq + i0 * a.E, a.E);  // dQ += scale dS K
  }
}

template <typename T>
void flash_backward(const BackwardArgs<T>& a, int64_t batch, T* dq, T* dk, T* dv) {
  const int64_t blocks = (a.S + kKeyBlock - 1) / kKeyBlock, units = batch * blocks;
  const auto first_row = [&](int64_t u) { return a.causal ? std::min(a.L, (u % blocks) * kKeyBlock) : int64_t(0); };
  const auto cost = [&](int64_t u) {
    const int64_t cols = std::min(kKeyBlock, a.S - (u % blocks) * kKeyBlock);
    return (a.L - first_row(u)) * cols + 8 * cols;
  };
  const int64_t work = 2 * batch * a.L * a.S * (a.E + a.Ev) / (a.causal ? 2 : 1);
  const std::vector<int64_t> bounds = split_by_cost(units, attention_threads(work), cost);
  const int64_t parts = (int64_t)bounds.size() - 1;
  const auto part_of = [&](int64_t u) { return int64_t(std::upper_bound(bounds.begin(), bounds.end(), u) - bounds.begin()) - 1; };
  // A batch entry whose key blocks span several parts gets its dQ summed from per-part buffers
  // afterwards, in part order (the same result every run).
  const auto shared = [&](int64_t b) { return part_of(b * blocks) != part_of((b + 1) * blocks - 1); };
  std::vector<std::vector<T>> partial(2 * parts);
  std::vector<int64_t> partial_batch(2 * parts, -1);
  std::fill(dq, dq + batch * a.L * a.E, T(0));
  parallel_for(parts, 1, [&](int64_t p0, int64_t p1) {
    std::vector<T> scratch(2 * kQueryTile * kKeyBlock);
    for (int64_t part = p0; part < p1; ++part) {
      for (int64_t u = bounds[part]; u < bounds[part + 1]; ++u) {
        const int64_t b = u / blocks, j0 = (u % blocks) * kKeyBlock;
        T* dq_b = dq + b * a.L * a.E;
        if (shared(b)) {
          const int64_t slot = 2 * part + (b == bounds[part] / blocks ? 0 : 1);
          if (partial_batch[slot] != b) {
            partial[slot].assign(a.L * a.E, T(0));
            partial_batch[slot] = b;
          }
          dq_b = partial[slot].data();
        }
        key_block_backward(a, b, j0, std::min(kKeyBlock, a.S - j0), scratch.data(),
                           scratch.data() + kQueryTile * kKeyBlock, dq_b, dk, dv);
      }
    }
  });
  for (int64_t slot = 0; slot < 2 * parts; ++slot) {
    if (partial_batch[slot] < 0) continue;
    T* dq_b = dq + partial_batch[slot] * a.L * a.E;
    const T* src = partial[slot].data();
#pragma omp simd
    for (int64_t x = 0; x < a.L * a.E; ++x) dq_b[x] += src[x];
  }
}

template <typename T>
std::vector<T> row_dots(const T* dout, const T* out, int64_t rows, int64_t Ev) {
  std::vector<T> delta(rows);
  parallel_for(rows, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(Ev, 1)), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      T s = 0;
#pragma omp simd reduction(+ : s)
      for (int64_t c = 0; c < Ev; ++c) s += dout[r * Ev + c] * out[r * Ev + c];
      delta[r] = s;
    }
  });
  return delta;
}

}  // namespace

std::tuple<Tensor, Tensor, Tensor> sdpa_flash_backward_cpu(const Tensor& grad_out, const Tensor& query,
                                                           const Tensor& key, const Tensor& value, const Tensor& out,
                                                           const Tensor& logsumexp, const Tensor& attn_mask,
                                                           bool is_causal, double scale) {
  const int64_t nd = query.dim();
  EMBER_CHECK(nd >= 2 && key.dim() == nd && value.dim() == nd, Runtime,
              "_sdpa_flash_backward: query, key and value must have the same number of dims (at least 2)");
  const DimVector batch_shape(query.sizes().begin(), query.sizes().end() - 2);
  const int64_t L = query.size(-2), E = query.size(-1), S = key.size(-2), Ev = value.size(-1);
  EMBER_CHECK(key.size(-1) == E && value.size(-2) == S, Runtime,
              "_sdpa_flash_backward: mismatched key or value shape");
  DimVector out_shape = batch_shape, lse_shape = batch_shape;
  out_shape.push_back(L);
  out_shape.push_back(Ev);
  lse_shape.push_back(L);
  int64_t batch = 1;
  for (int64_t d = 0; d < nd - 2; ++d) {
    EMBER_CHECK(key.size(d) == query.size(d) && value.size(d) == query.size(d), Runtime,
                "_sdpa_flash_backward: query, key and value must share their batch dims");
    batch *= query.size(d);
  }
  EMBER_CHECK(grad_out.sizes() == out_shape && out.sizes() == out_shape && logsumexp.sizes() == lse_shape, Runtime,
              "_sdpa_flash_backward: grad_out, out or logsumexp does not match the attention's shape");
  for (const Tensor* t : {&key, &value, &grad_out, &out, &logsumexp})
    EMBER_CHECK(t->dtype() == query.dtype(), Runtime,
                "_sdpa_flash_backward: key, value, grad_out, out and logsumexp must have query's dtype");
  Tensor dq = empty_tensor(query.sizes(), query.dtype()), dk = empty_tensor(key.sizes(), key.dtype()),
         dv = empty_tensor(value.sizes(), value.dtype());
  const Tensor mask = expand_mask(attn_mask, batch_shape, L, S, query.dtype(), "_sdpa_flash_backward");
  if (dq.numel() + dk.numel() + dv.numel() == 0) return {dq, dk, dv};
  const MaskView view = mask_view(mask, batch_shape);
  const Tensor g = ember::contiguous(grad_out), q = ember::contiguous(query), k = ember::contiguous(key),
               v = ember::contiguous(value), o = ember::contiguous(out), lse = ember::contiguous(logsumexp);
  keep_blas_single_threaded();
  const auto run = [&](auto zero) {
    using T = decltype(zero);
    const std::vector<T> delta = row_dots(g.data<T>(), o.data<T>(), batch * L, Ev);
    const BackwardArgs<T> args{g.data<T>(), q.data<T>(), k.data<T>(), v.data<T>(), lse.data<T>(), delta.data(),
                               L, S, E, Ev, is_causal, (T)scale, view};
    flash_backward<T>(args, batch, dq.data<T>(), dk.data<T>(), dv.data<T>());
  };
  if (query.dtype() == ScalarType::Float32) run(0.0f); else run(0.0);
  return {dq, dk, dv};
}

}  // namespace ember::cpu
