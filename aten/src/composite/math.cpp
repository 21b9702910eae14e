// Math ops of issue 11 made of other ops: arctan2 (an alias), logit's clamp,
// nan_to_num's replacements as wheres (so the gradient passes where kept), isclose,
// clamp with tensor bounds and its aliases (clip, clamp_min, clamp_max).
#include <limits>
#include <optional>

#include "ember/dtype.h"
#include "ember/ops/abs.h"
#include "ember/ops/add.h"
#include "ember/ops/arctan2.h"
#include "ember/ops/atan2.h"
#include "ember/ops/clamp.h"
#include "ember/ops/clamp_max.h"
#include "ember/ops/clamp_min.h"
#include "ember/ops/clip.h"
#include "ember/ops/clone.h"
#include "ember/ops/eq.h"
#include "ember/ops/gt.h"
#include "ember/ops/isclose.h"
#include "ember/ops/isinf.h"
#include "ember/ops/isnan.h"
#include "ember/ops/le.h"
#include "ember/ops/log.h"
#include "ember/ops/logical_and.h"
#include "ember/ops/logical_not.h"
#include "ember/ops/logical_or.h"
#include "ember/ops/logit.h"
#include "ember/ops/lt.h"
#include "ember/ops/mul.h"
#include "ember/ops/nan_to_num.h"
#include "ember/ops/sub.h"
#include "ember/ops/to.h"
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

Tensor isclose(const Tensor& self, const Tensor& other, double rtol, double atol, bool equal_nan) {
  EMBER_CHECK(self.dtype() == other.dtype(), Runtime, "isclose: ", dtype_title(self.dtype()), " did not match ",
              dtype_title(other.dtype()));
  EMBER_CHECK(rtol >= 0, Runtime, "isclose: rtol must be greater than or equal to zero, but got ", rtol);
  EMBER_CHECK(atol >= 0, Runtime, "isclose: atol must be greater than or equal to zero, but got ", atol);
  Tensor close = ember::eq(self, other);  // equal infinities are close, whatever the tolerances
  if (equal_nan && is_floating(self.dtype()))
    close = ember::logical_or(close, ember::logical_and(ember::isnan(self), ember::isnan(other)));
  if (rtol == 0 && atol == 0) return close;
  // bool has no subtraction: PyTorch measures it in the default float dtype.
  const bool as_float = self.dtype() == ScalarType::Bool;
  const Tensor a = as_float ? ember::to_dtype(self, default_dtype()) : self;
  const Tensor b = as_float ? ember::to_dtype(other, default_dtype()) : other;
  const Tensor allowed = ember::add(ember::abs(ember::mul(b, wrap_number(Scalar(rtol)))), wrap_number(Scalar(atol)));
  const Tensor actual = ember::abs(ember::sub(a, b));
  return ember::logical_or(close, ember::logical_and(ember::logical_not(ember::isinf(actual)), ember::le(actual, allowed)));
}

// clamp with tensor bounds as two wheres, so that a tie passes the gradient to self (as
// PyTorch's clamp_backward) and a NaN bound, which no comparison selects, is chosen explicitly.
Tensor clamp_Tensor(const Tensor& self, const Tensor& min, const Tensor& max) {
  EMBER_CHECK(min.defined() || max.defined(), Runtime, "clamp: At least one of 'min' or 'max' must not be None");
  Tensor out = self;
  if (min.defined()) out = ember::where(ember::logical_or(ember::lt(out, min), ember::isnan(min)), min, out);
  if (max.defined()) out = ember::where(ember::logical_or(ember::gt(out, max), ember::isnan(max)), max, out);
  return out;
}

Tensor clamp_min(const Tensor& self, const Scalar& min) { return ember::clamp(self, min, std::nullopt); }
Tensor clamp_min_Tensor(const Tensor& self, const Tensor& min) { return ember::clamp_Tensor(self, min, Tensor()); }
Tensor clamp_max(const Tensor& self, const Scalar& max) { return ember::clamp(self, std::nullopt, max); }
Tensor clamp_max_Tensor(const Tensor& self, const Tensor& max) { return ember::clamp_Tensor(self, Tensor(), max); }
Tensor clip(const Tensor& self, const std::optional<Scalar>& min, const std::optional<Scalar>& max) {
  return ember::clamp(self, min, max);
}
Tensor clip_Tensor(const Tensor& self, const Tensor& min, const Tensor& max) { return ember::clamp_Tensor(self, min, max); }

}  // namespace ember::native
