// softmax and log_softmax on the CPU, computed stably (the line's max is
// subtracted before exp). float16/bfloat16 compute in float.
//   - contiguous input, reduced dim innermost: one row per line, rows in
//     parallel, loops written for `#pragma omp simd` (vector exp from libmvec);
//   - contiguous input, reduced dim outer: [outer, R, inner], whole rows of
//     `inner` elements swept together so memory is read in order;
//   - anything else: one strided line per output position.
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
#include "ember/ops.h"
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

// y may alias x (the 16-bit path works in place in a float buffer).
template <Kind K, typename C>
inline void softmax_row(const C* x, C* y, int64_t n) {
  const C m = row_max(x, n);
  C s = 0;
  if constexpr (K == Kind::Softmax) {
#pragma omp simd reduction(+ : s)
    for (int64_t i = 0; i < n; ++i) {
      C e = math::exp(x[i] - m);
      y[i] = e;
      s += e;
    }
    const C inv = C(1) / s;
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) y[i] *= inv;
  } else {
#pragma omp simd reduction(+ : s)
    for (int64_t i = 0; i < n; ++i) s += math::exp(x[i] - m);
    const C ls = math::log(s);
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - m) - ls;
  }
}

template <Kind K, typename T>
void lastdim_kernel(const T* in, T* out, int64_t rows, int64_t R) {
  using C = opmath_t<T>;
  parallel_for(rows, std::max<int64_t>(1, kGrainSize / R), [&](int64_t b, int64_t e) {
    if constexpr (std::is_same_v<T, C>) {
      for (int64_t r = b; r < e; ++r) softmax_row<K, C>(in + r * R, out + r * R, R);
    } else {
      std::unique_ptr<C[]> buf(new C[R]);
      for (int64_t r = b; r < e; ++r) {
        const T* x = in + r * R;
        T* y = out + r * R;
        for (int64_t i = 0; i < R; ++i) buf[i] = static_cast<C>(x[i]);
        softmax_row<K, C>(buf.get(), buf.get(), R);
        for (int64_t i = 0; i < R; ++i) y[i] = static_cast<T>(buf[i]);
      }
    }
  });
}

// ---------------------------------------------------------------- [outer, R, inner], inner > 1

constexpr int64_t kColumnBlock = 256;

template <Kind K, typename T>
void column_block(const T* x, T* y, int64_t R, int64_t inner, int64_t w, opmath_t<T>* __restrict mx,
                  opmath_t<T>* __restrict acc) {
  using C = opmath_t<T>;
  for (int64_t j = 0; j < w; ++j) mx[j] = static_cast<C>(x[j]);
  for (int64_t r = 1; r < R; ++r) {
    const T* __restrict xr = x + r * inner;
#pragma omp simd
    for (int64_t j = 0; j < w; ++j) {
      C v = static_cast<C>(xr[j]);
      mx[j] = v > mx[j] ? v : mx[j];
    }
  }
  for (int64_t j = 0; j < w; ++j) acc[j] = 0;
  constexpr bool store_exp = K == Kind::Softmax && std::is_same_v<T, C>;
  for (int64_t r = 0; r < R; ++r) {
    const T* __restrict xr = x + r * inner;
    T* __restrict yr = y + r * inner;
#pragma omp simd
    for (int64_t j = 0; j < w; ++j) {
      C e = math::exp(static_cast<C>(xr[j]) - mx[j]);
      if constexpr (store_exp) yr[j] = e;
      acc[j] += e;
    }
  }
  if constexpr (K == Kind::Softmax) {
    for (int64_t j = 0; j < w; ++j) acc[j] = C(1) / acc[j];
    for (int64_t r = 0; r < R; ++r) {
      const T* __restrict xr = x + r * inner;
      T* __restrict yr = y + r * inner;
      if constexpr (store_exp) {
#pragma omp simd
        for (int64_t j = 0; j < w; ++j) yr[j] *= acc[j];
      } else {
        for (int64_t j = 0; j < w; ++j)
          yr[j] = static_cast<T>(math::exp(static_cast<C>(xr[j]) - mx[j]) * acc[j]);
      }
    }
  } else {
    for (int64_t j = 0; j < w; ++j) acc[j] = math::log(acc[j]);
    for (int64_t r = 0; r < R; ++r) {
      const T* __restrict xr = x + r * inner;
      T* __restrict yr = y + r * inner;
#pragma omp simd
      for (int64_t j = 0; j < w; ++j) yr[j] = static_cast<T>((static_cast<C>(xr[j]) - mx[j]) - acc[j]);
    }
  }
}

template <Kind K, typename T>
void column_kernel(const T* in, T* out, int64_t outer, int64_t R, int64_t inner) {
  using C = opmath_t<T>;
  const int64_t n = outer * inner;
  parallel_for(n, std::max<int64_t>(1, kGrainSize / R), [&](int64_t b, int64_t e) {
    std::unique_ptr<C[]> mx(new C[kColumnBlock]), acc(new C[kColumnBlock]);
    for (int64_t o = b / inner; o * inner < e; ++o) {
      const int64_t i0 = std::max(b, o * inner) - o * inner;
      const int64_t i1 = std::min(e, (o + 1) * inner) - o * inner;
      for (int64_t j0 = i0; j0 < i1; j0 += kColumnBlock) {
        const int64_t w = std::min(kColumnBlock, i1 - j0);
        const int64_t off = o * R * inner + j0;
        column_block<K, T>(in + off, out + off, R, inner, w, mx.get(), acc.get());
      }
    }
  });
}

// ---------------------------------------------------------------- any strides

template <Kind K, typename T>
void strided_kernel(const Tensor& input, const Tensor& output, int64_t d) {
  using C = opmath_t<T>;
  const T* in = input.data<T>();
  T* out = output.data<T>();
  // The reduced dim (size R, input stride rs) and the other dims in order.
  int64_t R = 1, rs = 0, inner = 1;
  DimVector osz, ost;
  for (int64_t i = 0; i < input.dim(); ++i) {
    if (i == d) {
      R = input.size(i);
      rs = input.stride(i);
    } else {
      osz.push_back(input.size(i));
      ost.push_back(input.stride(i));
      if (i > d) inner *= input.size(i);
    }
  }
  const int64_t nlines = input.numel() / R;
  const int64_t nd = (int64_t)osz.size();
  parallel_for(nlines, std::max<int64_t>(1, kGrainSize / R), [&](int64_t b, int64_t e) {
    DimVector counter(osz.size(), 0);
    int64_t offset = 0, rem = b;
    for (int64_t k = nd - 1; k >= 0; --k) {
      counter[k] = rem % osz[k];
      rem /= osz[k];
      offset += counter[k] * ost[k];
    }
    for (int64_t l = b; l < e; ++l) {
      const T* x = in + offset;
      T* y = out + (l / inner) * R * inner + (l % inner);
      C m = -std::numeric_limits<C>::infinity();
      for (int64_t r = 0; r < R; ++r) {
        C v = static_cast<C>(x[r * rs]);
        m = v > m ? v : m;
      }
      C s = 0;
      for (int64_t r = 0; r < R; ++r) s += math::exp(static_cast<C>(x[r * rs]) - m);
      if constexpr (K == Kind::Softmax) {
        const C inv = C(1) / s;
        for (int64_t r = 0; r < R; ++r)
          y[r * inner] = static_cast<T>(math::exp(static_cast<C>(x[r * rs]) - m) * inv);
      } else {
        const C ls = math::log(s);
        for (int64_t r = 0; r < R; ++r) y[r * inner] = static_cast<T>((static_cast<C>(x[r * rs]) - m) - ls);
      }
      // Next line.
      for (int64_t k = nd - 1; k >= 0; --k) {
        offset += ost[k];
        if (++counter[k] < osz[k]) break;
        offset -= counter[k] * ost[k];
        counter[k] = 0;
      }
    }
  });
}

template <Kind K>
Tensor softmax_impl(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype, const char* op) {
  Tensor input = dtype.has_value() && *dtype != self.dtype() ? ember::to_dtype(self, *dtype, false, false) : self;
  EMBER_CHECK(is_floating(input.dtype()), Runtime, op, ": \"", op, "\" not implemented for '",
              dtype_title(input.dtype()), "'");
  const int64_t d = wrap_dim(dim, std::max<int64_t>(input.dim(), 1), op);
  Tensor output = empty_tensor(input.sizes(), input.dtype(), input.device());
  if (input.numel() == 0) return output;
  visit_dtype(input.dtype(), [&]<typename T>() {
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, Half> ||
                  std::is_same_v<T, BFloat16>) {
      if (input.dim() > 0 && input.is_contiguous()) {
        const int64_t R = input.size(d);
        int64_t inner = 1;
        for (int64_t i = d + 1; i < input.dim(); ++i) inner *= input.size(i);
        const int64_t outer = input.numel() / (R * inner);
        if (inner == 1) lastdim_kernel<K, T>(input.data<T>(), output.data<T>(), outer, R);
        else column_kernel<K, T>(input.data<T>(), output.data<T>(), outer, R, inner);
      } else {
        strided_kernel<K, T>(input, output, input.dim() == 0 ? 0 : d);
      }
    }
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
