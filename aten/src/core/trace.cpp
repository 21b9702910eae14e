// The trace hook's per-thread state: the handler stack, the depth of op
// calls and the backward marker. Only the traced path comes here.
#include "ember/trace.h"

#include <algorithm>
#include <limits>
#include <optional>

#include "ember/errors.h"

namespace ember::trace {
namespace {

struct ThreadState {
  std::vector<std::shared_ptr<Handler>> handlers;  // innermost last
  // Handlers at this index and above are off: one of them is running.
  size_t hidden_from = std::numeric_limits<size_t>::max();
  int depth = 0;
  bool in_backward = false;

  ~ThreadState() {  // a thread that ended with handlers installed
    detail::g_installed.fetch_sub((int)handlers.size(), std::memory_order_relaxed);
  }
  size_t visible() const { return std::min(hidden_from, handlers.size()); }
};

ThreadState& state() {
  thread_local ThreadState s;
  return s;
}

// How each argument type becomes a Value: None for an undefined Tensor, an
// empty optional or a null Generator.
Value to_value(const Tensor& t) { return t.defined() ? Value(t) : Value(); }
Value to_value(const TensorList& v) { return Value(v); }
Value to_value(int64_t v) { return Value(std::in_place_type<int64_t>, v); }
Value to_value(const IntList& v) { return Value(v); }
Value to_value(double v) { return Value(std::in_place_type<double>, v); }
Value to_value(bool v) { return Value(std::in_place_type<bool>, v); }
Value to_value(const std::string& v) { return Value(v); }
Value to_value(const Scalar& v) { return Value(v); }
Value to_value(ScalarType v) { return Value(v); }
Value to_value(Device v) { return Value(v); }
Value to_value(Generator* v) { return v ? Value(v) : Value(); }
template <typename T>
Value to_value(const std::optional<T>& v) { return v ? to_value(*v) : Value(); }

}  // namespace

void push_handler(std::shared_ptr<Handler> handler) {
  EMBER_CHECK(handler, Runtime, "trace: cannot install a null handler");
  state().handlers.push_back(std::move(handler));
  detail::g_installed.fetch_add(1, std::memory_order_relaxed);
}

void pop_handler(const Handler* expected) {
  ThreadState& s = state();
  EMBER_CHECK(!s.handlers.empty() && s.handlers.back().get() == expected, Runtime,
              "trace: handlers must be removed innermost first, on the thread that installed them");
  std::shared_ptr<Handler> last = std::move(s.handlers.back());
  s.handlers.pop_back();
  detail::g_installed.fetch_sub(1, std::memory_order_relaxed);
}

std::shared_ptr<Handler> innermost_handler() {
  ThreadState& s = state();
  return s.handlers.empty() ? nullptr : s.handlers.back();
}

ThreadSummary thread_summary() {
  ThreadState& s = state();
  return {detail::g_installed.load(std::memory_order_relaxed), (int)s.handlers.size(), s.depth};
}

CallScope::CallScope(const OpInfo& op) : op_(op) {
  ThreadState& s = state();
  depth_ = s.depth++;
  reports_ = false;
  for (size_t i = 0, n = s.visible(); i < n && !reports_; ++i) reports_ = depth_ == 0 || s.handlers[i]->nested;
}

CallScope::~CallScope() { state().depth = depth_; }

void CallScope::report(std::initializer_list<ArgRef> args, std::initializer_list<ArgRef> outputs) {
  ThreadState& s = state();
  OpCall call{op_, {}, {}, depth_, s.in_backward};
  for (const ArgRef& a : args) call.args.push_back(a.value());
  for (const ArgRef& o : outputs) call.outputs.push_back(o.value());
  // A handler's own calls start at depth 0, outside backward, and reach only the handlers below it.
  struct Restore {
    ThreadState& s;
    size_t hidden_from;
    int depth;
    bool in_backward;
    ~Restore() { s.hidden_from = hidden_from, s.depth = depth, s.in_backward = in_backward; }
  } restore{s, s.hidden_from, s.depth, s.in_backward};
  for (size_t i = s.visible(); i-- > 0;) {
    if (i >= s.handlers.size()) continue;  // a handler removed the ones above it
    std::shared_ptr<Handler> h = s.handlers[i];
    if (depth_ > 0 && !h->nested) continue;
    s.hidden_from = i, s.depth = 0, s.in_backward = false;
    h->on_call(call);
  }
}

template <typename T>
Value ArgRef::pack(const void* v) {
  return to_value(*static_cast<const T*>(v));
}
// Every C++ parameter and return type of ops.yaml's signatures (codegen/cpp.py).
template Value ArgRef::pack<Tensor>(const void*);
template Value ArgRef::pack<TensorList>(const void*);
template Value ArgRef::pack<int64_t>(const void*);
template Value ArgRef::pack<std::optional<int64_t>>(const void*);
template Value ArgRef::pack<IntList>(const void*);
template Value ArgRef::pack<std::optional<IntList>>(const void*);
template Value ArgRef::pack<double>(const void*);
template Value ArgRef::pack<std::optional<double>>(const void*);
template Value ArgRef::pack<bool>(const void*);
template Value ArgRef::pack<std::optional<bool>>(const void*);
template Value ArgRef::pack<std::string>(const void*);
template Value ArgRef::pack<std::optional<std::string>>(const void*);
template Value ArgRef::pack<Scalar>(const void*);
template Value ArgRef::pack<std::optional<Scalar>>(const void*);
template Value ArgRef::pack<ScalarType>(const void*);
template Value ArgRef::pack<std::optional<ScalarType>>(const void*);
template Value ArgRef::pack<Device>(const void*);
template Value ArgRef::pack<std::optional<Device>>(const void*);
template Value ArgRef::pack<Generator*>(const void*);

BackwardScope::BackwardScope() : prev_(state().in_backward) { state().in_backward = true; }
BackwardScope::~BackwardScope() { state().in_backward = prev_; }

}  // namespace ember::trace
