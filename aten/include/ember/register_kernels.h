#pragma once
// Fill the dispatch tables' CPU and CUDA slots (generated register_<device>.cpp).
namespace ember {
void register_cpu_kernels();
void register_cuda_kernels();
}  // namespace ember
