#pragma once
// The sizes at which CPU kernels change path (serial -> parallel, one BLAS
// call -> strips, ...). Tests read them through ember._C._thresholds() so
// that they probe shapes on both sides of each, whatever the values become.
#include <cstdint>

namespace ember::thresholds {

// Elements per OpenMP chunk for pointwise loops; below it an op runs serially.
constexpr int64_t kGrainSize = 32768;
// A GEMM below this many multiply-adds runs as one single-threaded BLAS call.
constexpr int64_t kParallelGemmWork = int64_t(1) << 18;
// Strips of a split GEMM are multiples of this (the AVX-512 micro-kernel width).
constexpr int64_t kGemmStripWidth = 16;
// bmm products up to this many multiply-adds run one product per thread.
constexpr int64_t kSmallBatchedProduct = int64_t(1) << 22;
// Contiguous reductions: elements per block of 16 vector accumulators.
constexpr int64_t kReduceBlock = 2048;
constexpr int kReduceAccumulators = 16;
// Where a pairwise sum of n > kReduceBlock elements splits: at a whole block
// near the middle, so every leaf is one full block but the last.
constexpr int64_t pairwise_split(int64_t n) { return (n / 2 + kReduceBlock - 1) / kReduceBlock * kReduceBlock; }
// Python bindings run an op with the GIL released when its tensors hold at
// least this many elements (a factory: when it makes that many), so other
// Python threads run meanwhile; below it the release would cost more than it frees.
constexpr int64_t kGilReleaseWork = int64_t(1) << 16;

// sort: lines up to this long are insertion-sorted (a radix sort's histograms cost more).
constexpr int64_t kSortInsertionMax = 48;
// topk: a line is split across threads from this length; shorter ones run serially
// (a serial topk reads ~1e6 float32 a millisecond, less than a parallel region can
// cost on a busy machine).
constexpr int64_t kTopkSplitLine = 64 * kGrainSize;
// topk: up to this k, each line keeps its best k sorted by insertion (cheap for short
// rows); larger k collect candidates in a buffer cut back with nth_element.
constexpr int64_t kTopkSmallK = 16;

}  // namespace ember::thresholds
