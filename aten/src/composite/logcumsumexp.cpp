// logcumsumexp's derivatives, with ember ops (so they are differentiable again).
#include <limits>

#include "ember/errors.h"
#include "ember/ops/_logcumsumexp_backward.h"
#include "ember/ops/_logcumsumexp_jvp.h"
#include "ember/ops/add.h"
#include "ember/ops/amax.h"
#include "ember/ops/cumsum.h"
#include "ember/ops/exp.h"
#include "ember/ops/flip.h"
#include "ember/ops/gt.h"
#include "ember/ops/isinf.h"
#include "ember/ops/log.h"
#include "ember/ops/logcumsumexp.h"
#include "ember/ops/lt.h"
#include "ember/ops/masked_fill.h"
#include "ember/ops/mul.h"
#include "ember/ops/neg.h"
#include "ember/ops/sub.h"
#include "ember/ops/true_divide.h"
#include "ember/ops/where.h"
#include "ember/tensor.h"

namespace ember::native {
namespace {

// The most negative finite value of a floating dtype: log(0) stand-in that stays finite.
double lowest_finite(ScalarType t) {
  switch (t) {
    case ScalarType::Float64: return std::numeric_limits<double>::lowest();
    case ScalarType::Float16: return -65504.0;
    default: return std::numeric_limits<float>::lowest();  // float32, bfloat16 (same exponent range)
  }
}

Tensor reverse_logcumsumexp(const Tensor& t, int64_t dim) {
  return ember::flip(ember::logcumsumexp(ember::flip(t, IntList{dim}), dim), IntList{dim});
}

}  // namespace

// d result_j / d self_i = exp(self_i - result_j) for j >= i; the sum over j of grad_j times that
// is taken in log space, for the positive and the negative part of grad apart.
Tensor _logcumsumexp_backward(const Tensor& grad, const Tensor& self, const Tensor& result, int64_t dim) {
  if (self.dim() == 0) return grad;
  const Tensor zero = wrap_number(Scalar(0)), one = wrap_number(Scalar(1));
  const Tensor floor = scalar_tensor(Scalar(lowest_finite(grad.dtype())), grad.dtype(), grad.device());
  const Tensor pos_mask = ember::gt(grad, zero), neg_mask = ember::lt(grad, zero);
  const Tensor log_pos = ember::where(pos_mask, ember::log(ember::where(pos_mask, grad, one)), floor);
  const Tensor log_neg = ember::where(neg_mask, ember::log(ember::where(neg_mask, ember::neg(grad), one)), floor);
  const Tensor out_pos = ember::exp(ember::add(reverse_logcumsumexp(ember::sub(log_pos, result), dim), self));
  const Tensor out_neg = ember::exp(ember::add(reverse_logcumsumexp(ember::sub(log_neg, result), dim), self));
  return ember::sub(out_pos, out_neg);
}

Tensor _logcumsumexp_jvp(const Tensor& tangent, const Tensor& self, int64_t dim) {
  if (self.dim() == 0) return tangent;
  const Tensor top = ember::amax(self, IntList{dim}, true);
  const Tensor shift = ember::masked_fill_Scalar(top, ember::isinf(top), Scalar(0));  // an all -inf line
  const Tensor e = ember::exp(ember::sub(self, shift));
  return ember::true_divide(ember::cumsum(ember::mul(e, tangent), dim), ember::cumsum(e, dim));
}

}  // namespace ember::native
