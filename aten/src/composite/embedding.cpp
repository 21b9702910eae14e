// embedding's gradient (the scatter-add kernel, or ember ops when its own
// graph is recorded), embedding_bag's reductions over the embedding kernel
// (and torch.embedding_bag's 4-tuple around them), and one_hot.
#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "ember/autograd.h"
#include "ember/dispatch.h"
#include "ember/dtype.h"
#include "ember/errors.h"
#include "ember/forward_ad.h"
#include "ember/ops/_embedding_backward.h"
#include "ember/ops/_embedding_bag_reduce.h"
#include "ember/ops/_embedding_dense_backward.h"
#include "ember/ops/amax.h"
#include "ember/ops/amin.h"
#include "ember/ops/arange.h"
#include "ember/ops/embedding.h"
#include "ember/ops/embedding_bag.h"
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

// PyTorch's legacy type name in argument checks: torch.FloatTensor.
std::string legacy_type(ScalarType t) { return str("torch.", dtype_title(t), "Tensor"); }

// The bags are planned on the host from the index values: CPU tensors only (the CUDA slot of a kernel).
void require_cpu(const Tensor& weight, const Tensor& indices, const Tensor& offsets, const Tensor& per_sample_weights) {
  for (const Tensor* t : {&weight, &indices, &offsets, &per_sample_weights})
    if (t->defined() && !t->device().is_cpu()) kernel_missing("embedding_bag", t->device());
}

// The checks torch.embedding_bag makes before its kernel (F.embedding_bag makes its own in Python).
void check_embedding_bag_args(const Tensor& weight, const Tensor& indices, const Tensor& offsets, int64_t mode,
                              const Tensor& per_sample_weights, bool include_last_offset) {
  require_cpu(weight, indices, offsets, per_sample_weights);
  EMBER_CHECK(indices.dim() == 1 || indices.dim() == 2, Runtime,
              "input has to be a 1D or 2D Tensor, but got Tensor of dimension ", indices.dim());
  // PyTorch's kernel misreads a 2-D input with offsets; F.embedding_bag flattens it first.
  EMBER_CHECK(indices.dim() == 1, Runtime, "embedding_bag: a 2D input is a batch of bags of equal length: pass it "
              "flattened with the offsets of its rows, as torch.nn.functional.embedding_bag does");
  EMBER_CHECK(offsets.dim() == 1, Runtime, "offsets has to be a 1D Tensor, but got Tensor of dimension ", offsets.dim());
  EMBER_CHECK(weight.dim() == 2, Runtime, "weight has to be a 2D Tensor, but got Tensor of dimension ", weight.dim());
  // Indices and offsets are first promoted to their common dtype, as PyTorch does.
  const ScalarType index_type = promote_types(indices.dtype(), offsets.dtype());
  EMBER_CHECK(index_type == ScalarType::Int64 || index_type == ScalarType::Int32, Runtime,
              "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; but got ",
              legacy_type(index_type), " instead (while checking arguments for embedding_bag)");
  EMBER_CHECK(is_floating(weight.dtype()), Runtime, "Expected tensor for argument #1 'weight' to have one of the "
              "following scalar types: Half, BFloat16, Float, Double; but got ", legacy_type(weight.dtype()),
              " instead (while checking arguments for embedding_bag)");
  EMBER_CHECK(mode >= 0 && mode <= 2, Runtime, "`mode` must be sum, mean, or max.");
  if (per_sample_weights.defined()) {
    EMBER_CHECK(mode == 0, Runtime, "embedding_bag: per_sample_weights only supported with mode='sum'");
    EMBER_CHECK(per_sample_weights.dtype() == weight.dtype(), Runtime, "Expected tensor for argument #1 'weight' to "
                "have the same type as tensor for argument #1 'per_sample_weights'; but type ",
                legacy_type(weight.dtype()), " does not equal ", legacy_type(per_sample_weights.dtype()),
                " (while checking arguments for embedding_bag)");
    EMBER_CHECK(per_sample_weights.dim() == 1 && per_sample_weights.numel() == indices.numel(), Runtime,
                "embedding_bag: per_sample_weights has to be a 1D Tensor of one weight per index (", indices.numel(),
                "), but got shape [", per_sample_weights.sizes(), "]");
  }
  EMBER_CHECK(!include_last_offset || offsets.size(0) >= 1, Runtime,
              "include_last_offset: number of offset should be at least 1");
}

// Each bag's maximum in every column (the first one; a NaN wins, as amax's), named by the
// embedding index it was read from; 0 for an empty bag. Bag b is indices[off[b], off[b + 1]).
std::vector<int64_t> bag_argmax_indices(const Tensor& weight, const Tensor& indices, const std::vector<int64_t>& idx,
                                        const std::vector<int64_t>& off, int64_t bags, int64_t padding_idx) {
  const int64_t D = weight.size(1), n = (int64_t)idx.size();
  NoGradGuard no_grad;
  const Tensor rows = ember::to_dtype(ember::embedding(weight, indices), ScalarType::Float64, false, false);
  const double* r = rows.data<double>();  // a new contiguous (n, D) tensor: the row read at each position
  std::vector<int64_t> out(bags * D, 0);
  std::vector<int64_t> at(D);
  for (int64_t b = 0; b < bags; ++b) {
    const int64_t end = b + 1 < (int64_t)off.size() ? off[b + 1] : n;
    bool first = true;
    for (int64_t i = off[b]; i < end; ++i) {
      if (idx[i] == padding_idx) continue;
      for (int64_t d = 0; d < D; ++d) {
        const double cur = r[at[d] * D + d], v = r[i * D + d];
        if (first || v > cur || (std::isnan(v) && !std::isnan(cur))) at[d] = i;
      }
      first = false;
    }
    if (!first)
      for (int64_t d = 0; d < D; ++d) out[b * D + d] = idx[at[d]];
  }
  return out;
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
  require_cpu(weight, indices, offsets, per_sample_weights);
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
  EMBER_CHECK(off.empty() || off.back() <= n, Runtime, "offsets[-1] can not be greater than input's length ", n,
              " but got offsets[-1] of ", off.empty() ? 0 : off.back());
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

std::tuple<Tensor, Tensor, Tensor, Tensor> embedding_bag(const Tensor& weight, const Tensor& indices,
                                                        const Tensor& offsets, bool scale_grad_by_freq, int64_t mode,
                                                        bool sparse, const Tensor& per_sample_weights,
                                                        bool include_last_offset, std::optional<int64_t> padding_idx) {
  check_embedding_bag_args(weight, indices, offsets, mode, per_sample_weights, include_last_offset);
  const int64_t rows = weight.size(0);
  int64_t pad = -1;
  if (padding_idx) {
    pad = *padding_idx;
    EMBER_CHECK(pad >= -rows && pad < rows, Runtime, "padding_idx must be within the number of embeddings, -", rows,
                " through ", rows - 1, ", but got ", pad);
    if (pad < 0) pad += rows;
  }
  // sparse=True: a dense gradient (ember has no sparse tensors), except where PyTorch refuses it.
  EMBER_CHECK(!(sparse && mode == 2), Value, "max mode does not support sparse weights");
  // max mode routes each gradient to the bag's maximum alone: PyTorch ignores scale_grad_by_freq there.
  const Tensor output = ember::_embedding_bag_reduce(weight, indices, offsets, mode, per_sample_weights,
                                                     include_last_offset, pad, scale_grad_by_freq && mode != 2);
  // The extra results as PyTorch's CPU kernel gives them, in the indices' and offsets' common dtype.
  const std::vector<int64_t> idx = long_values(indices), off = long_values(offsets);
  const int64_t n = (int64_t)idx.size();
  const ScalarType index_type = promote_types(indices.dtype(), offsets.dtype());
  const int64_t bags = output.size(0);
  const std::vector<int64_t> bag_start(off.begin(), off.begin() + bags);
  // offset2bag: each index's bag; PyTorch skips it (empty) in its fast sum path: float32/16 and
  // bfloat16 rows with unit column stride, no padding_idx, per-sample weights (if any) of unit stride.
  const bool fast_sum = mode == 0 && pad < 0 && weight.stride(1) == 1 &&
                        (weight.dtype() == ScalarType::Float32 || weight.dtype() == ScalarType::Float16 ||
                         weight.dtype() == ScalarType::BFloat16) &&
                        (!per_sample_weights.defined() || per_sample_weights.stride(0) == 1);
  std::vector<int64_t> offset2bag;
  if (!fast_sum)
    for (int64_t i = 0; i < n; ++i)
      offset2bag.push_back(std::upper_bound(bag_start.begin(), bag_start.end(), i) - bag_start.begin() - 1);
  // bag_size: the indices each bag averages (padding left out) in mean and max modes; zeros in sum
  // mode, one per bag when weight needs a gradient, else one per offset. max_indices: each
  // column's argmax in max mode, else a copy of bag_size.
  std::vector<int64_t> bag_size;
  if (mode == 0) bag_size.assign(weight.requires_grad() ? bags : (int64_t)off.size(), 0);
  else
    for (int64_t b = 0; b < bags; ++b) {
      const int64_t end = b + 1 < (int64_t)off.size() ? off[b + 1] : n;
      bag_size.push_back(std::count_if(idx.begin() + off[b], idx.begin() + end, [&](int64_t v) { return v != pad; }));
    }
  Tensor max_indices = long_tensor(bag_size);
  if (mode == 2)
    max_indices = ember::reshape(long_tensor(bag_argmax_indices(weight, indices, idx, off, bags, pad)),
                                 {bags, weight.size(1)});
  const auto typed = [&](const Tensor& t) { return ember::to_dtype(t, index_type); };
  return {output, typed(long_tensor(offset2bag)), typed(long_tensor(bag_size)), typed(max_indices)};
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
