// PyTorch's upsample_* entry points over the one _upsample kernel: interpolate calls them so that
// its result ends with PyTorch's node (UpsampleNearest2DBackward0, ...; node_name in ops.yaml).
#include <optional>

#include "ember/ops/_upsample.h"
#include "ember/ops/_upsample_nearest_exact1d.h"
#include "ember/ops/_upsample_nearest_exact2d.h"
#include "ember/ops/upsample_bilinear2d.h"
#include "ember/ops/upsample_linear1d.h"
#include "ember/ops/upsample_nearest1d.h"
#include "ember/ops/upsample_nearest2d.h"
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

}  // namespace ember::native
