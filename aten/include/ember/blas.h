#pragma once
// The BLAS ember links (OpenBLAS from PyPI's scipy-openblas32), for
// introspection and thread control from C++ and the Python bindings.
#include <string>

namespace ember {

// The CPU kernel family OpenBLAS picked at load time ("Haswell", "SkylakeX", ...).
std::string blas_corename();
// OpenBLAS's own thread pool (separate from ember's OpenMP threads).
int blas_num_threads();
void blas_set_num_threads(int n);

}  // namespace ember
