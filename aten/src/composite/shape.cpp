// Shape ops built from views and copies: reshape, flatten, clone, cat, split...
// They call the public ember:: ops, so autograd records what they are made of;
// clone, cat and stack, which write into a fresh tensor, record their own node
// (named as PyTorch names it) so the result joins the graph.
#include "fresh_copy.h"
#include "linear_tangent.h"
#include "named_node.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <vector>

#include "ember/autograd.h"
#include "ember/autograd_helpers.h"
#include "ember/cat_threshold.h"
#include "ember/forward_ad.h"
#include "ember/ops/cat.h"
#include "ember/ops/chunk.h"
#include "ember/ops/clone.h"
#include "ember/ops/contiguous.h"
#include "ember/ops/copy_.h"
#include "ember/ops/expand.h"
#include "ember/ops/expand_as.h"
#include "ember/ops/flatten.h"
#include "ember/ops/narrow.h"
#include "ember/ops/reshape.h"
#include "ember/ops/reshape_as.h"
#include "ember/ops/select.h"
#include "ember/ops/slice.h"
#include "ember/ops/split.h"
#include "ember/ops/stack.h"
#include "ember/ops/sum_to_size.h"
#include "ember/ops/unbind.h"
#include "ember/ops/view.h"
#include "ember/ops/view_as.h"
#include "ember/ops/zeros.h"
#include "ember/parallel.h"
#include "ember/tensor.h"

namespace ember::native {

// views.cpp
DimVector infer_view_size(const IntList& shape, int64_t numel);
std::optional<DimVector> compute_view_stride(const DimVector& oldshape, const DimVector& oldstride,
                                             const DimVector& newshape);

Tensor reshape(const Tensor& self, const IntList& shape) {
  DimVector size = infer_view_size(shape, self.numel());
  if (compute_view_stride(self.sizes(), self.strides(), size)) return ember::view(self, size);
  // PyTorch's _unsafe_view of the copy (its node is UnsafeViewBackward0).
  return with_node_name("UnsafeViewBackward0", [&] { return ember::view(ember::contiguous(self), size); });
}

Tensor flatten(const Tensor& self, int64_t start_dim, int64_t end_dim) {
  const int64_t ndim = self.dim();
  int64_t s = wrap_dim(start_dim, ndim, "flatten");
  int64_t e = wrap_dim(end_dim, ndim, "flatten");
  EMBER_CHECK(s <= e, Runtime, "flatten() has invalid args: start_dim cannot come after end_dim");
  if (ndim == 0) return ember::reshape(self, IntList{1});
  if (s == e) return self;
  DimVector shape;
  int64_t n = 1;
  for (int64_t d = 0; d < ndim; ++d) {
    if (d < s || d > e) shape.push_back(self.sizes()[d]);
    else {
      n *= self.sizes()[d];
      if (d == e) shape.push_back(n);
    }
  }
  return ember::reshape(self, shape);
}

namespace {

// clone's gradient passes straight through.
struct CloneBackward final : Node {
  std::string default_name() const override { return "CloneBackward0"; }
  TensorList apply(TensorList&& grads) override {
    TensorList out(1);
    if (should_compute(0)) out[0] = grads[0];
    return out;
  }
};

}  // namespace

Tensor clone(const Tensor& self) { return fresh_copy<CloneBackward>(self, self.device(), self.dtype()); }

Tensor contiguous(const Tensor& self) {
  if (self.is_contiguous()) return self;
  return fresh_copy<CloneBackward>(self, self.device(), self.dtype(), /*contiguous=*/true);
}

Tensor narrow(const Tensor& self, int64_t dim, int64_t start, int64_t length) {
  EMBER_CHECK(self.dim() > 0, Runtime, "narrow() cannot be applied to a 0-dim tensor.");
  EMBER_CHECK(length >= 0, Runtime, "narrow(): length must be non-negative.");
  int64_t d = wrap_dim(dim, self.dim(), "narrow");
  int64_t cur = self.sizes()[d];
  EMBER_CHECK(-cur <= start && start <= cur, Index, "start out of range (expected to be in range of [", -cur,
              ", ", cur, "], but got ", start, ")");
  if (start < 0) start += cur;
  EMBER_CHECK(start <= cur - length, Runtime, "start (", start, ") + length (", length,
              ") exceeds dimension size (", cur, ").");
  return ember::slice(self, d, start, start + length, 1);
}

namespace {

// A legacy empty tensor (1-D, size 0) is skipped by cat whatever the other shapes.
bool cat_should_skip(const Tensor& t) { return t.dim() == 1 && t.sizes()[0] == 0; }

// The dtype (promoted) and device (all the same) of cat's and stack's result.
std::pair<ScalarType, Device> cat_result_type(const TensorList& tensors) {
  ScalarType dtype = tensors[0].dtype();
  Device device = tensors[0].device();
  for (size_t i = 1; i < tensors.size(); ++i) {
    dtype = promote_types(dtype, tensors[i].dtype());
    EMBER_CHECK(tensors[i].device() == device, Runtime,
                "Expected all tensors to be on the same device, but found at least two devices, ", device.str(),
                " and ", tensors[i].device().str(), "! (when checking argument for argument tensors in method cat)");
  }
  return {dtype, device};
}

// Copies cat's inputs (stack's, each one index along d, when `stacked`) into their blocks of the fresh,
// contiguous `result`. Contiguous CPU inputs of the result's dtype go as one pass of memcpys over
// (outer index, input) blocks, with no view objects (the DataLoader's collate stacks many small
// tensors); the others through copy_ into a view of the result.
void copy_blocks(const Tensor& result, const TensorList& tensors, int64_t d, bool stacked) {
  const DimVector& out = result.sizes();
  int64_t outer = 1, inner = 1;
  for (int64_t k = 0; k < d; ++k) outer *= out[k];
  for (int64_t k = d + 1; k < (int64_t)out.size(); ++k) inner *= out[k];
  if (outer == 0 || inner == 0) return;
  const size_t item = itemsize(result.dtype());
  const int64_t row = out[d] * inner;  // elements of the result per outer index
  // memcpy carries no forward-AD tangent: with any tangent alive, every input goes through copy_.
  const bool direct = result.device().is_cpu() && !forward_ad::maybe_active();
  struct Block { const char* src; int64_t offset, elements; };
  std::vector<Block> blocks;
  blocks.reserve(tensors.size());
  int64_t offset = 0;  // along d
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    if (!stacked && cat_should_skip(t)) continue;
    const int64_t len = stacked ? 1 : t.sizes()[d];
    if (len > 0) {
      if (direct && t.dtype() == result.dtype() && t.is_contiguous()) {
        blocks.push_back({static_cast<const char*>(t.data_ptr()), offset * inner, len * inner});
      } else {
        Tensor view = stacked ? ember::select(result, d, offset) : ember::slice(result, d, offset, offset + len, 1);
        ember::copy_(view, t);
      }
    }
    offset += len;
  }
  if (blocks.empty()) return;
  char* dst = static_cast<char*>(result.data_ptr());
  const int64_t units = outer * (int64_t)blocks.size();
  auto copy_units = [&](int64_t begin, int64_t end) {
    for (int64_t u = begin; u < end; ++u) {
      const int64_t o = u / (int64_t)blocks.size();
      const Block& b = blocks[(size_t)(u % (int64_t)blocks.size())];
      std::memcpy(dst + (o * row + b.offset) * item, b.src + o * b.elements * item, (size_t)(b.elements * item));
    }
  };
  if (result.numel() < thresholds::kCatParallelWork) copy_units(0, units);
  else parallel_for(units, 1, copy_units);
}

// The gradient of stack: each input gets its slice of the output's gradient.
struct StackBackward final : Node {
  int64_t dim = 0;
  std::string default_name() const override { return "StackBackward0"; }
  TensorList apply(TensorList&& grads) override {
    const Tensor& grad = grads[0];
    TensorList out(next_edges.size());
    for (size_t i = 0; i < out.size(); ++i) {
      if (!should_compute(i) || !grad.defined()) continue;
      out[i] = ember::select(grad, dim, (int64_t)i);  // the engine casts to the input's dtype
    }
    return out;
  }
};

// The gradient of cat: each input gets its slice of the output's gradient.
struct CatBackward final : Node {
  int64_t dim = 0;
  std::vector<int64_t> offsets, lengths;
  std::vector<char> skipped;
  std::string default_name() const override { return "CatBackward0"; }
  TensorList apply(TensorList&& grads) override {
    const Tensor& grad = grads[0];
    TensorList out(next_edges.size());
    for (size_t i = 0; i < out.size(); ++i) {
      if (!should_compute(i) || !grad.defined()) continue;
      const InputMeta& meta = input_meta[i];
      Tensor g = skipped[i] ? ember::zeros(meta.shape, meta.dtype, meta.device)
                            : ember::narrow(grad, dim, offsets[i], lengths[i]);
      out[i] = g;
    }
    return out;
  }
};

}  // namespace

Tensor cat(const TensorList& tensors, int64_t dim) {
  EMBER_CHECK(!tensors.empty(), Value, "torch.cat(): expected a non-empty list of Tensors");
  for (size_t i = 0; i < tensors.size(); ++i) {
    EMBER_CHECK(tensors[i].defined(), Runtime, "cat(): expected a defined tensor at position ", i);
    EMBER_CHECK(tensors[i].dim() > 0, Runtime, "zero-dimensional tensor (at position ", i,
                ") cannot be concatenated");
  }
  if (forward_ad::wanted(tensors))
    return with_linear_tangent(tensors, [&](const TensorList& parts) { return ember::cat(parts, dim); });
  // The first tensor that is not a legacy empty one sets the rank and shape.
  size_t ref = tensors.size();
  for (size_t i = 0; i < tensors.size(); ++i)
    if (!cat_should_skip(tensors[i])) { ref = i; break; }
  const auto [dtype, device] = cat_result_type(tensors);
  if (ref == tensors.size()) {
    // Every input is a legacy empty tensor.
    return empty_tensor(DimVector{0}, dtype, device);
  }
  const Tensor& first = tensors[ref];
  const int64_t ndim = first.dim();
  const int64_t d = wrap_dim(dim, ndim, "cat");
  DimVector out_shape = first.sizes();
  int64_t total = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    if (cat_should_skip(t)) continue;
    EMBER_CHECK(t.dim() == ndim, Runtime, "Tensors must have same number of dimensions: got ", ndim, " and ",
                t.dim());
    for (int64_t k = 0; k < ndim; ++k) {
      if (k == d) continue;
      EMBER_CHECK(t.sizes()[k] == first.sizes()[k], Runtime, "Sizes of tensors must match except in dimension ", d,
                  ". Expected size ", first.sizes()[k], " but got size ", t.sizes()[k], " for tensor number ", i,
                  " in the list.");
    }
    total = checked_add(total, t.sizes()[d], "cat(): the size of the result");
  }
  out_shape[d] = total;
  Tensor result = empty_tensor(out_shape, dtype, device);
  std::shared_ptr<CatBackward> node;
  if (autograd::any_requires_grad(tensors)) {
    node = std::make_shared<CatBackward>();
    node->dim = d;
    int64_t offset = 0;
    for (const Tensor& t : tensors) {
      bool skip = cat_should_skip(t);
      int64_t len = skip ? 0 : t.sizes()[d];
      node->add_input(t);
      node->offsets.push_back(offset);
      node->lengths.push_back(len);
      node->skipped.push_back(skip);
      offset += len;
    }
  }
  {
    NoGradGuard guard;
    copy_blocks(result, tensors, d, /*stacked=*/false);
  }
  result.storage()->version.store(0, std::memory_order_relaxed);  // a new tensor: version 0
  if (node) autograd::set_history(result, node);
  return result;
}

Tensor stack(const TensorList& tensors, int64_t dim) {
  EMBER_CHECK(!tensors.empty(), Runtime, "stack expects a non-empty TensorList");
  const int64_t d = wrap_dim(dim, tensors[0].dim() + 1, "stack");
  for (size_t i = 1; i < tensors.size(); ++i) {
    EMBER_CHECK(tensors[i].sizes() == tensors[0].sizes(), Runtime,
                "stack expects each tensor to be equal size, but got ", tensors[0].sizes(), " at entry 0 and ",
                tensors[i].sizes(), " at entry ", i);
  }
  if (forward_ad::wanted(tensors))
    return with_linear_tangent(tensors, [&](const TensorList& parts) { return ember::stack(parts, d); });
  const auto [dtype, device] = cat_result_type(tensors);
  DimVector shape = tensors[0].sizes();
  shape.insert((size_t)d, (int64_t)tensors.size());
  Tensor result = empty_tensor(shape, dtype, device);
  {
    NoGradGuard guard;
    copy_blocks(result, tensors, d, /*stacked=*/true);
  }
  result.storage()->version.store(0, std::memory_order_relaxed);  // a new tensor: version 0
  if (autograd::any_requires_grad(tensors)) {
    auto node = std::make_shared<StackBackward>();
    node->dim = d;
    for (const Tensor& t : tensors) node->add_input(t);
    autograd::set_history(result, node);
  }
  return result;
}

namespace {

// unbind's gradient: the outputs' gradients stacked (zeros for those that got none).
struct UnbindBackward final : Node {
  int64_t dim = 0;
  size_t count = 0;
  std::string default_name() const override { return "UnbindBackward0"; }
  TensorList apply(TensorList&& grads) override {
    const InputMeta& in = input_meta[0];
    DimVector piece = in.shape;
    piece.erase(dim);
    TensorList parts(count);
    for (size_t i = 0; i < count; ++i)
      parts[i] = i < grads.size() && grads[i].defined() ? grads[i] : ember::zeros(piece, in.dtype, in.device);
    return {ember::stack(parts, dim)};
  }
};

// split's (and chunk's) gradient: the outputs' gradients concatenated.
struct SplitBackward final : Node {
  const char* node_name = "SplitBackward0";
  int64_t dim = 0;
  IntList lengths;
  std::string default_name() const override { return node_name; }
  TensorList apply(TensorList&& grads) override {
    const InputMeta& in = input_meta[0];
    TensorList parts(lengths.size());
    for (size_t i = 0; i < lengths.size(); ++i) {
      if (i < grads.size() && grads[i].defined()) {
        parts[i] = grads[i];
      } else {
        DimVector shape = in.shape;
        shape[dim] = lengths[i];
        parts[i] = ember::zeros(shape, in.dtype, in.device);
      }
    }
    return {ember::cat(parts, dim)};
  }
};

// The pieces of `self` (piece(self, i) for i < n), made without grad, as views that share one node
// (output i of it for piece i) and may not be written in place, as PyTorch's multi-output view
// functions. With forward AD active, piece i's tangent is piece(tangent, i), made in the caller's
// grad mode so that it keeps the tangent's reverse graph.
template <typename F>
TensorList multi_output_views(const Tensor& self, size_t n, const std::shared_ptr<Node>& node, F&& piece) {
  TensorList pieces;
  pieces.reserve(n);
  {
    NoGradGuard guard;
    forward_ad::Pause pause;
    for (size_t i = 0; i < n; ++i) pieces.push_back(piece(self, i));
  }
  for (size_t i = 0; i < n; ++i) {
    if (node) autograd::set_history(pieces[i], node, (uint32_t)i);
    autograd::mark_view(pieces[i], self, /*multi_output=*/true);
  }
  if (forward_ad::wanted({&self})) {
    forward_ad::Pause pause;
    const Tensor self_t = forward_ad::tangent(self);
    const uint64_t first_node = node ? node->sequence_nr : 0;
    for (size_t i = 0; i < n; ++i)
      forward_ad::set_output_tangent(pieces[i], piece(self_t, i), {&self_t}, first_node, /*may_alias=*/true);
  }
  return pieces;
}

TensorList split_views(const Tensor& self, int64_t d, const IntList& lengths, const char* node_name) {
  std::shared_ptr<SplitBackward> node;
  if (autograd::any_requires_grad({&self})) {
    node = std::make_shared<SplitBackward>();
    node->node_name = node_name;
    node->dim = d;
    node->lengths = lengths;
    node->add_input(self);
  }
  IntList starts(lengths.size(), 0);
  for (size_t i = 1; i < lengths.size(); ++i) starts[i] = starts[i - 1] + lengths[i - 1];
  return multi_output_views(self, lengths.size(), node, [&](const Tensor& t, size_t i) {
    return ember::narrow(t, d, starts[i], lengths[i]);
  });
}

}  // namespace

TensorList split(const Tensor& self, int64_t split_size, int64_t dim) {
  EMBER_CHECK(self.dim() != 0, Runtime, "split expects at least a 1-dimensional tensor");
  EMBER_CHECK(split_size >= 0, Runtime, "split expects split_size be non-negative, but got split_size=", split_size);
  const int64_t d = wrap_dim(dim, self.dim(), "split");
  const int64_t dim_size = self.sizes()[d];
  EMBER_CHECK(split_size > 0 || dim_size == 0, Runtime,
              "split_size can only be 0 if dimension size is 0, but got dimension size of ", dim_size);
  int64_t num_splits = 1;
  if (split_size != 0) num_splits = std::max<int64_t>(ceil_div_nonneg(dim_size, split_size), 1);
  const int64_t last = split_size - (split_size * num_splits - dim_size);
  IntList lengths(num_splits, split_size);
  lengths[num_splits - 1] = last;
  return split_views(self, d, lengths, "SplitBackward0");
}

TensorList split_sizes(const Tensor& self, const IntList& split_size, int64_t dim) {
  EMBER_CHECK(self.dim() != 0, Runtime, "split expects at least a 1-dimensional tensor");
  const int64_t d = wrap_dim(dim, self.dim(), "split_with_sizes");
  const int64_t dim_size = self.sizes()[d];
  int64_t sum = 0;
  bool overflow = false;
  for (int64_t s : split_size) {
    EMBER_CHECK(s >= 0, Runtime, "split_with_sizes expects split_sizes have only non-negative entries, but got "
                "split_sizes=", split_size);
    overflow |= add_overflows(sum, s, &sum);
  }
  EMBER_CHECK(!overflow && sum == dim_size, Runtime, "split_with_sizes expects split_sizes to sum exactly to ", dim_size,
              " (input tensor's size at dimension ", d, "), but got split_sizes=", split_size);
  return split_views(self, d, split_size, "SplitWithSizesBackward0");
}

TensorList chunk(const Tensor& self, int64_t chunks, int64_t dim) {
  EMBER_CHECK(self.dim() > 0, Runtime, "chunk expects at least a 1-dimensional tensor");
  EMBER_CHECK(chunks > 0, Runtime, "chunk expects `chunks` to be greater than 0, got: ", chunks);
  const int64_t d = wrap_dim(dim, self.dim(), "chunk");
  const int64_t dim_size = self.sizes()[d];
  const int64_t split_size = ceil_div_nonneg(dim_size, chunks);
  if (split_size == 0 && dim_size == 0) {
    // Keep `chunks` empty pieces, as PyTorch does.
    IntList sizes(chunks, split_size);
    sizes[chunks - 1] = split_size - (split_size * chunks - dim_size);
    return native::split_sizes(self, sizes, d);
  }
  return native::split(self, split_size, d);
}

TensorList unbind(const Tensor& self, int64_t dim) {
  EMBER_CHECK(self.dim() > 0, Runtime, "Dimension specified as ", dim, " but tensor has no dimensions");
  const int64_t d = wrap_dim(dim, self.dim(), "unbind");
  const int64_t n = self.sizes()[d];
  std::shared_ptr<UnbindBackward> node;
  if (autograd::any_requires_grad({&self})) {
    node = std::make_shared<UnbindBackward>();
    node->dim = d;
    node->count = (size_t)n;
    node->add_input(self);
  }
  return multi_output_views(self, (size_t)n, node, [&](const Tensor& t, size_t i) {
    return ember::select(t, d, (int64_t)i);
  });
}

Tensor view_as(const Tensor& self, const Tensor& other) { return ember::view(self, other.sizes()); }
Tensor reshape_as(const Tensor& self, const Tensor& other) { return ember::reshape(self, other.sizes()); }
Tensor expand_as(const Tensor& self, const Tensor& other) { return ember::expand(self, other.sizes()); }

Tensor sum_to_size(const Tensor& self, const IntList& size) {
  // `size` must broadcast to self's shape (PyTorch's is_expandable_to).
  const int64_t lead = self.dim() - (int64_t)size.size();
  bool expandable = lead >= 0;
  for (int64_t i = 0; expandable && i < (int64_t)size.size(); ++i)
    expandable = size[i] == 1 || size[i] == self.sizes()[lead + i];
  EMBER_CHECK(expandable, Runtime, "size {", size, "} is not expandable to size {", self.sizes(), "}.");
  return autograd::sum_to(self, size);
}

}  // namespace ember::native
