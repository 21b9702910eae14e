// layer_norm and batch_norm over their fused kernels, and the kernels'
// gradients: the backward kernel when no graph of the gradient is recorded,
// else the same math in ember ops, recomputing the statistics from `input`
// (the saved mean and rstd are outputs whose gradients the node drops, so a
// double backward must not go through them).
#include <tuple>

#include "ember/autograd.h"
#include "ember/errors.h"
#include "ember/ops/_batch_norm_backward.h"
#include "ember/ops/_batch_norm_jvp.h"
#include "ember/ops/_batch_norm_param_jvp.h"
#include "ember/ops/_layer_norm_backward.h"
#include "ember/ops/_layer_norm_jvp.h"
#include "ember/ops/_native_batch_norm_backward.h"
#include "ember/ops/_native_layer_norm_backward.h"
#include "ember/ops/add.h"
#include "ember/ops/batch_norm.h"
#include "ember/ops/expand.h"
#include "ember/ops/layer_norm.h"
#include "ember/ops/mean.h"
#include "ember/ops/mul.h"
#include "ember/ops/native_batch_norm.h"
#include "ember/ops/native_layer_norm.h"
#include "ember/ops/reshape.h"
#include "ember/ops/rsqrt.h"
#include "ember/ops/sub.h"
#include "ember/ops/sum.h"
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

bool records_gradient_graph(std::initializer_list<const Tensor*> ts) { return autograd::any_requires_grad(ts); }

}  // namespace

Tensor layer_norm(const Tensor& input, const IntList& normalized_shape, const Tensor& weight, const Tensor& bias,
                  double eps, bool /*cudnn_enable*/) {
  return std::get<0>(ember::native_layer_norm(input, normalized_shape, weight, bias, eps));
}

std::tuple<Tensor, Tensor, Tensor> _layer_norm_backward(const Tensor& grad, const Tensor& input,
                                                        const IntList& normalized_shape, const Tensor& mean,
                                                        const Tensor& rstd, const Tensor& weight, double eps) {
  if (!records_gradient_graph({&grad, &input, &weight}))
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
  if (!records_gradient_graph({&grad, &input, &weight}))
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
