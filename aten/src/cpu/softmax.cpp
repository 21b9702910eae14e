// softmax and log_softmax on the CPU, computed stably (the line's max is
// subtracted before exp). float16/bfloat16 compute in float. Loops are written
// for `#pragma omp simd`, with glibc's vector exp (ember/math.h); lines run in
// parallel. Two walks, chosen from the strides (after merging dims):
//   - rows: the reduced dim is unit-stride (the last-dim case): max, then exp
//     stored into the output while summing, then one scaling pass;
//   - lanes: another dim is unit-stride (reducing an outer dim): a block of
//     lines side by side, every pass running across them.
// Inputs fitting neither (transposed layouts) are copied contiguous first.
// The result is contiguous, in the input's dtype (after the optional cast).
#include <algorithm>
#include <limits>
#include <memory>
#include <optional>
#include <type_traits>
#include <vector>

#include "ember/dtype.h"
#include "ember/errors.h"
#include "ember/math.h"
#include "ember/op_support.h"
#include "ember/ops/contiguous.h"
#include "ember/ops/log_softmax.h"
#include "ember/ops/softmax.h"
#include "ember/parallel.h"
#include "ember/tensor.h"

namespace ember::cpu {
namespace {

enum class Kind { Softmax, LogSoftmax };

// ---------------------------------------------------------------- rows (x, y contiguous, C = compute type)

template <typename C>
inline C row_max(const C* __restrict x, int64_t n) {
  C m = -std::numeric_limits<C>::infinity();
#pragma omp simd reduction(max : m)
  for (int64_t i = 0; i < n; ++i) m = x[i] > m ? x[i] : m;
  return m;
}

// The sum of exp(x[i] - m), pairwise over blocks so that its error does not
// grow with n; with Store, each exp is kept in y too.
template <bool Store, typename C>
C exp_sum(const C* x, C* y, int64_t n, C m) {
  if (n > thresholds::kReduceBlock) {
    const int64_t half = thresholds::pairwise_split(n);
    const C left = exp_sum<Store>(x, y, half, m);  // first: memory is walked forward
    return left + exp_sum<Store>(x + half, Store ? y + half : y, n - half, m);
  }
  C s = 0;
#pragma omp simd reduction(+ : s)
  for (int64_t i = 0; i < n; ++i) {
    C e = math::exp(x[i] - m);
    if constexpr (Store) y[i] = e;
    s += e;
  }
  return s;
}

// y may alias x (the 16-bit path works in place in a float buffer).
template <Kind K, typename C>
inline void softmax_row(const C* x, C* y, int64_t n) {
  const C m = row_max(x, n);
  if constexpr (K == Kind::Softmax) {
    const C inv = C(1) / exp_sum<true>(x, y, n, m);
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) y[i] *= inv;
  } else {
    const C ls = math::log(exp_sum<false, C>(x, nullptr, n, m));
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - m) - ls;
  }
}

// One dim of the iteration space other than the reduced one: its size and
// its strides (in elements) in the input and in the contiguous output.
struct IterDim {
  int64_t size, xs, ys;
};

// Dims on one side of the reduced dim, size-1 dims dropped and neighbours
// that are contiguous with each other (in input and output) merged.
std::vector<IterDim> coalesce(std::vector<IterDim> dims) {
  std::vector<IterDim> out;
  for (const IterDim& d : dims) {
    if (d.size == 1) continue;
    if (!out.empty() && out.back().xs == d.xs * d.size && out.back().ys == d.ys * d.size) {
      out.back() = {out.back().size * d.size, d.xs, d.ys};
    } else {
      out.push_back(d);
    }
  }
  return out;
}

// Input and output offsets of position `q` of a row-major walk over `dims`.
inline void offsets_of(const std::vector<IterDim>& dims, int64_t q, int64_t& xo, int64_t& yo) {
  xo = yo = 0;
  for (int64_t k = (int64_t)dims.size() - 1; k >= 0; --k) {
    const int64_t c = q % dims[k].size;
    q /= dims[k].size;
    xo += c * dims[k].xs;
    yo += c * dims[k].ys;
  }
}

// ---------------------------------------------------------------- rows: one line at a time

// Each line is R elements at input stride xrs and output stride yrs. Unit-stride
// lines of float/double are computed in place; others are gathered into a
// buffer in the compute type, computed there, and scattered back.
template <Kind K, typename T>
void rows_kernel(const T* in, T* out, int64_t R, int64_t xrs, int64_t yrs, const std::vector<IterDim>& lines) {
  using C = opmath_t<T>;
  int64_t nlines = 1;
  for (const IterDim& d : lines) nlines *= d.size;
  const bool direct = std::is_same_v<T, C> && xrs == 1 && yrs == 1;
  parallel_for(nlines, std::max<int64_t>(1, kGrainSize / R), [&](int64_t b, int64_t e) {
    std::unique_ptr<C[]> buf(direct ? nullptr : new C[R]);
    for (int64_t l = b; l < e; ++l) {
      int64_t xo, yo;
      offsets_of(lines, l, xo, yo);
      const T* x = in + xo;
      T* y = out + yo;
      if constexpr (std::is_same_v<T, C>) {
        if (direct) {
          softmax_row<K, C>(x, y, R);
          continue;
        }
      }
      for (int64_t i = 0; i < R; ++i) buf[i] = static_cast<C>(x[i * xrs]);
      softmax_row<K, C>(buf.get(), buf.get(), R);
      for (int64_t i = 0; i < R; ++i) y[i * yrs] = static_cast<T>(buf[i]);
    }
  });
}

// ---------------------------------------------------------------- lanes: a block of lines at once

constexpr int64_t kLaneBlock = 256;
// Rows summed one after another before pairwise halving takes over, and the
// most halvings any line can need (buffers of kLaneBlock lanes each).
constexpr int64_t kLaneRun = 64;
constexpr int kLaneLevels = 64;

// acc[j] = sum over rows [r0, r1) of what add_row(r, acc) adds to lane j,
// pairwise over row ranges; `scratch` holds a buffer of w lanes per level.
template <typename C, typename AddRow>
void pairwise_rows(int64_t r0, int64_t r1, int64_t w, C* __restrict acc, C* scratch, const AddRow& add_row) {
  if (r1 - r0 <= kLaneRun) {
    for (int64_t j = 0; j < w; ++j) acc[j] = 0;
    for (int64_t r = r0; r < r1; ++r) add_row(r, acc);
    return;
  }
  const int64_t mid = r0 + (r1 - r0) / 2;
  pairwise_rows(r0, mid, w, acc, scratch + w, add_row);
  C* __restrict other = scratch;
  pairwise_rows(mid, r1, w, other, scratch + w, add_row);
#pragma omp simd
  for (int64_t j = 0; j < w; ++j) acc[j] += other[j];
}

// `w` lines side by side: line j starts at x + j (input lanes are unit-stride)
// and y + j * yls; along a line, elements are xrs / yrs apart. Every pass runs
// across the lanes, so loads are contiguous and exp vectorises.
template <Kind K, typename T, bool YUnit>
void lane_block(const T* x, T* y, int64_t R, int64_t xrs, int64_t yrs, int64_t yls_in, int64_t w,
                opmath_t<T>* __restrict mx, opmath_t<T>* __restrict acc, opmath_t<T>* scratch) {
  using C = opmath_t<T>;
  const int64_t yls = YUnit ? 1 : yls_in;
  for (int64_t j = 0; j < w; ++j) mx[j] = static_cast<C>(x[j]);
  for (int64_t r = 1; r < R; ++r) {
    const T* __restrict xr = x + r * xrs;
#pragma omp simd
    for (int64_t j = 0; j < w; ++j) {
      C v = static_cast<C>(xr[j]);
      mx[j] = v > mx[j] ? v : mx[j];
    }
  }
  // Softmax of float/double into a unit-stride output: keep exp in the output.
  constexpr bool store_exp = K == Kind::Softmax && std::is_same_v<T, C> && YUnit;
  pairwise_rows<C>(0, R, w, acc, scratch, [&](int64_t r, C* __restrict sum) {
    const T* __restrict xr = x + r * xrs;
    T* __restrict yr = y + r * yrs;
#pragma omp simd
    for (int64_t j = 0; j < w; ++j) {
      C e = math::exp(static_cast<C>(xr[j]) - mx[j]);
      if constexpr (store_exp) yr[j] = e;
      sum[j] += e;
    }
  });
  if constexpr (K == Kind::Softmax) {
#pragma omp simd
    for (int64_t j = 0; j < w; ++j) acc[j] = C(1) / acc[j];
    for (int64_t r = 0; r < R; ++r) {
      const T* __restrict xr = x + r * xrs;
      T* __restrict yr = y + r * yrs;
      if constexpr (store_exp) {
#pragma omp simd
        for (int64_t j = 0; j < w; ++j) yr[j] *= acc[j];
      } else {
#pragma omp simd
        for (int64_t j = 0; j < w; ++j)
          yr[j * yls] = static_cast<T>(math::exp(static_cast<C>(xr[j]) - mx[j]) * acc[j]);
      }
    }
  } else {
#pragma omp simd
    for (int64_t j = 0; j < w; ++j) acc[j] = math::log(acc[j]);
    for (int64_t r = 0; r < R; ++r) {
      const T* __restrict xr = x + r * xrs;
      T* __restrict yr = y + r * yrs;
#pragma omp simd
      for (int64_t j = 0; j < w; ++j) yr[j * yls] = static_cast<T>((static_cast<C>(xr[j]) - mx[j]) - acc[j]);
    }
  }
}

// Lines along `lane` (input stride 1) processed in blocks; `rest` are the other dims.
template <Kind K, typename T>
void lanes_kernel(const T* in, T* out, int64_t R, int64_t xrs, int64_t yrs, const IterDim& lane,
                  const std::vector<IterDim>& rest) {
  using C = opmath_t<T>;
  int64_t nrest = 1;
  for (const IterDim& d : rest) nrest *= d.size;
  const int64_t L = lane.size;
  parallel_for(nrest * L, std::max<int64_t>(1, kGrainSize / R), [&](int64_t b, int64_t e) {
    std::unique_ptr<C[]> mx(new C[kLaneBlock]), acc(new C[kLaneBlock]), scratch(new C[kLaneBlock * kLaneLevels]);
    for (int64_t q = b / L; q * L < e; ++q) {
      int64_t xo, yo;
      offsets_of(rest, q, xo, yo);
      const int64_t j0 = std::max(b, q * L) - q * L, j1 = std::min(e, (q + 1) * L) - q * L;
      for (int64_t j = j0; j < j1; j += kLaneBlock) {
        const int64_t w = std::min(kLaneBlock, j1 - j);
        const T* x = in + xo + j;
        T* y = out + yo + j * lane.ys;
        if (lane.ys == 1) lane_block<K, T, true>(x, y, R, xrs, yrs, 1, w, mx.get(), acc.get(), scratch.get());
        else lane_block<K, T, false>(x, y, R, xrs, yrs, lane.ys, w, mx.get(), acc.get(), scratch.get());
      }
    }
  });
}

// Picks the walk. Rows when the reduced dim is unit-stride in input and
// output; lanes when another dim is unit-stride in both (reads and writes
// stay contiguous across lines). Returns false when neither fits (a
// transposed layout): the caller then copies the input contiguous, since a
// blocked transposing copy beats strided exp passes by a wide margin.
template <Kind K, typename T>
bool softmax_kernel(const Tensor& input, const Tensor& output, int64_t d, bool any_layout) {
  const T* in = input.data<T>();
  T* out = output.data<T>();
  if (input.dim() == 0) {
    rows_kernel<K, T>(in, out, 1, 1, 1, {});
    return true;
  }
  const DimVector ocs = contiguous_strides(input.sizes());
  const int64_t R = input.size(d);
  const int64_t xrs = R == 1 ? 1 : input.stride(d), yrs = R == 1 ? 1 : ocs[d];
  std::vector<IterDim> before, after;
  for (int64_t i = 0; i < input.dim(); ++i) {
    if (i == d) continue;
    (i < d ? before : after).push_back({input.size(i), input.stride(i), ocs[i]});
  }
  std::vector<IterDim> dims = coalesce(before);
  for (const IterDim& a : coalesce(after)) dims.push_back(a);
  if (xrs == 1 && yrs == 1) {
    rows_kernel<K, T>(in, out, R, xrs, yrs, dims);
    return true;
  }
  for (int64_t k = (int64_t)dims.size() - 1; k >= 0; --k) {
    if (dims[k].xs == 1 && dims[k].ys == 1) {
      const IterDim lane = dims[k];
      dims.erase(dims.begin() + k);
      lanes_kernel<K, T>(in, out, R, xrs, yrs, lane, dims);
      return true;
    }
  }
  if (!any_layout) return false;
  rows_kernel<K, T>(in, out, R, xrs, yrs, dims);  // gather / scatter through a buffer
  return true;
}

template <Kind K>
Tensor softmax_impl(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype, const char* op) {
  SoftmaxArgs args = softmax_args(self, dim, dtype, op);
  const Tensor& input = args.input;
  const Tensor& output = args.output;
  const int64_t d = args.dim;
  if (input.numel() == 0) return output;
  visit_floating(input.dtype(), op, [&]<typename T>() {
    if (!softmax_kernel<K, T>(input, output, d, false)) softmax_kernel<K, T>(ember::contiguous(input), output, d, true);
  });
  return output;
}

}  // namespace

Tensor softmax_cpu(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype) {
  return softmax_impl<Kind::Softmax>(self, dim, dtype, "softmax");
}

Tensor log_softmax_cpu(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype) {
  return softmax_impl<Kind::LogSoftmax>(self, dim, dtype, "log_softmax");
}

}  // namespace ember::cpu
