// copy_ (any dtype to any dtype, with broadcasting) and fill_ on the CPU.
// Kernels never bump versions: the generated in-place entries do.
#include <cstring>

#include "ember/cpu/loops.h"
#include "ember/cuda/copy.h"
#include "ember/dispatch.h"
#include "ember/ops/copy_.h"
#include "ember/ops/fill_.h"
#include "ember/scalar_convert.h"

namespace ember::cpu {

Tensor copy_cpu(const Tensor& self, const Tensor& src, bool non_blocking) {
  if (!src.device().is_cpu()) return cuda::copy_across_devices(self, src, non_blocking);
  if (self.is_same(src)) return self;
  if (self.dtype() == src.dtype() && self.sizes() == src.sizes() && self.is_contiguous() && src.is_contiguous()) {
    if (self.data_ptr() != src.data_ptr())
      std::memmove(self.data_ptr(), src.data_ptr(), (size_t)self.numel() * self.itemsize());
    return self;
  }
  TensorIterator it = TensorIterator::unary_copy(self, src, "copy_");
  visit_dtype(self.dtype(), [&]<typename D>() {
    visit_dtype(src.dtype(), [&]<typename S>() {
      cpu_kernel(it, [](S x) -> D { return static_cast<D>(x); });
    });
  });
  return self;
}

Tensor fill_cpu(const Tensor& self, const Scalar& value) {
  TensorIterator it = TensorIterator::nullary(self);
  visit_dtype(self.dtype(), [&]<typename T>() {
    const T v = value.to<T>();  // checked before dispatch (fits_self)
    cpu_kernel(it, [v]() -> T { return v; });
  });
  return self;
}

namespace {
// The core's copy table (ember/dispatch.h) gets this kernel when the library loads.
[[maybe_unused]] const bool kCopyRegistered = (register_copy_kernel(DeviceType::CPU, copy_cpu), true);
}  // namespace

}  // namespace ember::cpu
