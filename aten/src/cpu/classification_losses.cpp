// The CPU kernels of the classification losses: nll_loss's forward (the loss and
// the total weight of the kept targets) and backward, and binary_cross_entropy.
// Targets run in parallel; every sum is taken over fixed blocks of targets and
// the block sums added in order, so the result does not depend on the thread count.
#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>
#include <vector>

#include "ember/dispatch.h"
#include "ember/dtype.h"
#include "ember/errors.h"
#include "ember/ops/_nll_loss_backward.h"
#include "ember/ops/_nll_loss_forward.h"
#include "ember/ops/binary_cross_entropy.h"
#include "ember/ops/contiguous.h"
#include "ember/ops/expand.h"
#include "ember/ops/reshape.h"
#include "ember/parallel.h"
#include "ember/tensor.h"

namespace ember::cpu {
namespace {

constexpr int64_t kSumBlock = 4096;  // targets per partial sum (fixed: the sums are deterministic)
enum Reduction : int64_t { kNone = 0, kMean = 1, kSum = 2 };

void check_reduction(int64_t reduction, const char* op) {
  EMBER_CHECK(reduction >= kNone && reduction <= kSum, Value, op, ": ", reduction,
              " is not a valid value for reduction (0 none, 1 mean, 2 sum)");
}

// Calls f(begin, end) over [0, n) in blocks of kSumBlock and returns the blocks' (a, b)
// partial sums added in block order.
template <typename F>
std::pair<double, double> blocked_sums(int64_t n, int64_t grain, F&& f) {
  const int64_t blocks = (n + kSumBlock - 1) / kSumBlock;
  std::vector<std::pair<double, double>> partial((size_t)blocks, {0.0, 0.0});
  parallel_for(blocks, std::max<int64_t>(1, grain / kSumBlock), [&](int64_t b, int64_t e) {
    for (int64_t k = b; k < e; ++k) partial[k] = f(k * kSumBlock, std::min(n, (k + 1) * kSumBlock));
  });
  std::pair<double, double> total{0.0, 0.0};
  for (const auto& p : partial) total = {total.first + p.first, total.second + p.second};
  return total;
}

// nll_loss's operands viewed as (N, C, S): `self` (C), (N, C) or (N, C, d1, ...), the int64
// targets (N * S), the optional class weights (C, contiguous).
struct NllOperands {
  int64_t N, C, S, sn, sc, ss;
  Tensor self, target, weight;
};

NllOperands nll_operands(const Tensor& self, const Tensor& target_, const Tensor& weight, const char* op) {
  EMBER_CHECK(self.dim() >= 1, Runtime, op, ": input tensor should be at least 1D");
  EMBER_CHECK(target_.dtype() == ScalarType::Int64 || target_.dtype() == ScalarType::UInt8, Runtime,
              "expected target dtype to be Long or Byte, but got ", dtype_title(target_.dtype()));
  NllOperands o;
  int64_t spatial = 1;  // the product of the dims after the class dim (explicit: -1 is ambiguous when empty)
  for (int64_t d = 2; d < self.dim(); ++d) spatial *= self.size(d);
  o.self = self.dim() > 3 ? ember::reshape(self, {self.size(0), self.size(1), spatial}) : self;
  o.N = self.dim() == 1 ? 1 : self.size(0);
  o.C = self.dim() == 1 ? self.size(0) : self.size(1);
  o.S = o.self.dim() == 3 ? o.self.size(2) : 1;
  o.sn = self.dim() == 1 ? 0 : o.self.stride(0);
  o.sc = o.self.stride(o.self.dim() == 1 ? 0 : 1);
  o.ss = o.self.dim() == 3 ? o.self.stride(2) : 0;
  EMBER_CHECK(target_.numel() == o.N * o.S, Runtime, op, ": size mismatch (got input: ", shape_str(self.sizes()),
              ", target: ", shape_str(target_.sizes()), ")");
  o.target = ember::contiguous(cast_to(target_, ScalarType::Int64));
  if (weight.defined()) {
    EMBER_CHECK(weight.dim() == 1 && weight.numel() == o.C, Runtime, op, ": weight tensor should be defined either for all ",
                o.C, " classes or no classes but got weight tensor of shape: ", shape_str(weight.sizes()));
    EMBER_CHECK(weight.dtype() == self.dtype(), Runtime, op, ": expected scalar type ", dtype_title(self.dtype()),
                " but found ", dtype_title(weight.dtype()));
    o.weight = ember::contiguous(weight);
  }
  return o;
}

// The first target (in order) that is neither ignore_index nor a class: IndexError.
void check_targets(const int64_t* t, int64_t n, int64_t C, int64_t ignore_index, const char* op) {
  bool ok = true;
#pragma omp simd reduction(&& : ok)
  for (int64_t i = 0; i < n; ++i) ok = ok && (t[i] == ignore_index || (t[i] >= 0 && t[i] < C));
  if (ok) return;
  for (int64_t i = 0; i < n; ++i)
    EMBER_CHECK(t[i] == ignore_index || (t[i] >= 0 && t[i] < C), Index, "Target ", t[i], " is out of bounds.");
}

}  // namespace

std::tuple<Tensor, Tensor> nll_loss_forward_cpu(const Tensor& self, const Tensor& target, const Tensor& weight,
                                                int64_t reduction, int64_t ignore_index) {
  check_reduction(reduction, "nll_loss");
  const NllOperands o = nll_operands(self, target, weight, "nll_loss");
  const int64_t n = o.N * o.S;
  const int64_t* t = o.target.data<int64_t>();
  check_targets(t, n, o.C, ignore_index, "nll_loss");
  Tensor output = empty_tensor(reduction == kNone ? target.sizes() : DimVector{}, self.dtype(), self.device());
  Tensor total_weight = empty_tensor({}, self.dtype(), self.device());
  visit_floating(self.dtype(), "nll_loss", [&]<typename T>() {
    using M = opmath_t<T>;
    const T* x = o.self.data<T>();
    const T* w = o.weight.defined() ? o.weight.data<T>() : nullptr;
    T* out = output.data<T>();
    // Loss and weight of target i (0 and 0 when ignored).
    auto term = [&](int64_t i, double& weight_i) -> double {
      const int64_t c = t[i];
      if (c == ignore_index) return weight_i = 0.0;
      weight_i = w ? double(M(w[c])) : 1.0;
      return -double(M(x[(i / o.S) * o.sn + c * o.sc + (i % o.S) * o.ss])) * weight_i;
    };
    if (reduction == kNone) {
      parallel_for(n, kGrainSize / 8, [&](int64_t b, int64_t e) {
        double unused;
        for (int64_t i = b; i < e; ++i) out[i] = static_cast<T>(M(term(i, unused)));
      });
      total_weight.data<T>()[0] = T(0);
      return;
    }
    const auto [loss, weight_sum] = blocked_sums(n, kGrainSize / 8, [&](int64_t b, int64_t e) {
      double l = 0, ws = 0, wi;
      for (int64_t i = b; i < e; ++i) {
        l += term(i, wi);
        ws += wi;
      }
      return std::pair<double, double>{l, ws};
    });
    total_weight.data<T>()[0] = static_cast<T>(M(weight_sum));
    // Mean over no kept target is 0 / 0 = nan, as PyTorch's.
    out[0] = static_cast<T>(M(reduction == kMean ? loss / weight_sum : loss));
  });
  return {output, total_weight};
}

Tensor nll_loss_backward_cpu(const Tensor& grad_output, const Tensor& self, const Tensor& target, const Tensor& weight,
                             int64_t reduction, int64_t ignore_index, const Tensor& total_weight) {
  check_reduction(reduction, "nll_loss_backward");
  const NllOperands o = nll_operands(self, target, weight, "nll_loss_backward");
  const int64_t n = o.N * o.S;
  EMBER_CHECK(reduction == kNone ? grad_output.numel() == n : grad_output.numel() == 1, Runtime,
              "nll_loss_backward: grad_output of shape ", shape_str(grad_output.sizes()),
              " does not match the loss of an input of shape ", shape_str(self.sizes()));
  EMBER_CHECK(total_weight.numel() == 1, Runtime, "nll_loss_backward: expected total_weight to be a single element "
              "tensor, got: ", shape_str(total_weight.sizes()));
  const int64_t* t = o.target.data<int64_t>();
  check_targets(t, n, o.C, ignore_index, "nll_loss_backward");
  // Contiguous, in self's shape; zero but at each kept target.
  Tensor grad_input = empty_tensor(self.sizes(), self.dtype(), self.device());
  const Tensor g = ember::contiguous(cast_to(grad_output, self.dtype()));
  const double scale = reduction == kMean ? 1.0 / total_weight.item().to_double() : 1.0;
  visit_floating(self.dtype(), "nll_loss_backward", [&]<typename T>() {
    using M = opmath_t<T>;
    const T* gp = g.data<T>();
    const T* w = o.weight.defined() ? o.weight.data<T>() : nullptr;
    T* gi = grad_input.data<T>();
    const int64_t CS = o.C * o.S;
    // Each thread zeroes, then fills, its own samples' planes (C * S elements each).
    parallel_for(o.N, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, CS)), [&](int64_t b, int64_t e) {
      std::fill(gi + b * CS, gi + e * CS, T(0));
      for (int64_t i = b * o.S; i < e * o.S; ++i) {
        const int64_t c = t[i];
        if (c == ignore_index) continue;
        const double go = double(M(gp[reduction == kNone ? i : 0]));
        gi[(i / o.S) * CS + c * o.S + i % o.S] = static_cast<T>(M(-(w ? double(M(w[c])) : 1.0) * go * scale));
      }
    });
  });
  return grad_input;
}

Tensor binary_cross_entropy_cpu(const Tensor& self, const Tensor& target_, const Tensor& weight_, int64_t reduction) {
  check_reduction(reduction, "binary_cross_entropy");
  EMBER_CHECK(target_.sizes() == self.sizes(), Runtime, "binary_cross_entropy: target of shape ",
              shape_str(target_.sizes()), " does not match input of shape ", shape_str(self.sizes()));
  EMBER_CHECK(target_.dtype() == self.dtype(), Runtime, "binary_cross_entropy: Found dtype ",
              dtype_title(target_.dtype()), " but expected ", dtype_title(self.dtype()));
  const Tensor x_t = ember::contiguous(self), t_t = ember::contiguous(target_);
  Tensor w_t;
  if (weight_.defined()) {
    EMBER_CHECK(weight_.dtype() == self.dtype(), Runtime, "binary_cross_entropy: Found dtype ",
                dtype_title(weight_.dtype()), " but expected ", dtype_title(self.dtype()));
    broadcast_shapes(weight_.sizes(), self.sizes(), "binary_cross_entropy");
    w_t = ember::contiguous(ember::expand(weight_, self.sizes()));
  }
  const int64_t n = self.numel();
  Tensor output = empty_tensor(reduction == kNone ? self.sizes() : DimVector{}, self.dtype(), self.device());
  visit_floating(self.dtype(), "binary_cross_entropy", [&]<typename T>() {
    const T* x = x_t.data<T>();
    const T* t = t_t.data<T>();
    const T* w = w_t.defined() ? w_t.data<T>() : nullptr;
    T* out = output.data<T>();
    using M = opmath_t<T>;
    bool in_range = true;
#pragma omp simd reduction(&& : in_range)
    for (int64_t i = 0; i < n; ++i) in_range = in_range && M(x[i]) >= M(0) && M(x[i]) <= M(1);  // NaN fails too
    EMBER_CHECK(in_range, Runtime, "binary_cross_entropy: all elements of input should be between 0 and 1");
    // Each log is clamped at -100 so that an input of exactly 0 or 1 gives a finite loss.
    auto term = [&](int64_t i) -> M {
      const M xi = M(x[i]), ti = M(t[i]);
      const M l = (ti - M(1)) * std::max(std::log1p(-xi), M(-100)) - ti * std::max(std::log(xi), M(-100));
      return w ? l * M(w[i]) : l;
    };
    if (reduction == kNone) {
      parallel_for(n, kGrainSize / 8, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) out[i] = static_cast<T>(term(i));
      });
      return;
    }
    const double sum = blocked_sums(n, kGrainSize / 8, [&](int64_t b, int64_t e) {
                         double s = 0;
                         for (int64_t i = b; i < e; ++i) s += double(term(i));
                         return std::pair<double, double>{s, 0.0};
                       }).first;
    // Mean of nothing is 0 / 0 = nan, as PyTorch's.
    out[0] = static_cast<T>(M(reduction == kMean ? sum / double(n) : sum));
  });
  return output;
}

}  // namespace ember::cpu
