#pragma once
// The CUDA reduction engine: the same host-and-device combine functor the CPU
// engine takes (ember/functors_K.h), over any strides and any set of reduced
// dims.
//
//   gpu_reduce_kernel<float>(iter, T(0), functors::sum_combine{}, "sum");
//
// The planner (reduce_plan.h) coalesces the kept and the reduced dims and
// picks one of two kernels:
// - rows: the reduced index walks memory most closely; the threads of a block
//   row (threadIdx.x) stride along it (16-byte vector loads when rows are
//   contiguous and aligned), then combine by warp shuffles and shared memory;
//   threadIdx.y holds further outputs when rows are short.
// - columns: a kept dim is fastest; threadIdx.x runs along the outputs
//   (coalesced), each thread accumulating down the reduced index, which is
//   also split over threadIdx.y and combined in shared memory.
// When there are too few outputs to fill the GPU, the reduced range is also
// split over gridDim.y: each block writes a partial to a temporary buffer and
// a second launch (the same engine) combines them. Every combine happens in
// an order fixed by the launch shape, so results do not depend on timing.
//
// The engine is generic in what it accumulates: `project(value, r)` turns an
// input element at reduced index r into an accumulator (identity for plain
// reductions; value and index for max.dim/argmax), and `store(acc, offset)`
// writes a final accumulator at an output offset (elements).
#include <cuda_runtime.h>

#include <cstring>
#include <type_traits>

#include "ember/cuda/reduce_plan.h"
#include "ember/cuda/runtime.h"
#include "ember/errors.h"
#include "ember/reduce.h"

namespace ember::cuda {
namespace reduction {

// Elements of In per vector load: 16 bytes, fewer when the per-lane
// accumulators would pass 64 bytes (value-index pairs); 1 when In does not
// tile 16 bytes.
template <typename In, typename Acc>
constexpr int vec_width() {
  if (sizeof(In) > 8 || 16 % sizeof(In) != 0) return 1;
  int v = (int)(16 / sizeof(In));
  while (v > 1 && v * sizeof(Acc) > 64) v /= 2;
  return v;
}

struct Args {
  DimGroup kept, reduced;
  int64_t chunk;  // reduced indices per blockIdx.y
  int vec;        // elements per vector load (1: scalar loads)
};

struct PassThrough {
  template <typename A>
  __device__ __forceinline__ A operator()(A v, int64_t) const { return v; }
};

template <typename T>
struct StoreTo {
  T* out;
  __device__ __forceinline__ void operator()(const T& v, int64_t offset) const { out[offset] = v; }
};

// A warp shuffle of any trivially copyable value, 32 bits at a time.
template <typename T>
__device__ __forceinline__ T shfl_down(const T& v, int delta, int width) {
  constexpr int kWords = (int)((sizeof(T) + 3) / 4);
  int words[kWords] = {};
  memcpy(words, &v, sizeof(T));
#pragma unroll
  for (int w = 0; w < kWords; ++w) words[w] = __shfl_down_sync(0xffffffffu, words[w], delta, width);
  T out;
  memcpy(&out, words, sizeof(T));
  return out;
}

template <typename Acc>
__device__ __forceinline__ Acc* shared_buffer() {
  extern __shared__ __align__(16) unsigned char reduce_shared[];
  return reinterpret_cast<Acc*>(reduce_shared);
}

// A contiguous, aligned row piece [r_begin, r_begin + n) at `row`: vector
// loads, four in flight per thread, one accumulator per vector lane.
template <int V, typename In, typename Acc, typename Project, typename Combine>
__device__ __forceinline__ Acc accumulate_vectorized(const In* __restrict__ row, int64_t r_begin, int64_t n,
                                                     Acc init, const Project& project, const Combine& combine) {
  using VecT = loops::Vec<In, V>;
  const VecT* vrow = reinterpret_cast<const VecT*>(row);
  const int64_t bx = blockDim.x;
  const int64_t nvec = n / V;
  Acc acc[V];
#pragma unroll
  for (int j = 0; j < V; ++j) acc[j] = init;
  int64_t i = threadIdx.x;
  for (; i + 3 * bx < nvec; i += 4 * bx) {
    VecT v[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) v[u] = vrow[i + u * bx];
#pragma unroll
    for (int u = 0; u < 4; ++u)
#pragma unroll
      for (int j = 0; j < V; ++j) acc[j] = combine(acc[j], project(v[u].v[j], r_begin + (i + u * bx) * V + j));
  }
  for (; i < nvec; i += bx) {
    const VecT v = vrow[i];
#pragma unroll
    for (int j = 0; j < V; ++j) acc[j] = combine(acc[j], project(v.v[j], r_begin + i * V + j));
  }
  for (int64_t r = nvec * V + threadIdx.x; r < n; r += bx) acc[0] = combine(acc[0], project(row[r], r_begin + r));
#pragma unroll
  for (int w = V / 2; w > 0; w /= 2)
#pragma unroll
    for (int j = 0; j < w; ++j) acc[j] = combine(acc[j], acc[j + w]);
  return acc[0];
}

// Reduced indices r, r + step, ... below r_end, from `base`; four loads in
// flight, four accumulators. kSingle: one reduced dim (no division).
template <bool kSingle, typename In, typename Acc, typename Project, typename Combine>
__device__ __forceinline__ Acc accumulate_strided(const In* __restrict__ base, const DimGroup& red, int64_t r,
                                                  int64_t r_end, int64_t step, Acc init, const Project& project,
                                                  const Combine& combine) {
  auto at = [&](int64_t i) -> In {
    if constexpr (kSingle) return base[i * red.in_strides[0]];
    else return base[red.offset<false>(i, nullptr)];
  };
  Acc a0 = init, a1 = init, a2 = init, a3 = init;
  for (; r + 3 * step < r_end; r += 4 * step) {
    const In v0 = at(r), v1 = at(r + step), v2 = at(r + 2 * step), v3 = at(r + 3 * step);
    a0 = combine(a0, project(v0, r));
    a1 = combine(a1, project(v1, r + step));
    a2 = combine(a2, project(v2, r + 2 * step));
    a3 = combine(a3, project(v3, r + 3 * step));
  }
  for (; r < r_end; r += step) a0 = combine(a0, project(at(r), r));
  return combine(combine(a0, a1), combine(a2, a3));
}

// One block row's share of a row: vector loads when the plan allows them.
template <int V, typename In, typename Acc, typename Project, typename Combine>
__device__ __forceinline__ Acc accumulate_row(const In* __restrict__ base, const Args& args, int64_t r_begin,
                                              int64_t r_end, Acc init, const Project& project,
                                              const Combine& combine) {
  if constexpr (V > 1) {
    if (args.vec == V) return accumulate_vectorized<V>(base + r_begin, r_begin, r_end - r_begin, init, project, combine);
  }
  if (args.reduced.ndim == 1)
    return accumulate_strided<true>(base, args.reduced, r_begin + threadIdx.x, r_end, blockDim.x, init, project,
                                    combine);
  return accumulate_strided<false>(base, args.reduced, r_begin + threadIdx.x, r_end, blockDim.x, init, project,
                                   combine);
}

// Combines the blockDim.x values of each block row; thread x == 0 gets the
// result. Every thread of the block must call it (blocks are whole warps).
template <typename Acc, typename Combine>
__device__ __forceinline__ Acc combine_row(Acc acc, Acc init, const Combine& combine) {
  const int bx = blockDim.x;
  const int width = bx < 32 ? bx : 32;
  for (int off = width / 2; off > 0; off >>= 1) acc = combine(acc, shfl_down(acc, off, width));
  if (bx > 32) {
    Acc* shared = shared_buffer<Acc>();
    const int warps = bx / 32, lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    if (lane == 0) shared[threadIdx.y * warps + warp] = acc;
    __syncthreads();
    if (warp == 0) {
      acc = lane < warps ? shared[threadIdx.y * warps + lane] : init;
      for (int off = 16; off > 0; off >>= 1) acc = combine(acc, shfl_down(acc, off, 32));
    }
  }
  return acc;
}

template <typename Acc, typename Store>
__device__ __forceinline__ void finish(const Acc& acc, int64_t o, int64_t outputs, int64_t out_off, Acc* partials,
                                       const Store& store) {
  if (partials) partials[(int64_t)blockIdx.y * outputs + o] = acc;
  else store(acc, out_off);
}

template <typename In, typename Acc, typename Project, typename Combine, typename Store>
__global__ void __launch_bounds__(kMaxThreads, kMinBlocksPerSM)
    rows_kernel(const __grid_constant__ Args args, const In* __restrict__ in, Acc init, Project project,
                Combine combine, Store store, Acc* partials) {
  constexpr int V = vec_width<In, Acc>();
  const int64_t outputs = args.kept.count;
  const int64_t o = (int64_t)blockIdx.x * blockDim.y + threadIdx.y;
  const int64_t r_begin = (int64_t)blockIdx.y * args.chunk;
  const int64_t r_end = min(args.reduced.count, r_begin + args.chunk);
  Acc acc = init;
  int64_t out_off = 0;
  if (o < outputs) {
    const In* base = in + args.kept.offset<true>(o, &out_off);
    acc = accumulate_row<V>(base, args, r_begin, r_end, init, project, combine);
  }
  acc = combine_row(acc, init, combine);
  if (threadIdx.x == 0 && o < outputs) finish(acc, o, outputs, out_off, partials, store);
}

template <typename In, typename Acc, typename Project, typename Combine, typename Store>
__global__ void __launch_bounds__(kMaxThreads, kMinBlocksPerSM)
    columns_kernel(const __grid_constant__ Args args, const In* __restrict__ in, Acc init, Project project,
                   Combine combine, Store store, Acc* partials) {
  const int64_t outputs = args.kept.count;
  const int64_t o = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  const int64_t r_begin = (int64_t)blockIdx.y * args.chunk;
  const int64_t r_end = min(args.reduced.count, r_begin + args.chunk);
  Acc acc = init;
  int64_t out_off = 0;
  if (o < outputs) {
    const In* base = in + args.kept.offset<true>(o, &out_off);
    if (args.reduced.ndim == 1)
      acc = accumulate_strided<true>(base, args.reduced, r_begin + threadIdx.y, r_end, blockDim.y, init, project,
                                     combine);
    else
      acc = accumulate_strided<false>(base, args.reduced, r_begin + threadIdx.y, r_end, blockDim.y, init, project,
                                      combine);
  }
  // Tree over threadIdx.y (a power of two) in shared memory.
  Acc* shared = shared_buffer<Acc>();
  const int slot = threadIdx.y * blockDim.x + threadIdx.x;
  shared[slot] = acc;
  __syncthreads();
  for (int s = blockDim.y / 2; s > 0; s >>= 1) {
    if ((int)threadIdx.y < s) shared[slot] = combine(shared[slot], shared[slot + s * blockDim.x]);
    __syncthreads();
  }
  if (threadIdx.y == 0 && o < outputs) finish(shared[threadIdx.x], o, outputs, out_off, partials, store);
}

// Runs the reduction `g` over `in` on the current stream of `device` (whose
// guard the caller holds). With splits, a second pass over the partials.
template <typename In, typename Acc, typename Project, typename Combine, typename Store>
void run(const Geometry& g, const In* in, Acc init, Project project, Combine combine, Store store, int device,
         const char* name) {
  if (g.kept.count == 0) return;
  const Plan p = make_plan(g, in, (int)sizeof(In), (int)sizeof(Acc), vec_width<In, Acc>(), device);
  const Args args{g.kept, g.reduced, p.chunk, p.vec};
  Tensor partial_buffer;  // freed after the second launch is queued (stream-ordered reuse)
  Acc* partials = nullptr;
  if (p.splits > 1) {
    const int64_t bytes = (int64_t)p.splits * g.kept.count * (int64_t)sizeof(Acc);
    partial_buffer = empty_tensor(DimVector{bytes}, ScalarType::UInt8, Device(DeviceType::CUDA, device));
    partials = reinterpret_cast<Acc*>(partial_buffer.data_ptr());
  }
  const dim3 grid(p.grid_x, p.splits), block(p.block_x, p.block_y);
  cudaStream_t stream = current_cuda_stream(device);
  if (p.rows)
    rows_kernel<In, Acc, Project, Combine, Store>
        <<<grid, block, p.smem, stream>>>(args, in, init, project, combine, store, partials);
  else
    columns_kernel<In, Acc, Project, Combine, Store>
        <<<grid, block, p.smem, stream>>>(args, in, init, project, combine, store, partials);
  check_launch(name);
  if (partials)
    run<Acc, Acc>(partial_geometry(g, p.splits), partials, init, PassThrough{}, combine, store, device, name);
}

}  // namespace reduction

// Reduces `iter.input` into `iter.output` (both of dtype T, the compute
// dtype): every output element starts at `init` and combines the input
// elements it covers. An empty reduced range leaves `init`.
template <typename T, typename Combine>
void gpu_reduce_kernel(ReduceIterator& iter, T init, Combine combine, const char* name) {
  const Tensor& in = iter.input;
  const Tensor& out = iter.output;
  EMBER_CHECK(in.itemsize() == sizeof(T) && out.itemsize() == sizeof(T) && out.dim() == in.dim(), Runtime, name,
              ": the CUDA reduction got operands it was not instantiated for");
  EMBER_CHECK(in.device() == out.device() && in.device().is_cuda(), Runtime, name,
              ": expected input and output on the same CUDA device");
  const int device = in.device().index;
  DeviceGuard guard(device);
  const reduction::Geometry g = reduction::make_geometry(in, out.strides().data(), iter.reduced, name);
  reduction::run<T, T>(g, in.data<T>(), init, reduction::PassThrough{}, combine, reduction::StoreTo<T>{out.data<T>()},
                       device, name);
}

}  // namespace ember::cuda
