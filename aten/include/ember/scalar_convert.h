#pragma once
// A Python number converted to a tensor's element type with PyTorch's overflow
// check (c10's checked_convert): fill_, full, setitem of a number and the Scalar
// arguments of pointwise ops (alpha, clamp's bounds, pow's exponent) raise
// "value cannot be converted to type int8_t without overflow" where PyTorch does.
// Host code only: kernels receive the converted value.
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "ember/errors.h"
#include "ember/half.h"
#include "ember/scalar.h"

namespace ember {

// The C++ type names PyTorch's message prints.
template <typename T> constexpr const char* checked_type_name() {
  if constexpr (std::is_same_v<T, uint8_t>) return "uint8_t";
  else if constexpr (std::is_same_v<T, int8_t>) return "int8_t";
  else if constexpr (std::is_same_v<T, int16_t>) return "int16_t";
  else if constexpr (std::is_same_v<T, int32_t>) return "int";
  else if constexpr (std::is_same_v<T, int64_t>) return "int64_t";
  else if constexpr (std::is_same_v<T, float>) return "float";
  else if constexpr (std::is_same_v<T, Half>) return "c10::Half";
  else return "value type";
}

// True when PyTorch refuses to convert `s` to T. Unsigned types also take
// negatives down to -max (uint8 accepts -255, as PyTorch); bool, double and
// bfloat16 take anything, floating types take inf and NaN.
template <typename T> inline bool scalar_overflows(const Scalar& s) {
  if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, double> || std::is_same_v<T, BFloat16>) {
    return false;
  } else if constexpr (std::is_integral_v<T>) {
    if (s.is_bool()) return false;
    constexpr double hi = (double)std::numeric_limits<T>::max();
    constexpr double lo = std::is_unsigned_v<T> ? -hi : (double)std::numeric_limits<T>::lowest();
    if (s.is_integral()) {
      const int64_t v = s.to_int();
      if constexpr (sizeof(T) == 8) return false;
      else return (double)v > hi || (double)v < lo;
    }
    const double d = s.to_double();
    if (!std::isfinite(d)) return true;
    if constexpr (sizeof(T) == 8) return d >= 0x1p63 || d < -0x1p63;  // (double)INT64_MAX rounds up to 2^63
    else return d > hi || d < lo;
  } else {
    if (!s.is_floating()) return false;
    const double d = s.to_double();
    const double hi = std::is_same_v<T, Half> ? 65504.0 : (double)std::numeric_limits<float>::max();
    return std::isfinite(d) && (d > hi || d < -hi);
  }
}

// s as the math type M of an op computing in T, after T's overflow check.
template <typename T, typename M = T> inline M checked_scalar(const Scalar& s) {
  EMBER_CHECK(!scalar_overflows<T>(s), Runtime, "value cannot be converted to type ", checked_type_name<T>(),
              " without overflow");
  return s.template to<M>();
}

// The same check for a tensor of dtype `dt`, before dispatch (fill_, full, setitem, where's numbers).
void check_scalar_fits(const Scalar& s, ScalarType dt);

}  // namespace ember
