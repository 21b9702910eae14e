// The optimizers' multi-tensor updates on the CPU (_fused_adam, _fused_sgd): one pass over
// each tensor's elements, reading and writing every state once, where the same update made
// of ember ops reads and writes each tensor about ten times. All tensors of a call are cut
// into chunks of similar size and the chunks spread over one OpenMP region, so 100 small
// tensors cost one region, not 100. The per-element math follows PyTorch's single-tensor
// update op for op (float32 rounding alike); float16/bfloat16 compute in float32.
#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "ember/autograd.h"
#include "ember/dtype.h"
#include "ember/errors.h"
#include "ember/ops/_fused_adam.h"
#include "ember/ops/_fused_sgd.h"
#include "ember/ops/contiguous.h"
#include "ember/ops/copy_.h"
#include "ember/parallel.h"
#include "ember/tensor.h"

namespace ember::cpu {
namespace {

// A tensor the kernel reads or writes in place: itself when contiguous, else a contiguous copy
// that `commit` writes back.
struct Dense {
  Tensor orig, work;
  explicit Dense(const Tensor& t) : orig(t), work(t.is_contiguous() ? t : ember::contiguous(t)) {}
  void commit() const {
    if (work.is_same(orig)) orig.bump_version();
    else ember::copy_(orig, work, false);
  }
};

void check_list(const char* op, const char* name, const TensorList& list, const TensorList& params) {
  EMBER_CHECK(list.size() == params.size(), Runtime, op, ": expected ", params.size(), " tensors in ", name,
              " (one per parameter), got ", list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    const Tensor& t = list[i];
    const Tensor& p = params[i];
    EMBER_CHECK(t.defined(), Runtime, op, ": ", name, "[", i, "] is undefined");
    EMBER_CHECK(t.device().is_cpu(), Runtime, op, ": expected all tensors on cpu, but ", name, "[", i, "] is on ",
                t.device().str());
    EMBER_CHECK(t.sizes() == p.sizes(), Runtime, op, ": ", name, "[", i, "] of shape ", shape_str(t.sizes()),
                " does not match the parameter's shape ", shape_str(p.sizes()));
    EMBER_CHECK(t.dtype() == p.dtype(), Runtime, op, ": ", name, "[", i, "] has dtype ", dtype_name(t.dtype()),
                " but the parameter has ", dtype_name(p.dtype()));
  }
}

void check_params(const char* op, const TensorList& params) {
  for (size_t i = 0; i < params.size(); ++i) {
    EMBER_CHECK(params[i].defined() && params[i].device().is_cpu(), Runtime, op,
                ": expected all tensors on cpu, but params[", i, "] is not");
    if (!is_floating(params[i].dtype())) fail_dtype_not_implemented(op, params[i].dtype());
  }
}

// One piece of work: elements [begin, end) of tensor `index`.
struct Chunk {
  size_t index;
  int64_t begin, end;
};

std::vector<Chunk> make_chunks(const TensorList& params) {
  std::vector<Chunk> chunks;
  for (size_t i = 0; i < params.size(); ++i)
    for (int64_t b = 0, n = params[i].numel(); b < n; b += kGrainSize)
      chunks.push_back({i, b, std::min(n, b + kGrainSize)});
  return chunks;
}

// Runs body(index, begin, end) over every chunk, in parallel.
template <typename F>
void for_each_chunk(const TensorList& params, F&& body) {
  const std::vector<Chunk> chunks = make_chunks(params);
  parallel_for((int64_t)chunks.size(), 1, [&](int64_t b, int64_t e) {
    for (int64_t c = b; c < e; ++c) body(chunks[c].index, chunks[c].begin, chunks[c].end);
  });
}

// Adds one to a 0-d step counter and returns the new count.
double increment_step(const Tensor& step) {
  EMBER_CHECK(step.numel() == 1 && step.device().is_cpu(), Runtime,
              "_fused_adam: each state_step must be a one-element CPU tensor");
  double value = 0;
  visit_floating(step.dtype(), "_fused_adam", [&]<typename S>() {
    S* s = step.data<S>();
    *s = S(double(*s) + 1);
    value = double(*s);
  });
  step.bump_version();
  return value;
}

// PyTorch's CPU lerp, which switches form at weight 0.5 to stay exact at both ends.
template <typename M>
inline M lerp(M self, M end, M weight) {
  return std::abs(weight) < M(0.5) ? self + weight * (end - self) : end - (end - self) * (M(1) - weight);
}

template <typename M>
inline M nan_max(M a, M b) {
  return (std::isnan(a) || a > b) ? a : b;
}

// Per-tensor constants of one Adam step.
struct AdamScalars {
  double lr, beta1, beta2, weight_decay, eps, step_size, bias_correction2_sqrt;
  bool amsgrad, maximize, decoupled;
};

// Calls f(std::bool_constant<b>{}): options become template arguments, so each inner loop has no
// branch and vectorises.
template <typename F>
void with_bool(bool b, F&& f) {
  if (b) f(std::true_type{});
  else f(std::false_type{});
}

// kL2: weight decay added to the gradient; decoupled decay scales the parameter by `decay` (1 without).
template <typename T, bool kL2, bool kAmsgrad>
void adam_chunk(T* param, const T* grad, T* exp_avg, T* exp_avg_sq, T* max_exp_avg_sq, int64_t n,
                const AdamScalars& a) {
  using M = opmath_t<T>;
  const bool decoupled = a.decoupled && a.weight_decay != 0;
  const M sign = M(a.maximize ? -1 : 1), decay = M(decoupled ? 1 - a.lr * a.weight_decay : 1),
          wd = M(a.weight_decay), w1 = M(1 - a.beta1), b2 = M(a.beta2), w2 = M(1 - a.beta2),
          bc2 = M(a.bias_correction2_sqrt), eps = M(a.eps), neg_step = M(-a.step_size);
  // The tensors never overlap (each is its own state), so the loop may be vectorised.
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    M g = sign * M(grad[i]);
    const M p = M(param[i]) * decay;
    if constexpr (kL2) g = g + wd * p;
    const M m = lerp(M(exp_avg[i]), g, w1);
    const M v = M(T(M(exp_avg_sq[i]) * b2)) + w2 * g * g;
    M second = v;
    if constexpr (kAmsgrad) {
      second = nan_max(M(max_exp_avg_sq[i]), v);
      max_exp_avg_sq[i] = T(second);
    }
    const M denom = std::sqrt(second) / bc2 + eps;
    exp_avg[i] = T(m);
    exp_avg_sq[i] = T(v);
    param[i] = T(p + neg_step * m / denom);
  }
}

struct SgdScalars {
  double lr, momentum, dampening, weight_decay;
  bool nesterov, maximize;
};

// A fresh buffer starts as the gradient; `buf` is read even then (and the value dropped), so the
// loop has no branch.
template <typename T, bool kWeightDecay, bool kMomentum>
void sgd_chunk(T* param, const T* grad, T* buf, bool fresh, int64_t n, const SgdScalars& s) {
  using M = opmath_t<T>;
  const M sign = M(s.maximize ? -1 : 1), wd = M(s.weight_decay), mom = M(s.momentum), w = M(1 - s.dampening),
          neg_lr = M(-s.lr);
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    M g = sign * M(grad[i]);
    const M p = M(param[i]);
    if constexpr (kWeightDecay) g = g + wd * p;
    if constexpr (kMomentum) {
      const M old = M(T(M(buf[i]) * mom)) + w * g;
      const M b = fresh ? g : old;
      buf[i] = T(b);
      g = s.nesterov ? g + mom * b : b;
    }
    param[i] = T(p + neg_lr * g);
  }
}

std::vector<Dense> dense_all(const TensorList& list) {
  return std::vector<Dense>(list.begin(), list.end());
}

void commit_all(const std::vector<Dense>& list) {
  for (const Dense& d : list) d.commit();
}

template <typename T>
T* ptr(const std::vector<Dense>& list, size_t i, int64_t offset) {
  return list.empty() ? nullptr : list[i].work.data<T>() + offset;
}

}  // namespace

void fused_adam_cpu(const TensorList& params, const TensorList& grads, const TensorList& exp_avgs,
                    const TensorList& exp_avg_sqs, const TensorList& max_exp_avg_sqs, const TensorList& state_steps,
                    double lr, double beta1, double beta2, double weight_decay, double eps, bool amsgrad,
                    bool maximize, bool decoupled_weight_decay) {
  const char* op = "_fused_adam";
  check_params(op, params);
  check_list(op, "grads", grads, params);
  check_list(op, "exp_avgs", exp_avgs, params);
  check_list(op, "exp_avg_sqs", exp_avg_sqs, params);
  if (amsgrad) check_list(op, "max_exp_avg_sqs", max_exp_avg_sqs, params);
  EMBER_CHECK(state_steps.size() == params.size(), Runtime, op, ": expected ", params.size(),
              " tensors in state_steps (one per parameter), got ", state_steps.size());
  NoGradGuard no_grad;  // writing back a non-contiguous state is not part of any graph
  std::vector<AdamScalars> scalars;
  for (const Tensor& step_t : state_steps) {
    const double step = increment_step(step_t);
    const double bias_correction1 = 1 - std::pow(beta1, step), bias_correction2 = 1 - std::pow(beta2, step);
    scalars.push_back({lr, beta1, beta2, weight_decay, eps, lr / bias_correction1, std::sqrt(bias_correction2),
                       amsgrad, maximize, decoupled_weight_decay});
  }
  const std::vector<Dense> p = dense_all(params), g = dense_all(grads), m = dense_all(exp_avgs),
                           v = dense_all(exp_avg_sqs), vmax = amsgrad ? dense_all(max_exp_avg_sqs) : std::vector<Dense>();
  for_each_chunk(params, [&](size_t i, int64_t b, int64_t e) {
    const AdamScalars& a = scalars[i];
    visit_floating(params[i].dtype(), op, [&]<typename T>() {
      with_bool(a.weight_decay != 0 && !a.decoupled, [&](auto l2) {
        with_bool(a.amsgrad, [&](auto amsgrad) {
          adam_chunk<T, l2, amsgrad>(ptr<T>(p, i, b), ptr<T>(g, i, b), ptr<T>(m, i, b), ptr<T>(v, i, b),
                                     ptr<T>(vmax, i, b), e - b, a);
        });
      });
    });
  });
  for (const auto* list : {&p, &m, &v, &vmax}) commit_all(*list);
}

void fused_sgd_cpu(const TensorList& params, const TensorList& grads, const TensorList& momentum_buffers,
                   const IntList& fresh_buffers, double weight_decay, double momentum, double lr, double dampening,
                   bool nesterov, bool maximize) {
  const char* op = "_fused_sgd";
  check_params(op, params);
  check_list(op, "grads", grads, params);
  const bool has_momentum = momentum != 0;
  if (has_momentum) check_list(op, "momentum_buffers", momentum_buffers, params);
  std::vector<bool> fresh(params.size(), false);
  for (int64_t i : fresh_buffers) {
    EMBER_CHECK(i >= 0 && i < (int64_t)params.size(), Index, op, ": fresh buffer index ", i, " out of range");
    fresh[i] = true;
  }
  NoGradGuard no_grad;
  const SgdScalars s{lr, momentum, dampening, weight_decay, nesterov, maximize};
  const std::vector<Dense> p = dense_all(params), g = dense_all(grads),
                           buf = has_momentum ? dense_all(momentum_buffers) : std::vector<Dense>();
  for_each_chunk(params, [&](size_t i, int64_t b, int64_t e) {
    visit_floating(params[i].dtype(), op, [&]<typename T>() {
      with_bool(weight_decay != 0, [&](auto decay) {
        with_bool(has_momentum, [&](auto with_momentum) {
          sgd_chunk<T, decay, with_momentum>(ptr<T>(p, i, b), ptr<T>(g, i, b), ptr<T>(buf, i, b), fresh[i], e - b, s);
        });
      });
    });
  });
  commit_all(p);
  commit_all(buf);
}

}  // namespace ember::cpu
