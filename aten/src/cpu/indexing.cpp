// Advanced indexing on the CPU: index (gather) and index_put_ (scatter), with
// PyTorch's rules for a list of optional index tensors:
//   - an undefined tensor keeps its dim as a full slice;
//   - bool/uint8 masks become one int64 index per mask dim (their nonzeros);
//   - the defined indices broadcast together to a shape B;
//   - if they are adjacent, B replaces the indexed dims in place, otherwise B
//     comes first and the sliced dims follow in order.
// Either way the result is walked as [outer, B, inner]: outer and inner are
// sliced dims of `self`, and every position of B has one precomputed offset.
#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "ember/dtype.h"
#include "ember/errors.h"
#include "ember/ops.h"
#include "ember/parallel.h"
#include "ember/tensor.h"

namespace ember::cpu {
namespace {

// Offsets (in elements) of every position of a row-major walk over `sizes`.
std::vector<int64_t> enumerate_offsets(const DimVector& sizes, const DimVector& strides) {
  int64_t n = compute_numel(sizes);
  std::vector<int64_t> out((size_t)n);
  if (n == 0) return out;
  const int64_t nd = (int64_t)sizes.size();
  DimVector counter((size_t)nd, 0);
  int64_t offset = 0;
  for (int64_t l = 0; l < n; ++l) {
    out[(size_t)l] = offset;
    for (int64_t k = nd - 1; k >= 0; --k) {
      offset += strides[k];
      if (++counter[k] < sizes[k]) break;
      offset -= counter[k] * strides[k];
      counter[k] = 0;
    }
  }
  return out;
}

bool is_iota(const std::vector<int64_t>& v) {
  for (size_t i = 0; i < v.size(); ++i)
    if (v[i] != (int64_t)i) return false;
  return true;
}

// The nonzero positions of a bool/uint8 mask, one int64 tensor per mask dim.
std::vector<Tensor> mask_to_indices(const Tensor& mask) {
  const int64_t nd = mask.dim();
  std::vector<int64_t> offs = enumerate_offsets(mask.sizes(), mask.strides());
  const char* base = static_cast<const char*>(mask.data_ptr());  // bool and uint8 are one byte
  int64_t count = 0;
  for (int64_t off : offs) count += base[off] != 0;
  std::vector<Tensor> out;
  std::vector<int64_t*> ptrs;
  for (int64_t j = 0; j < nd; ++j) {
    out.push_back(empty_tensor({count}, ScalarType::Int64, mask.device()));
    ptrs.push_back(out.back().data<int64_t>());
  }
  DimVector counter((size_t)nd, 0);
  int64_t w = 0;
  for (size_t l = 0; l < offs.size(); ++l) {
    if (base[offs[l]] != 0) {
      for (int64_t j = 0; j < nd; ++j) ptrs[j][w] = counter[j];
      ++w;
    }
    for (int64_t k = nd - 1; k >= 0; --k) {
      if (++counter[k] < mask.size(k)) break;
      counter[k] = 0;
    }
  }
  return out;
}

struct IndexPlan {
  DimVector result_sizes;
  // The result as [outer, B, inner]: the result dims each part covers.
  int64_t outer_ndim = 0, b_ndim = 0;
  std::vector<int64_t> outer_offs, b_offs, inner_offs;  // offsets into self
  int64_t numel() const { return (int64_t)(outer_offs.size() * b_offs.size() * inner_offs.size()); }
};

IndexPlan make_plan(const Tensor& self, const TensorList& indices_in, const char* op) {
  // Masks become long indices; check dtypes.
  std::vector<Tensor> idx;
  for (const Tensor& t : indices_in) {
    if (!t.defined()) {
      idx.push_back(Tensor());
      continue;
    }
    const ScalarType dt = t.dtype();
    if (dt == ScalarType::Bool || dt == ScalarType::UInt8) {
      EMBER_CHECK(t.dim() > 0, Index, op, ": a 0-d boolean index is not supported here");
      const int64_t src = (int64_t)idx.size();
      EMBER_CHECK(src + t.dim() <= self.dim(), Index, "too many indices for tensor of dimension ", self.dim(),
                  " (got ", src + t.dim(), ")");
      for (int64_t j = 0; j < t.dim(); ++j)
        EMBER_CHECK(t.size(j) == self.size(src + j), Index, "The shape of the mask ", t.sizes(), " at index ", j,
                    " does not match the shape of the indexed tensor ", self.sizes(), " at index ", src + j);
      for (Tensor& m : mask_to_indices(t)) idx.push_back(m);
    } else {
      EMBER_CHECK(dt == ScalarType::Int64 || dt == ScalarType::Int32, Index,
                  "tensors used as indices must be long, int, byte or bool tensors");
      idx.push_back(t);
    }
  }
  const int64_t nd = self.dim();
  EMBER_CHECK((int64_t)idx.size() <= nd, Index, "too many indices for tensor of dimension ", nd, " (got ",
              idx.size(), ")");
  idx.resize((size_t)nd);

  // Broadcast the defined indices; note where they sit.
  std::vector<int64_t> pos;
  DimVector B;
  for (int64_t d = 0; d < nd; ++d) {
    if (!idx[d].defined()) continue;
    const DimVector& s = idx[d].sizes();
    if (pos.empty()) {
      B = s;
    } else {
      const size_t n = std::max(B.size(), s.size());
      DimVector r(n, 1);
      bool ok = true;
      for (size_t k = 0; k < n; ++k) {
        int64_t a = k < n - B.size() ? 1 : B[k - (n - B.size())];
        int64_t b = k < n - s.size() ? 1 : s[k - (n - s.size())];
        if (a != b && a != 1 && b != 1) ok = false;
        r[k] = a == 1 ? b : a;
      }
      if (!ok) {
        std::string shapes;
        for (int64_t e = 0; e < nd; ++e)
          if (idx[e].defined()) shapes += (shapes.empty() ? "" : ", ") + str(idx[e].sizes());
        EMBER_FAIL(Index, "shape mismatch: indexing tensors could not be broadcast together with shapes ", shapes);
      }
      B = r;
    }
    pos.push_back(d);
  }
  bool adjacent = true;
  for (size_t k = 1; k < pos.size(); ++k) adjacent &= pos[k] == pos[k - 1] + 1;

  // Split the sliced dims into outer and inner parts.
  IndexPlan plan;
  DimVector osz, ost, isz, ist;
  const int64_t first = pos.empty() ? nd : pos.front();
  for (int64_t d = 0; d < nd; ++d) {
    if (idx[d].defined()) continue;
    if (adjacent && d < first) {
      osz.push_back(self.size(d));
      ost.push_back(self.stride(d));
    } else {
      isz.push_back(self.size(d));
      ist.push_back(self.stride(d));
    }
  }
  for (int64_t s : osz) plan.result_sizes.push_back(s);
  for (int64_t s : B) plan.result_sizes.push_back(s);
  for (int64_t s : isz) plan.result_sizes.push_back(s);
  plan.outer_ndim = (int64_t)osz.size();
  plan.b_ndim = (int64_t)B.size();
  if (compute_numel(plan.result_sizes) == 0) return plan;  // nothing to read: no bounds to check
  plan.outer_offs = enumerate_offsets(osz, ost);
  plan.inner_offs = enumerate_offsets(isz, ist);

  // One self offset per position of B, summed over the indices.
  const int64_t nb = compute_numel(B);
  plan.b_offs.assign((size_t)nb, 0);
  for (size_t j = 0; j < pos.size(); ++j) {
    const Tensor& t = idx[pos[j]];
    const int64_t size = self.size(pos[j]), stride = self.stride(pos[j]);
    // The index's strides against B (0 where it broadcasts).
    DimVector bst(B.size(), 0);
    const size_t lead = B.size() - (size_t)t.dim();
    for (int64_t k = 0; k < t.dim(); ++k) bst[lead + k] = t.size(k) == 1 ? 0 : t.stride(k);
    std::vector<int64_t> toffs = enumerate_offsets(B, bst);
    auto apply = [&](const auto* p) {
      for (int64_t b = 0; b < nb; ++b) {
        int64_t v = (int64_t)p[toffs[(size_t)b]];
        EMBER_CHECK(v >= -size && v < size, Index, "index ", v, " is out of bounds for dimension ", j,
                    " with size ", size);
        if (v < 0) v += size;
        plan.b_offs[(size_t)b] += v * stride;
      }
    };
    if (t.dtype() == ScalarType::Int64) apply(t.data<int64_t>());
    else apply(t.data<int32_t>());
  }
  return plan;
}

template <typename F>
void visit_size(size_t itemsize, F&& f) {
  switch (itemsize) {
    case 1: return f.template operator()<uint8_t>();
    case 2: return f.template operator()<uint16_t>();
    case 4: return f.template operator()<uint32_t>();
    case 8: return f.template operator()<uint64_t>();
    default: EMBER_FAIL(Runtime, "index: unsupported element size ", itemsize);
  }
}

// Calls f(row, outer_off, b_off) for every (outer, B) row in parallel.
template <typename F>
void for_each_row(const IndexPlan& plan, F&& f) {
  const int64_t nb = (int64_t)plan.b_offs.size();
  const int64_t rows = (int64_t)plan.outer_offs.size() * nb;
  const int64_t inner = std::max<int64_t>((int64_t)plan.inner_offs.size(), 1);
  parallel_for(rows, std::max<int64_t>(1, kGrainSize / inner), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) f(r, r / nb, r % nb);
  });
}

}  // namespace

Tensor index_cpu(const Tensor& self, const TensorList& indices) {
  IndexPlan plan = make_plan(self, indices, "index");
  Tensor out = empty_tensor(plan.result_sizes, self.dtype(), self.device());
  if (out.numel() == 0) return out;
  const int64_t inner = (int64_t)plan.inner_offs.size();
  const bool inner_contig = is_iota(plan.inner_offs);
  visit_size(self.itemsize(), [&]<typename U>() {
    const U* src = static_cast<const U*>(self.data_ptr());
    U* dst = static_cast<U*>(out.data_ptr());
    for_each_row(plan, [&](int64_t row, int64_t o, int64_t b) {
      const U* s = src + plan.outer_offs[(size_t)o] + plan.b_offs[(size_t)b];
      U* d = dst + row * inner;
      if (inner_contig) {
        std::memcpy(d, s, (size_t)inner * sizeof(U));
      } else {
        for (int64_t i = 0; i < inner; ++i) d[i] = s[plan.inner_offs[(size_t)i]];
      }
    });
  });
  return out;
}

Tensor index_put_cpu(const Tensor& self, const TensorList& indices, const Tensor& values, bool accumulate) {
  for (int64_t d = 0; d < self.dim(); ++d)
    EMBER_CHECK(self.stride(d) != 0 || self.size(d) <= 1, Runtime,
                "unsupported operation: some elements of the input tensor and the written-to tensor refer to a "
                "single memory location. Please clone() the tensor before performing the operation.");
  IndexPlan plan = make_plan(self, indices, "index_put_");
  const DimVector& rs = plan.result_sizes;

  // Values broadcast to the indexed shape (leading size-1 dims of values may go).
  int64_t vdims = values.dim();
  int64_t vskip = 0;
  while (vdims - vskip > (int64_t)rs.size() && values.size(vskip) == 1) ++vskip;
  bool ok = vdims - vskip <= (int64_t)rs.size();
  DimVector vst(rs.size(), 0);
  if (ok) {
    const size_t lead = rs.size() - (size_t)(vdims - vskip);
    for (int64_t k = vskip; k < vdims; ++k) {
      const int64_t r = (int64_t)lead + (k - vskip);
      if (values.size(k) == rs[r]) vst[r] = rs[r] == 1 ? 0 : values.stride(k);
      else if (values.size(k) == 1) vst[r] = 0;
      else ok = false;
    }
  }
  EMBER_CHECK(ok, Runtime, "shape mismatch: value tensor of shape ", values.sizes(),
              " cannot be broadcast to indexing result of shape ", rs);
  if (compute_numel(rs) == 0) {
    return self;
  }

  Tensor v = values;
  if (v.dtype() != self.dtype()) v = ember::to_dtype(v, self.dtype(), false, false);
  else if (v.storage() == self.storage()) v = ember::clone(v);
  if (!v.is_same(values)) {
    // A fresh copy may have its own strides: recompute them.
    for (int64_t k = vskip; k < vdims; ++k) {
      const int64_t r = (int64_t)(rs.size() - (size_t)(vdims - vskip)) + (k - vskip);
      vst[r] = (v.size(k) == 1 || rs[r] == 1) ? 0 : v.stride(k);
    }
  }

  // Values' offsets in the same [outer, B, inner] walk.
  auto part = [&](int64_t from, int64_t to) {
    DimVector sz, st;
    for (int64_t k = from; k < to; ++k) {
      sz.push_back(rs[k]);
      st.push_back(vst[k]);
    }
    return enumerate_offsets(sz, st);
  };
  const int64_t o_end = plan.outer_ndim, b_end = plan.outer_ndim + plan.b_ndim;
  const std::vector<int64_t> vo = part(0, o_end), vb = part(o_end, b_end), vi = part(b_end, (int64_t)rs.size());
  const int64_t inner = (int64_t)plan.inner_offs.size();

  if (!accumulate) {
    visit_size(self.itemsize(), [&]<typename U>() {
      U* dst = static_cast<U*>(self.data_ptr());
      const U* src = static_cast<const U*>(v.data_ptr());
      for_each_row(plan, [&](int64_t, int64_t o, int64_t b) {
        U* d = dst + plan.outer_offs[(size_t)o] + plan.b_offs[(size_t)b];
        const U* s = src + vo[(size_t)o] + vb[(size_t)b];
        for (int64_t i = 0; i < inner; ++i) d[plan.inner_offs[(size_t)i]] = s[vi[(size_t)i]];
      });
    });
  } else {
    // Serial: duplicate indices must all add up.
    visit_dtype(self.dtype(), [&]<typename T>() {
      using C = opmath_t<T>;
      T* dst = self.data<T>();
      const T* src = v.data<T>();
      const int64_t nb = (int64_t)plan.b_offs.size();
      for (size_t o = 0; o < plan.outer_offs.size(); ++o)
        for (int64_t b = 0; b < nb; ++b) {
          T* d = dst + plan.outer_offs[o] + plan.b_offs[(size_t)b];
          const T* s = src + vo[o] + vb[(size_t)b];
          for (int64_t i = 0; i < inner; ++i) {
            T& x = d[plan.inner_offs[(size_t)i]];
            x = static_cast<T>(static_cast<C>(x) + static_cast<C>(s[vi[(size_t)i]]));
          }
        }
    });
  }
  return self;
}

}  // namespace ember::cpu
