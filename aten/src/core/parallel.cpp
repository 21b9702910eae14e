#include "ember/parallel.h"

namespace ember {

static int g_num_threads = 0;

int get_num_threads() {
  if (g_num_threads <= 0) g_num_threads = omp_get_max_threads();
  return g_num_threads;
}

void set_num_threads(int n) {
  g_num_threads = n > 0 ? n : 1;
  omp_set_num_threads(g_num_threads);
}

}  // namespace ember
