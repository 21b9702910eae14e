#pragma once
// float16 and bfloat16 as 16-bit storage types; arithmetic happens in float.
#include <cstdint>
#include <cstring>
#include "ember/macros.h"

namespace ember {

EMBER_HD inline uint32_t float_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u; std::memcpy(&u, &f, 4); return u;
#endif
}
EMBER_HD inline float bits_float(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f; std::memcpy(&f, &u, 4); return f;
#endif
}

struct Half {
  uint16_t x = 0;
  Half() = default;
  EMBER_HD Half(float f) : x(from_float(f)) {}
  EMBER_HD operator float() const { return to_float(x); }

  // IEEE binary16 <-> binary32 with round-to-nearest-even.
  EMBER_HD static uint16_t from_float(float f) {
    uint32_t u = float_bits(f);
    uint32_t sign = (u >> 16) & 0x8000u;
    uint32_t abs = u & 0x7fffffffu;
    if (abs >= 0x7f800000u) return sign | (abs > 0x7f800000u ? 0x7e00u : 0x7c00u);
    if (abs >= 0x477ff000u) return sign | 0x7c00u;  // overflow to inf
    if (abs < 0x38800000u) {                          // subnormal or zero
      if (abs < 0x33000000u) return sign;
      uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
      int shift = 113 - (int)(abs >> 23) + 13;
      uint32_t half = mant >> shift;
      uint32_t rem = mant & ((1u << shift) - 1), mid = 1u << (shift - 1);
      if (rem > mid || (rem == mid && (half & 1))) half++;
      return sign | half;
    }
    uint32_t h = ((abs - 0x38000000u) >> 13);
    uint32_t rem = abs & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) h++;
    return sign | h;
  }
  EMBER_HD static float to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ffu;
    if (exp == 0) {
      if (mant == 0) return bits_float(sign);
      float f = (float)mant * 5.9604644775390625e-8f;  // 2^-24
      return sign ? -f : f;
    }
    if (exp == 31) return bits_float(sign | 0x7f800000u | (mant << 13));
    return bits_float(sign | ((exp + 112) << 23) | (mant << 13));
  }
};

struct BFloat16 {
  uint16_t x = 0;
  BFloat16() = default;
  EMBER_HD BFloat16(float f) : x(from_float(f)) {}
  EMBER_HD operator float() const { return bits_float((uint32_t)x << 16); }
  EMBER_HD static uint16_t from_float(float f) {
    uint32_t u = float_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0u;
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
  }
};

}  // namespace ember
