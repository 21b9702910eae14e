// Nodes, edges, saved tensors, and the bookkeeping generated op wrappers call.
#include <atomic>
#include <cctype>
#include <mutex>
#include <unordered_set>
#include <vector>

#include "ember/autograd.h"
#include "ember/autograd_anomaly.h"
#include "ember/iterator.h"
#include "ember/autograd_helpers.h"
#include "ember/forward_ad.h"
#include "ember/ops/_as_strided_backward.h"
#include "ember/ops/add.h"
#include "ember/ops/clone.h"
#include "ember/ops/contiguous.h"
#include "ember/ops/copy_.h"
#include "ember/ops/fill_.h"

namespace ember {

static thread_local bool t_grad_enabled = true;
bool GradMode::is_enabled() { return t_grad_enabled; }
void GradMode::set_enabled(bool enabled) { t_grad_enabled = enabled; }

static std::atomic<uint64_t> g_sequence_nr{0};
Node::Node() : sequence_nr(g_sequence_nr.fetch_add(1, std::memory_order_relaxed)) {
  if (AnomalyMode::is_enabled()) [[unlikely]] autograd::anomaly::on_node_created(*this);
}

uint64_t autograd::next_sequence_nr() { return g_sequence_nr.load(std::memory_order_relaxed); }

void autograd::name_composite_node(const Tensor& result, uint64_t first, const char* name,
                                   std::initializer_list<const Tensor*> shown_inputs) {
  AutogradMeta* meta = result.defined() ? result.impl()->autograd.get() : nullptr;
  if (!meta || !meta->grad_fn || meta->grad_fn->sequence_nr < first) return;
  meta->grad_fn->renamed = name;
  if (shown_inputs.size() == 0) return;
  auto shown = std::make_unique<std::vector<Edge>>();
  for (const Tensor* t : shown_inputs) shown->push_back(t->defined() && t->requires_grad() ? gradient_edge(*t) : Edge{});
  meta->grad_fn->shown_edges = std::move(shown);
}

void autograd::forget_modified_since(const Tensor& value, uint64_t first) {
  std::vector<Node*> todo;
  std::unordered_set<Node*> seen;
  if (value.impl()->autograd && value.impl()->autograd->grad_fn) todo.push_back(value.impl()->autograd->grad_fn.get());
  while (!todo.empty()) {
    Node* n = todo.back();
    todo.pop_back();
    if (n->sequence_nr < first || !seen.insert(n).second) continue;
    n->forget_modified_saved();
    for (const Edge& e : n->next_edges)
      if (e.fn) todo.push_back(e.fn.get());
  }
}

void Node::add_input(const Tensor& t) {
  next_edges.push_back(t.defined() && t.requires_grad() ? autograd::gradient_edge(t) : Edge{});
  if (t.defined()) input_meta.push_back({t.sizes(), t.dtype(), t.device()});
  else input_meta.push_back({});
}

TensorList AccumulateGrad::apply(TensorList&& grads) {
  Tensor& g = grads[0];
  if (!g.defined()) return {};
  std::lock_guard<std::mutex> lock(mutex);
  AutogradMeta& meta = variable.impl()->autograd_meta();
  if (!meta.grad.defined()) {
    // Steal the incoming gradient when nobody else holds it and it has the layout
    // PyTorch promises (the variable's memory order, else row-major); else copy it
    // (under create_graph too: it may be an expanded view that add_ later writes).
    const DimVector order = layout_strides(g.sizes(), {&variable});
    const bool obeys_layout = order.empty() ? g.is_contiguous() : g.strides() == order;
    if (GradMode::is_enabled() || g.ref().use_count() > 1 || !obeys_layout) {
      if (order.empty()) {
        meta.grad = g.is_contiguous() ? ember::clone(g) : ember::contiguous(g);
      } else if (GradMode::is_enabled()) {
        meta.grad = ember::clone(g);  // keeps g's history; its own layout
      } else {
        meta.grad = empty_strided_tensor(g.sizes(), order, g.dtype(), g.device());
        ember::copy_(meta.grad, g);
      }
    } else {
      // Stolen: a view (of a gradient buffer) is kept as a plain alias, as PyTorch's detach().
      meta.grad = g.impl()->autograd ? detach_copy(g) : g;
    }
  } else if (GradMode::is_enabled()) {
    meta.grad = ember::add(meta.grad, g);
  } else {
    ember::add_(meta.grad, g);
  }
  return {};
}

SavedVariable::SavedVariable(const Tensor& t, bool is_output) {
  if (!t.defined()) return;
  version_ = t.version();
  is_output_ = is_output;
  if (autograd::saved_tensor_hooks::maybe_active()) [[unlikely]] {
    SavedTensorHooksFactory* hooks = autograd::saved_tensor_hooks::current();
    if (hooks && !t.is_wrapped_number()) {
      save_with_hooks(t, hooks->make());
      return;
    }
  }
  if (is_output) {
    // An output saved by its own node must not own that node (a cycle):
    // keep the data only and re-attach the node on unpack.
    data_ = detach_copy(t);
    output_nr_ = t.output_nr();
    requires_grad_ = t.requires_grad();
  } else {
    data_ = t;
  }
}

namespace {

[[noreturn]] void fail_modified(const DimVector& sizes, ScalarType dtype, uint32_t version, uint32_t expected,
                                bool is_output, const std::shared_ptr<Node>& owner) {
  std::string producer = owner ? owner->name() : "an op";
  EMBER_FAIL(Runtime, "one of the variables needed for gradient computation has been modified by an inplace "
             "operation: [", dtype_name(dtype), " tensor of shape ", sizes, "], which is ",
             is_output ? "an output" : "an input", " of ", producer, ", is at version ", version,
             "; expected version ", expected, " instead.");
}

}  // namespace

void SavedVariable::forget_if_modified() {
  if (!data_.defined() || data_.version() == version_) return;
  modified_ = Modified{data_.dtype(), data_.sizes(), data_.version()};
  data_.reset();
}

Tensor SavedVariable::unpack(const std::shared_ptr<Node>& owner) const {
  if (was_released_)
    EMBER_FAIL(Runtime,
               "Trying to backward through the graph a second time (or directly access saved tensors after they "
               "have already been freed). Saved intermediate values of the graph are freed when you call "
               ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
               "graph a second time or if you need to access saved tensors after calling backward.");
  if (modified_) fail_modified(modified_->sizes, modified_->dtype, modified_->version, version_, is_output_, owner);
  if (hooks_) return unpack_with_hooks(owner);
  if (!data_.defined()) return Tensor();
  if (data_.version() != version_)
    fail_modified(data_.sizes(), data_.dtype(), data_.version(), version_, is_output_, owner);
  if (!is_output_) return data_;
  Tensor t = detach_copy(data_);
  if (requires_grad_ && owner) autograd::set_history(t, owner, output_nr_);
  if (forward_ad::maybe_active())
    if (Tensor tangent = forward_ad::own_tangent(data_); tangent.defined()) forward_ad::set_own_tangent(t, tangent);
  return t;
}

void SavedVariable::attach_tangent(const Tensor& tangent) {
  // data_ is this SavedVariable's own alias of the output: a dual level's exit clears it.
  if (is_output_ && data_.defined()) forward_ad::set_own_tangent(data_, tangent);
}

namespace autograd {

bool any_requires_grad(const TensorList& ts) {
  if (!GradMode::is_enabled()) return false;
  for (const Tensor& t : ts) if (t.defined() && t.requires_grad()) return true;
  return false;
}

Edge gradient_edge(const Tensor& t) {
  AutogradMeta& meta = t.impl()->autograd_meta();
  if (meta.view_base) [[unlikely]] {
    if (const std::shared_ptr<Node>& fn = view_grad_fn(t)) return {fn, meta.output_nr};
  } else if (meta.grad_fn) {
    return {meta.grad_fn, meta.output_nr};
  }
  // A view that needs grad only through its base (taken in no_grad mode) has no accumulator, as in PyTorch.
  if (!meta.requires_grad) return {};
  // Ops on two threads (the GIL released) may both reach a leaf that has no accumulator yet.
  static std::mutex accumulator_mutex;
  std::lock_guard<std::mutex> lock(accumulator_mutex);
  std::shared_ptr<Node> acc = meta.grad_accumulator.lock();
  if (!acc) {
    acc = std::make_shared<AccumulateGrad>(t);
    acc->renamed = "torch::autograd::AccumulateGrad";  // PyTorch's name() (its class is AccumulateGrad)
    if (meta.leaf_hooks) acc->ensure_hooks();  // the engine looks for the leaf's hooks on hooked nodes only
    meta.grad_accumulator = acc;
  }
  return {acc, 0};
}

void set_history(const Tensor& output, const std::shared_ptr<Node>& node, uint32_t output_nr) {
  if (!output.defined()) return;
  AutogradMeta& meta = output.impl()->autograd_meta();
  meta.grad_fn = node;
  meta.output_nr = output_nr;
  if (meta.view_base) [[unlikely]] meta.attr_version = output.version();  // current until the next in-place write
}

void check_inplace(const Tensor& self, const char* op) {
  // Views are checked by check_view_inplace, in PyTorch's order.
  const AutogradMeta* meta = self.impl()->autograd.get();
  if (!meta || meta->view_base) return;
  if (GradMode::is_enabled() && self.requires_grad() && self.is_leaf())
    EMBER_FAIL(Runtime, op, ": a leaf Variable that requires grad is being used in an in-place operation.");
}

namespace {

// Where a view sits inside its base: enough to rebuild it on a gradient.
struct ViewGeometry {
  DimVector base_sizes, base_strides, sizes, strides;
  int64_t offset = 0;  // relative to the base's first element

  static ViewGeometry of(const Tensor& view, const Tensor& base) {
    return {base.sizes(), base.strides(), view.sizes(), view.strides(), view.offset() - base.offset()};
  }
  // An uninitialized tensor laid out like the base.
  Tensor blank_base(const Tensor& like) const {
    return empty_strided_tensor(base_sizes, base_strides, like.dtype(), like.device());
  }
};

// The view's history after its base (or another view of it) was written in place:
// its gradient is its region of the base's. Made of ops, so differentiable again.
struct AsStridedBackward final : Node {
  ViewGeometry geo;
  std::string default_name() const override { return "AsStridedBackward0"; }
  TensorList apply(TensorList&& grads) override {
    TensorList out(1);
    if (should_compute(0))  // the gradient of as_strided (stride-0 and overlapping dims add up)
      out[0] = ember::_as_strided_backward(grads[0], geo.base_sizes, geo.base_strides, 0, geo.sizes, geo.strides,
                                           geo.offset);
    return out;
  }
};

// The base's new history after an in-place op on one of its views (PyTorch's
// CopySlices): the base's gradient passes through, except inside the view,
// where the op's own backward applies.
struct CopySlices final : Node {
  ViewGeometry geo;
  std::shared_ptr<Node> fn;
  std::string default_name() const override { return "torch::autograd::CopySlices"; }  // PyTorch's name()
  TensorList apply(TensorList&& grads) override {
    Tensor result = geo.blank_base(grads[0]);
    ember::copy_(result, grads[0], false);
    Tensor region = strided_view(result, geo.sizes, geo.strides, geo.offset);
    TensorList res = fn->apply({ember::clone(region)});
    if (!res.empty() && res[0].defined()) ember::copy_(region, res[0], false);
    else ember::fill_(region, Scalar(int64_t(0)));
    TensorList out(next_edges.size());
    out[0] = result;
    for (size_t i = 1; i < out.size() && i < res.size(); ++i) out[i] = res[i];
    return out;
  }
  void release_saved() override { fn->release_saved(); }
  void forget_modified_saved() override { fn->forget_modified_saved(); }
};

// Messages name nodes as PyTorch's do: "Output 0 of Unbind" for UnbindBackward0.
std::string short_node_name(const Node& n) {
  std::string name = n.name();
  size_t end = name.size();
  while (end > 0 && std::isdigit((unsigned char)name[end - 1])) --end;
  const std::string suffix = "Backward";
  if (end >= suffix.size() && name.compare(end - suffix.size(), suffix.size(), suffix) == 0)
    return name.substr(0, end - suffix.size());
  return name;
}

// Raises when a view that may not be written in place was (`indirect`: through its base
// or another view of it, found when its grad_fn is next read), with PyTorch's messages.
void handle_view_on_rebase(const AutogradMeta& meta, bool indirect, const char* op) {
  if (meta.creation_meta == CreationMeta::Default) return;
  const Node* fn = meta.grad_fn.get();
  const std::string modified = indirect ? "its base or another view of its base has been" : "is being";
  std::string msg;  // no op name first: PyTorch's message starts with the view
  if (meta.creation_meta == CreationMeta::NoGradMode || !fn) {
    msg += fn ? "Output " + std::to_string(meta.output_nr) + " of " + short_node_name(*fn) +
                    " is a view of a view which was created in"
              : std::string("A view was created in");
    msg += " no_grad mode and " + modified + " modified inplace with grad mode enabled.";
  } else {
    msg += "Output " + std::to_string(meta.output_nr) + " of " + short_node_name(*fn) + " is a view and " +
           modified + " modified inplace.";
  }
  if (meta.creation_meta == CreationMeta::MultiOutputNode)
    msg += " This view is the output of a function that returns multiple views. Such functions do not allow the "
           "output views to be modified inplace. You should replace the inplace operation by an out-of-place one.";
  else if (meta.creation_meta == CreationMeta::InCustomFunction)
    msg += " This view was created inside a custom Function (or because an input was returned as-is) and the "
           "autograd logic to handle view+inplace would override the custom backward associated with the custom "
           "Function, leading to incorrect gradients. This behavior is forbidden. You can fix this by cloning the "
           "output of the custom Function.";
  else
    msg += " Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify your code by "
           "moving both the view and the inplace either both inside the no_grad block (if you don't want the "
           "inplace to be tracked) or both outside (if you want the inplace to be tracked).";
  EMBER_FAIL(Runtime, msg);
}

// Views whose grad_fn goes stale are rare; one lock serializes their regeneration.
std::mutex view_regeneration_mutex;

// retain_grad() follows the tensor to the node an in-place op made its creator
// (PyTorch moves its retains-grad hook): .grad is the gradient of the new value.
void move_retained_grad(AutogradMeta& meta, Node& to) {
  if (!meta.retained_grad || !meta.grad_fn) return;
  auto& from = meta.grad_fn->retained;
  for (auto it = from.begin(); it != from.end(); ++it) {
    if (it->second != meta.retained_grad) continue;
    from.erase(it);
    break;
  }
  to.retained.push_back({0, meta.retained_grad});
}

}  // namespace

const std::shared_ptr<Node>& view_grad_fn(const Tensor& view) {
  AutogradMeta& meta = *view.impl()->autograd;
  if (meta.attr_version == view.version()) return meta.grad_fn;
  Tensor base(meta.view_base);
  if (!meta.grad_fn && !base.requires_grad()) return meta.grad_fn;
  std::lock_guard<std::mutex> lock(view_regeneration_mutex);
  const uint32_t version = view.version();
  if (meta.attr_version == version) return meta.grad_fn;
  handle_view_on_rebase(meta, /*indirect=*/true, nullptr);
  auto fn = std::make_shared<AsStridedBackward>();
  fn->geo = ViewGeometry::of(view, base);
  fn->add_input(base);
  meta.grad_fn = std::move(fn);
  meta.output_nr = 0;
  meta.attr_version = version;
  return meta.grad_fn;
}

Tensor strided_view(const Tensor& base, const DimVector& sizes, const DimVector& strides, int64_t offset) {
  Tensor view = make_view(base, sizes, strides, base.offset() + offset);
  if (any_requires_grad({&base})) {
    auto fn = std::make_shared<AsStridedBackward>();
    fn->geo = ViewGeometry::of(view, base);
    fn->add_input(base);
    set_history(view, fn);
  }
  mark_view(view, base);
  return view;
}

void check_view_inplace(const Tensor& self, const char* op) {
  AutogradMeta* meta = self.impl()->autograd.get();
  if (!meta || !meta->view_base) return;
  handle_view_on_rebase(*meta, /*indirect=*/false, op);
  Tensor base(meta->view_base);
  EMBER_CHECK(!(self.requires_grad() && base.is_leaf()), Runtime, op,
              ": a view of a leaf Variable that requires grad is being used in an in-place operation.");
}

void rebase_history(const Tensor& self, const std::shared_ptr<Node>& node, const char* op) {
  AutogradMeta& meta = self.impl()->autograd_meta();
  if (!meta.view_base) {
    move_retained_grad(meta, *node);
    meta.grad_fn = node;
    meta.output_nr = 0;
    return;
  }
  check_view_inplace(self, op);
  Tensor base(meta.view_base);
  const ViewGeometry geo = ViewGeometry::of(self, base);
  auto copy = std::make_shared<CopySlices>();
  copy->geo = geo;
  copy->fn = node;
  copy->next_edges = node->next_edges;
  copy->input_meta = node->input_meta;
  copy->next_edges[0] = base.requires_grad() ? gradient_edge(base) : Edge{};
  copy->input_meta[0] = {base.sizes(), base.dtype(), base.device()};
  set_history(base, copy);
  // The view is now its region of the base's new history.
  auto view_fn = std::make_shared<AsStridedBackward>();
  view_fn->geo = geo;
  view_fn->next_edges.push_back({copy, 0});
  view_fn->input_meta.push_back({base.sizes(), base.dtype(), base.device()});
  move_retained_grad(meta, *view_fn);
  meta.grad_fn = std::move(view_fn);
  meta.output_nr = 0;
  meta.attr_version = self.version();
}

void check_out_no_grad(std::initializer_list<const Tensor*> ts, const char* op) {
  if (!GradMode::is_enabled()) return;
  for (const Tensor* t : ts)
    EMBER_CHECK(!(t->defined() && t->requires_grad()), Runtime, op,
                "(): functions with out=... arguments don't support automatic differentiation, but one of the "
                "arguments requires grad.");
}

}  // namespace autograd
}  // namespace ember
