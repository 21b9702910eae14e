// Python hooks behind the core's hook interfaces (ember/autograd_hooks.h):
// Tensor.register_hook, register_post_accumulate_grad_hook, Node.register_hook
// and register_prehook, saved_tensors_hooks; and the _C.Node class.
// Each registration gets its own OrderedDict {handle id: fn}, which the
// RemovableHandle (ember.utils.hooks) holds weakly and empties on remove().
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cinttypes>
#include <cstdio>

#include "python_autograd.h"

namespace py = pybind11;

namespace ember::python {

PyObject* grads_to_tuple(const TensorList& grads) {
  PyObject* tup = PyTuple_New((Py_ssize_t)grads.size());
  if (!tup) throw_python_error();
  for (size_t i = 0; i < grads.size(); ++i) PyTuple_SET_ITEM(tup, i, wrap(grads[i]));
  return tup;
}

TensorList tuple_to_grads(PyObject* tuple) {
  TensorList out(PyTuple_GET_SIZE(tuple));
  for (size_t i = 0; i < out.size(); ++i) {
    PyObject* g = PyTuple_GET_ITEM(tuple, i);
    if (g != Py_None) out[i] = tensor_of(g);
  }
  return out;
}

namespace {

// PyTorch's name for a tensor's type in hook errors, with ember's prefix.
std::string type_name(const Tensor& t) {
  static const char* const names[] = {"Bool", "Byte", "Char", "Short", "Int", "Long", "Half", "BFloat16", "Float",
                                      "Double"};
  return std::string(t.device().is_cuda() ? "ember.cuda." : "ember.") + names[(int)t.dtype()] + "Tensor";
}

std::string hook_name(PyObject* hook) {
  PyObject* name = PyObject_GetAttrString(hook, "__name__");
  if (!name) {
    PyErr_Clear();
    return "<unknown>";
  }
  std::string out = PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : "<unknown>";
  Py_DECREF(name);
  return out;
}

// A hook's replacement for one gradient must look like it (PyTorch's check_single_result).
void check_single_result(PyObject* original, PyObject* result, PyObject* hook) {
  if (result == Py_None) return;
  EMBER_CHECK(original != Py_None, Runtime, "can't replace a None gradient with a non-None value");
  EMBER_CHECK(is_tensor(result), Type, "expected Variable, but hook returned '", Py_TYPE(result)->tp_name, "'");
  const Tensor& was = tensor_of(original);
  const Tensor& got = tensor_of(result);
  EMBER_CHECK(was.dtype() == got.dtype() && was.device().type == got.device().type, Runtime, "hook '",
              hook_name(hook), "' has changed the type of value (was ", type_name(was), " got ", type_name(got), ")");
  EMBER_CHECK(was.sizes() == got.sizes(), Runtime, "hook '", hook_name(hook), "' has changed the size of value");
}

// A hook's replacement for a tuple of gradients (PyTorch's check_result).
void check_tuple_result(PyObject* original, PyObject* result, PyObject* hook) {
  EMBER_CHECK(PyTuple_Check(result), Type, "expected tuple, but hook returned '", Py_TYPE(result)->tp_name, "'");
  const Py_ssize_t n = PyTuple_GET_SIZE(original), got = PyTuple_GET_SIZE(result);
  EMBER_CHECK(n == got, Runtime, "hook '", hook_name(hook), "' has returned an incorrect number of values (got ", got,
              ", but expected ", n, ")");
  for (Py_ssize_t i = 0; i < n; ++i)
    check_single_result(PyTuple_GET_ITEM(original, i), PyTuple_GET_ITEM(result, i), hook);
}

// Calls the hooks of `dict` in order (PyTorch's _call_hooks): each gets the current
// value (and `extra`); a result other than None replaces the value once `check` accepts
// it. Returns the final value; `modified` tells whether any hook replaced it.
template <typename Check>
py::object call_hooks(PyObject* dict, py::object value, PyObject* extra, Check check, bool* modified) {
  // The values list holds the hooks while they run: one may remove itself.
  py::object hooks = py::reinterpret_steal<py::object>(PyDict_Values(dict));
  if (!hooks) throw_python_error();
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(hooks.ptr()); ++i) {
    PyObject* hook = PyList_GET_ITEM(hooks.ptr(), i);
    PyObject* res = extra ? PyObject_CallFunctionObjArgs(hook, value.ptr(), extra, nullptr)
                          : PyObject_CallOneArg(hook, value.ptr());
    if (!res) throw_python_error();
    py::object result = py::reinterpret_steal<py::object>(res);
    if (res == Py_None || res == value.ptr()) continue;
    check(value.ptr(), res, hook);
    value = std::move(result);
    if (modified) *modified = true;
  }
  return value;
}

py::object wrapped(const Tensor& t) { return py::reinterpret_steal<py::object>(wrap(t)); }

// Tensor.register_hook: on the gradient of one output of the node (or of a leaf).
struct PyTensorPreHook final : FunctionPreHook {
  PyRef dict;
  size_t value_idx;
  PyTensorPreHook(PyRef d, size_t idx) : dict(std::move(d)), value_idx(idx) {}
  TensorList operator()(TensorList grads) override {
    return with_gil([&] {
      if (grads.size() <= value_idx) grads.resize(value_idx + 1);
      bool modified = false;
      py::object value = call_hooks(dict.get(), wrapped(grads[value_idx]), nullptr, check_single_result, &modified);
      if (modified) grads[value_idx] = tensor_of(value.ptr());
      return std::move(grads);
    });
  }
};

// Node.register_prehook: fn(grad_outputs) -> replacement or None.
struct PyNodePreHook final : FunctionPreHook {
  PyRef dict;
  explicit PyNodePreHook(PyRef d) : dict(std::move(d)) {}
  TensorList operator()(TensorList grads) override {
    return with_gil([&] {
      bool modified = false;
      py::object tup = py::reinterpret_steal<py::object>(grads_to_tuple(grads));
      py::object value = call_hooks(dict.get(), tup, nullptr, check_tuple_result, &modified);
      return modified ? tuple_to_grads(value.ptr()) : std::move(grads);
    });
  }
};

// Node.register_hook: fn(grad_inputs, grad_outputs) -> replacement grad_inputs or None.
struct PyNodePostHook final : FunctionPostHook {
  PyRef dict;
  explicit PyNodePostHook(PyRef d) : dict(std::move(d)) {}
  TensorList operator()(TensorList grad_inputs, const TensorList& grad_outputs) override {
    return with_gil([&] {
      bool modified = false;
      py::object inputs = py::reinterpret_steal<py::object>(grads_to_tuple(grad_inputs));
      py::object outputs = py::reinterpret_steal<py::object>(grads_to_tuple(grad_outputs));
      py::object value = call_hooks(dict.get(), inputs, outputs.ptr(), check_tuple_result, &modified);
      return modified ? tuple_to_grads(value.ptr()) : std::move(grad_inputs);
    });
  }
};

struct PyPostAccumulateGradHook final : PostAccumulateGradHook {
  PyRef dict;
  explicit PyPostAccumulateGradHook(PyRef d) : dict(std::move(d)) {}
  void operator()(const Tensor& leaf) override {
    with_gil([&] {
      auto no_result = [](PyObject* leaf, PyObject* result, PyObject* hook) {
        check_single_result(leaf, result, hook);  // PyTorch's order: a non-tensor is a TypeError first
        EMBER_FAIL(Runtime, "Tensor post accumulate grad hooks should return None.");
      };
      call_hooks(dict.get(), wrapped(leaf), nullptr, no_result, nullptr);
    });
  }
};

// A new {id: fn} OrderedDict and the RemovableHandle that empties it.
std::pair<PyRef, py::object> hook_entry(py::handle fn) {
  py::object dict = py::module_::import("collections").attr("OrderedDict")();
  py::object handle = py::module_::import("ember.utils.hooks").attr("RemovableHandle")(dict);
  dict[handle.attr("id")] = fn;
  return {PyRef::borrow(dict.ptr()), handle};
}

// A leaf's hooks; its accumulator, when it has one, is marked hooked for the engine.
LeafHooks& leaf_hooks_of(const Tensor& t) {
  AutogradMeta& meta = t.impl()->autograd_meta();
  if (!meta.leaf_hooks) meta.leaf_hooks.reset(new LeafHooks());
  if (std::shared_ptr<Node> accumulator = meta.grad_accumulator.lock()) accumulator->ensure_hooks();
  return *meta.leaf_hooks;
}

// Python's default repr, as PyTorch's: the class name (CopySlices, not name()'s torch::autograd::CopySlices)
// and the Python object's address, in hex.
std::string node_repr(py::handle node) {
  char address[2 + 2 * sizeof(void*) + 1];
  std::snprintf(address, sizeof address, "0x%" PRIxPTR, reinterpret_cast<uintptr_t>(node.ptr()));
  return "<" + py::str(py::type::handle_of(node).attr("__name__")).cast<std::string>() + " object at " + address + ">";
}

// autograd.graph.saved_tensors_hooks: pack at save time, unpack in backward.
struct PackUnpack {
  PyRef pack, unpack;
};

class PySavedVariableHooks final : public SavedVariableHooks {
 public:
  explicit PySavedVariableHooks(std::shared_ptr<const PackUnpack> fns) : fns_(std::move(fns)) {}
  void call_pack_hook(const Tensor& t) override {
    with_gil([&] {
      PyObject* packed = PyObject_CallOneArg(fns_->pack.get(), wrapped(t).ptr());
      if (!packed) throw_python_error();
      packed_ = PyRef(packed);
    });
  }
  Tensor call_unpack_hook() override {
    return with_gil([&] {
      PyObject* res = PyObject_CallOneArg(fns_->unpack.get(), packed_.get());
      if (!res) throw_python_error();
      py::object result = py::reinterpret_steal<py::object>(res);
      EMBER_CHECK(is_tensor(res), Type,
                  "Output of saved tensor unpack_hook expected to be a Tensor but got result of type ",
                  Py_TYPE(res)->tp_name);
      return tensor_of(res);
    });
  }

 private:
  std::shared_ptr<const PackUnpack> fns_;
  PyRef packed_;
};

struct PySavedTensorHooksFactory final : SavedTensorHooksFactory {
  std::shared_ptr<const PackUnpack> fns;
  std::unique_ptr<SavedVariableHooks> make() override { return std::make_unique<PySavedVariableHooks>(fns); }
};

}  // namespace

py::object node_metadata(Node& node) {
  NodeHooks& hooks = node.ensure_hooks();
  if (!hooks.metadata) {
    PyObject* dict = PyDict_New();
    if (!dict) throw py::error_already_set();
    hooks.metadata = std::shared_ptr<void>(dict, [](void* d) { PyRef drop(static_cast<PyObject*>(d)); });
  }
  return py::reinterpret_borrow<py::object>(static_cast<PyObject*>(hooks.metadata.get()));
}

void bind_autograd_hooks(py::module_& m) {
  // dynamic_attr: a GC-tracked layout with a __dict__, which the per-name subclasses (node_to_python) share.
  py::class_<Node, std::shared_ptr<Node>>(m, "Node", py::dynamic_attr())
      .def("name", &Node::name)
      .def_property_readonly("next_functions", [](Node& n) {
        const std::vector<Edge>& edges = n.shown_edges ? *n.shown_edges : n.next_edges;
        py::tuple out(edges.size());
        for (size_t i = 0; i < edges.size(); ++i) {
          const Edge& e = edges[i];
          out[i] = py::make_tuple(e.fn ? node_to_python(e.fn) : py::none(), e.input_nr);
        }
        return out;
      })
      .def_property_readonly("variable", [](Node& n) -> py::object {
        if (auto* acc = dynamic_cast<AccumulateGrad*>(&n)) return wrapped(acc->variable);
        throw py::attribute_error("'" + n.name() + "' object has no attribute 'variable'");
      })
      .def_property_readonly("metadata", &node_metadata, "A dict kept with the node, for the user's own use.")
      .def("register_hook", [](Node& n, py::handle fn) {
        auto [dict, handle] = hook_entry(fn);
        n.ensure_hooks().post.push_back(std::make_shared<PyNodePostHook>(std::move(dict)));
        return handle;
      }, "fn(grad_inputs, grad_outputs) runs after the node; it may return replacement grad_inputs.")
      .def("register_prehook", [](Node& n, py::handle fn) {
        auto [dict, handle] = hook_entry(fn);
        n.ensure_hooks().pre.push_back(std::make_shared<PyNodePreHook>(std::move(dict)));
        return handle;
      }, "fn(grad_outputs) runs before the node; it may return replacement grad_outputs.")
      .def("__repr__", [](py::handle self) { return node_repr(self); });

  m.def("_register_tensor_hook", [](py::handle tensor, py::handle fn) {
    if (!is_tensor(tensor.ptr())) throw py::type_error("_register_tensor_hook: expected a Tensor");
    const Tensor& t = tensor_of(tensor.ptr());
    auto [dict, handle] = hook_entry(fn);
    auto hook = std::make_shared<PyTensorPreHook>(std::move(dict), t.output_nr());
    // A non-leaf's hooks go on its current node: after an in-place op, new hooks go
    // to the new node while the old ones still see the old value's gradient.
    if (std::shared_ptr<Node> fn_node = t.grad_fn()) fn_node->ensure_hooks().tensor_pre.push_back(std::move(hook));
    else leaf_hooks_of(t).pre.push_back(std::move(hook));
    return handle;
  }, "Tensor.register_hook's C++ half: stores the hook with the tensor's autograd record.");
  m.def("_register_post_accumulate_grad_hook", [](py::handle tensor, py::handle fn) {
    if (!is_tensor(tensor.ptr())) throw py::type_error("_register_post_accumulate_grad_hook: expected a Tensor");
    auto [dict, handle] = hook_entry(fn);
    leaf_hooks_of(tensor_of(tensor.ptr())).post_accumulate.push_back(
        std::make_shared<PyPostAccumulateGradHook>(std::move(dict)));
    return handle;
  }, "Tensor.register_post_accumulate_grad_hook's C++ half.");

  namespace sth = autograd::saved_tensor_hooks;
  m.def("_push_saved_tensors_default_hooks", [](py::handle pack, py::handle unpack) {
    auto factory = std::make_shared<PySavedTensorHooksFactory>();
    factory->fns = std::make_shared<PackUnpack>(PackUnpack{PyRef::borrow(pack.ptr()), PyRef::borrow(unpack.ptr())});
    sth::push(std::move(factory));
  }, "Installs (pack_hook, unpack_hook) for the tensors saved on this thread from now on.");
  m.def("_pop_saved_tensors_default_hooks", &sth::pop, "Removes this thread's innermost saved-tensor hooks.");
  m.def("_saved_tensors_hooks_disable", &sth::disable,
        "Makes installing saved-tensor hooks on this thread raise `message`.");
  m.def("_saved_tensors_hooks_enable", &sth::enable);
  m.def("_saved_tensors_hooks_get_disabled_error_message", &sth::disabled_message);
}

}  // namespace ember::python
