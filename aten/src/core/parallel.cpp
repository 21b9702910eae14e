#include "ember/parallel.h"

#include "ember/errors.h"

namespace ember {

static int g_num_threads = 0;

int get_num_threads() {
  if (g_num_threads <= 0) g_num_threads = omp_get_max_threads();
  return g_num_threads;
}

void set_num_threads(int n) {
  EMBER_CHECK(n > 0, Runtime, "set_num_threads expects a positive integer");
  g_num_threads = n;
  omp_set_num_threads(g_num_threads);
}

}  // namespace ember
