// Host-side planning of advanced indexing; see ember/index_plan.h.
#include "ember/index_plan.h"

#include <algorithm>
#include <string>

#include "ember/dispatch.h"
#include "ember/dtype.h"
#include "ember/errors.h"
#include "ember/overlap.h"

namespace ember {
namespace {

// The nonzero positions of a bool/uint8 mask, one int64 CPU tensor per mask dim.
std::vector<Tensor> mask_to_indices(const Tensor& mask_in) {
  // A mask on a device is read on the host (a sync, as PyTorch's nonzero).
  const Tensor mask = mask_in.device().is_cpu() ? mask_in : copy_to(mask_in, Device(), mask_in.dtype());
  const int64_t nd = mask.dim();
  std::vector<int64_t> offs = enumerate_offsets(mask.sizes(), mask.strides());
  const char* base = static_cast<const char*>(mask.data_ptr());  // bool and uint8 are one byte
  int64_t count = 0;
  for (int64_t off : offs) count += base[off] != 0;
  std::vector<Tensor> out;
  std::vector<int64_t*> ptrs;
  for (int64_t j = 0; j < nd; ++j) {
    out.push_back(empty_tensor({count}, ScalarType::Int64));
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

// The index list with masks expanded; checks dtypes, devices and mask shapes.
std::vector<Tensor> expand_masks(const Tensor& self, const TensorList& indices_in, const char* op) {
  std::vector<Tensor> idx;
  for (const Tensor& t : indices_in) {
    if (!t.defined()) {
      idx.push_back(Tensor());
      continue;
    }
    EMBER_CHECK(t.device().is_cpu() || t.device() == self.device(), Index,
                "indices should be either on cpu or on the same device as the indexed tensor (", self.device(), ")");
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
  EMBER_CHECK((int64_t)idx.size() <= self.dim(), Index, "too many indices for tensor of dimension ", self.dim(),
              " (got ", idx.size(), ")");
  idx.resize((size_t)self.dim());
  return idx;
}

// The broadcast shape of the defined indices.
DimVector broadcast_indices(const std::vector<Tensor>& idx) {
  DimVector B;
  bool first = true;
  for (const Tensor& t : idx) {
    if (!t.defined()) continue;
    const DimVector& s = t.sizes();
    if (first) {
      B = s;
      first = false;
      continue;
    }
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
      for (const Tensor& e : idx)
        if (e.defined()) shapes += (shapes.empty() ? "" : ", ") + str(e.sizes());
      EMBER_FAIL(Index, "shape mismatch: indexing tensors could not be broadcast together with shapes ", shapes);
    }
    B = r;
  }
  return B;
}

}  // namespace

bool IndexPlan::indices_on_cpu() const {
  for (const Index& i : indices)
    if (!i.tensor.device().is_cpu()) return false;
  return true;
}

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

IndexPlan plan_index(const Tensor& self, const TensorList& indices, const char* op) {
  const std::vector<Tensor> idx = expand_masks(self, indices, op);
  const int64_t nd = self.dim();
  IndexPlan plan;
  plan.b_sizes = broadcast_indices(idx);
  std::vector<int64_t> pos;
  for (int64_t d = 0; d < nd; ++d)
    if (idx[d].defined()) pos.push_back(d);
  bool adjacent = true;
  for (size_t k = 1; k < pos.size(); ++k) adjacent &= pos[k] == pos[k - 1] + 1;

  // Sliced dims before adjacent indices are outer; all others inner.
  const int64_t first = pos.empty() ? nd : pos.front();
  for (int64_t d = 0; d < nd; ++d) {
    if (idx[d].defined()) continue;
    const bool outer = adjacent && d < first;
    (outer ? plan.outer_sizes : plan.inner_sizes).push_back(self.size(d));
    (outer ? plan.outer_strides : plan.inner_strides).push_back(self.stride(d));
  }
  for (int64_t s : plan.outer_sizes) plan.result_sizes.push_back(s);
  for (int64_t s : plan.b_sizes) plan.result_sizes.push_back(s);
  for (int64_t s : plan.inner_sizes) plan.result_sizes.push_back(s);

  for (int64_t d : pos) {
    const Tensor& t = idx[d];
    IndexPlan::Index e{t, self.size(d), self.stride(d), DimVector(plan.b_sizes.size(), 0)};
    const size_t lead = plan.b_sizes.size() - (size_t)t.dim();
    for (int64_t k = 0; k < t.dim(); ++k) e.b_strides[lead + k] = t.size(k) == 1 ? 0 : t.stride(k);
    plan.indices.push_back(std::move(e));
  }
  return plan;
}

void raise_index_out_of_bounds(const char* op, int64_t value, int64_t position, int64_t size) {
  // `position` counts the index tensors, as PyTorch's message does.
  EMBER_FAIL(Index, op, ": index ", value, " is out of bounds for dimension ", position, " with size ", size);
}

std::vector<int64_t> index_offsets_on_host(const IndexPlan& plan, const char* op) {
  const int64_t nb = plan.b_numel();
  std::vector<int64_t> b_offs((size_t)nb, 0);
  for (size_t j = 0; j < plan.indices.size(); ++j) {
    const IndexPlan::Index& e = plan.indices[j];
    EMBER_CHECK(e.tensor.device().is_cpu(), Runtime, op, ": index tensor expected on the CPU here");
    const std::vector<int64_t> toffs = enumerate_offsets(plan.b_sizes, e.b_strides);
    auto apply = [&](const auto* p) {
      for (int64_t b = 0; b < nb; ++b) {
        int64_t v = (int64_t)p[toffs[(size_t)b]];
        if (v < -e.size || v >= e.size) raise_index_out_of_bounds(op, v, (int64_t)j, e.size);
        if (v < 0) v += e.size;
        b_offs[(size_t)b] += v * e.stride;
      }
    };
    if (e.tensor.dtype() == ScalarType::Int64) apply(e.tensor.data<int64_t>());
    else apply(e.tensor.data<int32_t>());
  }
  return b_offs;
}

bool warn_if_expanded(const Tensor& self, const char* op) {
  if (!has_internal_overlap(self)) return false;
  warn("Use of ", op, " on expanded tensors is deprecated. Please clone() the tensor before performing this "
       "operation. This also applies to advanced indexing e.g. tensor[indices] = tensor");
  return true;
}

IndexPutValues prepare_index_put_values(const Tensor& self, const IndexPlan& plan, const Tensor& values,
                                        const char* op) {
  const DimVector& rs = plan.result_sizes;
  // Leading size-1 dims of values beyond the result's rank may go.
  const int64_t vdims = values.dim();
  int64_t vskip = 0;
  while (vdims - vskip > (int64_t)rs.size() && values.size(vskip) == 1) ++vskip;
  bool ok = vdims - vskip <= (int64_t)rs.size();
  const int64_t lead = (int64_t)rs.size() - (vdims - vskip);
  for (int64_t k = vskip; ok && k < vdims; ++k) ok = values.size(k) == rs[lead + k - vskip] || values.size(k) == 1;
  EMBER_CHECK(ok, Runtime, "shape mismatch: value tensor of shape ", values.sizes(),
              " cannot be broadcast to indexing result of shape ", rs);
  IndexPutValues out{values, DimVector(rs.size(), 0)};
  if (plan.numel() == 0) return out;

  Tensor& v = out.values;
  if (v.device() != self.device()) {
    // PyTorch moves a 0-d value to self's device and rejects anything else.
    EMBER_CHECK(v.dim() == 0, Runtime, op, ": expected values on ", self.device(), " (the device of self), got ",
                v.device());
    v = copy_to(v, self.device(), self.dtype());
  } else if (v.dtype() != self.dtype() || v.storage() == self.storage()) {
    v = copy_to(v, self.device(), self.dtype());  // a copy never overlaps what is written
  }
  for (int64_t k = vskip; k < vdims; ++k) {
    const int64_t r = lead + k - vskip;
    out.strides[r] = (v.size(k) == 1 || rs[r] == 1) ? 0 : v.stride(k);
  }
  return out;
}

}  // namespace ember
