// Winograd F(2x2, 3x3) (Lavin & Gray, 2015): each 2x2 output tile is A^T [(G g G^T) * (B^T d B)] A
// for the 4x4 input tile d under it, summed over input channels; the elementwise product summed
// over channels is, for each of the 16 tile positions, a GEMM over all tiles of a block of images.
#include "conv_winograd.h"

#include <cblas.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <type_traits>

#include "ember/allocator.h"
#include "ember/blas.h"
#include "ember/parallel.h"

namespace ember::cpu {
namespace {

// Tiles one block of images puts in each GEMM at least (as conv.cpp's kMinGemmColumns).
constexpr int64_t kMinTileColumns = 256;

template <typename T>
void gemm_nn(int64_t m, int64_t n, int64_t k, const T* a, const T* b, T* c) {
  if constexpr (std::is_same_v<T, float>)
    scipy_cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)m, (blasint)n, (blasint)k, 1.0f, a,
                      (blasint)k, b, (blasint)n, 0.0f, c, (blasint)n);
  else
    scipy_cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)m, (blasint)n, (blasint)k, 1.0, a,
                      (blasint)k, b, (blasint)n, 0.0, c, (blasint)n);
}

// U[e][o][c] = (G g G^T)[e] for each 3x3 filter g = w[o][c]; G = [1 0 0; .5 .5 .5; .5 -.5 .5; 0 0 1].
template <typename T>
void transform_weights(const T* w, int64_t OC, int64_t C, T* U) {
  for (int64_t o = 0; o < OC; ++o)
    for (int64_t c = 0; c < C; ++c) {
      const T* g = w + (o * C + c) * 9;
      T gg[4][3];  // G g
      for (int j = 0; j < 3; ++j) {
        gg[0][j] = g[j], gg[3][j] = g[6 + j];
        gg[1][j] = T(0.5) * (g[j] + g[3 + j] + g[6 + j]), gg[2][j] = T(0.5) * (g[j] - g[3 + j] + g[6 + j]);
      }
      for (int i = 0; i < 4; ++i) {
        const T u[4] = {gg[i][0], T(0.5) * (gg[i][0] + gg[i][1] + gg[i][2]), T(0.5) * (gg[i][0] - gg[i][1] + gg[i][2]),
                        gg[i][2]};
        for (int j = 0; j < 4; ++j) U[((i * 4 + j) * OC + o) * C + c] = u[j];
      }
    }
}

// Scratch from ember's caching CPU allocator: malloc's fresh 2 MB V and M blocks page-faulted on every call.
template <typename T>
class CachedScratch {
 public:
  explicit CachedScratch(int64_t n) : block_(cpu_allocator()->allocate(sizeof(T) * n, 0)) {}
  ~CachedScratch() {
    if (block_.deleter) block_.deleter(block_.ctx, block_.ptr);
  }
  CachedScratch(const CachedScratch&) = delete;
  CachedScratch& operator=(const CachedScratch&) = delete;
  T* get() const { return static_cast<T*>(block_.ptr); }

 private:
  DataPtr block_;
};

struct Tiles {
  int64_t C, H, W, OC, OH, OW, ph, pw;
  int64_t th, tw, per_image;  // tile rows and columns of one image, th * tw
  int64_t Hp, Wp;             // the zero-bordered copy an image's tiles read: 2 th + 2 by 2 tw + 2
};

// V[e][c][col0 + t] = (B^T d B)[e] for every tile t of one image x (C, H, W);
// B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]. `padded` is the image's bordered copy, `rows`
// scratch of 4 * Wp: B^T along a tile row's 4 input rows first, as whole rows (vector loops).
template <typename T>
void transform_input(const T* x, const Tiles& s, T* padded, T* rows, T* V, int64_t ldv, int64_t col0) {
  for (int64_t c = 0; c < s.C; ++c)
    for (int64_t h = 0; h < s.H; ++h)
      std::memcpy(padded + (c * s.Hp + h + s.ph) * s.Wp + s.pw, x + (c * s.H + h) * s.W, sizeof(T) * s.W);
  const int64_t plane = s.C * ldv, Wp = s.Wp;
  for (int64_t c = 0; c < s.C; ++c)
    for (int64_t a = 0; a < s.th; ++a) {
      const T* r0 = padded + (c * s.Hp + 2 * a) * Wp;
      const T *r1 = r0 + Wp, *r2 = r1 + Wp, *r3 = r2 + Wp;
      T *t0 = rows, *t1 = rows + Wp, *t2 = rows + 2 * Wp, *t3 = rows + 3 * Wp;
#pragma omp simd
      for (int64_t k = 0; k < Wp; ++k)
        t0[k] = r0[k] - r2[k], t1[k] = r1[k] + r2[k], t2[k] = r2[k] - r1[k], t3[k] = r1[k] - r3[k];
      T* v = V + c * ldv + col0 + a * s.tw;
      for (int i = 0; i < 4; ++i) {
        const T* t = rows + i * Wp;
        T *v0 = v + (i * 4) * plane, *v1 = v0 + plane, *v2 = v1 + plane, *v3 = v2 + plane;
#pragma omp simd
        for (int64_t b = 0; b < s.tw; ++b) {
          const T d0 = t[2 * b], d1 = t[2 * b + 1], d2 = t[2 * b + 2], d3 = t[2 * b + 3];
          v0[b] = d0 - d2, v1[b] = d1 + d2, v2[b] = d2 - d1, v3[b] = d1 - d3;
        }
      }
    }
}

// y (OC, OH, OW) of one image from M[e][o][col0 + t]: each tile's A^T m A (A^T = [1 1 1 0; 0 1 -1 -1])
// + bias. `rows` is scratch of 10 * tw: A^T over a tile row's 16 planes, then A per output row.
template <typename T>
void transform_output(const T* M, int64_t ldm, int64_t col0, const Tiles& s, const T* bias, T* rows, T* y) {
  const int64_t plane = s.OC * ldm, tw = s.tw;
  T* out = rows + 8 * tw;  // one output row, 2 tw wide (OW or OW + 1)
  for (int64_t o = 0; o < s.OC; ++o) {
    const T add = bias ? bias[o] : T(0);
    for (int64_t a = 0; a < s.th; ++a) {
      const T* m = M + o * ldm + col0 + a * tw;
      for (int j = 0; j < 4; ++j) {  // rows[j] = (A^T m)[0][j], rows[4 + j] = (A^T m)[1][j]
        const T *m0 = m + j * plane, *m1 = m0 + 4 * plane, *m2 = m1 + 4 * plane, *m3 = m2 + 4 * plane;
        T *u = rows + j * tw, *l = rows + (4 + j) * tw;
#pragma omp simd
        for (int64_t b = 0; b < tw; ++b) u[b] = m0[b] + m1[b] + m2[b], l[b] = m1[b] - m2[b] - m3[b];
      }
      for (int64_t i = 0; i < 2 && 2 * a + i < s.OH; ++i) {  // an odd OH: the last tiles' second row falls outside
        const T *q0 = rows + 4 * i * tw, *q1 = q0 + tw, *q2 = q1 + tw, *q3 = q2 + tw;
#pragma omp simd
        for (int64_t b = 0; b < tw; ++b)
          out[2 * b] = q0[b] + q1[b] + q2[b] + add, out[2 * b + 1] = q1[b] - q2[b] - q3[b] + add;
        std::memcpy(y + (o * s.OH + 2 * a + i) * s.OW, out, sizeof(T) * s.OW);
      }
    }
  }
}

}  // namespace

template <typename T>
void winograd_conv3x3(const T* x, const T* w, const T* bias, T* y, int64_t N, int64_t C, int64_t H, int64_t W,
                      int64_t OC, int64_t ph, int64_t pw) {
  Tiles s{C, H, W, OC, H + 2 * ph - 2, W + 2 * pw - 2, ph, pw, 0, 0, 0, 0, 0};
  s.th = (s.OH + 1) / 2, s.tw = (s.OW + 1) / 2, s.per_image = s.th * s.tw;
  s.Hp = 2 * s.th + 2, s.Wp = 2 * s.tw + 2;  // >= H + 2ph, W + 2pw: the border and an odd size's extra row
  auto U = std::make_unique_for_overwrite<T[]>(16 * OC * C);
  transform_weights(w, OC, C, U.get());
  const int64_t images = std::clamp<int64_t>((kMinTileColumns + s.per_image - 1) / s.per_image, 1, N);
  const int64_t blocks = (N + images - 1) / images;
  parallel_for(blocks, 1, [&](int64_t lo, int64_t hi) {
    const int64_t ld = images * s.per_image;
    auto padded = std::make_unique<T[]>(C * s.Hp * s.Wp);  // zeroed once: the border stays zero
    CachedScratch<T> V(16 * C * ld), M(16 * OC * ld);
    auto rows = std::make_unique_for_overwrite<T[]>(std::max(4 * s.Wp, 10 * s.tw));
    for (int64_t blk = lo; blk < hi; ++blk) {
      const int64_t n0 = blk * images, nb = std::min(images, N - n0), cols = nb * s.per_image;
      for (int64_t b = 0; b < nb; ++b)
        transform_input(x + (n0 + b) * C * H * W, s, padded.get(), rows.get(), V.get(), cols, b * s.per_image);
      for (int64_t e = 0; e < 16; ++e)
        gemm_nn<T>(OC, cols, C, U.get() + e * OC * C, V.get() + e * C * cols, M.get() + e * OC * cols);
      for (int64_t b = 0; b < nb; ++b)
        transform_output(M.get(), cols, b * s.per_image, s, bias, rows.get(), y + (n0 + b) * OC * s.OH * s.OW);
    }
  });
}

template void winograd_conv3x3<float>(const float*, const float*, const float*, float*, int64_t, int64_t, int64_t,
                                      int64_t, int64_t, int64_t, int64_t);
template void winograd_conv3x3<double>(const double*, const double*, const double*, double*, int64_t, int64_t,
                                       int64_t, int64_t, int64_t, int64_t, int64_t);

}  // namespace ember::cpu
