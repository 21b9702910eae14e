// Autocast state and casts (see ember/autocast.h), PyTorch's aten/src/ATen/autocast_mode.cpp rules. In the op
// layer, not the core: a cast is the `to` op.
#include "ember/autocast.h"

#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>

#include "ember/autograd.h"
#include "ember/errors.h"
#include "ember/ops/to.h"

namespace ember::autocast {

namespace {
// Casts of weights (float32 leaves that require grad) to the lower dtype, per thread: the source is
// held, so its TensorImpl* key cannot be reused by another tensor while the entry lives.
using CastCache = std::unordered_map<TensorImpl*, std::pair<Tensor, Tensor>>;
CastCache& cast_cache() {
  static thread_local CastCache cache;
  return cache;
}

bool is_view(const Tensor& t) {
  const AutogradMeta* meta = t.impl()->autograd.get();
  return meta && meta->view_base;
}
}  // namespace

namespace detail {
State& state() {
  // A thread that ends inside a region leaves the global count as it found it.
  struct Owner {
    State s;
    ~Owner() {
      if (s.enabled_mask) g_active_threads.fetch_sub(1, std::memory_order_relaxed);
    }
  };
  static thread_local Owner owner;
  return owner.s;
}

void set_mask(uint8_t mask) {
  State& s = state();
  if ((s.enabled_mask != 0) != (mask != 0)) g_active_threads.fetch_add(mask ? 1 : -1, std::memory_order_relaxed);
  s.enabled_mask = mask;
}
}  // namespace detail

bool is_enabled(DeviceType type) { return detail::state().enabled_mask & (1u << (int)type); }

void set_enabled(DeviceType type, bool enabled) {
  uint8_t mask = detail::state().enabled_mask;
  const uint8_t bit = (uint8_t)(1u << (int)type);
  detail::set_mask(enabled ? (mask | bit) : (mask & ~bit));
}

ScalarType dtype(DeviceType type) { return detail::state().dtype[(int)type]; }
void set_dtype(DeviceType type, ScalarType dt) { detail::state().dtype[(int)type] = dt; }
bool is_cache_enabled() { return detail::state().cache_enabled; }
void set_cache_enabled(bool enabled) { detail::state().cache_enabled = enabled; }
int increment_nesting() { return ++detail::state().nesting; }
int decrement_nesting() { return --detail::state().nesting; }
void clear_cache() { cast_cache().clear(); }

int wanted_device(std::initializer_list<const Tensor*> tensors, std::initializer_list<const TensorList*> lists) {
  const uint8_t mask = detail::state().enabled_mask;
  if (!mask) return -1;
  auto wanted = [&](const Tensor& t) { return (mask & (1u << (int)t.device().type)) ? (int)t.device().type : -1; };
  for (const Tensor* t : tensors)
    if (t->defined()) return wanted(*t);
  for (const TensorList* list : lists)
    for (const Tensor& t : *list)
      if (t.defined()) return wanted(t);
  return -1;
}

ScalarType promote_type(DeviceType type, std::initializer_list<const Tensor*> tensors,
                        std::initializer_list<const TensorList*> lists) {
  const ScalarType lower = dtype(type);
  ScalarType current = lower;
  auto visit = [&](const Tensor& t) {
    if (!eligible(t, type)) return;
    if (current == ScalarType::Float32 || t.dtype() == ScalarType::Float32) current = ScalarType::Float32;
    else EMBER_CHECK(t.dtype() == lower, Runtime, "Unexpected floating ScalarType in at::autocast::prioritize");
  };
  for (const Tensor* t : tensors) visit(*t);
  for (const TensorList* list : lists)
    for (const Tensor& t : *list) visit(t);
  return current;
}

Tensor cast(ScalarType to, const Tensor& t, DeviceType type) {
  if (!eligible(t, type) || t.dtype() == to) return t;
  const bool cacheable = to == dtype(type) && t.dtype() == ScalarType::Float32 && t.requires_grad() && t.is_leaf() &&
                         !is_view(t) && is_cache_enabled();
  if (!cacheable) return ember::to_dtype(t, to, false, false);
  CastCache& cache = cast_cache();
  auto it = cache.find(t.impl());
  if (it != cache.end()) return it->second.second;
  Tensor casted = ember::to_dtype(t, to, false, false);
  cache.emplace(t.impl(), std::make_pair(t, casted));
  return casted;
}

TensorList cast(ScalarType to, const TensorList& list, DeviceType type) {
  TensorList out;
  out.reserve(list.size());
  for (const Tensor& t : list) out.push_back(cast(to, t, type));
  return out;
}

void banned(const char* op) {
  EMBER_CHECK(std::string(op) != "binary_cross_entropy", Runtime,
              "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.\n"
              "Many models use a sigmoid layer right before the binary cross entropy layer.\n"
              "In this case, combine the two layers using torch.nn.functional.binary_cross_entropy_with_logits\n"
              "or torch.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and BCEWithLogits are\n"
              "safe to autocast.");
  EMBER_FAIL(Runtime, op, " is unsafe to autocast.");
}

}  // namespace ember::autocast
