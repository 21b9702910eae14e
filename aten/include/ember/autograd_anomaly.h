#pragma once
// Anomaly mode (autograd.detect_anomaly): nodes remember where the forward made
// them, and the engine checks each node's results for NaN and reports the
// forward traceback of a node whose backward fails. The core holds the flag and
// calls an AnomalyHandler the Python bindings install (python/src/python_anomaly.cpp).
// Off, it costs one relaxed load where a node is made and one per node run.
#include <atomic>

#include "ember/tensor.h"

namespace ember {

struct Node;
struct AccumulateGrad;

// Global, not per thread, as PyTorch's AnomalyMode.
struct AnomalyMode {
  static bool is_enabled() { return enabled_.load(std::memory_order_relaxed); }
  static bool should_check_nan() { return check_nan_.load(std::memory_order_relaxed); }
  static void set_enabled(bool enabled, bool check_nan = true) {
    check_nan_.store(check_nan, std::memory_order_relaxed);
    enabled_.store(enabled, std::memory_order_relaxed);
  }

 private:
  static inline std::atomic<bool> enabled_{false};
  static inline std::atomic<bool> check_nan_{true};
};

// What anomaly mode asks of the bindings; called only while the mode is on.
struct AnomalyHandler {
  virtual ~AnomalyHandler() = default;
  // `node` is being made (its Node part only): remember the forward traceback, and
  // `parent`, the node whose backward is running on this thread (create_graph), or null.
  virtual void record_creation(Node& node, Node* parent) = 0;
  // `node`'s backward raised: report where the forward made it, before the error propagates.
  virtual void report_error(Node& node) = 0;
};

namespace autograd::anomaly {
// Installs the handler (not owned; null uninstalls).
void set_handler(AnomalyHandler* handler);
// Node's constructor, in anomaly mode.
void on_node_created(Node& node);
// The engine's call of a node in anomaly mode: the node's parent for nodes its backward
// makes, the NaN check of its results, and the report of an error it raises.
TensorList apply_checked(Node& node, AccumulateGrad* hooked_leaf, TensorList inputs);
}  // namespace autograd::anomaly

}  // namespace ember
