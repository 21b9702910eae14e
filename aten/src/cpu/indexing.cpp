// Advanced indexing on the CPU: index (gather) and index_put_ (scatter). The
// planning (PyTorch's rules, masks, broadcasting, bounds) is shared with CUDA
// in ember/index_plan.h; here every (outer, B) row copies its inner elements.
#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "ember/dtype.h"
#include "ember/errors.h"
#include "ember/index_plan.h"
#include "ember/ops/index.h"
#include "ember/ops/index_put_.h"
#include "ember/parallel.h"
#include "ember/tensor.h"

namespace ember::cpu {
namespace {

bool is_iota(const std::vector<int64_t>& v) {
  for (size_t i = 0; i < v.size(); ++i)
    if (v[i] != (int64_t)i) return false;
  return true;
}

// The plan's offsets on the host: every outer, B and inner position.
struct HostOffsets {
  std::vector<int64_t> outer, b, inner;
};

HostOffsets host_offsets(const IndexPlan& plan, const char* op) {
  return {enumerate_offsets(plan.outer_sizes, plan.outer_strides), index_offsets_on_host(plan, op),
          enumerate_offsets(plan.inner_sizes, plan.inner_strides)};
}

// Calls f(row, o, b) for every (outer, B) row, in parallel unless `serial`.
template <typename F>
void for_each_row(const HostOffsets& offs, F&& f, bool serial = false) {
  const int64_t nb = (int64_t)offs.b.size();
  const int64_t rows = (int64_t)offs.outer.size() * nb;
  const int64_t inner = std::max<int64_t>((int64_t)offs.inner.size(), 1);
  const int64_t grain = serial ? rows : std::max<int64_t>(1, kGrainSize / inner);
  parallel_for(rows, grain, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) f(r, r / nb, r % nb);
  });
}

}  // namespace

Tensor index_cpu(const Tensor& self, const TensorList& indices) {
  const IndexPlan plan = plan_index(self, indices, "index");
  Tensor out = empty_tensor(plan.result_sizes, self.dtype(), self.device());
  if (out.numel() == 0) return out;  // nothing is read: no bounds to check
  const HostOffsets offs = host_offsets(plan, "index");
  const int64_t inner = (int64_t)offs.inner.size();
  const bool inner_contig = is_iota(offs.inner);
  visit_itemsize(self.itemsize(), "index", [&]<typename U>() {
    const U* src = static_cast<const U*>(self.data_ptr());
    U* dst = static_cast<U*>(out.data_ptr());
    for_each_row(offs, [&](int64_t row, int64_t o, int64_t b) {
      const U* s = src + offs.outer[(size_t)o] + offs.b[(size_t)b];
      U* d = dst + row * inner;
      if (inner_contig) {
        std::memcpy(d, s, (size_t)inner * sizeof(U));
      } else {
        for (int64_t i = 0; i < inner; ++i) d[i] = s[offs.inner[(size_t)i]];
      }
    });
  });
  return out;
}

Tensor index_put_cpu(const Tensor& self, const TensorList& indices, const Tensor& values, bool accumulate) {
  // Rows of an expanded self share memory: written one after another, the last wins (PyTorch's serial loop).
  const bool serial = warn_if_expanded(self, "index_put_");
  const IndexPlan plan = plan_index(self, indices, "index_put_");
  const IndexPutValues pv = prepare_index_put_values(self, plan, values, "index_put_");
  if (plan.numel() == 0) return self;
  const HostOffsets offs = host_offsets(plan, "index_put_");
  const DimVector& rs = plan.result_sizes;

  // Values' offsets in the same [outer, B, inner] walk.
  auto part = [&](size_t from, size_t to) {
    DimVector sz, st;
    for (size_t k = from; k < to; ++k) {
      sz.push_back(rs[k]);
      st.push_back(pv.strides[k]);
    }
    return enumerate_offsets(sz, st);
  };
  const size_t o_end = plan.outer_sizes.size(), b_end = o_end + plan.b_sizes.size();
  const std::vector<int64_t> vo = part(0, o_end), vb = part(o_end, b_end), vi = part(b_end, rs.size());
  const int64_t inner = (int64_t)offs.inner.size();

  if (!accumulate) {
    visit_itemsize(self.itemsize(), "index", [&]<typename U>() {
      U* dst = static_cast<U*>(self.data_ptr());
      const U* src = static_cast<const U*>(pv.values.data_ptr());
      for_each_row(offs, [&](int64_t, int64_t o, int64_t b) {
        U* d = dst + offs.outer[(size_t)o] + offs.b[(size_t)b];
        const U* s = src + vo[(size_t)o] + vb[(size_t)b];
        for (int64_t i = 0; i < inner; ++i) d[offs.inner[(size_t)i]] = s[vi[(size_t)i]];
      }, serial);
    });
  } else {
    // Serial: duplicate indices must all add up.
    visit_dtype(self.dtype(), [&]<typename T>() {
      using C = opmath_t<T>;
      T* dst = self.data<T>();
      const T* src = pv.values.data<T>();
      const int64_t nb = (int64_t)offs.b.size();
      for (size_t o = 0; o < offs.outer.size(); ++o)
        for (int64_t b = 0; b < nb; ++b) {
          T* d = dst + offs.outer[o] + offs.b[(size_t)b];
          const T* s = src + vo[o] + vb[(size_t)b];
          for (int64_t i = 0; i < inner; ++i) {
            T& x = d[offs.inner[(size_t)i]];
            x = static_cast<T>(static_cast<C>(x) + static_cast<C>(s[vi[(size_t)i]]));
          }
        }
    });
  }
  return self;
}

}  // namespace ember::cpu
