// Distances and norms: dist, cdist, cosine_similarity, pairwise_distance, linalg.norm and
// linalg.matrix_norm, over linalg_vector_norm, mm, reductions and linalg.svdvals.
#include <cmath>
#include <optional>
#include <string>

#include "ember/ops/abs.h"
#include "ember/ops/amax.h"
#include "ember/ops/amin.h"
#include "ember/ops/cat.h"
#include "ember/ops/cdist.h"
#include "ember/ops/clamp.h"
#include "ember/ops/cosine_similarity.h"
#include "ember/ops/dist.h"
#include "ember/ops/expand.h"
#include "ember/ops/linalg_matrix_norm.h"
#include "ember/ops/linalg_norm.h"
#include "ember/ops/linalg_svdvals.h"
#include "ember/ops/linalg_vector_norm.h"
#include "ember/ops/matmul.h"
#include "ember/ops/mul.h"
#include "ember/ops/ones.h"
#include "ember/ops/pairwise_distance.h"
#include "ember/ops/permute.h"
#include "ember/ops/sqrt.h"
#include "ember/ops/squeeze.h"
#include "ember/ops/sub.h"
#include "ember/ops/sum.h"
#include "ember/ops/to.h"
#include "ember/ops/transpose.h"
#include "ember/ops/true_divide.h"
#include "ember/ops/unsqueeze.h"
#include "ember/ops/zeros.h"
#include "ember/tensor.h"

namespace ember::native {
namespace {

// PyTorch's cdist switches to the matrix-product form of the Euclidean distance
// above 25 rows on either side (compute_mode None or 0).
constexpr int64_t kEuclidViaMmRows = 25;

std::string scalar_str(const Scalar& s) {
  if (!s.is_floating()) return str(s.to_int());
  const double v = s.to_double();
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (v == std::floor(v) && std::abs(v) < 1e15) return str((int64_t)v);
  return str(v);
}

// ||x1 - x2|| from ||x1||^2 - 2 x1.x2 + ||x2||^2 as one product: [-2 x1, |x1|^2, 1] @ [x2, 1, |x2|^2]^T.
Tensor euclidean_via_mm(const Tensor& x1, const Tensor& x2) {
  Tensor n1 = ember::sum(ember::mul(x1, x1), IntList{-1}, true);
  Tensor n2 = ember::sum(ember::mul(x2, x2), IntList{-1}, true);
  Tensor a = ember::cat(TensorList{ember::mul(x1, wrap_number(Scalar(-2.0))), n1, ember::ones(n1.sizes(), n1.dtype(), n1.device(), false)}, -1);
  Tensor b = ember::cat(TensorList{x2, ember::ones(n2.sizes(), n2.dtype(), n2.device(), false), n2}, -1);
  return ember::sqrt(ember::clamp(ember::matmul(a, ember::transpose(b, -1, -2)), Scalar(0.0)));
}

// The batch dims of cdist's operands broadcast; rows and columns are kept.
DimVector broadcast_batch(const Tensor& x1, const Tensor& x2) {
  const int64_t n1 = x1.dim() - 2, n2 = x2.dim() - 2, n = std::max(n1, n2);
  DimVector out(n, 1);
  for (int64_t i = n - 1; i >= 0; --i) {  // from the last dim, as infer_size
    const int64_t i1 = i - (n - n1), i2 = i - (n - n2);
    const int64_t s1 = i1 >= 0 ? x1.size(i1) : 1, s2 = i2 >= 0 ? x2.size(i2) : 1;
    EMBER_CHECK(s1 == s2 || s1 == 1 || s2 == 1, Runtime, "The size of tensor a (", s1,
                ") must match the size of tensor b (", s2, ") at non-singleton dimension ", i);
    out[i] = s1 == 1 ? s2 : s1;
  }
  return out;
}

void check_matrix_norm_args(const Tensor& self, const IntList& dim, std::optional<ScalarType> dtype) {
  EMBER_CHECK(self.dim() >= 2, Runtime, "linalg.matrix_norm: The input tensor A must have at least 2 dimensions.");
  EMBER_CHECK(is_floating(self.dtype()), Runtime,
              "linalg.matrix_norm: Expected a floating point or complex tensor as input. Got ",
              dtype_title(self.dtype()));
  EMBER_CHECK(!dtype || is_floating(*dtype), Runtime,
              "linalg.matrix_norm: dtype should be floating point or complex, but got ", dtype_title(*dtype));
  EMBER_CHECK(dim.size() == 2, Runtime, "linalg.matrix_norm: dim must be a 2-tuple. Got ", dim);
  const int64_t d0 = wrap_dim(dim[0], self.dim(), "linalg.matrix_norm");
  const int64_t d1 = wrap_dim(dim[1], self.dim(), "linalg.matrix_norm");
  EMBER_CHECK(d0 != d1, Runtime, "linalg.matrix_norm: dims must be different. Got (", dim[0], ", ", dim[1], ")");
}

// max (or min) over `outer` of the sums of |x| over `inner`: the 1-norm (inner = rows) and
// the inf-norm (inner = columns). An empty `outer` gives 0, as PyTorch.
Tensor induced_norm(const Tensor& x, int64_t inner, int64_t outer, bool take_max, bool keepdim) {
  Tensor sums = ember::sum(ember::abs(x), IntList{inner}, true);
  Tensor r;
  if (x.size(outer) == 0) {
    DimVector shape = sums.sizes();
    shape[outer] = 1;
    r = ember::zeros(shape, x.dtype(), x.device(), false);
  } else {
    r = take_max ? ember::amax(sums, IntList{outer}, true) : ember::amin(sums, IntList{outer}, true);
  }
  return keepdim ? r : ember::squeeze_dims(r, IntList{inner, outer});
}

enum class SingularReduce { Sum, Max, Min };

// The nuclear (sum), 2 (largest) or -2 (smallest) norm over (d0, d1): those dims moved last,
// as PyTorch, then linalg.svdvals (its gradient goes through linalg.svd). No singular values
// (an empty matrix) give 0 but for -2.
Tensor singular_value_norm(const Tensor& x, int64_t d0, int64_t d1, SingularReduce how, bool keepdim) {
  DimVector perm;
  for (int64_t i = 0; i < x.dim(); ++i)
    if (i != d0 && i != d1) perm.push_back(i);
  perm.push_back(d0);
  perm.push_back(d1);
  Tensor r;
  if (std::min(x.size(d0), x.size(d1)) == 0) {
    DimVector shape;
    for (int64_t i = 0; i + 2 < (int64_t)perm.size(); ++i) shape.push_back(x.size(perm[i]));
    r = ember::zeros(shape, x.dtype(), x.device(), false);
    // PyTorch's amin refuses the empty list of singular values (amax and sum give 0).
    EMBER_CHECK(how != SingularReduce::Min || r.numel() == 0, Index,
                "amin(): Expected reduction dim -1 to have non-zero size.");
  } else {
    Tensor s = ember::linalg_svdvals(ember::permute(x, perm));
    r = how == SingularReduce::Sum   ? ember::sum(s, IntList{-1}, false)
        : how == SingularReduce::Max ? ember::amax(s, IntList{-1}, false)
                                     : ember::amin(s, IntList{-1}, false);
  }
  if (!keepdim) return r;
  return ember::unsqueeze(ember::unsqueeze(r, std::min(d0, d1)), std::max(d0, d1));
}

}  // namespace

Tensor dist(const Tensor& self, const Tensor& other, const Scalar& p) {
  return ember::linalg_vector_norm(ember::sub(self, other), p, std::nullopt, false, std::nullopt);
}

Tensor cdist(const Tensor& x1, const Tensor& x2, double p, std::optional<int64_t> compute_mode) {
  EMBER_CHECK(x1.dim() >= 2, Runtime, "cdist only supports at least 2D tensors, X1 got: ", x1.dim(), "D");
  EMBER_CHECK(x2.dim() >= 2, Runtime, "cdist only supports at least 2D tensors, X2 got: ", x2.dim(), "D");
  EMBER_CHECK(is_floating(x1.dtype()), Runtime, "cdist only supports floating-point dtypes, X1 got: ",
              dtype_title(x1.dtype()));
  EMBER_CHECK(is_floating(x2.dtype()), Runtime, "cdist only supports floating-point dtypes, X2 got: ",
              dtype_title(x2.dtype()));
  EMBER_CHECK(x1.size(-1) == x2.size(-1), Runtime, "X1 and X2 must have the same number of columns. X1: ",
              x1.size(-1), " X2: ", x2.size(-1));
  EMBER_CHECK(p >= 0, Runtime, "cdist only supports non-negative p values");
  const int64_t mode = compute_mode.value_or(0);
  EMBER_CHECK(mode >= 0 && mode <= 2, Runtime, "possible modes: 0, 1, 2, but was: ", mode);
  const int64_t r1 = x1.size(-2), r2 = x2.size(-2), m = x1.size(-1);
  DimVector batch = broadcast_batch(x1, x2);
  DimVector s1 = batch, s2 = batch;
  s1.push_back(r1);
  s1.push_back(m);
  s2.push_back(r2);
  s2.push_back(m);
  Tensor a = ember::expand(x1, s1), b = ember::expand(x2, s2);
  if (p == 2 && (mode == 1 || (mode == 0 && (r1 > kEuclidViaMmRows || r2 > kEuclidViaMmRows))))
    return euclidean_via_mm(a, b);
  // Every pair's difference: [..., r1, 1, m] - [..., 1, r2, m], normed over m.
  Tensor diff = ember::sub(ember::unsqueeze(a, -2), ember::unsqueeze(b, -3));
  return ember::linalg_vector_norm(diff, Scalar(p), IntList{-1}, false, std::nullopt);
}

Tensor cosine_similarity(const Tensor& x1, const Tensor& x2, int64_t dim, double eps) {
  EMBER_CHECK(is_floating(promote_types(x1.dtype(), x2.dtype())), Runtime,
              "expected common dtype to be floating point, yet common dtype is ",
              dtype_title(promote_types(x1.dtype(), x2.dtype())));
  // Broadcast both, then each side divided by its norm (at least eps) and the dot product, as PyTorch.
  const int64_t nd = std::max(x1.dim(), x2.dim());
  DimVector shape(nd, 1);
  for (int64_t i = nd - 1; i >= 0; --i) {  // from the last dim, as infer_size
    const int64_t i1 = i - (nd - x1.dim()), i2 = i - (nd - x2.dim());
    const int64_t s1 = i1 >= 0 ? x1.size(i1) : 1, s2 = i2 >= 0 ? x2.size(i2) : 1;
    EMBER_CHECK(s1 == s2 || s1 == 1 || s2 == 1, Runtime, "The size of tensor a (", s1,
                ") must match the size of tensor b (", s2, ") at non-singleton dimension ", i);
    shape[i] = s1 == 1 ? s2 : s1;
  }
  auto unit = [&](const Tensor& x_in) {
    Tensor x = ember::expand(x_in, shape);
    Tensor n = ember::linalg_vector_norm(x, Scalar(int64_t(2)), IntList{dim}, true, std::nullopt);
    return ember::true_divide(x, ember::clamp(n, Scalar(eps)));
  };
  return ember::sum(ember::mul(unit(x1), unit(x2)), IntList{dim}, false);
}

Tensor pairwise_distance(const Tensor& x1, const Tensor& x2, double p, double eps, bool keepdim) {
  // PyTorch adds eps to the difference (not to the norm) and norms over the last dim.
  const int64_t inner = std::max(x1.dim(), x2.dim()) - 1;
  Tensor diff = ember::sub(ember::sub(x1, x2), wrap_number(Scalar(-eps)));
  if (inner < 0) return ember::linalg_vector_norm(diff, Scalar(p), std::nullopt, keepdim, std::nullopt);
  return ember::linalg_vector_norm(diff, Scalar(p), IntList{inner}, keepdim, std::nullopt);
}

Tensor linalg_matrix_norm(const Tensor& self, const Scalar& ord, const IntList& dim, bool keepdim,
                          std::optional<ScalarType> dtype) {
  check_matrix_norm_args(self, dim, dtype);
  const double o = ord.to_double();
  EMBER_CHECK(std::isinf(o) || o == 1 || o == -1 || o == 2 || o == -2, Runtime, "linalg.matrix_norm: Order ",
              scalar_str(ord), " not supported.");
  Tensor x = dtype ? ember::to_dtype(self, *dtype, false, false) : self;
  const int64_t d0 = wrap_dim(dim[0], self.dim(), "linalg.matrix_norm");
  const int64_t d1 = wrap_dim(dim[1], self.dim(), "linalg.matrix_norm");
  if (o == 2 || o == -2)
    return singular_value_norm(x, d0, d1, o > 0 ? SingularReduce::Max : SingularReduce::Min, keepdim);
  // The 1-norm sums down the columns (over d0), the inf-norm along the rows (over d1).
  if (std::isinf(o)) return induced_norm(x, d1, d0, o > 0, keepdim);
  return induced_norm(x, d0, d1, o > 0, keepdim);
}

Tensor linalg_matrix_norm_str_ord(const Tensor& self, const std::string& ord, const IntList& dim, bool keepdim,
                                  std::optional<ScalarType> dtype) {
  check_matrix_norm_args(self, dim, dtype);
  EMBER_CHECK(ord == "fro" || ord == "nuc", Runtime, "linalg.matrix_norm: Order ", ord, " not supported.");
  if (ord == "nuc") {
    Tensor x = dtype ? ember::to_dtype(self, *dtype, false, false) : self;
    return singular_value_norm(x, wrap_dim(dim[0], self.dim(), "linalg.matrix_norm"),
                               wrap_dim(dim[1], self.dim(), "linalg.matrix_norm"), SingularReduce::Sum, keepdim);
  }
  return ember::linalg_vector_norm(self, Scalar(int64_t(2)), dim, keepdim, dtype);
}

Tensor linalg_norm(const Tensor& self, const std::optional<Scalar>& ord, const std::optional<IntList>& dim,
                   bool keepdim, std::optional<ScalarType> dtype) {
  if (dim) {
    EMBER_CHECK(dim->size() == 1 || dim->size() == 2, Runtime,
                "linalg.norm: If dim is specified, it must be of length 1 or 2. Got ", *dim);
  } else if (ord) {
    EMBER_CHECK(self.dim() == 1 || self.dim() == 2, Runtime,
                "linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got ", self.dim(),
                "D.");
  }
  if (!ord) return ember::linalg_vector_norm(self, Scalar(int64_t(2)), dim, keepdim, dtype);
  const bool matrix = dim ? dim->size() == 2 : self.dim() == 2;
  if (matrix) return ember::linalg_matrix_norm(self, *ord, dim.value_or(IntList{-2, -1}), keepdim, dtype);
  return ember::linalg_vector_norm(self, *ord, dim, keepdim, dtype);
}

Tensor linalg_norm_ord_str(const Tensor& self, const std::string& ord, const std::optional<IntList>& dim,
                           bool keepdim, std::optional<ScalarType> dtype) {
  if (dim) {
    EMBER_CHECK(dim->size() == 1 || dim->size() == 2, Runtime,
                "linalg.norm: If dim is specified, it mut be of length 1 or 2. Got ", *dim);
  } else {
    EMBER_CHECK(self.dim() == 1 || self.dim() == 2, Runtime,
                "linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got ", self.dim(),
                "D.");
  }
  // As PyTorch: a string ord is always a matrix norm (a 1-D input or one dim fails there).
  return ember::linalg_matrix_norm_str_ord(self, ord, dim.value_or(IntList{0, 1}), keepdim, dtype);
}

}  // namespace ember::native
