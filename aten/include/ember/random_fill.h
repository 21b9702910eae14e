#pragma once
// Draws for the random ops: which generator a fill uses and the in-place fill
// through the dispatched _philox_fill_ (so autograd and version counters see it).
#include <cstdint>

#include "ember/generator.h"
#include "ember/tensor.h"

namespace ember {

// `gen`, or the default generator of `device` when null; raises if it belongs to another device type.
Generator* generator_for(Generator* gen, Device device, const char* op);

// Fills `t` in place from `gen` with _philox_fill_'s `distribution` ('uniform', 'normal', 'integer' in [low, high)).
void philox_fill(const Tensor& t, Generator* gen, const char* op, const char* distribution, int64_t low = 0,
                 int64_t high = 0);

}  // namespace ember
