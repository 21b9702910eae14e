// mm, bmm and dot on CUDA. A product goes to cuBLAS when it loaded at run
// time (cublas_loader.cpp) and is not switched off, else to ember's tiled
// kernel below, which reads any strides and is correct on any size. dot is a
// two-pass reduction. The argument checks are the CPU's (ember/linalg_checks.h).
#include <algorithm>
#include <climits>
#include <type_traits>

#include "cublas_loader.h"
#include "ember/blas_layout.h"
#include "ember/cuda/runtime.h"
#include "ember/dtype.h"
#include "ember/half.h"
#include "ember/linalg_checks.h"
#include "ember/ops/bmm.h"
#include "ember/ops/dot.h"
#include "ember/ops/mm.h"
#include "ember/tensor.h"

namespace ember::cuda {
namespace {

// Half types accumulate in float, float64 in double.
template <typename T> struct AccumulateOf { using type = float; };
template <> struct AccumulateOf<double> { using type = double; };
template <typename T> using acc_t = typename AccumulateOf<T>::type;

// ---------------------------------------------------------------- tiled GEMM
// A block computes a BM x BN tile of C, walking K in steps of BK through two
// shared-memory buffers; each thread keeps a TM x TN sub-tile in registers.
template <int BM_, int BN_, int BK_, int TM_, int TN_>
struct Tiling {
  static constexpr int BM = BM_, BN = BN_, BK = BK_, TM = TM_, TN = TN_;
  static constexpr int kThreads = (BM / TM) * (BN / TN);
  static_assert(BM * BK % kThreads == 0 && BK * BN % kThreads == 0, "tiles must split evenly over the threads");
};
using LargeTiles = Tiling<128, 128, 8, 8, 8>;  // 256 threads, 64 outputs each
using SmallTiles = Tiling<64, 64, 8, 4, 4>;    // 256 threads, 16 outputs each: more blocks, fewer registers
// Below this many outputs the large tiles would leave SMs idle.
constexpr int64_t kLargeTileOutputs = int64_t(128 * 128) * 256;
constexpr int64_t kMaxGridZ = 65535;

// Element (i, j) of batch b lies at ptr[b * batch + i * row + j * col].
template <typename T>
struct Operand {
  const T* ptr;
  int64_t batch, row, col;
};

template <typename T>
struct TiledGemm {
  Operand<T> a, b;  // a: m x k, b: k x n
  T* c;             // batch x m x n, contiguous
  int64_t m, n, k, tiles_n;
  // The index consecutive threads follow when loading a tile (the operand's
  // smaller stride), so that global loads coalesce whatever the layout.
  bool a_k_fastest, b_n_fastest;
};

// Reads N consecutive shared-memory values (16-byte aligned) as vectors.
template <int N, typename Acc>
__device__ __forceinline__ void load_fragment(const Acc* src, Acc (&dst)[N]) {
  if constexpr (std::is_same_v<Acc, float> && N % 4 == 0) {
#pragma unroll
    for (int i = 0; i < N; i += 4) {
      const float4 v = *reinterpret_cast<const float4*>(src + i);
      dst[i] = v.x, dst[i + 1] = v.y, dst[i + 2] = v.z, dst[i + 3] = v.w;
    }
  } else if constexpr (std::is_same_v<Acc, double> && N % 2 == 0) {
#pragma unroll
    for (int i = 0; i < N; i += 2) {
      const double2 v = *reinterpret_cast<const double2*>(src + i);
      dst[i] = v.x, dst[i + 1] = v.y;
    }
  } else {
#pragma unroll
    for (int i = 0; i < N; ++i) dst[i] = src[i];
  }
}

template <typename T, typename Acc, typename S>
__global__ void __launch_bounds__(S::kThreads) tiled_gemm_kernel(TiledGemm<T> p, int64_t first_batch) {
  constexpr int BM = S::BM, BN = S::BN, BK = S::BK, TM = S::TM, TN = S::TN;
  constexpr int kLoadsA = BM * BK / S::kThreads, kLoadsB = BK * BN / S::kThreads;
  // 4 extra columns keep the transposed tile stores free of bank conflicts
  // and the rows 16-byte aligned for load_fragment.
  constexpr int kPad = 4;
  __shared__ __align__(16) Acc a_tile[2][BK][BM + kPad];  // a_tile[.][kk][i] = A(row0 + i, k0 + kk)
  __shared__ __align__(16) Acc b_tile[2][BK][BN + kPad];  // b_tile[.][kk][j] = B(k0 + kk, col0 + j)

  const int64_t batch = first_batch + blockIdx.z;
  const int64_t row0 = (int64_t)(blockIdx.x / p.tiles_n) * BM;
  const int64_t col0 = (int64_t)(blockIdx.x % p.tiles_n) * BN;
  const T* a = p.a.ptr + batch * p.a.batch;
  const T* b = p.b.ptr + batch * p.b.batch;
  const int tid = threadIdx.x;
  const int tx = tid % (BN / TN), ty = tid / (BN / TN);

  // Tile coordinates of this thread's i-th load of A (r, kk) and of B (kk, c).
  auto a_coord = [&](int i, int& r, int& kk) {
    const int e = tid + i * S::kThreads;
    if (p.a_k_fastest) r = e / BK, kk = e % BK;
    else r = e % BM, kk = e / BM;
  };
  auto b_coord = [&](int i, int& kk, int& c) {
    const int e = tid + i * S::kThreads;
    if (p.b_n_fastest) kk = e / BN, c = e % BN;
    else kk = e % BK, c = e / BK;
  };

  Acc a_next[kLoadsA], b_next[kLoadsB];
  // Global -> registers for the K-step at k0; outside the matrices reads 0.
  auto fetch = [&](int64_t k0) {
#pragma unroll
    for (int i = 0; i < kLoadsA; ++i) {
      int r, kk;
      a_coord(i, r, kk);
      const int64_t gr = row0 + r, gk = k0 + kk;
      a_next[i] = (gr < p.m && gk < p.k) ? static_cast<Acc>(a[gr * p.a.row + gk * p.a.col]) : Acc(0);
    }
#pragma unroll
    for (int i = 0; i < kLoadsB; ++i) {
      int kk, c;
      b_coord(i, kk, c);
      const int64_t gk = k0 + kk, gc = col0 + c;
      b_next[i] = (gk < p.k && gc < p.n) ? static_cast<Acc>(b[gk * p.b.row + gc * p.b.col]) : Acc(0);
    }
  };
  // Registers -> shared buffer `buf`.
  auto stash = [&](int buf) {
#pragma unroll
    for (int i = 0; i < kLoadsA; ++i) {
      int r, kk;
      a_coord(i, r, kk);
      a_tile[buf][kk][r] = a_next[i];
    }
#pragma unroll
    for (int i = 0; i < kLoadsB; ++i) {
      int kk, c;
      b_coord(i, kk, c);
      b_tile[buf][kk][c] = b_next[i];
    }
  };

  Acc acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = Acc(0);

  const int64_t k_steps = ceil_div(p.k, BK);
  fetch(0);
  stash(0);
  __syncthreads();
  for (int64_t step = 0; step < k_steps; ++step) {
    const int buf = (int)(step & 1);
    const bool more = step + 1 < k_steps;
    if (more) fetch((step + 1) * BK);  // in flight while this step computes
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      Acc af[TM], bf[TN];
      load_fragment<TM>(&a_tile[buf][kk][ty * TM], af);
      load_fragment<TN>(&b_tile[buf][kk][tx * TN], bf);
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] += af[i] * bf[j];
    }
    // The other buffer was last read in the previous step, which every
    // thread finished before the barrier that ended it.
    if (more) stash(buf ^ 1);
    __syncthreads();
  }

  T* c = p.c + batch * p.m * p.n;
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int64_t gr = row0 + ty * TM + i;
    if (gr >= p.m) break;
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      const int64_t gc = col0 + tx * TN + j;
      if (gc < p.n) c[gr * p.n + gc] = static_cast<T>(acc[i][j]);
    }
  }
}

template <typename T, typename S>
void launch_tiled(TiledGemm<T> p, int64_t batch, cudaStream_t stream, const char* op) {
  p.tiles_n = ceil_div(p.n, S::BN);
  const int64_t tiles = ceil_div(p.m, S::BM) * p.tiles_n;
  EMBER_CHECK(tiles <= INT_MAX, Runtime, op, ": a ", p.m, "x", p.n, " product is too large for one kernel launch");
  for (int64_t first = 0; first < batch; first += kMaxGridZ) {
    const dim3 grid((unsigned)tiles, 1, (unsigned)std::min(kMaxGridZ, batch - first));
    tiled_gemm_kernel<T, acc_t<T>, S><<<grid, S::kThreads, 0, stream>>>(p, first);
    check_launch(op);
  }
}

// out[i] = a[i] @ b[i] with ember's kernel; a: batch x m x k, b: batch x k x n.
template <typename T>
void tiled_product(const Tensor& a, const Tensor& b, const Tensor& out, cudaStream_t stream, const char* op) {
  TiledGemm<T> p;
  p.a = {a.data<T>(), a.stride(0), a.stride(1), a.stride(2)};
  p.b = {b.data<T>(), b.stride(0), b.stride(1), b.stride(2)};
  p.c = out.data<T>();
  p.m = a.size(1), p.k = a.size(2), p.n = b.size(2);
  p.tiles_n = 0;
  p.a_k_fastest = a.stride(2) <= a.stride(1);
  p.b_n_fastest = b.stride(2) <= b.stride(1);
  const int64_t batch = a.size(0);
  if constexpr (!std::is_same_v<T, double>) {
    if (batch * p.m * p.n >= kLargeTileOutputs) return launch_tiled<T, LargeTiles>(p, batch, stream, op);
  }
  launch_tiled<T, SmallTiles>(p, batch, stream, op);
}

// ---------------------------------------------------------------- cuBLAS
// Row-major C = A B is column-major C^T = B^T A^T: cuBLAS's first operand is
// our B. False when cuBLAS cannot take the call (the caller runs our kernel).
bool cublas_product(const Tensor& a_in, const Tensor& b_in, const Tensor& out, int device, cudaStream_t stream,
                    const char* op) {
  const int64_t batch = a_in.size(0), m = a_in.size(1), k = a_in.size(2), n = b_in.size(2);
  BlasLayout la, lb;
  // cublas::fits rejects leading dims past 32 bits (our kernel runs those).
  Tensor a = blas_operand(a_in, la, INT64_MAX);
  Tensor b = blas_operand(b_in, lb, INT64_MAX);
  cublas::GemmCall call;
  call.m = n, call.n = m, call.k = k;
  call.a = b.data_ptr(), call.trans_a = lb.trans, call.lda = lb.ld, call.stride_a = b.stride(0);
  call.b = a.data_ptr(), call.trans_b = la.trans, call.ldb = la.ld, call.stride_b = a.stride(0);
  call.c = out.data_ptr(), call.ldc = n, call.stride_c = m * n;
  call.batch = batch;
  call.dtype = out.dtype();
  return cublas::fits(call) && cublas::gemm(call, device, stream, op);
}

// ---------------------------------------------------------------- products
void zero_on_device(const Tensor& t, cudaStream_t stream) {
  if (t.numel() > 0) EMBER_CUDA_CHECK(cudaMemsetAsync(t.data_ptr(), 0, (size_t)t.numel() * t.itemsize(), stream));
}

// batch x m x k times batch x k x n (both checked, same device and dtype).
Tensor batched_product(const Tensor& a, const Tensor& b, const char* op) {
  const int device = a.device().index;
  DeviceGuard guard(device);
  const cudaStream_t stream = current_cuda_stream(device);
  Tensor out = empty_tensor({a.size(0), a.size(1), b.size(2)}, a.dtype(), a.device());
  if (out.numel() == 0) return out;
  if (a.size(2) == 0) {
    zero_on_device(out, stream);
    return out;
  }
  if (cublas_available() && cublas_product(a, b, out, device, stream, op)) return out;
  visit_floating(a.dtype(), op, [&]<typename T>() { tiled_product<T>(a, b, out, stream, op); });
  return out;
}

// ---------------------------------------------------------------- dot
constexpr int kDotThreads = 256;
constexpr int64_t kDotMaxBlocks = 1024;

// The block's sum, in thread 0 (blockDim.x a multiple of 32, at most 1024).
template <typename Acc>
__device__ Acc block_sum(Acc v) {
  __shared__ Acc warp_sums[32];
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < (int)(blockDim.x / 32) ? warp_sums[lane] : Acc(0);
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
  }
  return v;
}

// One partial sum per block (grid-stride over the elements).
template <typename T, typename Acc>
__global__ void dot_partials_kernel(const T* x, int64_t sx, const T* y, int64_t sy, int64_t n, Acc* partials) {
  Acc sum = Acc(0);
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step)
    sum += static_cast<Acc>(x[i * sx]) * static_cast<Acc>(y[i * sy]);
  sum = block_sum(sum);
  if (threadIdx.x == 0) partials[blockIdx.x] = sum;
}

template <typename T, typename Acc>
__global__ void dot_finish_kernel(const Acc* partials, int count, T* out) {
  Acc sum = Acc(0);
  for (int i = threadIdx.x; i < count; i += blockDim.x) sum += partials[i];
  sum = block_sum(sum);
  if (threadIdx.x == 0) *out = static_cast<T>(sum);
}

}  // namespace

Tensor mm_cuda(const Tensor& self, const Tensor& mat2) {
  check_mm_args(self, mat2);
  // A 2-D product is a batch of one.
  Tensor a = make_view(self, {1, self.size(0), self.size(1)}, {0, self.stride(0), self.stride(1)}, self.offset());
  Tensor b = make_view(mat2, {1, mat2.size(0), mat2.size(1)}, {0, mat2.stride(0), mat2.stride(1)}, mat2.offset());
  Tensor out = batched_product(a, b, "mm");
  return make_view(out, {self.size(0), mat2.size(1)}, {mat2.size(1), 1}, out.offset());
}

Tensor bmm_cuda(const Tensor& self, const Tensor& mat2) {
  check_bmm_args(self, mat2);
  return batched_product(self, mat2, "bmm");
}

Tensor dot_cuda(const Tensor& self, const Tensor& tensor) {
  check_dot_args(self, tensor);
  const int device = self.device().index;
  DeviceGuard guard(device);
  const cudaStream_t stream = current_cuda_stream(device);
  Tensor out = empty_tensor({}, self.dtype(), self.device());
  const int64_t n = self.numel();
  if (n == 0) {
    zero_on_device(out, stream);
    return out;
  }
  visit_floating(self.dtype(), "dot", [&]<typename T>() {
    using Acc = acc_t<T>;
    const int blocks = (int)std::min(ceil_div(n, kDotThreads * 4), kDotMaxBlocks);
    Tensor partials = empty_tensor({blocks}, std::is_same_v<Acc, double> ? ScalarType::Float64 : ScalarType::Float32,
                                   self.device());
    dot_partials_kernel<T, Acc><<<blocks, kDotThreads, 0, stream>>>(self.data<T>(), self.stride(0), tensor.data<T>(),
                                                                     tensor.stride(0), n, partials.data<Acc>());
    check_launch("dot");
    dot_finish_kernel<T, Acc><<<1, kDotThreads, 0, stream>>>(partials.data<Acc>(), blocks, out.data<T>());
    check_launch("dot");
  });
  return out;
}

}  // namespace ember::cuda
