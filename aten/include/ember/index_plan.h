#pragma once
// The host-side planning of advanced indexing (index / index_put_), shared by
// the CPU and CUDA kernels. PyTorch's rules for a list of optional index tensors:
//   - an undefined tensor keeps its dim as a full slice;
//   - bool/uint8 masks become one int64 index per mask dim (their nonzeros);
//   - the defined indices broadcast together to a shape B;
//   - if they are adjacent, B replaces the indexed dims in place, otherwise B
//     comes first and the sliced dims follow in order.
// Either way the result is walked as [outer, B, inner]: outer and inner are
// sliced dims of `self`, and every position of B has one offset into self
// (the sum over the indices of index * stride).
#include <cstdint>
#include <vector>

#include "ember/tensor.h"

namespace ember {

struct IndexPlan {
  DimVector result_sizes;            // [outer, B, inner]
  DimVector outer_sizes, outer_strides;  // sliced dims of self before B (strides in elements)
  DimVector b_sizes;
  DimVector inner_sizes, inner_strides;  // sliced dims of self after B
  struct Index {
    Tensor tensor;          // int64 or int32, on the CPU or on self's device
    int64_t size, stride;   // of the self dim it indexes
    DimVector b_strides;    // its strides against B, 0 where it broadcasts
  };
  std::vector<Index> indices;  // the defined indices, masks expanded, in dim order

  int64_t numel() const { return compute_numel(result_sizes); }
  int64_t b_numel() const { return compute_numel(b_sizes); }
  bool indices_on_cpu() const;
};

// Checks dtypes, devices (each index on the CPU or on self's device) and
// shapes, expands masks (a mask on a device is copied to the host: a sync)
// and lays out the result. Raises IndexError as PyTorch does.
IndexPlan plan_index(const Tensor& self, const TensorList& indices, const char* op);

// Offsets (in elements) of every position of a row-major walk over `sizes`.
std::vector<int64_t> enumerate_offsets(const DimVector& sizes, const DimVector& strides);

// One self offset per position of B, read from CPU index tensors; an index
// out of range raises IndexError naming `op`, the value and its position.
std::vector<int64_t> index_offsets_on_host(const IndexPlan& plan, const char* op);
[[noreturn]] void raise_index_out_of_bounds(const char* op, int64_t value, int64_t position, int64_t size);

// index_put_ into an expanded self (a stride-0 dim): PyTorch's deprecation warning, then the
// writes land in order (the last wins, accumulate adds each). True when self is expanded.
bool warn_if_expanded(const Tensor& self, const char* op);

// The values of index_put_ as read by its kernels: broadcast to the result
// shape (leading size-1 dims of values may go), in self's dtype, on self's
// device (a 0-d tensor on another device is moved there), never sharing
// memory with self.
struct IndexPutValues {
  Tensor values;
  DimVector strides;  // over plan.result_sizes, 0 where values broadcast
};
// Checks the broadcast (RuntimeError "shape mismatch"); casts and copies
// only when the result has elements.
IndexPutValues prepare_index_put_values(const Tensor& self, const IndexPlan& plan, const Tensor& values,
                                        const char* op);

}  // namespace ember
