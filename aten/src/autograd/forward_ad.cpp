// Forward-mode AD: dual levels, tangent storage, and what generated op entries
// call on their dual path (ember/forward_ad.h).
#include "ember/forward_ad.h"

#include <mutex>
#include <unordered_set>
#include <vector>

#include "ember/autograd.h"
#include "ember/ops/add.h"
#include "ember/ops/as_strided.h"
#include "ember/ops/copy_.h"
#include "ember/ops/expand.h"
#include "ember/ops/fill_.h"
#include "ember/ops/view.h"
#include "ember/ops/zeros.h"

namespace ember {

namespace {

// The tensors holding a tangent (their AutogradMeta), so exiting a level can clear them all.
// Tensors are never destroyed under the lock: a tangent's graph may hold tensors whose
// AutogradMeta destructor takes it.
std::mutex g_mutex;
std::unordered_set<AutogradMeta*> g_holders;
int64_t g_level = -1;
thread_local bool t_paused = false;

const Tensor& held(const AutogradMeta* meta) {
  static const Tensor none;
  return meta ? meta->fw_grad : none;
}

// Stores `value` as `meta`'s tangent; returns the previous one, to be released by the caller.
Tensor swap_tangent(AutogradMeta& meta, Tensor value) {
  std::lock_guard<std::mutex> lock(g_mutex);
  Tensor old = std::move(meta.fw_grad);
  const bool had = old.defined(), has = value.defined();
  meta.fw_grad = std::move(value);
  if (has && !had) {
    g_holders.insert(&meta);
    forward_ad::live_tangents.fetch_add(1, std::memory_order_relaxed);
  } else if (had && !has) {
    g_holders.erase(&meta);
    forward_ad::live_tangents.fetch_sub(1, std::memory_order_relaxed);
  }
  return old;
}

bool same_layout(const Tensor& a, const Tensor& b) {
  return a.sizes() == b.sizes() && a.strides() == b.strides() && a.offset() == b.offset();
}

// An uninitialised tensor of `dtype` with `like`'s sizes, strides and offset, over a
// storage of as many elements as like's: the layout every stored tangent has.
Tensor empty_with_layout(const Tensor& like, ScalarType dtype) {
  const size_t elements = like.storage()->nbytes / like.itemsize();
  Ref<StorageImpl> storage = new_storage(elements * itemsize(dtype), like.device());
  return Tensor(Ref<TensorImpl>::make(std::move(storage), like.sizes(), like.strides(), like.offset(), dtype));
}

Tensor zeros_with_layout(const Tensor& like) {
  Tensor t = empty_with_layout(like, like.dtype());
  const int64_t elements = (int64_t)(t.storage()->nbytes / t.itemsize());
  ember::fill_(make_view(t, DimVector{elements}, DimVector{1}, 0), Scalar(int64_t(0)));
  return t;
}

// A copy of `value` (broadcast and converted) in `like`'s layout.
Tensor copy_with_layout(const Tensor& like, const Tensor& value, ScalarType dtype) {
  Tensor t = empty_with_layout(like, dtype);
  ember::copy_(t, value, false);
  return t;
}

bool has_tangent(const Tensor& t) { return forward_ad::tangent(t).defined(); }

// `view`'s geometry over `base_tangent`. In grad mode it is an as_strided view, so that reading it
// and writing into it (CopySlices on the base's tangent) stay part of the reverse graph.
Tensor tangent_view(const Tensor& base_tangent, const Tensor& view) {
  if (GradMode::is_enabled()) return ember::as_strided(base_tangent, view.sizes(), view.strides(), view.offset());
  return make_view(base_tangent, view.sizes(), view.strides(), view.offset());
}

// The node an op just recorded for `output` keeps its saved output's tangent (fwd-over-rev).
void attach_to_node(const Tensor& output, const Tensor& tangent, uint64_t first_node) {
  std::shared_ptr<Node> fn = output.grad_fn();
  if (fn && fn->sequence_nr >= first_node) fn->attach_output_tangent(output.output_nr(), tangent);
}

}  // namespace

namespace forward_ad {

void forget_holder(AutogradMeta* meta) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_holders.erase(meta)) live_tangents.fetch_sub(1, std::memory_order_relaxed);
}

int64_t enter_level() {
  std::lock_guard<std::mutex> lock(g_mutex);
  EMBER_CHECK(g_level < 0, Runtime, "Nested forward mode AD is not supported at the moment");
  g_level = 0;
  return g_level;
}

void exit_level(int64_t level) {
  EMBER_CHECK(level >= 0, Runtime, "Dual level must be a positive number.");
  std::vector<Tensor> released;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    EMBER_CHECK(level == g_level, Runtime, "Exiting a forward AD level that is not the last that was created is "
                "not support. Ensure they are released in the reverse order they were created.");
    released.reserve(g_holders.size());
    for (AutogradMeta* meta : g_holders) released.push_back(std::move(meta->fw_grad));
    live_tangents.fetch_sub((int64_t)g_holders.size(), std::memory_order_relaxed);
    g_holders.clear();
    g_level = -1;
  }
}

int64_t current_level() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_level;
}

Pause::Pause() : prev_(t_paused) { t_paused = true; }
Pause::~Pause() { t_paused = prev_; }

bool wanted(std::initializer_list<const Tensor*> inputs) {
  if (t_paused) return false;
  for (const Tensor* t : inputs)
    if (has_tangent(*t)) return true;
  return false;
}

bool wanted(const TensorList& inputs) {
  if (t_paused) return false;
  for (const Tensor& t : inputs)
    if (has_tangent(t)) return true;
  return false;
}

Tensor tangent(const Tensor& t) {
  if (!t.defined()) return Tensor();
  AutogradMeta* meta = t.impl()->autograd.get();
  if (!meta) return Tensor();
  if (meta->fw_grad.defined()) return meta->fw_grad;
  if (!meta->view_base || meta->fw_view_blocked) return Tensor();
  const Tensor& base_tangent = held(meta->view_base->autograd.get());
  if (!base_tangent.defined()) return Tensor();
  // The base got its tangent (in place) after this view was made: take the same view of it.
  Tensor view = tangent_view(base_tangent, t);
  swap_tangent(*meta, view);
  return view;
}

Tensor tangent_or_zeros(const Tensor& tangent, const Tensor& primal) {
  if (tangent.defined() || !primal.defined()) return tangent;  // an absent optional input (None) stays absent
  return ember::zeros(primal.sizes(), primal.dtype(), primal.device(), false);
}

Tensor expand_like(const Tensor& tangent, const Tensor& like) {
  if (tangent.sizes() == like.sizes()) return tangent;
  return ember::expand(tangent, like.sizes());
}

void accumulate(Tensor& acc, const Tensor& term) {
  if (!term.defined()) return;
  acc = acc.defined() ? ember::add(acc, term) : term;
}

void set_output_tangent(const Tensor& output, const Tensor& tangent,
                        std::initializer_list<const Tensor*> input_tangents, uint64_t first_node, bool may_alias) {
  if (!output.defined() || !tangent.defined() || !is_floating(output.dtype())) return;
  bool fresh = same_layout(tangent, output) && tangent.dtype() == output.dtype();
  if (fresh && !may_alias)
    for (const Tensor* in : input_tangents)
      if (in->defined() && in->storage() == tangent.storage()) fresh = false;
  Tensor stored = fresh ? tangent : copy_with_layout(output, tangent, output.dtype());
  swap_tangent(output.impl()->autograd_meta(), stored);
  attach_to_node(output, stored, first_node);
}

void update_tangent(const Tensor& self, const Tensor& value, uint64_t first_node) {
  if (!is_floating(self.dtype())) return;  // an integral tensor written from a dual has no tangent
  Tensor current = tangent(self);
  AutogradMeta* meta = self.impl()->autograd.get();
  if (!current.defined() && meta && meta->view_base && !meta->fw_view_blocked && is_floating(meta->view_base->dtype)) {
    // A view: its tangent is a view of a (new, zero) tangent of its base, so the base sees the write.
    Tensor base(meta->view_base);
    Tensor base_tangent = zeros_with_layout(base);
    swap_tangent(base.impl()->autograd_meta(), base_tangent);
    current = tangent_view(base_tangent, self);
    swap_tangent(*meta, current);
  }
  if (current.defined()) {
    if (value.defined()) ember::copy_(current, value, false);
    else ember::fill_(current, Scalar(int64_t(0)));
  } else {
    current = value.defined() ? copy_with_layout(self, value, self.dtype()) : zeros_with_layout(self);
    swap_tangent(self.impl()->autograd_meta(), current);
  }
  attach_to_node(self, current, first_node);
}

void check_out(std::initializer_list<const Tensor*> tensors, const char* name) {
  if (t_paused) return;
  for (const Tensor* t : tensors)
    EMBER_CHECK(!has_tangent(*t), NotImplemented, "Trying to use forward AD with ", name,
                " that does not support it because it is an out= function");
}

void check_out(const TensorList& tensors, const char* name) {
  for (const Tensor& t : tensors) check_out({&t}, name);
}

void check_differentiable(const Tensor& result, std::initializer_list<const Tensor*> inputs, const char* name) {
  if (t_paused || !result.defined() || !is_floating(result.dtype())) return;
  for (const Tensor* t : inputs)
    EMBER_CHECK(!has_tangent(*t), NotImplemented, "Trying to use forward AD with ", name,
                " that does not support it.");
}

void not_implemented(const char* name) {
  EMBER_FAIL(NotImplemented, "Trying to use forward AD with ", name,
             " that does not support it because it has not been implemented yet.");
}

Tensor make_dual(const Tensor& primal, const Tensor& tangent_value, int64_t level) {
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (level != g_level)
      EMBER_FAIL(Runtime, g_level < 0 ? "Trying to access a forward AD level with an invalid index. This index was "
                                        "either not created or is already deleted."
                                      : "Invalid level given to _make_dual");
  }
  EMBER_CHECK(!has_tangent(primal), Runtime, "Making a dual Tensor based on a Tensor that already has a forward "
              "gradient at the same level ", level, " is not supported.");
  EMBER_CHECK(!has_tangent(tangent_value), Runtime, "Setting a forward grad that itself has a forward gradient at "
              "the same level", level, " is not supported.");
  EMBER_CHECK(tangent_value.sizes() == primal.sizes(), Runtime, "Trying to set a forward gradient that has a "
              "different size than that of the original Tensor, this is not supported. Tensor is of size ",
              shape_str(primal.sizes()), " while the given forward gradient is of size ",
              shape_str(tangent_value.sizes()), ".");
  Tensor dual;
  {
    Pause pause;
    dual = ember::view(primal, primal.sizes());
  }
  // As PyTorch: the tangent is kept as given (its dtype too) when it has the primal's layout.
  Tensor stored = same_layout(tangent_value, primal) ? tangent_value
                                                    : copy_with_layout(primal, tangent_value, tangent_value.dtype());
  swap_tangent(dual.impl()->autograd_meta(), stored);
  return dual;
}

std::pair<Tensor, Tensor> unpack_dual(const Tensor& t, int64_t level) {
  Tensor tan = tangent(t);
  if (tan.defined()) {
    std::lock_guard<std::mutex> lock(g_mutex);
    EMBER_CHECK(level == g_level, Runtime, "Invalid level given to _fw_primal");
  }
  Tensor primal;
  {
    Pause pause;
    primal = ember::view(t, t.sizes());
  }
  primal.impl()->autograd_meta().fw_view_blocked = true;  // never takes t's tangent
  return {primal, tan};
}

Tensor own_tangent(const Tensor& t) {
  return held(t.defined() ? t.impl()->autograd.get() : nullptr);
}

void set_own_tangent(const Tensor& t, const Tensor& value) { swap_tangent(t.impl()->autograd_meta(), value); }

}  // namespace forward_ad
}  // namespace ember
