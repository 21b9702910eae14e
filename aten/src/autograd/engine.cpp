// The backward pass: count each node's incoming edges, then run nodes whose
// gradients are complete, latest-created first, until the graph is drained.
#include <queue>
#include <unordered_map>
#include <unordered_set>

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

// A node runs when a gradient reached any of its outputs (unbind's views; a custom
// Function's backward gets the others as None or zeros).
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
  // autograd.grad: (node, input_nr) -> result slot, read from the node's buffer.
  std::unordered_map<Node*, std::vector<std::pair<uint32_t, size_t>>> captures;
  // With `pruned` (grad, backward(inputs=)) only nodes on a path to a capture or a
  // `needed` target run, as PyTorch's exec_info; off, every reachable node runs.
  bool pruned = false;
  std::unordered_set<Node*> needed;

  bool should_execute(Node* n) const { return needed.count(n) || captures.count(n); }

  // Counts each node's incoming edges; when pruned, also marks the nodes that lead to a
  // target (post-order, so a node's children are settled before it).
  void count(const std::vector<Edge>& roots) {
    struct Frame {
      Node* node;
      size_t next;
    };
    std::vector<Frame> stack;
    for (const Edge& root : roots) {
      if (!root.valid()) continue;
      owners[root.fn.get()] = root.fn;
      if (!dependencies.emplace(root.fn.get(), 0).second) continue;
      stack.push_back({root.fn.get(), 0});
      while (!stack.empty()) {
        Frame& f = stack.back();
        if (f.next < f.node->next_edges.size()) {
          const Edge& e = f.node->next_edges[f.next++];
          if (!e.valid()) continue;
          auto [it, fresh] = dependencies.emplace(e.fn.get(), 0);
          it->second++;
          if (fresh) {
            owners[e.fn.get()] = e.fn;
            stack.push_back({e.fn.get(), 0});  // invalidates f, not used again
          }
          continue;
        }
        Node* n = f.node;
        stack.pop_back();
        if (!pruned || needed.count(n)) continue;
        for (const Edge& e : n->next_edges)
          if (e.valid() && should_execute(e.fn.get())) { needed.insert(n); break; }
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
      if (!roots[i].valid() || !grads[i].defined()) continue;
      add_to_buffer(roots[i].fn.get(), roots[i].input_nr, grads[i]);
    }
    for (const Edge& e : roots)
      if (e.valid() && dependencies[e.fn.get()] == 0 && (!pruned || should_execute(e.fn.get()))) {
        dependencies[e.fn.get()] = -1;
        ready.push(e.fn.get());
      }
    while (!ready.empty()) {
      Node* n = ready.top();
      ready.pop();
      TensorList inputs = std::move(buffers[n]);
      buffers.erase(n);
      if (inputs.empty()) inputs.resize(1);
      // Hooked nodes have `hooks` set (a leaf's accumulator too, when the leaf has hooks).
      AccumulateGrad* hooked_leaf = nullptr;
      if (n->hooks) [[unlikely]] {
        // A leaf's hooks run when its gradient is computed (pruning never reaches the leaves autograd.grad skips).
        hooked_leaf = dynamic_cast<AccumulateGrad*>(n);
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
      if (pruned && !needed.count(n)) continue;  // only captured: its gradient was the point
      TensorList outputs;
      if (any_defined(inputs)) {
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
        if (pruned && !should_execute(m)) continue;
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

// An undefined gradient is the implicit ones of a scalar root (`implicit`), else no gradient.
TensorList root_grads(const TensorList& roots, const TensorList& grads, bool implicit) {
  EMBER_CHECK(grads.size() == roots.size(), Runtime, "got ", roots.size(), " tensors and ", grads.size(),
              " gradients");
  TensorList out(roots.size());
  for (size_t i = 0; i < roots.size(); ++i) {
    if (grads[i].defined()) {
      EMBER_CHECK(grads[i].sizes() == roots[i].sizes(), Runtime, "Mismatch in shape: grad_output[", i,
                  "] has a shape of ember.Size(", grads[i].sizes(), ") and output[", i,
                  "] has a shape of ember.Size(", roots[i].sizes(), ").");
      out[i] = grads[i];
    } else if (implicit) {
      EMBER_CHECK(roots[i].numel() == 1, Runtime, "grad can be implicitly created only for scalar outputs");
      out[i] = ember::ones(roots[i].sizes(), roots[i].dtype(), roots[i].device(), false);
    }
  }
  return out;
}

// The edge into `t`'s history without making an accumulator: a leaf that no op has
// used yet has none, and nothing can reach it (PyTorch's try_get_grad_accumulator).
Edge existing_gradient_edge(const Tensor& t) {
  AutogradMeta* meta = t.impl()->autograd.get();
  if (!meta) return {};
  if (meta->grad_fn) return {meta->grad_fn, meta->output_nr};
  return {meta->grad_accumulator.lock(), 0};
}

}  // namespace

void backward(const TensorList& roots, const TensorList& grads, bool retain_graph, bool create_graph,
              const TensorList& inputs) {
  trace::BackwardScope traced_as_backward;
  std::vector<Edge> edges = root_edges(roots);
  TensorList g = root_grads(roots, grads, true);
  GraphTask task;
  if (!inputs.empty()) {
    // Only these get gradients: a leaf's accumulator runs, a non-leaf's grad_fn runs
    // (its retain_grad slot, set by the caller, takes the gradient), nothing else below.
    task.pruned = true;
    for (const Tensor& t : inputs)
      if (Edge e = existing_gradient_edge(t); e.valid()) task.needed.insert(e.fn.get());
  }
  AutoGradMode mode(create_graph);
  task.run(edges, g, retain_graph || create_graph, nullptr);
}

TensorList grad(const TensorList& outputs, const TensorList& grad_outputs, const TensorList& inputs,
                bool retain_graph, bool create_graph, bool allow_unused, bool implicit_grads) {
  trace::BackwardScope traced_as_backward;
  std::vector<Edge> edges = root_edges(outputs);
  TensorList g = root_grads(outputs, grad_outputs, implicit_grads);
  GraphTask task;
  task.pruned = true;
  for (size_t i = 0; i < inputs.size(); ++i) {
    EMBER_CHECK(inputs[i].requires_grad(), Runtime, "One of the differentiated Tensors does not require grad");
    if (Edge e = existing_gradient_edge(inputs[i]); e.valid()) task.captures[e.fn.get()].push_back({e.input_nr, i});
  }
  TensorList results(inputs.size());
  {
    AutoGradMode mode(create_graph);
    task.run(edges, g, retain_graph || create_graph, &results);
  }
  for (size_t i = 0; i < results.size(); ++i)
    EMBER_CHECK(results[i].defined() || allow_unused, Runtime, "The differentiated Tensor at index ", i,
                " appears to not have been used in the graph. Set allow_unused=True if this is the desired "
                "behavior.");
  return results;
}

}  // namespace ember::autograd
