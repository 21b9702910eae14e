#pragma once
// Shared by the sorting and selection kernels: each element becomes an unsigned
// key whose integer order is PyTorch's sort order (NaN largest, -0.0 equal to
// 0.0), so radix sorts and integer comparisons replace NaN-aware float compares;
// and the geometry of the lines along one dim of a contiguous tensor.
#include <cstdint>
#include <cstring>
#include <tuple>
#include <type_traits>

#include "ember/dtype.h"
#include "ember/half.h"
#include "ember/tensor.h"

namespace ember::cpu::sorting {

template <typename T>
using key_t = std::conditional_t<sizeof(T) == 1, uint8_t,
              std::conditional_t<sizeof(T) == 2, uint16_t,
              std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>>;

template <typename T>
constexpr bool is_float_like = std::is_floating_point_v<T> || std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

// IEEE bits to an order-preserving unsigned key; every NaN maps to the largest key.
template <typename U>
inline U float_bits_key(U bits, U exp_mask, U mant_mask) {
  constexpr U sign = U(1) << (sizeof(U) * 8 - 1);
  if ((bits & exp_mask) == exp_mask && (bits & mant_mask)) return U(~U(0));
  if ((bits & U(~sign)) == 0) return sign;  // both zeros
  return (bits & sign) ? U(~bits) : U(bits | sign);
}

template <typename T>
inline key_t<T> sort_key(T v) {
  using U = key_t<T>;
  if constexpr (std::is_same_v<T, bool>) {
    return U(v);
  } else if constexpr (std::is_integral_v<T>) {
    if constexpr (std::is_signed_v<T>) return U(U(v) ^ (U(1) << (sizeof(T) * 8 - 1)));
    else return U(v);
  } else if constexpr (std::is_same_v<T, Half>) {
    return float_bits_key<uint16_t>(v.x, 0x7c00u, 0x03ffu);
  } else if constexpr (std::is_same_v<T, BFloat16>) {
    return float_bits_key<uint16_t>(v.x, 0x7f80u, 0x007fu);
  } else if constexpr (std::is_same_v<T, float>) {
    uint32_t b;
    std::memcpy(&b, &v, 4);
    return float_bits_key<uint32_t>(b, 0x7f800000u, 0x007fffffu);
  } else {
    uint64_t b;
    std::memcpy(&b, &v, 8);
    return float_bits_key<uint64_t>(b, 0x7ff0000000000000ull, 0x000fffffffffffffull);
  }
}

template <typename T>
inline bool is_nan_value(T v) {
  if constexpr (std::is_floating_point_v<T>) {
    return v != v;
  } else if constexpr (is_float_like<T>) {
    float f = static_cast<float>(v);
    return f != f;
  }
  return false;
}

// A contiguous tensor seen as outer x n x inner: `lines` = outer * inner lines of
// n elements with stride `inner`; line l starts at (l / inner) * n * inner + l % inner.
struct Lines {
  int64_t outer = 1, n = 1, inner = 1;
  int64_t count() const { return outer * inner; }
  int64_t start(int64_t l) const { return (l / inner) * n * inner + l % inner; }
};

inline Lines lines_along(const Tensor& t, int64_t d) {
  Lines g;
  for (int64_t k = 0; k < t.dim(); ++k) {
    if (k < d) g.outer *= t.size(k);
    else if (k == d) g.n = t.size(k);
    else g.inner *= t.size(k);
  }
  return g;
}

// Sizes of `t` with dim `d` removed (or kept as 1).
inline DimVector reduced_shape(const Tensor& t, int64_t d, bool keepdim) {
  DimVector out;
  for (int64_t i = 0; i < t.dim(); ++i) {
    if (i != d) out.push_back(t.size(i));
    else if (keepdim) out.push_back(1);
  }
  return out;
}

// Uninitialised values (self's dtype) and int64 indices of `sizes`.
inline std::tuple<Tensor, Tensor> empty_values_indices(const Tensor& self, const DimVector& sizes) {
  return {empty_tensor(sizes, self.dtype(), self.device()), empty_tensor(sizes, ScalarType::Int64, self.device())};
}

}  // namespace ember::cpu::sorting
