#include "ember/dispatch.h"

namespace ember {

namespace {
// Filled by the device layers' static registrars, before any tensor exists.
CopyKernel g_copy_kernels[kNumDeviceTypes] = {};
}  // namespace

void kernel_missing(const char* op, Device device) {
  EMBER_FAIL(NotImplemented, op, ": no kernel for device ", device.str(),
             device.is_cuda() ? " (ember was built without CUDA kernels for it)" : "");
}

void register_copy_kernel(DeviceType type, CopyKernel kernel) { g_copy_kernels[(int)type] = kernel; }

void copy_elements(const Tensor& dst, const Tensor& src) {
  kernel_for(g_copy_kernels, dst.device(), "copy_")(dst, src, false);
}

Tensor copy_to(const Tensor& t, Device device, ScalarType dtype) {
  Tensor out = empty_tensor(t.sizes(), dtype, device);
  copy_elements(out, t);
  return out;
}

Tensor cast_to(const Tensor& t, ScalarType dtype) {
  return t.dtype() == dtype ? t : copy_to(t, t.device(), dtype);
}

void copy_into_out(const Tensor& out, const Tensor& value, const char* op) {
  EMBER_CHECK(can_cast(value.dtype(), out.dtype()), Runtime, op, ": result type ", dtype_title(value.dtype()),
              " can't be cast to the desired output type ", dtype_title(out.dtype()));
  if (out.sizes() != value.sizes()) resize_(out, value.sizes());
  copy_elements(out, value);
}

}  // namespace ember
