// var and std in one pass on the CPU: Welford's update per element and Chan's
// merge of partial states, in float64 as PyTorch's CPU kernels accumulate,
// through the reduction engine (pairwise on every layout, same thread split).
// The variance of a constant is exactly 0: every delta from the mean is 0.
#include <cmath>
#include <optional>

#include "ember/cpu/reduce.h"
#include "ember/ops/_var_std.h"
#include "ember/ops/to.h"

namespace ember::cpu {
namespace {

struct Welford {
  double mean = 0, m2 = 0, n = 0;  // n as double: exact to 2^53 elements
};

struct WelfordReduce {
  template <typename In>
  Welford operator()(const Welford& a, In x) const {
    const double v = static_cast<double>(x), n = a.n + 1, d = v - a.mean, mean = a.mean + d / n;
    return {mean, a.m2 + d * (v - mean), n};
  }
  // A contiguous block (a few KiB, in cache): its mean, then its squared
  // deviations, in two vectorised passes with no division per element.
  template <typename In>
  Welford block(const In* x, int64_t n) const {
    if (n == 0) return {};
    double s = 0, m2 = 0;
#pragma omp simd reduction(+ : s)
    for (int64_t i = 0; i < n; ++i) s += static_cast<double>(x[i]);
    const double mean = s / (double)n;
#pragma omp simd reduction(+ : m2)
    for (int64_t i = 0; i < n; ++i) {
      const double d = static_cast<double>(x[i]) - mean;
      m2 += d * d;
    }
    return {mean, m2, (double)n};
  }
};

struct WelfordMerge {
  Welford operator()(const Welford& a, const Welford& b) const {
    if (a.n == 0) return b;
    if (b.n == 0) return a;
    const double n = a.n + b.n, d = b.mean - a.mean;
    return {a.mean + d * (b.n / n), a.m2 + b.m2 + d * d * (a.n * b.n / n), n};
  }
};

}  // namespace

Tensor var_std_cpu(const Tensor& self, const std::optional<IntList>& dim, double correction, bool keepdim,
                   bool take_sqrt) {
  const bool half = self.dtype() == ScalarType::Float16 || self.dtype() == ScalarType::BFloat16;
  const Tensor x = half ? ember::to_dtype(self, ScalarType::Float32) : self;
  const std::optional<IntList> dims = dim && dim->empty() ? std::nullopt : dim;
  const DimVector reduced = reduction_mask(dims, x.dim(), take_sqrt ? "std" : "var");
  // Lays out the outputs for the iterator, then receives the float64 result.
  Tensor result = empty_tensor(kept_sizes(x.sizes(), reduced), ScalarType::Float64, x.device());
  const int64_t nout = result.numel();
  reduce_detail::Scratch<Welford> acc;
  acc.reserve(nout);
  std::fill(acc.data(), acc.data() + nout, Welford{});
  const TensorIterator it = TensorIterator::reduction(result, x);
  auto run = [&]<typename In>() {
    run_reduction(it, ReduceOps<Welford, In, WelfordReduce, WelfordMerge>{Welford{}, {}, {}}, acc.data(), nout);
  };
  if (x.dtype() == ScalarType::Float32) run.template operator()<float>();
  else run.template operator()<double>();
  double* out = result.data<double>();
  for (int64_t i = 0; i < nout; ++i) {
    const double v = acc.data()[i].m2 / std::max(0.0, acc.data()[i].n - correction);
    out[i] = take_sqrt ? std::sqrt(v) : v;
  }
  return ember::to_dtype(keepdim ? result : drop_reduced_dims(result, reduced), self.dtype());
}

}  // namespace ember::cpu
