#pragma once
// A copy of `self` into a new tensor whose backward is `node` (when self
// needs a gradient): clone and to() share it, differing only in the node.
// The copy keeps self's memory order (PyTorch's preserve_format) unless
// `contiguous` is asked for.
#include <memory>

#include "ember/autograd.h"
#include "ember/iterator.h"
#include "ember/ops/copy_.h"
#include "linear_tangent.h"

namespace ember::native {

template <typename NodeT>
Tensor fresh_copy(const Tensor& self, Device device, ScalarType dtype, bool contiguous = false) {
  if (forward_ad::wanted({&self}))
    return with_linear_tangent({self}, [&](const TensorList& t) {
      return fresh_copy<NodeT>(t[0], device, dtype, contiguous);
    });
  // Integral results never take part in autograd.
  const bool track = is_floating(dtype) && autograd::any_requires_grad({&self});
  Tensor result = contiguous ? empty_tensor(self.sizes(), dtype, device)
                            : empty_in_memory_order(self.sizes(), {&self}, dtype, device);
  {
    NoGradGuard guard;
    ember::copy_(result, self);
  }
  result.storage()->version.store(0, std::memory_order_relaxed);  // a new tensor: version 0
  if (track) {
    auto node = std::make_shared<NodeT>();
    node->add_input(self);
    autograd::set_history(result, node);
  }
  return result;
}

}  // namespace ember::native
