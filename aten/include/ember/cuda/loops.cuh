#pragma once
// The CUDA pointwise engine: the same host-and-device functor the CPU loop
// takes (ember/functors_K.h), applied over a TensorIterator on the GPU.
//
//   gpu_kernel(iter, functors::add<float>{alpha}, "add");
//
// Two kernels per (op, dtype), kThreads threads per block, one chunk of
// kThreads * W elements per block (no grid-stride loop):
// - contiguous: the output and every input contiguous along one coalesced
//   dim (or 0-d); inputs that are broadcast scalars (stride 0, e.g. `x * 2`)
//   are read once per thread. In full chunks, when every pointer is aligned
//   to its vector type, each thread loads and stores W consecutive elements
//   as one aligned vector (16 bytes for 4-byte types); the last chunk and
//   unaligned operands take the scalar loop of the same kernel (a runtime
//   flag, not a second instantiation).
// - strided: anything else, up to kMaxDims dims; element offsets come from an
//   offset calculator passed by value (32-bit multiply-shift division below
//   2^31 elements, 64-bit division from there on).
// CPU 0-d operands (Python numbers, CPU scalar tensors, which TensorIterator
// accepts beside CUDA tensors) are read on the host and passed by value.
// Launches are asynchronous, on the current stream of the iterator's device.
// The host-side planning is not a template: one copy per translation unit.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <tuple>
#include <type_traits>
#include <utility>

#include "ember/cuda/runtime.h"
#include "ember/errors.h"
#include "ember/fn_traits.h"
#include "ember/iterator.h"

namespace ember::cuda {
namespace loops {

template <typename F, size_t I> using in_t = load_t<arg_t<F, I>>;

constexpr int kThreads = 128;     // threads per block
constexpr int kStridedWork = 4;   // elements per thread, strided kernel
constexpr int kMaxDims = 8;       // strided kernel
constexpr int kMaxOperands = TensorIterator::kMaxOperands;

// Elements per thread in the contiguous kernel: 16-byte accesses for 4-byte
// types (two for 8-byte types), 16 bytes for 2-byte and 8 for 1-byte types.
template <typename F, size_t... I>
constexpr int contiguous_work(std::index_sequence<I...>) {
  return std::max({sizeof(result_t<F>), sizeof(in_t<F, I>)...}) >= 4 ? 4 : 8;
}
template <typename F>
constexpr int kContiguousWork = contiguous_work<F>(std::make_index_sequence<fn_traits<F>::arity>{});

template <typename T, int W> struct alignas(sizeof(T) * W) Vec { T v[W]; };

// A minimal tuple for device code (per-input values of different types).
template <size_t I, typename T> struct Leaf { T v; };
template <typename Seq, typename... T> struct TupImpl;
template <size_t... I, typename... T>
struct TupImpl<std::index_sequence<I...>, T...> : Leaf<I, T>... {};
template <typename... T> using Tup = TupImpl<std::index_sequence_for<T...>, T...>;
template <size_t I, typename T> __device__ __forceinline__ T& get(Leaf<I, T>& l) { return l.v; }

// Operand pointers (0 = output) plus the inputs read once per thread:
// `const_mask` bit t marks operand t as a broadcast scalar, read from
// `scalar[t]` when its `host_mask` bit is set (a CPU 0-d operand), else from
// data[t] on the device.
struct Operands {
  char* data[kMaxOperands];
  uint64_t scalar[kMaxOperands];
  uint32_t const_mask;
  uint32_t host_mask;
};

template <typename L>
__device__ __forceinline__ L load_const(const Operands& ops, int t) {
  if ((ops.host_mask >> t) & 1u) {
    uint64_t bits = ops.scalar[t];
    L v;
    memcpy(&v, &bits, sizeof(L));
    return v;
  }
  return *reinterpret_cast<const L*>(ops.data[t]);
}

// n / d for n, d in [1, 2^31) as a multiply-high, an add and a shift.
struct IntDivider {
  uint32_t divisor, magic, shift;
  void init(uint32_t d) {
    divisor = d;
    for (shift = 0; shift < 32; ++shift)
      if ((1u << shift) >= d) break;
    uint64_t one = 1;
    magic = (uint32_t)(((one << 32) * ((one << shift) - d)) / d + 1);
  }
  __device__ __forceinline__ uint32_t div(uint32_t n) const { return (__umulhi(n, magic) + n) >> shift; }
};

// Element index -> byte offset of each operand, dims fastest-first.
struct OffsetCalc {
  int ndim;
  IntDivider div[kMaxDims];       // set below 2^31 elements
  int64_t sizes[kMaxDims];
  int64_t strides[kMaxDims][kMaxOperands];  // bytes

  // The dim loops stay rolled (indexed loads from the parameter space): fully
  // unrolled over kMaxDims they made the strided kernels about twice as large
  // and a kernel shard ~25% slower to compile.
  template <int NT>
  __device__ __forceinline__ void get32(uint32_t idx, int64_t (&off)[NT]) const {
#pragma unroll
    for (int t = 0; t < NT; ++t) off[t] = 0;
#pragma unroll 1
    for (int d = 0; d < ndim; ++d) {
      uint32_t q = div[d].div(idx);
      uint32_t c = idx - q * div[d].divisor;
#pragma unroll
      for (int t = 0; t < NT; ++t) off[t] += (int64_t)c * strides[d][t];
      idx = q;
    }
  }
  // 2^31 elements or more: 64-bit division.
  template <int NT>
  __device__ __forceinline__ void get64(int64_t idx, int64_t (&off)[NT]) const {
#pragma unroll
    for (int t = 0; t < NT; ++t) off[t] = 0;
#pragma unroll 1
    for (int d = 0; d < ndim; ++d) {
      int64_t q = idx / sizes[d];
      int64_t c = idx - q * sizes[d];
#pragma unroll
      for (int t = 0; t < NT; ++t) off[t] += c * strides[d][t];
      idx = q;
    }
  }
};

// ------------------------------------------------------------ contiguous

// Input I of element i in the scalar loop: the per-thread constant or a load.
template <typename F, size_t I, typename C>
__device__ __forceinline__ arg_t<F, I> contiguous_input(C& consts, const Operands& ops, int64_t i) {
  if ((ops.const_mask >> (I + 1)) & 1u) return static_cast<arg_t<F, I>>(get<I>(consts));
  return static_cast<arg_t<F, I>>(reinterpret_cast<const in_t<F, I>*>(ops.data[I + 1])[i]);
}

template <typename F, int W, size_t I, typename C>
__device__ __forceinline__ void load_vec(Vec<in_t<F, I>, W>& v, C& consts, const Operands& ops, int64_t i0) {
  if ((ops.const_mask >> (I + 1)) & 1u) {
#pragma unroll
    for (int j = 0; j < W; ++j) v.v[j] = get<I>(consts);
  } else {
    v = *reinterpret_cast<const Vec<in_t<F, I>, W>*>(ops.data[I + 1] + i0 * (int64_t)sizeof(in_t<F, I>));
  }
}

template <typename F, size_t... I>
__device__ __forceinline__ void contiguous_body(const F& f, const Operands& ops, int64_t n, bool vectorized,
                                                std::index_sequence<I...>) {
  using R = result_t<F>;
  constexpr int W = kContiguousWork<F>;
  Tup<in_t<F, I>...> consts;
  ((((ops.const_mask >> (I + 1)) & 1u) ? (void)(get<I>(consts) = load_const<in_t<F, I>>(ops, I + 1)) : (void)0),
   ...);
  const int64_t base = (int64_t)blockIdx.x * (kThreads * W);
  R* out = reinterpret_cast<R*>(ops.data[0]);
  if (vectorized && n - base >= kThreads * W) {
    const int64_t i0 = base + (int64_t)threadIdx.x * W;
    Tup<Vec<in_t<F, I>, W>...> in;
    (load_vec<F, W, I>(get<I>(in), consts, ops, i0), ...);
    Vec<R, W> res;
#pragma unroll
    for (int j = 0; j < W; ++j) res.v[j] = f(static_cast<arg_t<F, I>>(get<I>(in).v[j])...);
    *reinterpret_cast<Vec<R, W>*>(out + i0) = res;
  } else {
    // The last chunk, or unaligned operands: element by element (kept rolled
    // to keep the kernel small; coalesced across the block).
#pragma unroll 1
    for (int j = 0; j < W; ++j) {
      const int64_t i = base + threadIdx.x + (int64_t)j * kThreads;
      if (i < n) out[i] = f(contiguous_input<F, I>(consts, ops, i)...);
    }
  }
}

template <typename F, int NT>
__global__ void __launch_bounds__(kThreads) contiguous_kernel(F f, Operands ops, int64_t n, bool vectorized) {
  contiguous_body(f, ops, n, vectorized, std::make_index_sequence<NT - 1>{});
}

// ------------------------------------------------------------ strided

template <typename F, size_t I, int W, int NT>
__device__ __forceinline__ void load_strided(Vec<in_t<F, I>, W>& v, const Operands& ops,
                                             const int64_t (&off)[W][NT], int64_t first, int64_t n) {
  using L = in_t<F, I>;
  if ((ops.const_mask >> (I + 1)) & 1u) {
    const L c = load_const<L>(ops, I + 1);
#pragma unroll
    for (int j = 0; j < W; ++j) v.v[j] = c;
  } else {
#pragma unroll
    for (int j = 0; j < W; ++j)
      if (first + j * kThreads < n) v.v[j] = *reinterpret_cast<const L*>(ops.data[I + 1] + off[j][I + 1]);
  }
}

// Offsets first, then each input's loads as a block of its own, then the
// stores: the loads of a thread's elements are in flight together, and the
// constant-or-load choice per input does not duplicate the offset arithmetic.
template <typename F, int NT, size_t... I>
__device__ __forceinline__ void strided_body(const F& f, const Operands& ops, const OffsetCalc& oc, int64_t n,
                                             std::index_sequence<I...>) {
  using R = result_t<F>;
  constexpr int W = kStridedWork;
  const int64_t first = (int64_t)blockIdx.x * (kThreads * W) + threadIdx.x;
  int64_t off[W][NT];
  if (n <= (int64_t)INT32_MAX) {
#pragma unroll
    for (int j = 0; j < W; ++j)
      if (first + j * kThreads < n) oc.get32<NT>((uint32_t)(first + j * kThreads), off[j]);
  } else {
#pragma unroll
    for (int j = 0; j < W; ++j)
      if (first + j * kThreads < n) oc.get64<NT>(first + j * kThreads, off[j]);
  }
  Tup<Vec<in_t<F, I>, W>...> in;
  (load_strided<F, I>(get<I>(in), ops, off, first, n), ...);
#pragma unroll
  for (int j = 0; j < W; ++j)
    if (first + j * kThreads < n)
      *reinterpret_cast<R*>(ops.data[0] + off[j][0]) = f(static_cast<arg_t<F, I>>(get<I>(in).v[j])...);
}

template <typename F, int NT>
__global__ void __launch_bounds__(kThreads) strided_kernel(F f, Operands ops, OffsetCalc oc, int64_t n) {
  strided_body<F, NT>(f, ops, oc, n, std::make_index_sequence<NT - 1>{});
}

// ------------------------------------------------------------ host side

// What the launch needs, worked out without templates.
struct Plan {
  Operands ops;
  OffsetCalc oc;
  int64_t n;
  unsigned blocks;
  bool contiguous;
  bool vectorized;
};

// `size[t]` is operand t's element size as loaded, `align[t]` the alignment
// its vector needs in the contiguous kernel. Returns false when there is
// nothing to do (no elements).
inline bool make_plan(const TensorIterator& iter, const char* name, int nt, const int* size, const int* align,
                      int contiguous_work, Plan& p) {
  EMBER_CHECK(iter.ntensors() == nt, Runtime, name, ": the CUDA kernel takes ", nt, " operands, the iterator has ",
              iter.ntensors());
  p.n = iter.numel();
  if (p.n == 0) return false;
  const int nd = iter.ndim();
  p.ops = Operands{};
  for (int t = 0; t < nt; ++t) p.ops.data[t] = iter.data(t);
  // Inputs with stride 0 along every dim are read once per thread; CPU 0-d
  // operands by value.
  for (int t = 1; t < nt; ++t) {
    bool bcast = true;
    for (int d = 0; d < nd; ++d) bcast = bcast && iter.strides(t)[d] == 0;
    if (iter.operand(t).device().is_cpu()) {
      EMBER_CHECK(bcast, Runtime, name, ": expected all tensors to be on the same device, but operand ", t,
                  " is on the CPU");
      std::memcpy(&p.ops.scalar[t], iter.data(t), size[t]);
      p.ops.host_mask |= 1u << t;
      p.ops.const_mask |= 1u << t;
    } else if (bcast && nd > 0) {
      p.ops.const_mask |= 1u << t;
    }
  }
  p.contiguous = nd == 0;
  if (nd == 1) {
    p.contiguous = iter.strides(0)[0] == size[0];
    for (int t = 1; t < nt; ++t)
      p.contiguous = p.contiguous && (((p.ops.const_mask >> t) & 1u) || iter.strides(t)[0] == size[t]);
  }
  p.vectorized = false;
  int64_t per_block;
  if (p.contiguous) {
    per_block = (int64_t)kThreads * contiguous_work;
    p.vectorized = true;
    for (int t = 0; t < nt; ++t)
      p.vectorized = p.vectorized && (((p.ops.const_mask >> t) & 1u) ||
                                      reinterpret_cast<uintptr_t>(p.ops.data[t]) % (uintptr_t)align[t] == 0);
  } else {
    per_block = (int64_t)kThreads * kStridedWork;
    EMBER_CHECK(nd <= kMaxDims, Runtime, name, ": the CUDA pointwise kernel supports at most ", kMaxDims,
                " dims after coalescing, got ", nd);
    p.oc.ndim = nd;
    for (int d = 0; d < nd; ++d) {
      p.oc.sizes[d] = iter.shape()[d];
      if (p.n <= (int64_t)INT32_MAX) p.oc.div[d].init((uint32_t)iter.shape()[d]);
      for (int t = 0; t < nt; ++t) p.oc.strides[d][t] = iter.strides(t)[d];
    }
  }
  const int64_t blocks = (p.n + per_block - 1) / per_block;
  EMBER_CHECK(blocks <= (int64_t)INT32_MAX, Runtime, name, ": too many elements for the CUDA pointwise kernel");
  p.blocks = (unsigned)blocks;
  return true;
}

template <typename F, size_t... I>
constexpr void operand_info(int* size, int* align, std::index_sequence<I...>) {
  constexpr int W = kContiguousWork<F>;
  size[0] = sizeof(result_t<F>);
  align[0] = alignof(Vec<result_t<F>, W>);
  ((size[I + 1] = sizeof(in_t<F, I>), align[I + 1] = alignof(Vec<in_t<F, I>, W>)), ...);
}

}  // namespace loops

template <typename F>
void gpu_kernel(TensorIterator& iter, F f, const char* name) {
  using namespace loops;
  constexpr int NT = fn_traits<F>::arity + 1;
  static_assert(NT <= kMaxOperands, "too many operands for TensorIterator");
  int size[NT], align[NT];
  operand_info<F>(size, align, std::make_index_sequence<NT - 1>{});
  Plan p;
  if (!make_plan(iter, name, NT, size, align, kContiguousWork<F>, p)) return;
  const int device = iter.device().index;
  DeviceGuard guard(device);
  cudaStream_t stream = current_cuda_stream(device);
  if (p.contiguous)
    contiguous_kernel<F, NT><<<p.blocks, kThreads, 0, stream>>>(f, p.ops, p.n, p.vectorized);
  else
    strided_kernel<F, NT><<<p.blocks, kThreads, 0, stream>>>(f, p.ops, p.oc, p.n);
  check_launch(name);
}

}  // namespace ember::cuda
