// Fused CPU kernels of layer_norm and batch_norm, forward and backward.
// Each normalized group (a row of layer_norm, a channel of batch_norm) is read
// twice for its statistics (sum, then squared deviations, in the compute type
// C: float for float16/bfloat16) and once more to write the result; the
// forward returns the mean and 1/sqrt(var + eps) that the backward reuses.
// Backward computes grad_input, grad_weight and grad_bias in one walk; column
// sums of layer_norm go to one buffer per chunk of rows, added in chunk order
// (deterministic for a given thread count).
#include <algorithm>
#include <cmath>
#include <tuple>
#include <vector>

#include "ember/dtype.h"
#include "ember/errors.h"
#include "ember/ops/_native_batch_norm_backward.h"
#include "ember/ops/_native_layer_norm_backward.h"
#include "ember/ops/contiguous.h"
#include "ember/ops/native_batch_norm.h"
#include "ember/ops/native_layer_norm.h"
#include "ember/parallel.h"
#include "ember/tensor.h"

namespace ember::cpu {
namespace {

// Reads element i of an optional per-column/per-channel parameter (1 when absent).
template <typename T, typename C>
inline C param_or(const T* p, int64_t i, C absent) {
  return p ? static_cast<C>(p[i]) : absent;
}

Tensor contiguous_or_undefined(const Tensor& t) { return t.defined() ? ember::contiguous(t) : t; }

// The kernels read parameters in the input's element type.
void check_param_dtype(const Tensor& input, const Tensor& t, const char* op, const char* name) {
  EMBER_CHECK(!t.defined() || t.dtype() == input.dtype(), Runtime, op, ": expected ", name, " to have the input's dtype ",
              dtype_name(input.dtype()), ", but got ", dtype_name(t.dtype()));
}

template <typename T>
T* data_or_null(const Tensor& t) {
  return t.defined() ? t.data<T>() : nullptr;
}

// Splits [0, n) into at most one chunk per thread (at least `grain` items each);
// f(chunk, begin, end) runs in parallel. Returns the number of chunks.
template <typename F>
int64_t parallel_chunks(int64_t n, int64_t grain, F&& f) {
  const int64_t chunks = std::max<int64_t>(1, std::min<int64_t>(get_num_threads(), n / std::max<int64_t>(1, grain)));
  parallel_for(chunks, 1, [&](int64_t cb, int64_t ce) {
    for (int64_t k = cb; k < ce; ++k) f(k, n * k / chunks, n * (k + 1) / chunks);
  });
  return chunks;
}

// ---------------------------------------------------------------- layer_norm

struct RowShape {
  int64_t rows, cols;
};

RowShape layer_norm_shape(const Tensor& input, const IntList& normalized_shape, const Tensor& weight,
                          const Tensor& bias) {
  const int64_t nd = (int64_t)normalized_shape.size();
  EMBER_CHECK(nd >= 1, Runtime, "Expected normalized_shape to be at least 1-dimensional, i.e., containing at least "
              "one element, but got normalized_shape = ", shape_str(DimVector(normalized_shape.begin(), normalized_shape.end())));
  const DimVector ns(normalized_shape.begin(), normalized_shape.end());
  EMBER_CHECK(!weight.defined() || weight.sizes() == ns, Runtime, "Expected weight to be of same shape as "
              "normalized_shape, but got weight of shape ", shape_str(weight.defined() ? weight.sizes() : DimVector{}),
              " and normalized_shape = ", shape_str(ns));
  EMBER_CHECK(!bias.defined() || bias.sizes() == ns, Runtime, "Expected bias to be of same shape as "
              "normalized_shape, but got bias of shape ", shape_str(bias.defined() ? bias.sizes() : DimVector{}),
              " and normalized_shape = ", shape_str(ns));
  const int64_t axis = input.dim() - nd;
  bool fits = axis >= 0;
  for (int64_t i = 0; fits && i < nd; ++i) fits = input.size(axis + i) == ns[i];
  if (!fits) {
    std::string expected = "[*";
    for (int64_t s : ns) expected += ", " + std::to_string(s);
    EMBER_FAIL(Runtime, "Given normalized_shape=", shape_str(ns), ", expected input with shape ", expected,
               "], but got input of size", shape_str(input.sizes()));
  }
  int64_t cols = 1;
  for (int64_t s : ns) cols *= s;
  return {cols == 0 ? input.numel() : input.numel() / cols, cols};
}

DimVector stats_shape(const Tensor& input, int64_t nd) {
  DimVector s = input.sizes();
  for (int64_t i = input.dim() - nd; i < input.dim(); ++i) s[i] = 1;
  return s;
}

// Row sums go to kLanes independent accumulators (4 AVX vectors of float): with
// one, the loop waits on each add's latency (rows in cache took 1.4x as long).
template <typename C>
constexpr int64_t kLanes = 128 / sizeof(C);

// Sum of f(i) over [0, N), in lanes.
template <typename C, typename F>
inline C lane_sum(int64_t N, F&& f) {
  constexpr int64_t L = kLanes<C>;
  C acc[L] = {};
  int64_t i = 0;
  for (; i + L <= N; i += L) {
#pragma omp simd
    for (int64_t l = 0; l < L; ++l) acc[l] += f(i + l);
  }
  for (; i < N; ++i) acc[0] += f(i);
  for (int64_t w = L / 2; w > 0; w /= 2)
    for (int64_t l = 0; l < w; ++l) acc[l] += acc[l + w];
  return acc[0];
}

template <typename T>
void layer_norm_rows(const T* x, T* y, T* mean, T* rstd, const T* w, const T* b, RowShape s, double eps) {
  using C = opmath_t<T>;
  const int64_t N = s.cols;
  parallel_for(s.rows, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, N)), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const T* __restrict xr = x + r * N;
      T* __restrict yr = y + r * N;
      const C mu = lane_sum<C>(N, [&](int64_t i) { return static_cast<C>(xr[i]); }) / C(N);
      const C sq = lane_sum<C>(N, [&](int64_t i) {
        const C d = static_cast<C>(xr[i]) - mu;
        return d * d;
      });
      const C rs = C(1) / std::sqrt(sq / C(N) + C(eps));
      if (w && b) {
#pragma omp simd
        for (int64_t i = 0; i < N; ++i)
          yr[i] = static_cast<T>((static_cast<C>(xr[i]) - mu) * rs * static_cast<C>(w[i]) + static_cast<C>(b[i]));
      } else {
#pragma omp simd
        for (int64_t i = 0; i < N; ++i)
          yr[i] = static_cast<T>((static_cast<C>(xr[i]) - mu) * rs * param_or(w, i, C(1)) + param_or(b, i, C(0)));
      }
      mean[r] = static_cast<T>(mu);
      rstd[r] = static_cast<T>(rs);
    }
  });
}

// One row of layer_norm's backward: dx = rstd * (g w - mean(g w) - xhat mean(g w xhat)), and
// g xhat and g added to the column sums pw and pb. HasW: a weight (kept out of the loops' branches).
template <bool HasW, typename T, typename C>
inline void layer_norm_backward_row(const T* __restrict gr, const T* __restrict xr, C mu, C rs, const T* __restrict w,
                                    T* __restrict dxr, C* __restrict pw, C* __restrict pb, int64_t N) {
  C a = 0, bsum = 0;
#pragma omp simd reduction(+ : a, bsum)
  for (int64_t i = 0; i < N; ++i) {
    const C gi = static_cast<C>(gr[i]), xh = (static_cast<C>(xr[i]) - mu) * rs;
    const C gw = HasW ? gi * static_cast<C>(w[i]) : gi;
    a += gw;
    bsum += gw * xh;
    pw[i] += gi * xh;
    pb[i] += gi;
  }
  const C ca = a / C(N), cb = bsum / C(N);
#pragma omp simd
  for (int64_t i = 0; i < N; ++i) {
    const C xh = (static_cast<C>(xr[i]) - mu) * rs;
    const C gw = HasW ? static_cast<C>(gr[i]) * static_cast<C>(w[i]) : static_cast<C>(gr[i]);
    dxr[i] = static_cast<T>(rs * (gw - ca - xh * cb));
  }
}

template <typename T>
void layer_norm_backward_rows(const T* g, const T* x, const T* mean, const T* rstd, const T* w, T* dx, T* dw, T* db,
                              RowShape s) {
  using C = opmath_t<T>;
  const int64_t N = s.cols;
  const int64_t max_chunks = std::max<int64_t>(1, get_num_threads());
  std::vector<C> partial((size_t)(2 * N * max_chunks), C(0));  // dw then db, per chunk
  const int64_t chunks = parallel_chunks(s.rows, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, N)),
                                         [&](int64_t k, int64_t r0, int64_t r1) {
    C* pw = partial.data() + 2 * N * k;
    C* pb = pw + N;
    for (int64_t r = r0; r < r1; ++r) {
      const C mu = static_cast<C>(mean[r]), rs = static_cast<C>(rstd[r]);
      if (w) layer_norm_backward_row<true>(g + r * N, x + r * N, mu, rs, w, dx + r * N, pw, pb, N);
      else layer_norm_backward_row<false>(g + r * N, x + r * N, mu, rs, w, dx + r * N, pw, pb, N);
    }
  });
  for (int64_t i = 0; i < N; ++i) {
    C sw = 0, sb = 0;
    for (int64_t k = 0; k < chunks; ++k) {
      sw += partial[2 * N * k + i];
      sb += partial[2 * N * k + N + i];
    }
    if (dw) dw[i] = static_cast<T>(sw);
    db[i] = static_cast<T>(sb);
  }
}

// ---------------------------------------------------------------- batch_norm

// Input (N, C, *) contiguous: channel c of sample n is `inner` elements at (n * C + c) * inner.
struct ChannelShape {
  int64_t batch, channels, inner;
  int64_t count() const { return batch * inner; }
};

template <typename T, typename F>
inline void for_channel(const T* base, ChannelShape s, int64_t c, F&& f) {
  for (int64_t n = 0; n < s.batch; ++n) f(base + (n * s.channels + c) * s.inner, n);
}

int64_t channel_grain(ChannelShape s) { return std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, s.count())); }

template <typename T>
void batch_norm_stats(const T* x, ChannelShape s, opmath_t<T>* mean, opmath_t<T>* var_sum) {
  using C = opmath_t<T>;
  parallel_for(s.channels, channel_grain(s), [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      C sum = 0;
      for_channel(x, s, c, [&](const T* p, int64_t) {
        C part = 0;
#pragma omp simd reduction(+ : part)
        for (int64_t i = 0; i < s.inner; ++i) part += static_cast<C>(p[i]);
        sum += part;
      });
      const C mu = sum / C(s.count());
      C sq = 0;
      for_channel(x, s, c, [&](const T* p, int64_t) {
        C part = 0;
#pragma omp simd reduction(+ : part)
        for (int64_t i = 0; i < s.inner; ++i) {
          const C d = static_cast<C>(p[i]) - mu;
          part += d * d;
        }
        sq += part;
      });
      mean[c] = mu;
      var_sum[c] = sq;
    }
  });
}

// y = (x - mean) * invstd * w + b, per channel.
template <typename T>
void batch_norm_apply(const T* x, T* y, ChannelShape s, const opmath_t<T>* mean, const opmath_t<T>* invstd,
                      const T* w, const T* b) {
  using C = opmath_t<T>;
  parallel_for(s.channels * s.batch, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, s.inner)),
               [&](int64_t q0, int64_t q1) {
    for (int64_t q = q0; q < q1; ++q) {
      const int64_t c = q % s.channels;
      const C scale = invstd[c] * param_or(w, c, C(1));
      const C shift = param_or(b, c, C(0)) - mean[c] * scale;
      const T* __restrict p = x + q * s.inner;
      T* __restrict o = y + q * s.inner;
#pragma omp simd
      for (int64_t i = 0; i < s.inner; ++i) o[i] = static_cast<T>(static_cast<C>(p[i]) * scale + shift);
    }
  });
}

// running = momentum * batch value + (1 - momentum) * running, as PyTorch (the unbiased variance).
template <typename C>
void update_running(const Tensor& running, const std::vector<C>& batch_value, double momentum) {
  visit_floating(running.dtype(), "batch_norm", [&]<typename R>() {
    using RC = opmath_t<R>;
    R* r = running.data<R>();
    const int64_t stride = running.dim() ? running.stride(0) : 1;
    for (size_t c = 0; c < batch_value.size(); ++c) {
      R& v = r[(int64_t)c * stride];
      v = static_cast<R>(RC(momentum) * RC(batch_value[c]) + (RC(1) - RC(momentum)) * static_cast<RC>(v));
    }
  });
  running.bump_version();
}

void check_channel_param(const Tensor& t, const char* name, int64_t channels) {
  if (!t.defined()) return;
  EMBER_CHECK(t.numel() == channels, Runtime, name, " should contain ", channels, " elements not ", t.numel());
}

// Training: dx = w invstd (g - mean(g) - xhat mean(g xhat)); eval: dx = w invstd g.
template <typename T>
void batch_norm_backward_channels(const T* g, const T* x, const T* mean, const T* invstd, const T* w, T* dx, T* dw,
                                  T* db, ChannelShape s, bool training) {
  using C = opmath_t<T>;
  parallel_for(s.channels, channel_grain(s), [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      const C mu = static_cast<C>(mean[c]), is = static_cast<C>(invstd[c]), wc = param_or(w, c, C(1));
      C sum_g = 0, sum_gd = 0;  // sum of g and of g * (x - mean)
      for (int64_t n = 0; n < s.batch; ++n) {
        const int64_t off = (n * s.channels + c) * s.inner;
        const T* __restrict gp = g + off;
        const T* __restrict xp = x + off;
        C a = 0, b2 = 0;
#pragma omp simd reduction(+ : a, b2)
        for (int64_t i = 0; i < s.inner; ++i) {
          const C gi = static_cast<C>(gp[i]);
          a += gi;
          b2 += gi * (static_cast<C>(xp[i]) - mu);
        }
        sum_g += a;
        sum_gd += b2;
      }
      if (dw) dw[c] = static_cast<T>(sum_gd * is);
      if (db) db[c] = static_cast<T>(sum_g);
      if (!dx) continue;
      const C k = C(1) / C(s.count());
      const C g_mean = training ? sum_g * k : C(0);
      const C proj = training ? sum_gd * k * is * is : C(0);  // mean(g xhat) * invstd
      const C scale = is * wc;
      for (int64_t n = 0; n < s.batch; ++n) {
        const int64_t off = (n * s.channels + c) * s.inner;
        const T* __restrict gp = g + off;
        const T* __restrict xp = x + off;
        T* __restrict o = dx + off;
#pragma omp simd
        for (int64_t i = 0; i < s.inner; ++i)
          o[i] = static_cast<T>((static_cast<C>(gp[i]) - g_mean - (static_cast<C>(xp[i]) - mu) * proj) * scale);
      }
    }
  });
}

ChannelShape channel_shape(const Tensor& input) {
  EMBER_CHECK(input.dim() >= 2, Runtime, "batch_norm: expected an input with at least 2 dims (N, C, ...), but got ",
              input.dim(), " dims");
  int64_t inner = 1;
  for (int64_t d = 2; d < input.dim(); ++d) inner *= input.size(d);
  return {input.size(0), input.size(1), inner};
}

}  // namespace

std::tuple<Tensor, Tensor, Tensor> native_layer_norm_cpu(const Tensor& input_, const IntList& normalized_shape,
                                                         const Tensor& weight_, const Tensor& bias_, double eps) {
  const RowShape s = layer_norm_shape(input_, normalized_shape, weight_, bias_);
  check_param_dtype(input_, weight_, "native_layer_norm", "weight");
  check_param_dtype(input_, bias_, "native_layer_norm", "bias");
  const Tensor input = ember::contiguous(input_);
  const Tensor weight = contiguous_or_undefined(weight_), bias = contiguous_or_undefined(bias_);
  Tensor out = empty_tensor(input.sizes(), input.dtype(), input.device());
  const DimVector ss = stats_shape(input, (int64_t)normalized_shape.size());
  Tensor mean = empty_tensor(ss, input.dtype(), input.device());
  Tensor rstd = empty_tensor(ss, input.dtype(), input.device());
  visit_floating(input.dtype(), "native_layer_norm", [&]<typename T>() {
    layer_norm_rows<T>(input.data<T>(), out.data<T>(), mean.data<T>(), rstd.data<T>(), data_or_null<T>(weight),
                       data_or_null<T>(bias), s, eps);
  });
  return {out, mean, rstd};
}

std::tuple<Tensor, Tensor, Tensor> native_layer_norm_backward_cpu(const Tensor& grad_, const Tensor& input_,
                                                                  const IntList& normalized_shape, const Tensor& mean_,
                                                                  const Tensor& rstd_, const Tensor& weight_) {
  const RowShape s = layer_norm_shape(input_, normalized_shape, weight_, Tensor());
  check_param_dtype(input_, weight_, "_native_layer_norm_backward", "weight");
  EMBER_CHECK(grad_.sizes() == input_.sizes(), Runtime, "_native_layer_norm_backward: grad of shape ",
              shape_str(grad_.sizes()), " does not match input of shape ", shape_str(input_.sizes()));
  const Tensor grad = ember::contiguous(grad_), input = ember::contiguous(input_);
  const Tensor mean = ember::contiguous(mean_), rstd = ember::contiguous(rstd_);
  const Tensor weight = contiguous_or_undefined(weight_);
  const DimVector ns(normalized_shape.begin(), normalized_shape.end());
  Tensor dx = empty_tensor(input.sizes(), input.dtype(), input.device());
  Tensor dw = weight.defined() ? empty_tensor(ns, input.dtype(), input.device()) : Tensor();
  Tensor db = empty_tensor(ns, input.dtype(), input.device());
  visit_floating(input.dtype(), "_native_layer_norm_backward", [&]<typename T>() {
    layer_norm_backward_rows<T>(grad.data<T>(), input.data<T>(), mean.data<T>(), rstd.data<T>(),
                                data_or_null<T>(weight), dx.data<T>(), data_or_null<T>(dw), db.data<T>(), s);
  });
  return {dx, dw, db};
}

std::tuple<Tensor, Tensor, Tensor> native_batch_norm_cpu(const Tensor& input_, const Tensor& weight_,
                                                         const Tensor& bias_, const Tensor& running_mean,
                                                         const Tensor& running_var, bool training, double momentum,
                                                         double eps) {
  const ChannelShape s = channel_shape(input_);
  check_channel_param(weight_, "weight", s.channels);
  check_channel_param(bias_, "bias", s.channels);
  check_channel_param(running_mean, "running_mean", s.channels);
  check_channel_param(running_var, "running_var", s.channels);
  check_param_dtype(input_, weight_, "native_batch_norm", "weight");
  check_param_dtype(input_, bias_, "native_batch_norm", "bias");
  EMBER_CHECK(training || (running_mean.defined() && running_var.defined()), Runtime,
              "running_mean must be defined in evaluation mode");
  const Tensor input = ember::contiguous(input_);
  const Tensor weight = contiguous_or_undefined(weight_), bias = contiguous_or_undefined(bias_);
  Tensor out = empty_tensor(input.sizes(), input.dtype(), input.device());
  Tensor save_mean = empty_tensor({s.channels}, input.dtype(), input.device());
  Tensor save_invstd = empty_tensor({s.channels}, input.dtype(), input.device());
  visit_floating(input.dtype(), "native_batch_norm", [&]<typename T>() {
    using C = opmath_t<T>;
    std::vector<C> batch_mean((size_t)s.channels), invstd((size_t)s.channels), batch_var((size_t)s.channels);
    if (training) {
      batch_norm_stats<T>(input.data<T>(), s, batch_mean.data(), batch_var.data());
      const C n = C(s.count());
      for (int64_t c = 0; c < s.channels; ++c) invstd[c] = C(1) / std::sqrt(batch_var[c] / n + C(eps));
      if (running_mean.defined()) update_running(running_mean, batch_mean, momentum);
      if (running_var.defined()) {
        for (int64_t c = 0; c < s.channels; ++c) batch_var[c] = batch_var[c] / (n - C(1));
        update_running(running_var, batch_var, momentum);
      }
    } else {
      const Tensor rm = ember::contiguous(running_mean), rv = ember::contiguous(running_var);
      visit_floating(rm.dtype(), "native_batch_norm", [&]<typename R>() {
        for (int64_t c = 0; c < s.channels; ++c) batch_mean[c] = static_cast<C>(rm.data<R>()[c]);
      });
      visit_floating(rv.dtype(), "native_batch_norm", [&]<typename R>() {
        for (int64_t c = 0; c < s.channels; ++c)
          invstd[c] = C(1) / std::sqrt(static_cast<C>(rv.data<R>()[c]) + C(eps));
      });
    }
    batch_norm_apply<T>(input.data<T>(), out.data<T>(), s, batch_mean.data(), invstd.data(), data_or_null<T>(weight),
                        data_or_null<T>(bias));
    for (int64_t c = 0; c < s.channels; ++c) {
      save_mean.data<T>()[c] = static_cast<T>(batch_mean[c]);
      save_invstd.data<T>()[c] = static_cast<T>(invstd[c]);
    }
  });
  return {out, save_mean, save_invstd};
}

std::tuple<Tensor, Tensor, Tensor> native_batch_norm_backward_cpu(const Tensor& grad_, const Tensor& input_,
                                                                  const Tensor& weight_, const Tensor& save_mean_,
                                                                  const Tensor& save_invstd_, bool training) {
  const ChannelShape s = channel_shape(input_);
  EMBER_CHECK(grad_.sizes() == input_.sizes(), Runtime, "_native_batch_norm_backward: grad of shape ",
              shape_str(grad_.sizes()), " does not match input of shape ", shape_str(input_.sizes()));
  check_channel_param(weight_, "weight", s.channels);
  check_param_dtype(input_, weight_, "_native_batch_norm_backward", "weight");
  const Tensor grad = ember::contiguous(grad_), input = ember::contiguous(input_);
  const Tensor weight = contiguous_or_undefined(weight_);
  const Tensor mean = ember::contiguous(save_mean_), invstd = ember::contiguous(save_invstd_);
  Tensor dx = empty_tensor(input.sizes(), input.dtype(), input.device());
  Tensor dw = weight.defined() ? empty_tensor({s.channels}, input.dtype(), input.device()) : Tensor();
  Tensor db = empty_tensor({s.channels}, input.dtype(), input.device());
  visit_floating(input.dtype(), "_native_batch_norm_backward", [&]<typename T>() {
    batch_norm_backward_channels<T>(grad.data<T>(), input.data<T>(), mean.data<T>(), invstd.data<T>(),
                                    data_or_null<T>(weight), dx.data<T>(), data_or_null<T>(dw), db.data<T>(), s,
                                    training);
  });
  return {dx, dw, db};
}

}  // namespace ember::cpu
