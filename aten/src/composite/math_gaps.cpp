// Math ops of session 13 made of other ops: isreal, sgn, positive, heaviside's dtype check,
// float_power (pow in float64) and rsub.
#include <optional>

#include "ember/dtype.h"
#include "ember/errors.h"
#include "ember/ops/_heaviside.h"
#include "ember/ops/float_power.h"
#include "ember/ops/float_power_.h"
#include "ember/ops/heaviside.h"
#include "ember/ops/isreal.h"
#include "ember/ops/ones.h"
#include "ember/ops/positive.h"
#include "ember/ops/pow.h"
#include "ember/ops/rsub.h"
#include "ember/ops/sgn.h"
#include "ember/ops/sign.h"
#include "ember/ops/sub.h"
#include "ember/ops/to.h"
#include "ember/tensor.h"

namespace ember::native {

// ember has no complex dtypes: every element of a tensor is real.
Tensor isreal(const Tensor& self) { return ember::ones(self.sizes(), ScalarType::Bool, self.device(), false); }

Tensor sgn(const Tensor& self) { return ember::sign(self); }

Tensor positive(const Tensor& self) {
  EMBER_CHECK(self.dtype() != ScalarType::Bool, Runtime, "The `+` operator, on a bool tensor is not supported.");
  return self;
}

Tensor heaviside(const Tensor& self, const Tensor& values) {
  EMBER_CHECK(self.dtype() == values.dtype(), Runtime,
              "heaviside is not yet implemented for tensors with different dtypes.");
  return ember::_heaviside(self, values);
}

// PyTorch computes float_power in float64 whatever the inputs' dtypes.
Tensor float_power_Tensor_Tensor(const Tensor& self, const Tensor& exponent) {
  return ember::pow(ember::to_dtype(self, ScalarType::Float64), ember::to_dtype(exponent, ScalarType::Float64));
}
Tensor float_power_Tensor_Scalar(const Tensor& self, const Scalar& exponent) {
  return ember::pow_Tensor_Scalar(ember::to_dtype(self, ScalarType::Float64), Scalar(exponent.to_double()));
}
Tensor float_power_Scalar(const Scalar& self, const Tensor& exponent) {
  return ember::pow_Scalar(Scalar(self.to_double()), ember::to_dtype(exponent, ScalarType::Float64));
}

namespace {
void check_float_power_base(const Tensor& self) {
  EMBER_CHECK(self.dtype() == ScalarType::Float64, Runtime, "the base given to float_power_ has dtype ",
              dtype_title(self.dtype()), " but the operation's result requires dtype Double");
}
}  // namespace

Tensor float_power_(const Tensor& self, const Tensor& exponent) {
  check_float_power_base(self);
  return ember::pow_(self, ember::to_dtype(exponent, ScalarType::Float64));
}
Tensor float_power__Scalar(const Tensor& self, const Scalar& exponent) {
  check_float_power_base(self);
  return ember::pow_Tensor_Scalar_(self, Scalar(exponent.to_double()));
}

Tensor rsub(const Tensor& self, const Tensor& other, const Scalar& alpha) { return ember::sub(other, self, alpha); }

}  // namespace ember::native
