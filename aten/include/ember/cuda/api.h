#pragma once
// ember's CUDA runtime as the rest of the library sees it: plain types only,
// so it compiles without the CUDA headers. Without a CUDA build every call
// but is_built/device_count raises RuntimeError (aten/src/core/cuda_absent.cpp).
#include <cstddef>
#include <cstdint>
#include <string>

namespace ember::cuda {

bool is_built();
// 0 when no driver or no GPU is present (never raises).
int device_count();
bool is_available();
int current_device();
void set_device(int device);
struct DeviceProperties {
  std::string name;
  size_t total_memory = 0;
  int major = 0, minor = 0;  // compute capability
  int multi_processor_count = 0;
};
DeviceProperties device_properties(int device = -1);
// Waits for all work on `device` (-1: the current one).
void synchronize(int device = -1);

// Streams are handed around as their cudaStream_t bits; 0 is the legacy
// default stream. Streams come from a per-device pool and are never destroyed.
uintptr_t current_stream(int device = -1);
uintptr_t default_stream(int device = -1);
void set_current_stream(int device, uintptr_t stream);
uintptr_t pool_stream(int device, int priority);  // priority 0 (normal) or -1 (high)
bool stream_query(uintptr_t stream);
void stream_synchronize(uintptr_t stream);
void stream_wait_event(uintptr_t stream, uintptr_t event);

uintptr_t event_create(bool enable_timing, bool blocking);
void event_destroy(uintptr_t event);
void event_record(uintptr_t event, uintptr_t stream);
bool event_query(uintptr_t event);
void event_synchronize(uintptr_t event);
float event_elapsed_ms(uintptr_t start, uintptr_t end);

struct MemoryStats {
  int64_t allocated = 0, max_allocated = 0;  // bytes in live tensors
  int64_t reserved = 0, max_reserved = 0;    // bytes held from cudaMalloc
};
MemoryStats memory_stats(int device = -1);
void reset_peak_memory_stats(int device = -1);
// Returns every cached block that holds no tensor to the driver.
void empty_cache();

// Called once at import: registers the CUDA allocator and kernels when a GPU is present.
void init();

}  // namespace ember::cuda
