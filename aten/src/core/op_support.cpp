#include "ember/op_support.h"

#include <algorithm>

#include "ember/autograd.h"
#include "ember/ops/any.h"
#include "ember/ops/clone.h"
#include "ember/ops/copy_.h"
#include "ember/ops/eq.h"
#include "ember/ops/to.h"
#include "ember/scalar_convert.h"

namespace ember {

void kernel_missing(const char* op, Device device) {
  EMBER_FAIL(NotImplemented, op, ": no kernel for device ", device.str(),
             device.is_cuda() ? " (ember was built without CUDA kernels for it)" : "");
}

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

void check_scalar_fits(const Scalar& s, ScalarType dt) {
  visit_dtype(dt, [&]<typename T>() { (void)checked_scalar<T>(s); });
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

namespace {

// PyTorch's is_non_overlapping_and_dense: the elements tile one memory block.
bool is_non_overlapping_and_dense(const Tensor& t) {
  if (t.numel() == 0 || t.is_contiguous()) return true;
  const int64_t nd = t.dim();
  const DimVector& sizes = t.sizes();
  const DimVector& strides = t.strides();
  if (nd == 1) return sizes[0] < 2 || strides[0] == 1;
  DimVector perm(nd);
  for (int64_t d = 0; d < nd; ++d) perm[d] = d;
  // Size-0/1 dims last, the rest by increasing stride.
  std::stable_sort(perm.begin(), perm.end(), [&](int64_t a, int64_t b) {
    if (sizes[a] < 2) return false;
    if (sizes[b] < 2) return true;
    return strides[a] < strides[b];
  });
  int64_t expected = 1;
  for (int64_t d : perm) {
    if (sizes[d] < 2) return true;
    if (strides[d] != expected) return false;
    expected *= sizes[d];
  }
  return true;
}

enum class Overlap { No, Full, Partial, TooHard };

// PyTorch's get_overlap_status.
Overlap overlap_status(const Tensor& a, const Tensor& b) {
  if (a.is_same(b)) return Overlap::Full;
  if (a.numel() == 0 || b.numel() == 0) return Overlap::No;
  if (!is_non_overlapping_and_dense(a) || !is_non_overlapping_and_dense(b)) return Overlap::TooHard;
  if (a.storage() != b.storage()) return Overlap::No;
  const char* a_begin = static_cast<const char*>(a.data_ptr());
  const char* a_end = a_begin + a.numel() * (int64_t)a.itemsize();
  const char* b_begin = static_cast<const char*>(b.data_ptr());
  const char* b_end = b_begin + b.numel() * (int64_t)b.itemsize();
  if (a_begin == b_begin && a_end == b_end) return a.strides() == b.strides() ? Overlap::Full : Overlap::Partial;
  return a_begin < b_end && b_begin < a_end ? Overlap::Partial : Overlap::No;
}

}  // namespace

bool has_internal_overlap(const Tensor& t) {
  if (is_non_overlapping_and_dense(t)) return false;
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.strides()[d] == 0 && t.sizes()[d] > 1) return true;
  return false;
}

void check_no_internal_overlap(const Tensor& written, const char* op) {
  EMBER_CHECK(!has_internal_overlap(written), Runtime, op,
              ": unsupported operation: more than one element of the written-to tensor refers to a single memory "
              "location. Please clone() the tensor before performing the operation.");
}

namespace {

void check_overlap_status(const Tensor& written, const Tensor& input, bool allow_full, const char* op) {
  if (!input.defined()) return;
  const Overlap s = overlap_status(written, input);
  EMBER_CHECK(s != Overlap::Partial && (allow_full || s != Overlap::Full), Runtime, op,
              ": unsupported operation: some elements of the input tensor and the written-to tensor refer to a "
              "single memory location. Please clone() the tensor before performing the operation.");
}

}  // namespace

void check_no_partial_overlap(const Tensor& written, const Tensor& input, const char* op) {
  check_overlap_status(written, input, true, op);
}

void check_no_partial_overlap(const Tensor& written, const TensorList& inputs, const char* op) {
  for (const Tensor& t : inputs) check_no_partial_overlap(written, t, op);
}

void check_no_overlap(const Tensor& written, const Tensor& input, const char* op) {
  check_overlap_status(written, input, false, op);
}

void check_no_overlap(const Tensor& written, const TensorList& inputs, const char* op) {
  for (const Tensor& t : inputs) check_no_overlap(written, t, op);
}

void check_write_overlap(const Tensor& written, std::initializer_list<const Tensor*> inputs, const char* op) {
  check_no_internal_overlap(written, op);
  for (const Tensor* t : inputs) check_no_partial_overlap(written, *t, op);
}

Tensor clone_for_save(const Tensor& t) {
  NoGradGuard guard;
  return ember::clone(t);
}

void set_factory_requires_grad(const Tensor& t, const char* op) {
  EMBER_CHECK(is_floating(t.dtype()), Runtime, op,
              ": only Tensors of floating point dtype can require gradients (got ", dtype_name(t.dtype()), ")");
  t.set_requires_grad(true);
}

void resize_(const Tensor& t, const DimVector& sizes) {
  TensorImpl* impl = t.impl();
  const size_t nbytes = storage_nbytes(sizes, itemsize(impl->dtype));
  if (impl->offset * itemsize(impl->dtype) + nbytes > impl->storage->nbytes) {
    impl->storage = new_storage(nbytes, impl->device());
    impl->offset = 0;
  }
  impl->sizes = sizes;
  impl->strides = contiguous_strides(sizes);
  impl->refresh_geometry();
}

void check_inplace_result(const Tensor& self, const Tensor& value, const char* op) {
  EMBER_CHECK(can_cast(value.dtype(), self.dtype()), Runtime, op, ": result type ", dtype_title(value.dtype()),
              " can't be cast to the desired output type ", dtype_title(self.dtype()));
  EMBER_CHECK(value.sizes() == self.sizes(), Runtime, op, ": output with shape ", self.sizes(),
              " doesn't match the broadcast shape ", value.sizes());
}

void copy_into_out(const Tensor& out, const Tensor& value, const char* op) {
  EMBER_CHECK(can_cast(value.dtype(), out.dtype()), Runtime, op, ": result type ", dtype_title(value.dtype()),
              " can't be cast to the desired output type ", dtype_title(out.dtype()));
  if (out.sizes() != value.sizes()) resize_(out, value.sizes());
  kernel_for(dispatch::copy_, out.device(), "copy_")(out, value, false);
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
