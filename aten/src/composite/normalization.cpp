// layer_norm and batch_norm over their fused kernels, and the kernels'
// gradients: the backward kernel when no graph of the gradient is recorded,
// else the same math in ember ops, recomputing the statistics from `input`
// (the saved mean and rstd are outputs whose gradients the node drops, so a
// double backward must not go through them).
#include <optional>
#include <string>
#include <tuple>
#include <utility>

#include "ember/autograd.h"
#include "ember/errors.h"
#include "ember/forward_ad.h"
#include "ember/ops/_batch_norm_backward.h"
#include "ember/ops/_batch_norm_jvp.h"
#include "ember/ops/_batch_norm_param_jvp.h"
#include "ember/ops/_layer_norm_backward.h"
#include "ember/ops/_layer_norm_jvp.h"
#include "ember/ops/_native_batch_norm_backward.h"
#include "ember/ops/_native_layer_norm_backward.h"
#include "ember/ops/add.h"
#include "ember/ops/batch_norm.h"
#include "ember/ops/clone.h"
#include "ember/ops/copy_.h"
#include "ember/ops/expand.h"
#include "ember/ops/group_norm.h"
#include "ember/ops/instance_norm.h"
#include "ember/ops/layer_norm.h"
#include "ember/ops/mean.h"
#include "ember/ops/mul.h"
#include "ember/ops/native_batch_norm.h"
#include "ember/ops/native_layer_norm.h"
#include "ember/ops/reshape.h"
#include "ember/ops/rms_norm.h"
#include "ember/ops/rsqrt.h"
#include "ember/ops/sub.h"
#include "ember/ops/sum.h"
#include "ember/ops/to.h"
#include "ember/ops/unsqueeze.h"
#include "ember/tensor.h"

namespace ember::native {
namespace {

Tensor number(double v) { return wrap_number(Scalar(v)); }

// The last `n` dims of a `ndim`-dim tensor, and the ones before them.
IntList trailing_dims(int64_t ndim, int64_t n) {
  IntList d;
  for (int64_t i = ndim - n; i < ndim; ++i) d.push_back(i);
  return d;
}
IntList leading_dims(int64_t ndim, int64_t n) {
  IntList d;
  for (int64_t i = 0; i < ndim - n; ++i) d.push_back(i);
  return d;
}

// `t` summed over `dims`; sum(dim=[]) would reduce every dim, so no dims means `t` itself.
Tensor sum_dims(const Tensor& t, const IntList& dims) { return dims.empty() ? t : ember::sum(t, dims); }

// Batch norm's per-channel statistics, as [1, C, 1, ...] to broadcast against the input.
IntList channel_view(const Tensor& input) {
  IntList s(input.dim(), 1);
  s[1] = input.size(1);
  return s;
}
IntList non_channel_dims(const Tensor& input) {
  IntList d{0};
  for (int64_t i = 2; i < input.dim(); ++i) d.push_back(i);
  return d;
}

// The backward kernels have no derivatives: ember ops run instead when a graph of the
// gradient is recorded or an input carries a forward-mode tangent.
bool needs_differentiable_math(std::initializer_list<const Tensor*> ts) {
  return autograd::any_requires_grad(ts) || (forward_ad::maybe_active() && forward_ad::wanted(ts));
}

}  // namespace

Tensor layer_norm(const Tensor& input, const IntList& normalized_shape, const Tensor& weight, const Tensor& bias,
                  double eps, bool /*cudnn_enable*/) {
  return std::get<0>(ember::native_layer_norm(input, normalized_shape, weight, bias, eps));
}

std::tuple<Tensor, Tensor, Tensor> _layer_norm_backward(const Tensor& grad, const Tensor& input,
                                                        const IntList& normalized_shape, const Tensor& mean,
                                                        const Tensor& rstd, const Tensor& weight, double eps) {
  if (!needs_differentiable_math({&grad, &input, &weight}))
    return ember::_native_layer_norm_backward(grad, input, normalized_shape, mean, rstd, weight);
  const int64_t nd = (int64_t)normalized_shape.size();
  const IntList dims = trailing_dims(input.dim(), nd), outer = leading_dims(input.dim(), nd);
  const Tensor centered = ember::sub(input, ember::mean(input, dims, true));
  const Tensor rs = ember::rsqrt(ember::add(ember::mean(ember::mul(centered, centered), dims, true), number(eps)));
  const Tensor xhat = ember::mul(centered, rs);
  const Tensor gw = weight.defined() ? ember::mul(grad, weight) : grad;
  const Tensor dx = ember::mul(rs, ember::sub(ember::sub(gw, ember::mean(gw, dims, true)),
                                              ember::mul(xhat, ember::mean(ember::mul(gw, xhat), dims, true))));
  const Tensor dw = weight.defined() ? sum_dims(ember::mul(grad, xhat), outer) : Tensor();
  return {dx, dw, sum_dims(grad, outer)};
}

Tensor _layer_norm_jvp(const Tensor& input_t, const Tensor& input, const IntList& normalized_shape, const Tensor& mean,
                       const Tensor& rstd, const Tensor& weight) {
  const IntList dims = trailing_dims(input.dim(), (int64_t)normalized_shape.size());
  const Tensor xhat = ember::mul(ember::sub(input, mean), rstd);
  const Tensor t = ember::mul(rstd, ember::sub(ember::sub(input_t, ember::mean(input_t, dims, true)),
                                               ember::mul(xhat, ember::mean(ember::mul(xhat, input_t), dims, true))));
  return weight.defined() ? ember::mul(t, weight) : t;
}

Tensor batch_norm(const Tensor& input, const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                  const Tensor& running_var, bool training, double momentum, double eps, bool /*cudnn_enabled*/) {
  return std::get<0>(ember::native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps));
}

std::tuple<Tensor, Tensor, Tensor> _batch_norm_backward(const Tensor& grad, const Tensor& input, const Tensor& weight,
                                                        const Tensor& save_mean, const Tensor& save_invstd,
                                                        bool training, double eps) {
  if (!needs_differentiable_math({&grad, &input, &weight}))
    return ember::_native_batch_norm_backward(grad, input, weight, save_mean, save_invstd, training);
  const IntList dims = non_channel_dims(input), cv = channel_view(input);
  Tensor invstd, xhat;
  if (training) {
    const Tensor centered = ember::sub(input, ember::mean(input, dims, true));
    invstd = ember::rsqrt(ember::add(ember::mean(ember::mul(centered, centered), dims, true), number(eps)));
    xhat = ember::mul(centered, invstd);
  } else {  // the running stats: constants
    invstd = ember::reshape(save_invstd, cv);
    xhat = ember::mul(ember::sub(input, ember::reshape(save_mean, cv)), invstd);
  }
  Tensor dx = grad;
  if (training)
    dx = ember::sub(ember::sub(grad, ember::mean(grad, dims, true)),
                    ember::mul(xhat, ember::mean(ember::mul(grad, xhat), dims, true)));
  dx = ember::mul(dx, invstd);
  if (weight.defined()) dx = ember::mul(dx, ember::reshape(weight, cv));
  const Tensor dw = weight.defined() ? ember::sum(ember::mul(grad, xhat), dims) : Tensor();
  return {dx, dw, ember::sum(grad, dims)};
}

Tensor _batch_norm_jvp(const Tensor& input_t, const Tensor& input, const Tensor& weight, const Tensor& save_mean,
                       const Tensor& save_invstd, bool training) {
  const IntList dims = non_channel_dims(input), cv = channel_view(input);
  const Tensor invstd = ember::reshape(save_invstd, cv);
  Tensor t = input_t;
  if (training) {
    const Tensor xhat = ember::mul(ember::sub(input, ember::reshape(save_mean, cv)), invstd);
    t = ember::sub(ember::sub(input_t, ember::mean(input_t, dims, true)),
                   ember::mul(xhat, ember::mean(ember::mul(xhat, input_t), dims, true)));
  }
  t = ember::mul(t, invstd);
  return weight.defined() ? ember::mul(t, ember::reshape(weight, cv)) : t;
}

Tensor _batch_norm_param_jvp(const Tensor& param_t, const Tensor& input, const Tensor& save_mean,
                             const Tensor& save_invstd, bool is_bias) {
  const IntList cv = channel_view(input);
  const Tensor p = ember::reshape(param_t, cv);
  if (is_bias) return ember::expand(p, input.sizes());
  return ember::mul(ember::mul(ember::sub(input, ember::reshape(save_mean, cv)), ember::reshape(save_invstd, cv)), p);
}

}  // namespace ember::native

namespace ember::native {

Tensor group_norm(const Tensor& input, int64_t num_groups, const Tensor& weight, const Tensor& bias, double eps,
                  bool /*cudnn_enabled*/) {
  EMBER_CHECK(input.dim() >= 2, Runtime, "Expected at least 2 dimensions for input tensor but received ", input.dim());
  const int64_t N = input.size(0), C = input.size(1);
  EMBER_CHECK(num_groups > 0 && C % num_groups == 0, Runtime, "Expected number of channels in input to be divisible by "
              "num_groups, but got input of shape ", shape_str(input.sizes()), " and num_groups=", num_groups);
  for (const auto& [t, name] : {std::pair{&weight, "weight"}, std::pair{&bias, "bias"}})
    EMBER_CHECK(!t->defined() || (t->dim() == 1 && t->numel() == C), Runtime, "Expected ", name, " to be a vector of "
                "size equal to the number of channels in input, but got ", name, " of shape ", shape_str(t->sizes()),
                " and input of shape ", shape_str(input.sizes()));
  int64_t rest = C / num_groups;
  for (int64_t d = 2; d < input.dim(); ++d) rest *= input.size(d);
  // Each (sample, group) is one row of the layer_norm kernel.
  const Tensor rows = ember::reshape(input, {N, num_groups, rest});
  Tensor out = ember::reshape(std::get<0>(ember::native_layer_norm(rows, {rest}, Tensor(), Tensor(), eps)),
                              input.sizes());
  const IntList cv = channel_view(input);
  if (weight.defined()) out = ember::mul(out, ember::reshape(weight, cv));
  if (bias.defined()) out = ember::add(out, ember::reshape(bias, cv));
  return out;
}

Tensor instance_norm(const Tensor& input, const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                     const Tensor& running_var, bool use_input_stats, double momentum, double eps,
                     bool /*cudnn_enabled*/) {
  EMBER_CHECK(input.dim() >= 2, Runtime, "instance_norm: expected an input with at least 2 dims (N, C, ...), but got ",
              input.dim(), " dims");
  const int64_t N = input.size(0), C = input.size(1);
  // A batch of one sample with N * C channels; per-channel tensors repeated N times.
  IntList shape{1, N * C};
  for (int64_t d = 2; d < input.dim(); ++d) shape.push_back(input.size(d));
  auto repeated = [&](const Tensor& t) {
    return t.defined() ? ember::reshape(ember::expand(ember::unsqueeze(t, 0), {N, C}), {N * C}) : t;
  };
  Tensor rm = repeated(running_mean), rv = repeated(running_var);
  if (rm.defined() && rm.is_same(running_mean)) rm = ember::clone(rm);  // N == 1: reshape gave a view
  if (rv.defined() && rv.is_same(running_var)) rv = ember::clone(rv);
  const Tensor out = ember::batch_norm(ember::reshape(input, shape), repeated(weight), repeated(bias), rm, rv,
                                       use_input_stats, momentum, eps, false);
  if (use_input_stats) {  // each running stat becomes the mean of its N updated copies
    NoGradGuard no_grad;
    if (running_mean.defined()) ember::copy_(running_mean, ember::mean(ember::reshape(rm, {N, C}), IntList{0}));
    if (running_var.defined()) ember::copy_(running_var, ember::mean(ember::reshape(rv, {N, C}), IntList{0}));
  }
  return ember::reshape(out, input.sizes());
}

namespace {
// torch.finfo(dtype).eps: rms_norm's default eps.
double machine_epsilon(ScalarType t) {
  switch (t) {
    case ScalarType::Float16: return 0.0009765625;
    case ScalarType::BFloat16: return 0.0078125;
    case ScalarType::Float32: return 1.1920928955078125e-07;
    default: return 2.220446049250313e-16;
  }
}
}  // namespace

Tensor rms_norm(const Tensor& input, const IntList& normalized_shape, const Tensor& weight, std::optional<double> eps) {
  const int64_t nd = (int64_t)normalized_shape.size();
  const DimVector ns(normalized_shape.begin(), normalized_shape.end());
  EMBER_CHECK(!weight.defined() || weight.sizes() == ns, Runtime, "Expected weight to be of same shape as "
              "normalized_shape, but got weight of shape ", shape_str(weight.defined() ? weight.sizes() : DimVector{}),
              " and normalized_shape = ", shape_str(ns));
  bool fits = input.dim() >= nd;
  for (int64_t i = 0; fits && i < nd; ++i) fits = input.size(input.dim() - nd + i) == ns[i];
  if (!fits) {
    std::string expected = "[*";
    for (int64_t i = 0; i < nd; ++i) expected += (i ? ", " : "") + std::to_string(ns[i]);
    EMBER_FAIL(Runtime, "Given normalized_shape=", shape_str(ns), ", expected input with shape ", expected,
               "], but got input of size", shape_str(input.sizes()));
  }
  EMBER_CHECK(is_floating(input.dtype()), Runtime, "rms_norm: expected a floating point input, but got ",
              dtype_name(input.dtype()));
  // float16/bfloat16 compute in float32, as PyTorch's upcast.
  const bool half = input.dtype() == ScalarType::Float16 || input.dtype() == ScalarType::BFloat16;
  const Tensor x = half ? ember::to_dtype(input, ScalarType::Float32) : input;
  const double e = eps ? *eps : machine_epsilon(input.dtype());
  const IntList dims = trailing_dims(input.dim(), nd);
  Tensor out = ember::mul(x, ember::rsqrt(ember::add(ember::mean(ember::mul(x, x), dims, true), number(e))));
  if (half) out = ember::to_dtype(out, input.dtype());
  return weight.defined() ? ember::mul(out, weight) : out;
}

}  // namespace ember::native
