// The functions derivative formulas call besides ember ops. Every one is made
// of public ember ops, so the gradients they build are differentiable again.
#include "ember/autograd_helpers.h"

#include <cmath>
#include <memory>
#include <string>

#include "ember/autograd.h"
#include "ember/ops/abs.h"
#include "ember/ops/any.h"
#include "ember/ops/arange.h"
#include "ember/ops/cat.h"
#include "ember/ops/clone.h"
#include "ember/ops/eq.h"
#include "ember/ops/expand.h"
#include "ember/ops/ge.h"
#include "ember/ops/index.h"
#include "ember/ops/index_put_.h"
#include "ember/ops/isnan.h"
#include "ember/ops/le.h"
#include "ember/ops/logical_and.h"
#include "ember/ops/logical_or.h"
#include "ember/ops/mm.h"
#include "ember/ops/mul.h"
#include "ember/ops/narrow.h"
#include "ember/ops/ones.h"
#include "ember/ops/pow.h"
#include "ember/ops/prod.h"
#include "ember/ops/reshape.h"
#include "ember/ops/sign.h"
#include "ember/ops/sum.h"
#include "ember/ops/t.h"
#include "ember/ops/to.h"
#include "ember/ops/true_divide.h"
#include "ember/ops/unsqueeze.h"
#include "ember/ops/where.h"
#include "ember/ops/zeros.h"
#include "ember/reduce.h"

namespace ember::autograd {

namespace {

// Puts back the size-1 dims a reduction without keepdim removed.
Tensor restore_reduced(const Tensor& t, const DimVector& mask, bool keepdim) {
  if (keepdim) return t;
  Tensor r = t;
  for (int64_t d = 0; d < (int64_t)mask.size(); ++d)
    if (mask[d]) r = ember::unsqueeze(r, d);
  return r;
}

// The reduced dims of a mask; nullopt (all) when the mask has none (0-d inputs).
std::optional<IntList> mask_dims(const DimVector& mask) {
  IntList dims;
  for (int64_t d = 0; d < (int64_t)mask.size(); ++d)
    if (mask[d]) dims.push_back(d);
  if (dims.empty()) return std::nullopt;
  return dims;
}

Tensor zeros_of(const DimVector& shape, const Tensor& like) {
  return ember::zeros(shape, like.dtype(), like.device());
}

Tensor number(int64_t v) { return wrap_number(Scalar(v)); }

struct NotImplementedBackward final : Node {
  std::string op;
  std::string default_name() const override { return "NotImplemented"; }
  TensorList apply(TensorList&&) override {
    EMBER_FAIL(Runtime, "derivative for aten::", op, " is not implemented");  // PyTorch's wording
  }
};

}  // namespace

Tensor zeros_like(const Tensor& self) { return zeros_of(self.sizes(), self); }

Tensor sum_over(const Tensor& self, const std::optional<IntList>& dim, bool keepdim) {
  return ember::sum(self, all_if_empty(dim), keepdim, std::nullopt);
}

Tensor ones_like(const Tensor& self) { return ember::ones(self.sizes(), self.dtype(), self.device(), false); }

Tensor rounded_div_backward(const Tensor& grad, const Tensor&) { return zeros_like(grad); }

Tensor maybe_multiply(const Tensor& grad, const Scalar& factor) {
  if (factor.to_double() == 1.0) return grad;
  return ember::mul(grad, wrap_number(factor));
}

Tensor mm_mat2_backward(const Tensor& grad, const Tensor& self, const IntList& mat2_strides) {
  if (mat2_strides.size() == 2 && mat2_strides[0] == 1 && mat2_strides[1] != 1)
    return ember::t(ember::mm(ember::t(grad), self));
  return ember::mm(ember::t(self), grad);
}

Scalar scalar_arith(char op, const Scalar& a, const Scalar& b) {
  if (op == '/' || a.is_floating() || b.is_floating()) {
    const double x = a.to_double(), y = b.to_double();
    return op == '+' ? x + y : op == '-' ? x - y : op == '*' ? x * y : x / y;
  }
  const int64_t x = a.to_int(), y = b.to_int();
  return op == '+' ? x + y : op == '-' ? x - y : x * y;
}

Tensor sum_to(const Tensor& grad, const IntList& shape) {
  if (grad.sizes() == shape) return grad;
  const int64_t lead = grad.dim() - (int64_t)shape.size();
  if (lead < 0) {
    EMBER_CHECK(grad.numel() == compute_numel(shape), Runtime, "sum_to: gradient of shape ", grad.sizes(),
                " cannot be reduced to shape ", shape);
    return ember::reshape(grad, shape);
  }
  IntList dims;
  for (int64_t i = 0; i < grad.dim(); ++i) {
    if (i < lead) dims.push_back(i);
    else if (shape[i - lead] == 1 && grad.sizes()[i] != 1) dims.push_back(i);
    else
      EMBER_CHECK(shape[i - lead] == grad.sizes()[i] || grad.sizes()[i] == 1, Runtime, "sum_to: gradient of shape ",
                  grad.sizes(), " cannot be reduced to shape ", shape);
  }
  Tensor r = dims.empty() ? grad : ember::sum(grad, dims, true, std::nullopt);
  if (r.sizes() != shape) {
    if (r.numel() == compute_numel(shape)) r = ember::reshape(r, shape);
    else r = ember::expand(ember::reshape(r, IntList(r.sizes().data() + lead, r.sizes().end())), shape);
  }
  return r;
}

Tensor expand_reduced(const Tensor& grad, const IntList& shape, const std::optional<IntList>& dim, bool keepdim) {
  const int64_t ndim = (int64_t)shape.size();
  std::optional<IntList> dims = dim;
  // An empty list: every dim, unless the gradient shows nothing was removed.
  if (dims && dims->empty() && (keepdim || grad.dim() < ndim)) dims = std::nullopt;
  DimVector mask = reduction_mask(dims, ndim, "sum");
  return ember::expand(restore_reduced(grad, mask, keepdim), shape);
}

Tensor prod_backward(const Tensor& grad, const Tensor& self, const Tensor& result, const std::optional<IntList>& dim,
                     bool keepdim) {
  if (self.numel() == 0) return zeros_of(self.sizes(), grad);
  std::optional<int64_t> d;
  if (dim && !dim->empty() && self.dim() > 0) d = wrap_dim((*dim)[0], self.dim(), "prod");
  // Over every dim: work on the flattened input, along dim 0.
  Tensor x = d ? self : ember::reshape(self, IntList{self.numel()});
  Tensor g = d ? (keepdim ? grad : ember::unsqueeze(grad, *d)) : ember::reshape(grad, IntList{1});
  Tensor r = d ? (keepdim ? result : ember::unsqueeze(result, *d)) : ember::reshape(result, IntList{1});
  const int64_t rd = d.value_or(0);
  Tensor res;
  if (!ember::any(ember::eq(x, number(0)), std::nullopt, false).item().to_bool()) {
    res = ember::true_divide(ember::mul(g, r), x);  // prod / x_i, differentiable through the saved result
  } else {
    // d prod / d x_i is the product of the others: with zeros it cannot divide, so (as PyTorch,
    // whose exclusive cumprods ember lacks) take each product over the row with x_i set to 1,
    // from a (.., n, n, ..) copy; built of ops, so it differentiates again (zeros included).
    const int64_t n = x.sizes()[rd];
    DimVector row_shape(x.dim() + 1, 1), col_shape(x.dim() + 1, 1);
    row_shape[rd] = n;
    col_shape[rd + 1] = n;
    Tensor pos = ember::arange(Scalar(n), std::nullopt, Scalar(int64_t(1)), ScalarType::Int64, x.device(), false);
    Tensor diagonal = ember::eq(ember::reshape(pos, row_shape), ember::reshape(pos, col_shape));
    Tensor others = ember::where(diagonal, number(1), ember::unsqueeze(x, rd));
    res = ember::mul(g, ember::prod(others, rd + 1, false, std::nullopt));
  }
  if (!d) res = ember::reshape(res, self.sizes());
  return res;
}

Tensor select_extreme_backward(const Tensor& grad, const Tensor& self, const Tensor& result,
                               const std::optional<IntList>& dim, bool keepdim) {
  DimVector mask = reduction_mask(all_if_empty(dim), self.dim(), "amax");
  Tensor g = restore_reduced(grad, mask, keepdim);
  Tensor r = restore_reduced(result, mask, keepdim);
  Tensor hit = ember::eq(self, r);
  Tensor count = ember::sum(hit, mask_dims(mask), true, std::nullopt);
  return ember::mul(ember::true_divide(g, count), hit);
}

Tensor vector_norm_backward(const Tensor& grad, const Tensor& self, const Scalar& ord, const Tensor& result,
                            const std::optional<IntList>& dim, bool keepdim) {
  const double p = ord.to_double();
  if (p == 0) return zeros_of(self.sizes(), self);
  const DimVector mask = reduction_mask(all_if_empty(dim), self.dim(), "linalg.vector_norm");
  const Tensor g = restore_reduced(grad, mask, keepdim);
  const Tensor norm = restore_reduced(result, mask, keepdim);
  const Tensor x = self.dtype() == norm.dtype() ? self : ember::to_dtype(self, norm.dtype());
  const Tensor zero = number(0);
  Tensor res;
  if (p == 1) {
    res = ember::mul(ember::sign(x), g);
  } else if (p == 2) {
    res = ember::mul(x, ember::where(ember::eq(norm, zero), zero, ember::true_divide(g, norm)));
  } else if (std::isinf(p)) {
    // The elements that attain the norm (or are NaN) share the gradient.
    const Tensor ax = ember::abs(x);
    const Tensor hit = ember::logical_or(ember::eq(ax, norm), ember::isnan(ax));
    const Tensor count = ember::sum(hit, mask_dims(mask), true, std::nullopt);
    res = ember::mul(ember::sign(x), ember::mul(ember::true_divide(g, count), hit));
  } else if (p < 1) {
    // |x|^(p-1) is infinite at 0, where PyTorch takes the subgradient 0.
    const Tensor scaled = ember::where(ember::eq(x, zero), zero,
                                       ember::mul(ember::sign(x), ember::pow_Tensor_Scalar(ember::abs(x), Scalar(p - 1))));
    res = ember::mul(scaled, ember::mul(g, ember::pow_Tensor_Scalar(norm, Scalar(1 - p))));
  } else {
    const Tensor scaled = p < 2 ? ember::mul(ember::sign(x), ember::pow_Tensor_Scalar(ember::abs(x), Scalar(p - 1)))
                                : ember::mul(x, ember::pow_Tensor_Scalar(ember::abs(x), Scalar(p - 2)));
    const Tensor scale = ember::true_divide(g, ember::pow_Tensor_Scalar(norm, Scalar(p - 1)));
    res = ember::mul(scaled, ember::where(ember::eq(norm, zero), zero, scale));
  }
  return res.dtype() == self.dtype() ? res : ember::to_dtype(res, self.dtype());
}

Tensor index_reduction_backward(const Tensor& grad, const Tensor& indices, const IntList& shape, int64_t dim,
                                bool keepdim) {
  const int64_t ndim = (int64_t)shape.size();
  if (ndim == 0) return ember::reshape(grad, shape);
  const int64_t d = wrap_dim(dim, ndim, "max");
  Tensor g = keepdim ? grad : ember::unsqueeze(grad, d);
  Tensor idx = keepdim ? indices : ember::unsqueeze(indices, d);
  // One-hot along `dim`: position == index, broadcast against the gradient.
  DimVector pos_shape(ndim, 1);
  pos_shape[d] = shape[d];
  Tensor pos = ember::reshape(
      ember::arange(Scalar(shape[d]), std::nullopt, Scalar(int64_t(1)), ScalarType::Int64, indices.device(), false),
      pos_shape);
  Tensor hit = ember::eq(pos, idx);
  Tensor res = ember::where(hit, g, number(0));
  if (res.sizes() != shape) res = ember::expand(res, shape);
  return res;
}

IntList invert_permutation(const IntList& dims) {
  const int64_t n = (int64_t)dims.size();
  IntList out(n);
  for (int64_t i = 0; i < n; ++i) out[wrap_dim(dims[i], n, "permute")] = i;
  return out;
}

Tensor slice_backward(const Tensor& grad, const IntList& shape, int64_t dim, std::optional<int64_t> start,
                      std::optional<int64_t> end, int64_t step) {
  const int64_t ndim = (int64_t)shape.size();
  const int64_t d = wrap_dim(dim, ndim, "slice");
  const int64_t size = shape[d];
  const auto [s, e] = clamp_slice(start, end, size);
  const int64_t k = grad.sizes()[d];
  if (k == 0 || grad.numel() == 0) return zeros_of(shape, grad);
  Tensor g = grad;
  if (step > 1) {
    // Follow each gradient row by step - 1 zero rows, then trim to the sliced span.
    Tensor gu = ember::unsqueeze(grad, d + 1);
    DimVector zs = gu.sizes();
    zs[d + 1] = step - 1;
    Tensor inter = ember::cat({gu, zeros_of(zs, grad)}, d + 1);
    DimVector flat = grad.sizes();
    flat[d] = k * step;
    g = ember::narrow(ember::reshape(inter, flat), d, 0, e - s);
  }
  TensorList parts;
  DimVector zs = g.sizes();
  if (s > 0) {
    zs[d] = s;
    parts.push_back(zeros_of(zs, grad));
  }
  parts.push_back(g);
  if (size - e > 0) {
    zs[d] = size - e;
    parts.push_back(zeros_of(zs, grad));
  }
  return parts.size() == 1 ? g : ember::cat(parts, d);
}

Tensor select_backward(const Tensor& grad, const IntList& shape, int64_t dim, int64_t index) {
  const int64_t d = wrap_dim(dim, (int64_t)shape.size(), "select");
  if (index < 0) index += shape[d];
  return slice_backward(ember::unsqueeze(grad, d), shape, d, index, index + 1, 1);
}

Tensor index_backward(const Tensor& grad, const IntList& shape, const TensorList& indices) {
  Tensor z = zeros_of(shape, grad);
  return ember::index_put_(z, indices, grad, true);
}

Tensor index_put(const Tensor& self, const TensorList& indices, const Tensor& values, bool accumulate) {
  Tensor r = ember::clone(self);
  Tensor v = values.dtype() == self.dtype() ? values : ember::to_dtype(values, self.dtype());
  return ember::index_put_(r, indices, v, accumulate);
}

Tensor index_values_backward(const Tensor& grad, const TensorList& indices, const IntList& shape) {
  return sum_to(ember::index(grad, indices), shape);
}

Tensor clamp_mask(const Tensor& self, const std::optional<Scalar>& min, const std::optional<Scalar>& max) {
  Tensor m;
  if (min) m = ember::ge(self, wrap_number(*min));
  if (max) {
    Tensor le = ember::le(self, wrap_number(*max));
    m = m.defined() ? ember::logical_and(m, le) : le;
  }
  if (!m.defined()) m = ember::ones(self.sizes(), ScalarType::Bool, self.device());
  return m;
}

void mark_view(const Tensor& view, const Tensor& base, CreationMeta creation) {
  // Point at the root: a view of a view shares the root's storage and history.
  Ref<TensorImpl> root = base.ref();
  if (AutogradMeta* m = base.impl()->autograd.get(); m && m->view_base) {
    root = m->view_base;
    // A view of a restricted view stays restricted (PyTorch's propagate_creation_meta).
    if (creation == CreationMeta::Default) creation = m->creation_meta;
  }
  AutogradMeta& meta = view.impl()->autograd_meta();
  meta.view_base = std::move(root);
  meta.creation_meta = creation;
  meta.attr_version = view.version();
}

void mark_view(const Tensor& view, const Tensor& base, bool multi_output) {
  mark_view(view, base, !GradMode::is_enabled() ? CreationMeta::NoGradMode
                        : multi_output         ? CreationMeta::MultiOutputNode
                                               : CreationMeta::Default);
}

void set_not_differentiable(const Tensor& result, std::initializer_list<const Tensor*> inputs, const char* op) {
  if (!result.defined() || !is_floating(result.dtype()) || !GradMode::is_enabled()) return;
  auto node = std::make_shared<NotImplementedBackward>();
  node->op = op;
  for (const Tensor* t : inputs) node->add_input(*t);  // so a pruned backward still reaches it
  set_history(result, node);
}

std::shared_ptr<Node> not_differentiable_node(const Tensor& self, std::initializer_list<const Tensor*> inputs,
                                              const char* op) {
  if (!is_floating(self.dtype()) || !GradMode::is_enabled()) return nullptr;
  auto node = std::make_shared<NotImplementedBackward>();
  node->op = op;
  for (const Tensor* t : inputs) node->add_input(*t);
  return node;
}

}  // namespace ember::autograd
