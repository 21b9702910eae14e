#pragma once
// Per-device kernel tables. Each op's table is generated (ember/ops/<name>.h)
// and read by its generated entry; the core has one table of its own, the copy
// kernel it runs itself (TensorIterator's casts and write-back, reductions'
// casts and out=, item() and index planning's device copies). The core sits
// below the device kernels and never calls an op, so the device layers fill
// that table when the library loads (aten/src/cpu/copy.cpp, aten/src/cuda/copy.cu).
#include "ember/tensor.h"

namespace ember {

[[noreturn]] void kernel_missing(const char* op, Device device);

// The kernel of `device` in `table`; NotImplementedError naming `op` when it has none.
template <typename Fn>
Fn kernel_for(Fn* table, Device device, const char* op) {
  Fn fn = table[(int)device.type];
  if (!fn) kernel_missing(op, device);
  return fn;
}

// Copies `src` into `dst` elementwise, converting the dtype (src broadcasts to dst's
// shape); the two may be on different devices.
using CopyKernel = Tensor (*)(const Tensor& dst, const Tensor& src, bool non_blocking);
void register_copy_kernel(DeviceType type, CopyKernel kernel);

// Runs the copy kernel of dst's device: no autograd, no version bump, no checks but the kernel's.
void copy_elements(const Tensor& dst, const Tensor& src);
// A copy of `t` in a new contiguous tensor of `dtype` on `device`.
Tensor copy_to(const Tensor& t, Device device, ScalarType dtype);
// `t` converted to `dtype` on its device (`t` itself when it has that dtype).
Tensor cast_to(const Tensor& t, ScalarType dtype);
// Resizes `out` to `value`'s shape when needed and copies into it (out= of non-pointwise
// ops); RuntimeError naming `op` when value's dtype cannot be cast to out's.
void copy_into_out(const Tensor& out, const Tensor& value, const char* op);

}  // namespace ember
