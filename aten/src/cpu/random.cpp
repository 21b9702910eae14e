// _philox_fill_ on the CPU, the fill of rand, randn and randint: block b of a
// call makes elements b * k .. b * k + k - 1, so the values do not depend on
// how the blocks are split over threads (the CUDA kernel is aten/src/cuda/random.cu).
#include <algorithm>
#include <string>

#include "ember/dispatch.h"
#include "ember/ops/_philox_fill_.h"
#include "ember/parallel.h"
#include "ember/random_transforms.h"

namespace ember::cpu {

namespace {

// out[i] takes its bits from block first + i / PerBlock; f(philox, k) makes the k-th element of a block.
template <int PerBlock, typename T, typename F>
void fill_blocks(T* out, int64_t n, uint64_t seed, uint64_t first, F&& f) {
  const int64_t blocks = (n + PerBlock - 1) / PerBlock;
  parallel_for(blocks, std::max<int64_t>(kGrainSize / PerBlock, 1), [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      Philox ph(seed, first + (uint64_t)b);
      const int64_t base = b * PerBlock;
      for (int k = 0; k < PerBlock && base + k < n; ++k) out[base + k] = f(ph, k);
    }
  });
}

}  // namespace

Tensor philox_fill_cpu(const Tensor& self, const std::string& distribution, int64_t seed, int64_t offset,
                       int64_t low, int64_t high) {
  const random::FillArgs args = random::fill_args(self.dtype(), distribution, low, high, "_philox_fill_");
  const int64_t n = self.numel();
  if (n == 0) return self;
  // A strided self is filled through a contiguous buffer, element i in its row-major order.
  const Tensor target = self.is_contiguous() ? self : empty_tensor(self.sizes(), self.dtype());
  visit_dtype(self.dtype(), [&]<typename T>() {
    random::with_transform<T>(args.kind, args.low, args.range, [&](auto f) {
      fill_blocks<decltype(f)::kPerBlock>(target.data<T>(), n, (uint64_t)seed, (uint64_t)offset, f);
    });
  });
  if (!target.is_same(self)) copy_elements(self, target);
  return self;
}

}  // namespace ember::cpu
