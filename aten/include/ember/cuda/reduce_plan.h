#pragma once
// Host planning for the CUDA reduction engine (ember/cuda/reduce.cuh): the
// input's dims are split into a kept and a reduced group, each sorted by
// input stride and coalesced, and a launch shape is chosen at run time. The
// planning is not templated: it is compiled once (aten/src/cuda/reduce_plan.cu).
#include <cstdint>

#include "ember/cuda/loops.cuh"
#include "ember/tensor.h"

namespace ember::cuda::reduction {

constexpr int kMaxDims = 25;
constexpr int kMaxThreads = 512;  // per block
constexpr int kMinBlocksPerSM = 2;  // of kMaxThreads (__launch_bounds__): 1024 resident threads per SM

// Dims of one kind, fastest (smallest input stride) first. An index in
// [0, count) maps to an input offset and, for kept dims, an output offset
// (both in elements). Sizes are >= 2; a group with a size-0 dim has count 0
// and no dims.
struct DimGroup {
  int ndim;
  bool wide;  // count >= 2^31: 64-bit division
  int64_t count;
  int64_t sizes[kMaxDims];
  int64_t in_strides[kMaxDims];
  int64_t out_strides[kMaxDims];
  loops::IntDivider div[kMaxDims];  // set unless wide

  template <bool kWithOut>
  __device__ __forceinline__ int64_t offset(int64_t idx, int64_t* out_off) const {
    int64_t in = 0, out = 0;
    if (ndim == 1) {
      in = idx * in_strides[0];
      out = idx * out_strides[0];
    } else if (!wide) {
      uint32_t i = (uint32_t)idx;
#pragma unroll 1
      for (int d = 0; d < ndim; ++d) {
        const uint32_t q = div[d].div(i);
        const int64_t c = (int64_t)(i - q * div[d].divisor);
        in += c * in_strides[d];
        if (kWithOut) out += c * out_strides[d];
        i = q;
      }
    } else {
#pragma unroll 1
      for (int d = 0; d < ndim; ++d) {
        const int64_t q = idx / sizes[d];
        const int64_t c = idx - q * sizes[d];
        in += c * in_strides[d];
        if (kWithOut) out += c * out_strides[d];
        idx = q;
      }
    }
    if (kWithOut) *out_off = out;
    return in;
  }
};

struct Geometry {
  DimGroup kept;     // one output element per index
  DimGroup reduced;  // combined into each output element
};

struct Plan {
  bool rows;         // threads of a block run along the reduced index (else along outputs)
  int vec;           // elements per vector load (rows only; 1: scalar loads)
  int block_x, block_y;
  unsigned grid_x;   // blocks along the outputs
  unsigned splits;   // blocks along the reduced range (gridDim.y); > 1: partials and a second pass
  int64_t chunk;     // reduced indices per split, a multiple of vec * block_x (rows) or block_y
  size_t smem;       // dynamic shared memory in bytes
};

// `out_strides[d]` is the output's stride (elements) for input dim d; only
// kept dims are read. Raises when a group has more than kMaxDims dims after
// coalescing.
Geometry make_geometry(const Tensor& input, const int64_t* out_strides, const DimVector& reduced_mask,
                       const char* name);

// `input` is the first element's address (for vector alignment); `vec_width`
// the elements per 16-byte load of the input type (1: none).
Plan make_plan(const Geometry& g, const void* input, int in_size, int acc_size, int vec_width, int device);

// The second pass over per-split partials laid out [splits][outputs] (outputs
// in the kept group's index order), writing where `g` writes.
Geometry partial_geometry(const Geometry& g, unsigned splits);

}  // namespace ember::cuda::reduction
