#pragma once
// OpenMP over index ranges, used only above a grain size so small ops stay serial.
#include <algorithm>
#include <cstdint>
#include <omp.h>
#include "ember/thresholds.h"

namespace ember {

using thresholds::kGrainSize;

int get_num_threads();
void set_num_threads(int n);
inline bool in_parallel_region() { return omp_in_parallel(); }

// Calls f(begin, end) on contiguous chunks of [0, n), one per thread.
template <typename F>
void parallel_for(int64_t n, int64_t grain, F&& f) {
  if (n <= 0) return;
  int nthreads = get_num_threads();
  if (n <= grain || nthreads == 1 || omp_in_parallel()) { f((int64_t)0, n); return; }
  int64_t chunks = std::min<int64_t>(nthreads, (n + grain - 1) / grain);
#pragma omp parallel num_threads((int)chunks)
  {
    int64_t tid = omp_get_thread_num(), nt = omp_get_num_threads();
    int64_t per = (n + nt - 1) / nt;
    int64_t b = tid * per, e = std::min(n, b + per);
    if (b < e) f(b, e);
  }
}

}  // namespace ember
