// kthvalue, median, nanmedian and mode on the CPU: per line, (key, index) pairs
// (sort_keys.h: NaN is the largest key) and nth_element for the k-th smallest, or
// a sort and a walk over runs of equal keys for mode. Lines run in parallel.
// median returns the first NaN of a line that holds one; nanmedian takes the
// lower median of the non-NaN values (a line of NaNs gives NaN).
#include <algorithm>
#include <cstdint>
#include <limits>
#include <tuple>
#include <vector>

#include "ember/errors.h"
#include "ember/ops/contiguous.h"
#include "ember/ops/kthvalue.h"
#include "ember/ops/median.h"
#include "ember/ops/mode.h"
#include "ember/ops/nanmedian.h"
#include "ember/parallel.h"
#include "ember/tensor.h"
#include "sort_keys.h"

namespace ember::cpu {
namespace {

using namespace sorting;

template <typename K>
struct Entry {
  K key;
  int64_t idx;
  bool operator<(const Entry& o) const { return key < o.key || (key == o.key && idx < o.idx); }
};

enum class Select { Kth, Median, NanMedian, Mode };

// The selected element of one line of n elements at x (stride `stride`): its index.
template <Select S, typename T>
int64_t select_line(const T* x, int64_t stride, int64_t n, int64_t k, std::vector<Entry<key_t<T>>>& buf) {
  using K = key_t<T>;
  buf.resize(n);
  int64_t nans = 0;
  for (int64_t j = 0; j < n; ++j) {
    const T v = x[j * stride];
    if constexpr (S == Select::Median || S == Select::NanMedian) {
      if (is_nan_value(v)) {
        if constexpr (S == Select::Median) return j;  // the first NaN
        ++nans;
      }
    }
    buf[j] = {sort_key(v), j};
  }
  if constexpr (S == Select::Mode) {
    std::sort(buf.begin(), buf.end());
    // The longest run (the smallest value among equally long ones), its last index.
    int64_t best_len = 0, best_idx = 0;
    for (int64_t i = 0; i < n;) {
      int64_t j = i;
      while (j + 1 < n && buf[j + 1].key == buf[i].key) ++j;
      if (j - i + 1 > best_len) {
        best_len = j - i + 1;
        best_idx = buf[j].idx;
      }
      i = j + 1;
    }
    return best_idx;
  } else {
    int64_t pos = k;
    if constexpr (S == Select::Median) pos = (n - 1) / 2;
    if constexpr (S == Select::NanMedian) pos = n - nans == 0 ? 0 : (n - nans - 1) / 2;
    std::nth_element(buf.begin(), buf.begin() + pos, buf.end());
    return buf[pos].idx;
  }
}

template <Select S, typename T>
void select_lines(const T* x, T* values, int64_t* indices, const Lines& g, int64_t k) {
  const int64_t n = g.n, inner = g.inner;
  const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(n * 4, 1));
  parallel_for(g.count(), grain, [&](int64_t b, int64_t e) {
    std::vector<Entry<key_t<T>>> buf;
    for (int64_t l = b; l < e; ++l) {
      const T* xl = x + g.start(l);
      const int64_t j = select_line<S, T>(xl, inner, n, k, buf);
      values[l] = xl[j * inner];
      indices[l] = j;
    }
  });
}

template <Select S>
std::tuple<Tensor, Tensor> select_dim(const Tensor& self, int64_t dim, bool keepdim, int64_t k, const char* op) {
  const int64_t d = wrap_dim(dim, std::max<int64_t>(self.dim(), 1), op);
  const int64_t n = self.dim() == 0 ? 1 : self.size(d);
  if constexpr (S == Select::Kth)
    EMBER_CHECK(k >= 1 && k <= n, Runtime, op, "(): selected number k out of range for dimension ", d);
  else if (self.dim() > 0 && self.numel() == 0)
    EMBER_CHECK(n != 0, Index, op, "(): Expected reduction dim ", d, " to have non-zero size.");
  DimVector sizes = reduced_shape(self, d, keepdim);
  auto [values, indices] = empty_values_indices(self, sizes);
  if (values.numel() == 0) return {values, indices};
  const Tensor input = ember::contiguous(self);
  const Lines g = self.dim() == 0 ? Lines{} : lines_along(self, d);
  visit_dtype(self.dtype(), [&]<typename T>() {
    select_lines<S, T>(input.data<T>(), values.data<T>(), indices.data<int64_t>(), g, k - 1);
  });
  return {values, indices};
}

// The lower median of all elements; an empty input gives NaN (the lowest value of an
// integral dtype), as PyTorch.
template <Select S>
Tensor median_all(const Tensor& self, const char* /*op*/) {
  Tensor value = empty_tensor({}, self.dtype(), self.device());
  if (self.numel() == 0) {
    visit_dtype(self.dtype(), [&]<typename T>() {
      if constexpr (is_float_like<T>) *value.data<T>() = static_cast<T>(std::numeric_limits<float>::quiet_NaN());
      else *value.data<T>() = std::numeric_limits<T>::lowest();
    });
    return value;
  }
  const Tensor input = ember::contiguous(self);
  Lines g;
  g.n = self.numel();
  Tensor index = empty_tensor({}, ScalarType::Int64, self.device());
  visit_dtype(self.dtype(), [&]<typename T>() {
    select_lines<S, T>(input.data<T>(), value.data<T>(), index.data<int64_t>(), g, 0);
  });
  return value;
}

}  // namespace

std::tuple<Tensor, Tensor> kthvalue_cpu(const Tensor& self, int64_t k, int64_t dim, bool keepdim) {
  return select_dim<Select::Kth>(self, dim, keepdim, k, "kthvalue");
}

Tensor median_cpu(const Tensor& self) { return median_all<Select::Median>(self, "median"); }

std::tuple<Tensor, Tensor> median_dim_cpu(const Tensor& self, int64_t dim, bool keepdim) {
  return select_dim<Select::Median>(self, dim, keepdim, 1, "median");
}

Tensor nanmedian_cpu(const Tensor& self) { return median_all<Select::NanMedian>(self, "nanmedian"); }

std::tuple<Tensor, Tensor> nanmedian_dim_cpu(const Tensor& self, int64_t dim, bool keepdim) {
  return select_dim<Select::NanMedian>(self, dim, keepdim, 1, "nanmedian");
}

std::tuple<Tensor, Tensor> mode_cpu(const Tensor& self, int64_t dim, bool keepdim) {
  return select_dim<Select::Mode>(self, dim, keepdim, 1, "mode");
}

}  // namespace ember::cpu
