#pragma once
// Automatic mixed precision (PyTorch's autocast): per-thread, per-device-type state read by the
// generated entries of ops with an `autocast:` policy in ops.yaml. While no thread has autocast
// on, such an entry pays one relaxed load (maybe_active) and nothing else.
#include <atomic>
#include <initializer_list>
#include <vector>
#include "ember/tensor.h"

namespace ember::autocast {

namespace detail {
// Threads whose autocast is on for some device type: the entries' one global flag.
inline std::atomic<int> g_active_threads{0};
struct State {
  uint8_t enabled_mask = 0;  // bit (1 << DeviceType) per enabled device type
  ScalarType dtype[kNumDeviceTypes] = {ScalarType::BFloat16, ScalarType::Float16};
  bool cache_enabled = true;
  int nesting = 0;
};
State& state();  // this thread's
void set_mask(uint8_t mask);
}  // namespace detail

inline bool maybe_active() { return detail::g_active_threads.load(std::memory_order_relaxed) != 0; }

bool is_enabled(DeviceType type);
void set_enabled(DeviceType type, bool enabled);
ScalarType dtype(DeviceType type);  // the lower-precision dtype of that device type
void set_dtype(DeviceType type, ScalarType dtype);
bool is_cache_enabled();
void set_cache_enabled(bool enabled);
int increment_nesting();
int decrement_nesting();
void clear_cache();  // drops the cached casts of weights (leaving the outermost region does it)

// The device type an op's call autocasts for: that of its first defined tensor argument, if autocast
// is on for it on this thread; else -1.
int wanted_device(std::initializer_list<const Tensor*> tensors, std::initializer_list<const TensorList*> lists = {});

// While alive, autocast is off for every device type on this thread (PyTorch's ExcludeDispatchKeyGuard
// around the op an autocast wrapper runs), so the ops it is made of do not cast again.
class Suspend {
 public:
  Suspend() : saved_(maybe_active() ? detail::state().enabled_mask : 0) { if (saved_) detail::set_mask(0); }
  ~Suspend() { if (saved_) detail::set_mask(saved_); }
  Suspend(const Suspend&) = delete;
  Suspend& operator=(const Suspend&) = delete;

 private:
  uint8_t saved_;
};

// A tensor the policies cast: defined, floating but not float64, on a device of that type.
inline bool eligible(const Tensor& t, DeviceType type) {
  return t.defined() && t.device().type == type && is_floating(t.dtype()) && t.dtype() != ScalarType::Float64;
}

// The policies of ops.yaml's `autocast:` key.
// lower: eligible (floating, non-float64, on the device) tensors to the device type's autocast dtype;
// fp32: to float32; promote: to the widest floating dtype among the eligible ones.
ScalarType promote_type(DeviceType type, std::initializer_list<const Tensor*> tensors,
                        std::initializer_list<const TensorList*> lists = {});
// `t` cast to `to` when eligible (through `to`, so autograd records it); float32 leaves that require
// grad cast to the lower dtype are cached until the outermost region exits, when caching is on.
Tensor cast(ScalarType to, const Tensor& t, DeviceType type);
TensorList cast(ScalarType to, const TensorList& list, DeviceType type);
// The `banned` policy: the op refuses to run under autocast (PyTorch's binary_cross_entropy on CUDA).
[[noreturn]] void banned(const char* op);

}  // namespace ember::autocast
