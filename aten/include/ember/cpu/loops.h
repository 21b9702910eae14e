#pragma once
// The CPU pointwise engine: a functor, written once per op by the generator,
// applied over a TensorIterator. Contiguous operands get a loop the compiler
// vectorises; transposed 2-D operands are walked in cache blocks.
#include <tuple>
#include <type_traits>
#include <utility>
#include "ember/fn_traits.h"
#include "ember/iterator.h"
#include "ember/parallel.h"

namespace ember::cpu {

template <typename F, size_t... I>
inline void strided_loop(char** data, const int64_t* s, int64_t n, const F& f, std::index_sequence<I...>) {
  using R = typename fn_traits<F>::result;
  for (int64_t i = 0; i < n; ++i)
    *reinterpret_cast<R*>(data[0] + i * s[0]) = f(*reinterpret_cast<arg_t<F, I>*>(data[I + 1] + i * s[I + 1])...);
}

template <typename F, size_t... I>
inline void contiguous_loop(char** data, int64_t n, const F& f, std::index_sequence<I...>) {
  using R = typename fn_traits<F>::result;
  R* __restrict out = reinterpret_cast<R*>(data[0]);
  std::tuple<const load_t<arg_t<F, I>>* __restrict...> in{
      reinterpret_cast<const load_t<arg_t<F, I>>*>(data[I + 1])...};
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) out[i] = f(static_cast<arg_t<F, I>>(std::get<I>(in)[i])...);
}

template <size_t I, size_t S, typename T, typename L, typename V>
inline T element(const L* __restrict p, const V& scalar, int64_t i) {
  if constexpr (I == S) return scalar;
  else return static_cast<T>(p[i]);
}

// Input S broadcast as a scalar (stride 0), the others contiguous: hoist its load.
template <size_t S, typename F, size_t... I>
inline void one_scalar_loop(char** data, int64_t n, const F& f, std::index_sequence<I...>) {
  using R = typename fn_traits<F>::result;
  R* __restrict out = reinterpret_cast<R*>(data[0]);
  const arg_t<F, S> scalar = *reinterpret_cast<const arg_t<F, S>*>(data[S + 1]);
  std::tuple<const load_t<arg_t<F, I>>* __restrict...> in{
      reinterpret_cast<const load_t<arg_t<F, I>>*>(data[I + 1])...};
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) out[i] = f(element<I, S, arg_t<F, I>>(std::get<I>(in), scalar, i)...);
}

template <typename F>
struct InnerLoop {
  F f;
  static constexpr size_t N = fn_traits<F>::arity;
  using Seq = std::make_index_sequence<N>;
  template <size_t... I>
  static bool contiguous(const int64_t* s, std::index_sequence<I...>) {
    return s[0] == sizeof(typename fn_traits<F>::result) && ((s[I + 1] == sizeof(arg_t<F, I>)) && ...);
  }
  // Contiguous output and inputs except input S, which is a broadcast scalar.
  template <size_t S, size_t... I>
  static bool contiguous_but(const int64_t* s, std::index_sequence<I...>) {
    return s[0] == sizeof(typename fn_traits<F>::result) &&
           ((s[I + 1] == (I == S ? 0 : (int64_t)sizeof(arg_t<F, I>))) && ...);
  }
  template <size_t... S>
  bool try_one_scalar(char** data, const int64_t* s, int64_t n, std::index_sequence<S...>) const {
    return ((contiguous_but<S>(s, Seq{}) && (one_scalar_loop<S>(data, n, f, Seq{}), true)) || ...);
  }
  void operator()(char** data, const int64_t* s, int64_t n) const {
    if (contiguous(s, Seq{})) return contiguous_loop(data, n, f, Seq{});
    if constexpr (N >= 2) {
      if (try_one_scalar(data, s, n, Seq{})) return;
    }
    strided_loop(data, s, n, f, Seq{});
  }
};

// True when some input walks memory across dim 1 faster than along dim 0,
// i.e. it is transposed relative to the output: then block the 2-D walk.
inline bool wants_blocking(const TensorIterator& it) {
  if (it.ndim() != 2 || it.shape()[0] < 64 || it.shape()[1] < 64) return false;
  for (int t = 1; t < it.ntensors(); ++t) {
    int64_t s0 = it.strides(t)[0], s1 = it.strides(t)[1];
    if (s1 != 0 && (s0 == 0 ? false : std::abs(s0) > std::abs(s1))) return true;
  }
  return false;
}

template <typename Loop>
void blocked_2d(const TensorIterator& it, const Loop& loop) {
  constexpr int64_t B0 = 64, B1 = 64;
  const int64_t n0 = it.shape()[0], n1 = it.shape()[1];
  const int nt = it.ntensors();
  int64_t blocks1 = (n1 + B1 - 1) / B1;
  parallel_for(blocks1, 1, [&](int64_t bb, int64_t be) {
    char* p[TensorIterator::kMaxOperands];
    int64_t s0[TensorIterator::kMaxOperands];
    for (int t = 0; t < nt; ++t) s0[t] = it.strides(t)[0];
    for (int64_t b1 = bb; b1 < be; ++b1) {
      int64_t j1 = std::min(n1, (b1 + 1) * B1);
      for (int64_t i0 = 0; i0 < n0; i0 += B0) {
        int64_t len = std::min(B0, n0 - i0);
        for (int64_t j = b1 * B1; j < j1; ++j) {
          for (int t = 0; t < nt; ++t) p[t] = it.data(t) + i0 * s0[t] + j * it.strides(t)[1];
          loop(p, s0, len);
        }
      }
    }
  });
}

template <typename F>
void cpu_kernel(TensorIterator& it, F f) {
  InnerLoop<F> loop{f};
  if (it.numel() == 0) return;
  if (wants_blocking(it)) return blocked_2d(it, loop);
  parallel_for(it.numel(), kGrainSize, [&](int64_t b, int64_t e) { it.serial_for_each(loop, b, e); });
}

}  // namespace ember::cpu
