#pragma once
// What every generated op header (ember/ops/<name>.h) needs to declare its
// functions, dispatch tables and kernels.
#include <optional>
#include <string>
#include <tuple>
#include "ember/iterator.h"
#include "ember/reduce.h"
#include "ember/tensor.h"

namespace ember {
struct Generator;
}  // namespace ember
