// histogram over given bin edges on the CPU: each piece of the input (one per thread)
// fills its own histogram by binary search of the edges, then the pieces are summed in
// order (so the result does not depend on the thread count).
#include <algorithm>
#include <cstdint>
#include <tuple>
#include <vector>

#include "ember/errors.h"
#include "ember/ops/contiguous.h"
#include "ember/ops/histogram.h"
#include "ember/parallel.h"
#include "ember/tensor.h"

namespace ember::cpu {
namespace {

template <typename T>
void fill_histogram(const T* x, const T* w, int64_t n, const T* edges, int64_t bins, bool density, T* hist) {
  const int64_t pieces = std::max<int64_t>(1, std::min<int64_t>(get_num_threads(), n / kGrainSize));
  const int64_t len = (n + pieces - 1) / pieces;
  std::vector<std::vector<double>> local(pieces, std::vector<double>(bins, 0.0));
  const T left = edges[0], right = edges[bins];
  parallel_for(pieces, 1, [&](int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p) {
      std::vector<double>& h = local[p];
      for (int64_t i = p * len, end = std::min(n, i + len); i < end; ++i) {
        const T v = x[i];
        if (!(v >= left && v <= right)) continue;  // outside, or NaN
        int64_t pos = std::upper_bound(edges, edges + bins + 1, v) - edges - 1;
        if (pos >= bins) pos = bins - 1;  // the right edge belongs to the last bin
        h[pos] += w ? double(w[i]) : 1.0;
      }
    }
  });
  double total = 0;
  for (int64_t k = 0; k < bins; ++k) {
    double s = 0;
    for (int64_t p = 0; p < pieces; ++p) s += local[p][k];
    local[0][k] = s;
    total += s;
  }
  for (int64_t k = 0; k < bins; ++k) {
    double v = local[0][k];
    if (density) v = v / total / (double(edges[k + 1]) - double(edges[k]));
    hist[k] = T(v);
  }
}

}  // namespace

std::tuple<Tensor, Tensor> histogram_cpu(const Tensor& self, const Tensor& bins, const Tensor& weight, bool density) {
  EMBER_CHECK(bins.dim() == 1, Runtime, "histogram: bins tensor should have one dimension, but got ", bins.dim(),
              " dimensions in the bins tensor for dimension 0");
  EMBER_CHECK(bins.numel() > 1, Runtime, "histogram(): bins must be > 0, but got ", bins.numel() - 1,
              " for dimension 0");
  EMBER_CHECK(bins.dtype() == self.dtype(), Runtime,
              "histogram: input tensor and bins tensors should have the same dtype, but got input with dtype ",
              dtype_name(self.dtype()), " and bins for dimension 0 with dtype ", dtype_name(bins.dtype()));
  if (weight.defined()) {
    EMBER_CHECK(weight.sizes() == self.sizes(), Runtime,
                "histogram: if weight tensor is provided it should have the same shape as the input tensor, but got "
                "input with shape ", self.sizes(), " and weight with shape ", weight.sizes());
    EMBER_CHECK(weight.dtype() == self.dtype(), Runtime,
                "histogram: if weight tensor is provided, input tensor and weight tensor should have the same dtype, "
                "but got input(", dtype_name(self.dtype()), "), and weight(", dtype_name(weight.dtype()), ")");
  }
  const int64_t nbins = bins.numel() - 1;
  const Tensor x = ember::contiguous(self), edges = ember::contiguous(bins);
  const Tensor w = weight.defined() ? ember::contiguous(weight) : Tensor();
  Tensor hist = empty_tensor({nbins}, self.dtype(), self.device());
  Tensor bin_edges = empty_tensor({nbins + 1}, self.dtype(), self.device());
  auto run = [&]<typename T>() {  // float32 and float64 only (the op's dtypes), as PyTorch
    std::copy(edges.data<T>(), edges.data<T>() + nbins + 1, bin_edges.data<T>());
    fill_histogram<T>(x.data<T>(), w.defined() ? w.data<T>() : nullptr, x.numel(), bin_edges.data<T>(), nbins, density,
                      hist.data<T>());
  };
  if (self.dtype() == ScalarType::Float64) run.template operator()<double>();
  else run.template operator()<float>();
  return {hist, bin_edges};
}

}  // namespace ember::cpu
