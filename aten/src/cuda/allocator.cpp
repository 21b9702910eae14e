// Device memory for CUDA tensors: the caching allocator of
// ember/device_caching_allocator.h over cudaMalloc/cudaFree, registered as
// the CUDA slot of the allocator table when a GPU is present.
#include "ember/allocator.h"
#include "ember/cuda/runtime.h"
#include "ember/device_caching_allocator.h"
#include "ember/register_kernels.h"

namespace ember {
namespace cuda {
namespace {

struct CudaMemory final : RawDeviceMemory {
  void* allocate(size_t nbytes, int device) override {
    DeviceGuard guard(device);
    void* p = nullptr;
    if (cudaMalloc(&p, nbytes) != cudaSuccess) {
      cudaGetLastError();  // out of memory is reported by the caller
      return nullptr;
    }
    return p;
  }
  void release(void* ptr, int device) override {
    DeviceGuard guard(device);
    EMBER_CUDA_CHECK(cudaFree(ptr));
  }
  // Cached blocks may still be read by queued kernels.
  void before_release(int device) override {
    DeviceGuard guard(device);
    EMBER_CUDA_CHECK(cudaDeviceSynchronize());
  }
};

DeviceCachingAllocator& caching() {
  static CudaMemory raw;
  static auto* alloc = new DeviceCachingAllocator(&raw);  // leaked: tensors may die after static destructors
  return *alloc;
}

// A block is reused by the stream that was current when it was allocated.
class CudaAllocator final : public Allocator {
 public:
  DataPtr allocate(size_t nbytes, int device) override {
    if (device < 0) device = current_device();
    EMBER_CHECK(device < device_count(), Runtime, "CUDA error: invalid device ordinal ", device, " (",
                device_count(), " device(s) present)");
    void* p = caching().malloc(nbytes, device, current_stream(device));
    return {p, nullptr, &release_block};
  }

 private:
  static void release_block(void*, void* ptr) { caching().free(ptr); }
};

}  // namespace

MemoryStats memory_stats(int device) { return caching().stats(device < 0 ? current_device() : device); }

void reset_peak_memory_stats(int device) { caching().reset_peak(device < 0 ? current_device() : device); }

void empty_cache() {
  if (is_available()) caching().empty_cache();
}

void init() {
  static bool done = false;
  if (done) return;
  done = true;
  register_cuda_kernels();
  if (is_available()) {
    static CudaAllocator allocator;
    register_allocator(DeviceType::CUDA, &allocator);
  }
}

}  // namespace cuda
}  // namespace ember
