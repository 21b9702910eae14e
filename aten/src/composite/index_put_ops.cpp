// index_add, index_copy, index_fill, put, masked_scatter (written as index_put_ into a
// fresh copy) and take, take_along_dim, masked_select, argwhere, where(cond) (as index,
// gather, nonzero): autograd records those ops, so gradients of every order come for free.
// Index ranges are checked here first, to raise PyTorch's error class and message.
#include <optional>
#include <string>
#include <vector>

#include "ember/dispatch.h"
#include "ember/errors.h"
#include "ember/ops/argwhere.h"
#include "ember/ops/broadcast_to.h"
#include "ember/ops/clone.h"
#include "ember/ops/contiguous.h"
#include "ember/ops/gather.h"
#include "ember/ops/index.h"
#include "ember/ops/index_add.h"
#include "ember/ops/index_copy.h"
#include "ember/ops/index_fill.h"
#include "ember/ops/index_put_.h"
#include "ember/ops/masked_scatter.h"
#include "ember/ops/masked_select.h"
#include "ember/ops/mul.h"
#include "ember/ops/narrow.h"
#include "ember/ops/nonzero.h"
#include "ember/ops/put.h"
#include "ember/ops/reshape.h"
#include "ember/ops/take.h"
#include "ember/ops/take_along_dim.h"
#include "ember/ops/to.h"
#include "ember/ops/unbind.h"
#include "ember/ops/where.h"
#include "ember/tensor.h"

namespace ember::native {
namespace {

// The first entry of an integer `index` outside [lo, hi), read on the host.
std::optional<int64_t> first_outside(const Tensor& index, int64_t lo, int64_t hi) {
  const Tensor host = copy_to(index, Device(), ScalarType::Int64);
  const int64_t* p = host.data<int64_t>();
  for (int64_t k = 0; k < host.numel(); ++k)
    if (p[k] < lo || p[k] >= hi) return p[k];
  return std::nullopt;
}

// The distinct positions `index` names in a dim of `size` (negatives wrapped), ascending: each
// filled once, so the gradient of index_fill's value counts each position once, as PyTorch's.
Tensor distinct_positions(const Tensor& index, int64_t size) {
  const Tensor host = copy_to(index, Device(), ScalarType::Int64);
  std::vector<bool> seen((size_t)size, false);
  const int64_t* p = host.data<int64_t>();
  for (int64_t k = 0; k < host.numel(); ++k) seen[(size_t)(p[k] < 0 ? p[k] + size : p[k])] = true;
  std::vector<int64_t> positions;
  for (int64_t k = 0; k < size; ++k)
    if (seen[(size_t)k]) positions.push_back(k);
  Tensor out = empty_tensor({(int64_t)positions.size()}, ScalarType::Int64);
  std::copy(positions.begin(), positions.end(), out.data<int64_t>());
  return index.device().is_cpu() ? out : copy_to(out, index.device(), ScalarType::Int64);
}

// A copy of `t` that index_put_ may write (contiguous, never sharing memory with `t`).
Tensor writable_copy(const Tensor& t) { return t.is_contiguous() ? ember::clone(t) : ember::contiguous(t); }

Tensor at_least_1d(const Tensor& t) { return t.dim() == 0 ? ember::reshape(t, {1}) : t; }

bool is_index_dtype(ScalarType t) { return t == ScalarType::Int64 || t == ScalarType::Int32; }

// The index list selecting `index` along `dim` (the dims before it kept whole).
TensorList along(int64_t dim, const Tensor& index) {
  TensorList indices((size_t)dim);
  indices.push_back(ember::reshape(index, {-1}));
  return indices;
}

// index_add/index_copy's checks: a vector index of int32/int64, a source of self's dtype whose
// slices match self's apart from `dim`, where it has one slice per index.
int64_t check_index_source(const char* op, const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source) {
  const int64_t d = wrap_dim(dim, std::max<int64_t>(self.dim(), 1), op);
  EMBER_CHECK(is_index_dtype(index.dtype()), Runtime, op, "(): Expected dtype int32/int64 for index but got: ",
              dtype_title(index.dtype()));
  EMBER_CHECK(index.dim() <= 1, Index, op, "(): Index is supposed to be a vector");
  EMBER_CHECK(source.dtype() == self.dtype(), Runtime, op, "(): self (", dtype_title(self.dtype()), ") and source (",
              dtype_title(source.dtype()), ") must have the same scalar type");
  const Tensor s = at_least_1d(self), src = at_least_1d(source);
  bool same = s.dim() == src.dim();
  for (int64_t k = 0; same && k < s.dim(); ++k) same = k == d || s.size(k) == src.size(k);
  EMBER_CHECK(same, Runtime, op, "(): source ", shape_str(source.sizes()), " must have the shape of self ",
              shape_str(self.sizes()), " apart from dimension ", d);
  EMBER_CHECK(index.numel() == src.size(d), Runtime, op, "(): Number of indices (", index.numel(),
              ") should be equal to source.size(dim): (", src.size(d), "), for dim: ", d);
  return d;
}

// self with `values` put at `index` along `dim` (added when `accumulate`).
Tensor put_along(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& values, bool accumulate) {
  Tensor out = writable_copy(at_least_1d(self));
  ember::index_put_(out, along(dim, index), values, accumulate);
  return self.dim() == 0 ? ember::reshape(out, {}) : out;
}

}  // namespace

Tensor index_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source, const Scalar& alpha) {
  const int64_t d = check_index_source("index_add_", self, dim, index, source);
  const int64_t size = at_least_1d(self).size(d);
  if (auto bad = first_outside(index, 0, size))
    EMBER_FAIL(Runtime, "index ", *bad, " is out of bounds for dimension ", d, " with size ", size);
  const bool unit = alpha.is_integral() ? alpha.to_int() == 1 : alpha.is_floating() && alpha.to_double() == 1.0;
  const Tensor scaled = unit ? source : ember::mul(source, scalar_tensor(alpha, source.dtype(), source.device()));
  return put_along(self, d, index, at_least_1d(scaled), true);
}

Tensor index_copy(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source) {
  const int64_t d = check_index_source("index_copy_", self, dim, index, source);
  const int64_t size = at_least_1d(self).size(d);
  if (auto bad = first_outside(index, 0, size))
    EMBER_FAIL(Index, "index_copy_(): index ", *bad, " is out of bounds for dimension ", d, " with size ", size);
  return put_along(self, d, index, at_least_1d(source), false);
}

Tensor index_fill_int_Tensor(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& value) {
  EMBER_CHECK(value.dim() == 0, Runtime, "index_fill_ only supports a 0-dimensional value tensor, but got tensor with ",
              value.dim(), " dimension(s).");
  const int64_t d = wrap_dim(dim, std::max<int64_t>(self.dim(), 1), "index_fill_");
  EMBER_CHECK(is_index_dtype(index.dtype()), Index, "index_fill_(): Expected dtype int64 for index.");
  EMBER_CHECK(index.dim() <= 1, Runtime, "Index has to be a vector/scalar");
  const int64_t size = at_least_1d(self).size(d);
  if (auto bad = first_outside(index, -size, size))
    EMBER_FAIL(Index, "index ", *bad, " is out of bounds for dimension ", d, " with size ", size);
  return put_along(self, d, distinct_positions(index, size), ember::to_dtype(value, self.dtype()), false);
}

Tensor index_fill_int_Scalar(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value) {
  return native::index_fill_int_Tensor(self, dim, index, scalar_tensor(value, self.dtype(), self.device()));
}

Tensor masked_scatter(const Tensor& self, const Tensor& mask, const Tensor& source) {
  EMBER_CHECK(mask.dtype() == ScalarType::Bool, Runtime,
              "masked_scatter_ only supports boolean masks, but got mask with dtype ", dtype_title(mask.dtype()));
  EMBER_CHECK(source.dtype() == self.dtype(), Runtime, "masked_scatter_: expected self and source to have same dtypes but got ",
              dtype_title(self.dtype()), " and ", dtype_title(source.dtype()));
  const DimVector shape = broadcast_shapes(self.sizes(), mask.sizes(), "masked_scatter");
  const Tensor m = at_least_1d(ember::broadcast_to(mask, shape));
  const int64_t count = ember::nonzero(m).size(0);
  EMBER_CHECK(source.numel() >= count, Runtime, "Number of elements of source < number of ones in mask");
  Tensor out = writable_copy(at_least_1d(ember::broadcast_to(self, shape)));
  ember::index_put_(out, {m}, ember::narrow(ember::reshape(source, {-1}), 0, 0, count), false);
  return shape.empty() ? ember::reshape(out, {}) : out;
}

Tensor masked_select(const Tensor& self, const Tensor& mask) {
  EMBER_CHECK(mask.dtype() == ScalarType::Bool, Runtime, "masked_select: expected BoolTensor for mask");
  const DimVector shape = broadcast_shapes(self.sizes(), mask.sizes(), "masked_select");
  return ember::index(at_least_1d(ember::broadcast_to(self, shape)), {at_least_1d(ember::broadcast_to(mask, shape))});
}

Tensor take(const Tensor& self, const Tensor& index) {
  EMBER_CHECK(index.dtype() == ScalarType::Int64, Runtime, "take(): Expected a long tensor for index, but got ",
              dtype_title(index.dtype()));
  const int64_t n = self.numel();
  EMBER_CHECK(n > 0 || index.numel() == 0, Index, "take(): tried to take from an empty tensor");
  if (auto bad = first_outside(index, -n, n))
    EMBER_FAIL(Index, "out of range: tried to access index ", *bad, " on a tensor of ", n, " elements.");
  return ember::index(ember::reshape(self, {-1}), {index});
}

Tensor take_along_dim(const Tensor& self, const Tensor& indices, std::optional<int64_t> dim) {
  EMBER_CHECK(indices.dtype() == ScalarType::Int64, Runtime,
              "torch.take_along_dim(): dtype of indices should be Long but got ", dtype_title(indices.dtype()));
  if (!dim) return ember::gather(ember::reshape(self, {-1}), 0, ember::reshape(indices, {-1}));
  EMBER_CHECK(self.dim() == indices.dim(), Runtime,
              "torch.take_along_dim(): input and indices should have the same number of dimensions, but got ",
              self.dim(), " dimensions for input, and ", indices.dim(), " dimensions for indices");
  const int64_t d = wrap_dim(*dim, std::max<int64_t>(self.dim(), 1), "take_along_dim");
  if (self.dim() == 0) return ember::gather(self, d, indices);
  DimVector self_sizes = self.sizes();
  self_sizes[d] = indices.size(d);
  DimVector shape = broadcast_shapes(self_sizes, indices.sizes(), "take_along_dim");
  const Tensor idx = ember::broadcast_to(indices, shape);
  shape[d] = self.size(d);
  return ember::gather(ember::broadcast_to(self, shape), d, idx);
}

Tensor put(const Tensor& self, const Tensor& index, const Tensor& source, bool accumulate) {
  EMBER_CHECK(index.dtype() == ScalarType::Int64, Runtime, "put_(): Expected a long tensor for index, but got ",
              dtype_title(index.dtype()));
  EMBER_CHECK(source.dtype() == self.dtype(), Runtime,
              "put_(): self and source expected to have the same dtype, but got self.dtype = ",
              dtype_title(self.dtype()), " and source.dtype = ", dtype_title(source.dtype()));
  EMBER_CHECK(source.numel() == index.numel(), Index,
              "put_(): Expected source and index to have the same number of elements, but got source.numel() = ",
              source.numel(), ", index.numel() = ", index.numel());
  const int64_t n = self.numel();
  EMBER_CHECK(n > 0 || index.numel() == 0, Index, "put_(): Tried to put elements into an empty tensor");
  if (auto bad = first_outside(index, -n, n))
    EMBER_FAIL(Index, "out of range: tried to access index ", *bad, " on a tensor of ", n, " elements.");
  Tensor flat = writable_copy(ember::reshape(self, {-1}));
  ember::index_put_(flat, {ember::reshape(index, {-1})}, ember::reshape(source, {-1}), accumulate);
  return ember::reshape(flat, self.sizes());
}

Tensor argwhere(const Tensor& self) { return ember::nonzero(self); }

TensorList where_cond(const Tensor& condition) { return ember::unbind(ember::nonzero(at_least_1d(condition)), 1); }

}  // namespace ember::native
