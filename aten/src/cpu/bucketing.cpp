// searchsorted, bincount and histc on the CPU.
//   - searchsorted: a binary search per value, in parallel over values; boundaries
//     and values are compared in their promoted dtype with PyTorch's comparisons
//     (`!(b >= v)` for left, `!(b > v)` for right), which put NaN values after
//     every boundary, as PyTorch's kernel does.
//   - bincount and histc: per-thread counts over chunks of the input, summed.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ember/dispatch.h"
#include "ember/errors.h"
#include "ember/ops/bincount.h"
#include "ember/ops/contiguous.h"
#include "ember/ops/histc.h"
#include "ember/ops/searchsorted.h"
#include "ember/parallel.h"
#include "ember/tensor.h"

namespace ember::cpu {
namespace {

template <typename T, typename Index>
void search_all(const T* bounds, const T* values, const int64_t* sorter, Index* out, int64_t nvalues,
                int64_t nbounds, int64_t values_per_row, bool one_row, bool right) {
  parallel_for(nvalues, std::max<int64_t>(1, kGrainSize / 16), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const int64_t row = one_row ? 0 : i / values_per_row;
      const T* bd = bounds + row * nbounds;
      const int64_t* so = sorter ? sorter + row * nbounds : nullptr;
      const opmath_t<T> v = static_cast<opmath_t<T>>(values[i]);
      int64_t lo = 0, hi = nbounds;
      while (lo < hi) {
        const int64_t mid = lo + ((hi - lo) >> 1);
        const opmath_t<T> m = static_cast<opmath_t<T>>(so ? bd[so[mid]] : bd[mid]);
        const bool go_right = right ? !(m > v) : !(m >= v);
        if (go_right) lo = mid + 1;
        else hi = mid;
      }
      out[i] = static_cast<Index>(lo);
    }
  });
}

void check_search_shapes(const Tensor& bounds, const Tensor& values) {
  EMBER_CHECK(bounds.dim() > 0, Runtime,
              "torch.searchsorted(): boundaries tensor should have positive dimension, but got 0 dimension");
  if (values.dim() == 0) {
    EMBER_CHECK(bounds.dim() == 1, Runtime,
                "torch.searchsorted(): input value can be a scalar only when boundaries tensor dimension is 1, "
                "but we got boundaries tensor dim(", bounds.dim(), ") and input value's dim(0) numel(1)");
    return;
  }
  if (bounds.dim() == 1) return;
  bool match = bounds.dim() == values.dim();
  for (int64_t d = 0; match && d + 1 < bounds.dim(); ++d) match = bounds.size(d) == values.size(d);
  EMBER_CHECK(match, Runtime,
              "torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 dimensions of "
              "boundaries tensor and input value tensor must match, but we got boundaries tensor ",
              shape_str(bounds.sizes()), " and input value tensor ", shape_str(values.sizes()));
}

}  // namespace

Tensor searchsorted_cpu(const Tensor& sorted_sequence, const Tensor& self, bool out_int32, bool right,
                        const std::optional<std::string>& side, const Tensor& sorter) {
  if (side) {
    EMBER_CHECK(*side == "left" || *side == "right", Runtime,
                "torch.searchsorted(): side can only be 'left' or 'right' but got ", *side);
    EMBER_CHECK(!(right && *side == "left"), Runtime,
                "torch.searchsorted(): side and right can't be set to opposites, got side of left while right was True");
    right = *side == "right";
  }
  check_search_shapes(sorted_sequence, self);
  Tensor order;
  if (sorter.defined()) {
    EMBER_CHECK(sorter.dtype() == ScalarType::Int64, Runtime,
                "torch.searchsorted(): sorter must be a tensor of long dtype but got dtype ", dtype_title(sorter.dtype()));
    EMBER_CHECK(sorter.sizes() == sorted_sequence.sizes(), Runtime,
                "torch.searchsorted(): boundary and sorter must have the same size, but got boundary tensor ",
                shape_str(sorted_sequence.sizes()), "and got sorter tensor ", shape_str(sorter.sizes()));
    order = ember::contiguous(sorter);
    const int64_t n = sorted_sequence.size(-1);
    const int64_t* p = order.data<int64_t>();
    for (int64_t i = 0; i < order.numel(); ++i)
      EMBER_CHECK(p[i] >= 0 && p[i] < n, Runtime, "torch.searchsorted(): sorter index out of range");
  }
  // PyTorch's result_type: a Python number only raises the category (int boundaries, float number: float32).
  ScalarType common = promote_types(sorted_sequence.dtype(), self.dtype());
  if (self.is_wrapped_number())
    common = is_floating(self.dtype()) && !is_floating(sorted_sequence.dtype()) ? default_dtype() : sorted_sequence.dtype();
  EMBER_CHECK(common != ScalarType::Bool, NotImplemented, "\"searchsorted\" not implemented for 'Bool'");
  const Tensor bounds = ember::contiguous(cast_to(sorted_sequence, common));
  const Tensor values = ember::contiguous(cast_to(self, common));
  Tensor out = empty_tensor(self.sizes(), out_int32 ? ScalarType::Int32 : ScalarType::Int64, self.device());
  const int64_t nbounds = sorted_sequence.size(-1);
  const bool one_row = sorted_sequence.dim() == 1;
  const int64_t per_row = values.dim() == 0 ? 1 : values.size(-1);
  if (out.numel() == 0) return out;
  visit_dtype(common, [&]<typename T>() {
    const int64_t* so = order.defined() ? order.data<int64_t>() : nullptr;
    if (out_int32)
      search_all<T, int32_t>(bounds.data<T>(), values.data<T>(), so, out.data<int32_t>(), values.numel(), nbounds,
                             per_row, one_row, right);
    else
      search_all<T, int64_t>(bounds.data<T>(), values.data<T>(), so, out.data<int64_t>(), values.numel(), nbounds,
                             per_row, one_row, right);
  });
  return out;
}

Tensor bincount_cpu(const Tensor& self, const Tensor& weights, int64_t minlength) {
  EMBER_CHECK(self.dim() == 1, Runtime, "bincount only supports 1-d non-negative integral inputs.");
  EMBER_CHECK(minlength >= 0, Runtime, "minlength should be >= 0");
  EMBER_CHECK(!weights.defined() || (weights.dim() == 1 && weights.size(0) == self.size(0)), Runtime,
              "weights should be 1-d and have the same length as input");
  const Tensor input = ember::contiguous(cast_to(self, ScalarType::Int64));
  const int64_t n = input.numel();
  const int64_t* x = input.data<int64_t>();
  int64_t top = -1;
  for (int64_t i = 0; i < n; ++i) {
    EMBER_CHECK(x[i] >= 0, Runtime, "bincount only supports 1-d non-negative integral inputs.");
    top = std::max(top, x[i]);
  }
  const int64_t nbins = std::max(minlength, top + 1);
  // Float32 weights give float32 counts; any other weights float64, as PyTorch.
  const ScalarType out_dtype = !weights.defined() ? ScalarType::Int64
                               : weights.dtype() == ScalarType::Float32 ? ScalarType::Float32 : ScalarType::Float64;
  Tensor out = empty_tensor({nbins}, out_dtype, self.device());
  const Tensor w = weights.defined() ? ember::contiguous(cast_to(weights, ScalarType::Float64)) : Tensor();
  const double* wp = w.defined() ? w.data<double>() : nullptr;
  // Per-thread partial counts (in double or int64), summed in chunk order.
  const int64_t chunk = std::max<int64_t>(kGrainSize, n / std::max(1, get_num_threads()) + 1);
  const int64_t nchunks = n == 0 ? 0 : (n + chunk - 1) / chunk;
  std::vector<std::vector<double>> partial(nchunks, std::vector<double>(nbins, 0.0));
  parallel_for(nchunks, 1, [&](int64_t b, int64_t e) {
    for (int64_t c = b; c < e; ++c) {
      double* h = partial[c].data();
      const int64_t lo = c * chunk, hi = std::min(n, lo + chunk);
      if (wp) for (int64_t i = lo; i < hi; ++i) h[x[i]] += wp[i];
      else for (int64_t i = lo; i < hi; ++i) h[x[i]] += 1.0;
    }
  });
  visit_dtype(out_dtype, [&]<typename T>() {
    if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, float> || std::is_same_v<T, double>) {
      T* o = out.data<T>();
      for (int64_t j = 0; j < nbins; ++j) {
        double s = 0;
        for (int64_t c = 0; c < nchunks; ++c) s += partial[c][j];
        o[j] = static_cast<T>(s);
      }
    }
  });
  return out;
}

Tensor histc_cpu(const Tensor& self, int64_t bins, const Scalar& min, const Scalar& max) {
  EMBER_CHECK(bins > 0, Runtime, "torch.histc: bins must be > 0, but got ", bins, " for dimension 0");
  double lo = min.to_double(), hi = max.to_double();
  const Tensor input = ember::contiguous(self);
  const int64_t n = input.numel();
  Tensor out = empty_tensor({bins}, self.dtype(), self.device());
  visit_floating(self.dtype(), "histc", [&]<typename T>() {
    const T* x = input.data<T>();
    if (lo == hi && n > 0) {  // the data's own range
      lo = INFINITY;
      hi = -INFINITY;
      for (int64_t i = 0; i < n; ++i) {
        const double v = static_cast<double>(static_cast<opmath_t<T>>(x[i]));
        lo = std::min(lo, v);
        hi = std::max(hi, v);
      }
    }
    if (lo == hi) {
      lo -= 1;
      hi += 1;
    }
    EMBER_CHECK(std::isfinite(lo) && std::isfinite(hi), Runtime, "torch.histc: range of [", lo, ", ", hi,
                "] is not finite");
    EMBER_CHECK(lo < hi, Runtime, "torch.histc: max must be larger than min");
    const int64_t chunk = std::max<int64_t>(kGrainSize, n / std::max(1, get_num_threads()) + 1);
    const int64_t nchunks = n == 0 ? 0 : (n + chunk - 1) / chunk;
    // Positions computed in the input's precision, as PyTorch's (0.7f lands in bin 7 of 10 over [0, 1]).
    using C = opmath_t<T>;
    const C left = static_cast<C>(static_cast<T>(lo)), right = static_cast<C>(static_cast<T>(hi));
    std::vector<std::vector<int64_t>> partial(nchunks, std::vector<int64_t>(bins, 0));
    parallel_for(nchunks, 1, [&](int64_t b, int64_t e) {
      for (int64_t c = b; c < e; ++c) {
        int64_t* h = partial[c].data();
        for (int64_t i = c * chunk, end = std::min(n, (c + 1) * chunk); i < end; ++i) {
          const C v = static_cast<C>(x[i]);
          if (!(v >= left && v <= right)) continue;  // outside, or NaN
          const int64_t pos = std::min(bins - 1, static_cast<int64_t>((v - left) * C(bins) / (right - left)));
          h[pos]++;
        }
      }
    });
    T* o = out.data<T>();
    for (int64_t j = 0; j < bins; ++j) {
      int64_t s = 0;
      for (int64_t c = 0; c < nchunks; ++c) s += partial[c][j];
      o[j] = static_cast<T>(static_cast<float>(s));
    }
  });
  return out;
}

}  // namespace ember::cpu
