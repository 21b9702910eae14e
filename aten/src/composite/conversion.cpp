// zero_ and the `to` family: conversions are a fresh tensor and a copy_.
#include <optional>

#include "ember/allocator.h"
#include "ember/autograd.h"
#include "ember/ops.h"
#include "ember/tensor.h"

namespace ember::native {

namespace {

// A CUDA target needs a registered CUDA allocator.
void check_device_available(Device device, const char* op) {
  if (device.is_cuda())
    EMBER_CHECK(allocator_for(DeviceType::CUDA) != nullptr, Runtime, op,
                "(): CUDA is not available (ember was built without CUDA or no GPU is present)");
}

// "cuda" (no index) names whichever CUDA device the tensor is on.
bool same_device(Device have, Device want) {
  return have.type == want.type && (have.index == want.index || have.index < 0 || want.index < 0);
}

Tensor convert(const Tensor& self, Device device, ScalarType dtype) {
  Tensor result = empty_tensor(self.sizes(), dtype, device);
  if (is_floating(dtype)) {
    ember::copy_(result, self);
  } else {
    // Integral results never take part in autograd.
    NoGradGuard guard;
    ember::copy_(result, self);
  }
  result.storage()->version.store(0, std::memory_order_relaxed);  // a new tensor: version 0
  return result;
}

}  // namespace

Tensor zero_(const Tensor& self) { return ember::fill_(self, Scalar(int64_t(0))); }

Tensor to_dtype(const Tensor& self, ScalarType dtype, bool non_blocking, bool copy) {
  (void)non_blocking;
  if (dtype == self.dtype() && !copy) return self;
  return convert(self, self.device(), dtype);
}

Tensor to_device(const Tensor& self, Device device, std::optional<ScalarType> dtype, bool non_blocking, bool copy) {
  (void)non_blocking;
  check_device_available(device, "to");
  ScalarType dt = dtype.value_or(self.dtype());
  bool same = same_device(self.device(), device);
  if (same && dt == self.dtype() && !copy) return self;
  return convert(self, same ? self.device() : device, dt);
}

Tensor to_other(const Tensor& self, const Tensor& other, bool non_blocking, bool copy) {
  return native::to_device(self, other.device(), other.dtype(), non_blocking, copy);
}

}  // namespace ember::native
