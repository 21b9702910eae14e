#pragma once
// Forward-mode AD (PyTorch's torch.autograd.forward_ad). A tensor's tangent at
// the current dual level lives in its AutogradMeta (`fw_grad`); a generated op
// entry whose differentiable input has one computes its output's tangent from
// derivatives.yaml (docs/ARCHITECTURE.md, "Autograd: forward mode").
//
// Invariant: a stored tangent has its primal's sizes, strides and offset, so
// the tangent of a view is the same view of its base's tangent.
#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <utility>

#include "ember/tensor.h"

namespace ember::forward_ad {

// The number of tensors holding a tangent; every op entry reads it once, so
// an ordinary call pays one relaxed load and a predicted branch.
inline std::atomic<int64_t> live_tangents{0};
inline bool maybe_active() { return live_tangents.load(std::memory_order_relaxed) != 0; }

// Dual levels: one at a time, as in PyTorch. enter_level returns the new level (0).
int64_t enter_level();
// Clears every tangent of `level` (the current one).
void exit_level(int64_t level);
int64_t current_level();  // -1 when no level is active

// While one exists, this thread's ops ignore tangents: an op entry computes its
// primal and its tangent formula under it, so neither records tangents of its own.
class Pause {
 public:
  Pause();
  ~Pause();
  Pause(const Pause&) = delete;
  Pause& operator=(const Pause&) = delete;

 private:
  bool prev_;
};

// Forward AD is not paused here and one of `inputs` has a tangent: the op's dual path runs.
bool wanted(std::initializer_list<const Tensor*> inputs);
bool wanted(const TensorList& inputs);

// The tangent of `t` at the current level, or an undefined tensor. A view
// without a tangent of its own takes the same view of its base's, which an
// in-place op may have set after the view was made.
Tensor tangent(const Tensor& t);
// `tangent`, or zeros shaped like `primal` when it is undefined (an absent tangent in a formula);
// undefined when `primal` is (a None optional argument).
Tensor tangent_or_zeros(const Tensor& tangent, const Tensor& primal);
// `tangent` broadcast to `like`'s shape (a pointwise op's input tangent, before its formula).
Tensor expand_like(const Tensor& tangent, const Tensor& like);
// `acc += term`, `acc` starting undefined.
void accumulate(Tensor& acc, const Tensor& term);

// Sets the tangent of an op's fresh `output` (undefined: none). It is stored as
// is when it has the output's layout and dtype and, unless `may_alias` (view
// ops), shares no memory with an input tangent; else it is copied into that
// layout. The node the op recorded (sequence_nr >= first_node) gets it for its
// saved output.
void set_output_tangent(const Tensor& output, const Tensor& tangent,
                        std::initializer_list<const Tensor*> input_tangents, uint64_t first_node,
                        bool may_alias = false);
// An in-place op wrote `self`: its tangent becomes `value` (zero when undefined),
// written into the existing tangent (so views and holders of it see the change),
// or into a new one; a view without one first gives its base a zero tangent.
void update_tangent(const Tensor& self, const Tensor& value, uint64_t first_node);

// out= variants do not support forward AD (PyTorch's NotImplementedError).
void check_out(std::initializer_list<const Tensor*> tensors, const char* name);
void check_out(const TensorList& tensors, const char* name);
// An op without a derivative: a floating `result` of inputs with tangents raises.
void check_differentiable(const Tensor& result, std::initializer_list<const Tensor*> inputs, const char* name);
[[noreturn]] void not_implemented(const char* name);

// ember.autograd.forward_ad: a view of `primal` whose tangent is `tangent`; and
// (a view of `t` that has no tangent, t's tangent or undefined).
Tensor make_dual(const Tensor& primal, const Tensor& tangent, int64_t level);
std::pair<Tensor, Tensor> unpack_dual(const Tensor& t, int64_t level);

// For SavedVariable: the tangent held directly by `t`, and setting one without checks.
Tensor own_tangent(const Tensor& t);
void set_own_tangent(const Tensor& t, const Tensor& tangent);

}  // namespace ember::forward_ad
