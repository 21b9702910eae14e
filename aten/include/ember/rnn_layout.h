#pragma once
// Shared by the fused recurrent kernels (cpu/rnn.cpp) and their ember-ops reference
// (composite/rnn.cpp): the cell type, the packed-sequence row layout and the argument checks.
#include <cstdint>
#include <string>
#include <vector>

#include "ember/dtype.h"
#include "ember/errors.h"
#include "ember/tensor.h"

namespace ember::rnn {

// Gate elements (rows x gates x hidden) per OpenMP chunk of a step's fused gate math; each
// costs a few exp/tanh, so the bar is below kGrainSize (in _C._thresholds() as rnn_gate_grain).
constexpr int64_t kRnnGateGrain = 8192;

enum class Mode { Tanh, Relu, Lstm, Gru };

// PyTorch's mode names (torch.nn.RNNBase.mode).
inline Mode parse_mode(const std::string& name, const char* op) {
  if (name == "RNN_TANH") return Mode::Tanh;
  if (name == "RNN_RELU") return Mode::Relu;
  if (name == "LSTM") return Mode::Lstm;
  if (name == "GRU") return Mode::Gru;
  EMBER_FAIL(Value, op, ": unknown recurrent mode '", name, "' (expected RNN_TANH, RNN_RELU, LSTM or GRU)");
}

inline int64_t gate_count(Mode m) { return m == Mode::Lstm ? 4 : m == Mode::Gru ? 3 : 1; }

// Step t of a packed sequence owns rows offset[t] .. offset[t] + batch_sizes[t]; the steps run
// in order t = 0..T-1, or T-1..0 for the reverse direction.
struct Layout {
  std::vector<int64_t> batch_sizes, offset;
  int64_t T = 0, B = 0, N = 0;
  bool reverse = false;
  Layout(const IntList& sizes, bool rev) : batch_sizes(sizes.begin(), sizes.end()), reverse(rev) {
    T = (int64_t)batch_sizes.size();
    B = T ? batch_sizes[0] : 0;
    for (int64_t t = 0; t < T; ++t) {
      offset.push_back(N);
      N += batch_sizes[t];
    }
  }
  int64_t step(int64_t s) const { return reverse ? T - 1 - s : s; }
  // The step run before t (-1 when t is the first): its rows b < its batch size hold the state t reads.
  int64_t previous(int64_t t) const {
    const int64_t p = reverse ? t + 1 : t - 1;
    return p >= 0 && p < T ? p : -1;
  }
};

inline void check_matrix(const Tensor& t, int64_t rows, int64_t cols, const char* what, const char* op) {
  EMBER_CHECK(t.dim() == 2 && t.size(0) == rows && t.size(1) == cols, Runtime, op, ": expected ", what,
              " of size [", rows, ", ", cols, "], got ", t.sizes());
}

inline void check_args(const Layout& L, Mode mode, const Tensor& input, const Tensor& hx, const Tensor& cx,
                       const Tensor& w_ih, const Tensor& w_hh, const Tensor& b_ih, const Tensor& b_hh,
                       const Tensor& w_hr, const char* op) {
  EMBER_CHECK(L.T > 0, Runtime, op, ": batch_sizes must not be empty");
  for (int64_t t = 0; t < L.T; ++t)
    EMBER_CHECK(L.batch_sizes[t] > 0 && (t == 0 || L.batch_sizes[t] <= L.batch_sizes[t - 1]), Runtime, op,
                ": batch_sizes must be positive and non-increasing");
  EMBER_CHECK(input.dim() == 2 && input.size(0) == L.N, Runtime, op, ": expected input of size [", L.N,
              ", input_size] (the sum of batch_sizes rows), got ", input.sizes());
  EMBER_CHECK(w_ih.dim() == 2 && w_ih.size(0) % gate_count(mode) == 0, Runtime, op,
              ": weight_ih must be 2-D with a multiple of ", gate_count(mode), " rows");
  const int64_t H = w_ih.size(0) / gate_count(mode), Hout = w_hr.defined() ? w_hr.size(0) : H;
  EMBER_CHECK(!w_hr.defined() || mode == Mode::Lstm, Runtime, op, ": only an LSTM takes a projection weight");
  check_matrix(w_ih, gate_count(mode) * H, input.size(1), "weight_ih", op);
  check_matrix(w_hh, gate_count(mode) * H, Hout, "weight_hh", op);
  if (w_hr.defined()) check_matrix(w_hr, Hout, H, "weight_hr", op);
  for (const Tensor* b : {&b_ih, &b_hh})
    EMBER_CHECK(!b->defined() || (b->dim() == 1 && b->size(0) == gate_count(mode) * H), Runtime, op,
                ": expected biases of size [", gate_count(mode) * H, "]");
  for (const Tensor* t : {&hx, &cx, &w_ih, &w_hh, &b_ih, &b_hh, &w_hr})
    EMBER_CHECK(!t->defined() || t->dtype() == input.dtype(), Runtime, op,
                ": expected every tensor to have the input's dtype ", dtype_name(input.dtype()), ", got ",
                dtype_name(t->dtype()));
  check_matrix(hx, L.B, Hout, "hx", op);
  EMBER_CHECK(cx.defined() == (mode == Mode::Lstm), Runtime, op, ": cx is given exactly for an LSTM");
  if (cx.defined()) check_matrix(cx, L.B, H, "cx", op);
}

}  // namespace ember::rnn
