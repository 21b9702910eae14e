#pragma once
// Small checks and conversions that generated op entries call (aten/src/ops),
// with the core's that they call too.
#include <optional>
#include "ember/dispatch.h"
#include "ember/iterator.h"
#include "ember/overlap.h"
#include "ember/scalar_convert.h"
#include "ember/tensor.h"

namespace ember {

// Tensors on one device; the first tensor's dtype among the op's declared dtypes.
// `as`: the dtype= argument, when the op converts its input first.
void check_kernel_args(const char* op, const ScalarType* dtypes, int n, std::initializer_list<const Tensor*> tensors,
                       std::optional<ScalarType> as = std::nullopt);
void check_same_device(const char* op, std::initializer_list<const Tensor*> tensors);
// Integer division by zero raises ZeroDivisionError, as PyTorch does on the CPU.
void check_nonzero_divisor(const TensorIterator& iter, int operand, const char* op);
// An integer power with a negative Python-number exponent raises, as PyTorch
// does (a tensor of exponents is not checked, in PyTorch either).
void check_nonnegative_exponent(const TensorIterator& iter, const Scalar& exponent, const char* op);
void reject_bool_inputs(std::initializer_list<const Tensor*> tensors, const char* message);
// The value an in-place op overwrites, kept for its backward.
Tensor clone_for_save(const Tensor& t);
void set_factory_requires_grad(const Tensor& t, const char* op);
// An in-place op computed out of place must fit `self`: same shape, castable dtype.
void check_inplace_result(const Tensor& self, const Tensor& value, const char* op);
Device first_device(const TensorList& ts, const char* op);

// The `dim` argument of reductions: nullopt means every dim.
inline std::optional<IntList> reduce_dims_arg(const std::optional<IntList>& d) { return d; }
inline std::optional<IntList> reduce_dims_arg(const IntList& d) {
  if (d.empty()) return std::nullopt;
  return d;
}
inline std::optional<IntList> reduce_dims_arg(std::optional<int64_t> d) {
  if (!d) return std::nullopt;
  return IntList{*d};
}
inline std::optional<IntList> optional_int_list(std::optional<int64_t> d) { return reduce_dims_arg(d); }

// What softmax and log_softmax kernels (every device) start from: the input
// after the dtype= cast, an empty output like it, and the wrapped dim.
struct SoftmaxArgs {
  Tensor input, output;
  int64_t dim;
};
SoftmaxArgs softmax_args(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype, const char* op);

}  // namespace ember
