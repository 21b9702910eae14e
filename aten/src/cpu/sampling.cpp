// Sampling kernels: bernoulli(p) and normal's tensor overloads (fills through
// _philox_fill_ made below autograd, whose nodes give these ops zero gradients)
// and multinomial's sampling from uniform draws.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "ember/dispatch.h"
#include "ember/ops/_multinomial_from_uniforms.h"
#include "ember/ops/add.h"
#include "ember/ops/all.h"
#include "ember/ops/bernoulli.h"
#include "ember/ops/contiguous.h"
#include "ember/ops/ge.h"
#include "ember/ops/le.h"
#include "ember/ops/logical_and.h"
#include "ember/ops/lt.h"
#include "ember/ops/mul.h"
#include "ember/ops/normal.h"
#include "ember/ops/to.h"
#include "ember/parallel.h"
#include "ember/random_fill.h"
#include "ember/tensor.h"

namespace ember::cpu {

namespace {

Tensor number(double v) { return wrap_number(Scalar(v)); }

bool all_true(const Tensor& t) { return ember::all(t).item().to_bool(); }

// Standard normal draws of `shape`, scaled by `std` and shifted by `mean` (tensors or wrapped numbers).
Tensor scaled_normal(const DimVector& shape, ScalarType dtype, const Tensor& mean, const Tensor& std, Generator* gen) {
  Tensor out = empty_tensor(shape, dtype, Device());
  philox_fill(out, gen, "normal", "normal");
  return ember::add_(ember::mul_(out, std), mean);
}

void check_std(const Tensor& std) {
  EMBER_CHECK(all_true(ember::ge(std, number(0))), Runtime, "normal expects all elements of std >= 0.0");
}

}  // namespace

Tensor bernoulli_cpu(const Tensor& self, Generator* generator) {
  EMBER_CHECK(all_true(ember::logical_and(ember::ge(self, number(0)), ember::le(self, number(1)))), Runtime,
              "Expected p_in >= 0 && p_in <= 1 to be true, but got false.");
  const ScalarType draw = self.dtype() == ScalarType::Float64 ? ScalarType::Float64 : ScalarType::Float32;
  Tensor u = empty_tensor(self.sizes(), draw, Device());
  philox_fill(u, generator, "bernoulli", "uniform");
  return ember::to_dtype(ember::lt(u, self), self.dtype());
}

Tensor normal_tensor_float_cpu(const Tensor& mean, double std, Generator* generator) {
  EMBER_CHECK(std >= 0, Runtime, "normal expects std >= 0.0, but found std ", std);
  return scaled_normal(mean.sizes(), mean.dtype(), mean, number(std), generator);
}

Tensor normal_float_tensor_cpu(double mean, const Tensor& std, Generator* generator) {
  check_std(std);
  return scaled_normal(std.sizes(), std.dtype(), number(mean), std, generator);
}

Tensor normal_tensor_tensor_cpu(const Tensor& mean, const Tensor& std, Generator* generator) {
  check_std(std);
  const DimVector shape = broadcast_shapes(mean.sizes(), std.sizes(), "normal");
  return scaled_normal(shape, mean.dtype(), mean, std, generator);
}

Tensor multinomial_from_uniforms_cpu(const Tensor& self, const Tensor& uniforms, int64_t num_samples,
                                     bool replacement) {
  const int64_t categories = self.size(-1), rows = self.dim() == 2 ? self.size(0) : 1;
  const Tensor probs = ember::contiguous(ember::to_dtype(self, ScalarType::Float64));
  const Tensor u = ember::contiguous(uniforms);
  const double* p = probs.data<double>();
  const double* draws = u.data<double>();
  Tensor result = empty_tensor(self.dim() == 2 ? DimVector{rows, num_samples} : DimVector{num_samples},
                               ScalarType::Int64, Device());
  int64_t* out = result.data<int64_t>();
  // Rows are checked before any sampling so that an error leaves no half-written work behind.
  for (int64_t r = 0; r < rows; ++r) {
    double total = 0;
    for (int64_t c = 0; c < categories; ++c) {
      const double v = p[r * categories + c];
      EMBER_CHECK(std::isfinite(v) && v >= 0, Runtime, "probability tensor contains either `inf`, `nan` or element < 0");
      total += v;
    }
    EMBER_CHECK(total > 0, Runtime, "invalid multinomial distribution (sum of probabilities <= 0)");
  }
  parallel_for(rows, 1, [&](int64_t r0, int64_t r1) {
    std::vector<double> keys(categories);
    std::vector<int64_t> order(categories);
    for (int64_t r = r0; r < r1; ++r) {
      const double* row = p + r * categories;
      int64_t* row_out = out + r * num_samples;
      if (replacement) {
        // Inverse CDF: the first category whose running sum exceeds u * total (never one of probability 0).
        std::partial_sum(row, row + categories, keys.begin());
        const double total = keys[categories - 1];
        for (int64_t s = 0; s < num_samples; ++s) {
          const double target = draws[r * num_samples + s] * total;
          const int64_t c = std::upper_bound(keys.begin(), keys.end(), target) - keys.begin();
          row_out[s] = std::min(c, categories - 1);
        }
      } else {
        // Exponential keys E / p: the k smallest, in order, are k draws without replacement.
        for (int64_t c = 0; c < categories; ++c) {
          const double e = -std::log1p(-draws[r * categories + c]);
          keys[c] = row[c] > 0 ? e / row[c] : INFINITY;
        }
        std::iota(order.begin(), order.end(), int64_t(0));
        std::partial_sort(order.begin(), order.begin() + num_samples, order.end(),
                          [&](int64_t a, int64_t b) { return keys[a] < keys[b] || (keys[a] == keys[b] && a < b); });
        std::copy(order.begin(), order.begin() + num_samples, row_out);
      }
    }
  });
  return result;
}

}  // namespace ember::cpu
