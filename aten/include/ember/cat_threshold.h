#pragma once
// cat/stack: results of at least this many elements split their block copies across threads; smaller
// ones (a DataLoader batch) copy serially, as a parallel region costs more than a memcpy of that size.
// (Beside thresholds.h, which every kernel includes; tests read it through _C._thresholds().)
#include "ember/thresholds.h"

namespace ember::thresholds {
constexpr int64_t kCatParallelWork = 16 * kGrainSize;
}  // namespace ember::thresholds
