#pragma once
// A composite whose result ends with PyTorch's node for the whole op (UnsafeViewBackward0, ...).
#include "ember/autograd.h"
#include "ember/tensor.h"

namespace ember::native {

// `op()`, with the node its recorded ops end in shown as `name` (a string literal).
template <typename F>
Tensor with_node_name(const char* name, F&& op) {
  const uint64_t first_node = autograd::next_sequence_nr();
  Tensor result = op();
  autograd::name_composite_node(result, first_node, name);
  return result;
}

}  // namespace ember::native
