// max.dim, min.dim, argmax, argmin on the CPU: the extreme value along a dim
// and its index. NaN is the extreme of any line that holds one (its first
// index is returned); among equal values the first index wins, as PyTorch's
// CPU kernels do.
#include <algorithm>
#include <limits>
#include <memory>
#include <mutex>
#include <tuple>
#include <type_traits>
#include <vector>

#include "ember/dtype.h"
#include "ember/errors.h"
#include "ember/ops/argmax.h"
#include "ember/ops/argmin.h"
#include "ember/ops/contiguous.h"
#include "ember/ops/max.h"
#include "ember/ops/min.h"
#include "ember/parallel.h"
#include "ember/tensor.h"

namespace ember::cpu {
namespace {

enum class Extreme { Max, Min };

// Whether `cand` replaces the current `best` (strictly better; NaN beats
// everything and the first NaN stays).
template <Extreme E, typename C>
inline bool better(C cand, C best) {
  if constexpr (std::is_floating_point_v<C>) {
    if (best != best) return false;
    if (cand != cand) return true;
  }
  if constexpr (E == Extreme::Max) return cand > best;
  else return cand < best;
}

// The best value and its index among `n` elements at `p` with stride `s`;
// `first` is the index of p[0] in the line.
template <Extreme E, typename T>
inline void scan_line(const T* p, int64_t n, int64_t s, int64_t first, opmath_t<T>& best, int64_t& bi) {
  using C = opmath_t<T>;
  for (int64_t r = 0; r < n; ++r) {
    C v = static_cast<C>(p[r * s]);
    if (better<E>(v, best)) {
      best = v;
      bi = first + r;
    }
  }
}

// Whether a contiguous line of T has the vectorised two-pass scan below.
template <typename T>
constexpr bool has_fast_scan = std::is_arithmetic_v<T> && !std::is_same_v<T, bool>;

// The first i with pred(p[i]) (n when none): blocks are tested with a
// vectorised any() before the scalar search inside the block that hits.
template <typename T, typename Pred>
inline int64_t first_index(const T* __restrict p, int64_t n, Pred pred) {
  constexpr int64_t kBlock = 64;
  int64_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    int hit = 0;
#pragma omp simd reduction(| : hit)
    for (int64_t j = 0; j < kBlock; ++j) hit |= pred(p[i + j]);
    if (hit) break;
  }
  for (; i < n; ++i)
    if (pred(p[i])) return i;
  return n;
}

// The extreme of n >= 1 contiguous elements and its first index, in two
// vectorisable passes: the extreme value (and whether a NaN is present), then
// the first position holding it.
template <Extreme E, typename T>
inline int64_t scan_contiguous(const T* __restrict p, int64_t n, T& best) {
  T m = p[0];
  int nan = 0;
  if constexpr (E == Extreme::Max) {
#pragma omp simd reduction(max : m) reduction(| : nan)
    for (int64_t i = 0; i < n; ++i) {
      m = p[i] > m ? p[i] : m;
      if constexpr (std::is_floating_point_v<T>) nan |= p[i] != p[i];
    }
  } else {
#pragma omp simd reduction(min : m) reduction(| : nan)
    for (int64_t i = 0; i < n; ++i) {
      m = p[i] < m ? p[i] : m;
      if constexpr (std::is_floating_point_v<T>) nan |= p[i] != p[i];
    }
  }
  if constexpr (std::is_floating_point_v<T>) {
    if (nan) {
      best = std::numeric_limits<T>::quiet_NaN();
      return first_index(p, n, [](T v) { return v != v; });
    }
  }
  best = m;
  return first_index(p, n, [m](T v) { return v == m; });
}

// Geometry of a reduction along one dim: the reduced dim's size and stride,
// and the remaining dims (in order) with their input strides.
struct LineGeom {
  int64_t R = 1, rstride = 0;
  DimVector osizes, ostrides;
  int64_t nlines = 1;
};

LineGeom line_geom(const Tensor& t, int64_t d) {
  LineGeom g;
  if (t.dim() == 0) return g;
  for (int64_t i = 0; i < t.dim(); ++i) {
    if (i == d) {
      g.R = t.size(i);
      g.rstride = t.stride(i);
    } else {
      g.osizes.push_back(t.size(i));
      g.ostrides.push_back(t.stride(i));
      g.nlines *= t.size(i);
    }
  }
  return g;
}

// Walks the element offsets of the lines [begin, end) in row-major order.
struct LineWalker {
  const LineGeom& g;
  DimVector counter;
  int64_t offset = 0;
  LineWalker(const LineGeom& geom, int64_t begin) : g(geom), counter(geom.osizes.size(), 0) {
    int64_t rem = begin;
    for (int64_t k = (int64_t)g.osizes.size() - 1; k >= 0; --k) {
      counter[k] = rem % g.osizes[k];
      rem /= g.osizes[k];
      offset += counter[k] * g.ostrides[k];
    }
  }
  void next() {
    for (int64_t k = (int64_t)g.osizes.size() - 1; k >= 0; --k) {
      offset += g.ostrides[k];
      if (++counter[k] < g.osizes[k]) return;
      offset -= counter[k] * g.ostrides[k];
      counter[k] = 0;
    }
  }
};

// Contiguous input seen as [outer, R, inner] with inner > 1: sweep whole rows
// of `inner` elements so memory is read in order.
template <Extreme E, typename T>
void column_sweep(const T* in, T* vals, int64_t* idx, int64_t outer, int64_t R, int64_t inner) {
  using C = opmath_t<T>;
  const int64_t n = outer * inner;
  parallel_for(n, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(R, 1)), [&](int64_t b, int64_t e) {
    // Per-thread running extremes (not std::vector: bool would pack bits).
    std::unique_ptr<C[]> best(new C[std::min(e - b, inner)]);
    for (int64_t o = b / inner; o * inner < e; ++o) {
      const int64_t i0 = std::max(b, o * inner) - o * inner;
      const int64_t i1 = std::min(e, (o + 1) * inner) - o * inner;
      const int64_t w = i1 - i0;
      const T* base = in + o * R * inner + i0;
      int64_t* ix = idx + o * inner + i0;
      for (int64_t j = 0; j < w; ++j) {
        best[j] = static_cast<C>(base[j]);
        ix[j] = 0;
      }
      for (int64_t r = 1; r < R; ++r) {
        const T* row = base + r * inner;
        for (int64_t j = 0; j < w; ++j) {
          C v = static_cast<C>(row[j]);
          if (better<E>(v, best[j])) {
            best[j] = v;
            ix[j] = r;
          }
        }
      }
      if (vals) {
        T* vo = vals + o * inner + i0;
        for (int64_t j = 0; j < w; ++j) vo[j] = static_cast<T>(best[j]);
      }
    }
  });
}

// One line per output element, any strides.
template <Extreme E, typename T>
void line_reduce(const T* in, T* vals, int64_t* idx, const LineGeom& g) {
  using C = opmath_t<T>;
  parallel_for(g.nlines, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(g.R, 1)), [&](int64_t b, int64_t e) {
    LineWalker w(g, b);
    for (int64_t l = b; l < e; ++l, w.next()) {
      const T* p = in + w.offset;
      if constexpr (has_fast_scan<T>) {
        if (g.rstride == 1) {
          T best;
          idx[l] = scan_contiguous<E, T>(p, g.R, best);
          if (vals) vals[l] = best;
          continue;
        }
      }
      C best = static_cast<C>(p[0]);
      int64_t bi = 0;
      scan_line<E, T>(p + g.rstride, g.R - 1, g.rstride, 1, best, bi);
      idx[l] = bi;
      if (vals) vals[l] = static_cast<T>(best);
    }
  });
}

// Reduces `self` along `d` (already wrapped) into contiguous outputs.
template <Extreme E>
void reduce_dim(const Tensor& self, int64_t d, const Tensor& values, const Tensor& indices) {
  visit_dtype(self.dtype(), [&]<typename T>() {
    const T* in = self.data<T>();
    T* vals = values.defined() ? values.data<T>() : nullptr;
    int64_t* idx = indices.data<int64_t>();
    if (self.dim() == 0) {
      idx[0] = 0;
      if (vals) vals[0] = in[0];
      return;
    }
    LineGeom g = line_geom(self, d);
    if (g.nlines == 0) return;
    int64_t inner = 1;
    for (int64_t i = d + 1; i < self.dim(); ++i) inner *= self.size(i);
    if (self.is_contiguous() && inner > 1) {
      column_sweep<E, T>(in, vals, idx, g.nlines / inner, g.R, inner);
    } else {
      line_reduce<E, T>(in, vals, idx, g);
    }
  });
}

DimVector reduced_sizes(const Tensor& self, int64_t d, bool keepdim) {
  DimVector out;
  for (int64_t i = 0; i < self.dim(); ++i) {
    if (i != d) out.push_back(self.size(i));
    else if (keepdim) out.push_back(1);
  }
  return out;
}

int64_t checked_dim(const Tensor& self, int64_t dim, const char* op) {
  int64_t d = wrap_dim(dim, std::max<int64_t>(self.dim(), 1), op);
  if (self.dim() > 0 && self.numel() == 0)
    EMBER_CHECK(self.size(d) != 0, Index, op, "(): Expected reduction dim ", d, " to have non-zero size.");
  return d;
}

template <Extreme E>
std::tuple<Tensor, Tensor> extreme_dim(const Tensor& self, int64_t dim, bool keepdim, const char* op) {
  int64_t d = checked_dim(self, dim, op);
  DimVector sizes = self.dim() == 0 ? DimVector{} : reduced_sizes(self, d, keepdim);
  Tensor values = empty_tensor(sizes, self.dtype(), self.device());
  Tensor indices = empty_tensor(sizes, ScalarType::Int64, self.device());
  reduce_dim<E>(self, d, values, indices);
  return {values, indices};
}

// The flat index of the extreme element of a contiguous buffer, in parallel
// chunks combined in order (so ties and NaNs still resolve to the first).
template <Extreme E, typename T>
int64_t flat_arg(const T* p, int64_t n) {
  using C = opmath_t<T>;
  struct Part { int64_t begin; C best; int64_t idx; };
  std::vector<Part> parts;
  std::mutex mu;
  parallel_for(n, kGrainSize, [&](int64_t b, int64_t e) {
    C best = static_cast<C>(p[b]);
    int64_t bi = b;
    if constexpr (has_fast_scan<T>) {
      T v;
      bi = b + scan_contiguous<E, T>(p + b, e - b, v);
      best = v;
    } else {
      scan_line<E, T>(p + b + 1, e - b - 1, 1, b + 1, best, bi);
    }
    std::lock_guard<std::mutex> lock(mu);
    parts.push_back({b, best, bi});
  });
  std::sort(parts.begin(), parts.end(), [](const Part& a, const Part& b) { return a.begin < b.begin; });
  C best = parts[0].best;
  int64_t bi = parts[0].idx;
  for (size_t i = 1; i < parts.size(); ++i)
    if (better<E>(parts[i].best, best)) {
      best = parts[i].best;
      bi = parts[i].idx;
    }
  return bi;
}

template <Extreme E>
Tensor arg_extreme(const Tensor& self, std::optional<int64_t> dim, bool keepdim, const char* op) {
  if (dim.has_value()) {
    int64_t d = checked_dim(self, *dim, op);
    DimVector sizes = self.dim() == 0 ? DimVector{} : reduced_sizes(self, d, keepdim);
    Tensor indices = empty_tensor(sizes, ScalarType::Int64, self.device());
    reduce_dim<E>(self, d, Tensor(), indices);
    return indices;
  }
  EMBER_CHECK(self.numel() != 0, Index, op,
              "(): Expected reduction dim to be specified for input.numel() == 0.");
  DimVector sizes = keepdim ? DimVector((size_t)self.dim(), 1) : DimVector{};
  Tensor indices = empty_tensor(sizes, ScalarType::Int64, self.device());
  Tensor flat = self.is_contiguous() ? self : ember::contiguous(self);
  visit_dtype(flat.dtype(), [&]<typename T>() {
    indices.data<int64_t>()[0] = flat_arg<E, T>(flat.data<T>(), flat.numel());
  });
  return indices;
}

}  // namespace

std::tuple<Tensor, Tensor> max_dim_cpu(const Tensor& self, int64_t dim, bool keepdim) {
  return extreme_dim<Extreme::Max>(self, dim, keepdim, "max");
}

std::tuple<Tensor, Tensor> min_dim_cpu(const Tensor& self, int64_t dim, bool keepdim) {
  return extreme_dim<Extreme::Min>(self, dim, keepdim, "min");
}

Tensor argmax_cpu(const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  return arg_extreme<Extreme::Max>(self, dim, keepdim, "argmax");
}

Tensor argmin_cpu(const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  return arg_extreme<Extreme::Min>(self, dim, keepdim, "argmin");
}

}  // namespace ember::cpu
