// ember/cuda/api.h in a build without CUDA: no devices, and a clear error
// from anything that needs one.
#ifndef EMBER_WITH_CUDA
#include "ember/cuda/api.h"
#include "ember/cuda/copy.h"
#include "ember/cuda/cublas.h"
#include "ember/errors.h"

namespace ember::cuda {

namespace {
[[noreturn]] void not_built() { EMBER_FAIL(Runtime, "ember was built without CUDA (nvcc was not found at build time)"); }
}  // namespace

bool is_built() { return false; }
int device_count() { return 0; }
bool is_available() { return false; }
int current_device() { not_built(); }
void set_device(int) { not_built(); }
DeviceProperties device_properties(int) { not_built(); }
void synchronize(int) { not_built(); }
uintptr_t current_stream(int) { not_built(); }
uintptr_t default_stream(int) { not_built(); }
void set_current_stream(int, uintptr_t) { not_built(); }
uintptr_t pool_stream(int, int) { not_built(); }
bool stream_query(uintptr_t) { not_built(); }
void stream_synchronize(uintptr_t) { not_built(); }
void stream_wait_event(uintptr_t, uintptr_t) { not_built(); }
uintptr_t event_create(bool, bool) { not_built(); }
void event_destroy(uintptr_t) {}
void event_record(uintptr_t, uintptr_t) { not_built(); }
bool event_query(uintptr_t) { not_built(); }
void event_synchronize(uintptr_t) { not_built(); }
float event_elapsed_ms(uintptr_t, uintptr_t) { not_built(); }
MemoryStats memory_stats(int) { return {}; }
void reset_peak_memory_stats(int) {}
void empty_cache() {}
void init() {}
Tensor copy_across_devices(const Tensor&, const Tensor&, bool) { not_built(); }
bool cublas_available() { return false; }
std::string cublas_status() { return "ember was built without CUDA"; }
void set_cublas_search_dirs(const std::vector<std::string>&) {}
void set_cublas_enabled(bool) {}
// Kept so that programs that set it run unchanged without CUDA.
static bool g_allow_tf32 = false;
void set_allow_tf32(bool allow) { g_allow_tf32 = allow; }
bool allow_tf32() { return g_allow_tf32; }

}  // namespace ember::cuda
#endif
