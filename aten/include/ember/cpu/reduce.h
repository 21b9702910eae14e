#pragma once
// The CPU reduction engine: output starts at `init`; every input element is
// combined into the output element it maps to. Reduced inner dims run as a
// horizontal reduction with many accumulators (vectorised, and accurate in
// blocks); kept inner dims accumulate whole rows vertically.
#include <vector>
#include "ember/cpu/loops.h"
#include "ember/reduce.h"

namespace ember::cpu {

template <typename T, typename C>
inline T horizontal(const T* __restrict in, int64_t n, T init, const C& combine) {
  constexpr int L = thresholds::kReduceAccumulators;
  constexpr int64_t kBlock = thresholds::kReduceBlock;
  T total = init;
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t e = std::min(n, b + kBlock);
    T acc[L];
    for (int l = 0; l < L; ++l) acc[l] = init;
    int64_t i = b;
    for (; i + L <= e; i += L) {
#pragma omp simd
      for (int l = 0; l < L; ++l) acc[l] = combine(acc[l], in[i + l]);
    }
    for (; i < e; ++i) acc[0] = combine(acc[0], in[i]);
    for (int w = L / 2; w > 0; w /= 2)
      for (int l = 0; l < w; ++l) acc[l] = combine(acc[l], acc[l + w]);
    total = combine(total, acc[0]);
  }
  return total;
}

template <typename T, typename C>
void reduce_loop(char** data, const int64_t* s, int64_t n, T init, const C& combine) {
  char* out = data[0];
  char* in = data[1];
  if (s[0] == 0) {
    T& o = *reinterpret_cast<T*>(out);
    if (s[1] == (int64_t)sizeof(T)) {
      o = combine(o, horizontal(reinterpret_cast<const T*>(in), n, init, combine));
    } else {
      T acc = o;
      for (int64_t i = 0; i < n; ++i) acc = combine(acc, *reinterpret_cast<const T*>(in + i * s[1]));
      o = acc;
    }
  } else if (s[0] == (int64_t)sizeof(T) && s[1] == (int64_t)sizeof(T)) {
    T* __restrict o = reinterpret_cast<T*>(out);
    const T* __restrict x = reinterpret_cast<const T*>(in);
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) o[i] = combine(o[i], x[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) {
      T& o = *reinterpret_cast<T*>(out + i * s[0]);
      o = combine(o, *reinterpret_cast<const T*>(in + i * s[1]));
    }
  }
}

template <typename T, typename C>
void reduce_kernel(ReduceIterator& r, T init, C combine) {
  T* out = r.output.data<T>();
  const int64_t nout = r.output.numel();
  for (int64_t i = 0; i < nout; ++i) out[i] = init;
  TensorIterator it = TensorIterator::reduction(r.output, r.input);
  auto loop = [&](char** data, const int64_t* s, int64_t n) { reduce_loop<T>(data, s, n, init, combine); };
  const int64_t numel = it.numel();
  const int threads = get_num_threads();
  if (numel < kGrainSize * 2 || threads == 1 || in_parallel_region()) {
    it.serial_for_each(loop, 0, numel);
    return;
  }
  if (nout == 1) {
    // Whole reduction: per-thread partials, combined in a fixed order.
    std::vector<T> partial(threads, init);
    parallel_for(numel, kGrainSize, [&](int64_t b, int64_t e) {
      TensorIterator local = it;
      T acc = init;
      local.set_data(0, reinterpret_cast<char*>(&acc));
      local.serial_for_each(loop, b, e);
      partial[omp_get_thread_num()] = acc;
    });
    T acc = out[0];
    for (T p : partial) acc = combine(acc, p);
    out[0] = acc;
    return;
  }
  // Split the largest kept dim across threads: each writes its own outputs.
  int split = -1;
  for (int d = 0; d < it.ndim(); ++d)
    if (it.strides(0)[d] != 0 && (split < 0 || it.shape()[d] > it.shape()[split])) split = d;
  const int64_t extent = it.shape()[split];
  parallel_for(extent, 1, [&](int64_t b, int64_t e) {
    TensorIterator local = it;
    local.restrict_dim(split, b, e - b);
    local.serial_for_each(loop, 0, local.numel());
  });
}

}  // namespace ember::cpu
