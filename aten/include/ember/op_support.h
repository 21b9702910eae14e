#pragma once
// Small checks and conversions that generated op entries call.
#include <optional>
#include "ember/iterator.h"
#include "ember/tensor.h"

namespace ember {

[[noreturn]] void kernel_missing(const char* op, Device device);

template <typename Fn>
Fn kernel_for(Fn* table, Device device, const char* op) {
  Fn fn = table[(int)device.type];
  if (!fn) kernel_missing(op, device);
  return fn;
}

// PyTorch's overflow check of a Scalar written into a tensor of dtype `dt`
// ("value cannot be converted to type int8_t without overflow"), before dispatch.
void check_scalar_fits(const Scalar& s, ScalarType dt);

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
// PyTorch's memory-overlap checks for a tensor an op writes (MemOverlap):
// a stride-0 dim of size > 1 in the written tensor raises; layouts that might
// overlap otherwise are too hard to prove and pass, as in PyTorch.
void check_no_internal_overlap(const Tensor& written, const char* op);
// Raises when `input` shares some but not all of `written`'s memory (the same
// view, `a.add_(a)`, is fine; `a.add_(a.t())` or `v[1:].add_(v[:-1])` are not).
void check_no_partial_overlap(const Tensor& written, const Tensor& input, const char* op);
void check_no_partial_overlap(const Tensor& written, const TensorList& inputs, const char* op);
// Raises when `input` shares any memory with `written`, the same view included (PyTorch's cat).
void check_no_overlap(const Tensor& written, const Tensor& input, const char* op);
void check_no_overlap(const Tensor& written, const TensorList& inputs, const char* op);
// True when `t` has a stride-0 dim of size > 1 (an expanded tensor): what check_no_internal_overlap refuses.
bool has_internal_overlap(const Tensor& t);
// Both checks, for an op that reads `inputs` elementwise into `written`.
void check_write_overlap(const Tensor& written, std::initializer_list<const Tensor*> inputs, const char* op);
// The value an in-place op overwrites, kept for its backward.
Tensor clone_for_save(const Tensor& t);
void set_factory_requires_grad(const Tensor& t, const char* op);
// An in-place op computed out of place must fit `self`: same shape, castable dtype.
void check_inplace_result(const Tensor& self, const Tensor& value, const char* op);
// Resizes `out` to `value`'s shape when needed and copies into it (out= of non-pointwise ops).
void copy_into_out(const Tensor& out, const Tensor& value, const char* op);
// Gives `t` new sizes in place (contiguous), reallocating when its storage is too small.
void resize_(const Tensor& t, const DimVector& sizes);
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
