// One recurrent layer (one direction) over a whole packed sequence on the CPU:
// one GEMM projects every step's input, then each step does one GEMM for the
// recurrence (two with an LSTM projection) and the fused gate math, in parallel
// over the step's rows above kRnnGateGrain elements (the GEMMs run outside any
// OpenMP region). The backward runs the steps in reverse with one GEMM per step
// for the carried gradient, then one GEMM each for the input and weight gradients.
//
// Rows: `input` is (N, I), step t owning rows offset[t] .. offset[t] + batch_sizes[t]
// (PackedSequence's layout; an unpacked (T, B) sequence has batch_sizes = [B] * T).
// `states` row r is the step's h (Hout wide), then for an LSTM its c (H wide).
// `workspace` row r holds the activated gates: LSTM i, f, g, o; GRU r, z, n and
// the recurrent part of n's pre-activation (h W_hn^T + b_hn); RNN nothing.
#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "ember/dtype.h"
#include "ember/errors.h"
#include "ember/math.h"
#include "ember/ops/_rnn_fused.h"
#include "ember/ops/_rnn_fused_backward.h"
#include "ember/ops/clone.h"
#include "ember/ops/contiguous.h"
#include "ember/ops/mm.h"
#include "ember/ops/narrow.h"
#include "ember/ops/sum.h"
#include "ember/ops/t.h"
#include "ember/ops/zeros.h"
#include "ember/parallel.h"
#include "ember/rnn_layout.h"
#include "ember/tensor.h"

namespace ember::cpu {
namespace {

using rnn::Mode;

template <typename T>
inline T logistic(T x) { return T(1) / (T(1) + math::exp(-x)); }

// f(b) for each row b of a step, in parallel when the step has enough gate elements.
template <typename F>
void for_rows(int64_t rows, int64_t width, F&& f) {
  parallel_for(rows, std::max<int64_t>(1, rnn::kRnnGateGrain / std::max<int64_t>(width, 1)),
               [&](int64_t b0, int64_t b1) {
                 for (int64_t b = b0; b < b1; ++b) f(b);
               });
}

template <typename T>
const T* ptr_or_null(const Tensor& t) { return t.defined() ? t.data<T>() : nullptr; }

struct Dims {
  int64_t N, B, I, H, Hout, G, S, W;
};

Dims dims_of(const rnn::Layout& L, const Tensor& input, const Tensor& w_ih, const Tensor& w_hh, const Tensor& w_hr,
             Mode mode) {
  Dims d;
  d.N = L.N;
  d.B = L.B;
  d.I = input.size(1);
  d.G = rnn::gate_count(mode);
  d.H = w_ih.size(0) / d.G;
  d.Hout = w_hr.defined() ? w_hr.size(0) : d.H;
  d.S = d.Hout + (mode == Mode::Lstm ? d.H : 0);
  d.W = (mode == Mode::Lstm || mode == Mode::Gru) ? 4 * d.H : 0;
  return d;
}

// The biases folded into the input projection once: b_ih + b_hh for every gate but GRU's n,
// whose b_hn is added inside r * (h W_hn^T + b_hn).
template <typename T>
void add_biases(T* xg, int64_t N, int64_t GH, int64_t H, Mode mode, const T* bi, const T* bh) {
  if (!bi && !bh) return;
  std::vector<T> bsum(GH);
  for (int64_t j = 0; j < GH; ++j)
    bsum[j] = (bi ? bi[j] : T(0)) + (bh && !(mode == Mode::Gru && j >= 2 * H) ? bh[j] : T(0));
  const T* b = bsum.data();
  parallel_for(N, std::max<int64_t>(1, kGrainSize / GH), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      T* row = xg + r * GH;
#pragma omp simd
      for (int64_t j = 0; j < GH; ++j) row[j] += b[j];
    }
  });
}

template <typename T>
void forward_impl(const rnn::Layout& L, const Dims& d, Mode mode, const Tensor& x, const Tensor& hx,
                  const Tensor& cx, const Tensor& w_ih, const Tensor& w_hh, const Tensor& b_ih, const Tensor& b_hh,
                  const Tensor& w_hr, const Tensor& states, const Tensor& ws) {
  const int64_t H = d.H, Hout = d.Hout, GH = d.G * H, S = d.S, W = d.W;
  const Tensor xg = ember::contiguous(ember::mm(x, ember::t(w_ih)));
  const Tensor whh_t = ember::t(w_hh), whr_t = w_hr.defined() ? ember::t(w_hr) : Tensor();
  Tensor h = ember::clone(ember::contiguous(hx));
  Tensor c = mode == Mode::Lstm ? ember::clone(ember::contiguous(cx)) : Tensor();
  Tensor hp = w_hr.defined() ? empty_tensor({d.B, H}, x.dtype()) : Tensor();
  const T* bh = ptr_or_null<T>(b_hh);
  add_biases(xg.data<T>(), d.N, GH, H, mode, ptr_or_null<T>(b_ih), bh);
  const T* bhn = mode == Mode::Gru && bh ? bh + 2 * H : nullptr;
  const T* xgp = xg.data<T>();
  T *st = states.data<T>(), *wsp = W ? ws.data<T>() : nullptr, *hbuf = h.data<T>();
  T *cbuf = c.defined() ? c.data<T>() : nullptr, *hpbuf = hp.defined() ? hp.data<T>() : nullptr;
  for (int64_t s = 0; s < L.T; ++s) {
    const int64_t t = L.step(s), bs = L.batch_sizes[t], r0 = L.offset[t];
    const Tensor hg = ember::contiguous(ember::mm(ember::narrow(h, 0, 0, bs), whh_t));
    const T* hgp = hg.data<T>();
    for_rows(bs, GH, [&](int64_t b) {
      const T* __restrict gi = xgp + (r0 + b) * GH;
      const T* __restrict gh = hgp + b * GH;
      T* __restrict out = st + (r0 + b) * S;
      T* __restrict hrow = hbuf + b * Hout;
      if (mode == Mode::Lstm) {
        T* __restrict w = wsp + (r0 + b) * W;
        T* __restrict crow = cbuf + b * H;
        T* __restrict hdst = hpbuf ? hpbuf + b * H : hrow;
#pragma omp simd
        for (int64_t j = 0; j < H; ++j) {
          const T i = logistic(gi[j] + gh[j]), f = logistic(gi[H + j] + gh[H + j]);
          const T g = math::tanh(gi[2 * H + j] + gh[2 * H + j]), o = logistic(gi[3 * H + j] + gh[3 * H + j]);
          const T cn = f * crow[j] + i * g;
          w[j] = i, w[H + j] = f, w[2 * H + j] = g, w[3 * H + j] = o;
          crow[j] = out[Hout + j] = cn;
          hdst[j] = o * math::tanh(cn);
        }
        if (!hpbuf) std::copy(hrow, hrow + H, out);
      } else if (mode == Mode::Gru) {
        T* __restrict w = wsp + (r0 + b) * W;
#pragma omp simd
        for (int64_t j = 0; j < H; ++j) {
          const T r = logistic(gi[j] + gh[j]), z = logistic(gi[H + j] + gh[H + j]);
          const T hn = gh[2 * H + j] + (bhn ? bhn[j] : T(0));
          const T n = math::tanh(gi[2 * H + j] + r * hn);
          const T h_new = n + z * (hrow[j] - n);
          w[j] = r, w[H + j] = z, w[2 * H + j] = n, w[3 * H + j] = hn;
          hrow[j] = out[j] = h_new;
        }
      } else if (mode == Mode::Tanh) {
#pragma omp simd
        for (int64_t j = 0; j < H; ++j) hrow[j] = out[j] = math::tanh(gi[j] + gh[j]);
      } else {
#pragma omp simd
        for (int64_t j = 0; j < H; ++j) {
          const T a = gi[j] + gh[j];
          hrow[j] = out[j] = a > T(0) ? a : T(0);
        }
      }
    });
    if (hpbuf) {  // LSTM with projection: h = (o * tanh(c)) W_hr^T
      const Tensor hproj = ember::contiguous(ember::mm(ember::narrow(hp, 0, 0, bs), whr_t));
      const T* src = hproj.data<T>();
      for (int64_t b = 0; b < bs; ++b)
        for (int64_t j = 0; j < Hout; ++j) hbuf[b * Hout + j] = st[(r0 + b) * S + j] = src[b * Hout + j];
    }
  }
}

// Copies the (bs x width) block `src` (row stride ld) into rows of `dst` (row stride ldd).
template <typename T>
void copy_block(T* dst, int64_t ldd, const T* src, int64_t ld, int64_t rows, int64_t width) {
  for (int64_t b = 0; b < rows; ++b)
    for (int64_t j = 0; j < width; ++j) dst[b * ldd + j] = src[b * ld + j];
}

struct Grads {
  Tensor input, hx, cx, w_ih, w_hh, b_ih, b_hh, w_hr;
};

// Backpropagation through time. dh/dc hold, per batch row, the gradient of the state that row
// carries at the current step (so after step 0 they are the initial states' gradients).
template <typename T>
void backward_impl(const rnn::Layout& L, const Dims& d, Mode mode, const Tensor& grad, const Tensor& x,
                   const Tensor& hx, const Tensor& cx, const Tensor& w_ih, const Tensor& w_hh, const Tensor& w_hr,
                   const Tensor& states, const Tensor& ws, Grads& out) {
  const int64_t H = d.H, Hout = d.Hout, GH = d.G * H, S = d.S, W = d.W, N = d.N;
  const bool gru = mode == Mode::Gru, lstm = mode == Mode::Lstm, proj = w_hr.defined();
  Tensor dh = ember::zeros(hx.sizes(), hx.dtype()), dc = lstm ? ember::zeros(cx.sizes(), cx.dtype()) : Tensor();
  Tensor dgi = empty_tensor({N, GH}, x.dtype()), dgh = gru ? empty_tensor({N, GH}, x.dtype()) : dgi;
  Tensor hprev = empty_tensor({N, Hout}, x.dtype());
  Tensor dh_all = proj ? empty_tensor({N, Hout}, x.dtype()) : Tensor();
  Tensor hp_all = proj ? empty_tensor({N, H}, x.dtype()) : Tensor();
  const T *g = grad.data<T>(), *st = states.data<T>(), *wsp = W ? ws.data<T>() : nullptr;
  const T *h0 = hx.data<T>(), *c0 = lstm ? cx.data<T>() : nullptr;
  T *dhp = dh.data<T>(), *dcp = lstm ? dc.data<T>() : nullptr, *dgip = dgi.data<T>(), *dghp = dgh.data<T>();
  T *hpr = hprev.data<T>(), *dha = proj ? dh_all.data<T>() : nullptr, *hpa = proj ? hp_all.data<T>() : nullptr;
  for (int64_t s = L.T - 1; s >= 0; --s) {
    const int64_t t = L.step(s), bs = L.batch_sizes[t], r0 = L.offset[t], p = L.previous(t);
    // The state step t read: the previous step's rows (all of them going forward, the first
    // pbs in reverse, where sequences start at their last step), then the initial state's.
    const int64_t pbs = p >= 0 ? std::min(L.batch_sizes[p], bs) : 0, pr0 = p >= 0 ? L.offset[p] : 0;
    copy_block(hpr + r0 * Hout, Hout, st + pr0 * S, S, pbs, Hout);
    copy_block(hpr + (r0 + pbs) * Hout, Hout, h0 + pbs * Hout, Hout, bs - pbs, Hout);
    for (int64_t b = 0; b < bs; ++b)
      for (int64_t j = 0; j < Hout; ++j) dhp[b * Hout + j] += g[(r0 + b) * S + j];
    Tensor dh_in;  // the gradient reaching the cell's own output (o * tanh(c) under a projection)
    if (proj) {
      copy_block(dha + r0 * Hout, Hout, dhp, Hout, bs, Hout);
      dh_in = ember::contiguous(ember::mm(ember::narrow(dh, 0, 0, bs), w_hr));
    }
    const T* dhin = proj ? dh_in.data<T>() : dhp;
    const int64_t ldin = proj ? H : Hout;
    for_rows(bs, GH, [&](int64_t b) {
      const int64_t r = r0 + b;
      const T* __restrict w = wsp ? wsp + r * W : nullptr;
      const T* dhr = dhin + b * ldin;  // not restrict: GRU rewrites this row in place
      T* __restrict dgr = dgip + r * GH;
      if (lstm) {
        const T* __restrict c_prev = b < pbs ? st + (pr0 + b) * S + Hout : c0 + b * H;
        const T* __restrict c_new = st + r * S + Hout;
        const T* __restrict gc = g + r * S + Hout;
        T* __restrict dcr = dcp + b * H;
#pragma omp simd
        for (int64_t j = 0; j < H; ++j) {
          const T i = w[j], f = w[H + j], gg = w[2 * H + j], o = w[3 * H + j], tc = math::tanh(c_new[j]);
          const T dct = dcr[j] + gc[j] + dhr[j] * o * (T(1) - tc * tc);
          dgr[j] = dct * gg * i * (T(1) - i);
          dgr[H + j] = dct * c_prev[j] * f * (T(1) - f);
          dgr[2 * H + j] = dct * i * (T(1) - gg * gg);
          dgr[3 * H + j] = dhr[j] * tc * o * (T(1) - o);
          dcr[j] = dct * f;
        }
        if (hpa) {  // the projection's input, for its weight's gradient
          T* __restrict hrow = hpa + r * H;
#pragma omp simd
          for (int64_t j = 0; j < H; ++j) hrow[j] = w[3 * H + j] * math::tanh(c_new[j]);
        }
      } else if (gru) {
        const T* __restrict h_prev = hpr + r * Hout;
        T* __restrict dghr = dghp + r * GH;
        T* dh_keep = dhp + b * Hout;  // the same row as dhr: each j reads, then writes, its own element
#pragma omp simd
        for (int64_t j = 0; j < H; ++j) {
          const T rg = w[j], z = w[H + j], n = w[2 * H + j], hn = w[3 * H + j], dhj = dhr[j];
          const T dan = dhj * (T(1) - z) * (T(1) - n * n);
          const T dar = dan * hn * rg * (T(1) - rg);
          const T daz = dhj * (h_prev[j] - n) * z * (T(1) - z);
          dgr[j] = dghr[j] = dar;
          dgr[H + j] = dghr[H + j] = daz;
          dgr[2 * H + j] = dan;
          dghr[2 * H + j] = dan * rg;
          dh_keep[j] = dhj * z;  // the direct path h_prev -> z * h_prev; the GEMM adds the rest
        }
      } else {
        const T* __restrict h_new = st + r * S;
        if (mode == Mode::Tanh) {
#pragma omp simd
          for (int64_t j = 0; j < H; ++j) dgr[j] = dhr[j] * (T(1) - h_new[j] * h_new[j]);
        } else {
#pragma omp simd
          for (int64_t j = 0; j < H; ++j) dgr[j] = h_new[j] > T(0) ? dhr[j] : T(0);
        }
      }
    });
    // Rows b < bs now carry the gradient of the state before step t.
    const Tensor carried = ember::contiguous(ember::mm(ember::narrow(dgh, 0, r0, bs), w_hh));
    const T* cp = carried.data<T>();
    for (int64_t b = 0; b < bs; ++b)
      for (int64_t j = 0; j < Hout; ++j) dhp[b * Hout + j] = (gru ? dhp[b * Hout + j] : T(0)) + cp[b * Hout + j];
  }
  out.input = ember::mm(dgi, w_ih);
  out.w_ih = ember::mm(ember::t(dgi), x);
  out.w_hh = ember::mm(ember::t(dgh), hprev);
  out.b_ih = ember::sum(dgi, IntList{0});
  out.b_hh = gru ? ember::sum(dgh, IntList{0}) : out.b_ih;
  if (proj) out.w_hr = ember::mm(ember::t(dh_all), hp_all);
  out.hx = dh;
  out.cx = dc;
}

}  // namespace

std::tuple<Tensor, Tensor> rnn_fused_cpu(const Tensor& input, const Tensor& hx, const Tensor& cx, const Tensor& w_ih,
                                         const Tensor& w_hh, const Tensor& b_ih, const Tensor& b_hh,
                                         const Tensor& w_hr, const IntList& batch_sizes, const std::string& mode_name,
                                         bool reverse) {
  const Mode mode = rnn::parse_mode(mode_name, "_rnn_fused");
  const rnn::Layout L(batch_sizes, reverse);
  rnn::check_args(L, mode, input, hx, cx, w_ih, w_hh, b_ih, b_hh, w_hr, "_rnn_fused");
  const Dims d = dims_of(L, input, w_ih, w_hh, w_hr, mode);
  Tensor states = empty_tensor({d.N, d.S}, input.dtype(), input.device());
  Tensor ws = empty_tensor({d.N, d.W}, input.dtype(), input.device());
  const Tensor x = ember::contiguous(input), bi = b_ih.defined() ? ember::contiguous(b_ih) : Tensor(),
               bh = b_hh.defined() ? ember::contiguous(b_hh) : Tensor();
  if (input.dtype() == ScalarType::Float32)
    forward_impl<float>(L, d, mode, x, hx, cx, w_ih, w_hh, bi, bh, w_hr, states, ws);
  else
    forward_impl<double>(L, d, mode, x, hx, cx, w_ih, w_hh, bi, bh, w_hr, states, ws);
  return {states, ws};
}

}  // namespace ember::cpu

namespace ember::cpu {

std::tuple<Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor> rnn_fused_backward_cpu(
    const Tensor& grad, const Tensor& input, const Tensor& hx, const Tensor& cx, const Tensor& w_ih,
    const Tensor& w_hh, const Tensor& b_ih, const Tensor& b_hh, const Tensor& w_hr, const Tensor& states,
    const Tensor& workspace, const IntList& batch_sizes, const std::string& mode_name, bool reverse) {
  const Mode mode = rnn::parse_mode(mode_name, "_rnn_fused_backward");
  const rnn::Layout L(batch_sizes, reverse);
  rnn::check_args(L, mode, input, hx, cx, w_ih, w_hh, b_ih, b_hh, w_hr, "_rnn_fused_backward");
  const Dims d = dims_of(L, input, w_ih, w_hh, w_hr, mode);
  rnn::check_matrix(states, d.N, d.S, "states", "_rnn_fused_backward");
  rnn::check_matrix(workspace, d.N, d.W, "workspace", "_rnn_fused_backward");
  const Tensor g =
      grad.defined() ? ember::contiguous(grad) : ember::zeros(states.sizes(), states.dtype(), states.device());
  rnn::check_matrix(g, d.N, d.S, "grad", "_rnn_fused_backward");
  const Tensor x = ember::contiguous(input), h0 = ember::contiguous(hx), c0 = cx.defined() ? ember::contiguous(cx) : cx;
  const Tensor st = ember::contiguous(states), ws = ember::contiguous(workspace);
  Grads out;
  if (input.dtype() == ScalarType::Float32)
    backward_impl<float>(L, d, mode, g, x, h0, c0, w_ih, w_hh, w_hr, st, ws, out);
  else
    backward_impl<double>(L, d, mode, g, x, h0, c0, w_ih, w_hh, w_hr, st, ws, out);
  if (!b_ih.defined()) out.b_ih = Tensor();
  if (!b_hh.defined()) out.b_hh = Tensor();
  return {out.input, out.hx, out.cx, out.w_ih, out.w_hh, out.b_ih, out.b_hh, out.w_hr};
}

}  // namespace ember::cpu
