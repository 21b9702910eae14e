// torch functions of NumPy's family made of other ops (PyTorch's CompositeImplicitAutograd ones): inner,
// vdot, ravel, diagflat, column_stack, vander, cov, corrcoef, renorm. Autograd records what they call.
#include <optional>

#include "ember/dtype.h"
#include "ember/errors.h"
#include "ember/ops/add.h"
#include "ember/ops/amin.h"
#include "ember/ops/cat.h"
#include "ember/ops/clamp.h"
#include "ember/ops/column_stack.h"
#include "ember/ops/corrcoef.h"
#include "ember/ops/cov.h"
#include "ember/ops/cumprod.h"
#include "ember/ops/diag.h"
#include "ember/ops/diagflat.h"
#include "ember/ops/diagonal.h"
#include "ember/ops/div.h"
#include "ember/ops/dot.h"
#include "ember/ops/expand.h"
#include "ember/ops/flip.h"
#include "ember/ops/ge.h"
#include "ember/ops/gt.h"
#include "ember/ops/hstack.h"
#include "ember/ops/inner.h"
#include "ember/ops/le.h"
#include "ember/ops/linalg_vector_norm.h"
#include "ember/ops/mm.h"
#include "ember/ops/mul.h"
#include "ember/ops/ne.h"
#include "ember/ops/ones.h"
#include "ember/ops/ravel.h"
#include "ember/ops/renorm.h"
#include "ember/ops/reshape.h"
#include "ember/ops/sqrt.h"
#include "ember/ops/squeeze.h"
#include "ember/ops/sub.h"
#include "ember/ops/sum.h"
#include "ember/ops/t.h"
#include "ember/ops/tensordot.h"
#include "ember/ops/unsqueeze.h"
#include "ember/ops/vander.h"
#include "ember/ops/vdot.h"
#include "ember/ops/where.h"
#include "ember/tensor.h"

namespace ember::native {

Tensor inner(const Tensor& self, const Tensor& other) {
  if (self.dim() == 0 || other.dim() == 0) return ember::mul(self, other);
  EMBER_CHECK(self.size(self.dim() - 1) == other.size(other.dim() - 1), Runtime,
              "inner() the last dimension must match on both input tensors but got shapes ", self.sizes(), " and ",
              other.sizes());
  return ember::tensordot(self, other, IntList{-1}, IntList{-1});
}

// Real tensors only: conjugating the first vector is the identity.
Tensor vdot(const Tensor& self, const Tensor& other) {
  EMBER_CHECK(self.dim() == 1 && other.dim() == 1, Runtime, "1D tensors expected, but got ", self.dim(), "D and ",
              other.dim(), "D tensors");
  return ember::dot(self, other);  // whose dtype check and message PyTorch's vdot shares
}

Tensor ravel(const Tensor& self) { return ember::reshape(self, IntList{-1}); }

Tensor diagflat(const Tensor& self, int64_t offset) { return ember::diag(ember::reshape(self, IntList{-1}), offset); }

Tensor column_stack(const TensorList& tensors) {
  EMBER_CHECK(!tensors.empty(), Runtime, "column_stack expects a non-empty TensorList");
  TensorList columns;
  for (const Tensor& t : tensors) columns.push_back(t.dim() <= 1 ? ember::reshape(t, IntList{t.numel(), 1}) : t);
  return ember::hstack(columns);
}

Tensor vander(const Tensor& x, std::optional<int64_t> N, bool increasing) {
  EMBER_CHECK(x.dim() == 1, Runtime, "x must be a one-dimensional tensor.");
  const int64_t n = N.value_or(x.size(0));
  EMBER_CHECK(n >= 0, Runtime, "N must be non-negative.");
  const ScalarType dtype = promote_types(x.dtype(), ScalarType::Int64);
  Tensor result = ember::ones(IntList{x.size(0), n > 1 ? 1 : n}, dtype, x.device());
  if (n > 1) {  // columns x^1, x^2, ...: the running product of copies of x
    const Tensor powers = ember::cumprod(ember::expand(ember::unsqueeze(x, 1), IntList{x.size(0), n - 1}), 1, dtype);
    result = ember::cat(TensorList{result, powers}, 1);
  }
  return increasing ? result : ember::flip(result, IntList{1});
}

namespace {
bool holds(const Tensor& t) { return t.item().to<bool>(); }

void check_weights(const Tensor& w, const char* name, bool integral, int64_t observations) {
  EMBER_CHECK(w.dim() <= 1, Runtime, "cov(): expected ", name, " to have one or fewer dimensions but got ", name,
              " with ", w.dim(), " dimensions");
  if (integral) {
    EMBER_CHECK(is_integral(w.dtype(), false), Runtime, "cov(): expected fweights to have integral dtype but got "
                "fweights with ", dtype_title(w.dtype()), " dtype");
  } else {
    EMBER_CHECK(is_floating(w.dtype()), Runtime, "cov(): expected aweights to have floating point dtype but got "
                "aweights with ", dtype_title(w.dtype()), " dtype");
  }
  EMBER_CHECK(w.numel() == observations, Runtime, "cov(): expected ", name, " to have the same numel as there are "
              "observations in the input but got ", w.numel(), " != ", observations);
  EMBER_CHECK(observations == 0 || holds(ember::ge(ember::amin(w), wrap_number(Scalar(int64_t(0))))), Runtime,
              "cov(): ", name, " cannot be negative");
}
}  // namespace

// PyTorch's algorithm: the (weighted) mean of each row's observations, then the centred product.
Tensor cov(const Tensor& self, int64_t correction, const Tensor& fweights, const Tensor& aweights) {
  EMBER_CHECK(self.dim() <= 2, Runtime, "cov(): expected input to have two or fewer dimensions but got an input with ",
              self.dim(), " dimensions");
  EMBER_CHECK(self.dtype() != ScalarType::Bool, Runtime, "cov(): bool dtype is not supported for input");
  Tensor in = self.dim() < 2 ? ember::reshape(self, IntList{1, -1}) : self;
  const int64_t observations = in.size(1);
  Tensor w;
  if (fweights.defined()) {
    check_weights(fweights, "fweights", true, observations);
    w = fweights;
  }
  if (aweights.defined()) {
    check_weights(aweights, "aweights", false, observations);
    w = w.defined() ? ember::mul(w, aweights) : aweights;
  }
  const Tensor w_sum =
      w.defined() ? ember::sum(w) : scalar_tensor(Scalar(observations), ScalarType::Int64, in.device());
  EMBER_CHECK(!w.defined() || holds(ember::ne(w_sum, wrap_number(Scalar(int64_t(0))))), Runtime,
              "cov(): weights sum to zero, can't be normalized");
  const Tensor avg = ember::div(ember::sum(w.defined() ? ember::mul(in, w) : in, IntList{1}), w_sum);
  const Tensor correction_t = wrap_number(Scalar(correction));
  // With observation weights the correction scales by sum(w * aweights) / sum(w), as NumPy's and PyTorch's.
  Tensor norm = ember::sub(w_sum, correction_t);
  if (w.defined() && aweights.defined() && correction != 0) {
    norm = ember::sub(w_sum, ember::div(ember::mul(correction_t, ember::sum(ember::mul(w, aweights))), w_sum));
  }
  if (holds(ember::le(norm, wrap_number(Scalar(int64_t(0)))))) {
    warn("cov(): degrees of freedom is <= 0. Correction should be strictly less than the number of observations.");
    norm = scalar_tensor(Scalar(int64_t(0)), norm.dtype(), norm.device());
  }
  in = ember::sub(in, ember::unsqueeze(avg, 1));
  const Tensor c = ember::mm(in, ember::t(w.defined() ? ember::mul(in, w) : in));
  return ember::squeeze(ember::div(c, norm));
}

Tensor corrcoef(const Tensor& self) {
  EMBER_CHECK(self.dim() <= 2, Runtime, "corrcoef(): expected input to have two or fewer dimensions but got an input "
              "with ", self.dim(), " dimensions");
  Tensor c = ember::cov(self);
  if (c.dim() == 0) return ember::div(c, c);
  const Tensor stddev = ember::sqrt(ember::diagonal(c));
  c = ember::div(ember::div(c, ember::reshape(stddev, IntList{-1, 1})), ember::reshape(stddev, IntList{1, -1}));
  return ember::clamp(c, Scalar(int64_t(-1)), Scalar(int64_t(1)));
}

// Each slice along dim whose p-norm (over the other dims) exceeds maxnorm, scaled to maxnorm, as PyTorch
// (which divides by norm + 1e-7).
Tensor renorm(const Tensor& self, const Scalar& p, int64_t dim, const Scalar& maxnorm) {
  EMBER_CHECK(p.to_double() > 0.0, Runtime, "renorm: non-positive-norm not supported");
  EMBER_CHECK(maxnorm.to_double() >= 0.0, Runtime, "renorm: expected maxnorm to be >= 0 but got ",
              maxnorm.to_double());
  EMBER_CHECK(self.dim() > 1, Runtime, "renorm: input needs at least 2 dimensions, got ", self.dim(), " dimensions");
  dim = wrap_dim(dim, self.dim(), "renorm");
  IntList others;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (d != dim) others.push_back(d);
  }
  const Tensor norm = ember::linalg_vector_norm(self, p, others, true);
  const Tensor limit = wrap_number(maxnorm);
  const Tensor factor = ember::where(ember::gt(norm, limit),
                                     ember::div(limit, ember::add(norm, wrap_number(Scalar(1e-7)))),
                                     wrap_number(Scalar(1.0)));
  return ember::mul(self, factor);
}

}  // namespace ember::native
