// scaled_dot_product_attention: argument checks as PyTorch's, then the blocked
// kernel (_sdpa_flash, whose gradient is the blocked _sdpa_flash_backward) where it
// applies, else the same math in ember ops (which autograd differentiates, to any order).
// _sdpa_flash's gradient and tangent fall back to that math when they must differentiate again.
#include <cmath>
#include <limits>
#include <optional>

#include "ember/autograd.h"
#include "ember/errors.h"
#include "ember/forward_ad.h"
#include "ember/ops/_sdpa_backward.h"
#include "ember/ops/_sdpa_flash.h"
#include "ember/ops/_sdpa_flash_backward.h"
#include "ember/ops/_sdpa_flash_jvp.h"
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
#include "ember/ops/sub.h"
#include "ember/ops/sum.h"
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

// The blocked kernel runs float32/float64 on the CPU without dropout; forward-mode AD and a
// mask that needs a gradient take the math (the kernel's derivative covers query, key, value).
bool use_blocked_kernel(const Tensor& q, const Tensor& mask, double dropout_p) {
  const ScalarType dt = q.dtype();
  if (dropout_p > 0 || !q.device().is_cpu() || (dt != ScalarType::Float32 && dt != ScalarType::Float64)) return false;
  if (mask.defined() && autograd::any_requires_grad({&mask})) return false;
  return !forward_ad::maybe_active();
}

// softmax(q k^T scale + mask) over the keys, a row with every key masked all zeros (as PyTorch's kernels give).
Tensor attention_weights(const Tensor& q, const Tensor& k, const Tensor& attn_mask, bool is_causal, double scale) {
  Tensor scores = ember::mul(ember::matmul(q, ember::transpose(k, -2, -1)), wrap_number(Scalar(scale)));
  const Scalar neg_inf(-std::numeric_limits<double>::infinity());
  if (is_causal) {
    const int64_t L = q.size(-2), S = k.size(-2);
    const Tensor keep = ember::tril(ember::ones(DimVector{L, S}, ScalarType::Bool, q.device()));
    scores = ember::masked_fill_Scalar(scores, ember::logical_not(keep), neg_inf);
  }
  if (attn_mask.defined()) {  // both only in a direct call of _sdpa_flash
    scores = attn_mask.dtype() == ScalarType::Bool
                 ? ember::masked_fill_Scalar(scores, ember::logical_not(attn_mask), neg_inf)
                 : ember::add(scores, attn_mask);
  }
  const Tensor dead = ember::eq(ember::amax(scores, {-1}, true), wrap_number(neg_inf));
  return ember::where(dead, wrap_number(Scalar(0.0)), ember::softmax(scores, -1));
}

Tensor row_sum(const Tensor& t) { return ember::sum(t, IntList{-1}, true); }

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

  if (use_blocked_kernel(q, attn_mask, dropout_p)) {
    Tensor mask;
    if (has_mask) mask = attn_mask.dtype() == ScalarType::Bool ? attn_mask : ember::to_dtype(attn_mask, q.dtype());
    return std::get<0>(ember::_sdpa_flash(q, k, v, mask, is_causal, s));
  }
  Tensor weights = attention_weights(q, k, attn_mask, is_causal, s);
  if (dropout_p > 0) weights = ember::dropout(weights, dropout_p, true);
  return ember::matmul(weights, v);
}

std::tuple<Tensor, Tensor, Tensor> _sdpa_backward(const Tensor& grad_out, const Tensor& query, const Tensor& key,
                                                  const Tensor& value, const Tensor& out, const Tensor& logsumexp,
                                                  const Tensor& attn_mask, bool is_causal, double scale) {
  const bool differentiable = autograd::any_requires_grad({&grad_out, &query, &key, &value}) ||
                              (forward_ad::maybe_active() && forward_ad::wanted({&grad_out, &query, &key, &value}));
  if (!differentiable)
    return ember::_sdpa_flash_backward(grad_out, query, key, value, out, logsumexp, attn_mask, is_causal, scale);
  // dV = P^T dO, dS = P (dP - rowsum(P dP)) with dP = dO V^T, dQ = scale dS K, dK = scale dS^T Q.
  const Tensor p = attention_weights(query, key, attn_mask, is_causal, scale);
  const Tensor dv = ember::matmul(ember::transpose(p, -2, -1), grad_out);
  const Tensor dp = ember::matmul(grad_out, ember::transpose(value, -2, -1));
  const Tensor ds = ember::mul(p, ember::sub(dp, row_sum(ember::mul(p, dp))));
  const Tensor sc = wrap_number(Scalar(scale));
  return {ember::mul(ember::matmul(ds, key), sc), ember::mul(ember::matmul(ember::transpose(ds, -2, -1), query), sc),
          dv};
}

Tensor _sdpa_flash_jvp(const Tensor& query_t, const Tensor& key_t, const Tensor& value_t, const Tensor& query,
                       const Tensor& key, const Tensor& value, const Tensor& attn_mask, bool is_causal, double scale) {
  // out_t = P_t V + P V_t, P_t = P (S_t - rowsum(P S_t)), S_t = scale (Q_t K^T + Q K_t^T).
  const Tensor p = attention_weights(query, key, attn_mask, is_causal, scale);
  Tensor out_t, s_t;
  if (query_t.defined()) s_t = ember::matmul(query_t, ember::transpose(key, -2, -1));
  if (key_t.defined()) {
    const Tensor term = ember::matmul(query, ember::transpose(key_t, -2, -1));
    s_t = s_t.defined() ? ember::add(s_t, term) : term;
  }
  if (s_t.defined()) {
    s_t = ember::mul(s_t, wrap_number(Scalar(scale)));
    out_t = ember::matmul(ember::mul(p, ember::sub(s_t, row_sum(ember::mul(p, s_t)))), value);
  }
  if (value_t.defined()) {
    const Tensor term = ember::matmul(p, value_t);
    out_t = out_t.defined() ? ember::add(out_t, term) : term;
  }
  return out_t.defined() ? out_t : ember::mul(ember::matmul(p, value), wrap_number(Scalar(0.0)));
}

}  // namespace ember::native
