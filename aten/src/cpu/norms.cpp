// linalg.vector_norm on the CPU: |x|^ord folded through the reduction engine
// (pairwise on every layout, the engine's thread split), float16/bfloat16 in
// float32 as PyTorch accumulates them, then the root taken once per output.
#include <cmath>
#include <limits>
#include <optional>

#include "ember/cpu/reduce.h"
#include "ember/ops/linalg_vector_norm.h"

namespace ember::cpu {
namespace {

struct Plus {
  template <typename T>
  T operator()(T a, T b) const { return a + b; }
};
struct SumSquares {
  template <typename T>
  T operator()(T a, T x) const { return a + x * x; }
};
struct SumAbs {
  template <typename T>
  T operator()(T a, T x) const { return a + std::abs(x); }
};
struct CountNonzero {
  template <typename T>
  T operator()(T a, T x) const { return a + T(x != T(0)); }
};
template <typename T>
struct SumPow {
  T p;
  T operator()(T a, T x) const { return a + std::pow(std::abs(x), p); }
};
// The larger (smaller) of two magnitudes; NaN wins, as in PyTorch.
struct Larger {
  template <typename T>
  T operator()(T a, T b) const { return (b > a || b != b) ? b : a; }
};
struct Smaller {
  template <typename T>
  T operator()(T a, T b) const { return (b < a || b != b) ? b : a; }
};
template <typename Pick>
struct PickAbs {
  template <typename T>
  T operator()(T a, T x) const { return Pick{}(a, std::abs(x)); }
};

template <typename T, typename Reduce, typename Merge>
void fold(const TensorIterator& it, T init, Reduce reduce, Merge merge, T* out, int64_t nout) {
  std::fill(out, out + nout, init);
  run_reduction(it, ReduceOps<T, T, Reduce, Merge>{init, reduce, merge}, out, nout);
}

template <typename T>
void vector_norm_into(const TensorIterator& it, double ord, T* out, int64_t nout) {
  constexpr T inf = std::numeric_limits<T>::infinity();
  if (ord == 2) fold(it, T(0), SumSquares{}, Plus{}, out, nout);
  else if (ord == 1) fold(it, T(0), SumAbs{}, Plus{}, out, nout);
  else if (ord == 0) fold(it, T(0), CountNonzero{}, Plus{}, out, nout);
  else if (ord == INFINITY) fold(it, T(0), PickAbs<Larger>{}, Larger{}, out, nout);
  else if (ord == -INFINITY) fold(it, inf, PickAbs<Smaller>{}, Smaller{}, out, nout);
  else fold(it, T(0), SumPow<T>{T(ord)}, Plus{}, out, nout);
  if (ord == 2) {
    for (int64_t i = 0; i < nout; ++i) out[i] = std::sqrt(out[i]);
  } else if (ord != 0 && ord != 1 && !std::isinf(ord)) {
    const T root = T(1.0 / ord);  // NaN for ord NaN: every result NaN, as PyTorch
    for (int64_t i = 0; i < nout; ++i) out[i] = std::pow(out[i], root);
  }
}

}  // namespace

Tensor vector_norm_cpu(const Tensor& self, const Scalar& ord, const std::optional<IntList>& dim, bool keepdim,
                       std::optional<ScalarType> dtype) {
  static const ScalarType kFloating[] = {ScalarType::Float16, ScalarType::BFloat16, ScalarType::Float32,
                                         ScalarType::Float64};
  const double p = ord.to_double();
  const ScalarType result_dtype = dtype.value_or(self.dtype());
  // check_kernel_args has checked that both are floating.
  EMBER_CHECK(promote_types(self.dtype(), result_dtype) == result_dtype, Runtime, "linalg.vector_norm: the dtype of the input (",
              dtype_title(self.dtype()), ") should be convertible without narrowing to the specified dtype (",
              dtype_title(result_dtype), ")");
  const std::optional<IntList> dims = dim && dim->empty() ? std::nullopt : dim;
  if (p < 0 || std::isinf(p)) {  // max/min/negative powers have no identity to start from
    const DimVector reduced = reduction_mask(dims, self.dim(), "linalg.vector_norm");
    EMBER_CHECK(dims || self.numel() > 0, Runtime, "linalg.vector_norm cannot compute the ", p,
                " norm on an empty tensor because the operation does not have an identity");
    for (int64_t d = 0; d < self.dim(); ++d)
      EMBER_CHECK(!(reduced[d] && self.sizes()[d] == 0), Runtime, "linalg.vector_norm cannot compute the ", p,
                  " norm on the dimension ", d, " because this dimension is empty and the operation does not have an identity");
  }
  // The shared setup: input in the compute dtype (float32 for 16-bit floats), output laid out, finish() squeezes and casts.
  ReduceIterator r = ReduceIterator::make("linalg.vector_norm", self, dims, keepdim, dtype, ReduceResult::Same, kFloating,
                                          4, false, Tensor());
  const TensorIterator it = TensorIterator::reduction(r.output, r.input);
  if (r.output.dtype() == ScalarType::Float32) vector_norm_into(it, p, r.output.data<float>(), r.output.numel());
  else vector_norm_into(it, p, r.output.data<double>(), r.output.numel());
  return r.finish();
}

}  // namespace ember::cpu
