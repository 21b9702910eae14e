// Scans and reorderings built from other ember ops (issue 11): flip reverses
// dims by indexing with a descending arange, so autograd records index;
// cumprod's gradient, zero-safe, so its double backward comes for free.
#include <vector>

#include "ember/errors.h"
#include "ember/ops/_cumprod_backward.h"
#include "ember/ops/_cumprod_jvp.h"
#include "ember/ops/add.h"
#include "ember/ops/all.h"
#include "ember/ops/arange.h"
#include "ember/ops/cat.h"
#include "ember/ops/clone.h"
#include "ember/ops/cumsum.h"
#include "ember/ops/div.h"
#include "ember/ops/flip.h"
#include "ember/ops/index.h"
#include "ember/ops/mul.h"
#include "ember/ops/narrow.h"
#include "ember/ops/ne.h"
#include "ember/ops/ones.h"
#include "ember/ops/zeros.h"
#include "ember/tensor.h"

namespace ember::native {

Tensor flip(const Tensor& self, const IntList& dims) {
  const int64_t ndim = self.dim();
  std::vector<bool> seen(std::max<int64_t>(ndim, 1), false);
  for (int64_t d : dims) {
    const int64_t w = wrap_dim(d, ndim, "flip");
    EMBER_CHECK(!seen[w], Runtime, "flip: dim ", w, " appears multiple times in the list of dims");
    seen[w] = true;
  }
  if (ndim == 0) return ember::clone(self);
  Tensor result = self;
  bool copied = false;
  for (int64_t d = 0; d < ndim; ++d) {
    if (!seen[d]) continue;
    const int64_t n = self.sizes()[d];
    TensorList indices(d + 1);  // undefined entries keep their dims whole
    indices[d] = ember::arange(Scalar(n - 1), Scalar(int64_t(-1)), Scalar(int64_t(-1)), ScalarType::Int64, self.device());
    result = ember::index(result, indices);
    copied = true;
  }
  return copied ? result : ember::clone(self);
}

namespace {
Tensor reverse_cumsum(const Tensor& t, int64_t dim) {
  return ember::flip(ember::cumsum(ember::flip(t, IntList{dim}), dim), IntList{dim});
}
}  // namespace

// d result_j / d self_i = prod_{k <= j, k != i} self_k for j >= i. Without zeros that is
// reverse_cumsum(grad * result) / self; with zeros, E_i * S_i where E is the exclusive
// cumprod and S_i = grad_i + self_{i+1} S_{i+1} (no division), computed step by step.
Tensor _cumprod_backward(const Tensor& grad, const Tensor& self, int64_t dim, const Tensor& result) {
  if (self.numel() == 0) return ember::zeros(self.sizes(), grad.dtype(), grad.device());
  if (self.dim() == 0) return grad;
  const int64_t d = wrap_dim(dim, self.dim(), "cumprod");
  const Tensor zero = wrap_number(Scalar(int64_t(0)));
  if (ember::all(ember::ne(self, zero)).item().to<bool>())
    return ember::div(reverse_cumsum(ember::mul(grad, result), d), self);
  const int64_t n = self.sizes()[d];
  DimVector one_size = self.sizes();
  one_size[d] = 1;
  Tensor exclusive = ember::cat(TensorList{ember::ones(one_size, result.dtype(), result.device()),
                                           ember::narrow(result, d, 0, n - 1)}, d);
  TensorList suffix(n);
  suffix[n - 1] = ember::narrow(grad, d, n - 1, 1);
  for (int64_t i = n - 2; i >= 0; --i)
    suffix[i] = ember::add(ember::narrow(grad, d, i, 1), ember::mul(ember::narrow(self, d, i + 1, 1), suffix[i + 1]));
  return ember::mul(exclusive, ember::cat(suffix, d));
}

// The tangent of result_j is sum_{i <= j} tangent_i prod_{k <= j, k != i} self_k: without
// zeros result * cumsum(tangent / self); with zeros F_j = F_{j-1} self_j + tangent_j result_{j-1}.
Tensor _cumprod_jvp(const Tensor& tangent, const Tensor& self, int64_t dim, const Tensor& result) {
  if (self.numel() == 0 || self.dim() == 0) return ember::mul(tangent, ember::ones(self.sizes(), result.dtype(), result.device()));
  const int64_t d = wrap_dim(dim, self.dim(), "cumprod");
  const Tensor zero = wrap_number(Scalar(int64_t(0)));
  if (ember::all(ember::ne(self, zero)).item().to<bool>())
    return ember::mul(result, ember::cumsum(ember::div(tangent, self), d));
  const int64_t n = self.sizes()[d];
  TensorList steps(n);
  steps[0] = ember::narrow(tangent, d, 0, 1);
  for (int64_t j = 1; j < n; ++j)
    steps[j] = ember::add(ember::mul(steps[j - 1], ember::narrow(self, d, j, 1)),
                          ember::mul(ember::narrow(tangent, d, j, 1), ember::narrow(result, d, j - 1, 1)));
  return ember::cat(steps, d);
}

}  // namespace ember::native
