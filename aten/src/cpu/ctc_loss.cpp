// The CTC loss on the CPU, as PyTorch's LossCTC.cpp (Graves et al. 2006): per sample, the alpha
// recursion in log space over the extended target (a blank before, between and after the labels)
// gives -log p(target | input); the backward runs the beta recursion and collects alpha * beta per
// class. Samples are independent, so the batch is split over the threads.
#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>
#include <utility>
#include <vector>

#include "ember/errors.h"
#include "ember/ops/_ctc_loss.h"
#include "ember/ops/_ctc_loss_backward.h"
#include "ember/ops/contiguous.h"
#include "ember/ops/to.h"
#include "ember/parallel.h"
#include "ember/tensor.h"

namespace ember::cpu {
namespace {

// Samples whose recursions together touch fewer cells than this share one thread.
constexpr int64_t kCtcSerialCells = 1 << 14;

template <typename T>
constexpr T kNegInf = -std::numeric_limits<T>::infinity();

// log(exp(a) + exp(b) + exp(c)), -inf when all three are: the largest term contributes exp(0) = 1,
// so two exps and a log1p per cell.
template <typename T>
inline T log_add3(T a, T b, T c) {
  if (a < b) std::swap(a, b);
  if (a < c) std::swap(a, c);
  if (a == kNegInf<T>) return a;
  return a + std::log1p(std::exp(b - a) + std::exp(c - a));
}

template <typename T>
inline T log_add(T a, T b) {
  if (a < b) std::swap(a, b);
  if (a == kNegInf<T>) return a;
  return a + std::log1p(std::exp(b - a));
}

// The checked arguments: log_probs (T, N, C) and int64 targets, both contiguous, and where each
// sample's labels start in `targets`.
struct CtcProblem {
  Tensor log_probs, targets;
  int64_t time, batch, classes, blank, max_target;
  std::vector<int64_t> offsets;
  const int64_t* input_lengths;
  const int64_t* target_lengths;

  CtcProblem(const Tensor& lp, const Tensor& tg, const IntList& in_lengths, const IntList& tg_lengths, int64_t blank_)
      : blank(blank_), input_lengths(in_lengths.data()), target_lengths(tg_lengths.data()) {
    EMBER_CHECK(lp.dim() == 3, Runtime, "ctc_loss: log_probs must be (T, N, C), got ", lp.dim(), " dims");
    time = lp.size(0);
    batch = lp.size(1);
    classes = lp.size(2);
    EMBER_CHECK(blank >= 0 && blank < classes, Runtime, "blank must be in label range");
    EMBER_CHECK((int64_t)in_lengths.size() == batch, Runtime, "input_lengths must be of size batch_size");
    EMBER_CHECK((int64_t)tg_lengths.size() == batch, Runtime, "target_lengths must be of size batch_size");
    const char* where = " (while checking arguments for ctc_loss_allocate_outputs)";
    for (const auto& [name, lengths] : {std::pair{"input_lengths", input_lengths}, std::pair{"target_lengths", target_lengths}})
      for (int64_t b = 0; b < batch; ++b)
        EMBER_CHECK(lengths[b] >= 0, Runtime, "Expected ", name, " to have value at least 0, but got value ",
                    lengths[b], where);
    EMBER_CHECK(tg.dim() == 1 || tg.dim() == 2, Runtime, "Expected 1 to 2 dimensions, but got ", tg.dim(),
                "-dimensional tensor for argument #2 'targets'", where);
    max_target = 0;
    int64_t total = 0;
    for (int64_t b = 0; b < batch; ++b) {
      offsets.push_back(tg.dim() == 1 ? total : b * tg.size(1));
      total += target_lengths[b];
      max_target = std::max(max_target, target_lengths[b]);
    }
    if (tg.dim() == 1)
      EMBER_CHECK(tg.size(0) == total, Runtime, "Expected tensor to have size ", total, " at dimension 0, but got size ",
                  tg.size(0), " for argument #2 'targets'", where);
    else
      EMBER_CHECK(tg.size(1) >= max_target, Runtime, "Expected tensor to have size at least ", max_target,
                  " at dimension 1, but got size ", tg.size(1), " for argument #2 'targets'", where);
    EMBER_CHECK(tg.dim() == 1 || tg.size(0) >= batch, Runtime, "Expected tensor to have size at least ", batch,
                " at dimension 0, but got size ", tg.size(0), " for argument #2 'targets'", where);
    for (int64_t b = 0; b < batch; ++b)
      EMBER_CHECK(input_lengths[b] <= time, Runtime, "Expected input_lengths to have value at most ", time,
                  ", but got value ", input_lengths[b], where);
    log_probs = ember::contiguous(lp);
    targets = ember::contiguous(ember::to_dtype(tg, ScalarType::Int64));
    const int64_t* t = targets.data<int64_t>();
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t i = 0; i < target_lengths[b]; ++i) {
        const int64_t v = t[offsets[b] + i];
        EMBER_CHECK(v >= 0 && v < classes, Runtime, "ctc_loss: target ", v, " of sample ", b,
                    " is out of the label range [0, ", classes, ")");
      }
  }

  int64_t positions() const { return 2 * max_target + 1; }

  // Sample b's extended labels, and whether position s may be entered from s - 2 (a label unlike
  // the one two back).
  void extended(int64_t b, std::vector<int64_t>& ext, std::vector<char>& skip) const {
    const int64_t n = 2 * target_lengths[b] + 1;
    const int64_t* t = targets.data<int64_t>() + offsets[b];
    ext.assign(n, blank);
    skip.assign(n, 0);
    for (int64_t i = 0; i < target_lengths[b]; ++i) ext[2 * i + 1] = t[i];
    for (int64_t s = 2; s < n; ++s) skip[s] = ext[s] != ext[s - 2];
  }

  template <typename F>
  void for_each_sample(F&& f) const {
    const int64_t cells = std::max<int64_t>(1, time * positions());
    parallel_for(batch, std::max<int64_t>(1, kCtcSerialCells / cells), [&](int64_t lo, int64_t hi) {
      std::vector<int64_t> ext;
      std::vector<char> skip;
      for (int64_t b = lo; b < hi; ++b) {
        extended(b, ext, skip);
        f(b, ext, skip);
      }
    });
  }
};

template <typename T>
void ctc_alpha(const CtcProblem& p, T* nll, T* log_alpha) {
  const T* lp = p.log_probs.data<T>();
  const int64_t N = p.batch, C = p.classes, S = p.positions();
  p.for_each_sample([&](int64_t b, const std::vector<int64_t>& ext, const std::vector<char>& skip) {
    T* alpha = log_alpha + b * p.time * S;
    std::fill(alpha, alpha + p.time * S, kNegInf<T>);
    const int64_t len = p.input_lengths[b], n = (int64_t)ext.size();
    if (len == 0) {  // an empty input has probability 1 of an empty target, 0 of any other
      nll[b] = n == 1 ? T(0) : -kNegInf<T>;
      return;
    }
    const T* lp0 = lp + b * C;
    alpha[0] = lp0[p.blank];
    if (n > 1) alpha[1] = lp0[ext[1]];
    for (int64_t t = 1; t < len; ++t) {
      const T* prev = alpha + (t - 1) * S;
      T* cur = alpha + t * S;
      const T* lpt = lp + (t * N + b) * C;
      for (int64_t s = 0; s < n; ++s) {
        const T a2 = s > 0 ? prev[s - 1] : kNegInf<T>, a3 = skip[s] ? prev[s - 2] : kNegInf<T>;
        cur[s] = log_add3(prev[s], a2, a3) + lpt[ext[s]];
      }
    }
    const T* last = alpha + (len - 1) * S;
    // With an empty target there is no label to end on, only the blank.
    nll[b] = n == 1 ? -last[0] : -log_add(last[n - 1], last[n - 2]);
  });
}

template <typename T>
void ctc_beta_grad(const CtcProblem& p, const T* grad_out, const T* nll, const T* log_alpha, bool zero_infinity,
                   T* grad) {
  const T* lp = p.log_probs.data<T>();
  const int64_t N = p.batch, C = p.classes, S = p.positions();
  p.for_each_sample([&](int64_t b, const std::vector<int64_t>& ext, const std::vector<char>& skip) {
    const int64_t len = p.input_lengths[b], n = (int64_t)ext.size();
    auto row = [&](int64_t t) { return grad + (t * N + b) * C; };
    for (int64_t t = 0; t < p.time; ++t) std::fill(row(t), row(t) + C, T(0));
    if (len == 0 || (zero_infinity && nll[b] == -kNegInf<T>)) return;
    const T* alpha = log_alpha + b * p.time * S;
    // grad rows hold log(sum over s with label c of alpha * beta) until the last pass.
    for (int64_t t = 0; t < len; ++t) std::fill(row(t), row(t) + C, kNegInf<T>);
    std::vector<T> beta_next(n, kNegInf<T>), beta(n);
    const T* lpl = lp + ((len - 1) * N + b) * C;
    beta_next[n - 1] = lpl[p.blank];
    row(len - 1)[p.blank] = alpha[(len - 1) * S + n - 1] + beta_next[n - 1];
    if (n > 1) {
      beta_next[n - 2] = lpl[ext[n - 2]];
      row(len - 1)[ext[n - 2]] = alpha[(len - 1) * S + n - 2] + beta_next[n - 2];
    }
    for (int64_t t = len - 2; t >= 0; --t) {
      const T* lpt = lp + (t * N + b) * C;
      const T* at = alpha + t * S;
      T* g = row(t);
      for (int64_t s = n - 1; s >= 0; --s) {
        const T b2 = s + 1 < n ? beta_next[s + 1] : kNegInf<T>;
        const T b3 = s + 2 < n && skip[s + 2] ? beta_next[s + 2] : kNegInf<T>;
        beta[s] = log_add3(beta_next[s], b2, b3) + lpt[ext[s]];
        T& collected = g[ext[s]];
        collected = log_add(collected, at[s] + beta[s]);
      }
      std::swap(beta, beta_next);
    }
    const T gr = grad_out[b], loss = nll[b];
    for (int64_t t = 0; t < len; ++t) {
      const T* lpt = lp + (t * N + b) * C;
      T* g = row(t);
      for (int64_t c = 0; c < C; ++c) g[c] = (std::exp(lpt[c]) - std::exp(g[c] + loss - lpt[c])) * gr;
    }
  });
}

// f.template operator()<T>() for float32 (float) or float64 (double) log_probs.
template <typename F>
void visit_ctc_dtype(ScalarType t, F&& f) {
  if (t != ScalarType::Float32 && t != ScalarType::Float64) fail_dtype_not_implemented("ctc_loss_cpu", t);
  if (t == ScalarType::Float32) f.template operator()<float>();
  else f.template operator()<double>();
}

}  // namespace

std::tuple<Tensor, Tensor> ctc_loss_cpu(const Tensor& log_probs, const Tensor& targets, const IntList& input_lengths,
                                        const IntList& target_lengths, int64_t blank, bool zero_infinity) {
  (void)zero_infinity;  // as ATen's _ctc_loss: the caller zeroes infinite losses, the backward their gradients
  visit_ctc_dtype(log_probs.dtype(), []<typename T>() {});
  const CtcProblem p(log_probs, targets, input_lengths, target_lengths, blank);
  Tensor nll = empty_tensor(DimVector{p.batch}, log_probs.dtype(), log_probs.device());
  Tensor log_alpha = empty_tensor(DimVector{p.batch, p.time, p.positions()}, log_probs.dtype(), log_probs.device());
  visit_ctc_dtype(log_probs.dtype(), [&]<typename T>() { ctc_alpha<T>(p, nll.data<T>(), log_alpha.data<T>()); });
  return {nll, log_alpha};
}

Tensor ctc_loss_backward_cpu(const Tensor& grad, const Tensor& log_probs, const Tensor& targets,
                             const IntList& input_lengths, const IntList& target_lengths,
                             const Tensor& neg_log_likelihood, const Tensor& log_alpha, int64_t blank,
                             bool zero_infinity) {
  const CtcProblem p(log_probs, targets, input_lengths, target_lengths, blank);
  const ScalarType t = log_probs.dtype();
  const Tensor g = ember::contiguous(ember::to_dtype(grad, t)), nll = ember::contiguous(neg_log_likelihood);
  const Tensor alpha = ember::contiguous(log_alpha);
  EMBER_CHECK(g.numel() == p.batch && nll.numel() == p.batch && nll.dtype() == t && alpha.dtype() == t &&
                  alpha.numel() == p.batch * p.time * p.positions(),
              Runtime, "_ctc_loss_backward: grad, neg_log_likelihood and log_alpha do not match log_probs");
  Tensor out = empty_tensor(log_probs.sizes(), t, log_probs.device());
  visit_ctc_dtype(t, [&]<typename T>() {
    ctc_beta_grad<T>(p, g.data<T>(), nll.data<T>(), alpha.data<T>(), zero_infinity, out.data<T>());
  });
  return out;
}

}  // namespace ember::cpu
