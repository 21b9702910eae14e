#pragma once
// The functions of the `scalar:` language (ops.yaml), once, for host and
// device. Arguments are already in the op's math type (float for halves).
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include "ember/half.h"
#include "ember/macros.h"

#if !defined(__CUDACC__) && defined(__x86_64__) && defined(__GNUC__)
// glibc declares its vector math (libmvec) only under -ffast-math; declaring
// it here lets `#pragma omp simd` loops vectorise exp, log, sin... without
// giving up IEEE semantics.
extern "C" {
#define EMBER_SIMD __attribute__((__simd__("notinbranch")))
float expf(float) noexcept EMBER_SIMD; double exp(double) noexcept EMBER_SIMD;
float logf(float) noexcept EMBER_SIMD; double log(double) noexcept EMBER_SIMD;
float sinf(float) noexcept EMBER_SIMD; double sin(double) noexcept EMBER_SIMD;
float cosf(float) noexcept EMBER_SIMD; double cos(double) noexcept EMBER_SIMD;
float tanhf(float) noexcept EMBER_SIMD; double tanh(double) noexcept EMBER_SIMD;
float expm1f(float) noexcept EMBER_SIMD; double expm1(double) noexcept EMBER_SIMD;
float log1pf(float) noexcept EMBER_SIMD; double log1p(double) noexcept EMBER_SIMD;
float powf(float, float) noexcept EMBER_SIMD; double pow(double, double) noexcept EMBER_SIMD;
// glibc 2.35 added these (erfcf: 1.5 ulp at worst over a sweep of floats, 4x the old double fit's speed).
float erff(float) noexcept EMBER_SIMD; double erf(double) noexcept EMBER_SIMD;
float erfcf(float) noexcept EMBER_SIMD; double erfc(double) noexcept EMBER_SIMD;
float tanf(float) noexcept EMBER_SIMD; double tan(double) noexcept EMBER_SIMD;
float asinf(float) noexcept EMBER_SIMD; double asin(double) noexcept EMBER_SIMD;
float acosf(float) noexcept EMBER_SIMD; double acos(double) noexcept EMBER_SIMD;
float atanf(float) noexcept EMBER_SIMD; double atan(double) noexcept EMBER_SIMD;
float sinhf(float) noexcept EMBER_SIMD; double sinh(double) noexcept EMBER_SIMD;
float coshf(float) noexcept EMBER_SIMD; double cosh(double) noexcept EMBER_SIMD;
float asinhf(float) noexcept EMBER_SIMD; double asinh(double) noexcept EMBER_SIMD;
float acoshf(float) noexcept EMBER_SIMD; double acosh(double) noexcept EMBER_SIMD;
float atanhf(float) noexcept EMBER_SIMD; double atanh(double) noexcept EMBER_SIMD;
float exp2f(float) noexcept EMBER_SIMD; double exp2(double) noexcept EMBER_SIMD;
float log2f(float) noexcept EMBER_SIMD; double log2(double) noexcept EMBER_SIMD;
float log10f(float) noexcept EMBER_SIMD; double log10(double) noexcept EMBER_SIMD;
float atan2f(float, float) noexcept EMBER_SIMD; double atan2(double, double) noexcept EMBER_SIMD;
float hypotf(float, float) noexcept EMBER_SIMD; double hypot(double, double) noexcept EMBER_SIMD;
#undef EMBER_SIMD
}
#endif

namespace ember::math {

template <typename T> constexpr bool is_float_v = std::is_floating_point_v<T>;

#define EMBER_UNARY_FLOAT(name, fn)                                        \
  EMBER_HD inline float name(float x) { return ::fn##f(x); }                \
  EMBER_HD inline double name(double x) { return ::fn(x); }
EMBER_UNARY_FLOAT(exp, exp)
EMBER_UNARY_FLOAT(log, log)
EMBER_UNARY_FLOAT(log1p, log1p)
EMBER_UNARY_FLOAT(expm1, expm1)
EMBER_UNARY_FLOAT(sqrt, sqrt)
EMBER_UNARY_FLOAT(sin, sin)
EMBER_UNARY_FLOAT(cos, cos)
EMBER_UNARY_FLOAT(tan, tan)
EMBER_UNARY_FLOAT(tanh, tanh)
EMBER_UNARY_FLOAT(erf, erf)
EMBER_UNARY_FLOAT(erfc, erfc)
EMBER_UNARY_FLOAT(asin, asin)
EMBER_UNARY_FLOAT(acos, acos)
EMBER_UNARY_FLOAT(atan, atan)
EMBER_UNARY_FLOAT(sinh, sinh)
EMBER_UNARY_FLOAT(cosh, cosh)
EMBER_UNARY_FLOAT(asinh, asinh)
EMBER_UNARY_FLOAT(acosh, acosh)
EMBER_UNARY_FLOAT(atanh, atanh)
EMBER_UNARY_FLOAT(exp2, exp2)
EMBER_UNARY_FLOAT(log2, log2)
EMBER_UNARY_FLOAT(log10, log10)
#undef EMBER_UNARY_FLOAT


// The inverse of erf on [-1, 1] (±inf at ±1, NaN outside). CUDA has it; on the
// host, Giles' single-precision approximation refined by Newton steps (on erfc
// above 0.5: there erf's difference from y would cancel).
template <typename T> EMBER_HD inline T erfinv(T y) {
#ifdef __CUDA_ARCH__
  if constexpr (std::is_same_v<T, float>) return ::erfinvf(y); else return ::erfinv(y);
#else
  if (!(y >= T(-1) && y <= T(1))) return std::numeric_limits<T>::quiet_NaN();
  const double a = std::fabs(double(y));
  if (a == 1.0) return y * std::numeric_limits<T>::infinity();
  double w = -std::log((1.0 - a) * (1.0 + a)), x;
  if (w < 5.0) {
    w -= 2.5;
    constexpr double c[] = {2.81022636e-08,  3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                            -0.00125372503, -0.00417768164, 0.246640727,    1.50140941};
    x = 0;
    for (double ci : c) x = ci + x * w;
  } else {
    w = std::sqrt(w) - 3.0;
    constexpr double c[] = {-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
                            -0.0076224613,   0.00943887047,  1.00167406,    2.83297682};
    x = 0;
    for (double ci : c) x = ci + x * w;
  }
  x *= a;
  // erf'(x) = 2/sqrt(pi) exp(-x^2). Near 1, Newton on log(erfc(x)) = log(1 - a),
  // which is close to linear where erfc falls off like exp(-x^2).
  const double log_q = a <= 0.5 ? 0.0 : std::log(1.0 - a);  // only the erfc branch uses it
  for (int i = 0; i < (a <= 0.5 ? 2 : 6); ++i) {
    const double slope = 1.1283791670955126 * std::exp(-x * x);
    if (a <= 0.5) {
      x -= (std::erf(x) - a) / slope;
    } else {
      const double r = std::erfc(x);
      x += (std::log(r) - log_q) * r / slope;
    }
  }
  return T(std::copysign(x, double(y)));  // erfinv(-0) = -0
#endif
}

// Binary float functions of the math ops (issue 11); integers only reach fmod.
#define EMBER_BINARY_FLOAT(name, fn)                                                  \
  EMBER_HD inline float name(float a, float b) { return ::fn##f(a, b); }               \
  EMBER_HD inline double name(double a, double b) { return ::fn(a, b); }
EMBER_BINARY_FLOAT(atan2, atan2)
EMBER_BINARY_FLOAT(hypot, hypot)
EMBER_BINARY_FLOAT(copysign, copysign)
#undef EMBER_BINARY_FLOAT
// C's fmod: the remainder has the sign of `a` (truncated division).
template <typename T> EMBER_HD inline T fmod(T a, T b) {
  if constexpr (std::is_same_v<T, float>) return ::fmodf(a, b);
  else if constexpr (std::is_same_v<T, double>) return ::fmod(a, b);
  else if constexpr (std::is_same_v<T, bool>) return false;
  else {
    if (b == 0) return 0;
    if constexpr (std::is_signed_v<T>) if (b == -1) return 0;
    return (T)(a % b);
  }
}
EMBER_HD inline float lgamma(float x) { return ::lgammaf(x); }
EMBER_HD inline double lgamma(double x) { return ::lgamma(x); }
// The digamma function psi = d/dx log(gamma(x)): reflection below 0 (on the fractional part,
// where tan is accurate), the recurrence psi(x) = psi(x + 1) - 1/x up to 10, then the
// asymptotic series, whose first omitted term is below 1e-15 relative there.
template <typename T> EMBER_HD inline T digamma(T x) {
  double v = double(x), acc = 0.0;
  if (v == 0.0) return std::copysign(std::numeric_limits<T>::infinity(), -double(x));  // PyTorch: -inf at +0
  if (v < 0.0) {
    double whole;
    const double frac = std::modf(v, &whole);
    if (frac == 0.0) return std::numeric_limits<T>::quiet_NaN();
    const double pi = 3.14159265358979323846;
    acc = -pi / std::tan(pi * frac);  // psi(1 - x) - psi(x) = pi cot(pi x)
    v = 1.0 - v;
  }
  while (v < 10.0) { acc -= 1.0 / v; v += 1.0; }
  const double r = 1.0 / (v * v);
  const double series = r * (1.0 / 12 - r * (1.0 / 120 - r * (1.0 / 252 - r * (1.0 / 240 - r * (1.0 / 132 - r * (691.0 / 32760))))));
  return T(acc + (std::log(v) - 0.5 / v - series));
}
// The trigamma function psi' (digamma's derivative), by the same scheme.
template <typename T> EMBER_HD inline T trigamma(T x) {
  double v = double(x), acc = 0.0, sign = 1.0;
  if (v <= 0.0 && v == std::floor(v)) return std::numeric_limits<T>::infinity();
  if (v < 0.5) {
    double whole;
    const double pi = 3.14159265358979323846, s = std::sin(pi * std::modf(v, &whole));
    acc = pi * pi / (s * s);  // psi'(1 - x) + psi'(x) = pi^2 / sin^2(pi x)
    sign = -1.0;
    v = 1.0 - v;
  }
  double t = 0.0;
  while (v < 10.0) { t += 1.0 / (v * v); v += 1.0; }
  const double r = 1.0 / (v * v);
  t += 1.0 / v + 0.5 * r + (1.0 / v) * r * (1.0 / 6 - r * (1.0 / 30 - r * (1.0 / 42 - r * (1.0 / 30 - r * (5.0 / 66 - r * (691.0 / 2730))))));
  return T(acc + sign * t);
}

// Rounding is the identity on integers.
template <typename T> EMBER_HD inline T floor(T x) { if constexpr (is_float_v<T>) return std::floor(x); else return x; }
template <typename T> EMBER_HD inline T ceil(T x) { if constexpr (is_float_v<T>) return std::ceil(x); else return x; }
template <typename T> EMBER_HD inline T trunc(T x) { if constexpr (is_float_v<T>) return std::trunc(x); else return x; }
template <typename T> EMBER_HD inline T round(T x) { if constexpr (is_float_v<T>) return std::nearbyint(x); else return x; }

// + - * of the scalar language: on signed integers they wrap around (two's
// complement), as PyTorch's kernels do; in C++ signed overflow is undefined.
template <typename A, typename B>
using arith_t = decltype(A() + B());
template <typename R>
constexpr bool wraps_v = std::is_integral_v<R> && std::is_signed_v<R>;
template <typename A, typename B> EMBER_HD inline arith_t<A, B> wrapping_add(A a, B b) {
  using R = arith_t<A, B>;
  if constexpr (wraps_v<R>) return R(std::make_unsigned_t<R>(R(a)) + std::make_unsigned_t<R>(R(b)));
  else return a + b;
}
template <typename A, typename B> EMBER_HD inline arith_t<A, B> wrapping_sub(A a, B b) {
  using R = arith_t<A, B>;
  if constexpr (wraps_v<R>) return R(std::make_unsigned_t<R>(R(a)) - std::make_unsigned_t<R>(R(b)));
  else return a - b;
}
template <typename A, typename B> EMBER_HD inline arith_t<A, B> wrapping_mul(A a, B b) {
  using R = arith_t<A, B>;
  if constexpr (wraps_v<R>) return R(std::make_unsigned_t<R>(R(a)) * std::make_unsigned_t<R>(R(b)));
  else return a * b;
}

template <typename T> EMBER_HD inline T abs(T x) {
  if constexpr (std::is_same_v<T, bool> || std::is_unsigned_v<T>) return x;
  else if constexpr (is_float_v<T>) return std::fabs(x);
  else return x < 0 ? (T)-x : x;
}
template <typename T> EMBER_HD inline T sign(T x) {
  if constexpr (std::is_same_v<T, bool>) return x;
  else return (T)((T(0) < x) - (x < T(0)));  // NaN and -0.0 give +0, as PyTorch's sign
}
template <typename T> EMBER_HD inline bool isnan(T x) { if constexpr (is_float_v<T>) return x != x; else return false; }
template <typename T> EMBER_HD inline bool isinf(T x) {
  if constexpr (is_float_v<T>) return x == (T)INFINITY || x == -(T)INFINITY; else return false;
}
// NaN-propagating max/min, as PyTorch's maximum/minimum and amax/amin.
template <typename T> EMBER_HD inline T maximum(T a, T b) {
  if constexpr (is_float_v<T>) { if (a != a) return a; if (b != b) return b; }
  return a > b ? a : b;
}
template <typename T> EMBER_HD inline T minimum(T a, T b) {
  if constexpr (is_float_v<T>) { if (a != a) return a; if (b != b) return b; }
  return a < b ? a : b;
}
template <typename C, typename A, typename B> EMBER_HD inline auto where(C c, A a, B b) {
  using R = std::common_type_t<A, B>;
  return c ? (R)a : (R)b;
}

// An optional bound: `has` is false for None.
template <typename T> struct Opt { T value; bool has; };
template <typename T> EMBER_HD inline T clamp(T x, Opt<T> lo, Opt<T> hi) {
  if constexpr (is_float_v<T>) { if (x != x) return x; }
  if (lo.has && x < lo.value) x = lo.value;
  if (hi.has && x > hi.value) x = hi.value;
  return x;
}
template <typename T> EMBER_HD inline bool clamp_mask(T x, Opt<T> lo, Opt<T> hi) {
  return (!lo.has || x >= lo.value) && (!hi.has || x <= hi.value);
}

// Integer division never traps: division by zero gives 0 (ops check for it
// beforehand where PyTorch raises) and MIN / -1 wraps.
template <typename T> EMBER_HD inline T trunc_divide(T a, T b) {
  if constexpr (is_float_v<T>) return std::trunc(a / b);
  else if constexpr (std::is_same_v<T, bool>) return b ? a : false;
  else {
    if (b == 0) return 0;
    if constexpr (std::is_signed_v<T>) if (b == -1) return (T)(0 - (std::make_unsigned_t<T>)a);
    return a / b;
  }
}
template <typename T> EMBER_HD inline T floor_divide(T a, T b) {
  if constexpr (is_float_v<T>) {
    if (b == 0) return a / b;
    T mod = std::fmod(a, b);
    T div = (a - mod) / b;
    if (mod != 0 && ((b < 0) != (mod < 0))) div -= 1;
    if (div == 0) return std::copysign(T(0), a / b);
    T fl = std::floor(div);
    if (div - fl > T(0.5)) fl += 1;
    return fl;
  } else if constexpr (std::is_same_v<T, bool>) {
    return b ? a : false;
  } else {
    T q = trunc_divide(a, b);
    if constexpr (std::is_signed_v<T>) if (b != 0 && (a % b != 0) && ((a < 0) != (b < 0))) q -= 1;
    return q;
  }
}
template <typename T> EMBER_HD inline T remainder(T a, T b) {
  if constexpr (is_float_v<T>) {
    T m = std::fmod(a, b);
    if (m != 0 && ((b < 0) != (m < 0))) m += b;
    return m;
  } else if constexpr (std::is_same_v<T, bool>) {
    return false;
  } else {
    if (b == 0) return 0;
    if constexpr (std::is_signed_v<T>) {
      if (b == -1) return 0;
      T m = a % b;
      if (m != 0 && ((b < 0) != (m < 0))) m += b;
      return m;
    } else return a % b;
  }
}
// Bitwise ops on integers; on bool they are the logical ones.
template <typename T> EMBER_HD inline T bitwise_and(T a, T b) {
  if constexpr (std::is_integral_v<T>) return (T)(a & b); else return T(0);
}
template <typename T> EMBER_HD inline T bitwise_or(T a, T b) {
  if constexpr (std::is_integral_v<T>) return (T)(a | b); else return T(0);
}
template <typename T> EMBER_HD inline T bitwise_xor(T a, T b) {
  if constexpr (std::is_integral_v<T>) return (T)(a ^ b); else return T(0);
}
template <typename T> EMBER_HD inline T bitwise_not(T a) {
  if constexpr (std::is_same_v<T, bool>) return !a;
  else if constexpr (std::is_integral_v<T>) return (T)~a;
  else return T(0);
}
// Shifts as PyTorch does them: counts past the width give 0 (or the sign for >>).
template <typename T> EMBER_HD inline T left_shift(T a, T b) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    using U = std::make_unsigned_t<T>;
    if (b < 0 || b >= (T)(sizeof(T) * 8)) return 0;
    return (T)((U)a << b);
  } else return T(0);
}
template <typename T> EMBER_HD inline T right_shift(T a, T b) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    if (b < 0 || b >= (T)(sizeof(T) * 8)) return a < 0 ? (T)-1 : (T)0;
    return (T)(a >> b);
  } else return T(0);
}
template <typename T> EMBER_HD inline T pow(T a, T b) {
  if constexpr (std::is_same_v<T, float>) return ::powf(a, b);
  else if constexpr (std::is_same_v<T, double>) return ::pow(a, b);
  else if constexpr (std::is_same_v<T, bool>) return a || !b;
  else {
    // Integer power by squaring; negative exponents follow PyTorch (1, -1, or 0).
    if constexpr (std::is_signed_v<T>) {
      if (b < 0) return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;
    }
    using U = std::make_unsigned_t<T>;
    U result = 1, base = (U)a;
    for (T e = b; e > 0; e >>= 1) { if (e & 1) result *= base; base *= base; }
    return (T)result;
  }
}

}  // namespace ember::math
