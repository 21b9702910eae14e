// argsort and msort (sort's indices, sort's values along dim 0) and bucketize (searchsorted
// with the arguments swapped, boundaries restricted to 1-D as PyTorch's).
#include <tuple>

#include "ember/errors.h"
#include "ember/ops/argsort.h"
#include "ember/ops/bucketize.h"
#include "ember/ops/msort.h"
#include "ember/ops/searchsorted.h"
#include "ember/ops/sort.h"
#include "ember/tensor.h"

namespace ember::native {

Tensor argsort(const Tensor& self, int64_t dim, bool descending, bool stable) {
  return std::get<1>(ember::sort(self, dim, descending, stable));
}

Tensor msort(const Tensor& self) { return std::get<0>(ember::sort(self, 0, false, std::nullopt)); }

Tensor bucketize(const Tensor& self, const Tensor& boundaries, bool out_int32, bool right) {
  EMBER_CHECK(boundaries.dim() == 1, Runtime, "bucketize(): boundaries tensor must be 1 dimension, but got dim(",
              boundaries.dim(), ")");
  return ember::searchsorted(boundaries, self, out_int32, right, std::nullopt, Tensor());
}

}  // namespace ember::native
