// Scans and reorderings built from other ember ops (issue 11): flip reverses
// dims by indexing with a descending arange, so autograd records index.
#include <vector>

#include "ember/errors.h"
#include "ember/ops/arange.h"
#include "ember/ops/clone.h"
#include "ember/ops/flip.h"
#include "ember/ops/index.h"
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

}  // namespace ember::native
