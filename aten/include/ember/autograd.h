#pragma once
// The tape: nodes are created by generated op wrappers as ops run, and walked
// backwards by the engine (aten/src/autograd/engine.cpp).
#include <memory>
#include <optional>
#include <mutex>
#include <string>
#include <vector>
#include "ember/tensor.h"

namespace ember {

struct Edge {
  std::shared_ptr<Node> fn;
  uint32_t input_nr = 0;
  bool valid() const { return (bool)fn; }
};

// What the engine needs to shape a gradient flowing into an input.
struct InputMeta {
  DimVector shape;
  ScalarType dtype = ScalarType::Float32;
  Device device;
};

struct Node : std::enable_shared_from_this<Node> {
  std::vector<Edge> next_edges;     // one per differentiable input
  std::vector<InputMeta> input_meta;  // parallel to next_edges
  // retain_grad(): gradients arriving for output k are also kept in the slot.
  std::vector<std::pair<uint32_t, std::shared_ptr<Tensor>>> retained;
  uint64_t sequence_nr;
  Node();
  virtual ~Node() = default;
  virtual std::string name() const = 0;
  // Gradients of the inputs from the gradients of the outputs.
  virtual TensorList apply(TensorList&& grads) = 0;
  // Frees saved tensors after a backward pass without retain_graph.
  virtual void release_saved() {}
  // SavedVariable::forget_if_modified on every saved tensor.
  virtual void forget_modified_saved() {}
  // Forward AD: the tangent of output `output_nr`, kept with a saved copy of that output.
  virtual void attach_output_tangent(uint32_t output_nr, const Tensor& tangent) { (void)output_nr, (void)tangent; }
  bool should_compute(size_t i) const { return i < next_edges.size() && next_edges[i].valid(); }
  // Records an input edge (invalid when the input needs no gradient).
  void add_input(const Tensor& t);
};

struct AutogradMeta;
namespace forward_ad {
void forget_holder(AutogradMeta* meta);  // forward_ad.cpp: a tensor with a tangent is going away
}

struct AutogradMeta {
  bool requires_grad = false;
  bool retains_grad = false;
  bool fw_view_blocked = false;  // forward AD: a view never taking its base's tangent (unpack_dual's primal)
  Tensor grad;
  std::shared_ptr<Node> grad_fn;
  std::weak_ptr<Node> grad_accumulator;
  uint32_t output_nr = 0;
  Ref<TensorImpl> view_base;  // set for views of tensors in a graph
  std::shared_ptr<Tensor> retained_grad;  // a non-leaf's .grad after retain_grad()
  Tensor fw_grad;  // forward AD (ember/forward_ad.h): the tangent at the current dual level
  AutogradMeta() {}  // the member initializers, without zeroing the whole object first
  ~AutogradMeta() {
    if (fw_grad.defined()) [[unlikely]] forward_ad::forget_holder(this);
  }
};

// Accumulates into a leaf's .grad.
struct AccumulateGrad final : Node {
  Tensor variable;
  std::mutex mutex;  // backward passes on two threads may reach one leaf
  explicit AccumulateGrad(Tensor v) : variable(std::move(v)) {}
  std::string name() const override { return "AccumulateGrad"; }
  TensorList apply(TensorList&& grads) override;
};

// A tensor kept for backward. Remembers the storage version it was saved at.
class SavedVariable {
 public:
  SavedVariable() = default;
  SavedVariable(const Tensor& t, bool is_output);
  // `owner` re-attaches an output to the node that produced it.
  Tensor unpack(const std::shared_ptr<Node>& owner = nullptr) const;
  void reset() { data_.reset(); was_released_ = true; }
  bool defined() const { return data_.defined(); }
  // After an in-place op wrote into the saved tensor, unpack can only raise:
  // keep what the error names and drop the tensor, which may hold this node
  // through its own history (`y.mul_(y)`), a cycle nothing would free.
  void forget_if_modified();
  // Forward AD: a saved output keeps its tangent, which unpack gives back.
  void attach_tangent(const Tensor& tangent);

 private:
  struct Modified {
    ScalarType dtype;
    DimVector sizes;
    uint32_t version;
  };
  std::optional<Modified> modified_;
  Tensor data_;
  uint32_t version_ = 0;
  uint32_t output_nr_ = 0;
  bool is_output_ = false, requires_grad_ = false, was_released_ = false;
  std::shared_ptr<Node> grad_fn_;  // for saved inputs that are not leaves
  std::weak_ptr<Node> grad_accumulator_;
  bool is_leaf_ = false;
  Tensor leaf_;  // a saved leaf input keeps its identity for higher-order grads
};

struct GradMode {
  static bool is_enabled();
  static void set_enabled(bool enabled);
};

struct AutoGradMode {
  explicit AutoGradMode(bool enabled) : prev_(GradMode::is_enabled()) { GradMode::set_enabled(enabled); }
  ~AutoGradMode() { GradMode::set_enabled(prev_); }
  bool prev_;
};
struct NoGradGuard : AutoGradMode { NoGradGuard() : AutoGradMode(false) {} };

namespace autograd {

// True when grad mode is on and any tensor requires grad.
inline bool any_requires_grad(std::initializer_list<const Tensor*> ts) {
  if (!GradMode::is_enabled()) return false;
  for (const Tensor* t : ts) if (t->defined() && t->requires_grad()) return true;
  return false;
}
bool any_requires_grad(const TensorList& ts);
// The edge a gradient for `t` should flow into (its grad_fn, or its accumulator).
Edge gradient_edge(const Tensor& t);
// Makes `node` the creator of `outputs` (output_nr by position).
void set_history(const Tensor& output, const std::shared_ptr<Node>& node, uint32_t output_nr = 0);
// An in-place op on `self` makes `node` its new creator; refuses leaves that need grad.
void rebase_history(const Tensor& self, const std::shared_ptr<Node>& node, const char* op);
void check_inplace(const Tensor& self, const char* op);
// The sequence number the next node created will get.
uint64_t next_sequence_nr();
// After a derived in-place op copied into self: the nodes of `value`'s graph created since
// `first` drop the saved tensors that copy modified (backward raises on them, no cycle holds self).
void forget_modified_since(const Tensor& value, uint64_t first);
// Before an in-place op with autograd writes: views of graph tensors are refused.
void check_view_inplace(const Tensor& self, const char* op);
// Raises when an out= call would need autograd.
void check_out_no_grad(std::initializer_list<const Tensor*> ts, const char* op);
// Runs the backward pass from `roots` with the given gradients.
void backward(const TensorList& roots, const TensorList& grads, bool retain_graph, bool create_graph,
              const TensorList& inputs = {});
// Gradients of `outputs` with respect to `inputs` (autograd.grad).
TensorList grad(const TensorList& outputs, const TensorList& grad_outputs, const TensorList& inputs,
                bool retain_graph, bool create_graph, bool allow_unused);

}  // namespace autograd
}  // namespace ember
