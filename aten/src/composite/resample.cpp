// interpolate's resampling as composites: each resampled dim reads the input at computed
// source positions (index_select), linear modes blending two of them with constant weights,
// so gradients of every order come through index_select and mul. The positions follow
// PyTorch's CPU kernels (UpSample.h), computed in float (double for float64 inputs).
#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "ember/dispatch.h"
#include "ember/dtype.h"
#include "ember/errors.h"
#include "ember/ops/_upsample_linear.h"
#include "ember/ops/_upsample_nearest.h"
#include "ember/ops/add.h"
#include "ember/ops/index_select.h"
#include "ember/ops/mul.h"
#include "ember/ops/to.h"
#include "ember/tensor.h"

namespace ember::native {
namespace {

Tensor cpu_tensor(const std::vector<int64_t>& v, Device device) {
  Tensor t = empty_tensor({(int64_t)v.size()}, ScalarType::Int64, Device());
  std::copy(v.begin(), v.end(), t.data<int64_t>());
  return device == Device() ? t : copy_to(t, device, ScalarType::Int64);
}

// `w` as a tensor of `dtype` shaped to broadcast along `dim` of an `nd`-dim tensor.
Tensor weights_along(const std::vector<double>& w, int64_t dim, int64_t nd, ScalarType dtype, Device device) {
  DimVector shape(nd, 1);
  shape[dim] = (int64_t)w.size();
  Tensor t = empty_tensor(shape, ScalarType::Float64, Device());
  std::copy(w.begin(), w.end(), t.data<double>());
  return copy_to(t, device, dtype);
}

// PyTorch's compute_scales_value: 1 / scale when one is given, else in / out.
template <typename A>
A scale_value(std::optional<double> scale, int64_t in, int64_t out) {
  return scale && *scale > 0 ? static_cast<A>(1.0 / *scale) : static_cast<A>(in) / static_cast<A>(out);
}

void check_sizes(const Tensor& self, const IntList& output_size, const char* op) {
  EMBER_CHECK(output_size.size() == 1 || output_size.size() == 2, Runtime, op,
              ": output_size must have 1 or 2 elements, got ", output_size.size());
  EMBER_CHECK(self.dim() >= (int64_t)output_size.size() + 1, Runtime, op, ": expected an input with at least ",
              output_size.size() + 1, " dims, got ", self.dim());
  for (size_t k = 0; k < output_size.size(); ++k) {
    const int64_t in = self.size(self.dim() - (int64_t)output_size.size() + (int64_t)k);
    EMBER_CHECK(in > 0 && output_size[k] > 0, Runtime, "Input and output sizes should be greater than 0, but got "
                "input size ", in, " and output size ", output_size[k]);
  }
}

}  // namespace

Tensor _upsample_nearest(const Tensor& self, const IntList& output_size, std::optional<double> scales_h,
                         std::optional<double> scales_w, bool exact) {
  check_sizes(self, output_size, "upsample_nearest");
  const int64_t k = (int64_t)output_size.size();
  const std::optional<double> scales[2] = {k == 2 ? scales_h : scales_w, scales_w};
  Tensor out = self;
  for (int64_t i = 0; i < k; ++i) {
    const int64_t dim = self.dim() - k + i, in = self.size(dim), n = output_size[i];
    const float s = scale_value<float>(scales[i], in, n);
    std::vector<int64_t> src(n);
    for (int64_t j = 0; j < n; ++j) {
      // PyTorch's nearest_idx reads j (or j / 2) directly when out is in (or 2 in), whatever the scale.
      const int64_t at = exact ? (int64_t)std::floor((float(j) + 0.5f) * s)
                         : n == in ? j : n == 2 * in ? j >> 1 : (int64_t)std::floor(float(j) * s);
      src[j] = std::min(at, in - 1);
    }
    out = ember::index_select(out, dim, cpu_tensor(src, self.device()));
  }
  return out;
}

Tensor _upsample_linear(const Tensor& self, const IntList& output_size, bool align_corners,
                        std::optional<double> scales_h, std::optional<double> scales_w) {
  check_sizes(self, output_size, "upsample_linear");
  if (!is_floating(self.dtype())) fail_dtype_not_implemented("upsample_linear", self.dtype());
  // Half types blend in float32, as PyTorch's opmath, and round once.
  const bool half = self.dtype() == ScalarType::Float16 || self.dtype() == ScalarType::BFloat16;
  const ScalarType compute = half ? ScalarType::Float32 : self.dtype();
  const int64_t k = (int64_t)output_size.size();
  const std::optional<double> scales[2] = {k == 2 ? scales_h : scales_w, scales_w};
  Tensor out = half ? ember::to_dtype(self, compute) : self;
  for (int64_t i = k - 1; i >= 0; --i) {
    const int64_t dim = self.dim() - k + i, in = self.size(dim), n = output_size[i];
    std::vector<int64_t> i0(n), i1(n);
    std::vector<double> w0(n), w1(n);
    auto fill = [&]<typename A>() {
      const A s = align_corners ? (n > 1 ? static_cast<A>(in - 1) / static_cast<A>(n - 1) : A(0))
                                : scale_value<A>(scales[i], in, n);
      for (int64_t j = 0; j < n; ++j) {
        const A src = align_corners ? s * static_cast<A>(j) : std::max(s * (static_cast<A>(j) + A(0.5)) - A(0.5), A(0));
        i0[j] = static_cast<int64_t>(src);
        i1[j] = i0[j] + (i0[j] < in - 1 ? 1 : 0);
        const A l1 = std::min(std::max(src - static_cast<A>(i0[j]), A(0)), A(1));
        w1[j] = static_cast<double>(l1);
        w0[j] = static_cast<double>(A(1) - l1);
      }
    };
    if (compute == ScalarType::Float64) fill.template operator()<double>();
    else fill.template operator()<float>();
    const Tensor a = ember::index_select(out, dim, cpu_tensor(i0, self.device()));
    const Tensor b = ember::index_select(out, dim, cpu_tensor(i1, self.device()));
    out = ember::add(ember::mul(a, weights_along(w0, dim, self.dim(), compute, self.device())),
                     ember::mul(b, weights_along(w1, dim, self.dim(), compute, self.device())));
  }
  return half ? ember::to_dtype(out, self.dtype()) : out;
}

}  // namespace ember::native
