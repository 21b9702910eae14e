// scatter_reduce's derivatives, written with ember ops so double backward comes for free.
// Each reduction is linear in per-element weights: d result[t] = sum of w * tangent over
// the elements reduced into t; the weights below are PyTorch's (ties of amax/amin share
// evenly, prod is exact with zeros).
#include <string>

#include "ember/errors.h"
#include "ember/ops/_scatter_reduce_backward.h"
#include "ember/ops/_scatter_reduce_jvp.h"
#include "ember/ops/eq.h"
#include "ember/ops/gather.h"
#include "ember/ops/logical_and.h"
#include "ember/ops/masked_fill.h"
#include "ember/ops/mul.h"
#include "ember/ops/narrow.h"
#include "ember/ops/ones.h"
#include "ember/ops/scatter.h"
#include "ember/ops/scatter_add.h"
#include "ember/ops/scatter_reduce.h"
#include "ember/ops/to.h"
#include "ember/ops/true_divide.h"
#include "ember/ops/where.h"
#include "ember/ops/zeros.h"
#include "ember/tensor.h"

namespace ember::native {
namespace {

struct Weights {
  Tensor self, src;  // src's weights have the index's shape
};

Tensor ones_of(const Tensor& like) { return ember::ones(like.sizes(), like.dtype(), like.device()); }
Tensor as_float(const Tensor& mask, const Tensor& like) { return ember::to_dtype(mask, like.dtype()); }

// The part of `src` the index reads (src may be larger than the index).
Tensor src_part(const Tensor& src, const Tensor& index) {
  Tensor part = src;
  for (int64_t d = 0; d < index.dim(); ++d)
    if (part.size(d) != index.size(d)) part = ember::narrow(part, d, 0, index.size(d));
  return part;
}

Weights scatter_reduce_weights(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src_in,
                               const std::string& reduce, bool include_self, const Tensor& result) {
  const Tensor src = src_part(src_in, index);
  // 1 where self's own value takes part in its target's reduction.
  const Tensor self_in = include_self ? ones_of(self) : ember::scatter_value(ones_of(self), dim, index, Scalar(0));
  if (reduce == "sum") return {self_in, ones_of(src)};
  if (reduce == "mean") {
    const Tensor count = ember::scatter_add(self_in, dim, index, ones_of(src));  // >= 1 wherever a weight is used
    const Tensor safe = ember::masked_fill_Scalar(count, ember::eq(count, wrap_number(Scalar(0))), Scalar(1));
    return {ember::true_divide(self_in, safe), ember::true_divide(ones_of(src), ember::gather(safe, dim, index))};
  }
  if (reduce == "amax" || reduce == "amin") {
    const Tensor self_hit = ember::mul(self_in, as_float(ember::eq(self, result), self));
    const Tensor src_hit = as_float(ember::eq(src, ember::gather(result, dim, index)), src);
    const Tensor ties = ember::scatter_add(self_hit, dim, index, src_hit);
    const Tensor safe = ember::masked_fill_Scalar(ties, ember::eq(ties, wrap_number(Scalar(0))), Scalar(1));
    return {ember::true_divide(self_hit, safe), ember::true_divide(src_hit, ember::gather(safe, dim, index))};
  }
  EMBER_CHECK(reduce == "prod", Runtime, "reduce argument must be either sum, prod, mean, amax or amin, got ", reduce);
  const Tensor zero = wrap_number(Scalar(0));
  // self's weight: the product of the others, from a self with its zeros read as ones.
  const Tensor masked_self = ember::masked_fill_Scalar(self, ember::eq(self, zero), Scalar(1));
  const Tensor self_w = ember::true_divide(
      ember::scatter_reduce_two(masked_self, dim, index, src, "prod", include_self), masked_self);
  // src's weight: result / src, except for the one zero of a target, whose weight is the product
  // of the others (several zeros give 0 either way).
  const Tensor src_zero = ember::eq(src, zero);
  const Tensor zeros_at = ember::scatter_add(ember::zeros(self.sizes(), self.dtype(), self.device()), dim, index,
                                             as_float(src_zero, src));
  const Tensor lone_zero =
      ember::logical_and(src_zero, ember::eq(ember::gather(zeros_at, dim, index), wrap_number(Scalar(1))));
  const Tensor others = ember::gather(
      ember::scatter_reduce_two(self, dim, index, ember::masked_fill_Scalar(src, lone_zero, Scalar(1)), "prod",
                                include_self),
      dim, index);
  const Tensor plain = ember::true_divide(ember::gather(result, dim, index),
                                          ember::masked_fill_Scalar(src, src_zero, Scalar(1)));
  return {ember::mul(self_in, self_w), ember::where(lone_zero, others, plain)};
}

}  // namespace

Tensor _scatter_reduce_backward(const Tensor& grad, const Tensor& self, int64_t dim, const Tensor& index,
                                const Tensor& src, const std::string& reduce, bool include_self, const Tensor& result,
                                bool wrt_src) {
  const Weights w = scatter_reduce_weights(self, dim, index, src, reduce, include_self, result);
  return wrt_src ? ember::mul(ember::gather(grad, dim, index), w.src) : ember::mul(grad, w.self);
}

Tensor _scatter_reduce_jvp(const Tensor& self_t, const Tensor& src_t, const Tensor& self, int64_t dim,
                           const Tensor& index, const Tensor& src, const std::string& reduce, bool include_self,
                           const Tensor& result) {
  const Weights w = scatter_reduce_weights(self, dim, index, src, reduce, include_self, result);
  return ember::scatter_add(ember::mul(self_t, w.self), dim, index, ember::mul(src_part(src_t, index), w.src));
}

}  // namespace ember::native
