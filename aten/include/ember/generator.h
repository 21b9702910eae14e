#pragma once
// Counter-based random numbers (Philox4x32-10): a value depends only on
// (seed, offset), never on how the work is split, on any device.
#include <cstdint>
#include <mutex>
#include "ember/device.h"
#include "ember/macros.h"

namespace ember {

struct Generator {
  Device device;  // the device whose tensors it fills (CPU or one GPU)
  uint64_t seed = 67280421310721ull;
  uint64_t offset = 0;  // counts 128-bit blocks handed out
  std::mutex mutex;  // ops on several threads draw from one generator
  struct Draw { uint64_t seed, first; };
  // Reserves `blocks` counter blocks; the seed is read under the same lock,
  // so a manual_seed on another thread never pairs a new seed with an old offset.
  Draw reserve(uint64_t blocks) {
    std::lock_guard<std::mutex> g(mutex);
    Draw d{seed, offset};
    offset += blocks;
    return d;
  }
  void manual_seed(uint64_t s) { std::lock_guard<std::mutex> g(mutex); seed = s; offset = 0; }
  uint64_t initial_seed() { std::lock_guard<std::mutex> g(mutex); return seed; }
};

Generator* default_generator();
// The default generator of a device: the CPU's, or one per GPU (index -1: the current GPU).
Generator* default_generator(Device device);

struct Philox {
  uint32_t out[4];
  EMBER_HD static inline void mulhilo(uint32_t a, uint32_t b, uint32_t& hi, uint32_t& lo) {
    uint64_t p = (uint64_t)a * b;
    hi = (uint32_t)(p >> 32); lo = (uint32_t)p;
  }
  // Four 32-bit random words for counter `ctr` under key `seed`.
  EMBER_HD Philox(uint64_t seed, uint64_t ctr) {
    uint32_t c0 = (uint32_t)ctr, c1 = (uint32_t)(ctr >> 32), c2 = 0, c3 = 0;
    uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
    for (int r = 0; r < 10; ++r) {
      uint32_t hi0, lo0, hi1, lo1;
      mulhilo(0xD2511F53u, c0, hi0, lo0);
      mulhilo(0xCD9E8D57u, c2, hi1, lo1);
      uint32_t n0 = hi1 ^ c1 ^ k0, n1 = lo1, n2 = hi0 ^ c3 ^ k1, n3 = lo0;
      c0 = n0; c1 = n1; c2 = n2; c3 = n3;
      k0 += 0x9E3779B9u; k1 += 0xBB67AE85u;
    }
    out[0] = c0; out[1] = c1; out[2] = c2; out[3] = c3;
  }
};

// A uniform float in [0, 1) from 24 random bits; a double from 53.
EMBER_HD inline float uniform_float(uint32_t x) { return (x >> 8) * (1.0f / 16777216.0f); }
EMBER_HD inline double uniform_double(uint32_t hi, uint32_t lo) {
  return ((((uint64_t)hi << 32) | lo) >> 11) * (1.0 / 9007199254740992.0);
}

}  // namespace ember
