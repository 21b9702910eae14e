// embedding's gradient (the scatter-add kernel, or ember ops when its own
// graph is recorded), embedding_bag's reductions over the embedding kernel,
// and one_hot.
#include <algorithm>
#include <vector>

#include "ember/autograd.h"
#include "ember/errors.h"
#include "ember/forward_ad.h"
#include "ember/ops/_embedding_backward.h"
#include "ember/ops/_embedding_bag_reduce.h"
#include "ember/ops/_embedding_dense_backward.h"
#include "ember/ops/amax.h"
#include "ember/ops/amin.h"
#include "ember/ops/arange.h"
#include "ember/ops/embedding.h"
#include "ember/ops/eq.h"
#include "ember/ops/index.h"
#include "ember/ops/index_put_.h"
#include "ember/ops/mul.h"
#include "ember/ops/narrow.h"
#include "ember/ops/ne.h"
#include "ember/ops/one_hot.h"
#include "ember/ops/ones.h"
#include "ember/ops/reshape.h"
#include "ember/ops/stack.h"
#include "ember/ops/to.h"
#include "ember/ops/true_divide.h"
#include "ember/ops/unsqueeze.h"
#include "ember/ops/where.h"
#include "ember/ops/zeros.h"
#include "ember/tensor.h"

namespace ember::native {
namespace {

Tensor long_tensor(const std::vector<int64_t>& v) {
  Tensor t = empty_tensor({(int64_t)v.size()}, ScalarType::Int64);
  std::copy(v.begin(), v.end(), t.data<int64_t>());
  return t;
}

std::vector<int64_t> long_values(const Tensor& t) {
  const Tensor c = ember::to_dtype(ember::reshape(t, {-1}), ScalarType::Int64, false, true);
  return std::vector<int64_t>(c.data<int64_t>(), c.data<int64_t>() + c.numel());
}

}  // namespace

Tensor _embedding_backward(const Tensor& grad, const Tensor& indices, const IntList& weight_shape, int64_t padding_idx,
                           bool scale_grad_by_freq) {
  // The kernel has no derivative: ember ops when the gradient is differentiated (graph or tangent).
  if (!autograd::any_requires_grad({&grad}) && !(forward_ad::maybe_active() && forward_ad::wanted({&grad})))
    return ember::_embedding_dense_backward(grad, indices, weight_shape[0], padding_idx, scale_grad_by_freq);
  const Tensor idx = ember::to_dtype(ember::reshape(indices, {-1}), ScalarType::Int64);
  Tensor g = ember::reshape(grad, {idx.numel(), weight_shape[1]});
  if (padding_idx >= 0)
    g = ember::where(ember::unsqueeze(ember::ne(idx, wrap_number(Scalar(padding_idx))), 1), g,
                     wrap_number(Scalar(0.0)));
  if (scale_grad_by_freq) {
    const Tensor counts = ember::index_put_(ember::zeros({weight_shape[0]}, g.dtype(), g.device()), {idx},
                                            ember::ones({idx.numel()}, g.dtype(), g.device()), true);
    g = ember::true_divide(g, ember::unsqueeze(ember::index(counts, {idx}), 1));
  }
  return ember::index_put_(ember::zeros(weight_shape, g.dtype(), g.device()), {idx}, g, true);
}

Tensor _embedding_bag_reduce(const Tensor& weight, const Tensor& indices, const Tensor& offsets, int64_t mode,
                             const Tensor& per_sample_weights, bool include_last_offset, int64_t padding_idx,
                             bool scale_grad_by_freq) {
  EMBER_CHECK(indices.dim() == 1, Runtime, "embedding_bag: input has to be 1D or 2D Tensor, but got Tensor of dimension ",
              indices.dim());
  EMBER_CHECK(offsets.dim() == 1, Runtime, "embedding_bag: offsets has to be a 1D Tensor, but got Tensor of dimension ",
              offsets.dim());
  EMBER_CHECK(mode >= 0 && mode <= 2, Runtime, "embedding_bag: mode has to be 0 (sum), 1 (mean) or 2 (max), got ", mode);
  const std::vector<int64_t> idx = long_values(indices), off = long_values(offsets);
  const int64_t n = (int64_t)idx.size();
  for (int64_t i = 0; i < n; ++i)
    EMBER_CHECK(idx[i] >= 0 && idx[i] < weight.size(0), Runtime, "Index ", i, " of input takes value ", idx[i],
                " which is not in the valid range [0, ", weight.size(0), ")");
  const int64_t bags = include_last_offset ? std::max<int64_t>((int64_t)off.size() - 1, 0) : (int64_t)off.size();
  EMBER_CHECK(off.empty() || off[0] == 0, Runtime, "offsets[0] has to be 0, i.e., the first sequence in the mini-batch "
              "has to start from position 0. However, got ", off.empty() ? 0 : off[0]);
  for (size_t b = 1; b < off.size(); ++b)
    EMBER_CHECK(off[b] >= off[b - 1] && off[b] <= n, Runtime, "embedding_bag: offsets must be non-decreasing and at most ",
                "the number of indices (", n, "), but offsets[", b, "] = ", off[b]);
  // The kept positions (not padding_idx) in order, with their bag; bags stay contiguous runs.
  std::vector<int64_t> pos, bag_of, count(bags, 0), start(bags, 0);
  for (int64_t b = 0; b < bags; ++b) {
    const int64_t end = b + 1 < (int64_t)off.size() ? off[b + 1] : n;
    start[b] = (int64_t)pos.size();
    for (int64_t i = off[b]; i < end; ++i) {
      if (idx[i] == padding_idx) continue;
      pos.push_back(i);
      bag_of.push_back(b);
      ++count[b];
    }
  }
  const int64_t D = weight.size(1);
  const Tensor kept = long_tensor(pos);
  Tensor rows = ember::embedding(weight, ember::index(indices, {kept}), -1, scale_grad_by_freq);
  if (per_sample_weights.defined())
    rows = ember::mul(rows, ember::unsqueeze(ember::index(per_sample_weights, {kept}), 1));
  if (mode == 2) {  // max: each bag's rows, a zero row for an empty bag
    TensorList out;
    for (int64_t b = 0; b < bags; ++b)
      out.push_back(count[b] ? ember::amax(ember::narrow(rows, 0, start[b], count[b]), {0})
                             : ember::zeros({D}, weight.dtype(), weight.device()));
    return bags ? ember::stack(out, 0) : ember::zeros({0, D}, weight.dtype(), weight.device());
  }
  Tensor sum = ember::index_put_(ember::zeros({bags, D}, weight.dtype(), weight.device()), {long_tensor(bag_of)}, rows,
                                 true);
  if (mode == 0) return sum;
  std::vector<int64_t> divisor(count);
  for (int64_t& c : divisor) c = std::max<int64_t>(c, 1);
  return ember::true_divide(sum, ember::unsqueeze(ember::to_dtype(long_tensor(divisor), weight.dtype()), 1));
}

Tensor one_hot(const Tensor& self, int64_t num_classes) {
  EMBER_CHECK(self.dtype() == ScalarType::Int64, Runtime, "one_hot is only applicable to index tensor of type LongTensor.");
  DimVector shape = self.sizes();
  if (self.numel() == 0) {
    EMBER_CHECK(num_classes > 0, Runtime, "Can not infer total number of classes from empty tensor.");
    shape.push_back(num_classes);
    return ember::zeros(shape, ScalarType::Int64, self.device());
  }
  EMBER_CHECK(ember::amin(self).item().to_int() >= 0, Runtime, "Class values must be non-negative.");
  const int64_t top = ember::amax(self).item().to_int();
  if (num_classes == -1) num_classes = top + 1;
  else EMBER_CHECK(top < num_classes, Runtime, "Class values must be smaller than num_classes.");
  const Tensor classes = ember::arange(Scalar(int64_t(0)), Scalar(num_classes), Scalar(int64_t(1)), ScalarType::Int64,
                                       self.device());
  return ember::to_dtype(ember::eq(ember::unsqueeze(self, -1), classes), ScalarType::Int64);
}

}  // namespace ember::native
