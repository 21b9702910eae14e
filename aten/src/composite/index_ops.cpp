// index_select and masked_fill, written with index and where, so autograd
// records those (and their derivatives serve double backward).
#include "ember/errors.h"
#include "ember/ops/index.h"
#include "ember/ops/index_select.h"
#include "ember/ops/masked_fill.h"
#include "ember/ops/reshape.h"
#include "ember/ops/to.h"
#include "ember/ops/where.h"
#include "ember/tensor.h"

namespace ember::native {

Tensor index_select(const Tensor& self, int64_t dim, const Tensor& index) {
  EMBER_CHECK(index.dim() <= 1, Index, "index_select(): Index is supposed to be a vector");
  EMBER_CHECK(index.dtype() == ScalarType::Int64 || index.dtype() == ScalarType::Int32, Runtime,
              "index_select(): Expected dtype int32 or int64 for index");
  const int64_t d = wrap_dim(dim, std::max<int64_t>(self.dim(), 1), "index_select");
  const Tensor flat = ember::reshape(index, {-1});
  if (self.dim() == 0) {
    EMBER_CHECK(index.numel() == 1, Runtime, "index_select(): Index to scalar can have only 1 value, got ",
                index.numel(), " value(s)");
    return ember::reshape(ember::index(ember::reshape(self, {1}), {flat}), {});
  }
  TensorList indices((size_t)d);  // undefined entries: the leading dims are kept whole
  indices.push_back(flat);
  return ember::index(self, indices);
}

namespace {
void check_mask(const Tensor& mask) {
  EMBER_CHECK(mask.dtype() == ScalarType::Bool, Runtime,
              "masked_fill_ only supports boolean masks, but got mask with dtype ", dtype_name(mask.dtype()));
}
}  // namespace

Tensor masked_fill_Scalar(const Tensor& self, const Tensor& mask, const Scalar& value) {
  check_mask(mask);
  return ember::where(mask, scalar_tensor(value, self.dtype(), self.device()), self);
}

Tensor masked_fill_Tensor(const Tensor& self, const Tensor& mask, const Tensor& value) {
  check_mask(mask);
  EMBER_CHECK(value.dim() == 0, Runtime, "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with ",
              value.dim(), " dimension(s).");
  return ember::where(mask, ember::to_dtype(value, self.dtype(), false, false), self);
}

}  // namespace ember::native
