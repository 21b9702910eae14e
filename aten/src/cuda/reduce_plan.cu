// Host planning for the CUDA reductions (see ember/cuda/reduce_plan.h).
#include "ember/cuda/reduce_plan.h"

#include <algorithm>
#include <atomic>
#include <limits>
#include <vector>

#include "ember/cuda/runtime.h"
#include "ember/errors.h"

namespace ember::cuda::reduction {

namespace {

struct DimInfo {
  int64_t size, in_stride, out_stride;
};

// Order of dims by memory distance: stride 0 (broadcast) costs no traffic, so it sorts last.
int64_t stride_key(int64_t s) {
  if (s == 0) return std::numeric_limits<int64_t>::max();
  return s < 0 ? -s : s;
}

int64_t pow2_at_least(int64_t n) {
  int64_t p = 1;
  while (p < n) p <<= 1;
  return p;
}

// `dims` fastest first; merges neighbours that step through memory (and the
// output) as one dim would.
DimGroup build_group(const std::vector<DimInfo>& dims, const char* name) {
  DimGroup g{};
  g.count = 1;
  for (const DimInfo& d : dims) g.count *= d.size;
  if (g.count == 0) return g;  // nothing to visit: no dims
  std::vector<DimInfo> merged;
  for (const DimInfo& d : dims) {
    if (!merged.empty()) {
      DimInfo& inner = merged.back();
      if (d.in_stride == inner.in_stride * inner.size && d.out_stride == inner.out_stride * inner.size) {
        inner.size *= d.size;
        continue;
      }
    }
    merged.push_back(d);
  }
  EMBER_CHECK(merged.size() <= (size_t)kMaxDims, Runtime, name, ": the CUDA reduction supports at most ", kMaxDims,
              " dims after coalescing, got ", merged.size());
  g.ndim = (int)merged.size();
  g.wide = g.count > (int64_t)std::numeric_limits<int32_t>::max();
  for (int i = 0; i < g.ndim; ++i) {
    g.sizes[i] = merged[i].size;
    g.in_strides[i] = merged[i].in_stride;
    g.out_strides[i] = merged[i].out_stride;
    if (!g.wide) g.div[i].init((uint32_t)merged[i].size);
  }
  return g;
}

int sm_count(int device) {
  static std::atomic<int> cache[64];
  std::atomic<int>* slot = device >= 0 && device < 64 ? &cache[device] : nullptr;
  int n = slot ? slot->load(std::memory_order_relaxed) : 0;
  if (n == 0) {
    EMBER_CUDA_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device));
    if (slot) slot->store(n, std::memory_order_relaxed);
  }
  return std::max(n, 1);
}

}  // namespace

Geometry make_geometry(const Tensor& input, const int64_t* out_strides, const DimVector& reduced_mask,
                       const char* name) {
  std::vector<DimInfo> kept, reduced;
  // Row-major: the last dim is the fastest; size-1 dims take no part.
  for (int64_t d = input.dim() - 1; d >= 0; --d) {
    const int64_t size = input.sizes()[d];
    if (size == 1) continue;
    if (reduced_mask[d]) reduced.push_back({size, input.strides()[d], 0});
    else kept.push_back({size, input.strides()[d], out_strides[d]});
  }
  auto by_stride = [](const DimInfo& a, const DimInfo& b) { return stride_key(a.in_stride) < stride_key(b.in_stride); };
  std::stable_sort(kept.begin(), kept.end(), by_stride);
  std::stable_sort(reduced.begin(), reduced.end(), by_stride);
  return {build_group(kept, name), build_group(reduced, name)};
}

Plan make_plan(const Geometry& g, const void* input, int in_size, int acc_size, int vec_width, int device) {
  const DimGroup& kept = g.kept;
  const DimGroup& red = g.reduced;
  const int64_t outputs = kept.count, R = red.count;
  Plan p{};
  // Rows when the reduced index is the one that walks memory most closely.
  p.rows = red.ndim > 0 && (kept.ndim == 0 || stride_key(red.in_strides[0]) <= stride_key(kept.in_strides[0]));
  p.vec = 1;
  int64_t bx, by, grid_x, min_chunk, step;
  if (p.rows) {
    bool aligned = vec_width > 1 && red.ndim == 1 && red.in_strides[0] == 1 &&
                   reinterpret_cast<uintptr_t>(input) % (uintptr_t)(vec_width * in_size) == 0;
    for (int d = 0; d < kept.ndim && aligned; ++d) aligned = kept.in_strides[d] % vec_width == 0;
    if (aligned) p.vec = vec_width;
    // About four loads per thread before the range is split over more threads.
    bx = std::min<int64_t>(pow2_at_least(ceil_div(R, 4 * p.vec)), kMaxThreads);
    by = bx >= 256 ? 1 : std::min<int64_t>(256 / bx, pow2_at_least(outputs));
    if (bx * by < 32) by = 32 / bx;  // whole warps: the row combine shuffles with a full mask
    grid_x = ceil_div(outputs, by);
    step = bx * p.vec;
    min_chunk = step * 8;
  } else {
    bx = std::min<int64_t>(pow2_at_least(outputs), 32);
    by = std::min<int64_t>(pow2_at_least(std::max<int64_t>(R, 1)), kMaxThreads / bx);
    if (bx * by < 256) bx = std::min<int64_t>(pow2_at_least(outputs), 256 / by);
    grid_x = ceil_div(outputs, bx);
    step = by;
    min_chunk = by * 8;
  }
  EMBER_CHECK(grid_x <= (int64_t)std::numeric_limits<int32_t>::max(), Runtime,
              "CUDA reduction: too many output elements (", outputs, ")");
  // Too few blocks to fill the GPU and a long reduced range: split the range,
  // into at most one wave of blocks (a partial second wave would idle SMs).
  const int64_t resident_blocks =
      std::max<int64_t>(1, (int64_t)sm_count(device) * kMinBlocksPerSM * kMaxThreads / (bx * by));
  int64_t splits = 1;
  if (grid_x < resident_blocks && R >= 2 * min_chunk)
    splits = std::max<int64_t>(1, std::min({resident_blocks / grid_x, R / min_chunk, (int64_t)65535}));
  p.chunk = std::max<int64_t>(ceil_div(ceil_div(R, splits), step) * step, step);
  splits = std::max<int64_t>(1, ceil_div(R, p.chunk));
  p.block_x = (int)bx;
  p.block_y = (int)by;
  p.grid_x = (unsigned)grid_x;
  p.splits = (unsigned)splits;
  if (p.rows) p.smem = bx > 32 ? (size_t)(by * (bx / 32)) * acc_size : 0;
  else p.smem = (size_t)(bx * by) * acc_size;
  return p;
}

Geometry partial_geometry(const Geometry& g, unsigned splits) {
  // Partials are contiguous in the kept group's index order, one block of
  // them per split; the outputs stay where they were.
  std::vector<DimInfo> kept;
  int64_t stride = 1;
  for (int d = 0; d < g.kept.ndim; ++d) {
    kept.push_back({g.kept.sizes[d], stride, g.kept.out_strides[d]});
    stride *= g.kept.sizes[d];
  }
  std::vector<DimInfo> reduced;
  if (splits > 1) reduced.push_back({(int64_t)splits, g.kept.count, 0});
  return {build_group(kept, "reduction"), build_group(reduced, "reduction")};
}

}  // namespace ember::cuda::reduction
