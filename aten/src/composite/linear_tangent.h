#pragma once
// The forward-mode tangent of a composite that computes its result without grad and records its
// own node (clone, to, cat, stack, mean). Its inner ops would compute the tangent under that
// no-grad scope too, so the tangent would lose its reverse graph (reverse-over-forward would be
// silently wrong). These ops are linear: the tangent is the op of the inputs' tangents (zeros for
// inputs without one), computed here in the caller's grad mode.
#include "ember/autograd.h"
#include "ember/forward_ad.h"
#include "ember/tensor.h"

namespace ember::native {

// `op(inputs)`; with forward AD active and a tangent on an input, the result also gets the tangent
// `op(tangents)`. `op` calls the public op, so both calls run its ordinary (non-dual) path.
template <typename F>
Tensor with_linear_tangent(const TensorList& inputs, F&& op) {
  const uint64_t first_node = autograd::next_sequence_nr();
  Tensor result;
  {
    forward_ad::Pause pause;
    result = op(inputs);
  }
  forward_ad::Pause pause;
  TensorList tangents;
  tangents.reserve(inputs.size());
  for (const Tensor& t : inputs) tangents.push_back(forward_ad::tangent_or_zeros(forward_ad::tangent(t), t));
  forward_ad::set_output_tangent(result, op(tangents), {}, first_node);
  return result;
}

}  // namespace ember::native
