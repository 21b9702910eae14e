// interpolate's nearest, nearest-exact and (bi)linear resampling of the last 1 or 2 dims,
// and its gradient (the transposed map). Every output reads at most two source rows and two
// source columns with weights that depend only on its position: tables built once per call
// with PyTorch's source positions (UpSample.h), in float, double for float64 inputs. Planes
// run in parallel; the gradient of a plane is accumulated by one thread, so no atomics.
#include <algorithm>
#include <cmath>
#include <optional>
#include <type_traits>
#include <vector>

#include "ember/dispatch.h"
#include "ember/dtype.h"
#include "ember/errors.h"
#include "ember/ops/_upsample.h"
#include "ember/ops/_upsample_backward.h"
#include "ember/ops/contiguous.h"
#include "ember/parallel.h"
#include "ember/tensor.h"

namespace ember::cpu {
namespace {

enum class Mode { Nearest, NearestExact, Linear };

Mode pick_mode(bool linear, bool exact) { return linear ? Mode::Linear : exact ? Mode::NearestExact : Mode::Nearest; }

// One resampled axis: output j reads i0[j] (weight w0[j]) and i1[j] (weight w1[j]).
struct Axis {
  std::vector<int64_t> i0, i1;
  std::vector<double> w0, w1;
};

// PyTorch's compute_scales_value: 1 / scale when one is given, else in / out.
template <typename A>
A scale_value(std::optional<double> scale, int64_t in, int64_t out) {
  return scale && *scale > 0 ? static_cast<A>(1.0 / *scale) : static_cast<A>(in) / static_cast<A>(out);
}

template <typename A>
Axis make_axis(Mode mode, int64_t in, int64_t n, bool align_corners, std::optional<double> scale) {
  Axis ax{std::vector<int64_t>(n), std::vector<int64_t>(n), std::vector<double>(n, 1.0), std::vector<double>(n, 0.0)};
  if (mode != Mode::Linear) {
    // nearest_idx reads j (or j / 2) directly when out is in (or 2 in), whatever the scale; always in float.
    const float s = scale_value<float>(scale, in, n);
    for (int64_t j = 0; j < n; ++j) {
      const int64_t at = mode == Mode::NearestExact ? (int64_t)std::floor((float(j) + 0.5f) * s)
                         : n == in ? j : n == 2 * in ? j >> 1 : (int64_t)std::floor(float(j) * s);
      ax.i0[j] = ax.i1[j] = std::min(at, in - 1);
    }
    return ax;
  }
  const A s = align_corners ? (n > 1 ? static_cast<A>(in - 1) / static_cast<A>(n - 1) : A(0))
                            : scale_value<A>(scale, in, n);
  for (int64_t j = 0; j < n; ++j) {
    const A src = align_corners ? s * static_cast<A>(j) : std::max(s * (static_cast<A>(j) + A(0.5)) - A(0.5), A(0));
    ax.i0[j] = static_cast<int64_t>(src);
    ax.i1[j] = ax.i0[j] + (ax.i0[j] < in - 1 ? 1 : 0);
    const A l1 = std::min(std::max(src - static_cast<A>(ax.i0[j]), A(0)), A(1));
    ax.w1[j] = static_cast<double>(l1);
    ax.w0[j] = static_cast<double>(A(1) - l1);
  }
  return ax;
}

struct Plan {
  Mode mode;
  bool two_d;
  int64_t H, W, oH, oW;  // H = oH = 1 for 1-D
  Axis rows, cols;
};

Plan make_plan(const DimVector& input_size, const IntList& output_size, Mode mode, bool align_corners, std::optional<double> scales_h, std::optional<double> scales_w, bool wide) {
  const int64_t k = (int64_t)output_size.size(), nd = (int64_t)input_size.size();
  EMBER_CHECK(k == 1 || k == 2, Runtime, "_upsample: output_size must have 1 or 2 elements, got ", k);
  EMBER_CHECK(nd >= k + 1, Runtime, "_upsample: expected an input with at least ", k + 1, " dims, got ", nd);
  for (int64_t i = 0; i < k; ++i)
    EMBER_CHECK(input_size[nd - k + i] > 0 && output_size[i] > 0, Runtime,
                "Input and output sizes should be greater than 0, but got input size ", input_size[nd - k + i],
                " and output size ", output_size[i]);
  Plan p{mode, k == 2, k == 2 ? input_size[nd - 2] : 1, input_size[nd - 1],
         k == 2 ? output_size[0] : 1, output_size[k - 1], {}, {}};
  auto build = [&]<typename A>() {
    p.rows = make_axis<A>(p.mode, p.H, p.oH, align_corners, p.two_d ? scales_h : std::nullopt);
    p.cols = make_axis<A>(p.mode, p.W, p.oW, align_corners, scales_w);
  };
  if (wide) build.template operator()<double>();
  else build.template operator()<float>();
  return p;
}

DimVector resized(const DimVector& sizes, const IntList& output_size) {
  DimVector s = sizes;
  for (size_t i = 0; i < output_size.size(); ++i) s[s.size() - output_size.size() + i] = output_size[i];
  return s;
}

template <typename T>
using acc_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

// The plan's weights in the accumulation type.
template <typename A>
struct Weights {
  std::vector<A> r0, r1, c0, c1;
  explicit Weights(const Plan& p)
      : r0(p.rows.w0.begin(), p.rows.w0.end()), r1(p.rows.w1.begin(), p.rows.w1.end()),
        c0(p.cols.w0.begin(), p.cols.w0.end()), c1(p.cols.w1.begin(), p.cols.w1.end()) {}
};

// out[oh][ow] of one plane: torch's h0lambda * (w0lambda * x00 + w1lambda * x01) + h1lambda * (...).
template <typename T, bool TwoD, bool Linear>
void resample_plane(const T* x, T* y, const Plan& p, const Weights<acc_t<T>>& w) {
  using A = acc_t<T>;
  const auto &wr0 = w.r0, &wr1 = w.r1, &wc0 = w.c0, &wc1 = w.c1;
  for (int64_t oh = 0; oh < p.oH; ++oh) {
    const T* r0 = x + p.rows.i0[oh] * p.W;
    const T* r1 = x + p.rows.i1[oh] * p.W;
    T* out = y + oh * p.oW;
    for (int64_t ow = 0; ow < p.oW; ++ow) {
      const int64_t c0 = p.cols.i0[ow], c1 = p.cols.i1[ow];
      A v;
      if constexpr (!Linear) {
        v = static_cast<A>(r0[c0]);
      } else {
        const A top = wc0[ow] * static_cast<A>(r0[c0]) + wc1[ow] * static_cast<A>(r0[c1]);
        if constexpr (TwoD) v = wr0[oh] * top + wr1[oh] * (wc0[ow] * static_cast<A>(r1[c0]) + wc1[ow] * static_cast<A>(r1[c1]));
        else v = top;
      }
      out[ow] = static_cast<T>(v);
    }
  }
}

// The transpose: each output's gradient added back, with its weights, to the sources it read
// (`acc`, one plane, zeroed by the caller).
template <typename T, bool TwoD, bool Linear>
void scatter_plane(const T* g, acc_t<T>* acc, const Plan& p, const Weights<acc_t<T>>& w) {
  using A = acc_t<T>;
  const auto &wr0 = w.r0, &wr1 = w.r1, &wc0 = w.c0, &wc1 = w.c1;
  for (int64_t oh = 0; oh < p.oH; ++oh) {
    A* r0 = acc + p.rows.i0[oh] * p.W;
    A* r1 = acc + p.rows.i1[oh] * p.W;
    const T* in = g + oh * p.oW;
    for (int64_t ow = 0; ow < p.oW; ++ow) {
      const int64_t c0 = p.cols.i0[ow], c1 = p.cols.i1[ow];
      const A v = static_cast<A>(in[ow]);
      if constexpr (!Linear) {
        r0[c0] += v;
      } else if constexpr (TwoD) {
        r0[c0] += wr0[oh] * wc0[ow] * v;
        r0[c1] += wr0[oh] * wc1[ow] * v;
        r1[c0] += wr1[oh] * wc0[ow] * v;
        r1[c1] += wr1[oh] * wc1[ow] * v;
      } else {
        r0[c0] += wc0[ow] * v;
        r0[c1] += wc1[ow] * v;
      }
    }
  }
}

// Calls f.template operator()<TwoD, Linear>() for the plan's case.
template <typename F>
void visit_case(const Plan& p, F&& f) {
  const bool linear = p.mode == Mode::Linear;
  if (p.two_d) linear ? f.template operator()<true, true>() : f.template operator()<true, false>();
  else linear ? f.template operator()<false, true>() : f.template operator()<false, false>();
}

int64_t plane_grain(int64_t elems) { return std::max<int64_t>(1, kGrainSize / std::max<int64_t>(elems, 1)); }

}  // namespace

Tensor upsample_cpu(const Tensor& self, const IntList& output_size, bool linear, bool exact, bool align_corners,
                    std::optional<double> scales_h, std::optional<double> scales_w) {
  const Plan p = make_plan(self.sizes(), output_size, pick_mode(linear, exact), align_corners, scales_h, scales_w,
                           self.dtype() == ScalarType::Float64);
  const Tensor input = ember::contiguous(self);
  Tensor out = empty_tensor(resized(self.sizes(), output_size), self.dtype(), self.device());
  const int64_t planes = input.numel() / (p.H * p.W);
  visit_floating(self.dtype(), "upsample", [&]<typename T>() {
    const Weights<acc_t<T>> w(p);
    const T* x = input.data<T>();
    T* y = out.data<T>();
    visit_case(p, [&]<bool TwoD, bool Linear>() {
      parallel_for(planes, plane_grain(p.oH * p.oW), [&](int64_t b, int64_t e) {
        for (int64_t q = b; q < e; ++q)
          resample_plane<T, TwoD, Linear>(x + q * p.H * p.W, y + q * p.oH * p.oW, p, w);
      });
    });
  });
  return out;
}

Tensor upsample_backward_cpu(const Tensor& grad_output, const IntList& input_size, const IntList& output_size,
                             bool linear, bool exact, bool align_corners, std::optional<double> scales_h,
                             std::optional<double> scales_w) {
  const DimVector in_sizes(input_size);
  for (size_t d = 0; d < in_sizes.size(); ++d)
    EMBER_CHECK(in_sizes[d] >= 0, Runtime, "_upsample_backward: negative input size ", shape_str(in_sizes));
  const Plan p = make_plan(in_sizes, output_size, pick_mode(linear, exact), align_corners, scales_h, scales_w,
                           grad_output.dtype() == ScalarType::Float64);
  EMBER_CHECK(grad_output.sizes() == resized(in_sizes, output_size), Runtime,
              "_upsample_backward: grad_output does not have the shape of the resampled input");
  const Tensor g = ember::contiguous(grad_output);
  Tensor grad_input = empty_tensor(in_sizes, grad_output.dtype(), grad_output.device());
  const int64_t planes = grad_input.numel() / (p.H * p.W);
  visit_floating(grad_output.dtype(), "upsample_backward", [&]<typename T>() {
    using A = acc_t<T>;
    const Weights<A> w(p);
    const T* gp = g.data<T>();
    T* gi = grad_input.data<T>();
    visit_case(p, [&]<bool TwoD, bool Linear>() {
      parallel_for(planes, plane_grain(p.oH * p.oW), [&](int64_t b, int64_t e) {
        std::vector<A> acc(p.H * p.W);
        for (int64_t q = b; q < e; ++q) {
          std::fill(acc.begin(), acc.end(), A(0));
          scatter_plane<T, TwoD, Linear>(gp + q * p.oH * p.oW, acc.data(), p, w);
          T* dst = gi + q * p.H * p.W;
          for (int64_t i = 0; i < p.H * p.W; ++i) dst[i] = static_cast<T>(acc[i]);
        }
      });
    });
  });
  return grad_input;
}

}  // namespace ember::cpu
