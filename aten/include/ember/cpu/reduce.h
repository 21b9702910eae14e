#pragma once
// The CPU reduction engine. Outputs start at `init`; every input element is
// combined into the output element it maps to. Float sums must not grow their
// error with the length (1e7 float32 values sum within 1e-5 of float64), so no
// accumulator ever takes a long run of sequential combines, on any layout:
//   - a reduced inner dim (contiguous, strided or expanded) is summed pairwise
//     over blocks of many independent accumulators (`horizontal`);
//   - a reduced outer dim is walked in groups of a few items, and the group
//     partials are combined through a cascade of levels (`cascade`), as
//     PyTorch's cascade_sum does.
// Work is split over threads along the largest kept dim, or, when the kept dims
// are too small, along a reduced dim with per-thread partials combined in a
// fixed order. The arithmetic is a ReduceOps: `reduce` folds an input element
// into an accumulator, `merge` joins two accumulators (both are `combine` for
// the generated reductions; var's Welford state differs from its input).
#include <memory>
#include <type_traits>
#include <vector>
#include "ember/cpu/loops.h"
#include "ember/reduce.h"

namespace ember::cpu {

namespace reduce_detail {
// At most this many sequential combines go into one accumulator before a
// cascade level takes over; each level combines this many partials.
constexpr int64_t kLeaf = 16;

// A growable array that keeps its contents (std::vector<bool> has no data()).
// A copy starts empty: each thread's copy of a reduction grows its own.
template <typename T>
class Scratch {
 public:
  Scratch() = default;
  Scratch(const Scratch&) {}
  T* data() { return p_.get(); }
  void reserve(size_t n) {
    if (n <= n_) return;
    std::unique_ptr<T[]> q(new T[n]);
    std::copy(p_.get(), p_.get() + n_, q.get());
    p_ = std::move(q);
    n_ = n;
  }

 private:
  std::unique_ptr<T[]> p_;
  size_t n_ = 0;
};
}  // namespace reduce_detail

template <typename AccT, typename InT, typename Reduce, typename Merge>
struct ReduceOps {
  using Acc = AccT;
  using In = InT;
  Acc init;
  Reduce reduce;  // (Acc, In) -> Acc
  Merge merge;    // (Acc, Acc) -> Acc
};

// The ops of a reduction whose accumulator is its element type (sum, max, ...).
template <typename T, typename C>
ReduceOps<T, T, C, C> same_type_ops(T init, C combine) {
  return {init, combine, combine};
}

// Reduces n input elements `stride` bytes apart, pairwise over blocks.
template <typename Ops>
typename Ops::Acc horizontal(const Ops& ops, const char* in, int64_t stride, int64_t n) {
  using Acc = typename Ops::Acc;
  using In = typename Ops::In;
  constexpr int L = thresholds::kReduceAccumulators;
  constexpr int64_t kBlock = thresholds::kReduceBlock;
  if (n > kBlock) {
    // Left half first: argument order is unspecified, and a backward walk over
    // memory defeats the prefetcher (1e7 float32 sums took 1.5x as long).
    const int64_t half = thresholds::pairwise_split(n);
    const Acc left = horizontal(ops, in, stride, half);
    return ops.merge(left, horizontal(ops, in + half * stride, stride, n - half));
  }
  if constexpr (requires(const In* p) { ops.reduce.block(p, n); }) {
    // The ops reduce a contiguous block better themselves (var: two passes in cache).
    if (stride == (int64_t)sizeof(In)) return ops.reduce.block(reinterpret_cast<const In*>(in), n);
  }
  if (n < L) {  // too short for the accumulators to pay (small reductions' overhead)
    Acc acc = ops.init;
    for (int64_t i = 0; i < n; ++i) acc = ops.reduce(acc, *reinterpret_cast<const In*>(in + i * stride));
    return acc;
  }
  Acc acc[L];
  for (int l = 0; l < L; ++l) acc[l] = ops.init;
  int64_t i = 0;
  if (stride == (int64_t)sizeof(In)) {
    const In* __restrict x = reinterpret_cast<const In*>(in);
    for (; i + L <= n; i += L) {
#pragma omp simd
      for (int l = 0; l < L; ++l) acc[l] = ops.reduce(acc[l], x[i + l]);
    }
    // A pointer walk: gcc cannot bound an index here and warns it could overflow.
    for (const In *p = x + i, *end = x + n; p < end; ++p) acc[0] = ops.reduce(acc[0], *p);
  } else {
    for (; i + L <= n; i += L)
      for (int l = 0; l < L; ++l) acc[l] = ops.reduce(acc[l], *reinterpret_cast<const In*>(in + (i + l) * stride));
    for (; i < n; ++i) acc[0] = ops.reduce(acc[0], *reinterpret_cast<const In*>(in + i * stride));
  }
  for (int w = L / 2; w > 0; w /= 2)
    for (int l = 0; l < w; ++l) acc[l] = ops.merge(acc[l], acc[l + w]);
  return acc[0];
}

// Folds n input elements (`istride` bytes apart) into accumulators `ostride`
// bytes apart, or all into one (ostride 0: pairwise).
template <typename Ops>
void reduce_run(const Ops& ops, char* out, int64_t ostride, const char* in, int64_t istride, int64_t n) {
  using T = typename Ops::Acc;
  using In = typename Ops::In;
  if (ostride == 0) {
    T& o = *reinterpret_cast<T*>(out);
    o = ops.merge(o, horizontal(ops, in, istride, n));
  } else if (ostride == (int64_t)sizeof(T) && istride == (int64_t)sizeof(In)) {
    T* __restrict o = reinterpret_cast<T*>(out);
    const In* __restrict x = reinterpret_cast<const In*>(in);
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) o[i] = ops.reduce(o[i], x[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) {
      T& o = *reinterpret_cast<T*>(out + i * ostride);
      o = ops.reduce(o, *reinterpret_cast<const In*>(in + i * istride));
    }
  }
}

// One reduction as the walk sees it: the iterator's dims (fastest first), byte
// strides of the accumulators (0 along reduced dims) and of the input. The
// iterator's operand 0 only lays out the outputs: `out` holds one Acc each.
template <typename Ops>
class CpuReduction {
  using T = typename Ops::Acc;
  using In = typename Ops::In;

 public:
  CpuReduction(const TensorIterator& it, const Ops& ops, T* out)
      : ops_(ops), nd_(it.ndim()), shape_(it.shape()), os_(it.strides(0)), is_(it.strides(1)),
        out_(reinterpret_cast<char*>(out)), in_(it.data(1)) {
    const int64_t item = (int64_t)it.operand(0).itemsize();
    for (int d = 0; d < nd_; ++d) os_[d] = os_[d] / item * (int64_t)sizeof(T);
  }

  int ndim() const { return nd_; }
  int64_t size(int d) const { return shape_[d]; }
  bool reduced(int d) const { return os_[d] == 0; }

  // Narrows dim d to [begin, end) (a thread's share).
  void narrow(int d, int64_t begin, int64_t end) {
    out_ += begin * os_[d];
    in_ += begin * is_[d];
    shape_[d] = end - begin;
  }
  // Writes into `out` (laid out as the output) instead of the output.
  void redirect(char* out) { out_ = out; }

  void run() {
    if (nd_ == 0) {
      T& o = *reinterpret_cast<T*>(out_);
      o = ops_.reduce(o, *reinterpret_cast<const In*>(in_));
      return;
    }
    for (int d = 0; d < nd_; ++d)
      if (shape_[d] == 0) return;
    plan();
    walk(nd_ - 1, out_, os_.data(), in_);
  }

 private:
  // Per dim: `seq` = sequential combines one accumulator takes over dims 0..d
  // (the inner reduced run counts once: it is pairwise); compact strides `cs`
  // of the kept dims, and `width` = kept elements below d, for cascade buffers.
  void plan() {
    seq_.resize(nd_);
    cs_.resize(nd_);
    width_.resize(nd_ + 1);
    int64_t seq = 1, width = 1;
    for (int d = 0; d < nd_; ++d) {
      width_[d] = width;
      cs_[d] = reduced(d) ? 0 : width * (int64_t)sizeof(T);
      if (!reduced(d)) width *= shape_[d];
      else if (d > 0) seq = shape_[d] > reduce_detail::kLeaf / seq ? 1 : seq * shape_[d];
      seq_[d] = seq;
    }
    width_[nd_] = width;
  }
  bool cascades(int d) const { return d > 0 && reduced(d) && shape_[d] > reduce_detail::kLeaf / seq_[d - 1]; }

  // Reduces dims 0..d into `out`, whose dims have byte strides `ostr`.
  void walk(int d, char* out, const int64_t* ostr, const char* in) {
    if (d == 0) return inner(out, ostr[0], in);
    if (cascades(d)) return cascade(d, out, ostr, in);
    for (int64_t i = 0; i < shape_[d]; ++i) walk(d - 1, out + i * ostr[d], ostr, in + i * is_[d]);
  }

  void inner(char* out, int64_t ostride, const char* in) { reduce_run(ops_, out, ostride, in, is_[0], shape_[0]); }

  // Items of reduced dim d go, a group at a time, into a compact buffer of the
  // kept dims below d; group partials climb levels of kLeaf, then meet `out`.
  void cascade(int d, char* out, const int64_t* ostr, const char* in) {
    using reduce_detail::kLeaf;
    const int64_t w = width_[d], n = shape_[d];
    const int64_t group = std::max<int64_t>(1, kLeaf / seq_[d - 1]);
    if (scratch_.size() < (size_t)nd_) scratch_.resize(nd_);  // only cascades need it
    reduce_detail::Scratch<T>& buf = scratch_[d];
    int64_t filled[64];  // partials held by levels 1.. (16^64 items never come)
    size_t levels = 0;
    auto level = [&](size_t l) { return buf.data() + l * w; };
    auto fill = [&](size_t l) { std::fill(level(l), level(l) + w, ops_.init); };
    auto add = [&](size_t dst, size_t src) {
      T* __restrict a = level(dst);
      const T* __restrict b = level(src);
#pragma omp simd
      for (int64_t i = 0; i < w; ++i) a[i] = ops_.merge(a[i], b[i]);
    };
    buf.reserve(w);
    fill(0);
    for (int64_t i = 0; i < n; i += group) {
      const int64_t e = std::min(n, i + group);
      if (rows_of_columns(d)) rows_into(level(0), in + i * is_[d], is_[d], e - i);
      else
        for (int64_t j = i; j < e; ++j) walk(d - 1, reinterpret_cast<char*>(level(0)), cs_.data(), in + j * is_[d]);
      // Carry the group up: a level holding kLeaf partials passes them on.
      size_t l = 1;
      for (; l <= levels && filled[l - 1] + 1 == kLeaf; ++l) {
        add(l, 0);
        filled[l - 1] = 0;
        std::copy(level(l), level(l) + w, level(0));
        fill(l);
      }
      if (l > levels) {
        filled[levels++] = 0;
        buf.reserve((levels + 1) * w);
        fill(l);
      }
      add(l, 0);
      ++filled[l - 1];
      fill(0);
    }
    for (size_t l = 2; l <= levels; ++l) add(1, l);
    combine_into(d - 1, out, ostr, reinterpret_cast<const char*>(level(1)));
  }

  // Column sums of a row-major matrix (the reduced dim 1 over contiguous kept columns, as bias gradients):
  // rows_into folds rows four at a time, so the accumulators are read and written once per four rows,
  // not per row (that traffic bounded the loop). Same-type ops only: merging Welford states costs more.
  bool rows_of_columns(int d) const {
    return std::is_same_v<T, In> && d == 1 && !reduced(0) && is_[0] == (int64_t)sizeof(In) &&
           cs_[0] == (int64_t)sizeof(T);
  }
  void rows_into(T* __restrict acc, const char* in, int64_t rstride, int64_t rows) {
    const int64_t w = shape_[0];
    int64_t r = 0;
    for (; r + 4 <= rows; r += 4) {
      const In* __restrict x0 = reinterpret_cast<const In*>(in + r * rstride);
      const In* __restrict x1 = reinterpret_cast<const In*>(in + (r + 1) * rstride);
      const In* __restrict x2 = reinterpret_cast<const In*>(in + (r + 2) * rstride);
      const In* __restrict x3 = reinterpret_cast<const In*>(in + (r + 3) * rstride);
#pragma omp simd
      for (int64_t k = 0; k < w; ++k) {
        const T a = ops_.reduce(ops_.reduce(ops_.init, x0[k]), x1[k]);
        const T b = ops_.reduce(ops_.reduce(ops_.init, x2[k]), x3[k]);
        acc[k] = ops_.merge(acc[k], ops_.merge(a, b));
      }
    }
    for (; r < rows; ++r) reduce_run(ops_, reinterpret_cast<char*>(acc), sizeof(T), in + r * rstride, sizeof(In), w);
  }

  // out[kept index] = combine(out, src[kept index]) over the kept dims 0..d.
  void combine_into(int d, char* out, const int64_t* ostr, const char* src) {
    if (d < 0) {
      T& o = *reinterpret_cast<T*>(out);
      o = ops_.merge(o, *reinterpret_cast<const T*>(src));
      return;
    }
    if (reduced(d)) return combine_into(d - 1, out, ostr, src);
    for (int64_t i = 0; i < shape_[d]; ++i) combine_into(d - 1, out + i * ostr[d], ostr, src + i * cs_[d]);
  }

  Ops ops_;
  int nd_;
  DimVector shape_, os_, is_, seq_, cs_, width_;
  char* out_;
  const char* in_;
  std::vector<reduce_detail::Scratch<T>> scratch_;  // per dim, the cascade's levels
};

// Reduces the iterator's input into out[nout] (accumulators laid out as its
// operand 0, already holding ops.init), on ember's threads.
template <typename Ops>
void run_reduction(const TensorIterator& it, const Ops& ops, typename Ops::Acc* out, int64_t nout) {
  using Acc = typename Ops::Acc;
  const int threads = get_num_threads();
  const bool serial = it.numel() < thresholds::kGrainSize * 2 || threads == 1 || in_parallel_region();
  if (serial && it.ndim() == 1) {
    // One dim (most small reductions, after coalescing): no walk to plan.
    const int64_t ostride = it.strides(0)[0] / (int64_t)it.operand(0).itemsize() * (int64_t)sizeof(Acc);
    reduce_run(ops, reinterpret_cast<char*>(out), ostride, it.data(1), it.strides(1)[0], it.shape()[0]);
    return;
  }
  CpuReduction<Ops> whole(it, ops, out);
  if (serial) {
    whole.run();
    return;
  }
  // The largest kept and reduced dims. Kept dims split cleanly (each thread
  // owns its outputs) when there are enough of them to go round.
  int kept = -1, red = -1;
  for (int d = 0; d < whole.ndim(); ++d) {
    int& best = whole.reduced(d) ? red : kept;
    if (best < 0 || whole.size(d) > whole.size(best)) best = d;
  }
  const int64_t enough = kept == 0 ? 64 * threads : 4 * threads;  // inner columns: a few cache lines each
  if (kept >= 0 && (whole.size(kept) >= enough || red < 0)) {
    parallel_for(whole.size(kept), 1, [&](int64_t b, int64_t e) {
      CpuReduction<Ops> part = whole;
      part.narrow(kept, b, e);
      part.run();
    });
    return;
  }
  // Few outputs: each thread reduces a range of `red` into its own copy of
  // the outputs; the copies are merged in thread order.
  reduce_detail::Scratch<Acc> partial;
  partial.reserve((size_t)threads * nout);
  std::fill(partial.data(), partial.data() + (size_t)threads * nout, ops.init);
  std::vector<char> used(threads, 0);
  parallel_for(whole.size(red), 1, [&](int64_t b, int64_t e) {
    const int t = omp_get_thread_num();
    CpuReduction<Ops> part = whole;
    part.redirect(reinterpret_cast<char*>(partial.data() + (size_t)t * nout));
    part.narrow(red, b, e);
    part.run();
    used[t] = 1;
  });
  for (int t = 0; t < threads; ++t) {
    if (!used[t]) continue;
    const Acc* p = partial.data() + (size_t)t * nout;
    for (int64_t i = 0; i < nout; ++i) out[i] = ops.merge(out[i], p[i]);
  }
}

template <typename T, typename C>
void reduce_kernel(ReduceIterator& r, T init, C combine) {
  T* out = r.output.data<T>();
  const int64_t nout = r.output.numel();
  for (int64_t i = 0; i < nout; ++i) out[i] = init;
  run_reduction(TensorIterator::reduction(r.output, r.input), same_type_ops(init, combine), out, nout);
}

}  // namespace ember::cpu
