// Activations that pick a kernel or reshape a weight before pointwise ops:
// gelu's two forms, softshrink's bound check, prelu's per-channel weight,
// rrelu's random slopes, glu's halves.
#include <string>

#include "ember/errors.h"
#include "ember/ops/_gelu_erf.h"
#include "ember/ops/_gelu_tanh.h"
#include "ember/ops/_softshrink.h"
#include "ember/ops/add.h"
#include "ember/ops/gelu.h"
#include "ember/ops/glu.h"
#include "ember/ops/gt.h"
#include "ember/ops/leaky_relu.h"
#include "ember/ops/lt.h"
#include "ember/ops/mul.h"
#include "ember/ops/narrow.h"
#include "ember/ops/prelu.h"
#include "ember/ops/rand.h"
#include "ember/ops/reshape.h"
#include "ember/ops/rrelu.h"
#include "ember/ops/sigmoid.h"
#include "ember/ops/softshrink.h"
#include "ember/ops/where.h"
#include "ember/tensor.h"

namespace ember::native {

Tensor gelu(const Tensor& self, const std::string& approximate) {
  if (approximate == "none") return ember::_gelu_erf(self);
  if (approximate == "tanh") return ember::_gelu_tanh(self);
  EMBER_FAIL(Runtime, "approximate argument must be either none or tanh.");
}

Tensor softshrink(const Tensor& self, const Scalar& lambd) {
  EMBER_CHECK(lambd.to_double() >= 0, Runtime, "softshrink: lambda must be greater or equal to 0, but found to be ",
              lambd.to_double(), ".");
  return ember::_softshrink(self, lambd);
}

Tensor prelu(const Tensor& self, const Tensor& weight) {
  EMBER_CHECK(weight.dim() <= 1, Runtime, "prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = ",
              weight.dim());
  EMBER_CHECK(self.dtype() == weight.dtype(), Runtime, "prelu: Type promoting not supported. Got ",
              dtype_name(self.dtype()), " and ", dtype_name(weight.dtype()));
  const int64_t n = weight.numel();
  if (n != 1) {
    EMBER_CHECK(self.dim() > 0, Runtime, "prelu: Not allow zero-dim input tensor.");
    const int64_t channels = self.dim() >= 2 ? self.size(1) : 1;
    EMBER_CHECK(n == channels, Runtime, "prelu: Mismatch of parameter numbers and input channel size. Found parameter "
                "numbers = ", n, " and channel size = ", channels, ".");
  }
  // One weight per channel (dim 1): shaped [C, 1, ..., 1] so it broadcasts over the dims after it.
  DimVector shape;
  if (n != 1 && self.dim() >= 2) {
    shape.push_back(n);
    for (int64_t d = 2; d < self.dim(); ++d) shape.push_back(1);
  }
  const Tensor w = ember::reshape(weight, shape);
  return ember::where(ember::gt(self, wrap_number(Scalar(int64_t(0)))), self, ember::mul(w, self));
}

Tensor rrelu(const Tensor& self, const Scalar& lower, const Scalar& upper, bool training, Generator* generator) {
  const double lo = lower.to_double(), hi = upper.to_double();
  EMBER_CHECK(lo <= hi, Runtime, "rrelu: Lower bound should be less than or equal to the upper bound");
  if (!training) return ember::leaky_relu(self, Scalar((lo + hi) / 2));
  // A slope uniform in [lower, upper) for each element; positive elements keep slope 1.
  Tensor noise = ember::rand(self.sizes(), generator, self.dtype(), self.device());
  noise = ember::mul(noise, wrap_number(Scalar(hi - lo)));
  noise = ember::add(noise, wrap_number(Scalar(lo)));
  return ember::where(ember::lt(self, wrap_number(Scalar(int64_t(0)))), ember::mul(self, noise), self);
}

Tensor glu(const Tensor& self, int64_t dim) {
  EMBER_CHECK(self.dim() > 0, Runtime, "glu does not support scalars because halving size must be even");
  const int64_t d = wrap_dim(dim, self.dim(), "glu");
  const int64_t n = self.size(d);
  EMBER_CHECK(n % 2 == 0, Runtime, "Halving dimension must be even, but dimension ", d, " is size ", n);
  return ember::mul(ember::narrow(self, d, 0, n / 2), ember::sigmoid(ember::narrow(self, d, n / 2, n / 2)));
}

}  // namespace ember::native
