// nonzero on the CPU: one pass counts, a second writes the coordinates (row-major order).
#include <vector>

#include "ember/dispatch.h"
#include "ember/dtype.h"
#include "ember/index_plan.h"
#include "ember/ops/nonzero.h"
#include "ember/tensor.h"

namespace ember::cpu {

Tensor nonzero_cpu(const Tensor& self) {
  const int64_t nd = self.dim();
  const std::vector<int64_t> offs = enumerate_offsets(self.sizes(), self.strides());
  std::vector<char> hit(offs.size());
  int64_t count = 0;
  visit_dtype(self.dtype(), [&]<typename T>() {
    const T* p = self.data<T>();
    for (size_t l = 0; l < offs.size(); ++l) {
      hit[l] = static_cast<opmath_t<T>>(p[offs[l]]) != opmath_t<T>(0);
      count += hit[l];
    }
  });
  Tensor out = empty_tensor({count, nd}, ScalarType::Int64, self.device());
  int64_t* w = out.data<int64_t>();
  DimVector coord((size_t)nd, 0);
  for (size_t l = 0; l < offs.size(); ++l) {
    if (hit[l])
      for (int64_t d = 0; d < nd; ++d) *w++ = coord[d];
    for (int64_t d = nd - 1; d >= 0; --d) {
      if (++coord[d] < self.size(d)) break;
      coord[d] = 0;
    }
  }
  return out;
}

}  // namespace ember::cpu
