// Reductions of issue 11's math group made of other ops: logsumexp (max-shifted), the NaN-skipping
// sum and mean, count_nonzero, and the paired var_mean/std_mean/aminmax.
#include <optional>
#include <tuple>

#include "ember/autograd.h"
#include "ember/dtype.h"
#include "ember/ops/add.h"
#include "ember/ops/amax.h"
#include "ember/ops/amin.h"
#include "ember/ops/aminmax.h"
#include "ember/ops/count_nonzero.h"
#include "ember/ops/exp.h"
#include "ember/ops/isinf.h"
#include "ember/ops/isnan.h"
#include "ember/ops/log.h"
#include "ember/ops/logical_not.h"
#include "ember/ops/logsumexp.h"
#include "ember/ops/mean.h"
#include "ember/ops/nanmean.h"
#include "ember/ops/nansum.h"
#include "ember/ops/ne.h"
#include "ember/ops/reshape.h"
#include "ember/ops/std.h"
#include "ember/ops/std_mean.h"
#include "ember/ops/sub.h"
#include "ember/ops/sum.h"
#include "ember/ops/to.h"
#include "ember/ops/true_divide.h"
#include "ember/ops/var.h"
#include "ember/ops/var_mean.h"
#include "ember/ops/where.h"
#include "ember/tensor.h"

namespace ember::native {

namespace {
// sum reads an empty dim list as "no dim"; these ops (as amax) read it as every dim.
std::optional<IntList> all_if_none_given(const IntList& dim) {
  return dim.empty() ? std::nullopt : std::optional<IntList>(dim);
}
}  // namespace

Tensor logsumexp(const Tensor& self, const IntList& dim_in, bool keepdim) {
  const std::optional<IntList> dim = all_if_none_given(dim_in);
  const Tensor x = is_floating(self.dtype()) ? self : ember::to_dtype(self, default_dtype());
  if (x.numel() == 0) return ember::log(ember::sum(ember::exp(x), dim, keepdim, std::nullopt));  // -inf, as PyTorch
  Tensor shift;
  {
    // The shift is a constant to autograd (and forward AD): the result does not depend on it.
    NoGradGuard guard;
    shift = ember::amax(x, dim_in, true);
    // An infinite maximum shifts by 0: -inf rows stay -inf and +inf ones inf (not NaN).
    shift = detach_copy(ember::where(ember::isinf(shift), wrap_number(Scalar(0.0)), shift));
  }
  Tensor total = ember::log(ember::sum(ember::exp(ember::sub(x, shift)), dim, keepdim, std::nullopt));
  return ember::add(total, keepdim ? shift : ember::reshape(shift, total.sizes()));
}

Tensor nansum(const Tensor& self, const std::optional<IntList>& dim, bool keepdim, std::optional<ScalarType> dtype) {
  const Tensor x = is_floating(self.dtype()) ? ember::where(ember::isnan(self), wrap_number(Scalar(0.0)), self) : self;
  return ember::sum(x, dim, keepdim, dtype);
}

Tensor nanmean(const Tensor& self, const std::optional<IntList>& dim, bool keepdim, std::optional<ScalarType> dtype) {
  EMBER_CHECK(is_floating(self.dtype()), Runtime, "nanmean(): expected input to have floating point or complex dtype but got ",
              dtype_title(self.dtype()));
  const Tensor count = ember::sum(ember::logical_not(ember::isnan(self)), dim, keepdim, std::nullopt);
  return ember::true_divide(ember::nansum(self, dim, keepdim, dtype), count);
}

Tensor count_nonzero_dim_IntList(const Tensor& self, const IntList& dim) {
  return ember::sum(ember::ne(self, wrap_number(Scalar(int64_t(0)))), all_if_none_given(dim), false, std::nullopt);
}

Tensor count_nonzero(const Tensor& self, std::optional<int64_t> dim) {
  return ember::count_nonzero_dim_IntList(self, dim ? IntList{*dim} : IntList{});
}

std::tuple<Tensor, Tensor> var_mean(const Tensor& self, const std::optional<IntList>& dim, std::optional<bool> unbiased,
                                    bool keepdim, const std::optional<Scalar>& correction) {
  return {ember::var(self, dim, unbiased, keepdim, correction), ember::mean(self, dim, keepdim, std::nullopt)};
}

std::tuple<Tensor, Tensor> std_mean(const Tensor& self, const std::optional<IntList>& dim, std::optional<bool> unbiased,
                                    bool keepdim, const std::optional<Scalar>& correction) {
  return {ember::std(self, dim, unbiased, keepdim, correction), ember::mean(self, dim, keepdim, std::nullopt)};
}

std::tuple<Tensor, Tensor> aminmax(const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  if (dim) {
    EMBER_CHECK(self.dim() == 0 || self.sizes()[wrap_dim(*dim, self.dim(), "aminmax")] != 0, Index,
                "aminmax: Expected reduction dim ", *dim, " to have non-zero size.");
    return {ember::amin(self, IntList{*dim}, keepdim), ember::amax(self, IntList{*dim}, keepdim)};
  }
  EMBER_CHECK(self.numel() != 0, Runtime,
              "aminmax(): cannot compute aminmax over an empty dimension as the operation has no identity.");
  return {ember::amin(self, IntList{}, keepdim), ember::amax(self, IntList{}, keepdim)};
}

}  // namespace ember::native
