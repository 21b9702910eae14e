#pragma once
// Which library runs mm/bmm on CUDA, as the rest of the library and the
// Python bindings see it (plain types; core/cuda_absent.cpp answers without a
// CUDA build). cuBLAS is loaded at run time (aten/src/cuda/cublas_loader.cpp):
// nothing in the build needs its headers or library.
#include <string>
#include <vector>

namespace ember::cuda {

// True when mm/bmm go through cuBLAS: a GPU is present, the library loaded and
// it is not switched off (EMBER_DISABLE_CUBLAS=1 or set_cublas_enabled(false)).
// Never raises; the first call tries to load the library.
bool cublas_available();
// The loaded library's path, or why none is in use. Tries to load it even
// without a GPU (dlopen only), so a missing library is reported cleanly anywhere.
std::string cublas_status();
// Extra directories to search (PyPI's nvidia-cublas); used only before the first load.
void set_cublas_search_dirs(const std::vector<std::string>& dirs);
// Switches cuBLAS off (our tiled kernel runs) or back on, overriding EMBER_DISABLE_CUBLAS.
void set_cublas_enabled(bool enabled);
// Whether cuBLAS may multiply float32 in TF32 (ember.backends.cuda.matmul.allow_tf32,
// off by default as in PyTorch); our own kernel always computes in float32.
void set_allow_tf32(bool allow);
bool allow_tf32();

}  // namespace ember::cuda
