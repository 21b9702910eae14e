#include "ember/parallel.h"

#include <atomic>

namespace ember {

// Read by ops running on several Python threads at once (the GIL is released around them).
static std::atomic<int> g_num_threads{0};

int get_num_threads() {
  int n = g_num_threads.load(std::memory_order_relaxed);
  if (n <= 0) {
    n = omp_get_max_threads();
    g_num_threads.store(n, std::memory_order_relaxed);
  }
  return n;
}

void set_num_threads(int n) {
  n = n > 0 ? n : 1;
  g_num_threads.store(n, std::memory_order_relaxed);
  omp_set_num_threads(n);
}

}  // namespace ember
