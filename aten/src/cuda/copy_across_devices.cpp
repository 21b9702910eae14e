// Copies between the CPU and a GPU or between GPUs. Bytes cross the bus only
// between contiguous buffers of the target dtype; casts and strided layouts
// are done by copy_ on one side (a kernel on the GPU side).
#include "ember/autograd.h"
#include "ember/cuda/copy.h"
#include "ember/cuda/runtime.h"
#include "ember/ops/contiguous.h"
#include "ember/ops/copy_.h"
#include "ember/ops/expand.h"
#include "ember/ops/to.h"

namespace ember::cuda {

namespace {

// `src` broadcast to `shape`, cast to `dtype`, contiguous, on its own device.
Tensor staged(const Tensor& src, const DimVector& shape, ScalarType dtype) {
  Tensor t = src.sizes() == shape ? src : ember::expand(src, shape);
  if (t.dtype() != dtype) t = ember::to_dtype(t, dtype, false, false);
  return ember::contiguous(t);
}

}  // namespace

Tensor copy_across_devices(const Tensor& self, const Tensor& src, bool non_blocking) {
  NoGradGuard no_grad;
  if (self.numel() == 0) return self;
  Tensor from = staged(src, self.sizes(), self.dtype());
  Tensor into = self.is_contiguous() ? self : empty_tensor(self.sizes(), self.dtype(), self.device());
  const size_t nbytes = (size_t)self.numel() * self.itemsize();
  if (self.device().is_cuda() && src.device().is_cuda()) {
    // Between GPUs: the copy is ordered after the work queued on the source.
    DeviceGuard guard(self.device().index);
    EMBER_CUDA_CHECK(cudaMemcpyPeerAsync(into.data_ptr(), self.device().index, from.data_ptr(), src.device().index,
                                         nbytes, current_cuda_stream(self.device().index)));
  } else if (self.device().is_cuda()) {
    DeviceGuard guard(self.device().index);
    cudaStream_t stream = current_cuda_stream(self.device().index);
    EMBER_CUDA_CHECK(cudaMemcpyAsync(into.data_ptr(), from.data_ptr(), nbytes, cudaMemcpyHostToDevice, stream));
    // Pageable host memory: the source may be freed once the copy is done.
    if (!non_blocking) EMBER_CUDA_CHECK(cudaStreamSynchronize(stream));
  } else {
    DeviceGuard guard(src.device().index);
    cudaStream_t stream = current_cuda_stream(src.device().index);
    EMBER_CUDA_CHECK(cudaMemcpyAsync(into.data_ptr(), from.data_ptr(), nbytes, cudaMemcpyDeviceToHost, stream));
    EMBER_CUDA_CHECK(cudaStreamSynchronize(stream));  // the host reads it next
  }
  if (!into.is_same(self)) ember::copy_(self, into, false);
  return self;
}

}  // namespace ember::cuda
