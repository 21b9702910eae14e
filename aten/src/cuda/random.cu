// Random tensors on the device: thread b computes Philox block first + b and
// writes its kPerBlock elements, so values match the CPU fill element for element.
#include "ember/cuda/random.h"
#include "ember/cuda/runtime.h"
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

void philox_fill(const Tensor& t, RandomKind kind, uint64_t seed, uint64_t first, int64_t low, uint64_t range) {
  EMBER_CHECK(t.is_contiguous(), Runtime, "philox_fill: expected a contiguous tensor");
  visit_dtype(t.dtype(), [&]<typename T>() {
    random::with_transform<T>(kind, low, range, [&](auto f) { launch<T>(t, seed, first, f); });
  });
}

}  // namespace ember::cuda
