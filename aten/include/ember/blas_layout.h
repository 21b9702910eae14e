#pragma once
// How a matrix reaches a BLAS (OpenBLAS on the CPU, cuBLAS on CUDA) without a
// copy, shared by every device's mm/bmm: an (r x c) matrix with element
// strides (s0, s1) is passed as is (trans = false, leading dim ld >= c), or as
// the transpose of a row-major (c x r) matrix (trans = true, ld >= r).
#include <cstdint>
#include "ember/errors.h"
#include "ember/ops/contiguous.h"
#include "ember/tensor.h"

namespace ember {

struct BlasLayout {
  bool trans = false;
  int64_t ld = 1;
};

inline bool blas_layout(int64_t r, int64_t c, int64_t s0, int64_t s1, BlasLayout& out) {
  if ((c == 1 || s1 == 1) && (r == 1 || s0 >= c)) {
    out = {false, r == 1 ? c : s0};
    return true;
  }
  if ((r == 1 || s0 == 1) && (c == 1 || s1 >= r)) {
    out = {true, c == 1 ? r : s1};
    return true;
  }
  return false;
}

// The operand as BLAS will read it (its last two dims are the matrix): `t`
// itself when it has a layout with ld <= max_ld, else a contiguous copy.
inline Tensor blas_operand(const Tensor& t, BlasLayout& layout, int64_t max_ld) {
  const int64_t nd = t.dim();
  if (blas_layout(t.size(nd - 2), t.size(nd - 1), t.stride(nd - 2), t.stride(nd - 1), layout) &&
      layout.ld <= max_ld)
    return t;
  Tensor c = ember::contiguous(t);
  EMBER_CHECK(blas_layout(c.size(nd - 2), c.size(nd - 1), c.stride(nd - 2), c.stride(nd - 1), layout), Runtime,
              "internal error: no BLAS layout for a contiguous matrix");
  return c;
}

}  // namespace ember
