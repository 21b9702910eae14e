// The backward pass: count each node's incoming edges, then run nodes whose
// gradients are complete, latest-created first, until the graph is drained.
#include <queue>
#include <unordered_map>

#include "ember/autograd.h"
#include "ember/autograd_anomaly.h"
#include "ember/autograd_helpers.h"
#include "ember/ops/add.h"
#include "ember/ops/clone.h"
#include "ember/ops/ones.h"
#include "ember/ops/to.h"
#include "ember/trace.h"

namespace ember::autograd {
namespace {

struct ReadyOrder {
  bool operator()(Node* a, Node* b) const { return a->sequence_nr < b->sequence_nr; }
};

// Shapes an incoming gradient to the input it flows into: broadcasting is
// undone by summing, and the dtype follows the input (PyTorch's engine does both).
Tensor shape_gradient(Tensor g, const InputMeta& meta) {
  if (!g.defined()) return g;
  if (g.sizes() != meta.shape) g = sum_to(g, meta.shape);
  if (g.dtype() != meta.dtype && is_floating(meta.dtype)) g = ember::to_dtype(g, meta.dtype, false, false);
  return g;
}

// A node runs when a gradient reached any of its outputs (a custom Function's
// backward gets the others as None or zeros).
bool any_defined(const TensorList& grads) {
  for (const Tensor& g : grads)
    if (g.defined()) return true;
  return false;
}

// A node with hooks, or any node in anomaly mode; out of line, off the common path.
[[gnu::noinline]] TensorList apply_hooked_or_checked(Node& n, AccumulateGrad* hooked_leaf, TensorList&& inputs,
                                                     bool anomaly_mode) {
  if (anomaly_mode) return anomaly::apply_checked(n, hooked_leaf, std::move(inputs));
  return call_function(n, hooked_leaf, std::move(inputs));
}

struct GraphTask {
  std::unordered_map<Node*, int> dependencies;
  std::unordered_map<Node*, TensorList> buffers;
  std::unordered_map<Node*, std::shared_ptr<Node>> owners;
  // autograd.grad: (node, input_nr) -> result slot; such nodes' leaves are not accumulated.
  std::unordered_map<Node*, std::vector<std::pair<uint32_t, size_t>>> captures;
  bool capture_only = false;

  void count(const std::vector<Edge>& roots) {
    std::vector<Node*> stack;
    for (const Edge& e : roots) {
      if (!e.valid()) continue;
      owners[e.fn.get()] = e.fn;
      if (!dependencies.count(e.fn.get())) { dependencies[e.fn.get()] = 0; stack.push_back(e.fn.get()); }
    }
    while (!stack.empty()) {
      Node* n = stack.back();
      stack.pop_back();
      for (const Edge& e : n->next_edges) {
        if (!e.valid()) continue;
        Node* m = e.fn.get();
        auto it = dependencies.find(m);
        if (it == dependencies.end()) {
          dependencies[m] = 1;
          owners[m] = e.fn;
          stack.push_back(m);
        } else {
          it->second++;
        }
      }
    }
  }

  void add_to_buffer(Node* n, uint32_t input_nr, Tensor g) {
    TensorList& buf = buffers[n];
    if (buf.size() <= input_nr) buf.resize(input_nr + 1);
    // Out of place: a buffered gradient may be the tensor a caller handed in.
    buf[input_nr] = buf[input_nr].defined() ? ember::add(buf[input_nr], g) : std::move(g);
  }

  void run(const std::vector<Edge>& roots, const TensorList& grads, bool retain_graph, TensorList* results) {
    count(roots);
    const bool anomaly_mode = AnomalyMode::is_enabled();  // read once per pass: a register test per node
    std::priority_queue<Node*, std::vector<Node*>, ReadyOrder> ready;
    for (size_t i = 0; i < roots.size(); ++i) {
      if (!roots[i].valid()) continue;
      add_to_buffer(roots[i].fn.get(), roots[i].input_nr, grads[i]);
    }
    for (const Edge& e : roots)
      if (e.valid() && dependencies[e.fn.get()] == 0) { dependencies[e.fn.get()] = -1; ready.push(e.fn.get()); }
    while (!ready.empty()) {
      Node* n = ready.top();
      ready.pop();
      TensorList inputs = std::move(buffers[n]);
      buffers.erase(n);
      if (inputs.empty()) inputs.resize(1);
      // Hooked nodes have `hooks` set (a leaf's accumulator too, when the leaf has hooks).
      AccumulateGrad* hooked_leaf = nullptr;
      if (n->hooks) [[unlikely]] {
        // A leaf's hooks run when its gradient is computed: not for the leaves autograd.grad skips.
        hooked_leaf = dynamic_cast<AccumulateGrad*>(n);
        if (hooked_leaf && capture_only && !captures.count(n)) hooked_leaf = nullptr;
        inputs = call_tensor_pre_hooks(*n, hooked_leaf, std::move(inputs));
      }
      if (results) {
        auto cap = captures.find(n);
        if (cap != captures.end())
          for (auto& [nr, slot] : cap->second)
            if (nr < inputs.size()) (*results)[slot] = inputs[nr];
      }
      for (auto& [nr, slot] : n->retained) {
        if (nr >= inputs.size() || !inputs[nr].defined()) continue;
        *slot = slot->defined() ? ember::add(*slot, inputs[nr]) : ember::clone(inputs[nr]);
      }
      bool is_leaf_acc = dynamic_cast<AccumulateGrad*>(n) != nullptr;
      TensorList outputs;
      if (!(capture_only && is_leaf_acc) && (inputs[0].defined() || any_defined(inputs))) {
        if (n->hooks || anomaly_mode) [[unlikely]]
          outputs = apply_hooked_or_checked(*n, hooked_leaf, std::move(inputs), anomaly_mode);
        else
          outputs = n->apply(std::move(inputs));
        if (!retain_graph) n->release_saved();
      }
      for (size_t i = 0; i < n->next_edges.size(); ++i) {
        const Edge& e = n->next_edges[i];
        if (!e.valid()) continue;
        Node* m = e.fn.get();
        if (i < outputs.size() && outputs[i].defined())
          add_to_buffer(m, e.input_nr, shape_gradient(outputs[i], n->input_meta[i]));
        if (--dependencies[m] == 0) ready.push(m);
      }
    }
  }
};

std::vector<Edge> root_edges(const TensorList& roots) {
  std::vector<Edge> edges;
  for (size_t i = 0; i < roots.size(); ++i) {
    EMBER_CHECK(roots[i].requires_grad(), Runtime, "element ", i,
                " of tensors does not require grad and does not have a grad_fn");
    edges.push_back(gradient_edge(roots[i]));
  }
  return edges;
}

TensorList root_grads(const TensorList& roots, const TensorList& grads) {
  TensorList out(roots.size());
  for (size_t i = 0; i < roots.size(); ++i) {
    if (i < grads.size() && grads[i].defined()) {
      EMBER_CHECK(grads[i].sizes() == roots[i].sizes(), Runtime, "Mismatch in shape: grad_output[", i,
                  "] has a shape of ", grads[i].sizes(), " and output[", i, "] has a shape of ", roots[i].sizes(), ".");
      out[i] = grads[i];
    } else {
      EMBER_CHECK(roots[i].numel() == 1, Runtime, "grad can be implicitly created only for scalar outputs");
      out[i] = ember::ones(roots[i].sizes(), roots[i].dtype(), roots[i].device(), false);
    }
  }
  return out;
}

}  // namespace

void backward(const TensorList& roots, const TensorList& grads, bool retain_graph, bool create_graph,
              const TensorList& inputs) {
  (void)inputs;
  trace::BackwardScope traced_as_backward;
  std::vector<Edge> edges = root_edges(roots);
  TensorList g = root_grads(roots, grads);
  AutoGradMode mode(create_graph);
  GraphTask task;
  task.run(edges, g, retain_graph || create_graph, nullptr);
}

TensorList grad(const TensorList& outputs, const TensorList& grad_outputs, const TensorList& inputs,
                bool retain_graph, bool create_graph, bool allow_unused) {
  trace::BackwardScope traced_as_backward;
  std::vector<Edge> edges = root_edges(outputs);
  TensorList g = root_grads(outputs, grad_outputs);
  GraphTask task;
  task.capture_only = true;
  for (size_t i = 0; i < inputs.size(); ++i) {
    EMBER_CHECK(inputs[i].requires_grad(), Runtime, "grad(): input ", i, " does not require grad");
    Edge e = gradient_edge(inputs[i]);
    task.captures[e.fn.get()].push_back({e.input_nr, i});
    task.owners[e.fn.get()] = e.fn;
  }
  TensorList results(inputs.size());
  {
    AutoGradMode mode(create_graph);
    task.run(edges, g, retain_graph || create_graph, &results);
  }
  for (size_t i = 0; i < results.size(); ++i)
    EMBER_CHECK(results[i].defined() || allow_unused, Runtime, "One of the differentiated Tensors appears to not "
                "have been used in the graph. Set allow_unused=True if this is the desired behavior.");
  return results;
}

}  // namespace ember::autograd
