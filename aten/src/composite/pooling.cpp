// Pools built on the 2-D kernels (aten/src/cpu/pooling.cpp): the 1-D forms run them over a
// height of 1, max_pool2d drops the indices, and adaptive_avg_pool2d is two small averaging
// matrices applied by matmul (or avg_pool2d when the windows tile the input evenly).
#include <string>
#include <tuple>

#include "ember/autograd.h"
#include "ember/dispatch.h"
#include "ember/dtype.h"
#include "ember/errors.h"
#include "ember/ops/_max_pool_gather.h"
#include "ember/ops/adaptive_avg_pool1d.h"
#include "ember/ops/adaptive_avg_pool2d.h"
#include "ember/ops/adaptive_max_pool1d.h"
#include "ember/ops/adaptive_max_pool2d.h"
#include "ember/ops/avg_pool1d.h"
#include "ember/ops/avg_pool2d.h"
#include "ember/ops/flatten.h"
#include "ember/ops/gather.h"
#include "ember/ops/matmul.h"
#include "ember/ops/max_pool1d.h"
#include "ember/ops/max_pool1d_with_indices.h"
#include "ember/ops/max_pool2d.h"
#include "ember/ops/max_pool2d_with_indices.h"
#include "ember/ops/mean.h"
#include "ember/ops/reshape.h"
#include "ember/ops/squeeze.h"
#include "ember/ops/transpose.h"
#include "ember/ops/unsqueeze.h"
#include "ember/tensor.h"

namespace ember::native {
namespace {

// PyTorch's checks of an adaptive pool's input: `dims` - 1 or `dims` dims, none empty but the batch.
void check_adaptive_input(const Tensor& self, const char* op, int64_t dims) {
  EMBER_CHECK(self.dim() == dims - 1 || self.dim() == dims, Runtime, op, "(): Expected ", dims - 1, "D or ", dims,
              "D tensor, but got: ", shape_str(self.sizes()));
  for (int64_t d = 1; d < self.dim(); ++d)
    EMBER_CHECK(self.size(d) > 0, Runtime, op,
                "(): Expected input to have non-zero size for non-batch dimensions, but input has sizes ",
                shape_str(self.sizes()), " with dimension ", d, " being empty");
}

// PyTorch's checkDimRange wording for the 1-D pools.
void check_2_to_3_dims(const Tensor& self, const char* op) {
  EMBER_CHECK(self.dim() == 2 || self.dim() == 3, Runtime, "Expected 2 to 3 dimensions, but got ", self.dim(),
              "-dimensional tensor for argument #1 'self' (while checking arguments for ", op, ")");
}

int64_t one_int(const IntList& v, const char* op, const char* what) {
  EMBER_CHECK(v.size() == 1, Runtime, op, "() argument '", what, "' should contain one int (got ", v.size(), ")");
  return v[0];
}

// out x in matrix averaging the adaptive windows of a dim of `in` elements.
Tensor averaging_matrix(int64_t out, int64_t in, ScalarType dtype, Device device) {
  Tensor m = empty_tensor({out, in}, ScalarType::Float64, Device());
  double* p = m.data<double>();
  for (int64_t i = 0; i < out; ++i) {
    const int64_t start = (i * in) / out, end = ((i + 1) * in + out - 1) / out;
    for (int64_t j = 0; j < in; ++j) p[i * in + j] = (j >= start && j < end) ? 1.0 / double(end - start) : 0.0;
  }
  return copy_to(m, device, dtype);
}

}  // namespace

Tensor _max_pool_gather(const Tensor& self, const Tensor& indices) {
  return ember::reshape(ember::gather(ember::flatten(self, -2), -1, ember::flatten(indices, -2)), indices.sizes());
}

Tensor max_pool2d(const Tensor& self, const IntList& kernel_size, const IntList& stride, const IntList& padding,
                  const IntList& dilation, bool ceil_mode) {
  return std::get<0>(ember::max_pool2d_with_indices(self, kernel_size, stride, padding, dilation, ceil_mode));
}

std::tuple<Tensor, Tensor> max_pool1d_with_indices(const Tensor& self, const IntList& kernel_size,
                                                   const IntList& stride, const IntList& padding,
                                                   const IntList& dilation, bool ceil_mode) {
  const char* op = "max_pool1d()";
  check_2_to_3_dims(self, "max_pool1d");
  EMBER_CHECK(kernel_size.size() == 1, Runtime, op,
              " kernel_size must be an int, list of ints or tuple of ints of size 1 but got size ", kernel_size.size());
  EMBER_CHECK(stride.size() <= 1, Runtime, op,
              " stride must be None, an int, list of ints, or tuple of ints of size 1 but got size ", stride.size());
  EMBER_CHECK(padding.size() == 1, Runtime, op,
              " padding must be an int, list of ints, or tuple of ints of size 1 but got size ", padding.size());
  EMBER_CHECK(dilation.size() == 1, Runtime, op,
              " dilation must be an int, list of ints or tuple of ints of size 1 but got size ", dilation.size());
  const int64_t k = kernel_size[0], s = stride.empty() ? k : stride[0], p = padding[0], d = dilation[0];
  EMBER_CHECK(k > 0, Runtime, op, " kernel_size must be greater than zero, but got ", k);
  EMBER_CHECK(s > 0, Runtime, op, " stride must be greater than zero, but got ", s);
  EMBER_CHECK(p >= 0, Runtime, op, " padding must be non-negative, but got ", p);
  EMBER_CHECK(p <= k / 2, Runtime, op, " padding should be at most half of kernel size, but got padding=", p,
              " and kernel_size=", k);
  EMBER_CHECK(d > 0, Runtime, op, " dilation must be greater than zero, but got ", d);
  const int64_t L = self.size(-1);
  const int64_t span = L + 2 * p - d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0);
  int64_t out = span < 0 ? 0 : span / s + 1;
  if (ceil_mode && out > 0 && (out - 1) * s >= L + p) --out;
  EMBER_CHECK(out >= 1, Runtime, op, " Invalid computed output size: ", out);
  auto [values, indices] = ember::max_pool2d_with_indices(ember::unsqueeze(self, -2), {1, k}, {1, s}, {0, p}, {1, d},
                                                          ceil_mode);
  return {ember::squeeze(values, -2), ember::squeeze(indices, -2)};
}

Tensor max_pool1d(const Tensor& self, const IntList& kernel_size, const IntList& stride, const IntList& padding,
                  const IntList& dilation, bool ceil_mode) {
  bool ok = self.dim() == 2 || self.dim() == 3;
  for (int64_t d = self.dim() == 3 ? 1 : 0; ok && d < self.dim(); ++d) ok = self.size(d) != 0;
  EMBER_CHECK(ok, Runtime, "max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size for "
              "input, but got:", shape_str(self.sizes()));
  return std::get<0>(ember::max_pool1d_with_indices(self, kernel_size, stride, padding, dilation, ceil_mode));
}

Tensor avg_pool1d(const Tensor& self, const IntList& kernel_size, const IntList& stride, const IntList& padding,
                  bool ceil_mode, bool count_include_pad) {
  check_2_to_3_dims(self, "avg_pool1d");
  const int64_t k = one_int(kernel_size, "avg_pool1d", "kernel_size");
  const int64_t s = stride.empty() ? k : one_int(stride, "avg_pool1d", "stride");
  const int64_t p = one_int(padding, "avg_pool1d", "padding");
  return ember::squeeze(
      ember::avg_pool2d(ember::unsqueeze(self, -2), {1, k}, {1, s}, {0, p}, ceil_mode, count_include_pad), -2);
}

std::tuple<Tensor, Tensor> adaptive_max_pool1d(const Tensor& self, const IntList& output_size) {
  check_2_to_3_dims(self, "adaptive_max_pool1d");
  check_adaptive_input(self, "adaptive_max_pool1d", 3);
  const int64_t o = one_int(output_size, "adaptive_max_pool1d", "output_size");
  auto [values, indices] = ember::adaptive_max_pool2d(ember::unsqueeze(self, -2), {1, o});
  return {ember::squeeze(values, -2), ember::squeeze(indices, -2)};
}

Tensor adaptive_avg_pool2d(const Tensor& self, const IntList& output_size) {
  EMBER_CHECK(output_size.size() == 2 || output_size.size() == 1, Runtime,
              "adaptive_avg_pool2d: output_size must be 2");
  const int64_t oH = output_size[0], oW = output_size.size() == 2 ? output_size[1] : output_size[0];
  EMBER_CHECK(oH >= 0 && oW >= 0, Runtime,
              "adaptive_avg_pool2d: elements of output_size must be greater than or equal to 0 but received {", oH,
              ", ", oW, "}");
  check_adaptive_input(self, "adaptive_avg_pool2d", 4);
  if (!is_floating(self.dtype())) fail_dtype_not_implemented("adaptive_avg_pool2d", self.dtype());
  // A global pool is PyTorch's mean over the last two dims (MeanBackward1).
  if (oH == 1 && oW == 1) return ember::mean(self, IntList{-1, -2}, true, std::nullopt);
  const uint64_t first_node = autograd::next_sequence_nr();
  const int64_t H = self.size(-2), W = self.size(-1);
  Tensor result;
  // Windows that tile the input evenly are avg_pool2d's.
  if (oH > 0 && oW > 0 && H % oH == 0 && W % oW == 0) {
    result = ember::avg_pool2d(self, {H / oH, W / oW}, {H / oH, W / oW}, {0, 0}, false, true, std::nullopt);
  } else {
    const Tensor rows = averaging_matrix(oH, H, self.dtype(), self.device());
    const Tensor cols = averaging_matrix(oW, W, self.dtype(), self.device());
    result = ember::matmul(rows, ember::matmul(self, ember::transpose(cols, 0, 1)));
  }
  autograd::name_composite_node(result, first_node, "AdaptiveAvgPool2DBackward0");
  return result;
}

Tensor adaptive_avg_pool1d(const Tensor& self, const IntList& output_size) {
  check_2_to_3_dims(self, "adaptive_avg_pool1d");
  check_adaptive_input(self, "adaptive_avg_pool1d", 3);
  const int64_t o = one_int(output_size, "adaptive_avg_pool1d", "output_size");
  return ember::squeeze(ember::adaptive_avg_pool2d(ember::unsqueeze(self, -2), {1, o}), -2);
}

}  // namespace ember::native
