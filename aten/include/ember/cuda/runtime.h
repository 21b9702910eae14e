#pragma once
// Inside the CUDA backend: error checks, the device guard and the current
// stream as CUDA types. Only aten/src/cuda and generated .cu files include it.
#include <cuda_runtime.h>

#include "ember/cuda/api.h"
#include "ember/errors.h"

// Any failing runtime call becomes a RuntimeError naming the call.
#define EMBER_CUDA_CHECK(expr)                                                                \
  do {                                                                                         \
    cudaError_t err_ = (expr);                                                                 \
    if (err_ != cudaSuccess) ::ember::cuda::raise_error(err_, #expr, __FILE__, __LINE__);      \
  } while (0)

namespace ember::cuda {

// Blocks (or tiles) of size b that cover a elements.
constexpr int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

[[noreturn]] void raise_error(cudaError_t err, const char* what, const char* file, int line);

// After a launch: a launch error raises RuntimeError naming `kernel`; with
// CUDA_LAUNCH_BLOCKING=1 (or EMBER_CUDA_SYNC=1) it also waits for the kernel,
// so a fault surfaces at the launch that caused it.
void check_launch(const char* kernel);

inline cudaStream_t current_cuda_stream(int device = -1) {
  return reinterpret_cast<cudaStream_t>(current_stream(device));
}

// Makes `device` current for a scope (no-op when it already is).
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int prev_ = -1;
};

}  // namespace ember::cuda
