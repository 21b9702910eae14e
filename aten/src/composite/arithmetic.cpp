// div with rounding modes, pow of a number, mv, and matmul with NumPy's rules, over kernel ops.
#include <algorithm>
#include <optional>
#include <string>

#include "ember/ops/_div_floor.h"
#include "ember/ops/_div_trunc.h"
#include "ember/ops/bmm.h"
#include "ember/ops/contiguous.h"
#include "ember/ops/div.h"
#include "ember/ops/dot.h"
#include "ember/ops/expand.h"
#include "ember/ops/matmul.h"
#include "ember/ops/mm.h"
#include "ember/ops/mv.h"
#include "ember/ops/pow.h"
#include "ember/ops/reshape.h"
#include "ember/ops/squeeze.h"
#include "ember/ops/t.h"
#include "ember/ops/transpose.h"
#include "ember/ops/true_divide.h"
#include "ember/ops/unsqueeze.h"
#include "ember/tensor.h"
#include "named_node.h"

namespace ember::native {

Tensor div(const Tensor& self, const Tensor& other, const std::optional<std::string>& rounding_mode) {
  if (!rounding_mode) return ember::true_divide(self, other);
  if (*rounding_mode == "trunc") return ember::_div_trunc(self, other);
  // _div_floor, not floor_divide: PyTorch differentiates div(rounding_mode='floor') (to zero), not floor_divide.
  if (*rounding_mode == "floor") return ember::_div_floor(self, other);
  EMBER_FAIL(Value, "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '", *rounding_mode,
             "'");
}

namespace {

DimVector leading(const DimVector& s, int64_t drop) {
  int64_t n = std::max<int64_t>((int64_t)s.size() - drop, 0);
  return DimVector(s.data(), s.data() + n);
}

// Broadcasts the batch dims of matmul's operands (PyTorch's infer_size).
DimVector broadcast_batch(const DimVector& a, const DimVector& b) {
  size_t n = std::max(a.size(), b.size());
  DimVector out(n);
  for (size_t i = n; i-- > 0;) {  // from the last dim, as infer_size
    int64_t offset = (int64_t)n - 1 - (int64_t)i;
    int64_t da = (int64_t)a.size() - 1 - offset, db = (int64_t)b.size() - 1 - offset;
    int64_t sa = da >= 0 ? a[da] : 1, sb = db >= 0 ? b[db] : 1;
    EMBER_CHECK(sa == sb || sa == 1 || sb == 1, Runtime, "The size of tensor a (", sa,
                ") must match the size of tensor b (", sb, ") at non-singleton dimension ", i);
    out[i] = sa == 1 ? sb : sa;
  }
  return out;
}

void check_mm_shapes(int64_t n, int64_t m1, int64_t m2, int64_t p) {
  EMBER_CHECK(m1 == m2, Runtime, "mat1 and mat2 shapes cannot be multiplied (", n, "x", m1, " and ", m2, "x",
              p, ")");
}

}  // namespace

Tensor pow_Scalar(const Scalar& self, const Tensor& exponent) {
  // A floating exponent takes the base as a 0-d tensor of its dtype: the gradient's log(self) is then not a
  // float32 log of a number (wrapped numbers alone compute in the default dtype).
  if (is_floating(exponent.dtype())) return ember::pow(scalar_tensor(self, exponent.dtype(), Device()), exponent);
  return ember::pow(wrap_number(self), exponent);
}

Tensor mv(const Tensor& self, const Tensor& vec) {
  EMBER_CHECK(self.dim() == 2 && vec.dim() == 1, Runtime, "vector + matrix @ vector expected, got 1, ", self.dim(),
              ", ", vec.dim());
  EMBER_CHECK(self.size(1) == vec.size(0), Runtime, "size mismatch, got input (", self.size(0), "), mat (",
              self.size(0), "x", self.size(1), "), vec (", vec.size(0), ")");
  return ember::squeeze(ember::mm(self, ember::unsqueeze(vec, -1)), -1);
}

namespace {
// PyTorch ends the folded and batched products with an _unsafe_view of the product (UnsafeViewBackward0).
Tensor unsafe_view(const Tensor& product, const IntList& shape) {
  return with_node_name("UnsafeViewBackward0", [&] { return ember::reshape(product, shape); });
}


// PyTorch's should_fold: a >=3-D operand times a <=2-D one is one mm (or mv) over the big one's rows when the
// small one requires grad (its gradient is then one product, not a sum over the batch) or the rows fold
// without a copy; a 2-D left operand folds only in the first case (else the product would need a transpose).
bool should_fold(const Tensor& a, const Tensor& b) {
  const bool a_larger = a.dim() >= b.dim();
  const Tensor& big = a_larger ? a : b;
  const int64_t small_dim = a_larger ? b.dim() : a.dim();
  if (big.dim() < 3 || small_dim > 2) return false;
  if ((a_larger ? b : a).requires_grad()) return true;
  if (a.dim() == 2) return false;
  if (big.numel() == 0) return true;
  // The big operand as seen by the product: itself, or its transpose mT when it is on the right.
  DimVector sizes = big.sizes(), strides = big.strides();
  if (!a_larger) {
    std::swap(sizes[sizes.size() - 1], sizes[sizes.size() - 2]);
    std::swap(strides[strides.size() - 1], strides[strides.size() - 2]);
  }
  for (size_t i = 0; i + 2 < sizes.size(); ++i)
    if (strides[i] != strides[i + 1] * sizes[i + 1]) return false;
  return true;
}

// The folded product of should_fold: t1 (>=3-D) as a matrix of its rows times t2 (1-D or 2-D), transposed back
// when the big operand was on the right (PyTorch's mT().contiguous(): CloneBackward0).
Tensor folded_matmul(const Tensor& a, const Tensor& b) {
  const bool transpose = b.dim() > a.dim();
  const Tensor t1 = transpose ? ember::transpose(b, -2, -1) : a;
  const Tensor t2 = !transpose ? b : a.dim() == 2 ? ember::t(a) : a;
  DimVector out_shape = leading(t1.sizes(), 1);
  const int64_t rows = compute_numel(out_shape), m1 = t1.size(-1);
  Tensor t1_folded = ember::reshape(t1, IntList{rows, m1});
  if (t2.dim() == 1) return unsafe_view(ember::mv(t1_folded, t2), out_shape);
  check_mm_shapes(rows, m1, t2.size(0), t2.size(1));
  out_shape.push_back(t2.size(1));
  Tensor out = unsafe_view(ember::mm(t1_folded, t2), out_shape);
  return transpose ? ember::contiguous(ember::transpose(out, -2, -1)) : out;
}
}  // namespace

// PyTorch's _matmul_impl, step for step, so that the graph has its nodes (DotBackward0, MvBackward0,
// SqueezeBackward4, MmBackward0, UnsafeViewBackward0 over mm/mv/bmm).
Tensor matmul(const Tensor& a, const Tensor& b) {
  const int64_t da = a.dim(), db = b.dim();
  EMBER_CHECK(da != 0 && db != 0, Runtime, "both arguments to matmul need to be at least 1D, but they are ", da,
              "D and ", db, "D");
  const DimVector& sa = a.sizes();
  const DimVector& sb = b.sizes();
  if (da == 1 && db == 1) {
    EMBER_CHECK(sa[0] == sb[0], Runtime, "inconsistent tensor size, expected tensor [", sa[0],
                "] and src [", sb[0], "] to have the same number of elements, but got ", sa[0], " and ", sb[0],
                " elements respectively");
    return ember::dot(a, b);
  }
  if (da == 2 && db == 1) return ember::mv(a, b);
  if (da == 1 && db == 2) {
    check_mm_shapes(1, sa[0], sb[0], sb[1]);
    return with_node_name("SqueezeBackward4",  // PyTorch's in-place squeeze_(0)
                          [&] { return ember::squeeze(ember::mm(ember::unsqueeze(a, 0), b), 0); });
  }
  if (da == 2 && db == 2) {
    check_mm_shapes(sa[0], sa[1], sb[0], sb[1]);
    return ember::mm(a, b);
  }
  // A 3-D operand with a batch of one that requires grad drops it against a real batch (then folds).
  if (da == 3 && db == 3 && sa[0] == 1 && sb[0] != 1 && a.requires_grad()) return native::matmul(ember::squeeze(a, 0), b);
  if (da == 3 && db == 3 && sb[0] == 1 && sa[0] != 1 && b.requires_grad()) return native::matmul(a, ember::squeeze(b, 0));
  if (should_fold(a, b)) return folded_matmul(a, b);
  // Batched: broadcast the batch dims, flatten them into one, bmm, restore.
  const int64_t n = da > 1 ? sa[da - 2] : 1;
  const int64_t m1 = sa[da - 1];
  const int64_t m2 = db > 1 ? sb[db - 2] : sb[0];
  const int64_t p = db > 1 ? sb[db - 1] : 1;
  DimVector batch = broadcast_batch(leading(sa, 2), leading(sb, 2));
  const int64_t nbatch = compute_numel(batch);
  EMBER_CHECK(m1 == m2, Runtime, "Expected size for first two dimensions of batch2 tensor to be: [", nbatch,
              ", ", m1, "] but got: [", nbatch, ", ", m2, "].");
  DimVector a_shape = batch, b_shape = batch;
  a_shape.push_back(n);
  a_shape.push_back(m1);
  b_shape.push_back(m2);
  if (db > 1) b_shape.push_back(p);
  Tensor a3 = ember::reshape(ember::expand(a, a_shape), IntList{nbatch, n, m1});
  Tensor b3 = db > 1 ? ember::reshape(ember::expand(b, b_shape), IntList{nbatch, m2, p})
                     : ember::unsqueeze(ember::reshape(ember::expand(b, b_shape), IntList{nbatch, m2}), 2);
  DimVector out_shape = batch;
  if (da > 1) out_shape.push_back(n);
  if (db > 1) out_shape.push_back(p);
  Tensor product = ember::bmm(a3, b3);
  return unsafe_view(db > 1 ? product : ember::squeeze(product, -1), out_shape);
}

}  // namespace ember::native
