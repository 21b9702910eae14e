// sort and topk on the CPU. Elements become order-preserving unsigned keys
// (sort_keys.h), so one code path serves every dtype:
//   - sort: a stable LSD radix sort of (key, index) per line (8-bit digits, passes
//     whose digit is constant skipped), insertion sort for short lines; descending
//     inverts the keys, which keeps equal elements in their original order, as
//     PyTorch's stable sort. Lines run in parallel.
//   - topk: one pass keeping a candidate buffer of 2k + 64 that is cut back to the
//     best k (nth_element) when full; after the first cut only keys above the k-th
//     best are looked at (blocks are screened with a vectorisable max). A few long
//     lines are split across threads and the candidates merged. For a small k, each
//     line keeps its best k sorted by insertion instead (no buffer, no nth_element),
//     which is what many short rows need.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <tuple>
#include <vector>

#include "ember/errors.h"
#include "ember/ops/contiguous.h"
#include "ember/ops/sort.h"
#include "ember/ops/topk.h"
#include "ember/parallel.h"
#include "ember/tensor.h"
#include "sort_keys.h"

namespace ember::cpu {
namespace {

using namespace sorting;

using thresholds::kSortInsertionMax;
using thresholds::kTopkSmallK;
using thresholds::kTopkSplitLine;
// Elements screened together by topk before any is looked at one by one.
constexpr int64_t kScreenBlock = 64;
// small_topk screens shorter blocks: a hit sends a block element by element through the insertion.
constexpr int64_t kSmallScreenBlock = 16;


template <typename K, typename I>
void insertion_sort(K* keys, I* idx, int64_t n) {
  for (int64_t i = 1; i < n; ++i) {
    K k = keys[i];
    I v = idx[i];
    int64_t j = i - 1;
    while (j >= 0 && keys[j] > k) {
      keys[j + 1] = keys[j];
      idx[j + 1] = idx[j];
      --j;
    }
    keys[j + 1] = k;
    idx[j + 1] = v;
  }
}

// Stable LSD radix sort of keys[0, n) carrying idx; tmp_* are scratch of n each.
// Returns the array (idx or tmp_idx) that holds the sorted indices.
template <typename K, typename I>
I* radix_sort(K* keys, I* idx, K* tmp_keys, I* tmp_idx, int64_t n) {
  constexpr int kPasses = sizeof(K);
  int64_t hist[kPasses][256] = {};
  for (int64_t i = 0; i < n; ++i) {
    K k = keys[i];
    for (int p = 0; p < kPasses; ++p) hist[p][(k >> (8 * p)) & 0xff]++;
  }
  K *sk = keys, *dk = tmp_keys;
  I *si = idx, *di = tmp_idx;
  for (int p = 0; p < kPasses; ++p) {
    int64_t* h = hist[p];
    if (h[(sk[0] >> (8 * p)) & 0xff] == n) continue;  // every key has this digit
    int64_t sum = 0;
    for (int b = 0; b < 256; ++b) {
      int64_t c = h[b];
      h[b] = sum;
      sum += c;
    }
    for (int64_t i = 0; i < n; ++i) {
      K k = sk[i];
      int64_t pos = h[(k >> (8 * p)) & 0xff]++;
      dk[pos] = k;
      di[pos] = si[i];
    }
    std::swap(sk, dk);
    std::swap(si, di);
  }
  return si;
}

template <typename T, typename I>
void sort_lines(const T* x, T* values, int64_t* indices, const Lines& g, bool descending) {
  using K = key_t<T>;
  const int64_t n = g.n, inner = g.inner;
  const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(n * 4, 1));
  parallel_for(g.count(), grain, [&](int64_t b, int64_t e) {
    std::vector<K> keys(n), tmp_keys(n > kSortInsertionMax ? n : 0);
    std::vector<I> idx(n), tmp_idx(n > kSortInsertionMax ? n : 0);
    for (int64_t l = b; l < e; ++l) {
      const int64_t s = g.start(l);
      const T* xl = x + s;
      for (int64_t j = 0; j < n; ++j) {
        K k = sort_key(xl[j * inner]);
        keys[j] = descending ? K(~k) : k;
        idx[j] = I(j);
      }
      I* sorted = idx.data();
      if (n <= kSortInsertionMax) insertion_sort(keys.data(), idx.data(), n);
      else sorted = radix_sort(keys.data(), idx.data(), tmp_keys.data(), tmp_idx.data(), n);
      T* vl = values + s;
      int64_t* il = indices + s;
      for (int64_t j = 0; j < n; ++j) {
        const int64_t src = int64_t(sorted[j]);
        vl[j * inner] = xl[src * inner];
        il[j * inner] = src;
      }
    }
  });
}

template <typename K>
struct Candidate {
  K key;
  int64_t idx;
};

// The better of two candidates: larger key, then smaller index (a deterministic order).
template <typename K>
inline bool better(const Candidate<K>& a, const Candidate<K>& b) {
  return a.key > b.key || (a.key == b.key && a.idx < b.idx);
}

template <typename K>
void keep_best(std::vector<Candidate<K>>& c, int64_t k) {
  if ((int64_t)c.size() <= k) return;
  std::nth_element(c.begin(), c.begin() + (k - 1), c.end(), better<K>);
  c.resize(k);
}

// Whether any element of [b, e) beats the k-th best so far. Floats compare values (NaN beats
// any number; a vectorisable loop), other types their keys.
template <typename T>
bool any_beats(const T* x, int64_t stride, int64_t b, int64_t e, bool largest, key_t<T> threshold,
               opmath_t<T> threshold_value) {
  using K = key_t<T>;
  using C = opmath_t<T>;
  if constexpr (is_float_like<T>) {
    if (threshold_value == threshold_value) {
      auto screen = [&](auto at) {
        int hit = 0;
        if (largest) {
#pragma omp simd reduction(| : hit)
          for (int64_t j = b; j < e; ++j) {
            const C v = static_cast<C>(at(j));
            hit |= (v > threshold_value) | (v != v);
          }
        } else {
#pragma omp simd reduction(| : hit)
          for (int64_t j = b; j < e; ++j) hit |= static_cast<C>(at(j)) < threshold_value;
        }
        return hit != 0;
      };
      // Unit stride gets its own loop: x[j * stride] compiles to gathers.
      if (stride == 1) return screen([x](int64_t j) { return x[j]; });
      return screen([x, stride](int64_t j) { return x[j * stride]; });
    }
  }
  K top = 0;
  for (int64_t j = b; j < e; ++j) {
    const K key = sort_key(x[j * stride]);
    top = std::max(top, largest ? key : K(~key));
  }
  return top > threshold;
}

// Appends to `out` a superset of the best k of elements [lo, hi) of the line at x
// (stride `stride`); keys are inverted for the smallest.
template <typename T>
void collect_topk(const T* x, int64_t stride, int64_t lo, int64_t hi, int64_t k, bool largest,
                  std::vector<Candidate<key_t<T>>>& out) {
  using K = key_t<T>;
  std::vector<Candidate<K>> c;
  const size_t cap = size_t(2 * k + 64);
  c.reserve(cap);
  bool have_threshold = false;
  K threshold = 0;
  opmath_t<T> threshold_value{};
  for (int64_t b = lo; b < hi; b += kScreenBlock) {
    const int64_t e = std::min(hi, b + kScreenBlock);
    if (have_threshold && !any_beats(x, stride, b, e, largest, threshold, threshold_value)) continue;
    for (int64_t j = b; j < e; ++j) {
      K key = sort_key(x[j * stride]);
      if (!largest) key = K(~key);
      if (have_threshold && key <= threshold) continue;  // a later equal key loses the tie
      c.push_back({key, j});
      if (c.size() >= cap) {
        keep_best(c, k);
        threshold = c[k - 1].key;
        threshold_value = static_cast<opmath_t<T>>(x[c[k - 1].idx * stride]);
        have_threshold = true;
      }
    }
  }
  keep_best(c, k);
  out.insert(out.end(), c.begin(), c.end());
}

// The best k (k <= kTopkSmallK) of a line of n, kept sorted best first in best[0, k) by
// insertion: once k are held, only blocks with an element beating the k-th best (a
// vectorisable screen) are looked at one by one. Ties keep the earlier index first.
template <typename T>
void small_topk(const T* x, int64_t stride, int64_t n, int64_t k, bool largest, Candidate<key_t<T>>* best) {
  using K = key_t<T>;
  int64_t held = 0;
  opmath_t<T> threshold_value{};
  for (int64_t b = 0; b < n; b += kSmallScreenBlock) {
    const int64_t e = std::min(n, b + kSmallScreenBlock);
    if (held == k && !any_beats(x, stride, b, e, largest, best[k - 1].key, threshold_value)) continue;
    for (int64_t j = b; j < e; ++j) {
      K key = sort_key(x[j * stride]);
      if (!largest) key = K(~key);
      if (held == k && key <= best[k - 1].key) continue;
      int64_t p = held < k ? held++ : k - 1;
      for (; p > 0 && best[p - 1].key < key; --p) best[p] = best[p - 1];
      best[p] = {key, j};
      if (held == k) threshold_value = static_cast<opmath_t<T>>(x[best[k - 1].idx * stride]);
    }
  }
}

template <typename T>
void topk_lines(const T* x, T* values, int64_t* indices, const Lines& g, int64_t k, bool largest) {
  using K = key_t<T>;
  const int64_t n = g.n, inner = g.inner;
  if (k == 0) return;  // nothing to write; the small-k path would index best[k - 1]
  auto finish = [&](std::vector<Candidate<K>>& c, int64_t l) {
    keep_best(c, k);
    std::sort(c.begin(), c.end(), better<K>);
    const int64_t s = g.start(l), out_s = (l / inner) * k * inner + l % inner;
    for (int64_t j = 0; j < k; ++j) {
      values[out_s + j * inner] = x[s + c[j].idx * inner];
      indices[out_s + j * inner] = c[j].idx;
    }
  };
  const int nthreads = get_num_threads();
  if (g.count() < nthreads && n >= kTopkSplitLine && nthreads > 1 && !in_parallel_region()) {
    // Few long lines: each split into one part per thread, the parts' candidates merged.
    for (int64_t l = 0; l < g.count(); ++l) {
      std::vector<std::vector<Candidate<K>>> parts(nthreads);
      const int64_t len = (n + nthreads - 1) / nthreads;
      parallel_for(nthreads, 1, [&](int64_t b, int64_t e) {
        for (int64_t p = b; p < e; ++p)
          collect_topk(x + g.start(l), inner, std::min(n, p * len), std::min(n, (p + 1) * len), k, largest, parts[p]);
      });
      std::vector<Candidate<K>> all;
      for (auto& p : parts) all.insert(all.end(), p.begin(), p.end());
      finish(all, l);
    }
    return;
  }
  const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(n, 1));
  if (k <= kTopkSmallK) {
    parallel_for(g.count(), grain, [&](int64_t b, int64_t e) {
      Candidate<K> best[kTopkSmallK];
      for (int64_t l = b; l < e; ++l) {
        const int64_t s = g.start(l), out_s = (l / inner) * k * inner + l % inner;
        small_topk(x + s, inner, n, k, largest, best);
        for (int64_t j = 0; j < k; ++j) {
          values[out_s + j * inner] = x[s + best[j].idx * inner];
          indices[out_s + j * inner] = best[j].idx;
        }
      }
    });
    return;
  }
  parallel_for(g.count(), grain, [&](int64_t b, int64_t e) {
    std::vector<Candidate<K>> c;
    for (int64_t l = b; l < e; ++l) {
      c.clear();
      collect_topk(x + g.start(l), inner, 0, n, k, largest, c);
      finish(c, l);
    }
  });
}

}  // namespace

std::tuple<Tensor, Tensor> sort_cpu(const Tensor& self, int64_t dim, bool descending, std::optional<bool> /*stable*/) {
  // Always stable: the radix sort is, and a stable order is a valid unstable one.
  const int64_t d = wrap_dim(dim, std::max<int64_t>(self.dim(), 1), "sort");
  auto [values, indices] = empty_values_indices(self, self.sizes());
  if (self.numel() == 0) return {values, indices};
  const Tensor input = ember::contiguous(self);
  const Lines g = self.dim() == 0 ? Lines{} : lines_along(self, d);
  visit_dtype(self.dtype(), [&]<typename T>() {
    if (g.n <= int64_t(UINT32_MAX))
      sort_lines<T, uint32_t>(input.data<T>(), values.data<T>(), indices.data<int64_t>(), g, descending);
    else
      sort_lines<T, int64_t>(input.data<T>(), values.data<T>(), indices.data<int64_t>(), g, descending);
  });
  return {values, indices};
}

std::tuple<Tensor, Tensor> topk_cpu(const Tensor& self, int64_t k, int64_t dim, bool largest, bool /*sorted*/) {
  // The result is always sorted (allowed for sorted=False, whose order is unspecified).
  const int64_t d = wrap_dim(dim, std::max<int64_t>(self.dim(), 1), "topk");
  const int64_t n = self.dim() == 0 ? 1 : self.size(d);
  EMBER_CHECK(k >= 0 && k <= n, Runtime, "topk(): selected index k out of range");
  DimVector sizes = self.sizes();
  if (self.dim() > 0) sizes[d] = k;
  auto [values, indices] = empty_values_indices(self, sizes);
  if (values.numel() == 0) return {values, indices};
  const Tensor input = ember::contiguous(self);
  const Lines g = self.dim() == 0 ? Lines{} : lines_along(self, d);
  visit_dtype(self.dtype(), [&]<typename T>() {
    topk_lines<T>(input.data<T>(), values.data<T>(), indices.data<int64_t>(), g, k, largest);
  });
  return {values, indices};
}

}  // namespace ember::cpu
