// _philox_fill_ on the device: thread b computes Philox block first + b and
// writes its kPerBlock elements, so values match the CPU fill element for element.
#include <string>

#include "ember/cuda/runtime.h"
#include "ember/dispatch.h"
#include "ember/ops/_philox_fill_.h"
#include "ember/random_transforms.h"

namespace ember::cuda {
namespace {

constexpr int kThreads = 256;

template <typename T, typename F>
__global__ void __launch_bounds__(kThreads) philox_kernel(T* out, int64_t n, uint64_t seed, uint64_t first, F f) {
  const int64_t b = (int64_t)blockIdx.x * kThreads + threadIdx.x;
  const int64_t base = b * F::kPerBlock;
  if (base >= n) return;
  Philox ph(seed, first + (uint64_t)b);
#pragma unroll
  for (int k = 0; k < F::kPerBlock; ++k)
    if (base + k < n) out[base + k] = f(ph, k);
}

template <typename T, typename F>
void launch(const Tensor& t, uint64_t seed, uint64_t first, F f) {
  const int64_t n = t.numel();
  if (n == 0) return;
  const int64_t blocks = (n + F::kPerBlock - 1) / F::kPerBlock;
  const int64_t grid = (blocks + kThreads - 1) / kThreads;
  EMBER_CHECK(grid <= (int64_t)INT32_MAX, Runtime, "random: too many elements for one launch");
  const int device = t.device().index;
  DeviceGuard guard(device);
  philox_kernel<T, F><<<(unsigned)grid, kThreads, 0, current_cuda_stream(device)>>>(t.data<T>(), n, seed, first, f);
  check_launch("philox_fill");
}

}  // namespace

Tensor philox_fill_cuda(const Tensor& self, const std::string& distribution, int64_t seed, int64_t offset,
                        int64_t low, int64_t high) {
  const random::FillArgs args = random::fill_args(self.dtype(), distribution, low, high, "_philox_fill_");
  if (self.numel() == 0) return self;
  // A strided self is filled through a contiguous buffer, element i in its row-major order.
  const Tensor target = self.is_contiguous() ? self : empty_tensor(self.sizes(), self.dtype(), self.device());
  visit_dtype(self.dtype(), [&]<typename T>() {
    random::with_transform<T>(args.kind, args.low, args.range,
                              [&](auto f) { launch<T>(target, (uint64_t)seed, (uint64_t)offset, f); });
  });
  if (!target.is_same(self)) copy_elements(self, target);
  return self;
}

}  // namespace ember::cuda
