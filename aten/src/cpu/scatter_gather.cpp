// gather and scatter_add on the CPU. Both walk the index's positions: the dims
// other than `dim` are "rows" (run in parallel), each row a line along `dim`.
// Distinct rows touch distinct lines of the result, so scatter_add needs no
// atomics and adds in index order: deterministic at any thread count.
#include <algorithm>
#include <atomic>
#include <vector>

#include "ember/dispatch.h"
#include "ember/dtype.h"
#include "ember/errors.h"
#include "ember/ops/gather.h"
#include "ember/ops/scatter_add.h"
#include "ember/parallel.h"
#include "ember/tensor.h"

namespace ember::cpu {
namespace {

// A tensor's sizes/strides with a 0-d tensor read as one element of 1-D.
DimVector sizes_1d(const Tensor& t) { return t.dim() == 0 ? DimVector{1} : t.sizes(); }
DimVector strides_1d(const Tensor& t) { return t.dim() == 0 ? DimVector{1} : t.strides(); }

std::string shape_str(const Tensor& t) {
  std::string s = "[";
  for (int64_t d = 0; d < t.dim(); ++d) s += (d ? ", " : "") + std::to_string(t.size(d));
  return s + "]";
}

// The index as int64 (PyTorch takes int64; int32 is converted, as its CPU kernels accept it).
Tensor index_as_long(const Tensor& index, const char* op) {
  EMBER_CHECK(index.dtype() == ScalarType::Int64 || index.dtype() == ScalarType::Int32, Runtime, op,
              "(): Expected dtype int32/int64 for index");
  return index.dtype() == ScalarType::Int64 ? index : cast_to(index, ScalarType::Int64);
}

// Rows of `sizes` without `dim`, with each tensor's strides over those rows.
template <int N>
struct RowWalk {
  DimVector sizes;
  DimVector strides[N];
  int64_t rows = 1;

  RowWalk(const DimVector& index_sizes, int64_t dim, const DimVector* (&&all)[N]) {
    for (int64_t d = 0; d < (int64_t)index_sizes.size(); ++d) {
      if (d == dim) continue;
      sizes.push_back(index_sizes[d]);
      for (int k = 0; k < N; ++k) strides[k].push_back((*all[k])[d]);
      rows *= index_sizes[d];
    }
  }

  // Calls f(offsets) for rows [b, e), offsets[k] the start of the row in tensor k.
  template <typename F>
  void run(int64_t b, int64_t e, F&& f) const {
    const int64_t nd = (int64_t)sizes.size();
    std::vector<int64_t> coord(nd);
    int64_t off[N] = {};
    for (int64_t d = nd - 1, r = b; d >= 0; --d) {
      coord[d] = r % sizes[d];
      r /= sizes[d];
      for (int k = 0; k < N; ++k) off[k] += coord[d] * strides[k][d];
    }
    for (int64_t r = b; r < e; ++r) {
      if (!f(off)) return;
      for (int64_t d = nd - 1; d >= 0; --d) {
        for (int k = 0; k < N; ++k) off[k] += strides[k][d];
        if (++coord[d] < sizes[d]) break;
        for (int k = 0; k < N; ++k) off[k] -= coord[d] * strides[k][d];
        coord[d] = 0;
      }
    }
  }
};

// Shared by both ops: the first out-of-range index any thread met.
struct BadIndex {
  std::atomic<bool> hit{false};
  int64_t value = 0;
  void record(int64_t v) {
    bool expected = false;
    if (hit.compare_exchange_strong(expected, true)) value = v;
  }
  void raise_if_hit(int64_t dim, int64_t size) const {
    EMBER_CHECK(!hit.load(), Runtime, "index ", value, " is out of bounds for dimension ", dim, " with size ", size);
  }
};

// Runs body(first, third, j, v) for every index value v (checked in [0, bound)) at position j
// of each row, rows in parallel; first/third: the row's offsets in RowWalk's tensors 0 and 2
// (tensor 1 is the index), copied so that stores through the data cannot alias them.
template <typename Body>
void for_each_index(const RowWalk<3>& walk, const Tensor& idx, int64_t dim, int64_t bound, BadIndex& bad,
                    Body&& body) {
  const int64_t len = sizes_1d(idx)[dim], i_dim = strides_1d(idx)[dim];
  const int64_t* ip = idx.data<int64_t>();
  parallel_for(walk.rows, std::max<int64_t>(1, kGrainSize / len), [&](int64_t b, int64_t e) {
    walk.run(b, e, [&](const int64_t* off) {
      const int64_t* i = ip + off[1];
      const int64_t first = off[0], third = off[2];
      for (int64_t j = 0; j < len; ++j) {
        const int64_t v = i[j * i_dim];
        if (v < 0 || v >= bound) {
          bad.record(v);
          return false;
        }
        body(first, third, j, v);
      }
      return !bad.hit.load(std::memory_order_relaxed);
    });
  });
}

}  // namespace

Tensor gather_cpu(const Tensor& self, int64_t dim, const Tensor& index, bool /*sparse_grad*/) {
  const int64_t nd = std::max<int64_t>(self.dim(), 1);
  dim = wrap_dim(dim, nd, "gather");
  const Tensor idx = index_as_long(index, "gather");
  EMBER_CHECK(std::max<int64_t>(idx.dim(), 1) == nd || idx.numel() == 0, Runtime,
              "gather(): Index tensor must have the same number of dimensions as input tensor");
  Tensor out = empty_tensor(idx.sizes(), self.dtype(), self.device());
  if (idx.numel() == 0) return out;
  const DimVector is = sizes_1d(idx), ss = sizes_1d(self);
  for (int64_t d = 0; d < nd; ++d)
    EMBER_CHECK(d == dim || is[d] <= ss[d], Runtime, "gather(): Size does not match at dimension ", d,
                " expected index ", shape_str(idx), " to be no larger than self ", shape_str(self),
                " apart from dimension ", dim);

  const DimVector self_st = strides_1d(self), idx_st = strides_1d(idx), out_st = strides_1d(out);
  RowWalk<3> walk(is, dim, {&self_st, &idx_st, &out_st});
  const int64_t bound = ss[dim], s_dim = self_st[dim], o_dim = out_st[dim];
  BadIndex bad;
  visit_itemsize(self.itemsize(), "gather", [&]<typename U>() {
    const U* src = static_cast<const U*>(self.data_ptr());
    U* dst = static_cast<U*>(out.data_ptr());
    for_each_index(walk, idx, dim, bound, bad, [&](int64_t s_off, int64_t o_off, int64_t j, int64_t v) {
      dst[o_off + j * o_dim] = src[s_off + v * s_dim];
    });
  });
  bad.raise_if_hit(dim, bound);
  return out;
}

Tensor scatter_add_cpu(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  const int64_t nd = std::max<int64_t>(self.dim(), 1);
  dim = wrap_dim(dim, nd, "scatter_add");
  const Tensor idx = index_as_long(index, "scatter");
  EMBER_CHECK(src.dtype() == self.dtype(), Runtime, "scatter(): Expected self.dtype to be equal to src.dtype");
  EMBER_CHECK(std::max<int64_t>(idx.dim(), 1) == nd || idx.numel() == 0, Runtime,
              "scatter_add(): Index tensor must have the same number of dimensions as self tensor");
  EMBER_CHECK(std::max<int64_t>(src.dim(), 1) == nd || idx.numel() == 0, Runtime,
              "scatter_add(): Index tensor must have the same number of dimensions as src tensor");
  // The result: a fresh contiguous copy of self (the in-place form copies it back).
  Tensor out = empty_tensor(self.sizes(), self.dtype(), self.device());
  copy_elements(out, self);
  if (idx.numel() == 0) return out;
  const DimVector is = sizes_1d(idx), ss = sizes_1d(self), srs = sizes_1d(src);
  for (int64_t d = 0; d < nd; ++d)
    EMBER_CHECK(is[d] <= srs[d] && (d == dim || is[d] <= ss[d]), Runtime, "Expected index ", shape_str(idx),
                " to be no larger than self ", shape_str(self), " apart from dimension ", dim,
                " and to be no larger size than src ", shape_str(src));

  const DimVector src_st = strides_1d(src), idx_st = strides_1d(idx), out_st = strides_1d(out);
  RowWalk<3> walk(is, dim, {&src_st, &idx_st, &out_st});
  const int64_t bound = ss[dim], s_dim = src_st[dim], o_dim = out_st[dim];
  BadIndex bad;
  visit_dtype(self.dtype(), [&]<typename T>() {
    using C = opmath_t<T>;
    const T* sp = src.data<T>();
    T* dst = out.data<T>();
    for_each_index(walk, idx, dim, bound, bad, [&](int64_t s_off, int64_t o_off, int64_t j, int64_t v) {
      T& x = dst[o_off + v * o_dim];
      x = static_cast<T>(static_cast<C>(x) + static_cast<C>(sp[s_off + j * s_dim]));
    });
  });
  bad.raise_if_hit(dim, bound);
  return out;
}

}  // namespace ember::cpu
