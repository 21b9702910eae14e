#pragma once
// Hooks into the backward pass and into saving tensors for it. The core only
// declares these interfaces and calls them; the Python bindings implement them
// with Python callables (python/src/python_hooks.cpp). Unused, each costs one
// null or empty check where the engine or SavedVariable would call it. See
// "Autograd: custom Functions and hooks" in docs/ARCHITECTURE.md.
#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ember/tensor.h"

namespace ember {

// Sees the gradients flowing into a node, one per node output (undefined where
// none flows), before the node runs; returns them, possibly replaced.
struct FunctionPreHook {
  virtual ~FunctionPreHook() = default;
  virtual TensorList operator()(TensorList grad_outputs) = 0;
};

// Sees a node's results, one per next edge, and the gradients the node got;
// returns the results, possibly replaced.
struct FunctionPostHook {
  virtual ~FunctionPostHook() = default;
  virtual TensorList operator()(TensorList grad_inputs, const TensorList& grad_outputs) = 0;
};

// Sees a leaf after the backward pass updated its .grad.
struct PostAccumulateGradHook {
  virtual ~PostAccumulateGradHook() = default;
  virtual void operator()(const Tensor& leaf) = 0;
};

// A node's hooks, in the order the engine calls them; made on first use
// (Node::hooks stays null for the nodes nobody hooks).
struct NodeHooks {
  std::vector<std::shared_ptr<FunctionPreHook>> tensor_pre;  // Tensor.register_hook on the node's outputs
  std::vector<std::shared_ptr<FunctionPreHook>> pre;         // Node.register_prehook
  std::vector<std::shared_ptr<FunctionPostHook>> post;       // Node.register_hook
  std::shared_ptr<void> metadata;  // the bindings' per-node state (Node.metadata)
};

// A leaf's hooks: on its AutogradMeta, since a leaf holds its accumulator only weakly.
struct LeafHooks {
  std::vector<std::shared_ptr<FunctionPreHook>> pre;  // on the leaf's gradient, before accumulation
  std::vector<std::shared_ptr<PostAccumulateGradHook>> post_accumulate;
};

// Deleted out of line (hooks.cpp): the destructors of every node and autograd
// record, inlined everywhere, then only test the pointer.
struct NodeHooksDeleter {
  void operator()(NodeHooks* hooks) const;
};
struct LeafHooksDeleter {
  void operator()(LeafHooks* hooks) const;
};
using NodeHooksPtr = std::unique_ptr<NodeHooks, NodeHooksDeleter>;
using LeafHooksPtr = std::unique_ptr<LeafHooks, LeafHooksDeleter>;

// Packs one tensor saved for backward and unpacks it when backward needs it
// (autograd.graph.saved_tensors_hooks); SavedVariable keeps the packed form only.
struct SavedVariableHooks {
  virtual ~SavedVariableHooks() = default;
  virtual void call_pack_hook(const Tensor& t) = 0;
  virtual Tensor call_unpack_hook() = 0;
};

// Makes the hooks of each tensor saved while it is this thread's innermost factory.
struct SavedTensorHooksFactory {
  virtual ~SavedTensorHooksFactory() = default;
  virtual std::unique_ptr<SavedVariableHooks> make() = 0;
};

struct Node;
struct AccumulateGrad;
namespace autograd {
// The engine's calls on a node with hooks set (`leaf`: the node, when it is the accumulator
// of a leaf whose hooks run): the tensor pre-hooks, run before autograd.grad captures and
// retain_grad see the gradients; then call_function: pre-hooks, apply, the leaf's
// post-accumulate hooks, post-hooks.
TensorList call_tensor_pre_hooks(Node& node, AccumulateGrad* leaf, TensorList grads);
TensorList call_function(Node& node, AccumulateGrad* leaf, TensorList grads);
}  // namespace autograd

namespace autograd::saved_tensor_hooks {
namespace detail {
inline std::atomic<int> g_installed{0};  // factories installed on all threads
}
// One relaxed load: SavedVariable asks current() only when some thread installed a factory.
inline bool maybe_active() { return detail::g_installed.load(std::memory_order_relaxed) != 0; }
// This thread's innermost factory, or null.
SavedTensorHooksFactory* current();
// Installs a factory on this thread; raises the disabled message while disabled.
void push(std::shared_ptr<SavedTensorHooksFactory> factory);
void pop();
// disable_saved_tensors_hooks: push() raises `message` (and so does disabling while a
// factory is installed) until enable(). The message while disabled, else nullopt.
void disable(const std::string& message);
void enable();
std::optional<std::string> disabled_message();
}  // namespace autograd::saved_tensor_hooks

}  // namespace ember
