// cumsum and cumprod on the CPU. The input is cast to the result dtype (`dtype=`, else int64
// for integral/bool inputs, as PyTorch) and made contiguous, so the scan runs over
// [outer, n, inner]. Sums accumulate as PyTorch's CPU acc_type does: float and
// double in double, float16/bfloat16 in float, integers in int64, so a 1e7-long
// float32 scan does not drift. Two walks:
//   - inner == 1 (the last dim): rows in parallel; a few long rows are cut into
//     segments whose sums are taken first (vectorised), then every segment is
//     scanned from its known offset, four segments interleaved per thread so
//     the adds of independent chains overlap;
//   - inner > 1: blocks of lanes side by side, one accumulator per lane.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <type_traits>
#include <vector>

#include "ember/dispatch.h"
#include "ember/dtype.h"
#include "ember/errors.h"
#include "ember/ops/contiguous.h"
#include "ember/ops/cumprod.h"
#include "ember/ops/cumsum.h"
#include "ember/parallel.h"
#include "ember/tensor.h"

namespace ember::cpu {
namespace {

template <typename T>
using scan_acc_t = std::conditional_t<
    std::is_same_v<T, float> || std::is_same_v<T, double>, double,
    std::conditional_t<std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>, float, int64_t>>;

// Segments each thread scans side by side when a few long rows are split.
constexpr int kInterleave = 4;
// Lanes scanned together when the scanned dim is not the last.
constexpr int64_t kLaneBlock = 256;

enum class Scan { Sum, Prod };

template <Scan S, typename A>
constexpr A identity() { return S == Scan::Sum ? A(0) : A(1); }

template <Scan S, typename A>
inline A combine(A a, A b) {
  if constexpr (S == Scan::Sum) return a + b;
  else return a * b;
}

template <Scan S, typename T, typename A>
void scan_row(const T* __restrict x, T* __restrict y, int64_t n, A acc) {
  for (int64_t i = 0; i < n; ++i) {
    acc = combine<S>(acc, static_cast<A>(x[i]));
    y[i] = static_cast<T>(acc);
  }
}

template <Scan S, typename T, typename A>
A segment_total(const T* __restrict x, int64_t n) {
  A s = identity<S, A>();
  if constexpr (S == Scan::Sum) {
#pragma omp simd reduction(+ : s)
    for (int64_t i = 0; i < n; ++i) s += static_cast<A>(x[i]);
  } else {
#pragma omp simd reduction(* : s)
    for (int64_t i = 0; i < n; ++i) s *= static_cast<A>(x[i]);
  }
  return s;
}

// One long row: `nseg` segments of `len` elements (the last shorter), their totals
// first, then each scanned from the total of those before it.
template <Scan S, typename T, typename A>
void scan_long_row(const T* x, T* y, int64_t n, int nthreads) {
  const int64_t nseg = int64_t(nthreads) * kInterleave;
  const int64_t len = (n + nseg - 1) / nseg;
  std::vector<A> offset(nseg + 1, identity<S, A>());
  parallel_for(nseg, 1, [&](int64_t b, int64_t e) {
    for (int64_t s = b; s < e; ++s) {
      const int64_t lo = std::min(n, s * len), hi = std::min(n, lo + len);
      offset[s + 1] = segment_total<S, T, A>(x + lo, hi - lo);
    }
  });
  for (int64_t s = 0; s < nseg; ++s) offset[s + 1] = combine<S>(offset[s], offset[s + 1]);
  const int64_t groups = nseg / kInterleave;
  parallel_for(groups, 1, [&](int64_t b, int64_t e) {
    for (int64_t g = b; g < e; ++g) {
      const int64_t s0 = g * kInterleave;
      const int64_t lo0 = std::min(n, s0 * len);
      // Only the very last segment of the row can be short: the full ones run together.
      bool full = std::min(n, (s0 + kInterleave) * len) - lo0 == kInterleave * len;
      if (full) {
        A acc[kInterleave];
        for (int k = 0; k < kInterleave; ++k) acc[k] = offset[s0 + k];
        const T* __restrict xs = x + lo0;
        T* __restrict ys = y + lo0;
        for (int64_t i = 0; i < len; ++i) {
          for (int k = 0; k < kInterleave; ++k) {
            acc[k] = combine<S>(acc[k], static_cast<A>(xs[k * len + i]));
            ys[k * len + i] = static_cast<T>(acc[k]);
          }
        }
      } else {
        for (int k = 0; k < kInterleave; ++k) {
          const int64_t lo = std::min(n, (s0 + k) * len), hi = std::min(n, lo + len);
          scan_row<S, T, A>(x + lo, y + lo, hi - lo, offset[s0 + k]);
        }
      }
    }
  });
}

template <Scan S, typename T>
void scan_kernel(const T* x, T* y, int64_t outer, int64_t n, int64_t inner) {
  using A = scan_acc_t<T>;
  const int nthreads = get_num_threads();
  if (inner == 1) {
    // Long rows that cannot keep every thread busy on their own get split.
    if (outer < nthreads && n > kGrainSize && nthreads > 1 && !in_parallel_region()) {
      for (int64_t r = 0; r < outer; ++r) scan_long_row<S, T, A>(x + r * n, y + r * n, n, nthreads);
      return;
    }
    parallel_for(outer, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(n, 1)), [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) scan_row<S, T, A>(x + r * n, y + r * n, n, identity<S, A>());
    });
    return;
  }
  const int64_t blocks = (inner + kLaneBlock - 1) / kLaneBlock;
  const int64_t work_per_block = n * std::min(inner, kLaneBlock);
  parallel_for(outer * blocks, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(work_per_block, 1)),
               [&](int64_t b, int64_t e) {
                 A acc[kLaneBlock];
                 for (int64_t t = b; t < e; ++t) {
                   const int64_t o = t / blocks, j0 = (t % blocks) * kLaneBlock;
                   const int64_t w = std::min(kLaneBlock, inner - j0);
                   for (int64_t j = 0; j < w; ++j) acc[j] = identity<S, A>();
                   const T* xo = x + o * n * inner + j0;
                   T* yo = y + o * n * inner + j0;
                   for (int64_t i = 0; i < n; ++i) {
                     const T* __restrict xr = xo + i * inner;
                     T* __restrict yr = yo + i * inner;
#pragma omp simd
                     for (int64_t j = 0; j < w; ++j) {
                       acc[j] = combine<S>(acc[j], static_cast<A>(xr[j]));
                       yr[j] = static_cast<T>(acc[j]);
                     }
                   }
                 }
               });
}

template <Scan S>
Tensor scan_impl(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype, const char* op) {
  const int64_t d = wrap_dim(dim, self.dim(), op);
  const ScalarType out_dtype = dtype ? *dtype : (is_integral(self.dtype(), true) ? ScalarType::Int64 : self.dtype());
  const Tensor input = ember::contiguous(cast_to(self, out_dtype));
  Tensor output = empty_tensor(self.sizes(), out_dtype, self.device());
  if (input.numel() == 0) return output;
  const int64_t n = self.dim() == 0 ? 1 : self.sizes()[d];
  int64_t outer = 1, inner = 1;
  for (int64_t k = 0; k < self.dim(); ++k) {
    if (k < d) outer *= self.sizes()[k];
    else if (k > d) inner *= self.sizes()[k];
  }
  visit_dtype(out_dtype, [&]<typename T>() {
    scan_kernel<S, T>(input.data<T>(), output.data<T>(), outer, n, inner);
  });
  return output;
}

}  // namespace

Tensor cumsum_cpu(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype) {
  return scan_impl<Scan::Sum>(self, dim, dtype, "cumsum");
}

Tensor cumprod_cpu(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype) {
  return scan_impl<Scan::Prod>(self, dim, dtype, "cumprod");
}

}  // namespace ember::cpu
