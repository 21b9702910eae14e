// Anomaly mode's work in the core: recording nodes' creation through the
// installed handler, and the engine's checked call of a node.
#include "ember/autograd.h"
#include "ember/autograd_anomaly.h"
#include "ember/ops/any.h"
#include "ember/ops/isnan.h"

namespace ember::autograd::anomaly {
namespace {

std::atomic<AnomalyHandler*> g_handler{nullptr};
thread_local Node* t_running = nullptr;  // the node whose backward runs on this thread

// Restores the running node when a nested backward (or an error) leaves.
struct RunningNode {
  Node* previous = t_running;
  explicit RunningNode(Node& node) { t_running = &node; }
  ~RunningNode() { t_running = previous; }
};

bool has_nan(const Tensor& t) {
  if (!t.defined() || !is_floating(t.dtype())) return false;
  NoGradGuard no_grad;
  return ember::any(ember::isnan(t)).item().to_bool();
}

}  // namespace

void set_handler(AnomalyHandler* handler) { g_handler.store(handler); }

void on_node_created(Node& node) {
  if (AnomalyHandler* handler = g_handler.load()) handler->record_creation(node, t_running);
}

TensorList apply_checked(Node& node, AccumulateGrad* hooked_leaf, TensorList inputs) {
  try {
    TensorList outputs;
    {
      RunningNode running(node);
      outputs = node.hooks ? call_function(node, hooked_leaf, std::move(inputs)) : node.apply(std::move(inputs));
    }
    if (AnomalyMode::should_check_nan())
      for (size_t i = 0; i < outputs.size(); ++i)
        EMBER_CHECK(!has_nan(outputs[i]), Runtime, "Function '", node.name(), "' returned nan values in its ", i,
                    "th output.");
    return outputs;
  } catch (...) {
    if (AnomalyHandler* handler = g_handler.load()) handler->report_error(node);
    throw;
  }
}

}  // namespace ember::autograd::anomaly
