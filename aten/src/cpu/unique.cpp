// unique and unique_consecutive on the CPU.
//   - Without a dim: elements become order-preserving keys (sort_keys.h) sorted with
//     their positions by a stable LSD radix sort, parallel over pieces of the input
//     (per-piece digit histograms, then a scatter per piece); unique_consecutive keeps
//     the input order. Runs of equal keys are the groups (each NaN its own group, -0.0
//     equal to 0.0, as PyTorch's CPU unique); the output takes the first of each run.
//   - With a dim: the slices along it are rows compared lexicographically by key
//     (a stable sort of row numbers); equal rows by value form a group.
// The order is always ascending, also for sorted=False (PyTorch's CPU result is too).
#include <algorithm>
#include <array>
#include <cstdint>
#include <numeric>
#include <optional>
#include <tuple>
#include <vector>

#include "ember/errors.h"
#include "ember/ops/_unique2.h"
#include "ember/ops/contiguous.h"
#include "ember/ops/index_select.h"
#include "ember/ops/movedim.h"
#include "ember/ops/reshape.h"
#include "ember/ops/unique_consecutive.h"
#include "ember/ops/unique_dim.h"
#include "ember/parallel.h"
#include "ember/tensor.h"
#include "sort_keys.h"

namespace ember::cpu {
namespace {

using namespace sorting;

// Pieces a pass over n elements is split into: one per thread, each at least a grain.
int64_t pieces_for(int64_t n) {
  return std::max<int64_t>(1, std::min<int64_t>(get_num_threads(), n / kGrainSize));
}

// Stable LSD radix sort of keys[0, n) carrying idx (8-bit digits; a digit that is the
// same in every key is skipped). Each pass histograms the pieces in parallel, then each
// piece scatters its elements after those of the earlier pieces with the same digit.
// Returns the arrays (keys or tmp) that hold the result.
template <typename K, typename I>
std::pair<K*, I*> radix_sort_pairs(K* keys, I* idx, K* tmp_keys, I* tmp_idx, int64_t n) {
  const int64_t pieces = pieces_for(n), len = (n + pieces - 1) / pieces;
  std::vector<K> ors(pieces, K(0)), ands(pieces, K(~K(0)));
  parallel_for(pieces, 1, [&](int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p) {
      K o = 0, a = K(~K(0));
      for (int64_t i = p * len, end = std::min(n, i + len); i < end; ++i) o |= keys[i], a &= keys[i];
      ors[p] = o, ands[p] = a;
    }
  });
  K all_or = 0, all_and = K(~K(0));
  for (int64_t p = 0; p < pieces; ++p) all_or |= ors[p], all_and &= ands[p];
  const K varying = K(all_or ^ all_and);  // the bits that differ between some keys
  std::vector<std::array<int64_t, 256>> hist(pieces);
  K *sk = keys, *dk = tmp_keys;
  I *si = idx, *di = tmp_idx;
  for (int shift = 0; shift < int(sizeof(K)) * 8; shift += 8) {
    if (((varying >> shift) & 0xff) == 0) continue;
    parallel_for(pieces, 1, [&](int64_t b, int64_t e) {
      for (int64_t p = b; p < e; ++p) {
        auto& h = hist[p];
        h.fill(0);
        for (int64_t i = p * len, end = std::min(n, i + len); i < end; ++i) h[(sk[i] >> shift) & 0xff]++;
      }
    });
    int64_t sum = 0;
    for (int d = 0; d < 256; ++d)
      for (int64_t p = 0; p < pieces; ++p) {
        const int64_t c = hist[p][d];
        hist[p][d] = sum;
        sum += c;
      }
    parallel_for(pieces, 1, [&](int64_t b, int64_t e) {
      for (int64_t p = b; p < e; ++p) {
        auto& h = hist[p];
        for (int64_t i = p * len, end = std::min(n, i + len); i < end; ++i) {
          const int64_t pos = h[(sk[i] >> shift) & 0xff]++;
          dk[pos] = sk[i];
          di[pos] = si[i];
        }
      }
    });
    std::swap(sk, dk);
    std::swap(si, di);
  }
  return {sk, si};
}

struct Results {
  Tensor output, inverse, counts;
};

// Cuts positions [0, n) into runs, each beginning where starts(i) holds (starts(0) must),
// in parallel pieces: run_begin gets each run's first position (and n at the end), and
// invert(i, run) is called for each position. Returns the number of runs.
template <typename Start, typename Invert>
int64_t cut_runs(int64_t n, Start starts, std::vector<int64_t>& run_begin, Invert invert) {
  const int64_t pieces = pieces_for(n), len = (n + pieces - 1) / pieces;
  std::vector<int64_t> runs(pieces + 1, 0);
  parallel_for(pieces, 1, [&](int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p) {
      int64_t c = 0;
      for (int64_t i = p * len, end = std::min(n, i + len); i < end; ++i) c += starts(i);
      runs[p + 1] = c;
    }
  });
  std::partial_sum(runs.begin(), runs.end(), runs.begin());
  const int64_t groups = runs[pieces];
  run_begin.assign(groups + 1, n);
  parallel_for(pieces, 1, [&](int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p) {
      int64_t g = runs[p] - 1;
      for (int64_t i = p * len, end = std::min(n, i + len); i < end; ++i) {
        if (starts(i)) run_begin[++g] = i;
        invert(i, g);
      }
    }
  });
  return groups;
}

Tensor long_tensor(const DimVector& sizes, Device device) { return empty_tensor(sizes, ScalarType::Int64, device); }

Tensor counts_of(const std::vector<int64_t>& run_begin, Device device) {
  const int64_t groups = int64_t(run_begin.size()) - 1;
  Tensor counts = long_tensor({groups}, device);
  int64_t* c = counts.data<int64_t>();
  for (int64_t g = 0; g < groups; ++g) c[g] = run_begin[g + 1] - run_begin[g];
  return counts;
}

// Whether two equal keys are equal values: not for NaN (the largest key of a float type).
template <typename T>
inline bool equal_key_is_equal(key_t<T> k) {
  if constexpr (is_float_like<T>) return k != key_t<T>(~key_t<T>(0));
  return true;
}

// The results of cutting positions [0, n) into runs, position i holding x[source(i)]: the
// first element of each run, each element's run (at its source position) and the lengths.
template <typename T, typename Start, typename Source>
Results results_of_runs(const T* x, int64_t n, Start starts, Source source, const DimVector& sizes,
                        bool return_inverse, bool return_counts, ScalarType dtype, Device device) {
  std::vector<int64_t> run_begin;
  Results r;
  r.inverse = return_inverse ? long_tensor(sizes, device) : long_tensor({0}, device);
  int64_t* inv = return_inverse ? r.inverse.data<int64_t>() : nullptr;
  const int64_t groups = cut_runs(n, starts, run_begin, [&](int64_t i, int64_t g) {
    if (inv) inv[source(i)] = g;
  });
  r.output = empty_tensor({groups}, dtype, device);
  T* out = r.output.data<T>();
  parallel_for(groups, kGrainSize, [&](int64_t b, int64_t e) {
    for (int64_t g = b; g < e; ++g) out[g] = x[source(run_begin[g])];
  });
  r.counts = return_counts ? counts_of(run_begin, device) : long_tensor({0}, device);
  return r;
}

template <typename T, typename I>
Results unique_sorted(const T* x, int64_t n, const DimVector& sizes, bool return_inverse, bool return_counts,
                      ScalarType dtype, Device device) {
  using K = key_t<T>;
  std::vector<K> keys(n), tmp_keys(n);
  std::vector<I> idx(n), tmp_idx(n);
  parallel_for(n, kGrainSize, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) keys[i] = sort_key(x[i]), idx[i] = I(i);
  });
  auto [sk, si] = radix_sort_pairs(keys.data(), idx.data(), tmp_keys.data(), tmp_idx.data(), n);
  auto starts = [&](int64_t i) { return i == 0 || sk[i] != sk[i - 1] || !equal_key_is_equal<T>(sk[i]); };
  return results_of_runs(x, n, starts, [&](int64_t i) { return int64_t(si[i]); }, sizes, return_inverse,
                         return_counts, dtype, device);
}

template <typename T>
Results unique_consecutive_flat(const T* x, int64_t n, const DimVector& sizes, bool return_inverse,
                                bool return_counts, ScalarType dtype, Device device) {
  using C = opmath_t<T>;
  auto starts = [&](int64_t i) { return i == 0 || !(static_cast<C>(x[i]) == static_cast<C>(x[i - 1])); };
  return results_of_runs(x, n, starts, [](int64_t i) { return i; }, sizes, return_inverse, return_counts, dtype,
                         device);
}

// The rows of an n x m matrix, put in lexicographic order by key (stably) unless
// `keep_order`, then cut into groups of rows equal by value.
template <typename T>
std::vector<int64_t> group_rows(const T* x, int64_t n, int64_t m, bool keep_order, std::vector<int64_t>& run_begin,
                                std::vector<int64_t>& inverse) {
  using C = opmath_t<T>;
  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  if (!keep_order) {
    std::vector<key_t<T>> keys(n * m);
    for (int64_t i = 0; i < n * m; ++i) keys[i] = sort_key(x[i]);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return std::lexicographical_compare(&keys[a * m], &keys[a * m + m], &keys[b * m], &keys[b * m + m]);
    });
  }
  auto same = [&](int64_t a, int64_t b) {
    for (int64_t j = 0; j < m; ++j)
      if (!(static_cast<C>(x[a * m + j]) == static_cast<C>(x[b * m + j]))) return false;
    return true;
  };
  inverse.resize(n);
  std::vector<int64_t> first;
  cut_runs(
      n, [&](int64_t i) { return i == 0 || !same(order[i - 1], order[i]); }, run_begin,
      [&](int64_t i, int64_t g) { inverse[order[i]] = g; });
  for (size_t g = 0; g + 1 < run_begin.size(); ++g) first.push_back(order[run_begin[g]]);
  return first;
}

// unique and unique_consecutive over the slices along `dim`.
Results unique_slices(const Tensor& self, int64_t dim, bool keep_order, bool return_inverse, bool return_counts,
                      const char* op) {
  EMBER_CHECK(self.dim() > 0, Index, op, ": Dimension specified as ", dim, " but tensor has no dimensions");
  const int64_t d = wrap_dim(dim, self.dim(), op);
  const int64_t n = self.size(d);
  EMBER_CHECK(self.numel() > 0 || n == 0, Runtime, op,
              ": There are 0 sized dimensions, and they aren't selected, so unique cannot be applied");
  const Tensor rows = ember::contiguous(ember::movedim(self, IntList{d}, IntList{0}));
  const int64_t m = n == 0 ? 0 : rows.numel() / n;
  std::vector<int64_t> run_begin, inverse, first;
  visit_dtype(self.dtype(), [&]<typename T>() {
    first = group_rows<T>(rows.data<T>(), n, m, keep_order, run_begin, inverse);
  });
  const int64_t groups = int64_t(first.size());
  Tensor picked_rows = long_tensor({groups}, self.device());
  std::copy(first.begin(), first.end(), picked_rows.data<int64_t>());
  DimVector moved = rows.sizes();
  moved[0] = groups;
  const Tensor picked = ember::index_select(ember::reshape(rows, IntList{n, m}), 0, picked_rows);
  Results r;
  r.output = ember::contiguous(ember::movedim(ember::reshape(picked, moved), IntList{0}, IntList{d}));
  r.inverse = long_tensor({return_inverse ? n : 0}, self.device());
  if (return_inverse) std::copy(inverse.begin(), inverse.end(), r.inverse.data<int64_t>());
  r.counts = return_counts ? counts_of(run_begin, self.device()) : long_tensor({0}, self.device());
  return r;
}

}  // namespace

std::tuple<Tensor, Tensor, Tensor> _unique2_cpu(const Tensor& self, bool /*sorted*/, bool return_inverse,
                                                bool return_counts) {
  const Tensor input = ember::contiguous(self);
  const int64_t n = input.numel();
  Results r;
  visit_dtype(self.dtype(), [&]<typename T>() {
    if (n <= int64_t(UINT32_MAX))
      r = unique_sorted<T, uint32_t>(input.data<T>(), n, self.sizes(), return_inverse, return_counts, self.dtype(), self.device());
    else
      r = unique_sorted<T, int64_t>(input.data<T>(), n, self.sizes(), return_inverse, return_counts, self.dtype(), self.device());
  });
  return {r.output, r.inverse, r.counts};
}

std::tuple<Tensor, Tensor, Tensor> unique_dim_cpu(const Tensor& self, int64_t dim, bool /*sorted*/,
                                                  bool return_inverse, bool return_counts) {
  Results r = unique_slices(self, dim, false, return_inverse, return_counts, "unique_dim");
  return {r.output, r.inverse, r.counts};
}

std::tuple<Tensor, Tensor, Tensor> unique_consecutive_cpu(const Tensor& self, bool return_inverse, bool return_counts,
                                                          std::optional<int64_t> dim) {
  Results r;
  if (dim) {
    r = unique_slices(self, *dim, true, return_inverse, return_counts, "unique_consecutive");
  } else {
    const Tensor input = ember::contiguous(self);
    visit_dtype(self.dtype(), [&]<typename T>() {
      r = unique_consecutive_flat<T>(input.data<T>(), input.numel(), self.sizes(), return_inverse, return_counts,
                                     self.dtype(), self.device());
    });
  }
  return {r.output, r.inverse, r.counts};
}

}  // namespace ember::cpu
