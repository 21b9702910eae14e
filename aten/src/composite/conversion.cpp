// zero_ and the `to` family: conversions are a fresh tensor and a copy_.
#include "fresh_copy.h"
#include <optional>

#include "ember/allocator.h"
#include "ember/autograd.h"
#include "ember/ops/fill_.h"
#include "ember/ops/to.h"
#include "ember/ops/zero_.h"
#include "ember/tensor.h"

namespace ember::native {

namespace {

// "cuda" (no index) names whichever CUDA device the tensor is on.
bool same_device(Device have, Device want) {
  return have.type == want.type && (have.index == want.index || have.index < 0 || want.index < 0);
}

// The gradient of a conversion: converted back to the input's dtype and device.
struct ToCopyBackward final : Node {
  std::string default_name() const override { return "ToCopyBackward0"; }
  TensorList apply(TensorList&& grads) override {
    TensorList out(1);
    if (!should_compute(0) || !grads[0].defined()) return out;
    const InputMeta& meta = input_meta[0];
    Tensor g = grads[0];
    if (!same_device(g.device(), meta.device)) g = ember::to_device(g, meta.device, meta.dtype, false, false);
    else if (g.dtype() != meta.dtype) g = ember::to_dtype(g, meta.dtype, false, false);
    out[0] = g;
    return out;
  }
};

Tensor convert(const Tensor& self, Device device, ScalarType dtype) {
  return fresh_copy<ToCopyBackward>(self, device, dtype);
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
