// The device factories use when called from Python without one: ember.set_default_device
// and `with ember.device(...)`, per thread as PyTorch's DeviceContext. C++ callers are not
// affected, so composites that make CPU helpers keep making them on the CPU.
#include <vector>

#include "python_support.h"

namespace ember::python {
namespace {

struct DefaultDevice {
  std::optional<Device> base;   // set_default_device
  std::vector<Device> entered;  // the `with ember.device(...)` blocks open on this thread
};
thread_local DefaultDevice g_default;

}  // namespace

std::optional<Device> default_factory_device() {
  if (!g_default.entered.empty()) return g_default.entered.back();
  return g_default.base;
}
void set_default_factory_device(std::optional<Device> d) { g_default.base = d; }
void enter_device_context(Device d) { g_default.entered.push_back(d); }
void exit_device_context() {
  if (!g_default.entered.empty()) g_default.entered.pop_back();
}

}  // namespace ember::python
