#pragma once
// A PyTorch-style caching allocator for device memory. It carves blocks out
// of segments obtained from a RawDeviceMemory backend (cudaMalloc on a GPU,
// host memory in tests) and keeps freed blocks for reuse by the same stream.
#include <cstddef>
#include <cstdint>
#include <memory>

#include "ember/cuda/api.h"

namespace ember {

// Where segments come from: cudaMalloc/cudaFree in the real backend, host memory in tests.
struct RawDeviceMemory {
  virtual ~RawDeviceMemory() = default;
  virtual void* allocate(size_t nbytes, int device) = 0;  // nullptr when out of memory
  virtual void release(void* ptr, int device) = 0;
  // Called before cached segments are released (the CUDA backend synchronizes there).
  virtual void before_release(int device) {}
};

class DeviceCachingAllocator {
 public:
  explicit DeviceCachingAllocator(RawDeviceMemory* raw);
  // Does not release segments (at process exit the driver may already be gone); empty_cache() does.
  ~DeviceCachingAllocator();
  DeviceCachingAllocator(const DeviceCachingAllocator&) = delete;
  DeviceCachingAllocator& operator=(const DeviceCachingAllocator&) = delete;

  void* malloc(size_t nbytes, int device, uintptr_t stream);  // nbytes 0 -> nullptr, no block
  void free(void* ptr);                                       // nullptr ok; unknown ptr -> Error Runtime
  void empty_cache();                                         // all devices
  cuda::MemoryStats stats(int device) const;
  void reset_peak(int device);
  size_t block_size(void* ptr) const;  // rounded size of a live block (for tests)

 private:
  struct State;
  RawDeviceMemory* raw_;
  std::unique_ptr<State> s_;
};

}  // namespace ember
