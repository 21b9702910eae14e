// PyTorch's upsample_* entry points over the one _upsample kernel: interpolate calls them so that
// its result ends with PyTorch's node (UpsampleNearest2DBackward0, ...; node_name in ops.yaml).
#include <optional>

#include "ember/ops/_upsample.h"
#include "ember/ops/_upsample_nearest_exact1d.h"
#include "ember/ops/_upsample_nearest_exact2d.h"
#include "ember/ops/_upsample_nearest_exact3d.h"
#include "ember/ops/reshape.h"
#include "ember/ops/transpose.h"
#include "ember/ops/upsample_bilinear2d.h"
#include "ember/ops/upsample_linear1d.h"
#include "ember/ops/upsample_nearest1d.h"
#include "ember/ops/upsample_nearest2d.h"
#include "ember/ops/upsample_nearest3d.h"
#include "ember/ops/upsample_trilinear3d.h"
#include "ember/tensor.h"

namespace ember::native {

// A 1-D resampling's one scale is _upsample's scales_w (the last dim's).
Tensor upsample_nearest1d(const Tensor& self, const IntList& output_size, std::optional<double> scales) {
  return ember::_upsample(self, output_size, false, false, false, std::nullopt, scales);
}

Tensor upsample_nearest2d(const Tensor& self, const IntList& output_size, std::optional<double> scales_h,
                          std::optional<double> scales_w) {
  return ember::_upsample(self, output_size, false, false, false, scales_h, scales_w);
}

Tensor _upsample_nearest_exact1d(const Tensor& self, const IntList& output_size, std::optional<double> scales) {
  return ember::_upsample(self, output_size, false, true, false, std::nullopt, scales);
}

Tensor _upsample_nearest_exact2d(const Tensor& self, const IntList& output_size, std::optional<double> scales_h,
                                 std::optional<double> scales_w) {
  return ember::_upsample(self, output_size, false, true, false, scales_h, scales_w);
}

Tensor upsample_linear1d(const Tensor& self, const IntList& output_size, bool align_corners,
                         std::optional<double> scales) {
  return ember::_upsample(self, output_size, true, false, align_corners, std::nullopt, scales);
}

Tensor upsample_bilinear2d(const Tensor& self, const IntList& output_size, bool align_corners,
                           std::optional<double> scales_h, std::optional<double> scales_w) {
  return ember::_upsample(self, output_size, true, false, align_corners, scales_h, scales_w);
}

namespace {
// A 5-D input's resampling of its last three dims, separably: height and width by one _upsample, then depth
// by another (the last dim of the transposed result). Each output is the product of the per-dim weights,
// summed in PyTorch's order (depth outermost), at PyTorch's source positions per dim.
Tensor upsample_3d(const Tensor& self, const IntList& output_size, bool linear, bool exact, bool align_corners,
                   std::optional<double> scales_d, std::optional<double> scales_h, std::optional<double> scales_w) {
  EMBER_CHECK(output_size.size() == 3, Runtime, "It is expected output_size equals to 3, but got size ",
              output_size.size());
  EMBER_CHECK(self.dim() == 5, Runtime, "Non-empty 5D data tensor expected but got a tensor with sizes ",
              shape_str(self.sizes()));
  const int64_t N = self.size(0), C = self.size(1), D = self.size(2), H = self.size(3), W = self.size(4);
  const int64_t oD = output_size[0], oH = output_size[1], oW = output_size[2];
  EMBER_CHECK(D > 0 && H > 0 && W > 0 && oD > 0 && oH > 0 && oW > 0, Runtime,
              "Input and output sizes should be greater than 0, but got input (D: ", D, ", H: ", H, ", W: ", W,
              ") output (D: ", oD, ", H: ", oH, ", W: ", oW, ")");
  Tensor planes = ember::_upsample(ember::reshape(self, IntList{N * C, D, H, W}), IntList{oH, oW}, linear, exact,
                                   align_corners, scales_h, scales_w);
  Tensor depth_last = ember::transpose(ember::reshape(planes, IntList{N * C, D, oH * oW}), 1, 2);
  Tensor out = ember::_upsample(depth_last, IntList{oD}, linear, exact, align_corners, std::nullopt, scales_d);
  return ember::reshape(ember::transpose(out, 1, 2), IntList{N, C, oD, oH, oW});
}
}  // namespace

Tensor upsample_nearest3d(const Tensor& self, const IntList& output_size, std::optional<double> scales_d,
                          std::optional<double> scales_h, std::optional<double> scales_w) {
  return upsample_3d(self, output_size, false, false, false, scales_d, scales_h, scales_w);
}

Tensor _upsample_nearest_exact3d(const Tensor& self, const IntList& output_size, std::optional<double> scales_d,
                                 std::optional<double> scales_h, std::optional<double> scales_w) {
  return upsample_3d(self, output_size, false, true, false, scales_d, scales_h, scales_w);
}

Tensor upsample_trilinear3d(const Tensor& self, const IntList& output_size, bool align_corners,
                            std::optional<double> scales_d, std::optional<double> scales_h,
                            std::optional<double> scales_w) {
  return upsample_3d(self, output_size, true, false, align_corners, scales_d, scales_h, scales_w);
}

}  // namespace ember::native
