// embedding on the CPU: the forward copies weight rows in parallel over the
// indices; the backward is a scatter-add in which each thread owns a range of
// weight rows (zeroing them, then adding in index order the grad rows aimed at
// them), so there are no races and the sums do not depend on thread timing.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "ember/dispatch.h"
#include "ember/dtype.h"
#include "ember/errors.h"
#include "ember/ops/_embedding_dense_backward.h"
#include "ember/ops/contiguous.h"
#include "ember/ops/embedding.h"
#include "ember/ops/embedding_renorm_.h"
#include "ember/parallel.h"
#include "ember/tensor.h"

namespace ember::cpu {
namespace {

// `indices` as contiguous int64, after checking its dtype as PyTorch does.
Tensor index_values(const Tensor& indices, const char* op) {
  EMBER_CHECK(indices.dtype() == ScalarType::Int64 || indices.dtype() == ScalarType::Int32, Runtime,
              "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; but "
              "got ", dtype_name(indices.dtype()), " instead (while checking arguments for ", op, ")");
  return ember::contiguous(cast_to(indices, ScalarType::Int64));
}

void check_in_range(const int64_t* idx, int64_t n, int64_t rows) {
  bool ok = true;
#pragma omp simd reduction(&& : ok)
  for (int64_t i = 0; i < n; ++i) ok = ok && idx[i] >= 0 && idx[i] < rows;
  EMBER_CHECK(ok, Index, "index out of range in self");
}

}  // namespace

// sparse=True: ember has no sparse tensors, so the gradient stays dense (the same values; docs/ARCHITECTURE.md).
Tensor embedding_cpu(const Tensor& weight, const Tensor& indices_, int64_t /*padding_idx*/, bool /*scale_grad_by_freq*/,
                     bool /*sparse*/) {
  EMBER_CHECK(weight.dim() == 2, Runtime, "'weight' must be 2-D");
  const Tensor indices = index_values(indices_, "embedding");
  const int64_t n = indices.numel(), rows = weight.size(0), D = weight.size(1);
  const int64_t* idx = indices.data<int64_t>();
  check_in_range(idx, n, rows);
  DimVector shape = indices.sizes();
  shape.push_back(D);
  Tensor out = empty_tensor(shape, weight.dtype(), weight.device());
  if (n == 0 || D == 0) return out;
  const int64_t rs = weight.stride(0), cs = weight.stride(1);
  const size_t item = weight.itemsize();
  const char* src = static_cast<const char*>(weight.data_ptr());
  char* dst = static_cast<char*>(out.data_ptr());
  parallel_for(n, std::max<int64_t>(1, kGrainSize / D), [&](int64_t b, int64_t e) {
    if (cs == 1) {
      for (int64_t i = b; i < e; ++i) std::memcpy(dst + i * D * item, src + idx[i] * rs * item, D * item);
      return;
    }
    visit_itemsize(item, "embedding", [&]<typename U>() {
      for (int64_t i = b; i < e; ++i) {
        const U* s = reinterpret_cast<const U*>(src) + idx[i] * rs;
        U* d = reinterpret_cast<U*>(dst) + i * D;
        for (int64_t j = 0; j < D; ++j) d[j] = s[j * cs];
      }
    });
  });
  return out;
}

Tensor embedding_dense_backward_cpu(const Tensor& grad_, const Tensor& indices_, int64_t num_weights,
                                    int64_t padding_idx, bool scale_grad_by_freq) {
  const Tensor indices = index_values(indices_, "embedding_backward");
  const int64_t n = indices.numel();
  EMBER_CHECK(grad_.dim() == indices.dim() + 1, Runtime, "_embedding_dense_backward: grad of shape ",
              shape_str(grad_.sizes()), " does not match indices of shape ", shape_str(indices.sizes()));
  const int64_t D = grad_.size(grad_.dim() - 1);
  const Tensor grad = ember::contiguous(grad_);
  const int64_t* idx = indices.data<int64_t>();
  check_in_range(idx, n, num_weights);
  Tensor out = empty_tensor({num_weights, D}, grad.dtype(), grad.device());
  visit_floating(grad.dtype(), "_embedding_dense_backward", [&]<typename T>() {
    using C = opmath_t<T>;
    const T* g = grad.data<T>();
    T* o = out.data<T>();
    const int64_t threads = std::max<int64_t>(1, get_num_threads());
    // Enough rows per chunk that zeroing them is worth a thread; every chunk scans all indices.
    const int64_t chunks = std::max<int64_t>(1, std::min<int64_t>(threads, num_weights * D / kGrainSize));
    parallel_for(chunks, 1, [&](int64_t cb, int64_t ce) {
      for (int64_t k = cb; k < ce; ++k) {
        const int64_t r0 = num_weights * k / chunks, r1 = num_weights * (k + 1) / chunks;
        std::fill(o + r0 * D, o + r1 * D, T(0));
        std::vector<int64_t> count;
        if (scale_grad_by_freq) {
          count.assign((size_t)(r1 - r0), 0);
          for (int64_t i = 0; i < n; ++i)
            if (idx[i] >= r0 && idx[i] < r1) ++count[idx[i] - r0];
        }
        for (int64_t i = 0; i < n; ++i) {
          const int64_t r = idx[i];
          if (r < r0 || r >= r1 || r == padding_idx) continue;
          const C scale = scale_grad_by_freq ? C(1) / C(count[r - r0]) : C(1);
          const T* __restrict gi = g + i * D;
          T* __restrict orow = o + r * D;
#pragma omp simd
          for (int64_t j = 0; j < D; ++j) orow[j] = static_cast<T>(static_cast<C>(orow[j]) + static_cast<C>(gi[j]) * scale);
        }
      }
    });
  });
  return out;
}

Tensor embedding_renorm_cpu(const Tensor& self, const Tensor& indices_, double max_norm, double norm_type) {
  EMBER_CHECK(self.dim() == 2, Runtime, "embedding_renorm_: 'self' must be 2-D");
  const Tensor indices = index_values(indices_, "embedding_renorm_");
  const int64_t n = indices.numel(), rows = self.size(0), D = self.size(1);
  const int64_t* idx = indices.data<int64_t>();
  check_in_range(idx, n, rows);
  std::vector<int64_t> unique(idx, idx + n);
  std::sort(unique.begin(), unique.end());
  unique.erase(std::unique(unique.begin(), unique.end()), unique.end());
  visit_floating(self.dtype(), "embedding_renorm_", [&]<typename T>() {
    using C = opmath_t<T>;
    T* w = self.data<T>();
    const int64_t rs = self.stride(0), cs = self.stride(1);
    for (int64_t r : unique) {
      T* row = w + r * rs;
      C norm = 0;
      if (std::isinf(norm_type)) {
        for (int64_t j = 0; j < D; ++j) norm = std::max(norm, std::abs(static_cast<C>(row[j * cs])));
      } else {
        for (int64_t j = 0; j < D; ++j) norm += std::pow(std::abs(static_cast<C>(row[j * cs])), C(norm_type));
        norm = std::pow(norm, C(1.0 / norm_type));
      }
      if (norm > C(max_norm)) {
        const C scale = C(max_norm) / (norm + C(1e-7));
        for (int64_t j = 0; j < D; ++j) row[j * cs] = static_cast<T>(static_cast<C>(row[j * cs]) * scale);
      }
    }
  });
  self.bump_version();
  return self;
}

}  // namespace ember::cpu
