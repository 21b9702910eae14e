// gather, scatter (src, value, add/multiply), scatter_add and scatter_reduce on the CPU.
// All walk the index's positions: the dims other than `dim` are "rows" (run in
// parallel), each row a line along `dim`. Distinct rows touch distinct lines of the
// result, so the scatters need no atomics and combine in index order: deterministic
// at any thread count. A row's indices are checked before it is used, so the loops
// that move data are tight (and, on contiguous lines, free of stride multiplies).
#include <algorithm>
#include <atomic>
#include <vector>

#include "ember/dispatch.h"
#include "ember/dtype.h"
#include "ember/errors.h"
#include "ember/math.h"
#include "ember/ops/gather.h"
#include "ember/ops/scatter.h"
#include "ember/ops/scatter_add.h"
#include "ember/ops/scatter_reduce.h"
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

// Every row of the index (tensor 1 of the walk) is checked first, then handed whole to
// body(offsets, index_row); offsets are the row's starts in the walk's tensors.
template <int N, typename Body>
void for_each_checked_row(const RowWalk<N>& walk, const Tensor& idx, int64_t dim, int64_t bound, BadIndex& bad,
                          Body&& body) {
  const int64_t len = sizes_1d(idx)[dim], i_dim = strides_1d(idx)[dim];
  const int64_t* ip = idx.data<int64_t>();
  parallel_for(walk.rows, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(len, 1)), [&](int64_t b, int64_t e) {
    walk.run(b, e, [&](const int64_t* off) {
      const int64_t* i = ip + off[1];
      for (int64_t j = 0; j < len; ++j) {
        const int64_t v = i[j * i_dim];
        if (v < 0 || v >= bound) {
          bad.record(v);
          return false;
        }
      }
      int64_t copy[N];  // locals, so that stores through the data cannot alias them
      std::copy(off, off + N, copy);
      body(static_cast<const int64_t*>(copy), i);
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
  const int64_t len = is[dim], i_dim = idx_st[dim];
  BadIndex bad;
  visit_itemsize(self.itemsize(), "gather", [&]<typename U>() {
    const U* src = static_cast<const U*>(self.data_ptr());
    U* dst = static_cast<U*>(out.data_ptr());
    for_each_checked_row(walk, idx, dim, bound, bad, [&](const int64_t* off, const int64_t* i) {
      const U* from = src + off[0];
      U* to = dst + off[2];
      if (s_dim == 1 && o_dim == 1 && i_dim == 1) {
        for (int64_t j = 0; j < len; ++j) to[j] = from[i[j]];
      } else {
        for (int64_t j = 0; j < len; ++j) to[j * o_dim] = from[i[j * i_dim] * s_dim];
      }
    });
  });
  bad.raise_if_hit(dim, bound);
  return out;
}

namespace {

// scatter's reductions: None assigns; the rest combine into the result (Mean divides at the end).
enum class Reduce { None, Sum, Prod, Mean, Max, Min };

Reduce parse_scatter_reduce(const std::string& reduce) {
  EMBER_CHECK(reduce == "add" || reduce == "multiply", Runtime, "reduce argument must be either add or multiply.");
  return reduce == "add" ? Reduce::Sum : Reduce::Prod;
}

Reduce parse_scatter_reduce_two(const std::string& reduce) {
  if (reduce == "sum") return Reduce::Sum;
  if (reduce == "prod") return Reduce::Prod;
  if (reduce == "mean") return Reduce::Mean;
  if (reduce == "amax") return Reduce::Max;
  if (reduce == "amin") return Reduce::Min;
  EMBER_FAIL(Runtime, "reduce argument must be either sum, prod, mean, amax or amin, got ", reduce);
}

template <typename C>
C reduce_identity(Reduce r) {
  switch (r) {
    case Reduce::Prod: return C(1);
    case Reduce::Max: return lowest_value<C>();
    case Reduce::Min: return highest_value<C>();
    default: return C(0);
  }
}

template <typename C>
C reduce_combine(Reduce r, C acc, C x) {
  switch (r) {
    case Reduce::Sum: case Reduce::Mean: return acc + x;
    case Reduce::Prod: return acc * x;
    case Reduce::Max: return math::maximum(acc, x);
    case Reduce::Min: return math::minimum(acc, x);
    default: return x;
  }
}

// The shared scatter: a copy of `self` with `src` (or `value` when src is undefined) put at
// `index` along `dim`, combined by `r`; include_self=False starts each target from the identity.
// When the index covers every line of self, each row copies its line of self first (one pass
// over memory instead of two).
Tensor scatter_impl(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src, const Scalar& value,
                    Reduce r, bool include_self, const char* op) {
  const int64_t nd = std::max<int64_t>(self.dim(), 1);
  dim = wrap_dim(dim, nd, op);
  const Tensor idx = index_as_long(index, "scatter");
  if (src.defined())
    EMBER_CHECK(src.dtype() == self.dtype(), Runtime, "scatter(): Expected self.dtype to be equal to src.dtype");
  EMBER_CHECK(std::max<int64_t>(idx.dim(), 1) == nd || idx.numel() == 0, Runtime, op,
              "(): Index tensor must have the same number of dimensions as self tensor");
  if (src.defined())
    EMBER_CHECK(std::max<int64_t>(src.dim(), 1) == nd || idx.numel() == 0, Runtime, op,
                "(): Index tensor must have the same number of dimensions as src tensor");
  Tensor out = empty_tensor(self.sizes(), self.dtype(), self.device());
  const DimVector is = sizes_1d(idx), ss = sizes_1d(self);
  const DimVector srs = src.defined() ? sizes_1d(src) : is;
  for (int64_t d = 0; d < nd && idx.numel() > 0; ++d)
    EMBER_CHECK(is[d] <= srs[d] && (d == dim || is[d] <= ss[d]), Runtime, "Expected index ", shape_str(idx),
                " to be no larger than self ", shape_str(self), " apart from dimension ", dim,
                " and to be no larger size than src ", src.defined() ? shape_str(src) : shape_str(idx));
  bool covers = idx.numel() > 0;
  for (int64_t d = 0; d < nd; ++d) covers = covers && (d == dim || is[d] == ss[d]);
  if (!covers) copy_elements(out, self);
  if (idx.numel() == 0) return out;

  const DimVector src_st = src.defined() ? strides_1d(src) : DimVector(is.size(), 0);
  const DimVector idx_st = strides_1d(idx), out_st = strides_1d(out), self_st = strides_1d(self);
  RowWalk<4> walk(is, dim, {&src_st, &idx_st, &out_st, &self_st});
  const int64_t len = is[dim], bound = ss[dim], i_dim = idx_st[dim];
  const int64_t s_dim = src_st[dim], o_dim = out_st[dim], self_dim = self_st[dim];
  BadIndex bad;
  visit_dtype(self.dtype(), [&]<typename T>() {
    using C = opmath_t<T>;
    const T fill = src.defined() ? T() : value.to<T>();
    const T* sp = src.defined() ? src.data<T>() : &fill;  // a value is read through stride 0
    const T* old = self.data<T>();
    T* dst = out.data<T>();
    const C init = reduce_identity<C>(r);
    for_each_checked_row(walk, idx, dim, bound, bad, [&](const int64_t* off, const int64_t* i) {
      const T* from = sp + off[0];
      T* line = dst + off[2];
      if (covers) {
        const T* self_line = old + off[3];
        for (int64_t k = 0; k < bound; ++k) line[k * o_dim] = self_line[k * self_dim];
      }
      if (r == Reduce::None) {
        for (int64_t j = 0; j < len; ++j) line[i[j * i_dim] * o_dim] = from[j * s_dim];
        return;
      }
      if (r == Reduce::Sum && include_self && o_dim == 1 && i_dim == 1 && s_dim == 1) {  // scatter_add's lines
        for (int64_t j = 0; j < len; ++j) line[i[j]] = static_cast<T>(static_cast<C>(line[i[j]]) + static_cast<C>(from[j]));
        return;
      }
      // Mean counts the contributions of each target of this line (include_self counts self).
      std::vector<int64_t> count(r == Reduce::Mean ? bound : 0, include_self ? 1 : 0);
      if (!include_self)
        for (int64_t j = 0; j < len; ++j) line[i[j * i_dim] * o_dim] = static_cast<T>(init);
      for (int64_t j = 0; j < len; ++j) {
        const int64_t v = i[j * i_dim];
        T& x = line[v * o_dim];
        x = static_cast<T>(reduce_combine<C>(r, static_cast<C>(x), static_cast<C>(from[j * s_dim])));
        if (r == Reduce::Mean) ++count[v];
      }
      if (r != Reduce::Mean) return;
      for (int64_t j = 0; j < len; ++j) {
        const int64_t v = i[j * i_dim];
        if (count[v] == 0) continue;
        T& x = line[v * o_dim];
        if constexpr (std::is_integral_v<T>)  // PyTorch floors an integral mean
          x = static_cast<T>(math::floor_divide(static_cast<int64_t>(x), count[v]));
        else
          x = static_cast<T>(static_cast<C>(x) / static_cast<C>(count[v]));
        count[v] = 0;  // divided once
      }
    });
  });
  bad.raise_if_hit(dim, bound);
  return out;
}

}  // namespace

Tensor scatter_add_cpu(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  return scatter_impl(self, dim, index, src, Scalar(), Reduce::Sum, true, "scatter_add");
}

Tensor scatter_src_cpu(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  return scatter_impl(self, dim, index, src, Scalar(), Reduce::None, true, "scatter");
}

Tensor scatter_value_cpu(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value) {
  return scatter_impl(self, dim, index, Tensor(), value, Reduce::None, true, "scatter");
}

Tensor scatter_reduce_cpu(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                          const std::string& reduce) {
  const Reduce r = parse_scatter_reduce(reduce);
  return scatter_impl(self, dim, index, src, Scalar(), r, true, "scatter");
}

Tensor scatter_value_reduce_cpu(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value,
                                const std::string& reduce) {
  const Reduce r = parse_scatter_reduce(reduce);
  return scatter_impl(self, dim, index, Tensor(), value, r, true, "scatter");
}

Tensor scatter_reduce_two_cpu(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                              const std::string& reduce, bool include_self) {
  const Reduce r = parse_scatter_reduce_two(reduce);
  return scatter_impl(self, dim, index, src, Scalar(), r, include_self, "scatter_reduce");
}

}  // namespace ember::cpu
