#pragma once
// The argument checks of mm, bmm and dot (and the integer-dtype device check), shared by every device's kernels so
// that a bad call raises the same RuntimeError (PyTorch's messages) on each.
#include "ember/tensor.h"

namespace ember {

// Integer products have a CPU kernel only: elsewhere they raise NotImplementedError.
void check_integer_product_device(const Tensor& self, const char* op);
void check_mm_args(const Tensor& self, const Tensor& mat2);
void check_bmm_args(const Tensor& self, const Tensor& mat2);
void check_dot_args(const Tensor& self, const Tensor& tensor);

}  // namespace ember
