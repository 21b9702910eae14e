#pragma once
// Allocators per device type. The CPU one caches large blocks so that
// out-of-place ops on big tensors do not page-fault on every call.
#include <cstddef>
#include "ember/device.h"

namespace ember {

struct DataPtr {
  void* ptr = nullptr;
  void* ctx = nullptr;                            // handed back to the deleter
  void (*deleter)(void* ctx, void* ptr) = nullptr;
};

struct Allocator {
  virtual ~Allocator() = default;
  // `device` is the device index (ignored on the CPU).
  virtual DataPtr allocate(size_t nbytes, int device) = 0;
};

Allocator* cpu_allocator();
Allocator* allocator_for(DeviceType t);
void register_allocator(DeviceType t, Allocator* a);
// RuntimeError "<op>(): CUDA is not available (...)" when `device`'s type has no
// allocator (CUDA, the only type that can be absent: no CUDA build or no GPU).
void check_device_available(Device device, const char* op);

struct CpuCacheStats { size_t cached_bytes, allocated_bytes; };
CpuCacheStats cpu_cache_stats();
void cpu_empty_cache();
// Bytes of CPU memory held by tensors now and at most since the last reset
// (as torch.cuda.memory_allocated/max_memory_allocated, for the CPU).
struct CpuMemoryStats { size_t allocated_bytes, peak_allocated_bytes; };
CpuMemoryStats cpu_memory_stats();
void cpu_reset_peak_memory_stats();

}  // namespace ember
