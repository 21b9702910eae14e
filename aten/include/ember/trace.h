#pragma once
// The trace hook: handlers that see every op call (name, arguments, outputs).
// Every generated op entry starts with `if (trace::enabled())`, one relaxed
// load of a global that is zero unless some thread installed a handler; only
// then does it take the out-of-line path that counts depth, packs the call and
// reports it. See "Trace hook" in docs/ARCHITECTURE.md for the rules.
#include <atomic>
#include <initializer_list>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "ember/tensor.h"

namespace ember {
struct Generator;
}  // namespace ember

namespace ember::trace {

// One argument or output: any type an op signature holds. None (an absent
// optional, an undefined Tensor) is monostate; a `Tensor?[]` is a TensorList
// whose None entries are undefined tensors.
using Value = std::variant<std::monostate, Tensor, TensorList, int64_t, IntList, double, bool, std::string, Scalar,
                           ScalarType, Device, Generator*>;

struct Param {
  const char* name;
  bool kw_only;
};

// What the generator knows of one op entry. Derived variants are named as in
// PyTorch: `add_` (in-place), `add.out` / `pow.Tensor_Scalar_out`, whose
// `out` is the last, keyword-only parameter.
struct OpInfo {
  const char* name;
  const char* overload;  // "" for none
  const Param* params;
  int num_params;
};

struct OpCall {
  const OpInfo& op;
  std::vector<Value> args;     // one per op.params, in signature order
  std::vector<Value> outputs;  // one per return (a `Tensor[]` return is one TensorList)
  int depth;                   // 0: called by the program; n: inside n other op calls
  bool in_backward;            // run by the autograd engine
};

// Receives the op calls of the thread that installed it, after each call
// returns (a call that throws is not reported). While a handler runs, the
// calls it makes reach only the handlers installed before it.
class Handler {
 public:
  explicit Handler(bool nested) : nested(nested) {}
  virtual ~Handler() = default;
  virtual void on_call(const OpCall& call) = 0;
  // Also report calls made inside other op calls (composites, derived variants,
  // kernels built on ops), with their depth; else only depth 0.
  const bool nested;
};

// This thread's handler stack: innermost last; each call is offered to the
// innermost handler first. `pop_handler` removes the innermost one, which must
// be `expected` (RuntimeError otherwise).
void push_handler(std::shared_ptr<Handler> handler);
void pop_handler(const Handler* expected);
std::shared_ptr<Handler> innermost_handler();  // null when none

namespace detail {
// Handlers installed, summed over threads: the hook's one global flag.
inline std::atomic<int> g_installed{0};
}  // namespace detail

inline bool enabled() { return detail::g_installed.load(std::memory_order_relaxed) != 0; }

// The state tests read to check a trace left nothing behind.
struct ThreadSummary {
  int installed_anywhere;  // handlers installed on all threads
  int installed_here;      // on this thread
  int depth;               // op calls this thread is inside
};
ThreadSummary thread_summary();

// A reference to one argument or output of a call being reported, turned
// into a Value only then. It costs the generated code two stores: the packing
// (`pack<T>`) is instantiated once, in trace.cpp, for every C++ type an op
// signature uses; another type fails to link.
class ArgRef {
 public:
  template <typename T>
  ArgRef(const T& v) : ptr_(&v), pack_(&pack<T>) {}  // NOLINT: implicit, for {a, b, c} lists
  Value value() const { return pack_(ptr_); }

 private:
  template <typename T>
  static Value pack(const void* v);
  const void* ptr_;
  Value (*pack_)(const void*);
};

// The traced path of a generated op entry: counts the depth around the call
// and reports it to the handlers that want it.
class CallScope {
 public:
  explicit CallScope(const OpInfo& op);
  ~CallScope();
  CallScope(const CallScope&) = delete;
  CallScope& operator=(const CallScope&) = delete;
  bool reports() const { return reports_; }
  // `args` in the order of op.params; `outputs` one per return.
  void report(std::initializer_list<ArgRef> args, std::initializer_list<ArgRef> outputs);

 private:
  const OpInfo& op_;
  int depth_;
  bool reports_;
};

// Marks the ops the autograd engine runs (OpCall::in_backward).
class BackwardScope {
 public:
  BackwardScope();
  ~BackwardScope();
  BackwardScope(const BackwardScope&) = delete;
  BackwardScope& operator=(const BackwardScope&) = delete;

 private:
  bool prev_;
};

}  // namespace ember::trace
