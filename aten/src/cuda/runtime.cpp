// The CUDA runtime behind ember/cuda/api.h: devices, streams, events, launch
// checks. Streams are handed out as their handle bits (0: the legacy default
// stream); the current stream is per thread and per device, as in PyTorch.
#include "ember/cuda/runtime.h"

#include <array>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

namespace ember::cuda {

namespace {

constexpr int kMaxDevices = 64;
constexpr int kStreamsPerPool = 32;

int query_device_count() {
  int n = 0;
  // No driver or no GPU is an answer (0), not an error; clear the sticky state.
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}

bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  return v && *v && std::strcmp(v, "0") != 0;
}

int resolve(int device) {
  if (device >= 0) {
    EMBER_CHECK(device < device_count(), Runtime, "CUDA error: invalid device ordinal ", device, " (",
                device_count(), " device(s) present)");
    return device;
  }
  return current_device();
}

thread_local std::array<uintptr_t, kMaxDevices> t_current_stream{};

struct StreamPool {
  std::mutex mutex;
  std::vector<cudaStream_t> streams[2];  // [0]: normal priority, [1]: high
  unsigned next[2] = {0, 0};
};
StreamPool g_pools[kMaxDevices];

}  // namespace

[[noreturn]] void raise_error(cudaError_t err, const char* what, const char* file, int line) {
  cudaGetLastError();  // clear a non-sticky error so later calls can proceed
  EMBER_FAIL(Runtime, "CUDA error: ", cudaGetErrorString(err), " (", cudaGetErrorName(err), ") in ", what, " at ",
             file, ":", line);
}

void check_launch(const char* kernel) {
  static const bool blocking = env_flag("CUDA_LAUNCH_BLOCKING") || env_flag("EMBER_CUDA_SYNC");
  cudaError_t err = cudaGetLastError();
  if (err == cudaSuccess && blocking) err = cudaDeviceSynchronize();
  if (err != cudaSuccess)
    EMBER_FAIL(Runtime, "CUDA error in kernel ", kernel, ": ", cudaGetErrorString(err), " (", cudaGetErrorName(err),
               ")", blocking ? "" : "; set CUDA_LAUNCH_BLOCKING=1 to report errors at the launch that caused them");
}

bool is_built() { return true; }

int device_count() {
  static const int n = query_device_count();
  return n;
}

bool is_available() { return device_count() > 0; }

int current_device() {
  EMBER_CHECK(is_available(), Runtime, "CUDA is not available: no CUDA device was found");
  int d = 0;
  EMBER_CUDA_CHECK(cudaGetDevice(&d));
  return d;
}

void set_device(int device) {
  EMBER_CHECK(is_available(), Runtime, "CUDA is not available: no CUDA device was found");
  EMBER_CUDA_CHECK(cudaSetDevice(resolve(device)));
}

DeviceProperties device_properties(int device) {
  cudaDeviceProp prop{};
  EMBER_CUDA_CHECK(cudaGetDeviceProperties(&prop, resolve(device)));
  return {prop.name, prop.totalGlobalMem, prop.major, prop.minor, prop.multiProcessorCount};
}

void synchronize(int device) {
  DeviceGuard guard(resolve(device));
  EMBER_CUDA_CHECK(cudaDeviceSynchronize());
}

DeviceGuard::DeviceGuard(int device) {
  int cur = 0;
  EMBER_CUDA_CHECK(cudaGetDevice(&cur));
  if (device >= 0 && device != cur) {
    EMBER_CUDA_CHECK(cudaSetDevice(device));
    prev_ = cur;
  }
}

DeviceGuard::~DeviceGuard() {
  if (prev_ >= 0) cudaSetDevice(prev_);
}

uintptr_t current_stream(int device) { return t_current_stream[resolve(device)]; }

uintptr_t default_stream(int device) {
  resolve(device);
  return 0;
}

void set_current_stream(int device, uintptr_t stream) { t_current_stream[resolve(device)] = stream; }

uintptr_t pool_stream(int device, int priority) {
  device = resolve(device);
  const int high = priority < 0 ? 1 : 0;
  StreamPool& pool = g_pools[device];
  std::lock_guard<std::mutex> lock(pool.mutex);
  auto& streams = pool.streams[high];
  if (streams.size() < kStreamsPerPool) {
    DeviceGuard guard(device);
    int least = 0, greatest = 0;
    EMBER_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    cudaStream_t s = nullptr;
    EMBER_CUDA_CHECK(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, high ? greatest : least));
    streams.push_back(s);
    return reinterpret_cast<uintptr_t>(s);
  }
  return reinterpret_cast<uintptr_t>(streams[pool.next[high]++ % kStreamsPerPool]);
}

// A query's answer: done, not yet (not an error), or a real failure.
static bool completed(cudaError_t err) {
  if (err == cudaErrorNotReady) {
    cudaGetLastError();
    return false;
  }
  EMBER_CUDA_CHECK(err);
  return true;
}

bool stream_query(uintptr_t stream) { return completed(cudaStreamQuery(reinterpret_cast<cudaStream_t>(stream))); }

void stream_synchronize(uintptr_t stream) {
  EMBER_CUDA_CHECK(cudaStreamSynchronize(reinterpret_cast<cudaStream_t>(stream)));
}

void stream_wait_event(uintptr_t stream, uintptr_t event) {
  EMBER_CUDA_CHECK(
      cudaStreamWaitEvent(reinterpret_cast<cudaStream_t>(stream), reinterpret_cast<cudaEvent_t>(event), 0));
}

uintptr_t event_create(bool enable_timing, bool blocking) {
  unsigned flags = (enable_timing ? 0u : cudaEventDisableTiming) | (blocking ? cudaEventBlockingSync : 0u);
  cudaEvent_t e = nullptr;
  EMBER_CUDA_CHECK(cudaEventCreateWithFlags(&e, flags));
  return reinterpret_cast<uintptr_t>(e);
}

void event_destroy(uintptr_t event) {
  if (event) cudaEventDestroy(reinterpret_cast<cudaEvent_t>(event));
}

void event_record(uintptr_t event, uintptr_t stream) {
  EMBER_CUDA_CHECK(cudaEventRecord(reinterpret_cast<cudaEvent_t>(event), reinterpret_cast<cudaStream_t>(stream)));
}

bool event_query(uintptr_t event) { return completed(cudaEventQuery(reinterpret_cast<cudaEvent_t>(event))); }

void event_synchronize(uintptr_t event) {
  EMBER_CUDA_CHECK(cudaEventSynchronize(reinterpret_cast<cudaEvent_t>(event)));
}

float event_elapsed_ms(uintptr_t start, uintptr_t end) {
  float ms = 0.f;
  EMBER_CUDA_CHECK(
      cudaEventElapsedTime(&ms, reinterpret_cast<cudaEvent_t>(start), reinterpret_cast<cudaEvent_t>(end)));
  return ms;
}

}  // namespace ember::cuda
