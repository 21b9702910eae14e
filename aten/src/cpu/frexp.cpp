// frexp on the CPU: std::frexp of each element (half types through float, as PyTorch's), the
// mantissa in the input's dtype and the exponent as int32.
#include <cmath>
#include <tuple>
#include <type_traits>

#include "ember/dtype.h"
#include "ember/ops/_frexp.h"
#include "ember/ops/contiguous.h"
#include "ember/parallel.h"
#include "ember/tensor.h"

namespace ember::cpu {

std::tuple<Tensor, Tensor> frexp_cpu(const Tensor& self) {
  const Tensor x = ember::contiguous(self);
  Tensor mantissa = empty_tensor(self.sizes(), self.dtype(), self.device());
  Tensor exponent = empty_tensor(self.sizes(), ScalarType::Int32, self.device());
  visit_floating(self.dtype(), "frexp_cpu", [&]<typename T>() {
    const T* in = x.data<T>();
    T* m = mantissa.data<T>();
    int32_t* e = exponent.data<int32_t>();
    using M = std::conditional_t<std::is_same_v<T, double>, double, float>;
    parallel_for(x.numel(), kGrainSize, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) {
        int exp = 0;
        const M v = M(in[i]);
        m[i] = T(std::frexp(v, &exp));
        e[i] = std::isfinite(v) ? exp : 0;  // C leaves inf's and nan's exponent unspecified; PyTorch's is 0
      }
    });
  });
  return {mantissa, exponent};
}

}  // namespace ember::cpu
