#pragma once
// Functions of the `scalar:` language that few ops call (gcd, lcm, nextafter, signbit, i0, i1, gelu_erf*):
// only those ops' functors include this header (codegen/expr.py EXTRA_FUNCTIONS), so editing it
// does not recompile every kernel. Arguments are in the op's math type, as in math.h.
#include <cmath>
#include <type_traits>
#include "ember/half.h"
#include "ember/macros.h"
#include "ember/math_gelu.h"

namespace ember::math {

// Euclid on magnitudes, as PyTorch's calc_gcd: gcd(0, 0) = 0, the result is non-negative.
template <typename T> EMBER_HD inline T gcd(T a, T b) {
  if constexpr (std::is_signed_v<T>) {
    a = a < 0 ? T(-a) : a;
    b = b < 0 ? T(-b) : b;
  }
  while (a != 0) {
    const T c = a;
    a = T(b % a);
    b = c;
  }
  return b;
}

template <typename T> EMBER_HD inline T lcm(T a, T b) {
  const T g = gcd(a, b);
  if (g == 0) return T(0);
  const T m = T(a / g * b);
  if constexpr (std::is_signed_v<T>) return m < 0 ? T(-m) : m;
  return m;
}

// nextafter in the precision of the storage type T, on math-type values: for Half/BFloat16 the step is
// T's ulp, not float's (nextafter(inf, 0) is T's largest finite value, not an inf rounded back).
template <typename T, typename M> EMBER_HD inline M nextafter_in(M a, M b) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
    if (a != a || b != b) return a + b;  // a NaN
    if (a == b) return b;
    T r(a);  // exact: a came from T
    if ((r.x & 0x7fff) == 0) r.x = b > 0 ? 0x0001 : 0x8001;  // from ±0, the smallest subnormal towards b
    else if ((a < b) == (a > 0)) ++r.x;                       // away from zero: the magnitude grows
    else --r.x;
    return M(r);
  } else {
    return std::nextafter(a, b);
  }
}

// The sign bit: set for -0.0 and a negative NaN; negative integers; never for bool/unsigned.
template <typename T> EMBER_HD inline bool signbit(T x) {
  // copysign, not std::signbit: GCC 12 fails (an internal compiler error) vectorising the latter's shift.
  if constexpr (std::is_floating_point_v<T>) return std::copysign(T(1), x) < T(0);
  else if constexpr (std::is_signed_v<T>) return x < 0;
  else return false;
}

// The modified Bessel function I_nu (nu = 0 or 1) of the first kind, in double: its power series
// (positive terms, no cancellation) up to |x| = 30, the asymptotic series e^x / sqrt(2 pi x) *
// sum_k (-1)^k prod_j (4 nu^2 - (2j - 1)^2) / (k! (8x)^k) beyond (its terms fall below 1e-17
// long before they grow again).
template <int Nu> EMBER_HD inline double bessel_i(double x) {
  const double ax = std::fabs(x);
  double r;
  if (ax == HUGE_VAL) {
    r = NAN;  // as PyTorch's (whose Chebyshev form gives inf * 0)
  } else if (ax <= 30.0) {
    const double q = 0.25 * x * x;
    double term = Nu == 0 ? 1.0 : 0.5 * ax, sum = term;
    for (int k = 1; k < 200 && term > 1e-17 * sum; ++k) {
      term *= q / (double(k) * double(k + Nu));
      sum += term;
    }
    r = sum;
  } else {
    const double mu = 4.0 * Nu * Nu;
    double term = 1.0, sum = 1.0;
    for (int k = 1; k < 60; ++k) {
      term *= -(mu - double(2 * k - 1) * double(2 * k - 1)) / (double(k) * 8.0 * ax);
      sum += term;
      if (std::fabs(term) < 1e-17 * std::fabs(sum)) break;
    }
    const double half = std::exp(0.5 * ax);  // e^x in two halves: finite up to x ~ 713, as I_nu itself
    r = half * (half / std::sqrt(2.0 * 3.141592653589793 * ax) * sum);
  }
  return (Nu == 1 && x < 0) ? -r : r;  // I_0 is even, I_1 odd
}

template <typename T> EMBER_HD inline T i0(T x) {
  if (x != x) return x;
  return T(bessel_i<0>(double(x)));
}

template <typename T> EMBER_HD inline T i1(T x) {
  if (x != x) return x;
  return T(bessel_i<1>(double(x)));
}

}  // namespace ember::math
