// The recurrent layer's gradient and tangent. _rnn_fused's gradient is the kernel
// _rnn_fused_backward unless that gradient must itself be differentiated (create_graph,
// or a tangent on its inputs): then the layer is rerun in ember ops (the same math, one
// op per gate) and autograd differentiates that with create_graph, to any order.
// The tangent (forward mode) uses two reverse passes over the same rerun: the
// gradient g(v) = J^T v is linear in v, so J t = d<g(v), t>/dv.
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "ember/autograd.h"
#include "ember/errors.h"
#include "ember/forward_ad.h"
#include "ember/ops/_rnn_backward.h"
#include "ember/ops/_rnn_fused_backward.h"
#include "ember/ops/_rnn_fused_jvp.h"
#include "ember/ops/_rnn_reference.h"
#include "ember/ops/add.h"
#include "ember/ops/cat.h"
#include "ember/ops/mm.h"
#include "ember/ops/mul.h"
#include "ember/ops/narrow.h"
#include "ember/ops/relu.h"
#include "ember/ops/sigmoid.h"
#include "ember/ops/sub.h"
#include "ember/ops/sum.h"
#include "ember/ops/t.h"
#include "ember/ops/tanh.h"
#include "ember/ops/view.h"
#include "ember/ops/zeros.h"
#include "ember/rnn_layout.h"
#include "ember/tensor.h"

namespace ember::native {

namespace {

using rnn::Mode;

Tensor linear(const Tensor& x, const Tensor& w, const Tensor& b) {
  const Tensor y = ember::mm(x, ember::t(w));
  return b.defined() ? ember::add(y, b) : y;
}

Tensor gate(const Tensor& gates, int64_t k, int64_t H) { return ember::narrow(gates, 1, k * H, H); }

// `fresh` rows 0..bs of the carried state, the rest unchanged.
Tensor carry(const Tensor& fresh, const Tensor& state) {
  const int64_t bs = fresh.size(0), B = state.size(0);
  return bs == B ? fresh : ember::cat({fresh, ember::narrow(state, 0, bs, B - bs)}, 0);
}

using Inputs = std::vector<Tensor>;  // input, hx, cx, w_ih, w_hh, b_ih, b_hh, w_hr

}  // namespace

Tensor _rnn_reference(const Tensor& input, const Tensor& hx, const Tensor& cx, const Tensor& w_ih,
                      const Tensor& w_hh, const Tensor& b_ih, const Tensor& b_hh, const Tensor& w_hr,
                      const IntList& batch_sizes, const std::string& mode_name, bool reverse) {
  const Mode mode = rnn::parse_mode(mode_name, "_rnn_reference");
  const rnn::Layout L(batch_sizes, reverse);
  rnn::check_args(L, mode, input, hx, cx, w_ih, w_hh, b_ih, b_hh, w_hr, "_rnn_reference");
  const int64_t H = w_ih.size(0) / rnn::gate_count(mode);
  const Tensor xg = linear(input, w_ih, mode == Mode::Gru ? Tensor() : b_ih);
  Tensor h = hx, c = cx;
  std::vector<Tensor> rows(L.T);
  for (int64_t s = 0; s < L.T; ++s) {
    const int64_t t = L.step(s), bs = L.batch_sizes[t];
    const Tensor gi = ember::narrow(xg, 0, L.offset[t], bs), hb = ember::narrow(h, 0, 0, bs);
    if (mode == Mode::Lstm) {
      const Tensor gates = ember::add(gi, linear(hb, w_hh, b_hh));
      const Tensor c_new = ember::add(ember::mul(ember::sigmoid(gate(gates, 1, H)), ember::narrow(c, 0, 0, bs)),
                                      ember::mul(ember::sigmoid(gate(gates, 0, H)), ember::tanh(gate(gates, 2, H))));
      Tensor h_new = ember::mul(ember::sigmoid(gate(gates, 3, H)), ember::tanh(c_new));
      if (w_hr.defined()) h_new = ember::mm(h_new, ember::t(w_hr));
      rows[t] = ember::cat({h_new, c_new}, 1);
      h = carry(h_new, h);
      c = carry(c_new, c);
    } else if (mode == Mode::Gru) {
      const Tensor ga = b_ih.defined() ? ember::add(gi, b_ih) : gi, gh = linear(hb, w_hh, b_hh);
      const Tensor r = ember::sigmoid(ember::add(gate(ga, 0, H), gate(gh, 0, H)));
      const Tensor z = ember::sigmoid(ember::add(gate(ga, 1, H), gate(gh, 1, H)));
      const Tensor n = ember::tanh(ember::add(gate(ga, 2, H), ember::mul(r, gate(gh, 2, H))));
      rows[t] = ember::add(n, ember::mul(z, ember::sub(hb, n)));  // (1 - z) n + z h
      h = carry(rows[t], h);
    } else {
      const Tensor a = ember::add(gi, linear(hb, w_hh, b_hh));
      rows[t] = mode == Mode::Tanh ? ember::tanh(a) : ember::relu(a);
      h = carry(rows[t], h);
    }
  }
  return ember::cat(rows, 0);
}

namespace {

// Gradients of the ember-ops rerun with respect to each defined input, recorded (create_graph).
// An input that does not require grad is replaced by a leaf view of it (which keeps its
// tangent, for forward-over-reverse) so that it still gets one.
Inputs rerun_gradients(const Inputs& in, const Tensor& grad, const IntList& batch_sizes, const std::string& mode,
                       bool reverse, Tensor* states_out = nullptr) {
  AutoGradMode enable(true);
  Inputs leaves = in;
  TensorList wrt;
  std::vector<size_t> where;
  for (size_t i = 0; i < in.size(); ++i) {
    if (!in[i].defined()) continue;
    if (!in[i].requires_grad()) {
      leaves[i] = ember::view(in[i], in[i].sizes());
      leaves[i].set_requires_grad(true);
    }
    wrt.push_back(leaves[i]);
    where.push_back(i);
  }
  const Tensor states = ember::_rnn_reference(leaves[0], leaves[1], leaves[2], leaves[3], leaves[4], leaves[5],
                                              leaves[6], leaves[7], batch_sizes, mode, reverse);
  if (states_out) *states_out = states;
  const TensorList g = autograd::grad({states}, {grad}, wrt, /*retain_graph=*/true, /*create_graph=*/true,
                                      /*allow_unused=*/true);
  Inputs out(in.size());
  for (size_t k = 0; k < where.size(); ++k)
    out[where[k]] = g[k].defined() ? g[k] : ember::zeros(in[where[k]].sizes(), in[where[k]].dtype(),
                                                            in[where[k]].device());
  return out;
}

}  // namespace

std::tuple<Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor> _rnn_backward(
    const Tensor& grad, const Tensor& input, const Tensor& hx, const Tensor& cx, const Tensor& w_ih,
    const Tensor& w_hh, const Tensor& b_ih, const Tensor& b_hh, const Tensor& w_hr, const Tensor& states,
    const Tensor& workspace, const IntList& batch_sizes, const std::string& mode, bool reverse) {
  const Inputs in{input, hx, cx, w_ih, w_hh, b_ih, b_hh, w_hr};
  const bool differentiable =
      autograd::any_requires_grad({&grad, &input, &hx, &cx, &w_ih, &w_hh, &b_ih, &b_hh, &w_hr}) ||
      (forward_ad::maybe_active() && forward_ad::wanted({&grad, &input, &hx, &cx, &w_ih, &w_hh, &b_ih, &b_hh, &w_hr}));
  if (!differentiable)
    return ember::_rnn_fused_backward(grad, input, hx, cx, w_ih, w_hh, b_ih, b_hh, w_hr, states, workspace,
                                      batch_sizes, mode, reverse);
  const Tensor g = grad.defined() ? grad : ember::zeros(states.sizes(), states.dtype(), states.device());
  const Inputs r = rerun_gradients(in, g, batch_sizes, mode, reverse);
  return {r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7]};
}

Tensor _rnn_fused_jvp(const Tensor& input_t, const Tensor& hx_t, const Tensor& cx_t, const Tensor& w_ih_t,
                      const Tensor& w_hh_t, const Tensor& b_ih_t, const Tensor& b_hh_t, const Tensor& w_hr_t,
                      const Tensor& input, const Tensor& hx, const Tensor& cx, const Tensor& w_ih, const Tensor& w_hh,
                      const Tensor& b_ih, const Tensor& b_hh, const Tensor& w_hr, const IntList& batch_sizes,
                      const std::string& mode, bool reverse) {
  // The tangent's graph to the tangents and to the primals is kept when any of them requires grad, so a
  // reverse pass through it (reverse-over-forward) differentiates both; else nothing is recorded.
  const bool record =
      autograd::any_requires_grad({&input_t, &hx_t, &cx_t, &w_ih_t, &w_hh_t, &b_ih_t, &b_hh_t, &w_hr_t}) ||
      autograd::any_requires_grad({&input, &hx, &cx, &w_ih, &w_hh, &b_ih, &b_hh, &w_hr});
  AutoGradMode enable(true);
  Inputs in{input, hx, cx, w_ih, w_hh, b_ih, b_hh, w_hr};
  if (!record)
    for (Tensor& p : in)
      if (p.defined()) p = detach_copy(p);
  const Inputs tangents{input_t, hx_t, cx_t, w_ih_t, w_hh_t, b_ih_t, b_hh_t, w_hr_t};
  const rnn::Layout L(batch_sizes, reverse);
  const int64_t H = w_ih.size(0) / rnn::gate_count(rnn::parse_mode(mode, "_rnn_fused_jvp"));
  const int64_t width = (w_hr.defined() ? w_hr.size(0) : H) + (cx.defined() ? H : 0);
  Tensor v = ember::zeros({L.N, width}, input.dtype(), input.device());
  v.set_requires_grad(true);
  const Inputs g = rerun_gradients(in, v, batch_sizes, mode, reverse);
  Tensor dot;
  for (size_t i = 0; i < in.size(); ++i) {
    if (!tangents[i].defined() || !g[i].defined()) continue;
    const Tensor term = ember::sum(ember::mul(g[i], tangents[i]));
    dot = dot.defined() ? ember::add(dot, term) : term;
  }
  const TensorList jt =
      dot.defined() ? autograd::grad({dot}, {Tensor()}, {v}, record, record, /*allow_unused=*/true)
                    : TensorList{Tensor()};
  return jt[0].defined() ? jt[0] : ember::zeros(v.sizes(), v.dtype(), v.device());
}

}  // namespace ember::native
