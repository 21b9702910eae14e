// Advanced indexing on CUDA: index (gather) and index_put_ (scatter, with or
// without accumulation). The planning is shared with the CPU (ember/index_plan.h);
// here it becomes two steps on the device:
//   1. b_offs: one self offset per position of the broadcast index shape B,
//      computed on the host when every index tensor is on the CPU (and
//      uploaded), else by a kernel per index tensor that also checks bounds;
//   2. one thread per result element walks the result's dims, adding the
//      sliced dims' strides and b_offs of its B position.
// Out-of-range indices raise IndexError before step 2 ever runs. A device
// assert would kill the CUDA context for good, so the check kernel records
// the first bad index in a 3-word record that is copied back (one sync, as
// PyTorch syncs for masks); the gather/scatter then never reads out of range.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "ember/cuda/runtime.h"
#include "ember/dtype.h"
#include "ember/errors.h"
#include "ember/index_plan.h"
#include "ember/ops/index.h"
#include "ember/ops/index_put_.h"
#include "ember/ops/to.h"

namespace ember::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kMaxWalkDims = 25;
constexpr int64_t kMaxBlocks = 1 << 20;  // the kernels loop over the rest (grid-stride)

unsigned blocks_for(int64_t n) { return (unsigned)std::min<int64_t>((n + kThreads - 1) / kThreads, kMaxBlocks); }

// ------------------------------------------------------------ step 1: offsets of B positions

// One index tensor as read against B (strides 0 where it broadcasts).
struct IndexOperand {
  const void* data;
  bool is_int32;
  int position;          // among the index tensors, for the error message
  int64_t size, stride;  // of the self dim it indexes
  int ndim;
  int64_t b_sizes[kMaxWalkDims];
  int64_t b_strides[kMaxWalkDims];
};

// error[0]: set once an index is out of range; error[1]: its position; error[2]: its value.
__global__ void index_offsets_kernel(IndexOperand op, int64_t nb, bool first, int64_t* b_offs,
                                     unsigned long long* error) {
  for (int64_t b = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; b < nb; b += (int64_t)gridDim.x * blockDim.x) {
    int64_t rem = b, off = 0;
    for (int k = op.ndim - 1; k >= 0; --k) {
      const int64_t q = rem / op.b_sizes[k];
      off += (rem - q * op.b_sizes[k]) * op.b_strides[k];
      rem = q;
    }
    int64_t v = op.is_int32 ? (int64_t) static_cast<const int32_t*>(op.data)[off]
                            : static_cast<const int64_t*>(op.data)[off];
    int64_t o = 0;
    if (v < -op.size || v >= op.size) {
      if (atomicCAS(&error[0], 0ull, 1ull) == 0ull) {
        error[1] = (unsigned long long)op.position;
        error[2] = (unsigned long long)v;
      }
    } else {
      o = (v < 0 ? v + op.size : v) * op.stride;
    }
    b_offs[b] = first ? o : b_offs[b] + o;
  }
}

// b_offs on the device; raises IndexError for an out-of-range index.
Tensor device_index_offsets(const IndexPlan& plan, Device device, const char* op) {
  const int64_t nb = plan.b_numel();
  Tensor b_offs = empty_tensor({nb}, ScalarType::Int64, device);
  cudaStream_t stream = current_cuda_stream(device.index);
  if (plan.indices_on_cpu()) {
    const std::vector<int64_t> host = index_offsets_on_host(plan, op);
    EMBER_CUDA_CHECK(cudaMemcpyAsync(b_offs.data_ptr(), host.data(), (size_t)nb * sizeof(int64_t),
                                     cudaMemcpyHostToDevice, stream));
    // Pageable memory: `host` must outlive the copy.
    EMBER_CUDA_CHECK(cudaStreamSynchronize(stream));
    return b_offs;
  }
  EMBER_CHECK((int64_t)plan.b_sizes.size() <= kMaxWalkDims, Runtime, op, ": index tensors of more than ",
              kMaxWalkDims, " dims are not supported on CUDA");
  Tensor error = empty_tensor({3}, ScalarType::Int64, device);
  EMBER_CUDA_CHECK(cudaMemsetAsync(error.data_ptr(), 0, 3 * sizeof(int64_t), stream));
  for (size_t j = 0; j < plan.indices.size(); ++j) {
    const IndexPlan::Index& e = plan.indices[j];
    // Index tensors on the CPU beside ones on the device: move them over.
    const Tensor t = e.tensor.device().is_cpu() ? ember::to_device(e.tensor, device, std::nullopt, false, false)
                                                : e.tensor;
    IndexOperand operand{};
    operand.data = t.data_ptr();
    operand.is_int32 = t.dtype() == ScalarType::Int32;
    operand.position = (int)j;
    operand.size = e.size;
    operand.stride = e.stride;
    operand.ndim = (int)plan.b_sizes.size();
    // Strides against B, recomputed in case `t` is a fresh copy.
    const size_t lead = plan.b_sizes.size() - (size_t)t.dim();
    for (size_t k = 0; k < plan.b_sizes.size(); ++k) {
      operand.b_sizes[k] = plan.b_sizes[k];
      operand.b_strides[k] = k < lead || t.size((int64_t)(k - lead)) == 1 ? 0 : t.stride((int64_t)(k - lead));
    }
    index_offsets_kernel<<<blocks_for(nb), kThreads, 0, stream>>>(
        operand, nb, j == 0, b_offs.data<int64_t>(), reinterpret_cast<unsigned long long*>(error.data<int64_t>()));
    check_launch("index_offsets");
  }
  int64_t record[3];
  EMBER_CUDA_CHECK(cudaMemcpyAsync(record, error.data_ptr(), sizeof(record), cudaMemcpyDeviceToHost, stream));
  EMBER_CUDA_CHECK(cudaStreamSynchronize(stream));
  if (record[0] != 0) raise_index_out_of_bounds(op, record[2], record[1], plan.indices[(size_t)record[1]].size);
  return b_offs;
}

// ------------------------------------------------------------ step 2: the walk over the result

// The result's dims, row-major, with the strides of everything read or written.
struct Walk {
  int ndim = 0;
  int64_t sizes[kMaxWalkDims];
  int64_t self_strides[kMaxWalkDims];   // sliced dims of self; 0 on B dims
  int64_t b_strides[kMaxWalkDims];      // the position within B; 0 on sliced dims
  int64_t other_strides[kMaxWalkDims];  // the output (index) or the values (index_put_)
};

// `other` holds the strides of the output or the values over the result dims.
Walk make_walk(const IndexPlan& plan, const DimVector& other, const char* op) {
  struct Dim {
    int64_t size, self, b, other;
  };
  std::vector<Dim> dims;
  const DimVector b_contig = contiguous_strides(plan.b_sizes);
  size_t r = 0;
  for (size_t k = 0; k < plan.outer_sizes.size(); ++k, ++r)
    dims.push_back({plan.outer_sizes[k], plan.outer_strides[k], 0, other[r]});
  for (size_t k = 0; k < plan.b_sizes.size(); ++k, ++r) dims.push_back({plan.b_sizes[k], 0, b_contig[k], other[r]});
  for (size_t k = 0; k < plan.inner_sizes.size(); ++k, ++r)
    dims.push_back({plan.inner_sizes[k], plan.inner_strides[k], 0, other[r]});
  // Drop size-1 dims; merge a dim into the previous one when every stride nests.
  std::vector<Dim> merged;
  for (const Dim& d : dims) {
    if (d.size == 1) continue;
    if (!merged.empty()) {
      Dim& p = merged.back();
      if (p.self == d.self * d.size && p.b == d.b * d.size && p.other == d.other * d.size) {
        p = {p.size * d.size, d.self, d.b, d.other};
        continue;
      }
    }
    merged.push_back(d);
  }
  EMBER_CHECK((int)merged.size() <= kMaxWalkDims, Runtime, op, ": more than ", kMaxWalkDims,
              " dims after merging are not supported on CUDA");
  Walk w;
  w.ndim = (int)merged.size();
  for (int k = 0; k < w.ndim; ++k) {
    w.sizes[k] = merged[k].size;
    w.self_strides[k] = merged[k].self;
    w.b_strides[k] = merged[k].b;
    w.other_strides[k] = merged[k].other;
  }
  return w;
}

// Element r of the result: its self offset (before b_offs), B position and other offset.
template <typename I>
__device__ __forceinline__ void walk_offsets(const Walk& w, I r, int64_t& self_off, int64_t& b, int64_t& other_off) {
  self_off = b = other_off = 0;
  for (int k = w.ndim - 1; k >= 0; --k) {
    const I size = (I)w.sizes[k];
    const I q = r / size;
    const int64_t c = (int64_t)(r - q * size);
    self_off += c * w.self_strides[k];
    b += c * w.b_strides[k];
    other_off += c * w.other_strides[k];
    r = q;
  }
}

enum class Mode { Gather, Scatter, Accumulate };

// ---- atomic adds for accumulate (duplicate indices must all add up)

// 8/16-bit integers and bool: a CAS loop on the aligned 32-bit word holding them.
template <typename T>
__device__ void atomic_add_narrow(T* p, T v) {
  constexpr unsigned width = sizeof(T) * 8, mask = (1u << width) - 1u;
  unsigned* word = reinterpret_cast<unsigned*>(reinterpret_cast<uintptr_t>(p) & ~uintptr_t(3));
  const unsigned shift = (unsigned)(reinterpret_cast<uintptr_t>(p) & 3) * 8;
  unsigned old = *word, assumed;
  do {
    assumed = old;
    const unsigned cur = (assumed >> shift) & mask;
    unsigned sum;
    if constexpr (std::is_same_v<T, bool>) sum = (cur != 0 || v) ? 1u : 0u;  // bool + bool, cast back
    else sum = (unsigned)(cur + (unsigned)v) & mask;                          // wraps as the CPU does
    old = atomicCAS(word, assumed, (assumed & ~(mask << shift)) | (sum << shift));
  } while (assumed != old);
}

template <typename T>
__device__ __forceinline__ void atomic_add(T* p, T v) {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    atomicAdd(p, v);
  } else if constexpr (std::is_same_v<T, Half>) {
    atomicAdd(reinterpret_cast<__half*>(p), __ushort_as_half(v.x));
  } else if constexpr (std::is_same_v<T, BFloat16>) {
    atomicAdd(reinterpret_cast<__nv_bfloat16*>(p), __ushort_as_bfloat16(v.x));
  } else if constexpr (sizeof(T) == 4) {
    atomicAdd(reinterpret_cast<unsigned*>(p), (unsigned)v);  // two's complement: the same bits as a signed add
  } else if constexpr (sizeof(T) == 8) {
    atomicAdd(reinterpret_cast<unsigned long long*>(p), (unsigned long long)v);
  } else {
    atomic_add_narrow(p, v);
  }
}

// Gather: other = the output; Scatter / Accumulate: other = the values.
template <Mode M, typename T, typename I>
__global__ void __launch_bounds__(kThreads)
    index_walk_kernel(Walk w, T* self, const int64_t* b_offs, T* other, I n) {
  for (I r = (I)blockIdx.x * kThreads + threadIdx.x; r < n; r += (I)gridDim.x * kThreads) {
    int64_t s, b, o;
    walk_offsets(w, r, s, b, o);
    s += b_offs[b];
    if constexpr (M == Mode::Gather) other[o] = self[s];
    else if constexpr (M == Mode::Scatter) self[s] = other[o];
    else atomic_add(self + s, other[o]);
  }
}

template <Mode M, typename T>
void launch_walk(const Walk& w, void* self, const Tensor& b_offs, void* other, int64_t n, int device,
                 const char* op) {
  cudaStream_t stream = current_cuda_stream(device);
  T* s = static_cast<T*>(self);
  T* o = static_cast<T*>(other);
  // 32-bit division when the element count fits: much cheaper per dim.
  if (n <= (int64_t)INT32_MAX)
    index_walk_kernel<M, T, uint32_t><<<blocks_for(n), kThreads, 0, stream>>>(w, s, b_offs.data<int64_t>(), o,
                                                                              (uint32_t)n);
  else
    index_walk_kernel<M, T, int64_t><<<blocks_for(n), kThreads, 0, stream>>>(w, s, b_offs.data<int64_t>(), o, n);
  check_launch(op);
}

}  // namespace

Tensor index_cuda(const Tensor& self, const TensorList& indices) {
  const IndexPlan plan = plan_index(self, indices, "index");
  Tensor out = empty_tensor(plan.result_sizes, self.dtype(), self.device());
  const int64_t n = out.numel();
  if (n == 0) return out;  // nothing is read: no bounds to check
  DeviceGuard guard(self.device().index);
  const Tensor b_offs = device_index_offsets(plan, self.device(), "index");
  const Walk w = make_walk(plan, contiguous_strides(plan.result_sizes), "index");
  visit_itemsize(self.itemsize(), "index", [&]<typename U>() {
    launch_walk<Mode::Gather, U>(w, self.data_ptr(), b_offs, out.data_ptr(), n, self.device().index, "index");
  });
  return out;
}

Tensor index_put_cuda(const Tensor& self, const TensorList& indices, const Tensor& values, bool accumulate) {
  warn_if_expanded(self, "index_put_");
  const IndexPlan plan = plan_index(self, indices, "index_put_");
  const IndexPutValues pv = prepare_index_put_values(self, plan, values, "index_put_");
  const int64_t n = plan.numel();
  if (n == 0) return self;
  DeviceGuard guard(self.device().index);
  const Tensor b_offs = device_index_offsets(plan, self.device(), "index_put_");
  const Walk w = make_walk(plan, pv.strides, "index_put_");
  const int device = self.device().index;
  if (!accumulate) {
    // With duplicate indices any one of the values wins, as in PyTorch.
    visit_itemsize(self.itemsize(), "index", [&]<typename U>() {
      launch_walk<Mode::Scatter, U>(w, self.data_ptr(), b_offs, pv.values.data_ptr(), n, device, "index_put_");
    });
  } else {
    visit_dtype(self.dtype(), [&]<typename T>() {
      launch_walk<Mode::Accumulate, T>(w, self.data_ptr(), b_offs, pv.values.data_ptr(), n, device, "index_put_");
    });
  }
  return self;
}

}  // namespace ember::cuda
