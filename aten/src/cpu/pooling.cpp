// Max, average and adaptive max pooling over the last two dims of (C, H, W) or
// (N, C, H, W) inputs, and their gradients. Each plane (H, W) is independent: the
// input is made contiguous and planes run in parallel, each thread walking its
// planes' output rows. Checks and output sizes follow PyTorch's pooling_output_shape
// and pool2d_shape_check, so the error messages match.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>

#include "ember/dispatch.h"
#include "ember/dtype.h"
#include "ember/errors.h"
#include "ember/ops/_avg_pool2d_backward.h"
#include "ember/ops/_max_pool_backward.h"
#include "ember/ops/adaptive_max_pool2d.h"
#include "ember/ops/avg_pool2d.h"
#include "ember/ops/contiguous.h"
#include "ember/ops/max_pool2d_with_indices.h"
#include "ember/parallel.h"
#include "ember/tensor.h"

namespace ember::cpu {
namespace {

struct Window2d {
  int64_t kH, kW, sH, sW, pH, pW, dH = 1, dW = 1;
};

// A [2] argument: one value for both dims or one per dim; `what` names it in the error.
std::pair<int64_t, int64_t> pair_arg(const IntList& v, const char* op, const char* what, const char* rule) {
  EMBER_CHECK(v.size() == 1 || v.size() == 2, Runtime, op, ": ", what, rule);
  return {v[0], v.size() == 2 ? v[1] : v[0]};
}

int64_t floor_div(int64_t a, int64_t b) {
  const int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

// PyTorch's pooling_output_shape: floor (or ceil) of the window count, a last window
// that would start in the right padding dropped.
int64_t pooled_size(int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dilation, bool ceil_mode) {
  EMBER_CHECK(stride != 0, Runtime, "stride should not be zero");
  EMBER_CHECK(pad >= 0, Runtime, "pad must be non-negative, but got pad: ", pad);
  EMBER_CHECK(pad <= ((k - 1) * dilation + 1) / 2, Runtime,
              "pad should be at most half of effective kernel size, but got pad=", pad, ", kernel_size=", k,
              " and dilation=", dilation);
  int64_t out = floor_div(in + 2 * pad - dilation * (k - 1) - 1 + (ceil_mode ? stride - 1 : 0), stride) + 1;
  if (ceil_mode && (out - 1) * stride >= in + pad) --out;
  return out;
}

void check_pool_input(const Tensor& self) {
  const int64_t nd = self.dim();
  bool ok = nd == 3 || nd == 4;
  if (ok)
    for (int64_t d = nd - 3; d < nd; ++d) ok = ok && self.size(d) != 0;
  if (nd == 3 || nd == 4)
    EMBER_CHECK(ok, Runtime, "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but got:",
                shape_str(self.sizes()));
  EMBER_CHECK(ok, Runtime, "non-empty 3D or 4D (batch mode) tensor expected for input");
}

// The output sizes of a window over `self`, after PyTorch's checks.
std::pair<int64_t, int64_t> pooled_hw(const Tensor& self, const Window2d& w, bool ceil_mode) {
  const int64_t H = self.dim() >= 2 ? self.size(-2) : 0, W = self.dim() >= 1 ? self.size(-1) : 0;
  const int64_t oH = pooled_size(H, w.kH, w.pH, w.sH, w.dH, ceil_mode);
  const int64_t oW = pooled_size(W, w.kW, w.pW, w.sW, w.dW, ceil_mode);
  EMBER_CHECK(w.kH > 0 && w.kW > 0, Runtime, "kernel size should be greater than zero, but got kH: ", w.kH,
              " kW: ", w.kW);
  EMBER_CHECK(w.sH > 0 && w.sW > 0, Runtime, "stride should be greater than zero, but got dH: ", w.sH, " dW: ", w.sW);
  EMBER_CHECK(w.dH > 0 && w.dW > 0, Runtime, "dilation should be greater than zero, but got dilationH: ", w.dH,
              " dilationW: ", w.dW);
  check_pool_input(self);
  EMBER_CHECK(w.kW / 2 >= w.pW && w.kH / 2 >= w.pH, Runtime,
              "pad should be smaller than or equal to half of kernel size, but got padW = ", w.pW, ", padH = ", w.pH,
              ", kW = ", w.kW, ", kH = ", w.kH);
  const int64_t C = self.size(-3);
  EMBER_CHECK(oH >= 1 && oW >= 1, Runtime, "Given input size: (", C, "x", H, "x", W, "). Calculated output size: (",
              C, "x", oH, "x", oW, "). Output size is too small");
  return {oH, oW};
}

Window2d window_args(const char* op, const IntList& kernel_size, const IntList& stride, const IntList& padding,
                     const IntList* dilation) {
  Window2d w{};
  std::tie(w.kH, w.kW) = pair_arg(kernel_size, op, "kernel_size", " must either be a single int, or a tuple of two ints");
  if (stride.empty()) {
    w.sH = w.kH, w.sW = w.kW;
  } else {
    std::tie(w.sH, w.sW) = pair_arg(stride, op, "stride", " must either be omitted, a single int, or a tuple of two ints");
  }
  std::tie(w.pH, w.pW) = pair_arg(padding, op, "padding", " must either be a single int, or a tuple of two ints");
  if (dilation)
    std::tie(w.dH, w.dW) = pair_arg(*dilation, op, "dilation", " must be either a single int, or a tuple of two ints");
  return w;
}

DimVector with_hw(const Tensor& self, int64_t h, int64_t w) {
  DimVector s = self.sizes();
  s[s.size() - 2] = h;
  s[s.size() - 1] = w;
  return s;
}

// Planes per parallel chunk: about a grain of elements each.
int64_t plane_grain(int64_t plane_elems) { return std::max<int64_t>(1, kGrainSize / std::max<int64_t>(plane_elems, 1)); }

template <typename T>
inline bool is_nan(T v) {
  if constexpr (std::is_integral_v<T>) return false;
  else return v != v;
}

// Max over [h0, h1) x [w0, w1) with steps (dh, dw) of one plane: PyTorch's rule (a larger
// value or a NaN replaces the best; the first window position when none does).
template <typename T, typename M>
inline void window_max(const T* in, int64_t W, int64_t h0, int64_t h1, int64_t dh, int64_t w0, int64_t w1, int64_t dw,
                       T* out, int64_t* idx) {
  M best = std::is_integral_v<M> ? std::numeric_limits<M>::lowest() : -std::numeric_limits<M>::infinity();
  int64_t at = h0 * W + w0;
  for (int64_t h = h0; h < h1; h += dh) {
    const T* row = in + h * W;
    for (int64_t w = w0; w < w1; w += dw) {
      const M v = static_cast<M>(row[w]);
      if (v > best || is_nan(v)) {
        best = v;
        at = h * W + w;
      }
    }
  }
  *out = static_cast<T>(best);
  *idx = at;
}

// The interior of a 3x3 window with no padding or dilation to skip: constant trip counts the
// compiler unrolls, the hot path of ResNet-style pools. Starting from the first element is
// PyTorch's rule too (it replaces the initial -inf or is the NaN later NaNs replace).
template <typename T, typename M>
inline void window_max_3x3(const T* in, int64_t W, int64_t h0, int64_t w0, T* out, int64_t* idx) {
  M best = static_cast<M>(in[h0 * W + w0]);
  int64_t at = h0 * W + w0;
  for (int64_t h = h0; h < h0 + 3; ++h) {
    const T* row = in + h * W;
    for (int64_t w = w0; w < w0 + 3; ++w) {
      const M v = static_cast<M>(row[w]);
      if (v > best || is_nan(v)) {
        best = v;
        at = h * W + w;
      }
    }
  }
  *out = static_cast<T>(best);
  *idx = at;
}

template <typename T>
void max_pool_planes(const T* in, T* out, int64_t* ind, int64_t planes, int64_t H, int64_t W, int64_t oH, int64_t oW,
                     const Window2d& w) {
  using M = std::conditional_t<std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>, float, T>;
  const bool k3 = w.kH == 3 && w.kW == 3 && w.dH == 1 && w.dW == 1;
  parallel_for(planes, plane_grain(H * W), [&](int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p) {
      const T* src = in + p * H * W;
      T* dst = out + p * oH * oW;
      int64_t* di = ind + p * oH * oW;
      for (int64_t oh = 0; oh < oH; ++oh) {
        int64_t h0 = oh * w.sH - w.pH;
        const int64_t h1 = std::min(h0 + (w.kH - 1) * w.dH + 1, H);
        while (h0 < 0) h0 += w.dH;
        for (int64_t ow = 0; ow < oW; ++ow) {
          int64_t w0 = ow * w.sW - w.pW;
          const int64_t w1 = std::min(w0 + (w.kW - 1) * w.dW + 1, W);
          while (w0 < 0) w0 += w.dW;
          if (k3 && h1 - h0 == 3 && w1 - w0 == 3)
            window_max_3x3<T, M>(src, W, h0, w0, dst + oh * oW + ow, di + oh * oW + ow);
          else
            window_max<T, M>(src, W, h0, h1, w.dH, w0, w1, w.dW, dst + oh * oW + ow, di + oh * oW + ow);
        }
      }
    }
  });
}

int64_t adaptive_start(int64_t i, int64_t in, int64_t out) { return (i * in) / out; }
int64_t adaptive_end(int64_t i, int64_t in, int64_t out) { return ((i + 1) * in + out - 1) / out; }

}  // namespace

std::tuple<Tensor, Tensor> max_pool2d_with_indices_cpu(const Tensor& self, const IntList& kernel_size,
                                                       const IntList& stride, const IntList& padding,
                                                       const IntList& dilation, bool ceil_mode) {
  const Window2d w = window_args("max_pool2d", kernel_size, stride, padding, &dilation);
  const auto [oH, oW] = pooled_hw(self, w, ceil_mode);
  const Tensor input = ember::contiguous(self);
  Tensor out = empty_tensor(with_hw(self, oH, oW), self.dtype(), self.device());
  Tensor ind = empty_tensor(with_hw(self, oH, oW), ScalarType::Int64, self.device());
  const int64_t H = self.size(-2), W = self.size(-1);
  const int64_t planes = H * W != 0 ? input.numel() / (H * W) : 0;
  visit_dtype(self.dtype(), [&]<typename T>() {
    if constexpr (std::is_same_v<T, bool>) fail_dtype_not_implemented("max_pool2d", self.dtype());
    else max_pool_planes<T>(input.data<T>(), out.data<T>(), ind.data<int64_t>(), planes, H, W, oH, oW, w);
  });
  return {out, ind};
}

std::tuple<Tensor, Tensor> adaptive_max_pool2d_cpu(const Tensor& self, const IntList& output_size) {
  EMBER_CHECK(output_size.size() == 2, Runtime, "adaptive_max_pool2d(): internal error: output_size.size() must be 2");
  const int64_t nd = self.dim();
  const std::string shape = shape_str(self.sizes());
  EMBER_CHECK(nd == 3 || nd == 4, Runtime, "adaptive_max_pool2d(): Expected 3D or 4D tensor, but got: ", shape);
  for (int64_t d = 1; d < nd; ++d)
    EMBER_CHECK(self.size(d) > 0, Runtime,
                "adaptive_max_pool2d(): Expected input to have non-zero size for non-batch dimensions, but input has "
                "sizes ", shape, " with dimension ", d, " being empty");
  const int64_t oH = output_size[0], oW = output_size[1];
  EMBER_CHECK(oH >= 0 && oW >= 0, Runtime, "adaptive_max_pool2d(): output_size must be non-negative");
  const Tensor input = ember::contiguous(self);
  Tensor out = empty_tensor(with_hw(self, oH, oW), self.dtype(), self.device());
  Tensor ind = empty_tensor(with_hw(self, oH, oW), ScalarType::Int64, self.device());
  const int64_t H = self.size(-2), W = self.size(-1);
  const int64_t planes = input.numel() / (H * W);
  visit_floating(self.dtype(), "adaptive_max_pool2d", [&]<typename T>() {
    using M = opmath_t<T>;
    const T* in = input.data<T>();
    T* o = out.data<T>();
    int64_t* oi = ind.data<int64_t>();
    parallel_for(planes, plane_grain(H * W), [&](int64_t b, int64_t e) {
      for (int64_t p = b; p < e; ++p)
        for (int64_t oh = 0; oh < oH; ++oh)
          for (int64_t ow = 0; ow < oW; ++ow) {
            const int64_t at = (p * oH + oh) * oW + ow;
            window_max<T, M>(in + p * H * W, W, adaptive_start(oh, H, oH), adaptive_end(oh, H, oH), 1,
                             adaptive_start(ow, W, oW), adaptive_end(ow, W, oW), 1, o + at, oi + at);
          }
    });
  });
  return {out, ind};
}

Tensor max_pool_backward_cpu(const Tensor& grad_output, const Tensor& self, const Tensor& indices) {
  EMBER_CHECK(indices.dtype() == ScalarType::Int64, Runtime, "max_pool backward: expected int64 indices, got ",
              dtype_name(indices.dtype()));
  EMBER_CHECK(grad_output.sizes() == indices.sizes(), Runtime, "max_pool backward: grad_output ",
              shape_str(grad_output.sizes()), " and indices ", shape_str(indices.sizes()), " differ");
  bool same_planes = self.dim() >= 2 && grad_output.dim() == self.dim();
  for (int64_t d = 0; same_planes && d + 2 < self.dim(); ++d) same_planes = grad_output.size(d) == self.size(d);
  EMBER_CHECK(same_planes, Runtime, "max_pool backward: grad_output ", shape_str(grad_output.sizes()),
              " does not pool the planes of self ", shape_str(self.sizes()));
  Tensor grad_input = empty_tensor(self.sizes(), grad_output.dtype(), grad_output.device());
  const int64_t H = self.size(-2), W = self.size(-1), oHW = grad_output.size(-2) * grad_output.size(-1);
  const int64_t planes = H * W != 0 ? self.numel() / (H * W) : 0;
  const Tensor go = ember::contiguous(grad_output), ind = ember::contiguous(indices);
  std::atomic<bool> out_of_range{false};
  visit_floating(grad_output.dtype(), "max_pool2d_backward", [&]<typename T>() {
    using M = opmath_t<T>;
    const T* g = go.data<T>();
    const int64_t* ix = ind.data<int64_t>();
    T* gi = grad_input.data<T>();
    parallel_for(planes, plane_grain(H * W), [&](int64_t b, int64_t e) {
      std::fill(gi + b * H * W, gi + e * H * W, T(0));
      for (int64_t p = b; p < e; ++p) {
        T* dst = gi + p * H * W;
        const T* src = g + p * oHW;
        const int64_t* at = ix + p * oHW;
        for (int64_t i = 0; i < oHW; ++i) {
          if (at[i] < 0 || at[i] >= H * W) {
            out_of_range.store(true, std::memory_order_relaxed);
            return;
          }
          dst[at[i]] = static_cast<T>(static_cast<M>(dst[at[i]]) + static_cast<M>(src[i]));
        }
      }
    });
  });
  EMBER_CHECK(!out_of_range.load(), Index, "max_pool backward: an index is out of range for planes of ", H, "x", W);
  return grad_input;
}

namespace {

// Average pooling's window o along one dim: [start, end) clipped to the input, and the
// window's length counting the padding (PyTorch's pool_size).
struct AvgSpan {
  int64_t start, end, padded;
};

inline AvgSpan avg_span(int64_t o, int64_t stride, int64_t pad, int64_t k, int64_t in) {
  const int64_t s = o * stride - pad;
  const int64_t e = std::min(s + k, in + pad);
  return {std::max<int64_t>(s, 0), std::min(e, in), e - s};
}

// Calls f(oh, ow, h-span, w-span, divisor) for every output of a plane.
template <typename F>
void for_each_avg_window(int64_t H, int64_t W, int64_t oH, int64_t oW, const Window2d& w, bool count_include_pad,
                         std::optional<int64_t> divisor_override, F&& f) {
  for (int64_t oh = 0; oh < oH; ++oh) {
    const AvgSpan sh = avg_span(oh, w.sH, w.pH, w.kH, H);
    for (int64_t ow = 0; ow < oW; ++ow) {
      const AvgSpan sw = avg_span(ow, w.sW, w.pW, w.kW, W);
      const int64_t divisor = divisor_override ? *divisor_override
                              : count_include_pad ? sh.padded * sw.padded
                                                  : (sh.end - sh.start) * (sw.end - sw.start);
      f(oh, ow, sh, sw, divisor);
    }
  }
}

Window2d avg_window(const Tensor& self, const IntList& kernel_size, const IntList& stride, const IntList& padding,
                    bool ceil_mode, std::optional<int64_t> divisor_override, int64_t& oH, int64_t& oW) {
  const Window2d w = window_args("avg_pool2d", kernel_size, stride, padding, nullptr);
  EMBER_CHECK(!divisor_override || *divisor_override != 0, Runtime, "divisor must be not zero");
  std::tie(oH, oW) = pooled_hw(self, w, ceil_mode);
  return w;
}

}  // namespace

Tensor avg_pool2d_cpu(const Tensor& self, const IntList& kernel_size, const IntList& stride, const IntList& padding,
                      bool ceil_mode, bool count_include_pad, std::optional<int64_t> divisor_override) {
  int64_t oH = 0, oW = 0;
  const Window2d w = avg_window(self, kernel_size, stride, padding, ceil_mode, divisor_override, oH, oW);
  const Tensor input = ember::contiguous(self);
  Tensor out = empty_tensor(with_hw(self, oH, oW), self.dtype(), self.device());
  const int64_t H = self.size(-2), W = self.size(-1);
  const int64_t planes = input.numel() / (H * W);
  visit_dtype(self.dtype(), [&]<typename T>() {
    if constexpr (std::is_same_v<T, bool>) {
      fail_dtype_not_implemented("avg_pool2d", self.dtype());
    } else {
      // Sums as PyTorch's CPU kernel: in the element type, float for half types.
      using M = std::conditional_t<std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>, float, T>;
      const T* in = input.data<T>();
      T* o = out.data<T>();
      parallel_for(planes, plane_grain(H * W), [&](int64_t b, int64_t e) {
        for (int64_t p = b; p < e; ++p) {
          const T* src = in + p * H * W;
          T* dst = o + p * oH * oW;
          for_each_avg_window(H, W, oH, oW, w, count_include_pad, divisor_override,
                              [&](int64_t oh, int64_t ow, AvgSpan sh, AvgSpan sw, int64_t divisor) {
                                if (sh.start >= sh.end || sw.start >= sw.end) {
                                  dst[oh * oW + ow] = T(0);
                                  return;
                                }
                                M sum = 0;
                                for (int64_t h = sh.start; h < sh.end; ++h)
                                  for (int64_t x = sw.start; x < sw.end; ++x) sum += static_cast<M>(src[h * W + x]);
                                dst[oh * oW + ow] = static_cast<T>(sum / static_cast<M>(divisor));
                              });
        }
      });
    }
  });
  return out;
}

Tensor avg_pool2d_backward_cpu(const Tensor& grad_output, const Tensor& self, const IntList& kernel_size,
                               const IntList& stride, const IntList& padding, bool ceil_mode, bool count_include_pad,
                               std::optional<int64_t> divisor_override) {
  int64_t oH = 0, oW = 0;
  const Window2d w = avg_window(self, kernel_size, stride, padding, ceil_mode, divisor_override, oH, oW);
  EMBER_CHECK(grad_output.sizes() == with_hw(self, oH, oW), Runtime,
              "avg_pool2d_backward(): grad_output does not have the shape of avg_pool2d's result");
  const Tensor go = ember::contiguous(grad_output);
  Tensor grad_input = empty_tensor(self.sizes(), grad_output.dtype(), grad_output.device());
  const int64_t H = self.size(-2), W = self.size(-1);
  const int64_t planes = grad_input.numel() / (H * W);
  visit_dtype(grad_output.dtype(), [&]<typename T>() {
    if constexpr (std::is_same_v<T, bool>) {
      fail_dtype_not_implemented("avg_pool2d_backward", grad_output.dtype());
    } else {
      using M = std::conditional_t<std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>, float, T>;
      const T* g = go.data<T>();
      T* gi = grad_input.data<T>();
      parallel_for(planes, plane_grain(H * W), [&](int64_t b, int64_t e) {
        std::fill(gi + b * H * W, gi + e * H * W, T(0));
        for (int64_t p = b; p < e; ++p) {
          const T* src = g + p * oH * oW;
          T* dst = gi + p * H * W;
          for_each_avg_window(H, W, oH, oW, w, count_include_pad, divisor_override,
                              [&](int64_t oh, int64_t ow, AvgSpan sh, AvgSpan sw, int64_t divisor) {
                                const M share = static_cast<M>(src[oh * oW + ow]) / static_cast<M>(divisor);
                                for (int64_t h = sh.start; h < sh.end; ++h)
                                  for (int64_t x = sw.start; x < sw.end; ++x)
                                    dst[h * W + x] = static_cast<T>(static_cast<M>(dst[h * W + x]) + share);
                              });
        }
      });
    }
  });
  return grad_input;
}

}  // namespace ember::cpu
