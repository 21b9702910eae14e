// The classification losses over their kernels and ember ops, as ATen's:
// nll_loss (1-D/2-D), nll_loss2d (4-D) and nll_loss_nd (any) over the
// _nll_loss_forward kernel; cross_entropy_loss (class indices, label smoothing,
// class probabilities); binary_cross_entropy's gradients; and the losses that
// are plain compositions (binary_cross_entropy_with_logits, kl_div, soft_margin_loss).
#include <cstdint>
#include <tuple>

#include "ember/errors.h"
#include "ember/ops/_apply_loss_reduction.h"
#include "ember/ops/_binary_cross_entropy_backward.h"
#include "ember/ops/_binary_cross_entropy_target_backward.h"
#include "ember/ops/_nll_loss_forward.h"
#include "ember/ops/add.h"
#include "ember/ops/binary_cross_entropy_with_logits.h"
#include "ember/ops/clamp.h"
#include "ember/ops/cross_entropy_loss.h"
#include "ember/ops/eq.h"
#include "ember/ops/exp.h"
#include "ember/ops/index.h"
#include "ember/ops/kl_div.h"
#include "ember/ops/log.h"
#include "ember/ops/log1p.h"
#include "ember/ops/log_sigmoid.h"
#include "ember/ops/log_softmax.h"
#include "ember/ops/logical_not.h"
#include "ember/ops/mean.h"
#include "ember/ops/mul.h"
#include "ember/ops/neg.h"
#include "ember/ops/nll_loss.h"
#include "ember/ops/nll_loss2d.h"
#include "ember/ops/nll_loss_nd.h"
#include "ember/ops/reshape.h"
#include "ember/ops/soft_margin_loss.h"
#include "ember/ops/softplus.h"
#include "ember/ops/sub.h"
#include "ember/ops/sum.h"
#include "ember/ops/true_divide.h"
#include "ember/ops/where.h"
#include "ember/ops/xlogy.h"
#include "ember/tensor.h"

namespace ember::native {
namespace {

enum Reduction : int64_t { kNone = 0, kMean = 1, kSum = 2 };

Tensor number(double v) { return wrap_number(Scalar(v)); }

// `weight` (C) shaped to broadcast along the class dim of an input of `dims` dims.
Tensor class_weight(const Tensor& weight, int64_t dims, int64_t class_dim) {
  DimVector shape((size_t)(dims - class_dim), 1);
  shape[0] = weight.numel();
  return ember::reshape(weight, shape);
}

void check_nll_batch(const Tensor& self, const Tensor& target) {
  EMBER_CHECK(self.dim() >= 1, Value, "Expected 1 or more dimensions (got ", self.dim(), ")");
  if (self.dim() == 1) return;
  const int64_t batch = target.dim() == 0 ? 1 : target.size(0);
  EMBER_CHECK(target.dim() >= 1 && self.size(0) == batch, Value, "Expected input batch_size (", self.size(0),
              ") to match target batch_size (", target.dim() == 0 ? 0 : batch, ").");
}

Tensor cross_entropy_probabilities(const Tensor& self, const Tensor& target_, const Tensor& weight,
                                   int64_t reduction, double label_smoothing) {
  EMBER_CHECK(is_floating(target_.dtype()), Runtime,
              "cross_entropy: Expected floating point type for target with class probabilities, got ",
              dtype_title(target_.dtype()));
  const int64_t class_dim = self.dim() == 1 ? 0 : 1, classes = self.size(class_dim);
  EMBER_CHECK(!weight.defined() || (weight.dim() == 1 && weight.numel() == classes), Runtime,
              "cross_entropy: weight tensor should be defined either for all ", classes,
              " classes or no classes but got weight tensor of shape: ", shape_str(weight.sizes()));
  const Tensor log_probs = ember::log_softmax(self, class_dim);
  Tensor target = target_;
  if (label_smoothing > 0)
    target = ember::add(ember::mul(target_, number(1 - label_smoothing)), number(label_smoothing / double(classes)));
  Tensor terms = ember::mul(log_probs, target);
  if (weight.defined()) terms = ember::mul(terms, class_weight(weight, self.dim(), class_dim));
  if (reduction == kNone) return ember::neg(ember::sum(terms, IntList{class_dim}));
  const Tensor total = ember::neg(ember::sum(terms));
  if (reduction == kSum) return total;
  // The mean over the samples (every position but the class dim); nan when there are none.
  const int64_t samples = classes ? self.numel() / classes : 0;
  return ember::true_divide(total, number(double(samples)));
}

Tensor cross_entropy_smoothed(const Tensor& self, const Tensor& target, const Tensor& weight, int64_t reduction,
                              int64_t ignore_index, double label_smoothing) {
  const int64_t class_dim = self.dim() == 1 ? 0 : 1, classes = self.size(class_dim);
  const Tensor log_probs = ember::log_softmax(self, class_dim);
  const Tensor nll = ember::nll_loss_nd(log_probs, target, weight, reduction, ignore_index);
  const Tensor ignored = ember::eq(target, wrap_number(Scalar(ignore_index)));
  // The smoothed part: -sum_c weight[c] log q_c of each kept target.
  const Tensor weighted = weight.defined() ? ember::mul(log_probs, class_weight(weight, self.dim(), class_dim)) : log_probs;
  const Tensor smooth = ember::where(ignored, number(0.0), ember::neg(ember::sum(weighted, IntList{class_dim})));
  Tensor part;
  if (reduction == kNone) {
    part = smooth;
  } else if (reduction == kSum) {
    part = ember::sum(smooth);
  } else if (weight.defined()) {  // normalised by the kept targets' weights, as nll_loss's mean
    const Tensor safe = ember::where(ignored, wrap_number(Scalar(int64_t(0))), target);
    const Tensor picked = ember::where(ignored, number(0.0), ember::index(weight, {safe}));
    part = ember::true_divide(ember::sum(smooth), ember::sum(picked));
  } else {
    part = ember::true_divide(ember::sum(smooth), ember::sum(ember::logical_not(ignored)));
  }
  return ember::add(ember::mul(nll, number(1 - label_smoothing)),
                    ember::mul(part, number(label_smoothing / double(classes))));
}

}  // namespace

Tensor nll_loss(const Tensor& self, const Tensor& target, const Tensor& weight, int64_t reduction,
                int64_t ignore_index) {
  EMBER_CHECK(self.dim() > 0 && self.dim() <= 2, Runtime, "nll_loss: input tensor should be 1D or 2D");
  EMBER_CHECK(target.dim() <= 1, Runtime, "nll_loss: 0D or 1D target tensor expected, multi-target not supported");
  const bool no_batch_dim = self.dim() == 1 && target.dim() == 0;
  EMBER_CHECK(no_batch_dim || (target.dim() == 1 && self.size(0) == target.size(0)), Runtime,
              "nll_loss: size mismatch (got input: ", shape_str(self.sizes()), ", target: ",
              shape_str(target.sizes()), ")");
  return std::get<0>(ember::_nll_loss_forward(self, target, weight, reduction, ignore_index));
}

Tensor nll_loss2d(const Tensor& self, const Tensor& target, const Tensor& weight, int64_t reduction,
                  int64_t ignore_index) {
  EMBER_CHECK(self.dim() == 4, Runtime, "nll_loss2d: only batches of spatial inputs supported (4D tensors), but got "
              "input of dimension: ", self.dim());
  EMBER_CHECK(target.dim() == 3, Runtime, "nll_loss2d: only batches of spatial targets supported (3D tensors) but got "
              "targets of dimension: ", target.dim());
  EMBER_CHECK(self.size(0) == target.size(0) && self.size(2) == target.size(1) && self.size(3) == target.size(2),
              Runtime, "nll_loss2d: size mismatch (got input: ", shape_str(self.sizes()), ", target: ",
              shape_str(target.sizes()), ")");
  return std::get<0>(ember::_nll_loss_forward(self, target, weight, reduction, ignore_index));
}

Tensor nll_loss_nd(const Tensor& self, const Tensor& target, const Tensor& weight, int64_t reduction,
                   int64_t ignore_index) {
  check_nll_batch(self, target);
  if (self.dim() <= 2) return ember::nll_loss(self, target, weight, reduction, ignore_index);
  if (self.dim() == 4) return ember::nll_loss2d(self, target, weight, reduction, ignore_index);
  DimVector expected{self.size(0)};
  for (int64_t d = 2; d < self.dim(); ++d) expected.push_back(self.size(d));
  EMBER_CHECK(target.sizes() == expected, Runtime, "nll_loss_nd: Expected target size ", shape_str(expected), ", got ",
              shape_str(target.sizes()));
  return std::get<0>(ember::_nll_loss_forward(self, target, weight, reduction, ignore_index));
}

Tensor cross_entropy_loss(const Tensor& self, const Tensor& target, const Tensor& weight, int64_t reduction,
                          int64_t ignore_index, double label_smoothing) {
  EMBER_CHECK(self.dim() >= 1, Value, "Expected 1 or more dimensions (got ", self.dim(), ")");
  if (self.sizes() == target.sizes()) {  // class probabilities, as PyTorch decides: same shapes
    EMBER_CHECK(ignore_index < 0, Runtime, "cross_entropy: ignore_index is not supported for floating point target");
    EMBER_CHECK(label_smoothing <= 1.0, Runtime, "cross_entropy: label_smoothing must be between 0.0 and 1.0. Got: ",
                label_smoothing);
    return cross_entropy_probabilities(self, target, weight, reduction, label_smoothing);
  }
  if (label_smoothing > 0.0) {
    EMBER_CHECK(label_smoothing <= 1.0, Runtime, "cross_entropy: label_smoothing must be between 0.0 and 1.0. Got: ",
                label_smoothing);
    return cross_entropy_smoothed(self, target, weight, reduction, ignore_index, label_smoothing);
  }
  return ember::nll_loss_nd(ember::log_softmax(self, self.dim() == 1 ? 0 : 1), target, weight, reduction, ignore_index);
}

Tensor _apply_loss_reduction(const Tensor& self, int64_t reduction) {
  EMBER_CHECK(reduction >= kNone && reduction <= kSum, Value, reduction,
              " is not a valid value for reduction (0 none, 1 mean, 2 sum)");
  if (reduction == kMean) return ember::mean(self);
  return reduction == kSum ? ember::sum(self) : self;
}

Tensor _binary_cross_entropy_backward(const Tensor& grad_output, const Tensor& self, const Tensor& target,
                                      const Tensor& weight, int64_t reduction) {
  // d/dx of the loss, (x - t) / (x (1 - x)), its denominator kept from 0 as PyTorch's (EPSILON, the float 1e-12f).
  const Tensor denom = ember::clamp(ember::mul(ember::sub(number(1.0), self), self), Scalar(double(1e-12f)));
  Tensor g = ember::true_divide(ember::mul(grad_output, ember::sub(self, target)), denom);
  if (weight.defined()) g = ember::mul(g, weight);
  return reduction == kMean ? ember::true_divide(g, number(double(self.numel()))) : g;
}

Tensor _binary_cross_entropy_target_backward(const Tensor& grad_output, const Tensor& self, const Tensor& target,
                                             const Tensor& weight, int64_t reduction) {
  // d/dt of (t - 1) log(1 - x) - t log(x); the logs are not clamped here, as in PyTorch (inf at 0 and 1).
  Tensor g = ember::mul(grad_output, ember::sub(ember::log1p(ember::neg(self)), ember::log(self)));
  if (weight.defined()) g = ember::mul(g, weight);
  return reduction == kMean ? ember::true_divide(g, number(double(target.numel()))) : g;
}

Tensor binary_cross_entropy_with_logits(const Tensor& self, const Tensor& target, const Tensor& weight,
                                        const Tensor& pos_weight, int64_t reduction) {
  // (1 - t) x - (1 + (pos_weight - 1) t) logsigmoid(x): no exp of a large x, so no overflow.
  Tensor log_sig = ember::log_sigmoid(self);
  if (pos_weight.defined())
    log_sig = ember::mul(log_sig, ember::add(ember::mul(ember::sub(pos_weight, number(1.0)), target), number(1.0)));
  Tensor loss = ember::sub(ember::mul(ember::sub(number(1.0), target), self), log_sig);
  if (weight.defined()) loss = ember::mul(loss, weight);
  return ember::_apply_loss_reduction(loss, reduction);
}

Tensor kl_div(const Tensor& self, const Tensor& target, int64_t reduction, bool log_target) {
  EMBER_CHECK(is_floating(self.dtype()), Runtime, "kl_div: Integral inputs not supported.");
  const Tensor loss = log_target ? ember::mul(ember::exp(target), ember::sub(target, self))
                                 : ember::sub(ember::xlogy(target, target), ember::mul(target, self));
  return ember::_apply_loss_reduction(loss, reduction);
}

Tensor soft_margin_loss(const Tensor& self, const Tensor& target, int64_t reduction) {
  // log(1 + exp(-t x)) as softplus, which does not overflow for a large -t x; its linear branch starts
  // at 40, where exp(-40) is below float64's rounding (the default 20 is 2e-9 off, relative).
  return ember::_apply_loss_reduction(ember::softplus(ember::neg(ember::mul(target, self)), 1, 40), reduction);
}

}  // namespace ember::native
