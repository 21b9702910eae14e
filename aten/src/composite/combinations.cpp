// combinations: the rows of positions are enumerated here, then the elements gathered
// with index_select, so autograd records that op (the gradient adds back into self).
#include <cstdint>
#include <vector>

#include "ember/errors.h"
#include "ember/ops/combinations.h"
#include "ember/ops/index_select.h"
#include "ember/ops/reshape.h"
#include "ember/ops/to.h"
#include "ember/tensor.h"

namespace ember::native {

Tensor combinations(const Tensor& self, int64_t r, bool with_replacement) {
  EMBER_CHECK(self.dim() == 1, Runtime, "combinations: Expect a 1D vector, but got shape ", self.sizes());
  EMBER_CHECK(r >= 0, Runtime, "combinations: Expect a non-negative number, but got ", r);
  if (r == 0) return empty_tensor({0}, self.dtype(), self.device());
  const int64_t n = self.size(0);
  // Positions in lexicographic order: advance the last entry that can still grow and
  // restart the ones after it from it (or one past it without replacement).
  std::vector<int64_t> rows, pos(r);
  const int64_t step = with_replacement ? 0 : 1;
  for (int64_t j = 0; j < r; ++j) pos[j] = j * step;
  const auto top = [&](int64_t j) { return with_replacement ? n - 1 : n - r + j; };
  while (n > 0 && pos[r - 1] <= top(r - 1)) {
    rows.insert(rows.end(), pos.begin(), pos.end());
    int64_t j = r - 1;
    while (j >= 0 && pos[j] == top(j)) --j;
    if (j < 0) break;
    ++pos[j];
    for (int64_t i = j + 1; i < r; ++i) pos[i] = pos[i - 1] + step;
  }
  const int64_t count = int64_t(rows.size()) / r;
  Tensor index = empty_tensor({count * r}, ScalarType::Int64, Device());
  std::copy(rows.begin(), rows.end(), index.data<int64_t>());
  if (!self.device().is_cpu()) index = ember::to_device(index, self.device(), std::nullopt, false, false);
  return ember::reshape(ember::index_select(self, 0, index), IntList{count, r});
}

}  // namespace ember::native
