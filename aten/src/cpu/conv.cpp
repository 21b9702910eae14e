// 2-D convolution on the CPU: per-image im2col + single-threaded OpenBLAS GEMM (in
// bands of output rows that keep a large image's patches in L2), images (and groups)
// spread over ember's OpenMP threads. Measured against
// oneDNN (torch 2.13) in /work/spike_conv before choosing: this wins or ties on
// the LeNet and ResNet shapes, and keeps one thread pool. Three kernels, each
// linear in both its tensor inputs, so each one's gradient is one of the others:
//   _conv_forward          y  = conv(x, w) + b
//   _conv_backward_input   gx = conv_transpose(gy, w)   (also conv_transpose2d's forward)
//   _conv_backward_weight  gw = correlation of gy with x
// Small outputs (LeNet's 8x8) put several images side by side in one GEMM so
// BLAS gets wide enough matrices; 1x1 stride-1 unpadded kernels skip im2col. Wide 3x3
// stride-1 layers run Winograd (conv_winograd.cpp); stride-1 input gradients usually run
// as forward convolutions with the flipped weight (backward_input_as_forward).
#include <cblas.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "conv_winograd.h"
#include "ember/blas.h"
#include "ember/dtype.h"
#include "ember/errors.h"
#include "ember/ops/_conv_backward_input.h"
#include "ember/ops/_conv_backward_weight.h"
#include "ember/ops/_conv_forward.h"
#include "ember/ops/col2im.h"
#include "ember/ops/contiguous.h"
#include "ember/ops/im2col.h"
#include "ember/parallel.h"
#include "ember/tensor.h"

namespace ember::cpu {
namespace {

// Columns (output positions) one GEMM should see at least; fewer per image means
// several images share a GEMM.
constexpr int64_t kMinGemmColumns = 256;
// One image's patch matrix is made and used in bands of output rows whose block (K x band
// columns) fits the core's L2 (512 KB here) between im2col and the GEMM, but with at least
// kMinBandColumns columns so that the GEMMs stay wide. ResNet's 3x3 64-channel layer (56x56):
// bands of 4 rows; a whole 7 MB patch matrix went through L3 instead, 25% slower fwd+bwd.
constexpr int64_t kPatchBandBytes = 512 << 10;
constexpr int64_t kMinBandColumns = 128;

struct Geometry {
  int64_t N, C, H, W;      // input
  int64_t OC, kh, kw;      // weight (OC, C / groups, kh, kw)
  int64_t OH, OW;          // output
  int64_t sh, sw, ph, pw, dh, dw, groups;
  int64_t Cg, OCg, K, P;   // per-group channels, GEMM inner size C/g*kh*kw, output positions
  bool pointwise;          // 1x1, stride 1, no padding: the input is its own im2col
  int64_t images_per_gemm;
  int64_t band_rows;       // output rows per band of one image (OH: one band)
};

Geometry make_geometry(const DimVector& in, const DimVector& wt, const DimVector& out, const IntList& stride,
                       const IntList& padding, const IntList& dilation, int64_t groups) {
  Geometry g{};
  g.N = in[0], g.C = in[1], g.H = in[2], g.W = in[3];
  g.OC = wt[0], g.kh = wt[2], g.kw = wt[3];
  g.OH = out[2], g.OW = out[3];
  g.sh = stride[0], g.sw = stride[1], g.ph = padding[0], g.pw = padding[1], g.dh = dilation[0], g.dw = dilation[1];
  g.groups = groups;
  g.Cg = g.C / groups, g.OCg = g.OC / groups;
  g.K = g.Cg * g.kh * g.kw, g.P = g.OH * g.OW;
  g.pointwise = g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 && g.ph == 0 && g.pw == 0;
  g.images_per_gemm = g.pointwise ? 1 : std::clamp<int64_t>((kMinGemmColumns + g.P - 1) / std::max<int64_t>(g.P, 1),
                                                            1, std::max<int64_t>(g.N, 1));
  const int64_t row_bytes = g.K * g.OW * (int64_t)sizeof(float);
  g.band_rows = g.OH;
  if (!g.pointwise && g.images_per_gemm == 1 && row_bytes > 0)
    g.band_rows = std::clamp<int64_t>(std::max(kPatchBandBytes / row_bytes, (kMinBandColumns + g.OW - 1) / g.OW), 1,
                                      std::max<int64_t>(g.OH, 1));
  return g;
}

void check_params(const IntList& stride, const IntList& padding, const IntList& dilation, int64_t groups,
                  const char* op) {
  EMBER_CHECK(stride.size() == 2 && padding.size() == 2 && dilation.size() == 2, Runtime, op,
              ": expected stride, padding and dilation of 2 values each");
  for (int i = 0; i < 2; ++i) {
    EMBER_CHECK(stride[i] > 0, Runtime, op, ": non-positive stride is not supported");
    EMBER_CHECK(padding[i] >= 0, Runtime, op, ": negative padding is not supported");
    EMBER_CHECK(dilation[i] > 0, Runtime, op, ": non-positive dilation is not supported");
  }
  EMBER_CHECK(groups > 0, Runtime, op, ": non-positive groups is not supported");
}

template <typename T>
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b, int64_t ldb,
          T beta, T* c, int64_t ldc) {
  const auto A = ta ? CblasTrans : CblasNoTrans, B = tb ? CblasTrans : CblasNoTrans;
  if constexpr (std::is_same_v<T, float>)
    scipy_cblas_sgemm(CblasRowMajor, A, B, (blasint)m, (blasint)n, (blasint)k, 1.0f, a, (blasint)lda, b, (blasint)ldb,
                      beta, c, (blasint)ldc);
  else
    scipy_cblas_dgemm(CblasRowMajor, A, B, (blasint)m, (blasint)n, (blasint)k, 1.0, a, (blasint)lda, b, (blasint)ldb,
                      beta, c, (blasint)ldc);
}

// dst[0, n) = src[0, n) in whole 32-byte vectors and a scalar tail: the runs im2col copies
// are short (8 floats at LeNet's second layer), where a memcpy call or a generic vector
// loop's set-up (alias checks) costs more than the copy.
template <typename T>
inline void copy_run(T* dst, const T* src, int64_t n) {
  constexpr int64_t V = 32 / sizeof(T);
  int64_t k = 0;
  for (; k + V <= n; k += V) std::memcpy(dst + k, src + k, sizeof(T) * V);  // constant size: one vector move
  for (; k < n; ++k) dst[k] = src[k];
}

// Rows (c, i, j) of the K x P patch matrix of one image's group of channels `x`
// (Cg x H x W), written at col + row * ld; only output rows [oh0, oh1) (the columns
// from oh0 * OW), the whole matrix by default.
template <typename T>
void im2col(const T* x, const Geometry& geometry, T* col, int64_t ld, int64_t oh0 = 0, int64_t oh1 = -1) {
  const Geometry g = geometry;  // a local copy: the stores through `col` cannot change it, no reloads
  if (oh1 < 0) oh1 = g.OH;
  const int64_t width = (oh1 - oh0) * g.OW;
  for (int64_t c = 0; c < g.Cg; ++c)
    for (int64_t i = 0; i < g.kh; ++i) {
      const int64_t di = i * g.dh - g.ph;
      // Output rows whose input row oh * sh + di lies inside [0, H).
      const int64_t top = std::min(oh1, std::max<int64_t>(oh0, (-di + g.sh - 1) / g.sh));
      const int64_t bottom = std::max(top, std::min(oh1, di < g.H ? (g.H - 1 - di) / g.sh + 1 : 0));
      T* rows = col + (c * g.kh + i) * g.kw * ld;  // output row oh's columns at (oh - oh0) * OW
      for (int64_t j = 0; j < g.kw; ++j) {
        std::fill(rows + j * ld, rows + j * ld + (top - oh0) * g.OW, T(0));
        std::fill(rows + j * ld + (bottom - oh0) * g.OW, rows + j * ld + width, T(0));
      }
      if (g.sw == 1 && g.pw == 0) {  // each input row feeds kw patch rows whole: no bounds per column
        const T* src = x + (c * g.H + top * g.sh + di) * g.W;
        for (int64_t oh = top; oh < bottom; ++oh, src += g.sh * g.W)
          for (int64_t j = 0; j < g.kw; ++j) copy_run(rows + j * ld + (oh - oh0) * g.OW, src + j * g.dw, g.OW);
        continue;
      }
      for (int64_t j = 0; j < g.kw; ++j) {
        T* row = rows + j * ld;
        const int64_t dj = j * g.dw - g.pw;
        // Output columns whose input column ow * sw + dj lies inside [0, W).
        const int64_t lo = std::min(g.OW, std::max<int64_t>(0, (-dj + g.sw - 1) / g.sw));
        const int64_t hi = std::max(lo, std::min(g.OW, dj < g.W ? (g.W - 1 - dj) / g.sw + 1 : 0));
        const T* src = x + (c * g.H + top * g.sh + di) * g.W + dj;
        for (int64_t oh = top; oh < bottom; ++oh, src += g.sh * g.W) {
          T* d = row + (oh - oh0) * g.OW;
          for (int64_t ow = 0; ow < lo; ++ow) d[ow] = T(0);
          if (g.sw == 1) {
            copy_run(d + lo, src + lo, hi - lo);
          } else if (g.sw == 2) {  // a constant stride: the compiler's vector shuffles, not scalar loads
            for (int64_t ow = lo; ow < hi; ++ow) d[ow] = src[ow * 2];
          } else {
            for (int64_t ow = lo; ow < hi; ++ow) d[ow] = src[ow * g.sw];
          }
          for (int64_t ow = hi; ow < g.OW; ++ow) d[ow] = T(0);
        }
      }
    }
}

// The adjoint of im2col (for output rows [oh0, oh1), whose columns start at col): each
// patch entry added back to the input position it was read from.
template <typename T>
void col2im(const T* col, int64_t ld, const Geometry& g, T* x, int64_t oh0 = 0, int64_t oh1 = -1) {
  if (oh1 < 0) oh1 = g.OH;
  for (int64_t c = 0; c < g.Cg; ++c)
    for (int64_t i = 0; i < g.kh; ++i)
      for (int64_t j = 0; j < g.kw; ++j) {
        const T* row = col + ((c * g.kh + i) * g.kw + j) * ld;
        const int64_t dj = j * g.dw - g.pw;
        const int64_t lo = std::min(g.OW, std::max<int64_t>(0, (-dj + g.sw - 1) / g.sw));
        const int64_t hi = std::max(lo, std::min(g.OW, dj < g.W ? (g.W - 1 - dj) / g.sw + 1 : 0));
        for (int64_t oh = oh0; oh < oh1; ++oh) {
          const int64_t ih = oh * g.sh - g.ph + i * g.dh;
          if (ih < 0 || ih >= g.H) continue;
          const T* s = row + (oh - oh0) * g.OW;
          T* dst = x + (c * g.H + ih) * g.W + dj;
          if (g.sw == 1) {
#pragma omp simd
            for (int64_t ow = lo; ow < hi; ++ow) dst[ow] += s[ow];
          } else {
            for (int64_t ow = lo; ow < hi; ++ow) dst[ow * g.sw] += s[ow];
          }
        }
      }
}

// Scratch space every element of which is written before it is read: no zero fill.
template <typename T>
std::unique_ptr<T[]> scratch(int64_t n) {
  return std::make_unique_for_overwrite<T[]>(n);
}

// im2col's input for one image's group of channels: the image itself, or with padding a
// copy inside a zero border, whose patch rows im2col copies whole (no bounds, no scalar
// runs of OW - 1 elements: ResNet's 3x3 layers spent 15% of a train step in im2col).
template <typename T>
class PatchSource {
 public:
  explicit PatchSource(const Geometry& g) : g_(g) {
    if (g.pointwise || (g.ph == 0 && g.pw == 0)) return;
    g_.H += 2 * g.ph, g_.W += 2 * g.pw, g_.ph = 0, g_.pw = 0;
    padded_ = std::make_unique<T[]>(g_.Cg * g_.H * g_.W);  // zeroed once: the border stays zero
  }
  // im2col's geometry for what image() returns.
  const Geometry& geometry() const { return g_; }
  // The group of channels at x (image geometry g) as im2col should read it.
  const T* image(const T* x, const Geometry& g) {
    if (!padded_) return x;
    for (int64_t c = 0; c < g.Cg; ++c)
      for (int64_t h = 0; h < g.H; ++h)
        std::memcpy(padded_.get() + (c * g_.H + h + g.ph) * g_.W + g.pw, x + (c * g.H + h) * g.W, sizeof(T) * g.W);
    return padded_.get();
  }

 private:
  Geometry g_;
  std::unique_ptr<T[]> padded_;
};

// Work items: (chunk of images_per_gemm images) x group.
struct Item {
  int64_t n0, nb, group;
};
Item item_at(const Geometry& g, int64_t it) {
  const int64_t chunk = it / g.groups;
  const int64_t n0 = chunk * g.images_per_gemm;
  return {n0, std::min(g.images_per_gemm, g.N - n0), it % g.groups};
}
int64_t item_count(const Geometry& g) {
  return (g.N + g.images_per_gemm - 1) / g.images_per_gemm * g.groups;
}

// The rows of group `grp` of images n0.. side by side: (rows x nb*P), from a
// tensor laid out (N, rows * groups, P).
template <typename T>
void gather_images(const T* t, const Geometry& g, const Item& it, int64_t rows, T* dst) {
  const int64_t ld = it.nb * g.P;
  for (int64_t b = 0; b < it.nb; ++b) {
    const T* src = t + ((it.n0 + b) * g.groups + it.group) * rows * g.P;
    for (int64_t r = 0; r < rows; ++r) std::memcpy(dst + r * ld + b * g.P, src + r * g.P, sizeof(T) * g.P);
  }
}

// The patch scratch of one thread: a band of one image, or several whole images side by side.
template <typename T>
std::unique_ptr<T[]> patch_scratch(const Geometry& g) {
  if (g.pointwise) return nullptr;
  return scratch<T>(g.images_per_gemm > 1 ? g.K * g.images_per_gemm * g.P : g.K * g.band_rows * g.OW);
}

// Calls f(oh0, oh1, width) for each band of output rows of one image.
template <typename F>
void for_each_band(const Geometry& g, F&& f) {
  for (int64_t oh0 = 0; oh0 < g.OH; oh0 += g.band_rows) {
    const int64_t oh1 = std::min(g.OH, oh0 + g.band_rows);
    f(oh0, oh1, (oh1 - oh0) * g.OW);
  }
}

// 3x3, stride 1, undilated, ungrouped, enough channels, a wide but not huge image: Winograd
// (conv_winograd.cpp).
bool winograd_applies(const Geometry& g) {
  const int64_t tiles = (g.OH + 1) / 2 * ((g.OW + 1) / 2);
  return g.kh == 3 && g.kw == 3 && g.sh == 1 && g.sw == 1 && g.dh == 1 && g.dw == 1 && g.groups == 1 &&
         g.C >= kMinWinogradChannels && g.OC >= kMinWinogradChannels && g.OW >= kMinWinogradWidth &&
         tiles * std::max(g.C, g.OC) <= kMaxWinogradTileValues;
}

template <typename T>
void forward_kernel(const T* x, const T* w, const T* bias, T* y, const Geometry& g) {
  if (winograd_applies(g)) return winograd_conv3x3<T>(x, w, bias, y, g.N, g.C, g.H, g.W, g.OC, g.ph, g.pw);
  const int64_t HW = g.H * g.W;
  parallel_for(item_count(g), 1, [&](int64_t lo, int64_t hi) {
    auto col = patch_scratch<T>(g);
    auto out = scratch<T>(g.images_per_gemm > 1 ? g.OCg * g.images_per_gemm * g.P : 0);
    PatchSource<T> source(g);
    for (int64_t k = lo; k < hi; ++k) {
      const Item it = item_at(g, k);
      const T* wg = w + it.group * g.OCg * g.K;
      const T* xg = x + (it.n0 * g.C + it.group * g.Cg) * HW;
      if (it.nb == 1) {
        T* yg = y + (it.n0 * g.OC + it.group * g.OCg) * g.P;
        if (bias)
          for (int64_t o = 0; o < g.OCg; ++o) std::fill(yg + o * g.P, yg + (o + 1) * g.P, bias[it.group * g.OCg + o]);
        const T beta = bias ? T(1) : T(0);
        if (g.pointwise) {
          gemm<T>(false, false, g.OCg, g.P, g.K, wg, g.K, xg, g.P, beta, yg, g.P);
          continue;
        }
        const T* image = source.image(xg, g);
        for_each_band(g, [&](int64_t oh0, int64_t oh1, int64_t width) {
          im2col(image, source.geometry(), col.get(), width, oh0, oh1);
          gemm<T>(false, false, g.OCg, width, g.K, wg, g.K, col.get(), width, beta, yg + oh0 * g.OW, g.P);
        });
        continue;
      }
      const int64_t ld = it.nb * g.P;
      for (int64_t b = 0; b < it.nb; ++b)
        im2col(source.image(xg + b * g.C * HW, g), source.geometry(), col.get() + b * g.P, ld);
      gemm<T>(false, false, g.OCg, ld, g.K, wg, g.K, col.get(), ld, T(0), out.get(), ld);
      for (int64_t b = 0; b < it.nb; ++b)
        for (int64_t o = 0; o < g.OCg; ++o) {
          T* dst = y + ((it.n0 + b) * g.OC + it.group * g.OCg + o) * g.P;
          const T* src = out.get() + o * ld + b * g.P;
          const T add = bias ? bias[it.group * g.OCg + o] : T(0);
#pragma omp simd
          for (int64_t p = 0; p < g.P; ++p) dst[p] = src[p] + add;
        }
    }
  });
}

// Whether gx = conv_transpose(gy, w) can run as the forward convolution of gy with w
// flipped and transposed per group: stride 1, padding at most the kernel's span - 1 (that
// convolution's padding is the rest). Its GEMMs have the long inner dimension OCg*kh*kw and
// im2col copies instead of col2im's scattered adds: ResNet's 3x3 layers, 15-30% faster.
// Only when gy has no more channels than gx (per group): im2col then copies no more than
// col2im adds (a 3-channel stem's gx took 4x longer, a 16->32 layer's 10-20%).
bool backward_input_as_forward(const Geometry& g) {
  return !g.pointwise && g.sh == 1 && g.sw == 1 && g.ph <= g.dh * (g.kh - 1) && g.pw <= g.dw * (g.kw - 1) &&
         g.OCg <= g.Cg;
}

template <typename T>
void backward_input_by_forward(const T* gy, const T* w, T* gx, const Geometry& g) {
  // w'[group, c, o, i, j] = w[group, o, c, kh-1-i, kw-1-j]: the weight of a (C, OCg, kh, kw) convolution.
  const int64_t taps = g.kh * g.kw;
  std::vector<T> flipped(g.OC * g.K);
  for (int64_t grp = 0; grp < g.groups; ++grp)
    for (int64_t o = 0; o < g.OCg; ++o)
      for (int64_t c = 0; c < g.Cg; ++c) {
        const T* src = w + ((grp * g.OCg + o) * g.Cg + c) * taps;
        T* dst = flipped.data() + ((grp * g.Cg + c) * g.OCg + o) * taps;
        for (int64_t t = 0; t < taps; ++t) dst[t] = src[taps - 1 - t];
      }
  const DimVector in{g.N, g.OC, g.OH, g.OW}, wt{g.C, g.OCg, g.kh, g.kw}, out{g.N, g.C, g.H, g.W};
  const DimVector one{1, 1}, pad{g.dh * (g.kh - 1) - g.ph, g.dw * (g.kw - 1) - g.pw}, dil{g.dh, g.dw};
  forward_kernel<T>(gy, flipped.data(), nullptr, gx, make_geometry(in, wt, out, one, pad, dil, g.groups));
}

template <typename T>
void backward_input_kernel(const T* gy, const T* w, T* gx, const Geometry& g) {
  if (backward_input_as_forward(g)) return backward_input_by_forward(gy, w, gx, g);
  const int64_t HW = g.H * g.W;
  parallel_for(item_count(g), 1, [&](int64_t lo, int64_t hi) {
    auto col = patch_scratch<T>(g);
    auto grads = scratch<T>(g.images_per_gemm > 1 ? g.OCg * g.images_per_gemm * g.P : 0);
    for (int64_t k = lo; k < hi; ++k) {
      const Item it = item_at(g, k);
      const T* wg = w + it.group * g.OCg * g.K;
      const T* gyg = gy + (it.n0 * g.OC + it.group * g.OCg) * g.P;
      T* gxg = gx + (it.n0 * g.C + it.group * g.Cg) * HW;
      if (g.pointwise) {  // gx = w^T gy straight into the image
        gemm<T>(true, false, g.Cg, g.P, g.OCg, wg, g.K, gyg, g.P, T(0), gxg, g.P);
        continue;
      }
      if (it.nb == 1) {
        std::fill(gxg, gxg + g.Cg * HW, T(0));
        for_each_band(g, [&](int64_t oh0, int64_t oh1, int64_t width) {
          gemm<T>(true, false, g.K, width, g.OCg, wg, g.K, gyg + oh0 * g.OW, g.P, T(0), col.get(), width);
          col2im(col.get(), width, g, gxg, oh0, oh1);
        });
        continue;
      }
      const int64_t ld = it.nb * g.P;
      gather_images(gy, g, it, g.OCg, grads.get());
      gemm<T>(true, false, g.K, ld, g.OCg, wg, g.K, grads.get(), ld, T(0), col.get(), ld);
      for (int64_t b = 0; b < it.nb; ++b) {
        T* gxb = gxg + b * g.C * HW;
        std::fill(gxb, gxb + g.Cg * HW, T(0));
        col2im(col.get() + b * g.P, ld, g, gxb);
      }
    }
  });
}

template <typename T>
void backward_weight_kernel(const T* gy, const T* x, T* gw, const Geometry& g) {
  const int64_t HW = g.H * g.W, items = item_count(g), wsize = g.OC * g.K;
  // One partial sum per chunk of items, added in chunk order so results do not depend on timing.
  const int64_t chunks = std::max<int64_t>(1, std::min<int64_t>(get_num_threads(), items));
  const int64_t per = (items + chunks - 1) / chunks;
  std::vector<T> partial(chunks * wsize, T(0));
  parallel_for(chunks, 1, [&](int64_t clo, int64_t chi) {
    auto col = patch_scratch<T>(g);
    auto grads = scratch<T>(g.images_per_gemm > 1 ? g.OCg * g.images_per_gemm * g.P : 0);
    PatchSource<T> source(g);
    for (int64_t c = clo; c < chi; ++c)
      for (int64_t k = c * per; k < std::min(items, (c + 1) * per); ++k) {
        const Item it = item_at(g, k);
        const T* gyg = gy + (it.n0 * g.OC + it.group * g.OCg) * g.P;
        const T* xg = x + (it.n0 * g.C + it.group * g.Cg) * HW;
        T* gwg = partial.data() + c * wsize + it.group * g.OCg * g.K;
        if (g.pointwise) {
          gemm<T>(false, true, g.OCg, g.K, g.P, gyg, g.P, xg, g.P, T(1), gwg, g.K);
          continue;
        }
        if (it.nb == 1) {
          const T* image = source.image(xg, g);
          for_each_band(g, [&](int64_t oh0, int64_t oh1, int64_t width) {
            im2col(image, source.geometry(), col.get(), width, oh0, oh1);
            gemm<T>(false, true, g.OCg, g.K, width, gyg + oh0 * g.OW, g.P, col.get(), width, T(1), gwg, g.K);
          });
          continue;
        }
        const int64_t ld = it.nb * g.P;
        gather_images(gy, g, it, g.OCg, grads.get());
        for (int64_t b = 0; b < it.nb; ++b)
          im2col(source.image(xg + b * g.C * HW, g), source.geometry(), col.get() + b * g.P, ld);
        gemm<T>(false, true, g.OCg, g.K, ld, grads.get(), ld, col.get(), ld, T(1), gwg, g.K);
      }
  });
  for (int64_t c = 1; c < chunks; ++c) {
    const T* src = partial.data() + c * wsize;
#pragma omp simd
    for (int64_t i = 0; i < wsize; ++i) partial[i] += src[i];
  }
  std::memcpy(gw, partial.data(), sizeof(T) * wsize);
}

void check_same_dtype(const Tensor& a, const Tensor& b, const char* what, const char* op) {
  EMBER_CHECK(a.dtype() == b.dtype(), Runtime, op, ": expected ", what, " of dtype ", dtype_name(a.dtype()),
              ", but got ", dtype_name(b.dtype()));
}

void check_4d(const Tensor& t, const char* what, const char* op) {
  EMBER_CHECK(t.dim() == 4, Runtime, op, ": expected a 4-D ", what, ", but got ", t.dim(), " dims");
}

DimVector forward_output_sizes(const DimVector& in, const DimVector& wt, const IntList& stride, const IntList& padding,
                               const IntList& dilation, const char* op) {
  DimVector out{in[0], wt[0], 0, 0};
  for (int i = 0; i < 2; ++i) {
    const int64_t span = dilation[i] * (wt[2 + i] - 1) + 1, padded = in[2 + i] + 2 * padding[i];
    EMBER_CHECK(padded >= span, Runtime, op, ": padded input size ", padded, " is smaller than the kernel span ",
                span, " in spatial dim ", i);
    out[2 + i] = (padded - span) / stride[i] + 1;
  }
  return out;
}

void check_groups(const DimVector& in, const DimVector& wt, int64_t groups, const char* op) {
  EMBER_CHECK(wt[0] % groups == 0, Runtime, op, ": weight's dim 0 (", wt[0], ") is not divisible by groups=", groups);
  EMBER_CHECK(in[1] == wt[1] * groups, Runtime, op, ": input has ", in[1], " channels, expected weight's dim 1 (",
              wt[1], ") * groups (", groups, ")");
}

// im2col/col2im's geometry: one group, no output channels; (C, H, W) inputs count as one image.
Geometry block_geometry(int64_t N, int64_t C, int64_t H, int64_t W, int64_t OH, int64_t OW, const IntList& kernel_size,
                        const IntList& stride, const IntList& padding, const IntList& dilation) {
  const DimVector in{N, C, H, W}, wt{0, C, kernel_size[0], kernel_size[1]}, out{N, 0, OH, OW};
  Geometry g = make_geometry(in, wt, out, stride, padding, dilation, 1);
  g.pointwise = false;
  return g;
}

std::string pair(const IntList& v) { return str("(", v[0], ", ", v[1], ")"); }

void check_block_params(const IntList& kernel_size, const IntList& dilation, const IntList& padding,
                        const IntList& stride, const char* op) {
  EMBER_CHECK(kernel_size.size() == 2 && dilation.size() == 2 && padding.size() == 2 && stride.size() == 2, Runtime,
              op, ": expected kernel_size, dilation, padding and stride of 2 values each");
  for (int i = 0; i < 2; ++i) {
    EMBER_CHECK(kernel_size[i] > 0, Runtime, op, ": kernel size should be greater than zero, but got kernel_size=",
                pair(kernel_size));
    EMBER_CHECK(dilation[i] > 0, Runtime, op, ": dilation should be greater than zero, but got dilation=", pair(dilation));
    EMBER_CHECK(padding[i] >= 0, Runtime, op, ": padding should be non-negative, but got padding=", pair(padding));
    EMBER_CHECK(stride[i] > 0, Runtime, op, ": stride should be greater than zero, but got stride=", pair(stride));
  }
}

int64_t blocks_along(int64_t size, int64_t k, int64_t d, int64_t p, int64_t s) {
  return (size + 2 * p - (d * (k - 1) + 1)) / s + 1;
}

// The checks the three kernels share (4-D tensors `a` and `b` of one dtype, a convolution
// of an `in`-shaped input with a `wt`-shaped weight); that convolution's output sizes.
DimVector checked_output_sizes(const Tensor& a, const char* a_name, const Tensor& b, const char* b_name,
                               const DimVector& in, const DimVector& wt, const IntList& stride,
                               const IntList& padding, const IntList& dilation, int64_t groups, const char* op) {
  check_params(stride, padding, dilation, groups, op);
  check_4d(a, a_name, op), check_4d(b, b_name, op);
  check_same_dtype(a, b, b_name, op);
  check_groups(in, wt, groups, op);
  return forward_output_sizes(in, wt, stride, padding, dilation, op);
}

// Runs kernel<T>() for a float32/float64 `out` (the dtypes the op declares), or zero-fills
// `out` when the sum it would compute has no terms.
template <typename F>
void fill_float_result(const Tensor& out, bool no_terms, F&& kernel) {
  visit_dtype(out.dtype(), [&]<typename T>() {
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      if (no_terms) std::fill(out.data<T>(), out.data<T>() + out.numel(), T(0));
      else kernel.template operator()<T>();
    }
  });
}

}  // namespace

Tensor im2col_cpu(const Tensor& self, const IntList& kernel_size, const IntList& dilation, const IntList& padding,
                  const IntList& stride) {
  const char* op = "im2col";
  check_block_params(kernel_size, dilation, padding, stride, op);
  const bool batched = self.dim() == 4;
  EMBER_CHECK((self.dim() == 3 || batched) && self.sizes()[self.dim() - 3] > 0 && self.sizes()[self.dim() - 2] > 0 &&
                  self.sizes()[self.dim() - 1] > 0,
              Runtime, op, ": Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but got: [",
              self.sizes(), "]");
  const int64_t N = batched ? self.sizes()[0] : 1, C = self.sizes()[self.dim() - 3];
  const int64_t H = self.sizes()[self.dim() - 2], W = self.sizes()[self.dim() - 1];
  const int64_t OH = blocks_along(H, kernel_size[0], dilation[0], padding[0], stride[0]);
  const int64_t OW = blocks_along(W, kernel_size[1], dilation[1], padding[1], stride[1]);
  EMBER_CHECK(OH >= 1 && OW >= 1, Runtime, op, ": Given input with spatial size (", H, ", ", W, "), kernel_size=",
              pair(kernel_size), ", dilation=", pair(dilation), ", padding=", pair(padding),
              ", calculated shape of the array of sliding blocks as (", OH, ", ", OW,
              "), but its components must be at least one.");
  const int64_t K = C * kernel_size[0] * kernel_size[1], L = OH * OW;
  Tensor out = empty_tensor(batched ? DimVector{N, K, L} : DimVector{K, L}, self.dtype(), self.device());
  if (out.numel() == 0) return out;
  const Geometry g = block_geometry(N, C, H, W, OH, OW, kernel_size, stride, padding, dilation);
  const Tensor x = ember::contiguous(self);
  visit_dtype(self.dtype(), [&]<typename T>() {
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      const T* xp = x.data<T>();
      T* yp = out.data<T>();
      parallel_for(N, 1, [&](int64_t lo, int64_t hi) {
        for (int64_t n = lo; n < hi; ++n) im2col(xp + n * C * H * W, g, yp + n * K * L, L);
      });
    }
  });
  return out;
}

Tensor col2im_cpu(const Tensor& self, const IntList& output_size, const IntList& kernel_size, const IntList& dilation,
                  const IntList& padding, const IntList& stride) {
  const char* op = "col2im";
  check_block_params(kernel_size, dilation, padding, stride, op);
  EMBER_CHECK(output_size.size() == 2, Runtime, op, ": It is expected output_size equals to 2, but got size ",
              output_size.size());
  EMBER_CHECK(output_size[0] > 0 && output_size[1] > 0, Runtime, op,
              ": output_size should be greater than zero, but got output_size=", pair(output_size));
  const bool batched = self.dim() == 3;
  EMBER_CHECK((self.dim() == 2 || batched) && self.sizes()[self.dim() - 2] > 0 && self.sizes()[self.dim() - 1] > 0,
              Runtime, op, ": Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and non-zero ",
              "dimensions for input, but got: [", self.sizes(), "]");
  const int64_t N = batched ? self.sizes()[0] : 1, K = self.sizes()[self.dim() - 2], L = self.sizes()[self.dim() - 1];
  const int64_t kk = kernel_size[0] * kernel_size[1];
  EMBER_CHECK(K % kk == 0, Runtime, op, ": Expected size of input's dimension ", batched ? 1 : 0,
              " to be divisible by the product of kernel_size, but got input.size(", batched ? 1 : 0, ")=", K,
              " and kernel_size=", pair(kernel_size), ".");
  const int64_t H = output_size[0], W = output_size[1];
  const int64_t OH = blocks_along(H, kernel_size[0], dilation[0], padding[0], stride[0]);
  const int64_t OW = blocks_along(W, kernel_size[1], dilation[1], padding[1], stride[1]);
  EMBER_CHECK(OH >= 1 && OW >= 1 && OH * OW == L, Runtime, op, ": Given output_size=", pair(output_size),
              ", kernel_size=", pair(kernel_size), ", dilation=", pair(dilation), ", padding=", pair(padding),
              ", stride=", pair(stride), ", expected size of input's dimension ", batched ? 2 : 1,
              " to match the calculated number of sliding blocks ", OH, " * ", OW, " = ", OH * OW,
              ", but got input.size(", batched ? 2 : 1, ")=", L, ".");
  const int64_t C = K / kk;
  Tensor out = empty_tensor(batched ? DimVector{N, C, H, W} : DimVector{C, H, W}, self.dtype(), self.device());
  if (out.numel() == 0) return out;
  const Geometry g = block_geometry(N, C, H, W, OH, OW, kernel_size, stride, padding, dilation);
  const Tensor cols = ember::contiguous(self);
  visit_dtype(self.dtype(), [&]<typename T>() {
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      const T* cp = cols.data<T>();
      T* xp = out.data<T>();
      parallel_for(N, 1, [&](int64_t lo, int64_t hi) {
        for (int64_t n = lo; n < hi; ++n) {
          std::fill(xp + n * C * H * W, xp + (n + 1) * C * H * W, T(0));
          col2im(cp + n * K * L, L, g, xp + n * C * H * W);
        }
      });
    }
  });
  return out;
}

Tensor conv_forward_cpu(const Tensor& input, const Tensor& weight, const Tensor& bias,
                        const IntList& stride, const IntList& padding, const IntList& dilation, int64_t groups) {
  const char* op = "_conv_forward";
  const DimVector out_sizes = checked_output_sizes(input, "input", weight, "weight", input.sizes(), weight.sizes(),
                                                   stride, padding, dilation, groups, op);
  const bool has_bias = bias.defined();
  if (has_bias) {
    check_same_dtype(input, bias, "bias", op);
    EMBER_CHECK(bias.dim() == 1 && bias.sizes()[0] == weight.sizes()[0], Runtime, op,
                ": expected a bias of ", weight.sizes()[0], " elements");
  }
  Tensor out = empty_tensor(out_sizes, input.dtype(), input.device());
  if (out.numel() == 0) return out;
  const Geometry g = make_geometry(input.sizes(), weight.sizes(), out_sizes, stride, padding, dilation, groups);
  keep_blas_single_threaded();
  const Tensor x = ember::contiguous(input), w = ember::contiguous(weight);
  const Tensor b = has_bias ? ember::contiguous(bias) : Tensor();
  visit_dtype(input.dtype(), [&]<typename T>() {
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      if (g.K == 0) {  // no input channels: the output is the bias
        T* y = out.data<T>();
        for (int64_t n = 0; n < g.N; ++n)
          for (int64_t o = 0; o < g.OC; ++o)
            std::fill(y + (n * g.OC + o) * g.P, y + (n * g.OC + o + 1) * g.P, has_bias ? b.data<T>()[o] : T(0));
        return;
      }
      forward_kernel<T>(x.data<T>(), w.data<T>(), has_bias ? b.data<T>() : nullptr, out.data<T>(), g);
    }
  });
  return out;
}

Tensor conv_backward_input_cpu(const Tensor& grad_output, const Tensor& weight, const IntList& input_size,
                               const IntList& stride, const IntList& padding, const IntList& dilation, int64_t groups) {
  const char* op = "_conv_backward_input";
  EMBER_CHECK(input_size.size() == 4, Runtime, op, ": expected input_size of 4 values");
  const DimVector in_sizes(input_size.begin(), input_size.end());
  const DimVector out_sizes = checked_output_sizes(grad_output, "grad_output", weight, "weight", in_sizes,
                                                   weight.sizes(), stride, padding, dilation, groups, op);
  EMBER_CHECK(out_sizes == grad_output.sizes(), Runtime, op, ": grad_output's shape does not match the output of a ",
              "convolution of input_size with weight");
  Tensor gx = empty_tensor(in_sizes, grad_output.dtype(), grad_output.device());
  if (gx.numel() == 0) return gx;
  const Geometry g = make_geometry(in_sizes, weight.sizes(), out_sizes, stride, padding, dilation, groups);
  keep_blas_single_threaded();
  const Tensor gy = ember::contiguous(grad_output), w = ember::contiguous(weight);
  fill_float_result(gx, g.OCg == 0 || g.P == 0,
                    [&]<typename T>() { backward_input_kernel<T>(gy.data<T>(), w.data<T>(), gx.data<T>(), g); });
  return gx;
}

Tensor conv_backward_weight_cpu(const Tensor& grad_output, const Tensor& input, const IntList& weight_size,
                                const IntList& stride, const IntList& padding, const IntList& dilation,
                                int64_t groups) {
  const char* op = "_conv_backward_weight";
  EMBER_CHECK(weight_size.size() == 4, Runtime, op, ": expected weight_size of 4 values");
  const DimVector w_sizes(weight_size.begin(), weight_size.end());
  const DimVector out_sizes = checked_output_sizes(grad_output, "grad_output", input, "input", input.sizes(), w_sizes,
                                                   stride, padding, dilation, groups, op);
  EMBER_CHECK(out_sizes == grad_output.sizes(), Runtime, op, ": grad_output's shape does not match the output of a ",
              "convolution of input with weight_size");
  Tensor gw = empty_tensor(w_sizes, grad_output.dtype(), grad_output.device());
  if (gw.numel() == 0) return gw;
  const Geometry g = make_geometry(input.sizes(), w_sizes, out_sizes, stride, padding, dilation, groups);
  keep_blas_single_threaded();
  const Tensor gy = ember::contiguous(grad_output), x = ember::contiguous(input);
  fill_float_result(gw, g.N == 0 || g.P == 0,
                    [&]<typename T>() { backward_weight_kernel<T>(gy.data<T>(), x.data<T>(), gw.data<T>(), g); });
  return gw;
}

}  // namespace ember::cpu
