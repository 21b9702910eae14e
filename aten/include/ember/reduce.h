#pragma once
// ReduceIterator: what every reduction shares before its kernel runs: dims
// wrapped and checked, the result dtype chosen, the input cast to the dtype
// the kernel computes in, and the output (reduced dims kept as size 1).
#include <optional>
#include "ember/tensor.h"

namespace ember {

enum class ReduceResult : uint8_t {
  Same,             // the input's dtype
  LongForIntegral,  // integral and bool inputs give int64 (sum, prod)
  Bool,             // bool (all, any)
};

struct ReduceIterator {
  Tensor input;       // in the compute dtype
  Tensor output;      // compute dtype, input's rank, reduced dims of size 1, contiguous
  DimVector reduced;  // per input dim: 1 when reduced
  bool keepdim = false;
  ScalarType result_dtype = ScalarType::Float32;
  Tensor out;         // an out= tensor, or undefined

  static ReduceIterator make(const char* op, const Tensor& self, const std::optional<IntList>& dims, bool keepdim,
                             std::optional<ScalarType> dtype, ReduceResult rule, const ScalarType* dtypes, int n,
                             bool require_nonempty, const Tensor& out);
  // The result: squeezed unless keepdim, cast to the result dtype, written to out= when given.
  Tensor finish();
};

// A dim= argument in which nullopt and an empty list both mean every dim.
inline std::optional<IntList> all_if_empty(const std::optional<IntList>& dim) {
  if (dim && dim->empty()) return std::nullopt;
  return dim;
}
// Wraps and deduplicates reduction dims into a mask over `ndim` dims (all when nullopt).
DimVector reduction_mask(const std::optional<IntList>& dims, int64_t ndim, const char* op);
// `sizes` with the masked dims set to 1: the shape a reduction writes before squeezing.
DimVector kept_sizes(const DimVector& sizes, const DimVector& mask);
// A view of `t` without the masked dims (keepdim=False).
Tensor drop_reduced_dims(const Tensor& t, const DimVector& mask);

}  // namespace ember
