// max.dim, min.dim, argmax, argmin on CUDA, with the CPU kernels' semantics
// (aten/src/cpu/index_reductions.cpp): a NaN is the extreme of any line that
// holds one and the first NaN's index is returned; among equal values the
// first index wins. The reduction engine (ember/cuda/reduce.cuh) accumulates
// (value, index) pairs; the pair combine is associative and commutative, so
// the result does not depend on the order the engine combines in.
#include <cstdint>
#include <limits>
#include <optional>
#include <tuple>
#include <type_traits>

#include "ember/cuda/reduce.cuh"
#include "ember/cuda/runtime.h"
#include "ember/dtype.h"
#include "ember/errors.h"
#include "ember/ops/argmax.h"
#include "ember/ops/argmin.h"
#include "ember/ops/contiguous.h"
#include "ember/ops/max.h"
#include "ember/ops/min.h"
#include "ember/tensor.h"

namespace ember::cuda {
namespace {

enum class Extreme { Max, Min };

template <typename C>
struct ValueIndex {
  C value;
  int64_t index;
};

template <typename C>
__device__ __forceinline__ bool is_nan(C v) {
  if constexpr (std::is_floating_point_v<C>) return v != v;
  else return false;
}

template <Extreme E, typename C>
struct PickExtreme {
  __device__ __forceinline__ ValueIndex<C> operator()(const ValueIndex<C>& a, const ValueIndex<C>& b) const {
    const bool a_nan = is_nan(a.value), b_nan = is_nan(b.value);
    if (a_nan || b_nan) {
      if (a_nan && b_nan) return a.index <= b.index ? a : b;
      return a_nan ? a : b;
    }
    const bool a_better = E == Extreme::Max ? a.value > b.value : a.value < b.value;
    const bool b_better = E == Extreme::Max ? b.value > a.value : b.value < a.value;
    if (a_better) return a;
    if (b_better) return b;
    return a.index <= b.index ? a : b;
  }
};

// An element at index r along the reduced dim, compared in opmath (float for 16-bit floats).
template <typename C>
struct TagIndex {
  template <typename T>
  __device__ __forceinline__ ValueIndex<C> operator()(T v, int64_t r) const {
    return {static_cast<C>(v), r};
  }
};

template <typename T, typename C>
struct StoreExtreme {
  T* values;  // null for argmax/argmin
  int64_t* indices;
  __device__ __forceinline__ void operator()(const ValueIndex<C>& a, int64_t offset) const {
    if (values) values[offset] = static_cast<T>(a.value);
    indices[offset] = a.index;
  }
};

// Reduces `self` (at least 1-d) along `d` into `values` (may be undefined)
// and `indices`, both contiguous and holding self's elements' order without d.
template <Extreme E>
void reduce_along(const Tensor& self, int64_t d, const Tensor& values, const Tensor& indices, const char* op) {
  if (indices.numel() == 0) return;
  DimVector mask(self.dim(), 0);
  mask[d] = 1;
  DimVector keep_sizes = self.sizes();
  keep_sizes[d] = 1;
  const DimVector out_strides = contiguous_strides(keep_sizes);
  const int device = self.device().index;
  DeviceGuard guard(device);
  const reduction::Geometry g = reduction::make_geometry(self, out_strides.data(), mask, op);
  visit_dtype(self.dtype(), [&]<typename T>() {
    using C = opmath_t<T>;
    const ValueIndex<C> init{E == Extreme::Max ? lowest_value<C>() : highest_value<C>(),
                             std::numeric_limits<int64_t>::max()};
    StoreExtreme<T, C> store{values.defined() ? values.data<T>() : nullptr, indices.data<int64_t>()};
    reduction::run<T, ValueIndex<C>>(g, self.data<T>(), init, TagIndex<C>{}, PickExtreme<E, C>{}, store, device, op);
  });
}

// A 0-d tensor as a 1-element line.
Tensor as_line(const Tensor& self) {
  return self.dim() == 0 ? make_view(self, DimVector{1}, DimVector{1}, self.offset()) : self;
}

DimVector reduced_sizes(const Tensor& self, int64_t d, bool keepdim) {
  DimVector out;
  for (int64_t i = 0; i < self.dim(); ++i) {
    if (i != d) out.push_back(self.sizes()[i]);
    else if (keepdim) out.push_back(1);
  }
  return out;
}

int64_t checked_dim(const Tensor& self, int64_t dim, const char* op) {
  const int64_t d = wrap_dim(dim, std::max<int64_t>(self.dim(), 1), op);
  if (self.dim() > 0 && self.numel() == 0)
    EMBER_CHECK(self.sizes()[d] != 0, Index, op, "(): Expected reduction dim ", d, " to have non-zero size.");
  return d;
}

template <Extreme E>
std::tuple<Tensor, Tensor> extreme_dim(const Tensor& self, int64_t dim, bool keepdim, const char* op) {
  const int64_t d = checked_dim(self, dim, op);
  const DimVector sizes = self.dim() == 0 ? DimVector{} : reduced_sizes(self, d, keepdim);
  Tensor values = empty_tensor(sizes, self.dtype(), self.device());
  Tensor indices = empty_tensor(sizes, ScalarType::Int64, self.device());
  reduce_along<E>(as_line(self), self.dim() == 0 ? 0 : d, values, indices, op);
  return {values, indices};
}

template <Extreme E>
Tensor arg_extreme(const Tensor& self, std::optional<int64_t> dim, bool keepdim, const char* op) {
  if (dim.has_value()) {
    const int64_t d = checked_dim(self, *dim, op);
    const DimVector sizes = self.dim() == 0 ? DimVector{} : reduced_sizes(self, d, keepdim);
    Tensor indices = empty_tensor(sizes, ScalarType::Int64, self.device());
    reduce_along<E>(as_line(self), self.dim() == 0 ? 0 : d, Tensor(), indices, op);
    return indices;
  }
  EMBER_CHECK(self.numel() != 0, Index, op, "(): Expected reduction dim to be specified for input.numel() == 0.");
  // The flat index is in row-major order: reduce a contiguous copy as one line.
  const DimVector sizes = keepdim ? DimVector((size_t)self.dim(), 1) : DimVector{};
  Tensor indices = empty_tensor(sizes, ScalarType::Int64, self.device());
  Tensor flat = self.is_contiguous() ? self : ember::contiguous(self);
  flat = make_view(flat, DimVector{flat.numel()}, DimVector{1}, flat.offset());
  reduce_along<E>(flat, 0, Tensor(), indices, op);
  return indices;
}

}  // namespace

std::tuple<Tensor, Tensor> max_dim_cuda(const Tensor& self, int64_t dim, bool keepdim) {
  return extreme_dim<Extreme::Max>(self, dim, keepdim, "max");
}

std::tuple<Tensor, Tensor> min_dim_cuda(const Tensor& self, int64_t dim, bool keepdim) {
  return extreme_dim<Extreme::Min>(self, dim, keepdim, "min");
}

Tensor argmax_cuda(const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  return arg_extreme<Extreme::Max>(self, dim, keepdim, "argmax");
}

Tensor argmin_cuda(const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  return arg_extreme<Extreme::Min>(self, dim, keepdim, "argmin");
}

}  // namespace ember::cuda
