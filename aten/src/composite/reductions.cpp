// Reductions composed of kernels: mean, var, std, and the whole-tensor max/min.
// mean records its own node (MeanBackward0/1); the others record their parts.
#include <algorithm>
#include <optional>

#include "ember/autograd.h"
#include "ember/autograd_helpers.h"
#include "ember/forward_ad.h"
#include "ember/ops/_var_std.h"
#include "ember/ops/amax.h"
#include "ember/ops/amin.h"
#include "ember/ops/linalg_matrix_norm.h"
#include "ember/ops/linalg_vector_norm.h"
#include "ember/ops/max.h"
#include "ember/ops/maximum.h"
#include "ember/ops/mean.h"
#include "ember/ops/min.h"
#include "ember/ops/minimum.h"
#include "ember/ops/mul.h"
#include "ember/ops/norm.h"
#include "ember/ops/sqrt.h"
#include "ember/ops/std.h"
#include "ember/ops/sub.h"
#include "ember/ops/sum.h"
#include "ember/ops/to.h"
#include "ember/ops/true_divide.h"
#include "ember/ops/var.h"
#include "ember/reduce.h"
#include "ember/tensor.h"
#include "linear_tangent.h"

namespace ember::native {

namespace {

// The number of elements each output element reduces over.
int64_t reduced_count(const Tensor& self, const std::optional<IntList>& dim, const char* op) {
  DimVector mask = reduction_mask(dim, self.dim(), op);
  int64_t n = 1;
  for (int64_t d = 0; d < self.dim(); ++d)
    if (mask[d]) n *= self.sizes()[d];
  return n;
}

// The correction var/std divide by N minus; `unbiased` is the legacy spelling.
double resolve_correction(std::optional<bool> unbiased, const std::optional<Scalar>& correction, const char* op) {
  EMBER_CHECK(!(unbiased && correction), Runtime, op,
              "(): only one of 'unbiased' and 'correction' may be given");
  if (correction) return correction->to_double();
  if (unbiased) return *unbiased ? 1.0 : 0.0;
  return 1.0;
}

Tensor var_impl(const Tensor& self, const std::optional<IntList>& dim_in, std::optional<bool> unbiased, bool keepdim,
                const std::optional<Scalar>& correction, const char* op, bool take_sqrt) {
  EMBER_CHECK(is_floating(self.dtype()), Runtime, "std and var only support floating point and complex dtypes");
  double c = resolve_correction(unbiased, correction, op);
  std::optional<IntList> dim = all_if_empty(dim_in);
  // One fused pass, on the devices with a _var_std kernel, when nothing needs the graph (or the
  // tangents) of the steps below.
  if (dispatch::_var_std[(int)self.device().type] && !autograd::any_requires_grad({&self}) &&
      !(forward_ad::maybe_active() && forward_ad::wanted({&self})))
    return ember::_var_std(self, dim, c, keepdim, take_sqrt);
  int64_t n = reduced_count(self, dim, op);
  // On the CPU every floating dtype accumulates in float64, as PyTorch's CPU
  // kernels do (the variance of a constant is then exactly 0); on a GPU,
  // 16-bit floats accumulate in float32.
  const bool half = self.dtype() == ScalarType::Float16 || self.dtype() == ScalarType::BFloat16;
  const ScalarType acc = self.device().is_cuda() ? (half ? ScalarType::Float32 : self.dtype()) : ScalarType::Float64;
  const bool widen = acc != self.dtype();
  Tensor x = widen ? ember::to_dtype(self, acc) : self;
  Tensor mu = ember::mean(x, dim, true, std::nullopt);
  Tensor diff = ember::sub(x, mu);
  Tensor sq = ember::sum(ember::mul(diff, diff), dim, keepdim, std::nullopt);
  double divisor = std::max(0.0, (double)n - c);
  Tensor v = ember::true_divide(sq, wrap_number(Scalar(divisor)));
  if (take_sqrt) v = ember::sqrt(v);
  return widen ? ember::to_dtype(v, self.dtype()) : v;
}

// mean's gradient: spread evenly over the reduced elements.
struct MeanBackward final : Node {
  std::optional<IntList> dim;
  bool keepdim = false;
  DimVector self_shape;
  int64_t count = 1;
  std::string default_name() const override { return dim ? "MeanBackward1" : "MeanBackward0"; }
  TensorList apply(TensorList&& grads) override {
    TensorList out(1);
    if (!should_compute(0) || !grads[0].defined()) return out;
    Tensor g = autograd::expand_reduced(grads[0], self_shape, dim, keepdim);
    g = ember::true_divide(g, wrap_number(Scalar(count)));
    if (g.dtype() != input_meta[0].dtype) g = ember::to_dtype(g, input_meta[0].dtype);
    out[0] = g;
    return out;
  }
};

}  // namespace

Tensor mean(const Tensor& self, const std::optional<IntList>& dim_in, bool keepdim, std::optional<ScalarType> dtype) {
  ScalarType dt = dtype.value_or(self.dtype());
  EMBER_CHECK(is_floating(dt), Runtime, "mean(): could not infer output dtype. ", dtype ? "Optional" : "Input",
              " dtype must be either a floating point or complex dtype. Got: ", dtype_title(dt));
  std::optional<IntList> dim = all_if_empty(dim_in);
  const int64_t n = reduced_count(self, dim, "mean");
  if (forward_ad::wanted({&self}))
    return with_linear_tangent({self}, [&](const TensorList& t) { return ember::mean(t[0], dim, keepdim, dtype); });
  const bool track = autograd::any_requires_grad({&self});
  Tensor result;
  {
    NoGradGuard guard;
    // 16-bit floats sum and divide in float32 (their sum overflows long before their mean).
    const bool half = dt == ScalarType::Float16 || dt == ScalarType::BFloat16;
    Tensor total = ember::sum(self, dim, keepdim, half ? ScalarType::Float32 : dt);
    result = ember::true_divide(total, wrap_number(Scalar(n)));
    if (half) result = ember::to_dtype(result, dt);
  }
  if (track) {
    auto node = std::make_shared<MeanBackward>();
    node->dim = dim;
    node->keepdim = keepdim;
    node->self_shape = self.sizes();
    node->count = n;
    node->add_input(self);
    autograd::set_history(result, node);
  }
  return result;
}

Tensor var(const Tensor& self, const std::optional<IntList>& dim, std::optional<bool> unbiased, bool keepdim,
           const std::optional<Scalar>& correction) {
  return var_impl(self, dim, unbiased, keepdim, correction, "var", false);
}

Tensor std(const Tensor& self, const std::optional<IntList>& dim, std::optional<bool> unbiased, bool keepdim,
           const std::optional<Scalar>& correction) {
  return var_impl(self, dim, unbiased, keepdim, correction, "std", true);
}

Tensor norm(const Tensor& self, const std::optional<Scalar>& p, const std::optional<IntList>& dim, bool keepdim,
            std::optional<ScalarType> dtype) {
  return ember::linalg_vector_norm(self, p.value_or(Scalar(int64_t(2))), dim, keepdim, dtype);
}

Tensor norm_str(const Tensor& self, const std::string& p, const std::optional<IntList>& dim, bool keepdim,
                std::optional<ScalarType> dtype) {
  // As torch.norm: 'fro' over at most two dims is the 2-norm of the elements; anything else
  // ('nuc', or a bad name) is linalg.matrix_norm's over `dim` (all dims when None).
  if (p == "fro" && (!dim || dim->size() <= 2))
    return ember::linalg_vector_norm(self, Scalar(int64_t(2)), dim, keepdim, dtype);
  DimVector all;
  for (int64_t i = 0; i < self.dim(); ++i) all.push_back(i);
  return ember::linalg_matrix_norm_str_ord(self, p, dim ? *dim : IntList(all), keepdim, dtype);
}

Tensor max(const Tensor& self) {
  EMBER_CHECK(self.numel() > 0, Runtime,
              "max(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with "
              "the 'dim' argument.");
  return ember::amax(self, IntList{}, false);
}

Tensor min(const Tensor& self) {
  EMBER_CHECK(self.numel() > 0, Runtime,
              "min(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with "
              "the 'dim' argument.");
  return ember::amin(self, IntList{}, false);
}

Tensor max_other(const Tensor& self, const Tensor& other) { return ember::maximum(self, other); }

Tensor min_other(const Tensor& self, const Tensor& other) { return ember::minimum(self, other); }

}  // namespace ember::native
