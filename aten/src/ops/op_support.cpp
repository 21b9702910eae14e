// The checks and conversions the generated op entries call: the op layer's
// support. What the core needs of it (dispatch, overlap checks, copies) is in
// aten/src/core (ember/dispatch.h, ember/overlap.h).
#include "ember/op_support.h"

#include <algorithm>

#include "ember/autograd.h"
#include "ember/ops/any.h"
#include "ember/ops/clone.h"
#include "ember/ops/eq.h"
#include "ember/ops/to.h"

namespace ember {

void check_same_device(const char* op, std::initializer_list<const Tensor*> tensors) {
  const Tensor* first = nullptr;
  for (const Tensor* t : tensors) {
    if (!t->defined()) continue;
    if (!first) { first = t; continue; }
    EMBER_CHECK(t->device() == first->device(), Runtime, op,
                ": Expected all tensors to be on the same device, but found at least two devices, ",
                first->device().str(), " and ", t->device().str(), "!");
  }
}

void check_kernel_args(const char* op, const ScalarType* dtypes, int n, std::initializer_list<const Tensor*> tensors,
                       std::optional<ScalarType> as) {
  check_same_device(op, tensors);
  for (const Tensor* t : tensors) {
    if (!t->defined()) continue;
    ScalarType dt = as.value_or(t->dtype());
    if (!std::count(dtypes, dtypes + n, dt)) fail_dtype_not_implemented(op, dt);
    break;
  }
}

// These value checks read the data back, so they run on the CPU only: on a GPU
// they would stall every integer division on a sync (PyTorch's CUDA ops do not check either).
void check_nonzero_divisor(const TensorIterator& iter, int operand, const char* op) {
  if (!is_integral(iter.compute_dtype(), true) || iter.device().is_cuda()) return;
  const Tensor& d = iter.operand(operand);
  NoGradGuard guard;
  bool any_zero = ember::any(ember::eq(d, wrap_number(Scalar(int64_t(0)))), std::nullopt, false).item().to_bool();
  // PyTorch raises RuntimeError("ZeroDivisionError") for integer division by zero on the CPU.
  EMBER_CHECK(!any_zero, Runtime, "ZeroDivisionError: ", op, ": integer division by zero");
}

void check_nonnegative_exponent(const TensorIterator& iter, const Scalar& exponent, const char* op) {
  EMBER_CHECK(!(is_integral(iter.compute_dtype(), false) && exponent.to_double() < 0), Runtime, op,
              ": Integers to negative integer powers are not allowed.");
}

void reject_bool_inputs(std::initializer_list<const Tensor*> tensors, const char* message) {
  for (const Tensor* t : tensors) EMBER_CHECK(t->dtype() != ScalarType::Bool, Runtime, message);
}

Tensor clone_for_save(const Tensor& t) {
  return ember::clone(t);
}

void set_factory_requires_grad(const Tensor& t, const char* op) {
  EMBER_CHECK(is_floating(t.dtype()), Runtime, op,
              ": only Tensors of floating point dtype can require gradients (got ", dtype_name(t.dtype()), ")");
  t.set_requires_grad(true);
}

void check_inplace_result(const Tensor& self, const Tensor& value, const char* op) {
  EMBER_CHECK(can_cast(value.dtype(), self.dtype()), Runtime, op, ": result type ", dtype_title(value.dtype()),
              " can't be cast to the desired output type ", dtype_title(self.dtype()));
  EMBER_CHECK(value.sizes() == self.sizes(), Runtime, op, ": output with shape ", self.sizes(),
              " doesn't match the broadcast shape ", value.sizes());
}

Device first_device(const TensorList& ts, const char* op) {
  EMBER_CHECK(!ts.empty(), Runtime, op, "(): expected a non-empty list of Tensors");
  return ts[0].device();
}

SoftmaxArgs softmax_args(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype, const char* op) {
  Tensor input = dtype.has_value() && *dtype != self.dtype() ? ember::to_dtype(self, *dtype, false, false) : self;
  if (!is_floating(input.dtype())) fail_dtype_not_implemented(op, input.dtype());
  const int64_t d = wrap_dim(dim, std::max<int64_t>(input.dim(), 1), op);
  Tensor output = empty_tensor(input.sizes(), input.dtype(), input.device());
  return {input, output, d};
}

}  // namespace ember
