// mm, bmm and dot on the CPU through OpenBLAS (scipy-openblas32: every symbol
// carries a scipy_ prefix, integers are 32-bit). float16 and bfloat16 go
// through float32; integer dtypes through a blocked C++ kernel (integer_gemm).
// Matrices that are row-major or transposed row-major are handed to BLAS as
// they lie; anything else is made contiguous first.
// ember owns the threading: BLAS always runs single-threaded and products are
// split over ember's OpenMP threads, so one thread pool serves every op.
#include <cblas.h>

#include <climits>
#include <cstring>
#include <string>
#include <type_traits>

#include "ember/blas.h"
#include "ember/blas_layout.h"
#include "ember/parallel.h"
#include "ember/dtype.h"
#include "ember/errors.h"
#include "ember/linalg_checks.h"
#include "ember/ops/_addmm_blas.h"
#include "ember/ops/bmm.h"
#include "ember/ops/contiguous.h"
#include "ember/ops/copy_.h"
#include "ember/ops/dot.h"
#include "ember/ops/expand.h"
#include "ember/ops/mm.h"
#include "ember/ops/mul.h"
#include "ember/ops/to.h"
#include "ember/tensor.h"

namespace ember {

std::string blas_corename() {
  const char* name = scipy_openblas_get_corename();
  return name ? std::string(name) : std::string();
}

namespace cpu {
namespace {

// The C++ type names PyTorch prints in dtype mismatch messages.
const char* cpp_type_name(ScalarType t) {
  switch (t) {
    case ScalarType::Bool: return "bool";
    case ScalarType::UInt8: return "unsigned char";
    case ScalarType::Int8: return "signed char";
    case ScalarType::Int16: return "short int";
    case ScalarType::Int32: return "int";
    case ScalarType::Int64: return "long int";
    case ScalarType::Float16: return "c10::Half";
    case ScalarType::BFloat16: return "c10::BFloat16";
    case ScalarType::Float32: return "float";
    case ScalarType::Float64: return "double";
    default: return "undefined";
  }
}

bool is_half(ScalarType t) { return t == ScalarType::Float16 || t == ScalarType::BFloat16; }

void check_blas_int(int64_t v, const char* op) {
  EMBER_CHECK(v <= INT_MAX, Runtime, op, ": dimension ", v, " is too large for BLAS (32-bit integers)");
}

CBLAS_TRANSPOSE tr(const BlasLayout& m) { return m.trans ? CblasTrans : CblasNoTrans; }

// C = alpha * A @ B + beta * C (beta 0: C is only written).
template <typename T>
void gemm(const BlasLayout& am, const T* a, const BlasLayout& bm, const T* b, T* c, int64_t m, int64_t n, int64_t k,
          int64_t ldc, T alpha = T(1), T beta = T(0)) {
  if constexpr (std::is_same_v<T, float>)
    scipy_cblas_sgemm(CblasRowMajor, tr(am), tr(bm), (blasint)m, (blasint)n, (blasint)k, alpha, a, (blasint)am.ld, b,
                      (blasint)bm.ld, beta, c, (blasint)std::max<int64_t>(ldc, 1));
  else
    scipy_cblas_dgemm(CblasRowMajor, tr(am), tr(bm), (blasint)m, (blasint)n, (blasint)k, alpha, a, (blasint)am.ld, b,
                      (blasint)bm.ld, beta, c, (blasint)std::max<int64_t>(ldc, 1));
}

// One product split over ember's threads: the larger of m and n is cut into
// strips (multiples of 16, the width of the AVX-512 micro-kernels), one
// single-threaded BLAS call per strip.
template <typename T>
void parallel_gemm(const BlasLayout& am, const T* a, const BlasLayout& bm, const T* b, T* c, int64_t m, int64_t n,
                   int64_t k, T alpha = T(1), T beta = T(0)) {
  const bool split_rows = m >= n;
  const int64_t extent = split_rows ? m : n;
  constexpr int64_t W = thresholds::kGemmStripWidth;
  const int64_t strips = std::min<int64_t>(get_num_threads(), std::max<int64_t>(1, extent / W));
  if (strips <= 1 || m * n * k < thresholds::kParallelGemmWork || in_parallel_region()) {
    gemm<T>(am, a, bm, b, c, m, n, k, n, alpha, beta);
    return;
  }
  // Round each strip up to whole micro-kernel widths; strips * per >= extent.
  const int64_t per = ((extent + strips - 1) / strips + W - 1) / W * W;
  parallel_for(strips, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t s = lo; s < hi; ++s) {
      const int64_t begin = s * per, len = std::min(extent, begin + per) - begin;
      if (len <= 0) continue;
      if (split_rows)  // rows [begin, begin+len) of A and C
        gemm<T>(am, a + (am.trans ? begin : begin * am.ld), bm, b, c + begin * n, len, n, k, n, alpha, beta);
      else  // columns [begin, begin+len) of B and C
        gemm<T>(am, a, bm, b + (bm.trans ? begin * bm.ld : begin), c + begin, m, len, k, n, alpha, beta);
    }
  });
}

void zero_fill(const Tensor& t) {
  if (t.numel() > 0) std::memset(t.data_ptr(), 0, (size_t)t.numel() * t.itemsize());
}

Tensor to_float32(const Tensor& t) { return ember::to_dtype(t, ScalarType::Float32, false, false); }

// Integer products wrap around as PyTorch's do: an unsigned accumulator at
// least 32 bits wide (no signed-overflow UB) keeps the low bits exactly.
template <typename T>
using IntAcc = std::conditional_t<(sizeof(T) < 4), uint32_t, std::make_unsigned_t<T>>;

// C[r] = A[r] @ B for the rows r of contiguous [batch, m, k] x [batch, k, n]:
// blocks of kRowBlock rows share each row of B, kColBlock columns keep the
// accumulators in L1; the blocks of rows are split over the threads.
template <typename T>
void integer_gemm(const Tensor& a, const Tensor& b, const Tensor& out) {
  using Acc = IntAcc<T>;
  constexpr int64_t kRowBlock = 4, kColBlock = 512;
  const int64_t m = a.size(1), k = a.size(2), n = b.size(2);
  const int64_t rows = a.size(0) * m;
  const T *pa = a.data<T>(), *pb = b.data<T>();
  T* pc = out.data<T>();
  const int64_t row_blocks = (rows + kRowBlock - 1) / kRowBlock;
  const int64_t grain = std::max<int64_t>(1, thresholds::kParallelGemmWork / std::max<int64_t>(1, kRowBlock * n * k));
  parallel_for(row_blocks, grain, [&](int64_t lo, int64_t hi) {
    Acc acc[kRowBlock][kColBlock];
    for (int64_t blk = lo; blk < hi; ++blk) {
      const int64_t r0 = blk * kRowBlock, nr = std::min(kRowBlock, rows - r0);
      for (int64_t j0 = 0; j0 < n; j0 += kColBlock) {
        const int64_t nc = std::min(kColBlock, n - j0);
        for (int64_t rr = 0; rr < nr; ++rr) std::fill(acc[rr], acc[rr] + nc, Acc(0));
        for (int64_t p = 0; p < k; ++p) {
          for (int64_t rr = 0; rr < nr; ++rr) {
            const int64_t r = r0 + rr;
            const Acc x = (Acc)pa[r * k + p];
            const T* brow = pb + (r / m) * k * n + p * n + j0;
            Acc* dst = acc[rr];
#pragma omp simd
            for (int64_t j = 0; j < nc; ++j) dst[j] += x * (Acc)brow[j];
          }
        }
        for (int64_t rr = 0; rr < nr; ++rr) {
          T* crow = pc + (r0 + rr) * n + j0;
          for (int64_t j = 0; j < nc; ++j) crow[j] = (T)acc[rr][j];
        }
      }
    }
  });
}

// Batched product of [batch, m, k] x [batch, k, n] (both already checked).
Tensor batched_gemm(const Tensor& a_in, const Tensor& b_in, const char* op) {
  const int64_t batch = a_in.size(0), m = a_in.size(1), k = a_in.size(2), n = b_in.size(2);
  Tensor out = empty_tensor({batch, m, n}, a_in.dtype(), a_in.device());
  if (out.numel() == 0) return out;
  if (k == 0) {
    zero_fill(out);
    return out;
  }
  if (!is_floating(a_in.dtype())) {
    Tensor a = ember::contiguous(a_in), b = ember::contiguous(b_in);
    visit_dtype(a.dtype(), [&]<typename T>() {
      if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) integer_gemm<T>(a, b, out);
    });
    return out;
  }
  check_blas_int(m, op);
  check_blas_int(n, op);
  check_blas_int(k, op);
  BlasLayout am, bm;
  Tensor a = blas_operand(a_in, am, INT_MAX);
  Tensor b = blas_operand(b_in, bm, INT_MAX);
  const int64_t sa = a.stride(0), sb = b.stride(0), sc = m * n;
  keep_blas_single_threaded();
  auto run = [&]<typename T>() {
    const T *pa = a.data<T>(), *pb = b.data<T>();
    T* pc = out.data<T>();
    // Many small products, or a batch that splits evenly over the threads (attention's
    // [b*h, q, d] x [b*h, d, k]): whole products per thread, one parallel region for all.
    // Otherwise each product is split over the threads.
    const int64_t threads = get_num_threads();
    if (batch > 1 && (m * n * k <= thresholds::kSmallBatchedProduct || (batch >= threads && batch % threads == 0))) {
      parallel_for(batch, 1, [&](int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i) gemm<T>(am, pa + i * sa, bm, pb + i * sb, pc + i * sc, m, n, k, n);
      });
    } else {
      for (int64_t i = 0; i < batch; ++i) parallel_gemm<T>(am, pa + i * sa, bm, pb + i * sb, pc + i * sc, m, n, k);
    }
  };
  if (a.dtype() == ScalarType::Float32) run.template operator()<float>();
  else run.template operator()<double>();
  return out;
}

}  // namespace

void keep_blas_single_threaded() {
  if (scipy_openblas_get_num_threads() != 1) scipy_openblas_set_num_threads(1);
}
}  // namespace cpu

void check_integer_product_device(const Tensor& self, const char* op) {
  EMBER_CHECK(is_floating(self.dtype()) || self.device().is_cpu(), NotImplemented, op, ": products of ",
              dtype_title(self.dtype()), " tensors are not implemented on ", self.device().str(),
              " (integer products run on the CPU)");
}

void check_mm_args(const Tensor& self, const Tensor& mat2) {
  EMBER_CHECK(self.dim() == 2, Runtime, "self must be a matrix");
  EMBER_CHECK(mat2.dim() == 2, Runtime, "mat2 must be a matrix");
  EMBER_CHECK(self.dtype() == mat2.dtype(), Runtime, "expected m1 and m2 to have the same dtype, but got: ",
              cpu::cpp_type_name(self.dtype()), " != ", cpu::cpp_type_name(mat2.dtype()));
  EMBER_CHECK(self.size(1) == mat2.size(0), Runtime, "mat1 and mat2 shapes cannot be multiplied (", self.size(0), "x",
              self.size(1), " and ", mat2.size(0), "x", mat2.size(1), ")");
  check_integer_product_device(self, "mm");
}

void check_bmm_args(const Tensor& self, const Tensor& mat2) {
  EMBER_CHECK(self.dim() == 3, Runtime, "batch1 must be a 3D tensor");
  EMBER_CHECK(mat2.dim() == 3, Runtime, "batch2 must be a 3D tensor");
  EMBER_CHECK(mat2.size(0) == self.size(0) && mat2.size(1) == self.size(2), Runtime,
              "Expected size for first two dimensions of batch2 tensor to be: [", self.size(0), ", ", self.size(2),
              "] but got: [", mat2.size(0), ", ", mat2.size(1), "].");
  EMBER_CHECK(self.dtype() == mat2.dtype(), Runtime, "expected scalar type ", dtype_title(self.dtype()),
              " but found ", dtype_title(mat2.dtype()));
  check_integer_product_device(self, "bmm");
}

void check_dot_args(const Tensor& self, const Tensor& tensor) {
  EMBER_CHECK(self.dim() == 1 && tensor.dim() == 1, Runtime, "1D tensors expected, but got ", self.dim(), "D and ",
              tensor.dim(), "D tensors");
  EMBER_CHECK(self.dtype() == tensor.dtype(), Runtime, "dot : expected both vectors to have same dtype, but found ",
              dtype_title(self.dtype()), " and ", dtype_title(tensor.dtype()));
  EMBER_CHECK(self.numel() == tensor.numel(), Runtime, "inconsistent tensor size, expected tensor [", self.numel(),
              "] and src [", tensor.numel(), "] to have the same number of elements, but got ", self.numel(), " and ",
              tensor.numel(), " elements respectively");
  check_integer_product_device(self, "dot");
}

namespace cpu {

Tensor mm_cpu(const Tensor& self, const Tensor& mat2) {
  check_mm_args(self, mat2);
  if (is_half(self.dtype())) {
    Tensor r = mm_cpu(to_float32(self), to_float32(mat2));
    return ember::to_dtype(r, self.dtype(), false, false);
  }
  // A 2-D product is a batch of one.
  Tensor a = make_view(self, {1, self.size(0), self.size(1)}, {0, self.stride(0), self.stride(1)}, self.offset());
  Tensor b = make_view(mat2, {1, mat2.size(0), mat2.size(1)}, {0, mat2.stride(0), mat2.stride(1)}, mat2.offset());
  Tensor out = batched_gemm(a, b, "mm");
  return make_view(out, {self.size(0), mat2.size(1)}, {mat2.size(1), 1}, out.offset());
}

// addmm in one BLAS call: C starts as self broadcast to [m, n] and gemm scales it by beta
// while adding alpha * mat1 @ mat2 (addmm takes it for float32/float64 without autograd).
Tensor addmm_blas_cpu(const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta,
                      const Scalar& alpha) {
  check_mm_args(mat1, mat2);
  EMBER_CHECK(self.dtype() == mat2.dtype(), Runtime, "self and mat2 must have the same dtype, but got ",
              dtype_title(self.dtype()), " and ", dtype_title(mat2.dtype()));
  const int64_t m = mat1.size(0), k = mat1.size(1), n = mat2.size(1);
  Tensor out = empty_tensor({m, n}, self.dtype(), self.device());
  ember::copy_(out, ember::expand(self, {m, n}));
  if (out.numel() == 0 || k == 0) {  // no product: beta * self
    if (beta.to_double() != 1.0) ember::mul_(out, wrap_number(Scalar(beta.to_double())));
    return out;
  }
  check_blas_int(m, "addmm");
  check_blas_int(n, "addmm");
  check_blas_int(k, "addmm");
  BlasLayout am, bm;
  Tensor a = blas_operand(mat1, am, INT_MAX);
  Tensor b = blas_operand(mat2, bm, INT_MAX);
  keep_blas_single_threaded();
  auto run = [&]<typename T>() {
    parallel_gemm<T>(am, a.data<T>(), bm, b.data<T>(), out.data<T>(), m, n, k, alpha.to<T>(), beta.to<T>());
  };
  if (out.dtype() == ScalarType::Float32) run.template operator()<float>();
  else run.template operator()<double>();
  return out;
}

Tensor bmm_cpu(const Tensor& self, const Tensor& mat2) {
  check_bmm_args(self, mat2);
  if (is_half(self.dtype())) {
    Tensor r = bmm_cpu(to_float32(self), to_float32(mat2));
    return ember::to_dtype(r, self.dtype(), false, false);
  }
  return batched_gemm(self, mat2, "bmm");
}

Tensor dot_cpu(const Tensor& self, const Tensor& tensor) {
  check_dot_args(self, tensor);
  const int64_t n = self.numel();
  Tensor out = empty_tensor({}, self.dtype(), self.device());
  if (n == 0) {
    zero_fill(out);
    return out;
  }
  if (!is_floating(self.dtype())) {
    visit_dtype(self.dtype(), [&]<typename T>() {
      if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
        const T* x = self.data<T>();
        const T* y = tensor.data<T>();
        const int64_t sx = self.stride(0), sy = tensor.stride(0);
        IntAcc<T> acc = 0;
        for (int64_t i = 0; i < n; ++i) acc += (IntAcc<T>)x[i * sx] * (IntAcc<T>)y[i * sy];
        out.data<T>()[0] = (T)acc;
      }
    });
    return out;
  }
  if (is_half(self.dtype())) {
    // Accumulate in float, round once.
    visit_dtype(self.dtype(), [&]<typename T>() {
      if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
        const T* x = self.data<T>();
        const T* y = tensor.data<T>();
        const int64_t sx = self.stride(0), sy = tensor.stride(0);
        float acc = 0.f;
        for (int64_t i = 0; i < n; ++i) acc += static_cast<float>(x[i * sx]) * static_cast<float>(y[i * sy]);
        out.data<T>()[0] = T(acc);
      }
    });
    return out;
  }
  check_blas_int(n, "dot");
  auto operand = [](const Tensor& t) {
    int64_t s = t.numel() == 1 ? 1 : t.stride(0);
    return (s >= 1 && s <= INT_MAX) ? t : ember::contiguous(t);
  };
  Tensor x = operand(self), y = operand(tensor);
  const blasint incx = (blasint)(n == 1 ? 1 : x.stride(0)), incy = (blasint)(n == 1 ? 1 : y.stride(0));
  if (self.dtype() == ScalarType::Float32)
    out.data<float>()[0] = scipy_cblas_sdot((blasint)n, x.data<float>(), incx, y.data<float>(), incy);
  else
    out.data<double>()[0] = scipy_cblas_ddot((blasint)n, x.data<double>(), incx, y.data<double>(), incy);
  return out;
}

}  // namespace cpu
}  // namespace ember
