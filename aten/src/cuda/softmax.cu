// softmax and log_softmax on CUDA, with the CPU kernels' semantics
// (aten/src/cpu/softmax.cpp): the dtype= cast first, float16/bfloat16
// computed in float, a contiguous result in the input's dtype.
//
// The input is made contiguous and seen as [outer, R, inner] (R: the reduced
// dim). Each line needs its max m and s = sum of exp(x - m); the last pass
// writes exp(x - m) / s or (x - m) - log(s). The kernels:
//   - inner == 1, R <= 1024: one warp per row, the row held in registers:
//     max, then sum, then write, as the CPU does;
//   - inner == 1, R > 1024: one block per row, 16-byte loads when aligned.
//     Rows up to 46 KiB are cached in shared memory (max while loading, then
//     sum and write from the cache), so global memory is read once and
//     written once. Longer rows keep a running (max, sum) pair updated online
//     in one read, then are read again (from L2) to write;
//   - inner > 1: one thread per (outer, inner) line looping along R, online,
//     so a warp's loads are consecutive inner positions (coalesced).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <type_traits>

#include "ember/cuda/runtime.h"
#include "ember/dtype.h"
#include "ember/errors.h"
#include "ember/op_support.h"
#include "ember/ops/contiguous.h"
#include "ember/ops/log_softmax.h"
#include "ember/ops/softmax.h"
#include "ember/tensor.h"

namespace ember::cuda {
namespace {

enum class Kind { Softmax, LogSoftmax };

constexpr int kWarp = 32;
constexpr int kWarpRowThreads = 128;            // 4 rows per block
// Dynamic plus static shared memory must stay within the 48 KiB a launch gets
// without opting in; the reductions' scratch takes at most 1 KiB.
constexpr int kMaxCachedRowBytes = 46 * 1024;
constexpr int64_t kMaxBlocks = 1 << 20;         // the kernels loop over the rest

__device__ __forceinline__ float dexp(float x) { return ::expf(x); }
__device__ __forceinline__ double dexp(double x) { return ::exp(x); }
__device__ __forceinline__ float dlog(float x) { return ::logf(x); }
__device__ __forceinline__ double dlog(double x) { return ::log(x); }

template <typename C>
__device__ __forceinline__ C neg_inf() {
  return -std::numeric_limits<C>::infinity();
}

// ------------------------------------------------------------ the running (max, sum) pair

// Adds v. The max ignores NaN (as the CPU's `v > m ? v : m`) but the sum takes
// it, so a NaN spoils the whole line, as on the CPU; -inf adds nothing.
template <typename C>
__device__ __forceinline__ void online_add(C& m, C& s, C v) {
  if (v > m) {
    s = s * dexp(m - v) + dexp(v - v);  // exp(v - v): NaN for v = +inf, as exp(x - max) on the CPU
    m = v;
  } else if (v != neg_inf<C>()) {
    s += dexp(v - m);
  }
}

// Merges another pair; a side already at the new max keeps its sum as is
// (this keeps NaN, and 0 for lines of -inf, without computing exp(-inf + inf)).
template <typename C>
__device__ __forceinline__ void combine(C& m, C& s, C m2, C s2) {
  const C mn = m2 > m ? m2 : m;
  s = (m == mn ? s : s * dexp(m - mn)) + (m2 == mn ? s2 : s2 * dexp(m2 - mn));
  m = mn;
}

// Butterfly: every lane ends with the same pair (combine is symmetric).
template <typename C>
__device__ __forceinline__ void warp_combine(C& m, C& s) {
#pragma unroll
  for (int o = kWarp / 2; o > 0; o >>= 1)
    combine(m, s, __shfl_xor_sync(0xffffffffu, m, o), __shfl_xor_sync(0xffffffffu, s, o));
}

template <typename C>
__device__ __forceinline__ C max_of(C a, C b) {
  return b > a ? b : a;  // a NaN is never picked, as on the CPU
}

template <typename C>
__device__ __forceinline__ C warp_max(C m) {
#pragma unroll
  for (int o = kWarp / 2; o > 0; o >>= 1) m = max_of(m, __shfl_xor_sync(0xffffffffu, m, o));
  return m;
}

template <typename C>
__device__ __forceinline__ C warp_sum(C s) {
#pragma unroll
  for (int o = kWarp / 2; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  return s;
}

// Block-wide reductions: every thread gets the result. Each ends with a
// barrier so the scratch can be reused at once.
template <typename C, typename WarpReduce>
__device__ __forceinline__ C block_reduce(C v, C identity, WarpReduce warp_reduce) {
  __shared__ C scratch[kWarp];
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp, nwarps = (blockDim.x + kWarp - 1) / kWarp;
  v = warp_reduce(v);
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = warp_reduce(lane < nwarps ? scratch[lane] : identity);
    if (lane == 0) scratch[0] = v;
  }
  __syncthreads();
  v = scratch[0];
  __syncthreads();
  return v;
}

template <typename C>
__device__ __forceinline__ void block_combine(C& m, C& s) {
  __shared__ C scratch_m[kWarp], scratch_s[kWarp];
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp, nwarps = (blockDim.x + kWarp - 1) / kWarp;
  warp_combine(m, s);
  if (lane == 0) {
    scratch_m[warp] = m;
    scratch_s[warp] = s;
  }
  __syncthreads();
  if (warp == 0) {
    m = lane < nwarps ? scratch_m[lane] : neg_inf<C>();
    s = lane < nwarps ? scratch_s[lane] : C(0);
    warp_combine(m, s);
    if (lane == 0) {
      scratch_m[0] = m;
      scratch_s[0] = s;
    }
  }
  __syncthreads();
  m = scratch_m[0];
  s = scratch_s[0];
  __syncthreads();
}

// The output element from x and the line's pair (inv_or_log: 1/sum or log(sum)).
template <Kind K, typename C>
__device__ __forceinline__ C finish(C x, C m, C inv_or_log) {
  if constexpr (K == Kind::Softmax) return dexp(x - m) * inv_or_log;
  else return (x - m) - inv_or_log;
}

template <Kind K, typename C>
__device__ __forceinline__ C line_constant(C s) {
  if constexpr (K == Kind::Softmax) return C(1) / s;
  else return dlog(s);
}

// ------------------------------------------------------------ inner == 1, short rows: a warp per row

template <Kind K, typename T, int kPerLane>
__global__ void __launch_bounds__(kWarpRowThreads)
    softmax_warp_rows(const T* __restrict__ in, T* __restrict__ out, int64_t rows, int R) {
  using C = opmath_t<T>;
  const int lane = threadIdx.x % kWarp;
  const int64_t warps_total = (int64_t)gridDim.x * (kWarpRowThreads / kWarp);
  // `row` is the same for the whole warp, so the shuffles see all 32 lanes.
  for (int64_t row = (int64_t)blockIdx.x * (kWarpRowThreads / kWarp) + threadIdx.x / kWarp; row < rows;
       row += warps_total) {
    const T* x = in + row * R;
    T* y = out + row * R;
    C v[kPerLane];
    C m = neg_inf<C>();
#pragma unroll
    for (int j = 0; j < kPerLane; ++j) {
      const int i = j * kWarp + lane;
      v[j] = i < R ? static_cast<C>(x[i]) : neg_inf<C>();
      m = max_of(m, v[j]);
    }
    m = warp_max(m);
    C s = 0;
#pragma unroll
    for (int j = 0; j < kPerLane; ++j)
      if (j * kWarp + lane < R) s += dexp(v[j] - m);
    s = warp_sum(s);
    const C c = line_constant<K>(s);
#pragma unroll
    for (int j = 0; j < kPerLane; ++j) {
      const int i = j * kWarp + lane;
      if (i < R) y[i] = static_cast<T>(finish<K>(v[j], m, c));
    }
  }
}

// ------------------------------------------------------------ inner == 1, long rows: a block per row

template <typename T>
struct alignas(16) Vec16 {
  static constexpr int kN = 16 / sizeof(T);
  T v[kN];
};

// Calls f(x) for the thread's share of a row, 16 bytes at a time when
// `vectorized`; copies what it reads into `store` when given. A thread's
// share is the same in every pass, so it only reads back what it stored.
template <typename T, typename F>
__device__ __forceinline__ void visit_row(const T* x, int64_t R, bool vectorized, T* store, F&& f) {
  using V = Vec16<T>;
  if (vectorized) {
#pragma unroll 4
    for (int64_t i = threadIdx.x; i < R / V::kN; i += blockDim.x) {
      const V a = reinterpret_cast<const V*>(x)[i];
      if (store) reinterpret_cast<V*>(store)[i] = a;
#pragma unroll
      for (int k = 0; k < V::kN; ++k) f(static_cast<opmath_t<T>>(a.v[k]));
    }
  } else {
#pragma unroll 4
    for (int64_t i = threadIdx.x; i < R; i += blockDim.x) {
      const T a = x[i];
      if (store) store[i] = a;
      f(static_cast<opmath_t<T>>(a));
    }
  }
}

// `vectorized`: R is a multiple of the vector width and both bases are 16-byte
// aligned, so every row is. `cached`: the row fits the dynamic shared memory.
template <Kind K, typename T>
__global__ void __launch_bounds__(1024) softmax_block_rows(const T* __restrict__ in, T* __restrict__ out, int64_t rows, int64_t R,
                                   bool vectorized, bool cached) {
  using C = opmath_t<T>;
  using V = Vec16<T>;
  extern __shared__ __align__(16) unsigned char row_cache_bytes[];
  T* cache = cached ? reinterpret_cast<T*>(row_cache_bytes) : nullptr;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* x = in + row * R;
    T* y = out + row * R;
    C m = neg_inf<C>(), s = 0;
    if (cached) {
      // Max while caching, then the sum from the cache: global memory is read once.
      visit_row<T>(x, R, vectorized, cache, [&](C v) { m = max_of(m, v); });
      m = block_reduce(m, neg_inf<C>(), [](C v) { return warp_max(v); });
      visit_row<T>(cache, R, vectorized, nullptr, [&](C v) { s += dexp(v - m); });
      s = block_reduce(s, C(0), [](C v) { return warp_sum(v); });
    } else {
      visit_row<T>(x, R, vectorized, nullptr, [&](C v) { online_add(m, s, v); });
      block_combine(m, s);
    }
    const C c = line_constant<K>(s);
    const T* src = cached ? cache : x;
    if (vectorized) {
#pragma unroll 4
      for (int64_t i = threadIdx.x; i < R / V::kN; i += blockDim.x) {
        const V a = reinterpret_cast<const V*>(src)[i];
        V r;
#pragma unroll
        for (int k = 0; k < V::kN; ++k) r.v[k] = static_cast<T>(finish<K>(static_cast<C>(a.v[k]), m, c));
        reinterpret_cast<V*>(y)[i] = r;
      }
    } else {
#pragma unroll 4
      for (int64_t i = threadIdx.x; i < R; i += blockDim.x)
        y[i] = static_cast<T>(finish<K>(static_cast<C>(src[i]), m, c));
    }
  }
}

// ------------------------------------------------------------ inner > 1: a thread per line

template <Kind K, typename T>
__global__ void __launch_bounds__(256)
    softmax_lanes(const T* __restrict__ in, T* __restrict__ out, int64_t outer, int64_t R, int64_t inner) {
  using C = opmath_t<T>;
  const int64_t lines = outer * inner;
  for (int64_t l = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; l < lines; l += (int64_t)gridDim.x * blockDim.x) {
    const int64_t o = l / inner, i = l - o * inner;
    const int64_t base = o * R * inner + i;
    C m = neg_inf<C>(), s = 0;
    for (int64_t r = 0; r < R; ++r) online_add(m, s, static_cast<C>(in[base + r * inner]));
    const C c = line_constant<K>(s);
    for (int64_t r = 0; r < R; ++r)
      out[base + r * inner] = static_cast<T>(finish<K>(static_cast<C>(in[base + r * inner]), m, c));
  }
}

// ------------------------------------------------------------ host side

unsigned capped_blocks(int64_t n) { return (unsigned)std::max<int64_t>(1, std::min<int64_t>(n, kMaxBlocks)); }

template <Kind K, typename T>
void launch(const T* in, T* out, int64_t outer, int64_t R, int64_t inner, cudaStream_t stream, const char* op) {
  if (inner > 1) {
    constexpr int threads = 256;
    softmax_lanes<K, T><<<capped_blocks((outer * inner + threads - 1) / threads), threads, 0, stream>>>(in, out, outer,
                                                                                                      R, inner);
  } else if (R <= 1024) {
    const int64_t rows = outer;
    const unsigned blocks = capped_blocks((rows + kWarpRowThreads / kWarp - 1) / (kWarpRowThreads / kWarp));
    const int r = (int)R;
    if (R <= 32) softmax_warp_rows<K, T, 1><<<blocks, kWarpRowThreads, 0, stream>>>(in, out, rows, r);
    else if (R <= 128) softmax_warp_rows<K, T, 4><<<blocks, kWarpRowThreads, 0, stream>>>(in, out, rows, r);
    else if (R <= 512) softmax_warp_rows<K, T, 16><<<blocks, kWarpRowThreads, 0, stream>>>(in, out, rows, r);
    else softmax_warp_rows<K, T, 32><<<blocks, kWarpRowThreads, 0, stream>>>(in, out, rows, r);
  } else {
    constexpr int kN = Vec16<T>::kN;
    const bool vectorized = R % kN == 0 && reinterpret_cast<uintptr_t>(in) % 16 == 0 &&
                            reinterpret_cast<uintptr_t>(out) % 16 == 0;
    const int64_t row_bytes = R * (int64_t)sizeof(T);
    const bool cached = row_bytes <= kMaxCachedRowBytes;
    // About four 16-byte loads per thread, 128 to 1024 threads.
    const int64_t per_thread = (int64_t)kN * 4;
    int threads = 128;
    while (threads < 1024 && (int64_t)threads * per_thread < R) threads *= 2;
    const size_t smem = cached ? (size_t)((row_bytes + 15) / 16 * 16) : 0;
    softmax_block_rows<K, T><<<capped_blocks(outer), threads, smem, stream>>>(in, out, outer, R, vectorized, cached);
  }
  check_launch(op);
}

template <Kind K>
Tensor softmax_impl(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype, const char* op) {
  SoftmaxArgs args = softmax_args(self, dim, dtype, op);
  const Tensor& output = args.output;
  const int64_t d = args.dim;
  if (args.input.numel() == 0) return output;
  const Tensor input = ember::contiguous(args.input);
  int64_t outer = 1, R = 1, inner = 1;
  for (int64_t k = 0; k < input.dim(); ++k) {
    if (k < d) outer *= input.size(k);
    else if (k == d) R = input.size(k);
    else inner *= input.size(k);
  }
  const int device = input.device().index;
  DeviceGuard guard(device);
  cudaStream_t stream = current_cuda_stream(device);
  visit_floating(input.dtype(), op, [&]<typename T>() {
    launch<K, T>(input.data<T>(), output.data<T>(), outer, R, inner, stream, op);
  });
  return output;
}

}  // namespace

Tensor softmax_cuda(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype) {
  return softmax_impl<Kind::Softmax>(self, dim, dtype, "softmax");
}

Tensor log_softmax_cuda(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype) {
  return softmax_impl<Kind::LogSoftmax>(self, dim, dtype, "log_softmax");
}

}  // namespace ember::cuda
