#pragma once
// The tape: nodes are created by generated op wrappers as ops run, and walked
// backwards by the engine (aten/src/autograd/engine.cpp).
#include <initializer_list>
#include <memory>
#include <optional>
#include <mutex>
#include <string>
#include <variant>
#include <vector>
#include "ember/autograd_hooks.h"
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

class SavedVariable;
struct Generator;

// One value a node keeps for backward, under the name Python shows it by
// (grad_fn._saved_<name>, graph export); monostate for an absent optional.
struct SavedField {
  using Value = std::variant<std::monostate, const SavedVariable*, TensorList, bool, int64_t, double, Scalar,
                             DimVector, ScalarType, Device, std::string>;  // string: scatter_reduce's reduce
  const char* name;
  Value value;
};

struct Node : std::enable_shared_from_this<Node> {
  std::vector<Edge> next_edges;     // one per differentiable input
  std::vector<InputMeta> input_meta;  // parallel to next_edges
  // retain_grad(): gradients arriving for output k are also kept in the slot.
  std::vector<std::pair<uint32_t, std::shared_ptr<Tensor>>> retained;
  uint64_t sequence_nr;
  NodeHooksPtr hooks;  // null unless hooked (autograd_hooks.h)
  Node();
  virtual ~Node() = default;
  // A composite op's name for the node its result ends with (autograd::name_composite_node), as PyTorch's.
  const char* renamed = nullptr;
  // Such an op's own inputs, which next_functions shows (as PyTorch's one node); the engine runs next_edges.
  std::unique_ptr<std::vector<Edge>> shown_edges;
  std::string name() const { return renamed ? std::string(renamed) : default_name(); }
  virtual std::string default_name() const = 0;
  // Gradients of the inputs from the gradients of the outputs.
  virtual TensorList apply(TensorList&& grads) = 0;
  // Frees saved tensors after a backward pass without retain_graph.
  virtual void release_saved() {}
  // SavedVariable::forget_if_modified on every saved tensor.
  virtual void forget_modified_saved() {}
  // Forward AD: the tangent of output `output_nr`, kept with a saved copy of that output.
  virtual void attach_output_tangent(uint32_t output_nr, const Tensor& tangent) { (void)output_nr, (void)tangent; }
  // What the node keeps for backward, for inspection only (never on the engine's path).
  virtual std::vector<SavedField> saved_fields() const { return {}; }
  bool should_compute(size_t i) const { return i < next_edges.size() && next_edges[i].valid(); }
  // Records an input edge (invalid when the input needs no gradient).
  void add_input(const Tensor& t);
  NodeHooks& ensure_hooks() {
    if (!hooks) hooks.reset(new NodeHooks());
    return *hooks;
  }
};

// How a view was made. Writing in place through some views would give wrong
// gradients, so it raises (PyTorch's CreationMeta; see handle_view_on_rebase in node.cpp).
enum class CreationMeta : uint8_t {
  Default,
  NoGradMode,       // taken with grad mode off
  MultiOutputNode,  // an output of unbind/split/chunk: one node holds them all
  InCustomFunction,  // a custom Function's output that is (a view of) an input: its node is the Function's
};

struct AutogradMeta;
namespace forward_ad {
void forget_holder(AutogradMeta* meta);  // forward_ad.cpp: a tensor with a tangent is going away
}

// The view fields sit in what was padding: the record keeps its size, so making
// one (every view has one) costs what it did.
struct AutogradMeta {
  bool requires_grad = false;
  bool retains_grad = false;
  CreationMeta creation_meta = CreationMeta::Default;  // views only: how it was made
  bool fw_view_blocked = false;  // forward AD: a view never taking its base's tangent (unpack_dual's primal)
  Tensor grad;
  std::shared_ptr<Node> grad_fn;
  std::weak_ptr<Node> grad_accumulator;
  uint32_t output_nr = 0;
  // Views only: the storage version grad_fn was recorded at; an in-place write through
  // the base or another view since makes it stale (see autograd::view_grad_fn).
  uint32_t attr_version = 0;
  Ref<TensorImpl> view_base;  // views only: the root base (a view of a view points at the root)
  std::shared_ptr<Tensor> retained_grad;  // a non-leaf's .grad after retain_grad()
  LeafHooksPtr leaf_hooks;  // a leaf's Tensor.register_hook and post-accumulate hooks (its accumulator is hooked)
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
  std::string default_name() const override { return "AccumulateGrad"; }
  TensorList apply(TensorList&& grads) override;
};

// A tensor kept for backward. Remembers the storage version it was saved at.
class SavedVariable {
 public:
  SavedVariable() = default;
  SavedVariable(const Tensor& t, bool is_output);
  // `owner` re-attaches an output to the node that produced it.
  Tensor unpack(const std::shared_ptr<Node>& owner = nullptr) const;
  void reset() {
    data_.reset();
    hooks_.reset();
    was_released_ = true;
  }
  bool defined() const { return data_.defined() || hooks_; }
  // After an in-place op wrote into the saved tensor, unpack can only raise:
  // keep what the error names and drop the tensor, which may hold this node
  // through its own history (`y.mul_(y)`), a cycle nothing would free.
  void forget_if_modified();
  // Forward AD: a saved output keeps its tangent, which unpack gives back.
  void attach_tangent(const Tensor& tangent);

 private:
  // With saved-tensor hooks: the hooks keep the tensor, packed; these keep its history.
  void save_with_hooks(const Tensor& t, std::unique_ptr<SavedVariableHooks> hooks);
  Tensor unpack_with_hooks(const std::shared_ptr<Node>& owner) const;
  std::unique_ptr<SavedVariableHooks> hooks_;
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

// SavedField makers for the generated nodes' saved_fields().
inline SavedField saved_field(const char* name, const SavedVariable& v) { return {name, &v}; }
inline SavedField saved_field(const char* name, Generator*) { return {name, std::monostate{}}; }
template <typename T>
SavedField saved_field(const char* name, const T& v) { return {name, v}; }
template <typename T>
SavedField saved_field(const char* name, const std::optional<T>& v) {
  return v ? saved_field(name, *v) : SavedField{name, std::monostate{}};
}

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

// True when any tensor requires grad (grad mode aside).
inline bool requires_grad_any(std::initializer_list<const Tensor*> ts) {
  for (const Tensor* t : ts) if (t->defined() && t->requires_grad()) return true;
  return false;
}
// True when grad mode is on and any tensor requires grad.
inline bool any_requires_grad(std::initializer_list<const Tensor*> ts) {
  return GradMode::is_enabled() && requires_grad_any(ts);
}
bool any_requires_grad(const TensorList& ts);
// The edge a gradient for `t` should flow into (its grad_fn, or its accumulator).
Edge gradient_edge(const Tensor& t);
// A view's grad_fn, first regenerated as an AsStridedBackward0 of its base's current
// history when the base (or another view of it) was written in place since it was set.
const std::shared_ptr<Node>& view_grad_fn(const Tensor& view);
// Makes `node` the creator of `outputs` (output_nr by position).
void set_history(const Tensor& output, const std::shared_ptr<Node>& node, uint32_t output_nr = 0);
// An in-place op on `self` makes `node` its new creator; on a view, the base gets a
// CopySlices node around `node` and the view becomes its region of the base.
void rebase_history(const Tensor& self, const std::shared_ptr<Node>& node, const char* op);
// Refuses an in-place op on a leaf that requires grad (views: see check_view_inplace).
void check_inplace(const Tensor& self, const char* op);
// The sequence number the next node created will get.
uint64_t next_sequence_nr();
// A composite op's result: the node recorded since `first` (by the ops the composite is made of)
// shows PyTorch's node name for the whole op (`name` must be a string literal).
void name_composite_node(const Tensor& result, uint64_t first, const char* name,
                         std::initializer_list<const Tensor*> shown_inputs = {});
// After a derived in-place op copied into self: the nodes of `value`'s graph created since
// `first` drop the saved tensors that copy modified (backward raises on them, no cycle holds self).
void forget_modified_since(const Tensor& value, uint64_t first);
// Before an in-place op with autograd writes through a view: refuses views of leaves that
// require grad, views made in no_grad mode and outputs of multi-view ops, with PyTorch's errors.
void check_view_inplace(const Tensor& self, const char* op);
// A view of `base` with the given geometry (offset relative to base's) whose history is
// AsStridedBackward0, so backward through CopySlices is differentiable again.
Tensor strided_view(const Tensor& base, const DimVector& sizes, const DimVector& strides, int64_t offset);
// Raises when an out= call would need autograd.
void check_out_no_grad(std::initializer_list<const Tensor*> ts, const char* op);
// Runs the backward pass from `roots` with the given gradients (undefined: ones, for a scalar).
// Non-empty `inputs`: only the graph leading to them runs, and only they get gradients (a
// non-leaf through its retain_grad slot, which the caller sets up).
void backward(const TensorList& roots, const TensorList& grads, bool retain_graph, bool create_graph,
              const TensorList& inputs = {});
// Gradients of `outputs` with respect to `inputs` (autograd.grad); only the graph leading to
// `inputs` runs. An undefined grad_output is ones for a scalar output, or with !implicit_grads
// no gradient at all (gradcheck's undefined-gradient check).
TensorList grad(const TensorList& outputs, const TensorList& grad_outputs, const TensorList& inputs,
                bool retain_graph, bool create_graph, bool allow_unused, bool implicit_grads = true);

}  // namespace autograd
}  // namespace ember
