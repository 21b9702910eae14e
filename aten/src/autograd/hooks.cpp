// Calling the hooks of autograd_hooks.h: the engine's calls around a hooked
// node, saved-tensor hooks in SavedVariable, and the thread's stack of
// saved-tensor hook factories.
#include <utility>

#include "ember/autograd.h"

namespace ember {

void NodeHooksDeleter::operator()(NodeHooks* hooks) const { delete hooks; }
void LeafHooksDeleter::operator()(LeafHooks* hooks) const { delete hooks; }

namespace autograd {
namespace {

// A copy to iterate: a hook may register or remove hooks of the node it runs on.
template <typename Hook>
std::vector<std::shared_ptr<Hook>> snapshot(const std::vector<std::shared_ptr<Hook>>& hooks) {
  return hooks;
}

bool any_defined(const TensorList& ts) {
  for (const Tensor& t : ts)
    if (t.defined()) return true;
  return false;
}

LeafHooks* leaf_hooks(AccumulateGrad* leaf) {
  return leaf ? leaf->variable.impl()->autograd->leaf_hooks.get() : nullptr;
}

}  // namespace

TensorList call_tensor_pre_hooks(Node& node, AccumulateGrad* leaf, TensorList grads) {
  for (const auto& hook : snapshot(node.hooks->tensor_pre)) grads = (*hook)(std::move(grads));
  if (LeafHooks* hooks = leaf_hooks(leaf))
    for (const auto& hook : snapshot(hooks->pre)) grads = (*hook)(std::move(grads));
  return grads;
}

TensorList call_function(Node& node, AccumulateGrad* leaf, TensorList grads) {
  for (const auto& hook : snapshot(node.hooks->pre)) grads = (*hook)(std::move(grads));
  if (!any_defined(grads)) return {};  // a pre-hook dropped every gradient
  const bool has_post = !node.hooks->post.empty();
  TensorList results = node.apply(has_post ? TensorList(grads) : std::move(grads));
  if (LeafHooks* hooks = leaf_hooks(leaf))
    for (const auto& hook : snapshot(hooks->post_accumulate)) (*hook)(leaf->variable);
  if (has_post)
    for (const auto& hook : snapshot(node.hooks->post)) results = (*hook)(std::move(results), grads);
  return results;
}

// ---------------------------------------------------------------- saved-tensor hooks
namespace saved_tensor_hooks {
namespace {

struct ThreadState {
  std::vector<std::shared_ptr<SavedTensorHooksFactory>> stack;
  std::optional<std::string> disabled;
  ~ThreadState() { detail::g_installed.fetch_sub((int)stack.size(), std::memory_order_relaxed); }
};
thread_local ThreadState t_state;

}  // namespace

SavedTensorHooksFactory* current() { return t_state.stack.empty() ? nullptr : t_state.stack.back().get(); }

void push(std::shared_ptr<SavedTensorHooksFactory> factory) {
  if (t_state.disabled) EMBER_FAIL(Runtime, *t_state.disabled);
  t_state.stack.push_back(std::move(factory));
  detail::g_installed.fetch_add(1, std::memory_order_relaxed);
}

void pop() {
  EMBER_CHECK(!t_state.stack.empty(), Runtime, "saved_tensors_hooks: no hooks to pop on this thread");
  t_state.stack.pop_back();
  detail::g_installed.fetch_sub(1, std::memory_order_relaxed);
}

void disable(const std::string& message) {
  t_state.disabled = message;
  if (!t_state.stack.empty()) EMBER_FAIL(Runtime, message);
}

void enable() { t_state.disabled.reset(); }

std::optional<std::string> disabled_message() { return t_state.disabled; }

}  // namespace saved_tensor_hooks
}  // namespace autograd

void SavedVariable::save_with_hooks(const Tensor& t, std::unique_ptr<SavedVariableHooks> hooks) {
  requires_grad_ = t.requires_grad();
  output_nr_ = t.output_nr();
  if (!is_output_) {
    // What unpack re-attaches to the unpacked tensor: the input's node, or a leaf's accumulator.
    grad_fn_ = t.grad_fn();
    if (!grad_fn_ && requires_grad_) grad_accumulator_ = autograd::gradient_edge(t).fn;
  }
  hooks_ = std::move(hooks);
  {
    NoGradGuard no_grad;
    // An output goes as a detached alias: what the hook keeps must not hold the output's node.
    hooks_->call_pack_hook(is_output_ ? detach_copy(t) : t);
  }
  EMBER_CHECK(t.version() == version_, Runtime,
              "A saved tensor pack hook is modifying its input in place. Tensors provided as input to pack hook "
              "cannot be modified by in-place operations as this can lead to unexpected side-effects. Please open "
              "an issue if you need to perform in-place operations on the input to a pack hook.");
}

Tensor SavedVariable::unpack_with_hooks(const std::shared_ptr<Node>& owner) const {
  // No version check: what the hooks return is theirs (PyTorch's rule too).
  Tensor t = detach_copy(hooks_->call_unpack_hook());
  if (is_output_) {
    if (requires_grad_ && owner) autograd::set_history(t, owner, output_nr_);
  } else if (grad_fn_) {
    autograd::set_history(t, grad_fn_, output_nr_);
  } else if (requires_grad_) {
    std::shared_ptr<Node> accumulator = grad_accumulator_.lock();
    EMBER_CHECK(accumulator, Runtime, "No grad accumulator for a saved leaf");
    AutogradMeta& meta = t.impl()->autograd_meta();
    meta.requires_grad = true;
    meta.grad_accumulator = accumulator;  // gradients reach the saved leaf, not this alias
  }
  return t;
}

}  // namespace ember
