#pragma once
// The BLAS ember links (OpenBLAS from PyPI's scipy-openblas32), for
// introspection from C++ and the Python bindings (ember keeps it single-threaded).
#include <string>

namespace ember {

// The CPU kernel family OpenBLAS picked at load time ("Haswell", "SkylakeX", ...).
std::string blas_corename();

}  // namespace ember
