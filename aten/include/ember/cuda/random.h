#pragma once
// rand, randn and randint on the device: the Philox transforms of
// ember/random_transforms.h run by one thread per Philox block.
#include <cstdint>
#include "ember/random_transforms.h"
#include "ember/tensor.h"

namespace ember::cuda {

using random::RandomKind;

// Fills the contiguous tensor `t` from blocks first, first + 1, ... of `seed`;
// Integer draws from [low, low + range).
void philox_fill(const Tensor& t, RandomKind kind, uint64_t seed, uint64_t first, int64_t low, uint64_t range);

}  // namespace ember::cuda
