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
  const Rows<const T*>&dout, &q, &k, &v;
  const Rows<T*>&dk, &dv;
  const T *lse, *delta;  // delta[i] = dout[i] . out[i]
  int64_t L, S, E, Ev;
  bool causal;
  T scale;
  const MaskView& mask;
};

// The key block [j0, j0 + cols) of batch entry b: dk and dv rows of those keys, and dq (b's rows, ldq apart)
// added into.
template <typename T>
void key_block_backward(const BackwardArgs<T>& a, int64_t b, int64_t j0, int64_t cols, T* p, T* dp, T* dq,
                        int64_t ldq) {
  const T* kb = a.k.row(b, j0);
  const T* vb = a.v.row(b, j0);
  T* dkb = a.dk.row(b, j0);
  T* dvb = a.dv.row(b, j0);
  for (int64_t c = 0; c < cols; ++c) {
    std::fill(dkb + c * a.dk.ld, dkb + c * a.dk.ld + a.E, T(0));
    std::fill(dvb + c * a.dv.ld, dvb + c * a.dv.ld + a.Ev, T(0));
  }
  const int64_t mask_base = a.mask.data ? a.mask.batch_offset(b) : 0;
  // Causal (top-left): rows before j0 see none of these keys, and a tile's rows only the first `seen` keys.
  for (int64_t i0 = a.causal ? j0 : 0; i0 < a.L; i0 += kQueryTile) {
    const int64_t rows = std::min(kQueryTile, a.L - i0);
    const int64_t seen = a.causal ? std::min(cols, i0 + rows - j0) : cols;
    const T* qi = a.q.row(b, i0);
    const T* doi = a.dout.row(b, i0);
    gemm(false, true, rows, seen, a.E, a.scale, qi, a.q.ld, kb, a.k.ld, T(0), p, kKeyBlock);
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t i = i0 + r;
      T* s = p + r * kKeyBlock;
      const T lse = a.lse[b * a.L + i];
      const int64_t n = a.causal ? causal_cols(i, j0, seen) : seen;
      if (lse == -std::numeric_limits<T>::infinity()) {  // a row with every key masked has no gradient
        std::fill(s, s + seen, T(0));
        continue;
      }
      if (a.mask.data) a.mask.apply(s, mask_base, i, j0, n);
      exp_shifted_sum(s, n, lse);
      std::fill(s + n, s + seen, T(0));
    }
    gemm(true, false, seen, a.Ev, rows, T(1), p, kKeyBlock, doi, a.dout.ld, T(1), dvb, a.dv.ld);   // dV += P^T dO
    gemm(false, true, rows, seen, a.Ev, T(1), doi, a.dout.ld, vb, a.v.ld, T(0), dp, kKeyBlock);  // dP = dO V^T
    for (int64_t r = 0; r < rows; ++r) {  // dS = P (dP - delta), in p
      T* s = p + r * kKeyBlock;
      const T* d = dp + r * kKeyBlock;
      const T delta = a.delta[b * a.L + i0 + r];
#pragma omp simd
      for (int64_t c = 0; c < seen; ++c) s[c] *= d[c] - delta;
    }
    gemm(true, false, seen, a.E, rows, a.scale, p, kKeyBlock, qi, a.q.ld, T(1), dkb, a.dk.ld);  // dK += scale dS^T Q
    gemm(false, false, rows, a.E, seen, a.scale, p, kKeyBlock, kb, a.k.ld, T(1), dq + i0 * ldq, ldq);  // dQ += dS K
  }
}

template <typename T>
void flash_backward(const BackwardArgs<T>& a, int64_t batch, const Rows<T*>& dq) {
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
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < a.L; ++i) std::fill(dq.row(b, i), dq.row(b, i) + a.E, T(0));
  parallel_for(parts, 1, [&](int64_t p0, int64_t p1) {
    std::vector<T> scratch(2 * kQueryTile * kKeyBlock);
    for (int64_t part = p0; part < p1; ++part) {
      for (int64_t u = bounds[part]; u < bounds[part + 1]; ++u) {
        const int64_t b = u / blocks, j0 = (u % blocks) * kKeyBlock;
        T* dq_b = dq.row(b, 0);
        int64_t ldq = dq.ld;
        if (shared(b)) {
          const int64_t slot = 2 * part + (b == bounds[part] / blocks ? 0 : 1);
          if (partial_batch[slot] != b) {
            partial[slot].assign(a.L * a.E, T(0));
            partial_batch[slot] = b;
          }
          dq_b = partial[slot].data();
          ldq = a.E;
        }
        key_block_backward(a, b, j0, std::min(kKeyBlock, a.S - j0), scratch.data(),
                           scratch.data() + kQueryTile * kKeyBlock, dq_b, ldq);
      }
    }
  });
  for (int64_t slot = 0; slot < 2 * parts; ++slot) {
    if (partial_batch[slot] < 0) continue;
    for (int64_t i = 0; i < a.L; ++i) {
      T* dq_row = dq.row(partial_batch[slot], i);
      const T* src = partial[slot].data() + i * a.E;
#pragma omp simd
      for (int64_t c = 0; c < a.E; ++c) dq_row[c] += src[c];
    }
  }
}

template <typename T>
std::vector<T> row_dots(const Rows<const T*>& dout, const Rows<const T*>& out, int64_t batch, int64_t L, int64_t Ev) {
  std::vector<T> delta(batch * L);
  parallel_for(batch * L, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(Ev, 1)), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const T *g = dout.row(r / L, r % L), *o = out.row(r / L, r % L);
      T s = 0;
#pragma omp simd reduction(+ : s)
      for (int64_t c = 0; c < Ev; ++c) s += g[c] * o[c];
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
  // Each gradient laid out as its input: the views of a fused qkv projection get theirs back without a copy.
  Tensor dq = empty_in_layout_of(query, query.sizes()), dk = empty_in_layout_of(key, key.sizes()),
         dv = empty_in_layout_of(value, value.sizes());
  const Tensor mask = expand_mask(attn_mask, batch_shape, L, S, query.dtype(), "_sdpa_flash_backward");
  if (dq.numel() + dk.numel() + dv.numel() == 0) return {dq, dk, dv};
  const MaskView view = mask_view(mask, batch_shape);
  const Tensor g = rows_in_place(grad_out), q = rows_in_place(query), k = rows_in_place(key),
               v = rows_in_place(value), o = rows_in_place(out), lse = ember::contiguous(logsumexp);
  keep_blas_single_threaded();
  const auto run = [&](auto zero) {
    using T = decltype(zero);
    const Rows<const T*> gr = rows_of<T>(g), qr = rows_of<T>(q), kr = rows_of<T>(k), vr = rows_of<T>(v);
    const Rows<T*> dkr = rows_of<T, T*>(dk), dvr = rows_of<T, T*>(dv);
    const std::vector<T> delta = row_dots(gr, rows_of<T>(o), batch, L, Ev);
    const BackwardArgs<T> args{gr, qr, kr, vr, dkr, dvr, lse.data<T>(), delta.data(), L, S, E, Ev, is_causal, (T)scale,
                               view};
    flash_backward<T>(args, batch, rows_of<T, T*>(dq));
  };
  if (query.dtype() == ScalarType::Float32) run(0.0f); else run(0.0);
  return {dq, dk, dv};
}

}  // namespace ember::cpu
