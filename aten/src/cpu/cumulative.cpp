// cummax, cummin and logcumsumexp on the CPU: one pass per line along `dim`
// (lines in parallel), over [outer, n, inner] of a contiguous input.
#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>
#include <type_traits>

#include "ember/dispatch.h"
#include "ember/dtype.h"
#include "ember/errors.h"
#include "ember/math.h"
#include "ember/ops/contiguous.h"
#include "ember/ops/cummax.h"
#include "ember/ops/cummin.h"
#include "ember/ops/logcumsumexp.h"
#include "ember/parallel.h"
#include "ember/tensor.h"

namespace ember::cpu {
namespace {

struct Lines {
  int64_t outer = 1, n = 1, inner = 1;
};

Lines lines_of(const Tensor& self, int64_t d) {
  Lines l;
  if (self.dim() > 0) l.n = self.size(d);
  for (int64_t k = 0; k < self.dim(); ++k) {
    if (k < d) l.outer *= self.size(k);
    else if (k > d) l.inner *= self.size(k);
  }
  return l;
}

// Calls f(start) for the start offset of every line (stride `inner` along it), lines in parallel.
template <typename F>
void for_each_line(const Lines& l, F&& f) {
  parallel_for(l.outer * l.inner, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(l.n, 1)), [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) f((t / l.inner) * l.n * l.inner + t % l.inner);
  });
}

// The running extreme and the index where it was last reached; a NaN wins, each later NaN too.
template <bool Max>
std::tuple<Tensor, Tensor> cum_extreme(const Tensor& self, int64_t dim, const char* op) {
  const int64_t d = wrap_dim(dim, std::max<int64_t>(self.dim(), 1), op);
  const Tensor x = ember::contiguous(self);
  Tensor values = empty_tensor(self.sizes(), self.dtype(), self.device());
  Tensor indices = empty_tensor(self.sizes(), ScalarType::Int64, self.device());
  if (self.numel() == 0) return {values, indices};
  const Lines l = lines_of(self, d);
  visit_dtype(self.dtype(), [&]<typename T>() {
    using C = opmath_t<T>;
    const T* xp = x.data<T>();
    T* vp = values.data<T>();
    int64_t* ip = indices.data<int64_t>();
    for_each_line(l, [&](int64_t start) {
      C best = static_cast<C>(xp[start]);
      int64_t at = 0;
      for (int64_t k = 0; k < l.n; ++k) {
        const int64_t o = start + k * l.inner;
        const C v = static_cast<C>(xp[o]);
        if (math::isnan(v) || (!math::isnan(best) && (Max ? v >= best : v <= best))) {  // PyTorch's rule
          best = v;
          at = k;
        }
        vp[o] = static_cast<T>(best);
        ip[o] = at;
      }
    });
  });
  return {values, indices};
}

template <typename C>
C log_add_exp(C a, C b) {
  if (math::isnan(a) || math::isnan(b)) return std::numeric_limits<C>::quiet_NaN();
  const C hi = std::max(a, b), lo = std::min(a, b);
  if (std::isinf(hi)) return hi;  // -inf with -inf, or +inf with anything
  return hi + std::log1p(std::exp(lo - hi));
}

}  // namespace

std::tuple<Tensor, Tensor> cummax_cpu(const Tensor& self, int64_t dim) { return cum_extreme<true>(self, dim, "cummax"); }

std::tuple<Tensor, Tensor> cummin_cpu(const Tensor& self, int64_t dim) { return cum_extreme<false>(self, dim, "cummin"); }

Tensor logcumsumexp_cpu(const Tensor& self, int64_t dim) {
  const int64_t d = wrap_dim(dim, std::max<int64_t>(self.dim(), 1), "logcumsumexp");
  const Tensor x = ember::contiguous(self);
  Tensor out = empty_tensor(self.sizes(), self.dtype(), self.device());
  if (self.numel() == 0) return out;
  const Lines l = lines_of(self, d);
  visit_dtype(self.dtype(), [&]<typename T>() {
    if constexpr (std::is_floating_point_v<opmath_t<T>>) {
      using C = opmath_t<T>;
      const T* xp = x.data<T>();
      T* op = out.data<T>();
      for_each_line(l, [&](int64_t start) {
        C acc = -std::numeric_limits<C>::infinity();
        for (int64_t k = 0; k < l.n; ++k) {
          const int64_t o = start + k * l.inner;
          acc = log_add_exp(acc, static_cast<C>(xp[o]));
          op[o] = static_cast<T>(acc);
        }
      });
    }
  });
  return out;
}

}  // namespace ember::cpu
