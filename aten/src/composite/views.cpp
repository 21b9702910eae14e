// Views: ops that return a tensor sharing `self`'s storage with new geometry.
// The generated public entries (ember::view, ...) record autograd and mark
// the result as a view; these functions only compute sizes, strides, offset.
#include <optional>

#include "ember/autograd.h"
#include "ember/ops/as_strided.h"
#include "ember/ops/expand.h"
#include "ember/ops/permute.h"
#include "ember/ops/select.h"
#include "ember/ops/slice.h"
#include "ember/ops/squeeze.h"
#include "ember/ops/t.h"
#include "ember/ops/transpose.h"
#include "ember/ops/unfold.h"
#include "ember/ops/unsqueeze.h"
#include "ember/ops/view.h"
#include "ember/tensor.h"

namespace ember::native {

// Resolves a -1 in `shape` against `numel` (PyTorch's infer_size).
DimVector infer_view_size(const IntList& shape, int64_t numel) {
  DimVector res(shape);
  int64_t newsize = 1;
  int64_t infer_dim = -1;
  bool overflow = false;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == -1) {
      EMBER_CHECK(infer_dim < 0, Runtime, "only one dimension can be inferred");
      infer_dim = (int64_t)d;
    } else {
      EMBER_CHECK(shape[d] >= 0, Runtime, "invalid shape dimension ", shape[d]);
      overflow |= mul_overflows(newsize, shape[d], &newsize);
    }
  }
  if (overflow) {
    // A product past int64 never matches a real numel; on 0 elements PyTorch names the overflow.
    EMBER_CHECK(numel != 0, Runtime, "numel: integer multiplication overflow");
    EMBER_FAIL(Runtime, "shape '", shape, "' is invalid for input of size ", numel);
  }
  if (numel == newsize || (infer_dim >= 0 && newsize > 0 && numel % newsize == 0)) {
    if (infer_dim >= 0) {
      EMBER_CHECK(newsize != 0, Runtime, "cannot reshape tensor of 0 elements into shape ", shape,
                  " because the unspecified dimension size -1 can be any value and is ambiguous");
      res[infer_dim] = numel / newsize;
    }
    return res;
  }
  EMBER_FAIL(Runtime, "shape '", shape, "' is invalid for input of size ", numel);
}

// The strides that let a tensor of `oldshape`/`oldstride` be viewed as
// `newshape`, or nullopt when some new dimension would span two
// non-contiguous chunks of the old layout (PyTorch's computeStride).
std::optional<DimVector> compute_view_stride(const DimVector& oldshape, const DimVector& oldstride,
                                             const DimVector& newshape) {
  if (oldshape.empty()) return DimVector(newshape.size(), 1);
  int64_t numel = compute_numel(oldshape);
  if (numel == 0 && oldshape == newshape) return oldstride;
  DimVector newstride(newshape.size());
  if (numel == 0) {
    for (int64_t view_d = (int64_t)newshape.size() - 1; view_d >= 0; --view_d) {
      if (view_d == (int64_t)newshape.size() - 1) newstride[view_d] = 1;
      else newstride[view_d] = std::max<int64_t>(newshape[view_d + 1], 1) * newstride[view_d + 1];
    }
    return newstride;
  }
  int64_t view_d = (int64_t)newshape.size() - 1;
  int64_t chunk_base_stride = oldstride.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t tensor_d = (int64_t)oldshape.size() - 1; tensor_d >= 0; --tensor_d) {
    tensor_numel *= oldshape[tensor_d];
    // A chunk ends where the next (outer) dim is not laid out right after this one.
    if (tensor_d == 0 ||
        (oldshape[tensor_d - 1] != 1 && oldstride[tensor_d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || newshape[view_d] == 1)) {
        newstride[view_d] = view_numel * chunk_base_stride;
        view_numel *= newshape[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (tensor_d > 0) {
        chunk_base_stride = oldstride[tensor_d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return newstride;
}

Tensor view(const Tensor& self, const IntList& size) {
  DimVector shape = infer_view_size(size, self.numel());
  auto stride = compute_view_stride(self.sizes(), self.strides(), shape);
  EMBER_CHECK(stride.has_value(), Runtime,
              "view size is not compatible with input tensor's size and stride (at least one dimension spans "
              "across two contiguous subspaces). Use .reshape(...) instead.");
  return make_view(self, std::move(shape), std::move(*stride), self.offset());
}

Tensor permute(const Tensor& self, const IntList& dims) {
  const int64_t ndim = self.dim();
  EMBER_CHECK((int64_t)dims.size() == ndim, Runtime,
              "permute(sparse_coo): number of dimensions in the tensor input does not match the length of the "
              "desired ordering of dimensions i.e. input.dim() = ",
              ndim, " is not equal to len(dims) = ", dims.size());
  DimVector sizes(ndim), strides(ndim), seen(ndim, 0);
  for (int64_t i = 0; i < ndim; ++i) {
    int64_t d = wrap_dim(dims[i], ndim, "permute");
    EMBER_CHECK(!seen[d], Runtime, "permute(): duplicate dims are not allowed.");
    seen[d] = 1;
    sizes[i] = self.sizes()[d];
    strides[i] = self.strides()[d];
  }
  return make_view(self, std::move(sizes), std::move(strides), self.offset());
}

Tensor transpose(const Tensor& self, int64_t dim0, int64_t dim1) {
  const int64_t ndim = self.dim();
  int64_t d0 = wrap_dim(dim0, ndim, "transpose");
  int64_t d1 = wrap_dim(dim1, ndim, "transpose");
  DimVector sizes = self.sizes(), strides = self.strides();
  if (ndim > 0 && d0 != d1) {
    std::swap(sizes[d0], sizes[d1]);
    std::swap(strides[d0], strides[d1]);
  }
  return make_view(self, std::move(sizes), std::move(strides), self.offset());
}

Tensor t(const Tensor& self) {
  EMBER_CHECK(self.dim() <= 2, Runtime, "t() expects a tensor with <= 2 dimensions, but self is ", self.dim(), "D");
  if (self.dim() < 2) return make_view(self, self.sizes(), self.strides(), self.offset());
  return native::transpose(self, 0, 1);
}

}  // namespace ember::native

namespace ember {
namespace {

// t_'s gradient: the gradient transposed back (PyTorch's TBackward1).
struct TInplaceBackward final : Node {
  std::string default_name() const override { return "TBackward1"; }
  TensorList apply(TensorList&& grads) override { return {ember::t(grads[0])}; }
};

void swap_first_two_dims(TensorImpl& impl) {
  if (impl.sizes.size() < 2) return;
  std::swap(impl.sizes[0], impl.sizes[1]);
  std::swap(impl.strides[0], impl.strides[1]);
  impl.refresh_geometry();
}

}  // namespace

const Tensor& t_(const Tensor& self) {
  EMBER_CHECK(self.dim() <= 2, Runtime, "t_() expects a tensor with <= 2 dimensions, but self is ", self.dim(), "D");
  autograd::check_inplace(self, "t_");
  std::shared_ptr<Node> node;
  if (autograd::any_requires_grad({&self})) {
    autograd::check_view_inplace(self, "t_");
    node = std::make_shared<TInplaceBackward>();
    node->add_input(self);  // the edge to self's history before the transpose
  }
  swap_first_two_dims(*self.impl());
  self.bump_version();  // as PyTorch's: what was saved of self is stale
  AutogradMeta* meta = self.impl()->autograd.get();
  if (node) {
    // A view stays one (its data, and so its base, are unchanged); a plain tensor's history moves on.
    if (meta->view_base) autograd::set_history(self, node);
    else autograd::rebase_history(self, node, "t_");
  }
  if (meta && meta->fw_grad.defined()) swap_first_two_dims(*meta->fw_grad.impl());  // forward AD: its own tangent
  return self;
}

// PyTorch's nodes of the in-place view ops carry the next number of their out-of-place op's names.
const char* inplace_view_node_name(const std::string& name) {
  static const std::pair<const char*, const char*> names[] = {
      {"SqueezeBackward0", "SqueezeBackward3"},   {"SqueezeBackward1", "SqueezeBackward4"},
      {"SqueezeBackward2", "SqueezeBackward5"},   {"UnsqueezeBackward0", "UnsqueezeBackward1"},
      {"TransposeBackward0", "TransposeBackward1"}, {"AsStridedBackward0", "AsStridedBackward1"}};
  for (const auto& [outplace, inplace] : names)
    if (name == outplace) return inplace;
  return nullptr;
}

// squeeze_, unsqueeze_, transpose_, swapaxes_, as_strided_ (written in Python over this): self takes the
// geometry of `view`, made from self by the out-of-place view op, and the view's history (its node's edge is
// self's history before the change), so backward runs that op's derivative, as PyTorch's in-place view ops.
const Tensor& adopt_view_(const Tensor& self, const Tensor& view, const char* op) {
  EMBER_CHECK(view.impl()->storage.get() == self.impl()->storage.get(), Runtime, op,
              ": the new geometry must come from a view of the tensor itself");
  autograd::check_inplace(self, op);
  AutogradMeta* view_meta = view.impl()->autograd.get();
  std::shared_ptr<Node> node = view_meta ? view_meta->grad_fn : nullptr;
  if (node) autograd::check_view_inplace(self, op);
  // Only the view's own fresh node is renamed, never one that other tensors show too.
  if (node && node.use_count() == 2 && !node->renamed) node->renamed = inplace_view_node_name(node->name());
  TensorImpl& impl = *self.impl();
  impl.sizes = view.sizes();
  impl.strides = view.strides();
  impl.offset = view.offset();
  impl.refresh_geometry();
  self.bump_version();  // what was saved of self is stale
  AutogradMeta* meta = impl.autograd.get();
  if (node) {
    if (meta->view_base) autograd::set_history(self, node);
    else autograd::rebase_history(self, node, op);
  }
  if (meta && meta->fw_grad.defined() && view_meta) meta->fw_grad = view_meta->fw_grad;  // the tangent, viewed alike
  return self;
}

}  // namespace ember

namespace ember::native {

Tensor unsqueeze(const Tensor& self, int64_t dim) {
  const int64_t ndim = self.dim();
  int64_t d = wrap_dim(dim, ndim + 1, "unsqueeze");
  DimVector sizes = self.sizes(), strides = self.strides();
  int64_t new_stride = d >= ndim ? 1 : sizes[d] * strides[d];
  sizes.insert(d, 1);
  strides.insert(d, new_stride);
  return make_view(self, std::move(sizes), std::move(strides), self.offset());
}

// The view without the size-one dims of `dim` (all of them when none is given).
static Tensor squeeze_view(const Tensor& self, const IntList* dim) {
  const int64_t ndim = self.dim();
  DimVector drop(ndim, 0);
  if (!dim) {
    for (int64_t d = 0; d < ndim; ++d) drop[d] = self.sizes()[d] == 1;
  } else {
    DimVector seen(std::max<int64_t>(ndim, 1), 0);
    for (int64_t x : *dim) {
      int64_t d = wrap_dim(x, ndim, "squeeze");
      EMBER_CHECK(!seen[d], Runtime, "dim ", d, " appears multiple times in the list of dims");
      seen[d] = 1;
      if (ndim > 0 && self.sizes()[d] == 1) drop[d] = 1;
    }
  }
  DimVector sizes, strides;
  for (int64_t d = 0; d < ndim; ++d) {
    if (drop[d]) continue;
    sizes.push_back(self.sizes()[d]);
    strides.push_back(self.strides()[d]);
  }
  return make_view(self, std::move(sizes), std::move(strides), self.offset());
}

Tensor squeeze(const Tensor& self, std::optional<int64_t> dim) {
  if (!dim) return squeeze_view(self, nullptr);
  const IntList one{*dim};
  return squeeze_view(self, &one);
}

Tensor squeeze_dims(const Tensor& self, const IntList& dim) { return squeeze_view(self, &dim); }

Tensor expand(const Tensor& self, const IntList& size) {
  const int64_t ndim = (int64_t)size.size();
  const int64_t tensor_dim = self.dim();
  EMBER_CHECK(ndim >= tensor_dim, Runtime, "expand(", dtype_title(self.dtype()), "Type{", self.sizes(),
              "}, size=", size, "): the number of sizes provided (", ndim,
              ") must be greater or equal to the number of dimensions in the tensor (", tensor_dim, ")");
  DimVector sizes(ndim), strides(ndim);
  for (int64_t i = ndim - 1; i >= 0; --i) {
    int64_t offset = ndim - 1 - i;
    int64_t d = tensor_dim - 1 - offset;
    int64_t sz = d >= 0 ? self.sizes()[d] : 1;
    int64_t st = 1;
    if (d >= 0) st = self.strides()[d];
    else if (i + 1 < ndim) mul_overflows(sizes[i + 1], strides[i + 1], &st);  // kept only by a size-1 dim, which never steps
    int64_t target = size[i];
    if (target == -1) {
      EMBER_CHECK(d >= 0, Runtime, "The expanded size of the tensor (", target,
                  ") isn't allowed in a leading, non-existing dimension ", i);
      target = sz;
    }
    EMBER_CHECK(target >= 0, Runtime, "Trying to create tensor with negative dimension ", target, ": ", size);
    if (sz != target) {
      EMBER_CHECK(sz == 1, Runtime, "The expanded size of the tensor (", target,
                  ") must match the existing size (", sz, ") at non-singleton dimension ", i,
                  ".  Target sizes: ", size, ".  Tensor sizes: ", self.sizes());
      sz = target;
      st = 0;
    }
    sizes[i] = sz;
    strides[i] = st;
  }
  return make_view(self, std::move(sizes), std::move(strides), self.offset());
}

Tensor select(const Tensor& self, int64_t dim, int64_t index) {
  const int64_t ndim = self.dim();
  EMBER_CHECK(ndim > 0, Index, "select() cannot be applied to a 0-dim tensor.");
  int64_t d = wrap_dim(dim, ndim, "select");
  int64_t size = self.sizes()[d];
  EMBER_CHECK(index >= -size && index < size, Index, "select(): index ", index,
              " out of range for tensor of size ", self.sizes(), " at dimension ", d);
  if (index < 0) index += size;
  DimVector sizes = self.sizes(), strides = self.strides();
  int64_t offset = self.offset() + index * strides[d];
  sizes.erase(d);
  strides.erase(d);
  return make_view(self, std::move(sizes), std::move(strides), offset);
}

Tensor slice(const Tensor& self, int64_t dim, std::optional<int64_t> start, std::optional<int64_t> end,
             int64_t step) {
  const int64_t ndim = self.dim();
  EMBER_CHECK(ndim > 0, Runtime, "slice() cannot be applied to a 0-dim tensor.");
  EMBER_CHECK(step > 0, Runtime, "slice step must be positive");
  int64_t d = wrap_dim(dim, ndim, "slice");
  const auto [s, e] = clamp_slice(start, end, self.sizes()[d]);
  DimVector sizes = self.sizes(), strides = self.strides();
  int64_t offset = self.offset() + s * strides[d];
  sizes[d] = ceil_div_nonneg(e - s, step);
  // stride * step passes int64 only for a step beyond the end, leaving one element that never steps.
  int64_t stepped;
  if (!mul_overflows(strides[d], step, &stepped)) strides[d] = stepped;
  return make_view(self, std::move(sizes), std::move(strides), offset);
}

// Windows of `size` elements, `step` apart along `dimension`, as a new last dim (PyTorch's
// unfold, its checks in its order; a 0-d tensor is one window of its one element).
Tensor unfold(const Tensor& self, int64_t dimension, int64_t size, int64_t step) {
  const int64_t ndim = self.dim();
  const int64_t d = wrap_dim(dimension, ndim, "unfold");
  DimVector sizes = self.sizes(), strides = self.strides();
  const int64_t max_size = ndim == 0 ? 1 : sizes[d];
  EMBER_CHECK(size <= max_size, Runtime, "maximum size for tensor at dimension ", d, " is ", max_size,
              " but size is ", size);
  EMBER_CHECK(size >= 0, Runtime, "size is ", size, " but must be >= 0");
  EMBER_CHECK(step > 0, Runtime, "step is ", step, " but must be > 0");
  sizes.push_back(size);
  strides.push_back(ndim == 0 ? 1 : strides[d]);
  if (ndim > 0) {
    sizes[d] = (sizes[d] - size) / step + 1;
    strides[d] *= step;
  }
  return make_view(self, std::move(sizes), std::move(strides), self.offset());
}

// Any geometry over `self`'s storage, checked against it as PyTorch's setStrided.
Tensor as_strided(const Tensor& self, const IntList& size, const IntList& stride, std::optional<int64_t> storage_offset) {
  const int64_t offset = storage_offset.value_or(self.offset());
  EMBER_CHECK(size.size() == stride.size(), Runtime, "mismatch in length of strides and shape");
  for (int64_t st : stride)
    EMBER_CHECK(st >= 0, Runtime, "as_strided: Negative strides are not supported at the moment, got strides: ", stride);
  DimVector sizes(size), strides(stride);
  for (int64_t sz : size)  // PyTorch computes in unsigned arithmetic, where a negative size overflows
    EMBER_CHECK(sz >= 0, Runtime, "Storage size calculation overflowed with sizes=", size, " and strides=", stride);
  const int64_t itemsize = (int64_t)self.itemsize();
  const int64_t needed = (int64_t)storage_nbytes_strided(sizes, strides, itemsize);
  if (needed != 0) {
    const int64_t total = needed + offset * itemsize;
    const int64_t available = (int64_t)self.storage()->nbytes;
    EMBER_CHECK(total <= available, Runtime, "setStorage: sizes ", size, ", strides ", stride, ", storage offset ",
                offset, ", and itemsize ", itemsize, " requiring a storage size of ", total,
                " are out of bounds for storage of size ", available);
  }
  EMBER_CHECK(offset >= 0, Runtime, "Tensor: invalid storage offset ", offset);
  return make_view(self, std::move(sizes), std::move(strides), offset);
}

}  // namespace ember::native
