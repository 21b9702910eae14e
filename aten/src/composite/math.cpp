// Math ops of issue 11 made of other ops: arctan2 (an alias), logit's clamp,
// nan_to_num's replacements as wheres (so the gradient passes where kept).
#include <limits>
#include <optional>

#include "ember/dtype.h"
#include "ember/ops/arctan2.h"
#include "ember/ops/atan2.h"
#include "ember/ops/clamp.h"
#include "ember/ops/clone.h"
#include "ember/ops/eq.h"
#include "ember/ops/isnan.h"
#include "ember/ops/log.h"
#include "ember/ops/logit.h"
#include "ember/ops/nan_to_num.h"
#include "ember/ops/sub.h"
#include "ember/ops/true_divide.h"
#include "ember/ops/where.h"
#include "ember/tensor.h"

namespace ember::native {

Tensor arctan2(const Tensor& self, const Tensor& other) { return ember::atan2(self, other); }

Tensor logit(const Tensor& self, std::optional<double> eps) {
  Tensor p = eps ? ember::clamp(self, Scalar(*eps), Scalar(1.0 - *eps)) : self;
  return ember::log(ember::true_divide(p, ember::sub(wrap_number(Scalar(int64_t(1))), p)));
}

namespace {
// The largest finite value of a floating dtype (nan_to_num's default for +inf).
double largest_finite(ScalarType dtype) {
  switch (dtype) {
    case ScalarType::Float16: return 65504.0;
    case ScalarType::BFloat16: return 3.3895313892515355e38;
    case ScalarType::Float32: return double(std::numeric_limits<float>::max());
    default: return std::numeric_limits<double>::max();
  }
}
}  // namespace

Tensor nan_to_num(const Tensor& self, std::optional<double> nan, std::optional<double> posinf,
                  std::optional<double> neginf) {
  if (!is_floating(self.dtype())) return ember::clone(self);
  const double big = largest_finite(self.dtype());
  const double inf = std::numeric_limits<double>::infinity();
  Tensor out = ember::where(ember::isnan(self), wrap_number(Scalar(nan.value_or(0.0))), self);
  out = ember::where(ember::eq(self, wrap_number(Scalar(inf))), wrap_number(Scalar(posinf.value_or(big))), out);
  return ember::where(ember::eq(self, wrap_number(Scalar(-inf))), wrap_number(Scalar(neginf.value_or(-big))), out);
}

}  // namespace ember::native
