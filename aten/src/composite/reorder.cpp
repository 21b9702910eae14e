// Reorderings and diagonals built from other ember ops (issue 11): fliplr/flipud,
// roll, rot90, tril/triu, diagonal (a view), diag_embed, diag, trace, diff,
// swapaxes, movedim, broadcast_to, unflatten. Autograd records what they call.
#include <algorithm>
#include <sstream>
#include <vector>

#include "ember/errors.h"
#include "ember/ops/_diagonal_backward.h"
#include "ember/ops/arange.h"
#include "ember/ops/broadcast_to.h"
#include "ember/ops/cat.h"
#include "ember/ops/clone.h"
#include "ember/ops/copy_.h"
#include "ember/ops/diag.h"
#include "ember/ops/diag_embed.h"
#include "ember/ops/diagonal.h"
#include "ember/ops/diff.h"
#include "ember/ops/expand.h"
#include "ember/ops/flatten.h"
#include "ember/ops/flip.h"
#include "ember/ops/fliplr.h"
#include "ember/ops/flipud.h"
#include "ember/ops/le.h"
#include "ember/ops/movedim.h"
#include "ember/ops/narrow.h"
#include "ember/ops/ne.h"
#include "ember/ops/permute.h"
#include "ember/ops/reshape.h"
#include "ember/ops/roll.h"
#include "ember/ops/rot90.h"
#include "ember/ops/sub.h"
#include "ember/ops/sum.h"
#include "ember/ops/swapaxes.h"
#include "ember/ops/trace.h"
#include "ember/ops/transpose.h"
#include "ember/ops/tril.h"
#include "ember/ops/triu.h"
#include "ember/ops/unflatten.h"
#include "ember/ops/unsqueeze.h"
#include "ember/ops/view.h"
#include "ember/ops/where.h"
#include "ember/ops/zeros.h"
#include "ember/tensor.h"
#include "named_node.h"

namespace ember::native {

namespace {
std::string list_str(const IntList& v) {
  std::ostringstream s;
  s << "[";
  for (size_t i = 0; i < v.size(); ++i) s << (i ? ", " : "") << v[i];
  s << "]";
  return s.str();
}

Tensor zero_like_number(const Tensor& self) {
  return wrap_number(self.dtype() == ScalarType::Bool ? Scalar(false) : Scalar(int64_t(0)));
}

// tril keeps col - row <= diagonal, triu col - row >= diagonal (of the last two dims).
Tensor triangle(const Tensor& self, int64_t diagonal, bool lower, const char* op) {
  EMBER_CHECK(self.dim() >= 2, Runtime, op, ": input tensor must have at least 2 dimensions");
  const int64_t rows = self.sizes()[self.dim() - 2], cols = self.sizes()[self.dim() - 1];
  Tensor r = ember::unsqueeze(ember::arange(Scalar(int64_t(0)), Scalar(rows), Scalar(int64_t(1)), ScalarType::Int64, self.device()), 1);
  Tensor c = ember::arange(Scalar(int64_t(0)), Scalar(cols), Scalar(int64_t(1)), ScalarType::Int64, self.device());
  Tensor offset = ember::sub(c, r);
  Tensor d = wrap_number(Scalar(diagonal));
  Tensor keep = lower ? ember::le(offset, d) : ember::le(d, offset);
  return ember::where(keep, self, zero_like_number(self));
}
}  // namespace

Tensor fliplr(const Tensor& self) {
  EMBER_CHECK(self.dim() >= 2, Runtime, "Input must be >= 2-d.");
  return ember::flip(self, IntList{1});
}

Tensor flipud(const Tensor& self) {
  EMBER_CHECK(self.dim() >= 1, Runtime, "Input must be >= 1-d.");
  return ember::flip(self, IntList{0});
}

Tensor roll(const Tensor& self, const IntList& shifts, const IntList& dims) {
  EMBER_CHECK(!shifts.empty(), Runtime, "`shifts` required");
  if (dims.empty() && shifts.size() == 1)
    return ember::view(ember::roll(ember::flatten(self, 0, -1), shifts, IntList{0}), self.sizes());
  EMBER_CHECK(shifts.size() == dims.size(), Runtime, "shifts and dimensions must align. shifts: ", shifts.size(),
              ", dims:", dims.size());
  Tensor result = self;
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t d = wrap_dim(dims[i], self.dim(), "roll");
    const int64_t n = self.dim() == 0 ? 1 : self.sizes()[d];
    if (n == 0 || self.dim() == 0) continue;
    const int64_t s = ((shifts[i] % n) + n) % n;
    if (s == 0) continue;
    result = ember::cat(TensorList{ember::narrow(result, d, n - s, s), ember::narrow(result, d, 0, n - s)}, d);
  }
  return result.is_same(self) ? ember::clone(self) : result;
}

Tensor rot90(const Tensor& self, int64_t k, const IntList& dims) {
  EMBER_CHECK(dims.size() == 2, Runtime, "expected total rotation dims == 2, but got dims = ", dims.size());
  EMBER_CHECK(self.dim() >= 2, Runtime, "expected total dims >= 2, but got total dims = ", self.dim());
  const int64_t d0 = wrap_dim(dims[0], self.dim(), "rot90"), d1 = wrap_dim(dims[1], self.dim(), "rot90");
  EMBER_CHECK(d0 != d1, Runtime, "expected rotation dims to be different, but got dim0 = ", d0, " and dim1 = ", d1);
  switch (((k % 4) + 4) % 4) {
    case 1: return ember::transpose(ember::flip(self, IntList{d1}), d0, d1);
    case 2: return ember::flip(self, IntList{d0, d1});
    case 3: return ember::transpose(ember::flip(self, IntList{d0}), d0, d1);
    default: return ember::clone(self);
  }
}

Tensor tril(const Tensor& self, int64_t diagonal) { return triangle(self, diagonal, true, "tril"); }
Tensor triu(const Tensor& self, int64_t diagonal) { return triangle(self, diagonal, false, "triu"); }

Tensor diagonal(const Tensor& self, int64_t offset, int64_t dim1, int64_t dim2) {
  const int64_t ndim = self.dim();
  const int64_t a = wrap_dim(dim1, ndim, "diagonal"), b = wrap_dim(dim2, ndim, "diagonal");
  EMBER_CHECK(a != b, Runtime, "diagonal dimensions cannot be identical ", dim1, ", ", dim2);
  const DimVector& sizes = self.sizes();
  const DimVector& strides = self.strides();
  int64_t len = offset >= 0 ? std::min(sizes[a], sizes[b] - offset) : std::min(sizes[a] + offset, sizes[b]);
  len = std::max<int64_t>(len, 0);
  int64_t start = self.offset();
  if (len > 0) start += offset >= 0 ? offset * strides[b] : -offset * strides[a];
  DimVector out_sizes, out_strides;
  for (int64_t d = 0; d < ndim; ++d) {
    if (d == a || d == b) continue;
    out_sizes.push_back(sizes[d]);
    out_strides.push_back(strides[d]);
  }
  out_sizes.push_back(len);
  out_strides.push_back(strides[a] + strides[b]);
  return make_view(self, std::move(out_sizes), std::move(out_strides), start);
}

// The gradient of diagonal: `grad` written on that diagonal of zeros of `input_sizes`.
Tensor _diagonal_backward(const Tensor& grad, const IntList& input_sizes, int64_t offset, int64_t dim1, int64_t dim2) {
  Tensor result = ember::zeros(input_sizes, grad.dtype(), grad.device());
  ember::copy_(ember::diagonal(result, offset, dim1, dim2), grad);
  return result;
}

Tensor diag_embed(const Tensor& self, int64_t offset, int64_t dim1, int64_t dim2) {
  const int64_t ndim = self.dim() + 1;
  const int64_t a = wrap_dim(dim1, ndim, "diag_embed"), b = wrap_dim(dim2, ndim, "diag_embed");
  EMBER_CHECK(a != b, Runtime, "diagonal dimensions cannot be identical ", dim1, ", ", dim2);
  const int64_t n = (self.dim() == 0 ? 1 : self.sizes()[self.dim() - 1]) + std::abs(offset);
  DimVector sizes;
  for (int64_t d = 0; d + 1 < self.dim(); ++d) sizes.push_back(self.sizes()[d]);
  for (int64_t d : {std::min(a, b), std::max(a, b)}) sizes.insert(d, n);
  return ember::_diagonal_backward(self.dim() == 0 ? ember::reshape(self, IntList{1}) : self, sizes, offset, a, b);
}

Tensor diag(const Tensor& self, int64_t diagonal) {
  EMBER_CHECK(self.dim() == 1 || self.dim() == 2, Runtime, "diag(): Supports 1D or 2D tensors. Got ", self.dim(), "D");
  if (self.dim() == 1) return ember::diag_embed(self, diagonal, 0, 1);
  // PyTorch's node for the copy of a diagonal (diagonal_copy's).
  return with_node_name("DiagonalBackward0_copy", [&] { return ember::clone(ember::diagonal(self, diagonal, 0, 1)); });
}

Tensor trace_matrix(const Tensor& self) {
  EMBER_CHECK(self.dim() == 2, Runtime, "trace: expected a matrix, but got tensor with dim ", self.dim());
  return ember::sum(ember::diagonal(self, 0, 0, 1));
}

Tensor diff(const Tensor& self, int64_t n, int64_t dim, const Tensor& prepend, const Tensor& append) {
  EMBER_CHECK(self.dim() >= 1, Runtime, "diff expects input to be at least one-dimensional");
  EMBER_CHECK(n >= 0, Runtime, "order must be non-negative but got ", n);
  const int64_t d = wrap_dim(dim, self.dim(), "diff");
  Tensor x = self;
  if (prepend.defined() || append.defined()) {
    TensorList parts;
    if (prepend.defined()) parts.push_back(prepend);
    parts.push_back(self);
    if (append.defined()) parts.push_back(append);
    x = ember::cat(parts, d);
  }
  for (int64_t i = 0; i < n && x.sizes()[d] > 0; ++i) {
    const int64_t len = x.sizes()[d] - 1;
    Tensor hi = ember::narrow(x, d, 1, len), lo = ember::narrow(x, d, 0, len);
    x = x.dtype() == ScalarType::Bool ? ember::ne(hi, lo) : ember::sub(hi, lo);
  }
  return x.is_same(self) ? ember::clone(self) : x;
}

Tensor swapaxes(const Tensor& self, int64_t axis0, int64_t axis1) { return ember::transpose(self, axis0, axis1); }

Tensor movedim(const Tensor& self, const IntList& source, const IntList& destination) {
  EMBER_CHECK(source.size() == destination.size(), Runtime,
              "movedim: Invalid source or destination dims: source (", list_str(source),
              " dims) should contain the same number of dims as destination (", list_str(destination), " dims)");
  const int64_t ndim = self.dim();
  std::vector<int64_t> order(std::max<int64_t>(ndim, 1), -1);
  std::vector<bool> used(order.size(), false), moved(order.size(), false);
  for (size_t i = 0; i < source.size(); ++i) {
    const int64_t s = wrap_dim(source[i], ndim, "movedim"), t = wrap_dim(destination[i], ndim, "movedim");
    EMBER_CHECK(!moved[s], Runtime, "movedim: repeated dim in `source` (", list_str(source), ")");
    EMBER_CHECK(order[t] < 0, Runtime, "movedim: repeated dim in `destination` (", list_str(destination), ")");
    order[t] = s;
    moved[s] = true;
  }
  if (ndim == 0) return self;
  int64_t next = 0;
  for (int64_t &o : order) {
    if (o >= 0) continue;
    while (moved[next]) ++next;
    o = next++;
  }
  IntList dims;
  for (int64_t o : order) dims.push_back(o);
  return ember::permute(self, dims);
}

Tensor broadcast_to(const Tensor& self, const IntList& size) { return ember::expand(self, size); }

Tensor unflatten(const Tensor& self, int64_t dim, const IntList& sizes) {
  const int64_t d = wrap_dim(dim, self.dim(), "unflatten");
  EMBER_CHECK(!sizes.empty(), Runtime, "unflatten: sizes must be non-empty");
  const int64_t here = self.dim() == 0 ? 1 : self.sizes()[d];
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == -1) {
      EMBER_CHECK(infer < 0, Runtime, "unflatten: only one dimension can be inferred");
      infer = int64_t(i);
    } else {
      known *= sizes[i];
    }
  }
  EMBER_CHECK(infer >= 0 ? (known != 0 && here % known == 0) : known == here, Runtime, "unflatten: Provided sizes ",
              list_str(sizes), " don't multiply up to the size of dim ", dim, " (", here, ") in the input tensor");
  DimVector shape;
  for (int64_t k = 0; k < self.dim(); ++k) {
    if (k != d) { shape.push_back(self.sizes()[k]); continue; }
    for (size_t i = 0; i < sizes.size(); ++i) shape.push_back(int64_t(i) == infer ? here / known : sizes[i]);
  }
  return ember::view(self, shape);
}

}  // namespace ember::native
