// max_unpool2d: each input element written at its index (a flat position h * oW + w in its
// output plane, as max_pool2d's indices) of a zero output; planes run in parallel. Checks and
// messages follow PyTorch's max_unpooling2d_forward_out_cpu.
#include <algorithm>
#include <atomic>
#include <cstdint>

#include "ember/dispatch.h"
#include "ember/dtype.h"
#include "ember/errors.h"
#include "ember/ops/contiguous.h"
#include "ember/ops/max_unpool2d.h"
#include "ember/parallel.h"
#include "ember/tensor.h"

namespace ember::cpu {

Tensor max_unpool2d_cpu(const Tensor& self, const Tensor& indices, const IntList& output_size) {
  EMBER_CHECK(indices.dtype() == ScalarType::Int64, Runtime, "elements in indices should be type int64 but got: ",
              dtype_title(indices.dtype()));
  EMBER_CHECK(output_size.size() == 2, Runtime, "There should be exactly two elements (height, width) in output_size, "
              "but got ", output_size.size(), " elements.");
  const int64_t nd = self.dim();
  EMBER_CHECK(nd == 3 || nd == 4, Runtime, "Input to max_unpooling2d should be a 3d or 4d Tensor, but got a tensor "
              "with ", nd, " dimensions.");
  EMBER_CHECK(self.sizes() == indices.sizes(), Runtime, "Expected shape of indices to be same as that of the input "
              "tensor (", shape_str(self.sizes()), ") but got indices tensor with shape: ", shape_str(indices.sizes()));
  for (int64_t d = 1; d < nd; ++d)
    EMBER_CHECK(self.size(d) > 0, Runtime, "max_unpooling2d_forward_out_cpu(): Expected input to have non-zero size for "
                "non-batch dimensions, but got ", shape_str(self.sizes()), " with dimension ", d, " being empty.");
  const int64_t oH = output_size[0], oW = output_size[1];
  DimVector out_sizes = self.sizes();
  out_sizes[nd - 2] = oH;
  out_sizes[nd - 1] = oW;
  for (int64_t v : {oH, oW})
    EMBER_CHECK(v >= 0, Runtime, "Trying to create tensor with negative dimension ", v, ": ", shape_str(out_sizes));
  Tensor out = empty_tensor(out_sizes, self.dtype(), self.device());
  const int64_t in_plane = self.size(-2) * self.size(-1), out_plane = oH * oW;
  const int64_t planes = in_plane ? self.numel() / in_plane : 0;
  const Tensor input = ember::contiguous(self), ind = ember::contiguous(indices);
  // the position of the last bad index, reported after the loop as PyTorch's serial loop does
  std::atomic<int64_t> bad_at{-1};
  visit_floating(self.dtype(), "max_unpool2d", [&]<typename T>() {
    const T* x = input.data<T>();
    const int64_t* ix = ind.data<int64_t>();
    T* y = out.data<T>();
    const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(out_plane + in_plane, 1));
    parallel_for(planes, grain, [&](int64_t b, int64_t e) {
      std::fill(y + b * out_plane, y + e * out_plane, T(0));
      for (int64_t p = b; p < e; ++p) {
        const T* src = x + p * in_plane;
        const int64_t* at = ix + p * in_plane;
        T* dst = y + p * out_plane;
        for (int64_t i = 0; i < in_plane; ++i) {
          if (at[i] < 0 || at[i] >= out_plane) {
            int64_t seen = bad_at.load();
            while (seen < p * in_plane + i && !bad_at.compare_exchange_weak(seen, p * in_plane + i)) {
            }
            continue;
          }
          dst[at[i]] = src[i];
        }
      }
    });
  });
  EMBER_CHECK(bad_at.load() < 0, Runtime, "Found an invalid max index: ", ind.data<int64_t>()[bad_at.load()],
              " (output volumes are of size ", oH, "x", oW);
  return out;
}

}  // namespace ember::cpu
