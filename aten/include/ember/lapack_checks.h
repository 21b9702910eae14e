#pragma once
// Argument checks and LinAlgError reporting shared by the LAPACK kernels (aten/src/cpu/lapack.cpp)
// and the linalg composites, worded as PyTorch's.
#include "ember/tensor.h"

namespace ember {

// A (batch of) float32/float64 matrices, square when `square`. A float16/bfloat16 input raises
// PyTorch's NotImplementedError `"<half_kernel>" not implemented for 'Half'`, or, without a
// half_kernel, its RuntimeError "<op>: Low precision dtypes not supported. Got Half".
void check_lapack_input(const Tensor& A, const char* op, const char* half_kernel, bool square = true);

// What a nonzero LAPACK info means for an op.
// ZeroPivot: LU's U[i, i] is zero (lu_factor's wording, the factors are still returned).
enum class LapackFailure { Singular, NotPositiveDefinite, ZeroPivot };

// Raises LinAlgError for the first nonzero entry of `info` (one per matrix): "<op>: (Batch
// element k): <what>", the batch part only for a batched input.
void raise_lapack_failure(const Tensor& info, bool batched, const char* op, LapackFailure what);

}  // namespace ember
