// copy_ and fill_ on CUDA; a copy from another device goes through
// copy_across_devices (copy_across_devices.cpp).
#include "ember/cuda/copy.h"
#include "ember/cuda/loops.cuh"
#include "ember/cuda/runtime.h"
#include "ember/dispatch.h"
#include "ember/ops/copy_.h"
#include "ember/ops/fill_.h"

namespace ember::cuda {

namespace {

template <typename D, typename S>
struct CastTo {
  EMBER_HD D operator()(S x) const { return static_cast<D>(x); }
};

template <typename T>
struct FillWith {
  T value;
  EMBER_HD T operator()() const { return value; }
};

bool plain_bytes(const Tensor& self, const Tensor& src) {
  return self.dtype() == src.dtype() && self.sizes() == src.sizes() && self.is_contiguous() && src.is_contiguous();
}

// Same device: a cast-and-restride kernel, or one memcpy when nothing changes.
void copy_on_device(const Tensor& self, const Tensor& src) {
  DeviceGuard guard(self.device().index);
  if (plain_bytes(self, src)) {
    if (self.data_ptr() != src.data_ptr() && self.numel() > 0)
      EMBER_CUDA_CHECK(cudaMemcpyAsync(self.data_ptr(), src.data_ptr(), (size_t)self.numel() * self.itemsize(),
                                       cudaMemcpyDeviceToDevice, current_cuda_stream(self.device().index)));
    return;
  }
  TensorIterator it = TensorIterator::unary_copy(self, src, "copy_");
  visit_dtype(self.dtype(), [&]<typename D>() {
    visit_dtype(src.dtype(), [&]<typename S>() { gpu_kernel(it, CastTo<D, S>{}, "copy_"); });
  });
}

}  // namespace

Tensor copy_cuda(const Tensor& self, const Tensor& src, bool non_blocking) {
  if (self.is_same(src)) return self;
  if (src.device() == self.device()) {
    copy_on_device(self, src);
    return self;
  }
  return copy_across_devices(self, src, non_blocking);
}

Tensor fill_cuda(const Tensor& self, const Scalar& value) {
  TensorIterator it = TensorIterator::nullary(self);
  visit_dtype(self.dtype(), [&]<typename T>() { gpu_kernel(it, FillWith<T>{value.to<T>()}, "fill_"); });
  return self;
}

namespace {
// The core's copy table (ember/dispatch.h) gets this kernel when the library loads.
[[maybe_unused]] const bool kCopyRegistered = (register_copy_kernel(DeviceType::CUDA, copy_cuda), true);
}  // namespace

}  // namespace ember::cuda
