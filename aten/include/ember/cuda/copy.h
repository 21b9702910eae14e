#pragma once
// Copies that cross a device boundary (CPU <-> GPU, GPU <-> GPU). The CPU
// copy_ kernel hands a CUDA source here; without CUDA it raises.
#include "ember/tensor.h"

namespace ember::cuda {

Tensor copy_across_devices(const Tensor& self, const Tensor& src, bool non_blocking);

}  // namespace ember::cuda
