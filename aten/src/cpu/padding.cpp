// Reflection and replication padding of the last 1, 2 or 3 dims (PyTorch's reflection_padNd,
// replication_padNd) and their gradient. Every output position reads one input position per
// dim, so one source table per padded dim is built per call; an output row is its interior
// (a straight copy) plus the few border elements the table names. Rows run in parallel in the
// forward; the gradient sums the border back onto the plane, one plane per thread (no atomics).
#include <algorithm>
#include <string>
#include <type_traits>
#include <vector>

#include "ember/checked_math.h"
#include "ember/dispatch.h"
#include "ember/dtype.h"
#include "ember/errors.h"
#include "ember/ops/_pad_edge_backward.h"
#include "ember/ops/contiguous.h"
#include "ember/ops/reflection_pad1d.h"
#include "ember/ops/reflection_pad2d.h"
#include "ember/ops/reflection_pad3d.h"
#include "ember/ops/replication_pad1d.h"
#include "ember/ops/replication_pad2d.h"
#include "ember/ops/replication_pad3d.h"
#include "ember/parallel.h"
#include "ember/tensor.h"

namespace ember::cpu {
namespace {

// One padded dim: `in` elements become `out`, output j reading src[j]; outputs
// [copy_begin, copy_end) read j - left, a contiguous run.
struct PadAxis {
  int64_t in = 1, out = 1, left = 0;
  int64_t copy_begin = 0, copy_end = 1;
  std::vector<int64_t> src{0};
};

PadAxis make_axis(int64_t in, int64_t left, int64_t right, bool reflect) {
  PadAxis ax;
  ax.in = in, ax.left = left, ax.out = in + left + right;
  ax.src.resize(ax.out);
  for (int64_t j = 0; j < ax.out; ++j) {
    int64_t p = j - left;
    if (reflect) {
      p = p < 0 ? -p : p;
      if (p >= in) p = 2 * (in - 1) - p;
    } else {
      p = std::clamp<int64_t>(p, 0, in - 1);
    }
    ax.src[j] = p;
  }
  ax.copy_begin = std::clamp<int64_t>(left, 0, ax.out);
  ax.copy_end = std::clamp<int64_t>(in + left, ax.copy_begin, ax.out);
  return ax;
}

// The padded dims as (depth, height, width), unused ones of size 1, over `planes` planes.
struct PadPlan {
  int64_t planes = 0;
  PadAxis d, h, w;
  int64_t in_plane() const { return d.in * h.in * w.in; }
  int64_t out_plane() const { return d.out * h.out * w.out; }
};

PadPlan make_plan(const DimVector& sizes, const IntList& padding, bool reflect) {
  const int64_t k = (int64_t)padding.size() / 2, nd = (int64_t)sizes.size();
  PadPlan p;
  PadAxis* axes[3] = {&p.w, &p.h, &p.d};
  for (int64_t i = 0; i < k; ++i) *axes[i] = make_axis(sizes[nd - 1 - i], padding[2 * i], padding[2 * i + 1], reflect);
  p.planes = 1;
  for (int64_t i = 0; i < nd - k; ++i) p.planes *= sizes[i];
  return p;
}

// PyTorch's checks of reflection_padNd / replication_padNd, in its order and words.
DimVector padded_sizes(const char* op, const Tensor& self, const IntList& padding, int64_t k, bool reflect) {
  const int64_t n = (int64_t)padding.size();
  if (reflect)
    EMBER_CHECK(n == 2 * k, Runtime, "padding size is expected to be ", 2 * k, ", but got: ", n);
  else
    EMBER_CHECK(n == 2 * k, Runtime, "padding size is expected to be ", 2 * k);
  const int64_t nd = self.dim();
  bool ok = nd == k + 1 || nd == k + 2;
  for (int64_t d = nd == k + 2 ? 1 : 0; ok && d < nd; ++d) ok = self.size(d) != 0;
  EMBER_CHECK(ok, Runtime, "Expected ", k + 1, "D or ", k + 2, "D (batch mode) tensor with possibly 0 batch size and "
              "other non-zero dimensions for input, but got: ", shape_str(self.sizes()));
  if (reflect)
    for (int64_t i = 0; i < k; ++i) {
      const int64_t dim = nd - 1 - i, left = padding[2 * i], right = padding[2 * i + 1];
      EMBER_CHECK(left < self.size(dim) && right < self.size(dim), Runtime, "Argument #", 4 + 2 * i,
                  ": Padding size should be less than the corresponding input dimension, but got: padding (", left,
                  ", ", right, ") at dimension ", dim, " of input ", shape_str(self.sizes()));
    }
  DimVector out = self.sizes();
  for (int64_t i = 0; i < k; ++i) {
    const int64_t dim = nd - 1 - i;
    out[dim] = checked_add(self.size(dim), checked_add(padding[2 * i], padding[2 * i + 1], op), op);
  }
  const int64_t oW = out[nd - 1], W = self.size(-1);
  if (k == 1) {
    EMBER_CHECK(oW >= 1, Runtime, "input (W: ", W, ") is too small. Calculated output W: ", oW);
  } else if (k == 2) {
    EMBER_CHECK(oW >= 1 || out[nd - 2] >= 1, Runtime, "input (H: ", self.size(-2), ", W: ", W, reflect ? "" : " ",
                ") is too small. Calculated output H: ", out[nd - 2], " W: ", oW);
  }
  for (int64_t i = 0; i < k; ++i)
    EMBER_CHECK(out[nd - 1 - i] >= 0, Runtime, "Trying to create tensor with negative dimension ", out[nd - 1 - i],
                ": ", shape_str(out));
  return out;
}

// out_row[j] = in_row[src[j]]: the interior by copy, the borders by the table.
template <typename T>
inline void pad_row(const T* __restrict in, T* __restrict out, const PadAxis& w) {
  const int64_t* src = w.src.data();
  for (int64_t j = 0; j < w.copy_begin; ++j) out[j] = in[src[j]];
  std::copy(in + (w.copy_begin - w.left), in + (w.copy_end - w.left), out + w.copy_begin);
  for (int64_t j = w.copy_end; j < w.out; ++j) out[j] = in[src[j]];
}

// acc_row[src[j]] += g_row[j]: the interior elementwise, the borders by the table.
template <typename T, typename A>
inline void unpad_row(const T* __restrict g, A* __restrict acc, const PadAxis& w) {
  const int64_t* src = w.src.data();
  for (int64_t j = 0; j < w.copy_begin; ++j) acc[src[j]] += static_cast<A>(g[j]);
  A* dst = acc + (w.copy_begin - w.left);
  const T* from = g + w.copy_begin;
  const int64_t n = w.copy_end - w.copy_begin;
  for (int64_t j = 0; j < n; ++j) dst[j] += static_cast<A>(from[j]);
  for (int64_t j = w.copy_end; j < w.out; ++j) acc[src[j]] += static_cast<A>(g[j]);
}

template <typename T>
void pad_planes(const T* in, T* out, const PadPlan& p) {
  const int64_t rows = p.planes * p.d.out * p.h.out, oW = p.w.out;
  parallel_for(rows, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(oW, 1)), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const int64_t oh = r % p.h.out, od = (r / p.h.out) % p.d.out, plane = r / (p.h.out * p.d.out);
      const T* src = in + plane * p.in_plane() + (p.d.src[od] * p.h.in + p.h.src[oh]) * p.w.in;
      pad_row(src, out + r * oW, p.w);
    }
  });
}

template <typename T>
using acc_t = std::conditional_t<std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>, float, T>;

template <typename T>
void unpad_planes(const T* g, T* gi, const PadPlan& p) {
  using A = acc_t<T>;
  const int64_t in_plane = p.in_plane(), out_plane = p.out_plane();
  parallel_for(p.planes, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(out_plane, 1)), [&](int64_t b, int64_t e) {
    std::vector<A> buffer(std::is_same_v<A, T> ? 0 : in_plane);
    for (int64_t plane = b; plane < e; ++plane) {
      A* acc;
      if constexpr (std::is_same_v<A, T>) acc = gi + plane * in_plane;
      else acc = buffer.data();
      std::fill(acc, acc + in_plane, A(0));
      const T* src = g + plane * out_plane;
      for (int64_t od = 0; od < p.d.out; ++od)
        for (int64_t oh = 0; oh < p.h.out; ++oh)
          unpad_row(src + (od * p.h.out + oh) * p.w.out, acc + (p.d.src[od] * p.h.in + p.h.src[oh]) * p.w.in, p.w);
      if constexpr (!std::is_same_v<A, T>) {
        T* dst = gi + plane * in_plane;
        for (int64_t i = 0; i < in_plane; ++i) dst[i] = static_cast<T>(acc[i]);
      }
    }
  });
}

Tensor pad_forward(const char* op, const Tensor& self, const IntList& padding, int64_t k, bool reflect) {
  const DimVector out_sizes = padded_sizes(op, self, padding, k, reflect);
  Tensor out = empty_tensor(out_sizes, self.dtype(), self.device());
  if (out.numel() == 0) {
    visit_dtype(self.dtype(), [&]<typename T>() {
      if constexpr (std::is_same_v<T, bool>) fail_dtype_not_implemented(op, self.dtype());
    });
    return out;
  }
  const Tensor input = ember::contiguous(self);
  const PadPlan plan = make_plan(self.sizes(), padding, reflect);
  visit_dtype(self.dtype(), [&]<typename T>() {
    if constexpr (std::is_same_v<T, bool>) fail_dtype_not_implemented(op, self.dtype());
    else pad_planes<T>(input.data<T>(), out.data<T>(), plan);
  });
  return out;
}

}  // namespace

Tensor reflection_pad1d_cpu(const Tensor& self, const IntList& padding) {
  return pad_forward("reflection_pad1d", self, padding, 1, true);
}
Tensor reflection_pad2d_cpu(const Tensor& self, const IntList& padding) {
  return pad_forward("reflection_pad2d", self, padding, 2, true);
}
Tensor reflection_pad3d_cpu(const Tensor& self, const IntList& padding) {
  return pad_forward("reflection_pad3d", self, padding, 3, true);
}
Tensor replication_pad1d_cpu(const Tensor& self, const IntList& padding) {
  return pad_forward("replication_pad1d", self, padding, 1, false);
}
Tensor replication_pad2d_cpu(const Tensor& self, const IntList& padding) {
  return pad_forward("replication_pad2d", self, padding, 2, false);
}
Tensor replication_pad3d_cpu(const Tensor& self, const IntList& padding) {
  return pad_forward("replication_pad3d", self, padding, 3, false);
}

Tensor pad_edge_backward_cpu(const Tensor& grad_output, const IntList& input_size, const IntList& padding,
                             bool reflect) {
  const int64_t k = (int64_t)padding.size() / 2, nd = (int64_t)input_size.size();
  EMBER_CHECK(padding.size() % 2 == 0 && k >= 1 && k <= 3 && nd >= k, Runtime, "_pad_edge_backward: ",
              padding.size(), " padding amounts for an input of ", nd, " dims");
  DimVector in_sizes(input_size), expected(input_size);
  for (int64_t i = 0; i < nd; ++i)
    EMBER_CHECK(in_sizes[i] >= 0, Runtime, "_pad_edge_backward: negative input size ", shape_str(in_sizes));
  for (int64_t i = 0; i < k; ++i) {
    const int64_t dim = nd - 1 - i;
    EMBER_CHECK(in_sizes[dim] > 0, Runtime, "_pad_edge_backward: empty padded dim in ", shape_str(in_sizes));
    // reflect's table stays inside the input only for amounts below the dim's size
    EMBER_CHECK(!reflect || (padding[2 * i] < in_sizes[dim] && padding[2 * i + 1] < in_sizes[dim]), Runtime,
                "_pad_edge_backward: reflect padding (", padding[2 * i], ", ", padding[2 * i + 1], ") of dim ", dim,
                " of input ", shape_str(in_sizes));
    expected[dim] += padding[2 * i] + padding[2 * i + 1];
  }
  EMBER_CHECK(grad_output.sizes() == expected, Runtime, "_pad_edge_backward: grad_output ",
              shape_str(grad_output.sizes()), " is not the padded input shape ", shape_str(expected));
  Tensor grad_input = empty_tensor(in_sizes, grad_output.dtype(), grad_output.device());
  const PadPlan plan = make_plan(in_sizes, padding, reflect);
  const Tensor g = ember::contiguous(grad_output);
  visit_floating(grad_output.dtype(), "_pad_edge_backward", [&]<typename T>() {
    if (grad_input.numel() > 0) unpad_planes<T>(g.data<T>(), grad_input.data<T>(), plan);
  });
  return grad_input;
}

}  // namespace ember::cpu
