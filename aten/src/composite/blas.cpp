// Products with a scaled addend (addmm, addmv, addbmm, baddbmm), outer, kron, cross and
// cartesian_prod, over mm/bmm and pointwise ops; autograd records the ops they call.
#include <optional>
#include <string>

#include "ember/forward_ad.h"
#include "ember/ops/_addmm_blas.h"
#include "ember/ops/add.h"
#include "ember/ops/addbmm.h"
#include "ember/ops/addmm.h"
#include "ember/ops/addmv.h"
#include "ember/ops/baddbmm.h"
#include "ember/ops/bmm.h"
#include "ember/ops/cartesian_prod.h"
#include "ember/ops/cross.h"
#include "ember/ops/expand.h"
#include "ember/ops/ger.h"
#include "ember/ops/kron.h"
#include "ember/ops/linalg_cross.h"
#include "ember/ops/mm.h"
#include "ember/ops/mul.h"
#include "ember/ops/narrow.h"
#include "ember/ops/outer.h"
#include "ember/ops/reshape.h"
#include "ember/ops/stack.h"
#include "ember/ops/sub.h"
#include "ember/ops/to.h"
#include "ember/ops/transpose.h"
#include "ember/tensor.h"

namespace ember::native {
namespace {

// A Scalar as a 0-d tensor of `dtype`, so that scaling never changes the result's dtype
// (an integral product scaled by 0.5 stays integral, as PyTorch's).
Tensor scalar_like(const Scalar& s, ScalarType dtype) {
  if (is_floating(dtype)) return wrap_number(Scalar(s.to_double()));
  return wrap_number(s.is_bool() ? Scalar(int64_t(s.to_bool())) : Scalar(s.to_int()));
}

bool is_one(const Scalar& s) { return s.to_double() == 1.0; }

// beta * self + alpha * product, self broadcast to the product's shape. beta == 0 drops
// self altogether (its NaN and inf included), as PyTorch does.
Tensor scaled_sum(const Tensor& self, const Tensor& product, const Scalar& beta, const Scalar& alpha) {
  const ScalarType dt = product.dtype();
  Tensor scaled = is_one(alpha) ? product : ember::mul(product, scalar_like(alpha, dt));
  Tensor addend = ember::expand(self, product.sizes());
  if (beta.to_double() == 0.0) return scaled;
  if (is_one(beta)) return ember::add(addend, scaled);
  return ember::add(ember::mul(addend, scalar_like(beta, dt)), scaled);
}

// bfloat16 and float16 products are summed with the addend in float32 and the result rounded once, as
// PyTorch's gemm (rounding the product, then the sum, is off in the last bit). Only when every tensor has
// that dtype: mixed dtypes go on to the usual path and its errors.
bool rounds_once(std::initializer_list<const Tensor*> ts) {
  const ScalarType dt = (*ts.begin())->dtype();
  if (dt != ScalarType::BFloat16 && dt != ScalarType::Float16) return false;
  for (const Tensor* t : ts)
    if (t->dtype() != dt) return false;
  return true;
}
Tensor widened(const Tensor& t) { return ember::to_dtype(t, ScalarType::Float32); }

void check_same_dtype(const Tensor& self, const Tensor& mat2) {
  EMBER_CHECK(self.dtype() == mat2.dtype(), Runtime, "self and mat2 must have the same dtype, but got ",
              dtype_title(self.dtype()), " and ", dtype_title(mat2.dtype()));
}

}  // namespace

Tensor addmm(const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta, const Scalar& alpha) {
  EMBER_CHECK(mat1.dim() == 2, Runtime, "mat1 must be a matrix, got ", mat1.dim(), "-D tensor");
  EMBER_CHECK(mat2.dim() == 2, Runtime, "mat2 must be a matrix, got ", mat2.dim(), "-D tensor");
  check_same_dtype(self, mat2);
  if (rounds_once({&self, &mat1, &mat2}))
    return ember::to_dtype(ember::addmm(widened(self), widened(mat1), widened(mat2), beta, alpha), self.dtype());
  // One gemm with beta and alpha folded in, on the devices with that kernel (its own derivative, so a Linear
  // in training skips the separate bias pass, as PyTorch's), unless tangents are carried. beta 0 must not
  // read self.
  const ScalarType dt = self.dtype();
  if (dispatch::_addmm_blas[(int)self.device().type] && (dt == ScalarType::Float32 || dt == ScalarType::Float64) &&
      beta.to_double() != 0.0 && !(forward_ad::maybe_active() && forward_ad::wanted({&self, &mat1, &mat2})))
    return ember::_addmm_blas(self, mat1, mat2, beta, alpha);
  return scaled_sum(self, ember::mm(mat1, mat2), beta, alpha);
}

Tensor addmv(const Tensor& self, const Tensor& mat, const Tensor& vec, const Scalar& beta, const Scalar& alpha) {
  EMBER_CHECK(mat.dim() == 2 && vec.dim() == 1 && self.dim() <= 1, Runtime,
              "vector + matrix @ vector expected, got ", self.dim(), ", ", mat.dim(), ", ", vec.dim());
  EMBER_CHECK(mat.size(1) == vec.size(0) && (self.numel() == 1 || self.size(0) == mat.size(0)), Runtime,
              "size mismatch, got input (", self.dim() ? self.size(0) : 1, "), mat (", mat.size(0), "x",
              mat.size(1), "), vec (", vec.size(0), ")");
  EMBER_CHECK(self.dtype() == mat.dtype() && mat.dtype() == vec.dtype(), Runtime,
              "addmv input tensors must have the same dtype, but got ", dtype_title(self.dtype()), ", ",
              dtype_title(mat.dtype()), ", and ", dtype_title(vec.dtype()));
  if (rounds_once({&self, &mat, &vec}))
    return ember::to_dtype(ember::addmv(widened(self), widened(mat), widened(vec), beta, alpha), self.dtype());
  Tensor product = ember::reshape(ember::mm(mat, ember::reshape(vec, IntList{vec.size(0), 1})), IntList{mat.size(0)});
  return scaled_sum(self, product, beta, alpha);
}

Tensor baddbmm(const Tensor& self, const Tensor& batch1, const Tensor& batch2, const Scalar& beta,
               const Scalar& alpha) {
  check_same_dtype(self, batch2);
  if (rounds_once({&self, &batch1, &batch2}))
    return ember::to_dtype(ember::baddbmm(widened(self), widened(batch1), widened(batch2), beta, alpha), self.dtype());
  return scaled_sum(self, ember::bmm(batch1, batch2), beta, alpha);
}

Tensor addbmm(const Tensor& self, const Tensor& batch1, const Tensor& batch2, const Scalar& beta,
              const Scalar& alpha) {
  EMBER_CHECK(batch1.dim() == 3, Runtime, "batch1 must be a 3D tensor");
  EMBER_CHECK(batch2.dim() == 3, Runtime, "batch2 must be a 3D tensor");
  EMBER_CHECK(batch1.size(0) == batch2.size(0), Runtime, "batch1 and batch2 must have same number of batches, got ",
              batch1.size(0), " and ", batch2.size(0));
  EMBER_CHECK(batch1.size(2) == batch2.size(1), Runtime, "Incompatible matrix sizes for bmm (", batch1.size(1), "x",
              batch1.size(2), " and ", batch2.size(1), "x", batch2.size(2), ")");
  check_same_dtype(self, batch2);
  if (rounds_once({&self, &batch1, &batch2}))
    return ember::to_dtype(ember::addbmm(widened(self), widened(batch1), widened(batch2), beta, alpha), self.dtype());
  // The sum over the batch of batch1[b] @ batch2[b] is one product of [n, B*k] by [B*k, p].
  const int64_t b = batch1.size(0), n = batch1.size(1), k = batch1.size(2), p = batch2.size(2);
  Tensor lhs = ember::reshape(ember::transpose(batch1, 0, 1), IntList{n, b * k});
  Tensor rhs = ember::reshape(batch2, IntList{b * k, p});
  return scaled_sum(self, ember::mm(lhs, rhs), beta, alpha);
}

Tensor outer(const Tensor& self, const Tensor& vec2) {
  EMBER_CHECK(self.dim() == 1, Runtime, "outer: Expected 1-D argument self, but got ", self.dim(), "-D");
  EMBER_CHECK(vec2.dim() == 1, Runtime, "outer: Expected 1-D argument vec2, but got ", vec2.dim(), "-D");
  return ember::mul(ember::reshape(self, IntList{self.size(0), 1}), vec2);
}

Tensor ger(const Tensor& self, const Tensor& vec2) { return ember::outer(self, vec2); }

Tensor kron(const Tensor& self, const Tensor& other) {
  // Interleave the dims of both (padded to the same rank): (a0, b0, a1, b1, ...), then merge pairs.
  const int64_t nd = std::max(self.dim(), other.dim());
  DimVector a_shape(2 * nd, 1), b_shape(2 * nd, 1), out_shape(nd, 1);
  for (int64_t i = 0; i < nd; ++i) {
    const int64_t ia = i - (nd - self.dim()), ib = i - (nd - other.dim());
    const int64_t sa = ia >= 0 ? self.size(ia) : 1, sb = ib >= 0 ? other.size(ib) : 1;
    a_shape[2 * i] = sa;
    b_shape[2 * i + 1] = sb;
    out_shape[i] = sa * sb;
  }
  return ember::reshape(ember::mul(ember::reshape(self, a_shape), ember::reshape(other, b_shape)), out_shape);
}

Tensor linalg_cross(const Tensor& self, const Tensor& other, int64_t dim) {
  EMBER_CHECK(self.dim() == other.dim(), Runtime, "linalg.cross: inputs must have the same number of dimensions.");
  const int64_t d = wrap_dim(dim, self.dim(), "linalg.cross");
  EMBER_CHECK(self.size(d) == 3 && other.size(d) == 3, Runtime, "linalg.cross: inputs dimension ", dim,
              " must have length 3. Got ", self.size(d), " and ", other.size(d));
  EMBER_CHECK(self.dtype() == other.dtype(), Runtime, "expected scalar type ", dtype_title(self.dtype()),
              " but found ", dtype_title(other.dtype()));
  auto a = [&](int64_t i) { return ember::narrow(self, d, i, 1); };
  auto b = [&](int64_t i) { return ember::narrow(other, d, i, 1); };
  auto term = [&](int64_t i, int64_t j) { return ember::sub(ember::mul(a(i), b(j)), ember::mul(a(j), b(i))); };
  // Components are kept with a size-1 dim d, so stack at d + 1 then merge.
  Tensor parts = ember::stack(TensorList{term(1, 2), term(2, 0), term(0, 1)}, d);
  DimVector shape = parts.sizes();
  shape.erase(d + 1);
  shape[d] = 3;
  return ember::reshape(parts, shape);
}

Tensor cross(const Tensor& self, const Tensor& other, std::optional<int64_t> dim) {
  if (dim) return ember::linalg_cross(self, other, *dim);
  EMBER_CHECK(self.dim() == other.dim(), Runtime, "linalg.cross: inputs must have the same number of dimensions.");
  // PyTorch's deprecated default: the first dim of size 3 (of the broadcast shape).
  int64_t found = -1;
  for (int64_t i = 0; i < self.dim() && found < 0; ++i) {
    const int64_t s = self.size(i) == 1 ? other.size(i) : self.size(i);
    if (s == 3) found = i;
  }
  EMBER_CHECK(found >= 0, Runtime, "no dimension of size 3 in input");
  warn("Using torch.cross without specifying the dim arg is deprecated.\nPlease either pass the dim explicitly or "
       "simply use torch.linalg.cross.\nThe default value of dim will change to agree with that of linalg.cross "
       "in a future release.");
  return ember::linalg_cross(self, other, found);
}

Tensor cartesian_prod(const TensorList& tensors) {
  EMBER_CHECK(!tensors.empty(), Runtime, "meshgrid expects a non-empty TensorList");
  for (const Tensor& t : tensors) {
    EMBER_CHECK(t.dim() == 1, Runtime, "Expect a 1D vector, but got shape ", t.sizes());
    EMBER_CHECK(t.dtype() == tensors[0].dtype(), Runtime, "meshgrid expects all tensors to have the same dtype");
  }
  if (tensors.size() == 1) return tensors[0];
  const int64_t n = (int64_t)tensors.size();
  DimVector grid(n);
  for (int64_t i = 0; i < n; ++i) grid[i] = tensors[i].size(0);
  TensorList columns;
  for (int64_t i = 0; i < n; ++i) {
    DimVector shape(n, 1);
    shape[i] = grid[i];
    columns.push_back(ember::reshape(ember::expand(ember::reshape(tensors[i], shape), grid), IntList{-1}));
  }
  return ember::stack(columns, 1);
}

}  // namespace ember::native
