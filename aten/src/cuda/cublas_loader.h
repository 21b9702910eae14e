#pragma once
// cuBLAS's GEMMs, called through entry points resolved with dlopen/dlsym
// (cublas_loader.cpp). Only the CUDA backend includes this.
#include <cuda_runtime.h>

#include <cstdint>

#include "ember/cuda/cublas.h"
#include "ember/dtype.h"

namespace ember::cuda::cublas {

// One (strided-batched) product in cuBLAS's column-major terms:
// C[i] (m x n, ldc) = op(A[i]) (m x k) * op(B[i]) (k x n), i < batch.
struct GemmCall {
  bool trans_a = false, trans_b = false;
  int64_t m = 0, n = 0, k = 0;
  const void* a = nullptr;
  int64_t lda = 1, stride_a = 0;
  const void* b = nullptr;
  int64_t ldb = 1, stride_b = 0;
  void* c = nullptr;
  int64_t ldc = 1, stride_c = 0;
  int64_t batch = 1;
  ScalarType dtype = ScalarType::Float32;
};

// Whether `call` fits cuBLAS's 32-bit integer arguments.
bool fits(const GemmCall& call);
// Runs `call` on `stream` with the handle of `device` (the current device);
// float32 in true FP32, half types with FP32 accumulation. Returns false when
// no handle can be created on `device` (the caller runs its own kernel);
// raises RuntimeError naming `op` when cuBLAS rejects the call.
bool gemm(const GemmCall& call, int device, cudaStream_t stream, const char* op);

}  // namespace ember::cuda::cublas
