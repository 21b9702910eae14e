// Padding and pixel shuffles, composites of ember ops (so autograd and forward AD come
// through them): constant and circular padding crop with narrow and pad with cat (circular
// with copies of the wrapped slices, as PyTorch's _pad_circular); reflect and replicate call
// the reflection_padNd / replication_padNd kernels.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "ember/autograd.h"
#include "ember/checked_math.h"
#include "ember/dispatch.h"
#include "ember/dtype.h"
#include "ember/errors.h"
#include "ember/ops/_pad_circular.h"
#include "ember/ops/_pad_edge.h"
#include "ember/ops/cat.h"
#include "ember/ops/clone.h"
#include "ember/ops/constant_pad_nd.h"
#include "ember/ops/full.h"
#include "ember/ops/narrow.h"
#include "ember/ops/pad.h"
#include "ember/ops/permute.h"
#include "ember/ops/pixel_shuffle.h"
#include "ember/ops/pixel_unshuffle.h"
#include "ember/ops/reflection_pad1d.h"
#include "ember/ops/reflection_pad2d.h"
#include "ember/ops/reflection_pad3d.h"
#include "ember/ops/replication_pad1d.h"
#include "ember/ops/replication_pad2d.h"
#include "ember/ops/replication_pad3d.h"
#include "ember/ops/reshape.h"
#include "ember/tensor.h"

namespace ember::native {
namespace {

// `value` as the number `dtype` stores (PyTorch's new_full: 1.5 becomes 1 in an integer tensor).
Scalar fill_for(const Scalar& value, ScalarType dtype) {
  if (dtype == ScalarType::Bool) return Scalar(value.to_bool());
  if (!is_floating(dtype)) return Scalar(value.to_int());
  return Scalar(value.to_double());
}

}  // namespace

Tensor constant_pad_nd(const Tensor& self, const IntList& pad, const Scalar& value) {
  EMBER_CHECK(pad.size() % 2 == 0, Runtime, "Length of pad must be even but instead it equals ", pad.size());
  EMBER_CHECK((int64_t)pad.size() / 2 <= self.dim(), Runtime,
              "Length of pad should be no more than twice the number of dimensions of the input. Pad length is ",
              pad.size(), "while the input has ", self.dim(), "dimensions.");
  const int64_t nd = self.dim();
  const Scalar fill = fill_for(value, self.dtype());
  Tensor out = self;
  bool copied = false;
  for (int64_t i = 0; i < (int64_t)pad.size() / 2; ++i) {
    const int64_t dim = nd - 1 - i, left = pad[2 * i], right = pad[2 * i + 1];
    const int64_t crop_left = left < 0 ? -left : 0, crop_right = right < 0 ? -right : 0;
    const int64_t kept = out.size(dim) - crop_left - crop_right;
    EMBER_CHECK(kept >= 0, Runtime, "narrow(): length must be non-negative.");
    if (crop_left || crop_right) out = ember::narrow(out, dim, crop_left, kept);
    std::vector<Tensor> parts;
    DimVector side = out.sizes();
    if (left > 0) {
      side[dim] = left;
      parts.push_back(ember::full(side, fill, self.dtype(), self.device()));
    }
    parts.push_back(out);
    if (right > 0) {
      side[dim] = right;
      parts.push_back(ember::full(side, fill, self.dtype(), self.device()));
    }
    if (parts.size() > 1) out = ember::cat(parts, dim), copied = true;
  }
  // A new tensor, as PyTorch's, for a zero or crop-only pad too.
  return copied ? out : ember::clone(out);
}

Tensor pad(const Tensor& self, const IntList& pad, const std::string& mode, std::optional<double> value) {
  EMBER_CHECK(pad.size() % 2 == 0, Runtime, "Padding length must be divisible by 2");
  EMBER_CHECK((int64_t)pad.size() / 2 <= self.dim(), Runtime,
              "Padding length should be less than or equal to two times the input dimension but got padding length ",
              pad.size(), " and input of dimension ", self.dim());
  if (mode == "constant") return ember::constant_pad_nd(self, pad, Scalar(value.value_or(0.0)));
  EMBER_CHECK(mode == "reflect" || mode == "replicate" || mode == "circular", NotImplemented,
              "Unrecognised padding mode ", mode);
  EMBER_CHECK(!value || *value == 0.0, Runtime, "Padding mode \"", mode, "\" doesn't take in value argument");
  const int64_t n = (int64_t)pad.size(), nd = self.dim();
  EMBER_CHECK((n == 2 && (nd == 2 || nd == 3)) || (n == 4 && (nd == 3 || nd == 4)) || (n == 6 && (nd == 4 || nd == 5)),
              NotImplemented, "Padding size ", n, " is not supported for ", nd, "D input tensor.\n"
              "Supported combinations for non-constant padding:\n"
              "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
              "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
              "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)");
  if (mode == "circular") return ember::_pad_circular(self, pad);
  return ember::_pad_edge(self, pad, mode == "reflect");
}

Tensor _pad_edge(const Tensor& self, const IntList& padding, bool reflect) {
  switch (padding.size()) {
    case 2: return reflect ? ember::reflection_pad1d(self, padding) : ember::replication_pad1d(self, padding);
    case 4: return reflect ? ember::reflection_pad2d(self, padding) : ember::replication_pad2d(self, padding);
    case 6: return reflect ? ember::reflection_pad3d(self, padding) : ember::replication_pad3d(self, padding);
    default: EMBER_FAIL(Runtime, "_pad_edge: expected 2, 4 or 6 padding amounts, got ", padding.size());
  }
}

Tensor _pad_circular(const Tensor& self, const IntList& pad) {
  EMBER_CHECK(pad.size() % 2 == 0, Runtime, "Padding length must be divisible by 2");
  EMBER_CHECK((int64_t)pad.size() / 2 <= self.dim(), Runtime,
              "Padding length should be less than or equal to two times the input dimension but got padding length ",
              pad.size(), " and input of dimension ", self.dim());
  const int64_t nd = self.dim();
  const uint64_t first_node = autograd::next_sequence_nr();
  Tensor out = self;
  bool copied = false;
  for (int64_t i = 0; i < (int64_t)pad.size() / 2; ++i) {
    const int64_t dim = nd - 1 - i, n = self.size(dim), left = pad[2 * i], right = pad[2 * i + 1];
    EMBER_CHECK(left <= n && right <= n, Runtime, "Padding value causes wrapping around more than once.");
    EMBER_CHECK(n + left + right >= 0, Runtime, "narrow(): length must be non-negative.");
    const int64_t crop_left = std::max<int64_t>(-left, 0), kept = n - crop_left - std::max<int64_t>(-right, 0);
    EMBER_CHECK(kept > 0, Runtime, "Negative padding value is resulting in an empty dimension.");
    // PyTorch copies the wrapped slices out of the cropped part, which then overlap the destination
    EMBER_CHECK(left <= kept && right <= kept, Runtime, "Padding value causes wrapping around more than once.");
    if (kept != n) out = ember::narrow(out, dim, crop_left, kept);
    std::vector<Tensor> parts;
    if (left > 0) parts.push_back(ember::narrow(out, dim, kept - left, left));
    parts.push_back(out);
    if (right > 0) parts.push_back(ember::narrow(out, dim, 0, right));
    if (parts.size() > 1) out = ember::cat(parts, dim), copied = true;
  }
  if (!copied) out = ember::clone(out);
  // PyTorch's _pad_circular writes the slices into a new tensor: its node is CopySlices.
  autograd::name_composite_node(out, first_node, "torch::autograd::CopySlices");
  return out;
}

Tensor pixel_shuffle(const Tensor& self, int64_t upscale_factor) {
  EMBER_CHECK(self.dim() >= 3, Runtime, "pixel_shuffle expects input to have at least 3 dimensions, but got input "
              "with ", self.dim(), " dimension(s)");
  const int64_t r = upscale_factor;
  EMBER_CHECK(r > 0, Runtime, "pixel_shuffle expects a positive upscale_factor, but got ", r);
  const int64_t c = self.size(-3), h = self.size(-2), w = self.size(-1);
  const int64_t r2 = checked_mul(r, r, "pixel_shuffle: upscale_factor squared");
  EMBER_CHECK(c % r2 == 0, Runtime, "pixel_shuffle expects its input's 'channel' dimension to be divisible by "
              "the square of upscale_factor, but input.size(-3)=", c, " is not divisible by ", r2);
  const int64_t nb = self.dim() - 3;
  DimVector split, dims, out_shape;
  for (int64_t d = 0; d < nb; ++d) split.push_back(self.size(d));
  out_shape = split;
  for (int64_t v : {c / r2, r, r, h, w}) split.push_back(v);
  for (int64_t d = 0; d < nb; ++d) dims.push_back(d);
  for (int64_t d : {0, 3, 1, 4, 2}) dims.push_back(nb + d);
  for (int64_t v : {c / r2, checked_mul(h, r, "pixel_shuffle: height"), checked_mul(w, r, "pixel_shuffle: width")})
    out_shape.push_back(v);
  return ember::reshape(ember::permute(ember::reshape(self, split), dims), out_shape);
}

Tensor pixel_unshuffle(const Tensor& self, int64_t downscale_factor) {
  EMBER_CHECK(self.dim() >= 3, Runtime, "pixel_unshuffle expects input to have at least 3 dimensions, but got input "
              "with ", self.dim(), " dimension(s)");
  const int64_t r = downscale_factor;
  EMBER_CHECK(r > 0, Runtime, "pixel_unshuffle expects a positive downscale_factor, but got ", r);
  const int64_t c = self.size(-3), h = self.size(-2), w = self.size(-1);
  EMBER_CHECK(h % r == 0, Runtime, "pixel_unshuffle expects height to be divisible by downscale_factor, but "
              "input.size(-2)=", h, " is not divisible by ", r);
  EMBER_CHECK(w % r == 0, Runtime, "pixel_unshuffle expects width to be divisible by downscale_factor, but "
              "input.size(-1)=", w, " is not divisible by ", r);
  const int64_t nb = self.dim() - 3;
  DimVector split, dims, out_shape;
  for (int64_t d = 0; d < nb; ++d) split.push_back(self.size(d));
  out_shape = split;
  for (int64_t v : {c, h / r, r, w / r, r}) split.push_back(v);
  for (int64_t d = 0; d < nb; ++d) dims.push_back(d);
  for (int64_t d : {0, 2, 4, 1, 3}) dims.push_back(nb + d);
  const int64_t channels = checked_mul(c, checked_mul(r, r, "pixel_unshuffle: factor squared"), "pixel_unshuffle");
  for (int64_t v : {channels, h / r, w / r}) out_shape.push_back(v);
  return ember::reshape(ember::permute(ember::reshape(self, split), dims), out_shape);
}

}  // namespace ember::native
