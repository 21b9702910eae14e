#pragma once
// What rand, randn and randint make of Philox's bits, shared by the CPU and
// CUDA kernels of _philox_fill_ so that a (seed, offset) gives the same values on both.
// Each transform reads one Philox block (four 32-bit words) and makes
// kPerBlock consecutive elements: element i of a tensor comes from block
// first + i / kPerBlock, whichever device or thread computes it.
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>

#include "ember/dtype.h"
#include "ember/errors.h"
#include "ember/generator.h"
#include "ember/half.h"

namespace ember::random {

// A value of a 16/32-bit float type in [0, 1) with as many random bits as it holds.
template <typename T>
EMBER_HD inline T uniform_of(uint32_t x) {
  if constexpr (std::is_same_v<T, Half>) return T((float)(x >> 21) * (1.0f / 2048.0f));
  else if constexpr (std::is_same_v<T, BFloat16>) return T((float)(x >> 24) * (1.0f / 256.0f));
  else return T(uniform_float(x));
}

// Box-Muller: a pair of uniforms (u1, u2) gives the pair (r cos, r sin); k picks one.
EMBER_HD inline double box_muller(double u1, double u2, int k) {
  constexpr double kTwoPi = 6.283185307179586476925286766559;
  double r = ::sqrt(-2.0 * ::log(1.0 - u1));  // 1 - u1 lies in (0, 1]
  double theta = kTwoPi * u2;
  return (k & 1) ? r * ::sin(theta) : r * ::cos(theta);
}

// Uniform in [0, 1): 53 bits a double (two a block), else one word a value.
template <typename T>
struct Uniform {
  static constexpr int kPerBlock = std::is_same_v<T, double> ? 2 : 4;
  EMBER_HD T operator()(const Philox& ph, int k) const {
    if constexpr (std::is_same_v<T, double>) return uniform_double(ph.out[2 * k], ph.out[2 * k + 1]);
    else return uniform_of<T>(ph.out[k]);
  }
};

// Standard normal.
template <typename T>
struct Normal {
  static constexpr int kPerBlock = std::is_same_v<T, double> ? 2 : 4;
  EMBER_HD T operator()(const Philox& ph, int k) const {
    if constexpr (std::is_same_v<T, double>) {
      return box_muller(uniform_double(ph.out[0], ph.out[1]), uniform_double(ph.out[2], ph.out[3]), k);
    } else {
      int pair = k & 2;
      return T((float)box_muller(uniform_float(ph.out[pair]), uniform_float(ph.out[pair + 1]), k));
    }
  }
};

template <typename T>
EMBER_HD inline T integer_as(int64_t v) {
  if constexpr (std::is_same_v<T, bool>) return v != 0;
  else if constexpr (std::is_integral_v<T>) return (T)v;
  else return T((float)(double)v);
}

// Uniform integers in [low, low + range); Wide takes 64 bits a value (ranges past 2^32).
template <typename T, bool Wide>
struct RandomInt {
  static constexpr int kPerBlock = Wide ? 2 : 4;
  int64_t low;
  uint64_t range;
  EMBER_HD T operator()(const Philox& ph, int k) const {
    if constexpr (Wide) {
      uint64_t x = ((uint64_t)ph.out[2 * k] << 32) | ph.out[2 * k + 1];
      return integer_as<T>((int64_t)((uint64_t)low + x % range));
    } else {
      return integer_as<T>(low + (int64_t)((uint64_t)ph.out[k] % range));
    }
  }
};

enum class RandomKind : uint8_t { Uniform, Normal, Integer };

// Calls fn(transform) with the transform that makes `kind` in dtype T (nothing
// for a floating kind and an integer T); Integer draws from [low, low + range).
template <typename T, typename Fn>
void with_transform(RandomKind kind, int64_t low, uint64_t range, Fn&& fn) {
  if (kind == RandomKind::Integer) {
    if (range <= (uint64_t)UINT32_MAX + 1) fn(RandomInt<T, false>{low, range});
    else fn(RandomInt<T, true>{low, range});
  } else if constexpr (!std::is_integral_v<T>) {
    if (kind == RandomKind::Uniform) fn(Uniform<T>{});
    else fn(Normal<T>{});
  }
}

// A fill's arguments as its kernels read them: Integer draws from [low, low + range).
struct FillArgs {
  RandomKind kind;
  int64_t low = 0;
  uint64_t range = 0;
};

// Checks _philox_fill_'s arguments against `dtype`: the distribution's name,
// a floating dtype for 'uniform' and 'normal', low < high for 'integer'.
inline FillArgs fill_args(ScalarType dtype, const std::string& distribution, int64_t low, int64_t high,
                          const char* op) {
  if (distribution == "integer") {
    EMBER_CHECK(low < high, Runtime, op, ": 'integer' expects low < high, but got low=", low, " and high=", high);
    return {RandomKind::Integer, low, (uint64_t)high - (uint64_t)low};
  }
  EMBER_CHECK(distribution == "uniform" || distribution == "normal", Value, op,
              ": distribution must be 'uniform', 'normal' or 'integer', but got '", distribution, "'");
  if (!is_floating(dtype)) fail_dtype_not_implemented(op, dtype);
  return {distribution == "uniform" ? RandomKind::Uniform : RandomKind::Normal};
}

// The Philox blocks a fill of `n` elements of `dtype` takes: what the caller reserves from its generator.
inline uint64_t philox_blocks(ScalarType dtype, const FillArgs& args, int64_t n) {
  uint64_t blocks = 0;
  visit_dtype(dtype, [&]<typename T>() {
    with_transform<T>(args.kind, args.low, args.range, [&](auto f) {
      constexpr int per_block = decltype(f)::kPerBlock;
      blocks = (uint64_t)((n + per_block - 1) / per_block);
    });
  });
  return blocks;
}

}  // namespace ember::random
