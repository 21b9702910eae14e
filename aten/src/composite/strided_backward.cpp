// Gradients of the views that may overlap themselves: unfold (overlapping windows) and
// as_strided (any geometry; also the engine's regenerated views, node.cpp). Made of
// ember ops, so autograd records them and double backward works.
#include <algorithm>
#include <optional>

#include "ember/ops/_as_strided_backward.h"
#include "ember/ops/_unfold_backward.h"
#include "ember/ops/add.h"
#include "ember/ops/arange.h"
#include "ember/ops/as_strided.h"
#include "ember/ops/copy_.h"
#include "ember/ops/flatten.h"
#include "ember/ops/index_add.h"
#include "ember/ops/movedim.h"
#include "ember/ops/mul.h"
#include "ember/ops/ones.h"
#include "ember/ops/reshape.h"
#include "ember/ops/sum.h"
#include "ember/ops/true_divide.h"
#include "ember/ops/unfold.h"
#include "ember/ops/unsqueeze.h"
#include "ember/ops/zeros.h"
#include "ember/tensor.h"

namespace ember::native {

namespace {

Tensor positions(int64_t n, const Tensor& like) {
  return ember::arange(Scalar(int64_t(0)), Scalar(n), Scalar(int64_t(1)), ScalarType::Int64, like.device());
}

// Whether two elements of this geometry may share a memory location (PyTorch's
// _maybe_overlapping_memory): sorted by stride, each dim must step past the ones inside it.
bool may_overlap(const IntList& sizes, const IntList& strides) {
  std::vector<size_t> order;
  for (size_t d = 0; d < sizes.size(); ++d)
    if (sizes[d] > 1) order.push_back(d);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return strides[a] < strides[b]; });
  int64_t max_index = 0;
  for (size_t d : order) {
    if (strides[d] <= max_index) return true;
    max_index += strides[d] * (sizes[d] - 1);
  }
  return false;
}

// The last storage element the geometry reaches, plus one (sizes all non-zero).
int64_t storage_end(const IntList& sizes, const IntList& strides, int64_t offset) {
  int64_t end = offset + 1;
  for (size_t d = 0; d < sizes.size(); ++d) end += (sizes[d] - 1) * strides[d];
  return end;
}

}  // namespace

// unfold's gradient (ATen's unfold_backward): each window's gradient added back at its
// elements; windows that do not overlap are one copy into the unfolded zeros.
Tensor _unfold_backward(const Tensor& grad, const IntList& input_sizes, int64_t dim, int64_t size, int64_t step) {
  Tensor result = ember::zeros(input_sizes, grad.dtype(), grad.device());
  if (input_sizes.empty()) return ember::reshape(grad, IntList{});  // a 0-d input is its one window
  const int64_t ndim = (int64_t)input_sizes.size();
  const int64_t d = wrap_dim(dim, ndim, "unfold_backward");
  if (step >= size) {
    ember::copy_(ember::unfold(result, d, size, step), grad);
    return result;
  }
  // Window i, element j is input position i * step + j: one index_add along `d`.
  const int64_t windows = grad.sizes()[d];
  Tensor index = ember::add(ember::unsqueeze(ember::mul(positions(windows, grad), wrap_number(Scalar(step))), 1),
                            ember::unsqueeze(positions(size, grad), 0));
  Tensor source = ember::flatten(ember::movedim(grad, IntList{ndim}, IntList{d + 1}), d, d + 1);
  return ember::index_add(result, d, ember::reshape(index, IntList{-1}), source);
}

// as_strided's gradient (PyTorch's as_strided_backward): scatter `grad` into a zero buffer
// standing for the storage both geometries cover, then read the input's geometry out of it.
Tensor _as_strided_backward(const Tensor& grad, const IntList& input_sizes, const IntList& input_strides,
                            int64_t input_storage_offset, const IntList& size, const IntList& stride,
                            std::optional<int64_t> storage_offset) {
  const int64_t out_offset = storage_offset.value_or(input_storage_offset);
  // Elements of a stride-0 dim share one location: their gradients add up there.
  Tensor g = grad;
  IntList out_sizes(size), expanded;
  for (size_t d = 0; d < out_sizes.size(); ++d)
    if (stride[d] == 0 && out_sizes[d] > 1) {
      expanded.push_back((int64_t)d);
      out_sizes[d] = 1;
    }
  if (!expanded.empty()) g = ember::sum(g, expanded, true, std::nullopt);
  auto has_zero_size = [](const IntList& s) { return std::find(s.begin(), s.end(), 0) != s.end(); };
  if (has_zero_size(input_sizes) || has_zero_size(out_sizes)) return ember::zeros(input_sizes, grad.dtype(), grad.device());
  const int64_t base = std::min(input_storage_offset, out_offset);
  const int64_t extent = std::max(storage_end(input_sizes, input_strides, input_storage_offset),
                                  storage_end(out_sizes, stride, out_offset)) - base;
  Tensor storage = ember::zeros(IntList{extent}, grad.dtype(), grad.device());
  const bool out_overlaps = may_overlap(out_sizes, stride);
  const bool input_overlaps = may_overlap(input_sizes, input_strides);
  if (out_overlaps) {
    Tensor index = ember::as_strided(positions(extent, grad), out_sizes, stride, out_offset - base);
    storage = ember::index_add(storage, 0, ember::reshape(index, IntList{-1}), ember::reshape(g, IntList{-1}));
  } else {
    ember::copy_(ember::as_strided(storage, out_sizes, stride, out_offset - base), g);
  }
  if (input_overlaps) {
    // A location the input shows several times gets its gradient once, shared among them.
    Tensor index = ember::reshape(
        ember::as_strided(positions(extent, grad), input_sizes, input_strides, input_storage_offset - base), IntList{-1});
    Tensor count = ember::index_add(ember::zeros(IntList{extent}, grad.dtype(), grad.device()), 0, index,
                                    ember::ones(IntList{index.numel()}, grad.dtype(), grad.device()));
    storage = ember::true_divide(storage, count);
  }
  return ember::as_strided(storage, input_sizes, input_strides, input_storage_offset - base);
}

}  // namespace ember::native
