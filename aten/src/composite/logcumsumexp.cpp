// logcumsumexp's derivatives, with ember ops (so they are differentiable again).
#include <limits>

#include "ember/errors.h"
#include "ember/ops/_logcumsumexp_backward.h"
#include "ember/ops/_logcumsumexp_jvp.h"
#include "ember/ops/add.h"
#include "ember/ops/exp.h"
#include "ember/ops/flip.h"
#include "ember/ops/gt.h"
#include "ember/ops/log.h"
#include "ember/ops/logcumsumexp.h"
#include "ember/ops/lt.h"
#include "ember/ops/mul.h"
#include "ember/ops/neg.h"
#include "ember/ops/sub.h"
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


// sum over k <= j (k >= j when `reverse`) of v_k * exp(l_k + s_j), taken in log space for the
// positive and the negative entries of v apart, so that nothing overflows; zeros of v are the
// lowest finite value in log space (log's input is 1 there, so no NaN in double backward).
Tensor signed_log_scan(const Tensor& v, const Tensor& l, const Tensor& s, int64_t dim, bool reverse) {
  const Tensor zero = wrap_number(Scalar(0)), one = wrap_number(Scalar(1));
  const Tensor floor = scalar_tensor(Scalar(lowest_finite(v.dtype())), v.dtype(), v.device());
  auto part = [&](const Tensor& mask, const Tensor& magnitude) {
    const Tensor logs = ember::add(ember::where(mask, ember::log(ember::where(mask, magnitude, one)), floor), l);
    const Tensor scanned = reverse ? reverse_logcumsumexp(logs, dim) : ember::logcumsumexp(logs, dim);
    return ember::exp(ember::add(scanned, s));
  };
  return ember::sub(part(ember::gt(v, zero), v), part(ember::lt(v, zero), ember::neg(v)));
}

}  // namespace

// d result_j / d self_i = exp(self_i - result_j) for j >= i, so
// grad_self_i = sum_{j >= i} grad_j exp(-result_j) * exp(self_i) (PyTorch's log-space form).
Tensor _logcumsumexp_backward(const Tensor& grad, const Tensor& self, const Tensor& result, int64_t dim) {
  if (self.dim() == 0) return grad;
  return signed_log_scan(grad, ember::neg(result), self, dim, /*reverse=*/true);
}

// tangent_out_j = sum_{i <= j} t_i exp(self_i - result_j) = sum_{i <= j} a_i exp(result_i - result_j) with
// a_i = t_i exp(self_i - result_i) (at most |t_i|): stable where a max-shifted cumsum underflows to 0/0.
Tensor _logcumsumexp_jvp(const Tensor& tangent, const Tensor& self, int64_t dim) {
  if (self.dim() == 0) return tangent;
  const Tensor result = ember::logcumsumexp(self, dim);
  const Tensor weighted = ember::mul(tangent, ember::exp(ember::sub(self, result)));
  return signed_log_scan(weighted, result, ember::neg(result), dim, /*reverse=*/false);
}

}  // namespace ember::native
