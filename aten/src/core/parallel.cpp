#include "ember/parallel.h"

#include <atomic>

#include "ember/errors.h"

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
  EMBER_CHECK(n > 0, Runtime, "set_num_threads expects a positive integer");
  g_num_threads.store(n, std::memory_order_relaxed);
  omp_set_num_threads(n);
}

}  // namespace ember
