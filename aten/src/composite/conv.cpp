// conv1d/conv2d, conv_transpose1d/2d and convolution over the 2-D kernels of
// aten/src/cpu/conv.cpp: argument checks with PyTorch's messages, unbatched
// inputs, 1-D as 2-D with a height of 1, padding='same', float16/bfloat16
// through float32. A transposed convolution is the input-gradient kernel.
#include <string>

#include "ember/dtype.h"
#include "ember/errors.h"
#include "ember/ops/_conv_backward_input.h"
#include "ember/ops/_conv_forward.h"
#include "ember/ops/_im2col_backward.h"
#include "ember/ops/add.h"
#include "ember/ops/cat.h"
#include "ember/ops/col2im.h"
#include "ember/ops/conv1d.h"
#include "ember/ops/conv2d.h"
#include "ember/ops/conv_transpose1d.h"
#include "ember/ops/conv_transpose2d.h"
#include "ember/ops/convolution.h"
#include "ember/ops/squeeze.h"
#include "ember/ops/to.h"
#include "ember/ops/unsqueeze.h"
#include "ember/ops/view.h"
#include "ember/ops/zeros.h"
#include "ember/tensor.h"

namespace ember::native {
namespace {

// A parameter given as one value or `n` values, as `n` values.
DimVector expand_param(const IntList& v, int64_t n, const char* name, const char* op) {
  if ((int64_t)v.size() == n) return v;
  EMBER_CHECK(v.size() == 1, Runtime, "expected ", name, " to be a single integer value or a list of ", n,
              " values to match the convolution dimensions, but got ", name, "=", v);
  return DimVector(n, v[0]);
}

std::string joined(const DimVector& v, const char* sep) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + std::to_string(v[i]);
  return s;
}

struct ConvArgs {
  DimVector stride, padding, dilation, output_padding;
};

void check_conv(const Tensor& input, const Tensor& weight, const Tensor& bias, const ConvArgs& a, bool transposed,
                int64_t groups, int64_t n, const char* op) {
  EMBER_CHECK(input.dim() == n + 1 || input.dim() == n + 2, Runtime, "Expected ", n + 1, "D (unbatched) or ",
              n + 2, "D (batched) input to ", op, ", but got input of size: ", input.sizes());
  EMBER_CHECK(weight.dim() == n + 2, Runtime, "expected a ", n + 2, "-dimensional weight, but got weight of size ",
              weight.sizes());
  EMBER_CHECK(input.dtype() == weight.dtype(), Runtime, "Input type (", dtype_name(input.dtype()),
              ") and weight type (", dtype_name(weight.dtype()), ") should be the same");
  if (bias.defined())
    EMBER_CHECK(input.dtype() == bias.dtype(), Runtime, "Input type (", dtype_name(input.dtype()),
                ") and bias type (", dtype_name(bias.dtype()), ") should be the same");
  if (!is_floating(input.dtype())) fail_dtype_not_implemented(op, input.dtype());
  for (int64_t i = 0; i < n; ++i) {
    EMBER_CHECK(a.stride[i] > 0, Runtime, "non-positive stride is not supported");
    EMBER_CHECK(a.padding[i] >= 0, Runtime, "negative padding is not supported");
    EMBER_CHECK(a.dilation[i] > 0, Runtime, "non-positive dilation is not supported");
    if (transposed) EMBER_CHECK(a.output_padding[i] >= 0, Runtime, "negative output padding is not supported");
  }
  EMBER_CHECK(groups > 0, Runtime, "non-positive groups is not supported");
  EMBER_CHECK(weight.size(0) % groups == 0, Runtime, "Given groups=", groups,
              ", expected weight to be divisible by ", groups, " at dimension 0, but got weight of size [",
              weight.sizes(), "] instead");
  const int64_t channels = input.size(input.dim() - n - 1);
  const int64_t expected = transposed ? weight.size(0) : weight.size(1) * groups;
  EMBER_CHECK(channels == expected, Runtime, "Given ",
              transposed ? std::string("transposed=1") : "groups=" + std::to_string(groups), ", weight of size ",
              weight.sizes(), ", expected input", input.sizes(), " to have ", expected, " channels, but got ", channels,
              " channels instead");
  const int64_t out_channels = transposed ? weight.size(1) * groups : weight.size(0);
  if (bias.defined())
    EMBER_CHECK(bias.dim() == 1 && bias.size(0) == out_channels, Runtime, "Given weight of size ",
                weight.sizes(), ", expected bias to be 1-dimensional with ", out_channels,
                " elements, but got bias of size ", bias.sizes(), " instead");
  DimVector in_size, kernel, out_size;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t size = input.size(input.dim() - n + i), k = weight.size(2 + i);
    const int64_t span = a.dilation[i] * (k - 1) + 1;
    if (transposed) {
      in_size.push_back(size);
      out_size.push_back((size - 1) * a.stride[i] - 2 * a.padding[i] + span + a.output_padding[i]);
    } else {
      in_size.push_back(size + 2 * a.padding[i]);
      kernel.push_back(span);
    }
  }
  if (transposed) {
    for (int64_t i = 0; i < n; ++i)
      EMBER_CHECK(a.output_padding[i] < a.stride[i] || a.output_padding[i] < a.dilation[i], Runtime,
                  "output padding must be smaller than either stride or dilation, but got output_padding=",
                  a.output_padding, ", stride=", a.stride, ", dilation=", a.dilation);
    for (int64_t i = 0; i < n; ++i)
      EMBER_CHECK(out_size[i] > 0, Runtime, "Given input size per channel: (", joined(in_size, " x "),
                  "). Calculated output size per channel: (", joined(out_size, " x "), "). Output size is too small");
  } else {
    for (int64_t i = 0; i < n; ++i)
      EMBER_CHECK(in_size[i] >= kernel[i], Runtime, "Calculated padded input size per channel: (",
                  joined(in_size, " x "), "). Kernel size: (", joined(kernel, " x "),
                  "). Kernel size can't be greater than actual input size");
  }
}

// The convolution of `n` (1 or 2) spatial dims, checked, on the 2-D kernels.
Tensor conv_nd(const Tensor& input_in, const Tensor& weight_in, const Tensor& bias_in, ConvArgs a, bool transposed,
               int64_t groups, int64_t n, const char* op) {
  check_conv(input_in, weight_in, bias_in, a, transposed, groups, n, op);
  const bool unbatched = input_in.dim() == n + 1;
  const ScalarType dtype = input_in.dtype();
  const bool half = dtype == ScalarType::Float16 || dtype == ScalarType::BFloat16;
  auto compute = [&](const Tensor& t) { return half && t.defined() ? ember::to_dtype(t, ScalarType::Float32) : t; };
  Tensor input = compute(input_in), weight = compute(weight_in), bias = compute(bias_in);
  if (unbatched) input = ember::unsqueeze(input, 0);
  if (n == 1) {  // (N, C, L) as (N, C, 1, L)
    input = ember::unsqueeze(input, 2), weight = ember::unsqueeze(weight, 2);
    a.stride = DimVector{1, a.stride[0]}, a.padding = DimVector{0, a.padding[0]};
    a.dilation = DimVector{1, a.dilation[0]}, a.output_padding = DimVector{0, a.output_padding[0]};
  }
  Tensor out;
  if (!transposed) {
    out = ember::_conv_forward(input, weight, bias, a.stride, a.padding, a.dilation, groups);
  } else {
    const int64_t out_channels = weight.size(1) * groups;
    DimVector out_size{input.size(0), out_channels, 0, 0};
    for (int i = 0; i < 2; ++i) {
      const int64_t span = a.dilation[i] * (weight.size(2 + i) - 1) + 1;
      out_size[2 + i] = (input.size(2 + i) - 1) * a.stride[i] - 2 * a.padding[i] + span + a.output_padding[i];
      // output_padding >= stride leaves room for another input row: a zero one, so the
      // kernel sees the input a convolution of out_size would give.
      const int64_t rows = (out_size[2 + i] + 2 * a.padding[i] - span) / a.stride[i] + 1;
      if (rows > input.size(2 + i)) {
        DimVector extra = input.sizes();
        extra[2 + i] = rows - input.size(2 + i);
        input = ember::cat({input, ember::zeros(extra, input.dtype(), input.device())}, 2 + i);
      }
    }
    out = ember::_conv_backward_input(input, weight, out_size, a.stride, a.padding, a.dilation, groups);
    if (bias.defined()) out = ember::add(out, ember::view(bias, DimVector{1, out_channels, 1, 1}));
  }
  if (n == 1) out = ember::squeeze(out, 2);
  if (unbatched) out = ember::squeeze(out, 0);
  return half ? ember::to_dtype(out, dtype) : out;
}

ConvArgs conv_args(const IntList& stride, const IntList& padding, const IntList& dilation,
                   const IntList& output_padding, int64_t n, const char* op) {
  return {expand_param(stride, n, "stride", op), expand_param(padding, n, "padding", op),
          expand_param(dilation, n, "dilation", op), expand_param(output_padding, n, "output_padding", op)};
}

// padding='valid' (none) or 'same': d * (k - 1) split over both sides, an odd
// remainder added as zeros at the end (PyTorch's choice).
Tensor conv_padding_str(const Tensor& input, const Tensor& weight, const Tensor& bias, const IntList& stride,
                        const std::string& padding, const IntList& dilation, int64_t groups, int64_t n,
                        const char* op) {
  ConvArgs a = conv_args(stride, DimVector{0}, dilation, DimVector{0}, n, op);
  if (padding == "valid") return conv_nd(input, weight, bias, a, false, groups, n, op);
  EMBER_CHECK(padding == "same", Runtime, "Invalid padding string: '", padding, "'");
  for (int64_t i = 0; i < n; ++i)
    EMBER_CHECK(a.stride[i] == 1, Runtime, "padding='same' is not supported for strided convolutions");
  Tensor padded = input;
  for (int64_t i = 0; i < n && weight.dim() == n + 2; ++i) {
    const int64_t total = a.dilation[i] * (weight.size(2 + i) - 1);
    a.padding[i] = total / 2;
    if (total % 2 && (padded.dim() == n + 1 || padded.dim() == n + 2)) {
      const int64_t dim = padded.dim() - n + i;
      DimVector extra = padded.sizes();
      extra[dim] = 1;
      padded = ember::cat({padded, ember::zeros(extra, padded.dtype(), padded.device())}, dim);
    }
  }
  return conv_nd(padded, weight, bias, a, false, groups, n, op);
}

}  // namespace

Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias, const IntList& stride,
              const IntList& padding, const IntList& dilation, int64_t groups) {
  return conv_nd(input, weight, bias, conv_args(stride, padding, dilation, DimVector{0}, 1, "conv1d"), false, groups, 1,
                 "conv1d");
}

Tensor conv1d_padding(const Tensor& input, const Tensor& weight, const Tensor& bias, const IntList& stride,
                      const std::string& padding, const IntList& dilation, int64_t groups) {
  return conv_padding_str(input, weight, bias, stride, padding, dilation, groups, 1, "conv1d");
}

Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias, const IntList& stride,
              const IntList& padding, const IntList& dilation, int64_t groups) {
  return conv_nd(input, weight, bias, conv_args(stride, padding, dilation, DimVector{0}, 2, "conv2d"), false, groups, 2,
                 "conv2d");
}

Tensor conv2d_padding(const Tensor& input, const Tensor& weight, const Tensor& bias, const IntList& stride,
                      const std::string& padding, const IntList& dilation, int64_t groups) {
  return conv_padding_str(input, weight, bias, stride, padding, dilation, groups, 2, "conv2d");
}

Tensor conv_transpose1d(const Tensor& input, const Tensor& weight, const Tensor& bias, const IntList& stride,
                        const IntList& padding, const IntList& output_padding, int64_t groups,
                        const IntList& dilation) {
  const char* op = "conv_transpose1d";
  return conv_nd(input, weight, bias, conv_args(stride, padding, dilation, output_padding, 1, op), true, groups, 1, op);
}

Tensor conv_transpose2d_input(const Tensor& input, const Tensor& weight, const Tensor& bias, const IntList& stride,
                              const IntList& padding, const IntList& output_padding, int64_t groups,
                              const IntList& dilation) {
  const char* op = "conv_transpose2d";
  return conv_nd(input, weight, bias, conv_args(stride, padding, dilation, output_padding, 2, op), true, groups, 2, op);
}

Tensor convolution(const Tensor& input, const Tensor& weight, const Tensor& bias, const IntList& stride,
                   const IntList& padding, const IntList& dilation, bool transposed, const IntList& output_padding,
                   int64_t groups) {
  const char* op = "convolution";
  const int64_t n = weight.dim() - 2;
  EMBER_CHECK(n == 1 || n == 2, NotImplemented, op, ": only 1-D and 2-D convolutions are implemented, but got weight ",
              "of size ", weight.sizes());
  EMBER_CHECK(input.dim() == n + 2, Runtime, op, ": expected a ", n + 2, "-D (batched) input for a weight of size ",
              weight.sizes(), ", but got input of size ", input.sizes());
  return conv_nd(input, weight, bias, conv_args(stride, padding, dilation, output_padding, n, op), transposed, groups, n,
                 op);
}

Tensor _im2col_backward(const Tensor& grad, const IntList& input_size, const IntList& kernel_size,
                        const IntList& dilation, const IntList& padding, const IntList& stride) {
  EMBER_CHECK(input_size.size() >= 2, Runtime, "_im2col_backward: expected an input_size of at least 2 dims");
  const DimVector hw{input_size[input_size.size() - 2], input_size[input_size.size() - 1]};
  return ember::col2im(grad, hw, kernel_size, dilation, padding, stride);
}

}  // namespace ember::native
