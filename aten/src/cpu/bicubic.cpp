// interpolate(mode='bicubic'): PyTorch's upsample_bicubic2d (Keys' cubic convolution, A = -0.75)
// and its gradient. Output (oh, ow) reads the 4x4 input neighbourhood around its source position,
// each index clamped to the input (torch's border rule); the source position, its floor and
// the fraction follow area_pixel_compute_source_index(cubic) and guard_index_and_lambda. The 4
// indices and 4 weights of every output row and column are tabled once per call, in float (double
// for float64), so the plane loops only multiply and add. Planes run in parallel; the gradient of
// a plane is accumulated by one thread.
#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "ember/dispatch.h"
#include "ember/dtype.h"
#include "ember/errors.h"
#include "ember/ops/_upsample_bicubic2d_backward.h"
#include "ember/ops/contiguous.h"
#include "ember/ops/upsample_bicubic2d.h"
#include "ember/parallel.h"
#include "ember/tensor.h"

namespace ember::cpu {
namespace {

constexpr double kCubicA = -0.75;

// Output j of one axis reads idx[4 j + t] with weight w[4 j + t], t = 0..3.
template <typename A>
struct CubicAxis {
  std::vector<int64_t> idx;
  std::vector<A> w;
};

template <typename A>
A cubic_near(A x) { return ((A(kCubicA) + 2) * x - (A(kCubicA) + 3)) * x * x + 1; }   // |x| <= 1
template <typename A>
A cubic_far(A x) { return ((A(kCubicA) * x - 5 * A(kCubicA)) * x + 8 * A(kCubicA)) * x - 4 * A(kCubicA); }  // 1 < |x| < 2

template <typename A>
CubicAxis<A> cubic_axis(int64_t in, int64_t out, bool align_corners, std::optional<double> scale) {
  // area_pixel_compute_scale: (in - 1) / (out - 1) aligned, else 1 / scale when given, else in / out
  A s;
  if (align_corners) s = out > 1 ? static_cast<A>(in - 1) / static_cast<A>(out - 1) : A(0);
  else s = scale && *scale > 0 ? static_cast<A>(1.0 / *scale) : static_cast<A>(in) / static_cast<A>(out);
  CubicAxis<A> ax{std::vector<int64_t>(4 * out), std::vector<A>(4 * out)};
  for (int64_t j = 0; j < out; ++j) {
    const A real = align_corners ? s * static_cast<A>(j) : s * (static_cast<A>(j) + A(0.5)) - A(0.5);
    const int64_t at = std::min(static_cast<int64_t>(std::floor(real)), in - 1);
    const A t = std::min(std::max(real - static_cast<A>(at), A(0)), A(1));
    const std::array<A, 4> w = {cubic_far(t + 1), cubic_near(t), cubic_near(1 - t), cubic_far(2 - t)};
    for (int64_t k = 0; k < 4; ++k) {
      ax.idx[4 * j + k] = std::clamp<int64_t>(at - 1 + k, 0, in - 1);
      ax.w[4 * j + k] = w[k];
    }
  }
  return ax;
}

template <typename T>
using acc_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

struct BicubicShape {
  int64_t planes, H, W, oH, oW;
};

BicubicShape check_sizes(const DimVector& input_size, const IntList& output_size) {
  EMBER_CHECK(output_size.size() == 2, Runtime, "It is expected output_size equals to 2, but got size ",
              output_size.size());
  EMBER_CHECK(input_size.size() == 4, Runtime, "It is expected input_size equals to 4, but got size ",
              input_size.size());
  const int64_t H = input_size[2], W = input_size[3], oH = output_size[0], oW = output_size[1];
  EMBER_CHECK(H > 0 && W > 0 && oH > 0 && oW > 0, Runtime, "Input and output sizes should be greater than 0, but got "
              "input (H: ", H, ", W: ", W, ") output (H: ", oH, ", W: ", oW, ")");
  return {input_size[0] * input_size[1], H, W, oH, oW};
}

// The row and column tables of one call.
template <typename A>
std::pair<CubicAxis<A>, CubicAxis<A>> cubic_tables(const BicubicShape& sh, bool align_corners,
                                                   std::optional<double> scales_h, std::optional<double> scales_w) {
  return {cubic_axis<A>(sh.H, sh.oH, align_corners, scales_h), cubic_axis<A>(sh.W, sh.oW, align_corners, scales_w)};
}

int64_t plane_grain(int64_t elems) { return std::max<int64_t>(1, kGrainSize / std::max<int64_t>(elems, 1)); }

}  // namespace

Tensor upsample_bicubic2d_cpu(const Tensor& self, const IntList& output_size, bool align_corners,
                              std::optional<double> scales_h, std::optional<double> scales_w) {
  const BicubicShape sh = check_sizes(self.sizes(), output_size);
  Tensor out = empty_tensor({self.size(0), self.size(1), sh.oH, sh.oW}, self.dtype(), self.device());
  const Tensor input = ember::contiguous(self);
  visit_floating(self.dtype(), "upsample_bicubic2d", [&]<typename T>() {
    using A = acc_t<T>;
    const auto [rows, cols] = cubic_tables<A>(sh, align_corners, scales_h, scales_w);
    const T* x = input.data<T>();
    T* y = out.data<T>();
    parallel_for(sh.planes, plane_grain(16 * sh.oH * sh.oW), [&](int64_t b, int64_t e) {
      for (int64_t p = b; p < e; ++p) {
        const T* plane = x + p * sh.H * sh.W;
        T* dst = y + p * sh.oH * sh.oW;
        for (int64_t oh = 0; oh < sh.oH; ++oh) {
          const T* r[4];
          for (int64_t k = 0; k < 4; ++k) r[k] = plane + rows.idx[4 * oh + k] * sh.W;
          const A* wr = &rows.w[4 * oh];
          for (int64_t ow = 0; ow < sh.oW; ++ow) {
            const int64_t* ic = &cols.idx[4 * ow];
            const A* wc = &cols.w[4 * ow];
            A v = 0;
            for (int64_t k = 0; k < 4; ++k)
              v += wr[k] * (wc[0] * static_cast<A>(r[k][ic[0]]) + wc[1] * static_cast<A>(r[k][ic[1]]) +
                            wc[2] * static_cast<A>(r[k][ic[2]]) + wc[3] * static_cast<A>(r[k][ic[3]]));
            dst[oh * sh.oW + ow] = static_cast<T>(v);
          }
        }
      }
    });
  });
  return out;
}

Tensor upsample_bicubic2d_backward_cpu(const Tensor& grad_output, const IntList& output_size, const IntList& input_size,
                                       bool align_corners, std::optional<double> scales_h,
                                       std::optional<double> scales_w) {
  const DimVector in_sizes(input_size);
  for (int64_t v : in_sizes)
    EMBER_CHECK(v >= 0, Runtime, "_upsample_bicubic2d_backward: negative input size ", shape_str(in_sizes));
  const BicubicShape sh = check_sizes(in_sizes, output_size);
  const DimVector expected{in_sizes[0], in_sizes[1], sh.oH, sh.oW};
  EMBER_CHECK(grad_output.sizes() == expected, Runtime, "_upsample_bicubic2d_backward: grad_output ",
              shape_str(grad_output.sizes()), " is not the resampled shape ", shape_str(expected));
  Tensor grad_input = empty_tensor(in_sizes, grad_output.dtype(), grad_output.device());
  const Tensor g = ember::contiguous(grad_output);
  visit_floating(grad_output.dtype(), "_upsample_bicubic2d_backward", [&]<typename T>() {
    using A = acc_t<T>;
    const auto [rows, cols] = cubic_tables<A>(sh, align_corners, scales_h, scales_w);
    const T* gp = g.data<T>();
    T* gi = grad_input.data<T>();
    parallel_for(sh.planes, plane_grain(16 * sh.oH * sh.oW), [&](int64_t b, int64_t e) {
      std::vector<A> acc(sh.H * sh.W);
      for (int64_t p = b; p < e; ++p) {
        std::fill(acc.begin(), acc.end(), A(0));
        const T* src = gp + p * sh.oH * sh.oW;
        for (int64_t oh = 0; oh < sh.oH; ++oh)
          for (int64_t ow = 0; ow < sh.oW; ++ow) {
            const A v = static_cast<A>(src[oh * sh.oW + ow]);
            for (int64_t kr = 0; kr < 4; ++kr) {
              A* row = acc.data() + rows.idx[4 * oh + kr] * sh.W;
              const A vr = v * rows.w[4 * oh + kr];
              for (int64_t kc = 0; kc < 4; ++kc) row[cols.idx[4 * ow + kc]] += vr * cols.w[4 * ow + kc];
            }
          }
        T* dst = gi + p * sh.H * sh.W;
        for (int64_t i = 0; i < sh.H * sh.W; ++i) dst[i] = static_cast<T>(acc[i]);
      }
    });
  });
  return grad_input;
}

}  // namespace ember::cpu
