#include "ember/reduce.h"

#include <algorithm>

#include "ember/dispatch.h"

namespace ember {

DimVector reduction_mask(const std::optional<IntList>& dims, int64_t ndim, const char* op) {
  DimVector mask(std::max<int64_t>(ndim, 0), 0);
  if (!dims) {
    std::fill(mask.begin(), mask.end(), 1);
    return mask;
  }
  for (int64_t d : *dims) {
    int64_t w = wrap_dim(d, ndim, op);
    if (ndim == 0) continue;
    EMBER_CHECK(!mask[w], Runtime, op, ": dim ", w, " appears multiple times in the list of dims");
    mask[w] = 1;
  }
  return mask;
}

DimVector kept_sizes(const DimVector& sizes, const DimVector& mask) {
  DimVector kept = sizes;
  for (size_t d = 0; d < kept.size(); ++d)
    if (mask[d]) kept[d] = 1;
  return kept;
}

Tensor drop_reduced_dims(const Tensor& t, const DimVector& mask) {
  DimVector sizes, strides;
  for (size_t d = 0; d < mask.size(); ++d) {
    if (mask[d]) continue;
    sizes.push_back(t.sizes()[d]);
    strides.push_back(t.strides()[d]);
  }
  return make_view(t, sizes, strides, t.offset());
}

ReduceIterator ReduceIterator::make(const char* op, const Tensor& self, const std::optional<IntList>& dims,
                                    bool keepdim, std::optional<ScalarType> dtype, ReduceResult rule,
                                    const ScalarType* dtypes, int n, bool require_nonempty, const Tensor& out) {
  ReduceIterator r;
  r.keepdim = keepdim;
  r.out = out;
  ScalarType src = self.dtype();
  if (!std::count(dtypes, dtypes + n, src)) fail_dtype_not_implemented(op, src);
  if (dtype) r.result_dtype = *dtype;
  else if (rule == ReduceResult::Bool) r.result_dtype = ScalarType::Bool;
  else if (rule == ReduceResult::LongForIntegral && is_integral(src, true)) r.result_dtype = ScalarType::Int64;
  else r.result_dtype = src;
  if (rule == ReduceResult::Bool && src == ScalarType::UInt8 && !dtype) r.result_dtype = ScalarType::UInt8;

  ScalarType compute = rule == ReduceResult::Bool ? ScalarType::Bool : r.result_dtype;
  if (compute == ScalarType::Float16 || compute == ScalarType::BFloat16) compute = ScalarType::Float32;
  // sum(dtype=int8) wraps, as PyTorch: an int64 accumulator cast back keeps the same low bits.
  if (rule == ReduceResult::LongForIntegral && is_integral(compute, true)) compute = ScalarType::Int64;
  r.reduced = reduction_mask(dims, self.dim(), op);
  if (require_nonempty && self.numel() == 0) {
    EMBER_CHECK(dims.has_value(), Runtime, op,
                "(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the 'dim' argument.");
    for (int64_t d = 0; d < self.dim(); ++d)
      EMBER_CHECK(!(r.reduced[d] && self.sizes()[d] == 0), Index, op, "(): Expected reduction dim ", d,
                  " to have non-zero size.");
  }
  // dtype= converts the input first, as PyTorch's self.to(dtype): 200.5 -> int8 wraps, float -> bfloat16 rounds.
  r.input = cast_to(dtype && *dtype != compute ? cast_to(self, *dtype) : self, compute);
  r.output = empty_tensor(kept_sizes(self.sizes(), r.reduced), compute, self.device());
  return r;
}

Tensor ReduceIterator::finish() {
  Tensor result = keepdim ? output : drop_reduced_dims(output, reduced);
  result = cast_to(result, result_dtype);
  if (out.defined()) {
    copy_into_out(out, result, "reduction");
    return out;
  }
  return result;
}

}  // namespace ember
