// repeat, tile, repeat_interleave, tensor_split, broadcast_tensors, meshgrid and the
// list forms of atleast_Nd, written with views (expand, reshape, slice) and
// index_select, so autograd records those and every order of derivative works.
#include <numeric>
#include <string>
#include <vector>

#include "ember/dispatch.h"
#include "ember/errors.h"
#include "ember/ops/atleast_1d.h"
#include "ember/ops/atleast_2d.h"
#include "ember/ops/atleast_3d.h"
#include "ember/ops/broadcast_tensors.h"
#include "ember/ops/expand.h"
#include "ember/ops/index_select.h"
#include "ember/ops/meshgrid.h"
#include "ember/ops/repeat.h"
#include "ember/ops/repeat_interleave.h"
#include "ember/ops/reshape.h"
#include "ember/ops/slice.h"
#include "ember/ops/tensor_split.h"
#include "ember/ops/tile.h"
#include "ember/ops/view.h"
#include "ember/tensor.h"

namespace ember::native {

Tensor repeat(const Tensor& self, const IntList& repeats) {
  const int64_t n = (int64_t)repeats.size();
  EMBER_CHECK(n >= self.dim(), Runtime,
              "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor");
  for (int64_t r : repeats)
    EMBER_CHECK(r >= 0, Runtime, "Trying to create tensor with negative dimension ", r, ": ", shape_str(DimVector(repeats)));
  // Each dim k becomes a pair (repeats[k], size[k]): expand the first, then merge the pair.
  DimVector pairs, expanded, result;
  for (int64_t k = 0; k < n; ++k) {
    const int64_t size = k < n - self.dim() ? 1 : self.size(k - (n - self.dim()));
    pairs.push_back(1);
    pairs.push_back(size);
    expanded.push_back(repeats[k]);
    expanded.push_back(size);
    result.push_back(repeats[k] * size);
  }
  return ember::reshape(ember::expand(ember::reshape(self, pairs), expanded), result);
}

Tensor tile(const Tensor& self, const IntList& dims) {
  DimVector padded(std::max<int64_t>(0, self.dim() - (int64_t)dims.size()), 1);
  for (int64_t r : dims) padded.push_back(r);
  return ember::repeat(self, padded);
}

Tensor repeat_interleave_Tensor(const Tensor& repeats, std::optional<int64_t> output_size) {
  EMBER_CHECK(repeats.dim() == 1, Runtime, "repeat_interleave only accept 1D vector as repeat");
  EMBER_CHECK(repeats.dtype() == ScalarType::Int64 || repeats.dtype() == ScalarType::Int32, Runtime,
              "repeats has to be Long or Int tensor");
  const Tensor host = copy_to(repeats, Device(), ScalarType::Int64);
  const int64_t* r = host.data<int64_t>();
  int64_t total = 0;
  for (int64_t k = 0; k < host.numel(); ++k) {
    EMBER_CHECK(r[k] >= 0, Runtime, "repeats can not be negative");
    total += r[k];
  }
  EMBER_CHECK(!output_size || *output_size == total, Runtime, "repeat_interleave: output_size ", *output_size,
              " does not match the sum of repeats (", total, ")");
  Tensor out = empty_tensor({total}, ScalarType::Int64);
  int64_t* w = out.data<int64_t>();
  for (int64_t k = 0; k < host.numel(); ++k) w = std::fill_n(w, r[k], k);
  return repeats.device().is_cpu() ? out : copy_to(out, repeats.device(), ScalarType::Int64);
}

Tensor repeat_interleave_self_Tensor(const Tensor& self, const Tensor& repeats, std::optional<int64_t> dim,
                                     std::optional<int64_t> output_size) {
  const Tensor input = dim ? self : ember::reshape(self, {-1});
  const int64_t d = dim ? wrap_dim(*dim, std::max<int64_t>(self.dim(), 1), "repeat_interleave") : 0;
  const int64_t size = input.dim() == 0 ? 1 : input.size(d);
  Tensor counts = repeats;
  if (repeats.numel() == 1 && repeats.dim() <= 1) counts = ember::expand(ember::reshape(repeats, {1}), {size});
  EMBER_CHECK(counts.dim() == 1, Runtime, "repeat_interleave only accept 1D vector as repeat");
  EMBER_CHECK(counts.size(0) == size, Runtime, "repeats must have the same size as input along dim, but got repeats.size(0) = ",
              counts.size(0), " and input.size(", d, ") = ", size);
  return ember::index_select(input, d, ember::repeat_interleave_Tensor(counts, output_size));
}

Tensor repeat_interleave_self_int(const Tensor& self, int64_t repeats, std::optional<int64_t> dim,
                                  std::optional<int64_t> output_size) {
  EMBER_CHECK(repeats >= 0, Runtime, "repeats can not be negative");
  return ember::repeat_interleave_self_Tensor(self, scalar_tensor(Scalar(repeats), ScalarType::Int64), dim, output_size);
}

namespace {
int64_t split_dim(const Tensor& self, int64_t dim) {
  EMBER_CHECK(self.dim() > 0, Runtime, "tensor_split expected at least a 1-dimensional tensor, but got a tensor with ",
              self.dim(), " dims");
  return wrap_dim(dim, self.dim(), "tensor_split");
}
}  // namespace

TensorList tensor_split_sections(const Tensor& self, int64_t sections, int64_t dim) {
  const int64_t d = split_dim(self, dim);
  EMBER_CHECK(sections > 0, Runtime, "number of sections must be larger than 0, got ", sections);
  const int64_t size = self.size(d), base = size / sections, extra = size % sections;
  TensorList parts;
  // As PyTorch: a count no vector can hold fails at once (2**62 sections used to loop for ages).
  EMBER_CHECK(uint64_t(sections) <= parts.max_size(), Runtime, "cannot create std::vector larger than max_size()");
  parts.reserve(size_t(sections));
  for (int64_t k = 0, start = 0; k < sections; ++k) {
    const int64_t len = base + (k < extra ? 1 : 0);
    parts.push_back(ember::slice(self, d, start, start + len, 1));
    start += len;
  }
  return parts;
}

TensorList tensor_split_indices(const Tensor& self, const IntList& indices, int64_t dim) {
  const int64_t d = split_dim(self, dim);
  TensorList parts;
  int64_t start = 0;
  for (int64_t end : indices) {
    parts.push_back(ember::slice(self, d, start, end, 1));
    start = end;
  }
  parts.push_back(ember::slice(self, d, start, std::nullopt, 1));
  return parts;
}

TensorList tensor_split_tensor_indices_or_sections(const Tensor& self, const Tensor& split, int64_t dim) {
  EMBER_CHECK(split.device().is_cpu(), Runtime,
              "tensor_split expected tensor_indices_or_sections to be on cpu, but it's on ", split.device());
  EMBER_CHECK(split.dtype() == ScalarType::Int64, Runtime,
              "tensor_split expected tensor_indices_or_sections to have dtype of long, but got ", dtype_title(split.dtype()));
  EMBER_CHECK(split.dim() <= 1, Runtime,
              "tensor_split expected tensor_indices_or_sections to be a zero-dimensional or one-dimensional tensor, but got a tensor with ",
              split.dim(), " dims");
  const Tensor host = copy_to(split, Device(), ScalarType::Int64);
  const int64_t* p = host.data<int64_t>();
  if (split.dim() == 0) return ember::tensor_split_sections(self, p[0], dim);
  return ember::tensor_split_indices(self, IntList(p, p + host.numel()), dim);
}

TensorList broadcast_tensors(const TensorList& tensors) {
  DimVector shape;
  for (const Tensor& t : tensors) shape = broadcast_shapes(shape, t.sizes(), "broadcast_tensors");
  TensorList out;
  for (const Tensor& t : tensors) out.push_back(ember::expand(t, shape));
  return out;
}

TensorList meshgrid_indexing(const TensorList& tensors, const std::string& indexing) {
  EMBER_CHECK(indexing == "ij" || indexing == "xy", Runtime,
              "torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: ", indexing);
  EMBER_CHECK(!tensors.empty(), Runtime, "torch.meshgrid: Expected at least one tensor in the tensor list");
  const int64_t n = (int64_t)tensors.size();
  const bool swap = indexing == "xy" && n >= 2;  // Cartesian: the first two dims trade places
  DimVector shape;
  for (const Tensor& t : tensors) {
    EMBER_CHECK(t.dim() <= 1, Runtime, "torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: ",
                shape_str(t.sizes()));
    EMBER_CHECK(t.dtype() == tensors[0].dtype(), Runtime,
                "torch.meshgrid: Expected all tensors in the tensor list to have the same dtype.");
    EMBER_CHECK(t.device() == tensors[0].device(), Runtime,
                "torch.meshgrid: Expected all tensors in the tensor list to have the same device.");
    shape.push_back(t.numel());
  }
  if (swap) std::swap(shape[0], shape[1]);
  TensorList grids;
  for (int64_t k = 0; k < n; ++k) {
    DimVector view(n, 1);
    view[swap && k < 2 ? 1 - k : k] = -1;
    grids.push_back(ember::expand(ember::reshape(tensors[k], view), shape));
  }
  return grids;
}

TensorList meshgrid(const TensorList& tensors) {
  warn("torch.meshgrid: in an upcoming release, it will be required to pass the indexing argument.");
  return ember::meshgrid_indexing(tensors, "ij");
}

namespace {
template <typename F>
TensorList each(const TensorList& tensors, F f) {
  TensorList out;
  for (const Tensor& t : tensors) out.push_back(f(t));
  return out;
}
}  // namespace

TensorList atleast_1d_Sequence(const TensorList& tensors) { return each(tensors, [](const Tensor& t) { return ember::atleast_1d(t); }); }
TensorList atleast_2d_Sequence(const TensorList& tensors) { return each(tensors, [](const Tensor& t) { return ember::atleast_2d(t); }); }
TensorList atleast_3d_Sequence(const TensorList& tensors) { return each(tensors, [](const Tensor& t) { return ember::atleast_3d(t); }); }

}  // namespace ember::native
