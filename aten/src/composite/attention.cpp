// scaled_dot_product_attention: argument checks as PyTorch's, then the blocked
// kernel when nothing needs a gradient, else the same math in ember ops (which
// autograd differentiates, to any order).
#include <cmath>
#include <limits>
#include <optional>

#include "ember/autograd.h"
#include "ember/errors.h"
#include "ember/forward_ad.h"
#include "ember/ops/_sdpa_flash.h"
#include "ember/ops/add.h"
#include "ember/ops/amax.h"
#include "ember/ops/dropout.h"
#include "ember/ops/eq.h"
#include "ember/ops/expand.h"
#include "ember/ops/logical_not.h"
#include "ember/ops/masked_fill.h"
#include "ember/ops/matmul.h"
#include "ember/ops/mul.h"
#include "ember/ops/ones.h"
#include "ember/ops/reshape.h"
#include "ember/ops/scaled_dot_product_attention.h"
#include "ember/ops/softmax.h"
#include "ember/ops/to.h"
#include "ember/ops/transpose.h"
#include "ember/ops/tril.h"
#include "ember/ops/unsqueeze.h"
#include "ember/ops/where.h"
#include "ember/tensor.h"

namespace ember::native {

namespace {

// key/value heads shared by groups of query heads (dim -3), made explicit for the math.
Tensor repeat_heads(const Tensor& t, int64_t groups) {
  if (groups == 1) return t;
  DimVector sizes = t.sizes();
  const int64_t heads = sizes[sizes.size() - 3];
  DimVector expanded = sizes;
  expanded.insert(expanded.size() - 2, groups);
  Tensor e = ember::expand(ember::unsqueeze(t, -3), expanded);
  sizes[sizes.size() - 3] = heads * groups;
  return ember::reshape(e, sizes);
}

DimVector with_last_two(DimVector batch, const Tensor& t) {
  batch.push_back(t.size(-2));
  batch.push_back(t.size(-1));
  return batch;
}

// The dtype names of PyTorch's C++ messages ("float", "double", "c10::Half").
const char* c_dtype_name(ScalarType dt) {
  switch (dt) {
    case ScalarType::Float32: return "float";
    case ScalarType::Float64: return "double";
    case ScalarType::Float16: return "c10::Half";
    case ScalarType::BFloat16: return "c10::BFloat16";
    default: return dtype_name(dt);
  }
}

bool use_blocked_kernel(const Tensor& q, const Tensor& k, const Tensor& v, double dropout_p) {
  const ScalarType dt = q.dtype();
  if (dropout_p > 0 || !q.device().is_cpu() || (dt != ScalarType::Float32 && dt != ScalarType::Float64)) return false;
  if (autograd::any_requires_grad({&q, &k, &v})) return false;
  return !forward_ad::maybe_active();
}

}  // namespace

Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const Tensor& attn_mask, double dropout_p, bool is_causal,
                                    std::optional<double> scale, bool enable_gqa) {
  const bool has_mask = attn_mask.defined();
  EMBER_CHECK(!(has_mask && is_causal), Runtime,
              "_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True");
  EMBER_CHECK(query.dtype() == key.dtype() && query.dtype() == value.dtype(), Runtime,
              "Expected query, key, and value to have the same dtype, but got query.dtype: ",
              c_dtype_name(query.dtype()), " key.dtype: ", c_dtype_name(key.dtype()),
              " and value.dtype: ", c_dtype_name(value.dtype()), " instead.");
  EMBER_CHECK(query.dim() >= 2 && key.dim() >= 2 && value.dim() >= 2, Runtime,
              "scaled_dot_product_attention: query, key and value must have at least 2 dims");
  EMBER_CHECK(query.size(-1) == key.size(-1), Runtime, "scaled_dot_product_attention: query's last dim (",
              query.size(-1), ") must equal key's (", key.size(-1), ")");
  EMBER_CHECK(key.size(-2) == value.size(-2), Runtime, "scaled_dot_product_attention: key has ", key.size(-2),
              " positions but value has ", value.size(-2));
  EMBER_CHECK(dropout_p >= 0 && dropout_p <= 1, Runtime, "dropout probability has to be between 0 and 1, but got ",
              dropout_p);
  Tensor k = key, v = value;
  if (enable_gqa && query.dim() >= 3) {
    const int64_t hq = query.size(-3), hk = key.size(-3), hv = value.size(-3);
    EMBER_CHECK(hk > 0 && hv > 0 && hq % hk == 0 && hq % hv == 0, Runtime,
                "scaled_dot_product_attention: number of heads in key and value must divide the number of heads in "
                "query, got query ", hq, ", key ", hk, ", value ", hv);
    k = repeat_heads(key, hq / hk);
    v = repeat_heads(value, hq / hv);
  }
  const double s = scale.value_or(1.0 / std::sqrt((double)query.size(-1)));
  // Batch dims broadcast as matmul's do.
  DimVector batch(query.sizes().begin(), query.sizes().end() - 2);
  batch = broadcast_shapes(batch, DimVector(k.sizes().begin(), k.sizes().end() - 2), "scaled_dot_product_attention");
  batch = broadcast_shapes(batch, DimVector(v.sizes().begin(), v.sizes().end() - 2), "scaled_dot_product_attention");
  const Tensor q = ember::expand(query, with_last_two(batch, query));
  k = ember::expand(k, with_last_two(batch, k));
  v = ember::expand(v, with_last_two(batch, v));

  if (use_blocked_kernel(q, k, v, dropout_p)) {
    Tensor mask;
    if (has_mask) mask = attn_mask.dtype() == ScalarType::Bool ? attn_mask : ember::to_dtype(attn_mask, q.dtype());
    return std::get<0>(ember::_sdpa_flash(q, k, v, mask, is_causal, s));
  }

  Tensor scores = ember::mul(ember::matmul(q, ember::transpose(k, -2, -1)), wrap_number(Scalar(s)));
  const Scalar neg_inf(-std::numeric_limits<double>::infinity());
  if (is_causal) {
    const int64_t L = q.size(-2), S = k.size(-2);
    const Tensor keep = ember::tril(ember::ones(DimVector{L, S}, ScalarType::Bool, q.device()));
    scores = ember::masked_fill_Scalar(scores, ember::logical_not(keep), neg_inf);
  } else if (has_mask) {
    scores = attn_mask.dtype() == ScalarType::Bool
                 ? ember::masked_fill_Scalar(scores, ember::logical_not(attn_mask), neg_inf)
                 : ember::add(scores, attn_mask);
  }
  // A row whose keys are all masked attends to nothing (zeros), as PyTorch's kernels give.
  const Tensor dead = ember::eq(ember::amax(scores, {-1}, true), wrap_number(neg_inf));
  Tensor weights = ember::where(dead, wrap_number(Scalar(0.0)), ember::softmax(scores, -1));
  if (dropout_p > 0) weights = ember::dropout(weights, dropout_p, true);
  return ember::matmul(weights, v);
}

}  // namespace ember::native
