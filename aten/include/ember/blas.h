#pragma once
// The BLAS ember links (OpenBLAS from PyPI's scipy-openblas32), for
// introspection from C++ and the Python bindings (ember keeps it single-threaded).
#include <string>

namespace ember {

// The CPU kernel family OpenBLAS picked at load time ("Haswell", "SkylakeX", ...).
std::string blas_corename();

namespace cpu {
// OpenBLAS's own thread pool would compete with ember's OpenMP threads (a ctypes caller of the
// same library, or its first load, may have raised its count): every kernel calling BLAS or
// LAPACK calls this first, and runs its calls one per ember thread.
void keep_blas_single_threaded();
}  // namespace cpu

}  // namespace ember
