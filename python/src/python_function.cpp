// Custom autograd Functions (ember.autograd.Function, python/ember/autograd/function.py).
// Function.apply makes a PyNode (_function_node), runs the forward with grad
// mode off, then _function_finish gives the outputs their history and keeps
// what ctx.save_for_backward named. The ctx object is the node's Python face:
// an instance of <Name>Backward deriving from _C._FunctionBase, which points
// at its PyNode weakly while the node owns it; y.grad_fn returns it.
#include <unordered_map>
#include <unordered_set>

#include "ember/autograd_helpers.h"
#include "ember/ops/zeros.h"
#include "python_autograd.h"

namespace py = pybind11;

namespace ember::python {
namespace {

// _C._FunctionBase: what the ctx object holds besides its __dict__.
struct PyFunctionBase {
  PyObject_HEAD
  std::weak_ptr<PyNode> cdata;
  PyObject* needs_input_grad;
  bool materialize_grads;
};
PyTypeObject* FunctionBaseType = nullptr;

bool is_function_ctx(PyObject* o) { return FunctionBaseType && PyObject_TypeCheck(o, FunctionBaseType); }
PyFunctionBase* as_ctx(PyObject* o) { return reinterpret_cast<PyFunctionBase*>(o); }

PyObject* ctx_new(PyTypeObject* type, PyObject*, PyObject*) {
  PyObject* obj = type->tp_alloc(type, 0);
  if (!obj) return nullptr;
  PyFunctionBase* self = as_ctx(obj);
  new (&self->cdata) std::weak_ptr<PyNode>();
  self->needs_input_grad = nullptr;
  self->materialize_grads = true;
  return obj;
}

void ctx_dealloc(PyObject* obj) {
  PyFunctionBase* self = as_ctx(obj);
  Py_CLEAR(self->needs_input_grad);
  self->cdata.~weak_ptr();
  PyTypeObject* tp = Py_TYPE(obj);
  tp->tp_free(obj);
  Py_DECREF(tp);
}

std::shared_ptr<PyNode> node_of(PyObject* ctx, const char* attribute) {
  std::shared_ptr<PyNode> node = as_ctx(ctx)->cdata.lock();
  EMBER_CHECK(node, Runtime, "Attribute '", attribute, "' is invalid for this instance of _C._FunctionBase: its "
              "autograd node is gone (the ctx outlived the outputs of the Function call that made it).");
  return node;
}

// ctx._cdata: the node as a _C.Node (the Node API of ctx goes through it).
PyObject* ctx_get_cdata(PyObject* obj, void*) {
  EMBER_PY_BEGIN
  return py::cast(std::static_pointer_cast<Node>(node_of(obj, "_cdata"))).release().ptr();
  EMBER_PY_END
}

PyObject* ctx_get_needs_input_grad(PyObject* obj, void*) {
  PyObject* v = as_ctx(obj)->needs_input_grad;
  if (!v) Py_RETURN_NONE;
  Py_INCREF(v);
  return v;
}
int ctx_set_needs_input_grad(PyObject* obj, PyObject* v, void*) {
  Py_XINCREF(v);
  Py_XSETREF(as_ctx(obj)->needs_input_grad, v);
  return 0;
}

PyObject* ctx_get_materialize_grads(PyObject* obj, void*) { return PyBool_FromLong(as_ctx(obj)->materialize_grads); }
int ctx_set_materialize_grads(PyObject* obj, PyObject* v, void*) {
  int truth = v ? PyObject_IsTrue(v) : 1;
  if (truth < 0) return -1;
  as_ctx(obj)->materialize_grads = truth;
  return 0;
}

PyObject* ctx_get_saved_tensors(PyObject* obj, void*) {
  EMBER_PY_BEGIN
  return node_of(obj, "saved_tensors")->unpack_saved();
  EMBER_PY_END
}

PyGetSetDef ctx_getsets[] = {
    {"_cdata", ctx_get_cdata, nullptr, "The autograd node (a _C.Node).", nullptr},
    {"needs_input_grad", ctx_get_needs_input_grad, ctx_set_needs_input_grad,
     "Per forward argument: whether it is a tensor that requires grad.", nullptr},
    {"materialize_grads", ctx_get_materialize_grads, ctx_set_materialize_grads,
     "Whether backward gets zeros (else None) for outputs no gradient reached.", nullptr},
    {"saved_tensors", ctx_get_saved_tensors, nullptr, "The tensors save_for_backward kept, version-checked.", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

void create_function_base_type(py::module_& m) {
  static PyType_Slot slots[] = {{Py_tp_new, (void*)ctx_new},
                                {Py_tp_dealloc, (void*)ctx_dealloc},
                                {Py_tp_getset, ctx_getsets},
                                {Py_tp_doc, (void*)"The C part of a custom Function's ctx (its autograd node's handle)."},
                                {0, nullptr}};
  static PyType_Spec spec = {"ember._C._FunctionBase", sizeof(PyFunctionBase), 0,
                             Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE, slots};
  FunctionBaseType = (PyTypeObject*)PyType_FromSpec(&spec);
  if (!FunctionBaseType) throw py::error_already_set();
  m.add_object("_FunctionBase", py::reinterpret_borrow<py::object>((PyObject*)FunctionBaseType));
}

// Whether `shape` broadcasts to `target` (PyTorch's is_expandable_to).
bool expandable_to(const DimVector& shape, const DimVector& target) {
  if (shape.size() > target.size()) return false;
  for (size_t i = 1; i <= shape.size(); ++i) {
    int64_t s = shape[shape.size() - i], t = target[target.size() - i];
    if (s != t && s != 1) return false;
  }
  return true;
}

// The node that raises when reached: once_differentiable's outputs under create_graph.
struct DelayedErrorNode final : Node {
  std::string message;
  std::string default_name() const override { return "Error"; }
  TensorList apply(TensorList&&) override { EMBER_FAIL(Runtime, message); }
};

bool is_view(const Tensor& t) { return t.impl()->autograd && t.impl()->autograd->view_base; }

// An alias of `t` (same storage and geometry) that is a view of it, as view_as.
Tensor view_alias(const Tensor& t) {
  Tensor alias = make_view(t, t.sizes(), t.strides(), t.offset());
  autograd::mark_view(alias, t);
  return alias;
}

// A history-free alias of a forward result: its history goes on the alias so that the
// result the forward may have kept in ctx does not hold the node (a cycle). A view of
// an input stays a view of it.
Tensor output_alias(const Tensor& t) {
  Tensor alias = detach_copy(t);
  if (is_view(t)) alias.impl()->autograd_meta().view_base = t.impl()->autograd->view_base;
  return alias;
}

// The impls of the tensors in ctx.<attr> (mark_dirty / mark_non_differentiable).
std::unordered_set<TensorImpl*> marked_tensors(PyObject* ctx, const char* attr, const char* what) {
  std::unordered_set<TensorImpl*> out;
  py::object value = py::reinterpret_steal<py::object>(PyObject_GetAttrString(ctx, attr));
  if (!value) {
    PyErr_Clear();
    return out;
  }
  if (value.is_none()) return out;
  if (!PyTuple_Check(value.ptr())) throw py::type_error(std::string(attr) + " must be a tuple");
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(value.ptr()); ++i) {
    PyObject* t = PyTuple_GET_ITEM(value.ptr(), i);
    EMBER_CHECK(is_tensor(t), Runtime, what, " argument ", i, " is of type ", Py_TYPE(t)->tp_name);
    out.insert(tensor_of(t).impl());
  }
  return out;
}

void forget_attr(PyObject* ctx, const char* attr) {
  if (PyObject_HasAttrString(ctx, attr) && PyObject_SetAttrString(ctx, attr, Py_None) < 0) PyErr_Clear();
}

// The history of output `i` (PyTorch's _wrap_outputs): what the caller gets in its place.
Tensor wrap_output(const std::shared_ptr<PyNode>& node, const Tensor& var, uint32_t i, size_t num_outputs,
                   bool is_input, bool is_modified, bool differentiable) {
  if (!differentiable) {
    if (!var.requires_grad()) return is_input && !is_modified ? view_alias(var) : var;
    return output_alias(var);  // a detached alias, not a change to var's requires_grad
  }
  if (is_modified) {
    EMBER_CHECK(!(var.is_leaf() && var.requires_grad()), Runtime,
                "a leaf Variable that requires grad has been used in an in-place operation.");
    if (!is_input && PyErr_WarnEx(PyExc_UserWarning, "ctx.mark_dirty() received a tensor that was not an input. "
                                  "Only input Tensors that have been mutated should be passed to ctx.mark_dirty().",
                                  1) < 0)
      throw py::error_already_set();
    if (is_view(var)) {
      Tensor base(var.impl()->autograd->view_base);
      EMBER_CHECK(!(base.is_leaf() && base.requires_grad()), Runtime,
                  "a view of a leaf Variable that requires grad is being used in an in-place operation.");
      EMBER_CHECK(num_outputs == 1, Runtime,
                  "If your Function modifies inplace an input that is a view of another Tensor, your Function "
                  "cannot return more than one Tensor. This is not supported by the current autograd engine. You "
                  "should either make sure the input is not a view (using .clone() for example) or make your "
                  "Function only return one Tensor (potentially splitting it into two Functions: one doing the "
                  "inplace that returns a single Tensor and a second one that does the other operations). You can "
                  "ask on the forum https://discuss.pytorch.org/ if you need help to do this change.");
    }
    var.bump_version();
    if (i == 0) autograd::rebase_history(var, node, node->name_.c_str());
    else autograd::set_history(var, node, i);
    return var;
  }
  Tensor out = is_input ? view_alias(var) : output_alias(var);
  autograd::set_history(out, node, i);
  return out;
}

// Function.apply after the forward: the outputs' history, then ctx.save_for_backward.
py::object function_finish(const std::shared_ptr<Node>& base_node, const py::tuple& args, const py::object& raw) {
  auto node = std::dynamic_pointer_cast<PyNode>(base_node);
  if (!node) throw py::type_error("_function_finish: not a custom Function's node");
  PyObject* ctx = node->ctx.get();
  const bool unpack = !PyTuple_Check(raw.ptr());
  py::tuple outputs = unpack ? py::make_tuple(raw) : py::reinterpret_borrow<py::tuple>(raw);
  const size_t num_outputs = outputs.size();
  std::unordered_set<TensorImpl*> inputs;
  for (py::handle a : args)
    if (is_tensor(a.ptr())) inputs.insert(tensor_of(a.ptr()).impl());
  std::unordered_set<TensorImpl*> dirty = marked_tensors(ctx, "dirty_tensors", "mark_dirty can only accept variables, but");
  std::unordered_set<TensorImpl*> non_diff =
      marked_tensors(ctx, "non_differentiable", "mark_non_differentiable only accepts variable arguments, but");

  py::tuple result(num_outputs);
  std::unordered_map<TensorImpl*, Tensor> saved_as_output;  // forward result -> what backward unpacks for it
  size_t dirty_returned = 0, num_diff_outputs = 0;
  for (size_t i = 0; i < num_outputs; ++i) {
    PyObject* o = outputs[i].ptr();
    if (!is_tensor(o)) {
      result[i] = outputs[i];
      if (node->executable) node->output_info.push_back({});
      continue;
    }
    const Tensor& var = tensor_of(o);
    TensorImpl* impl = var.impl();
    const bool is_input = inputs.count(impl), is_modified = dirty.count(impl);
    dirty_returned += is_modified;
    const bool differentiable = node->executable && !non_diff.count(impl) && is_floating(var.dtype());
    if (node->executable) node->output_info.push_back({true, var.sizes(), var.dtype(), var.device()});
    Tensor out = wrap_output(node, var, (uint32_t)i, num_outputs, is_input, is_modified, differentiable);
    // An output that is (a view of) an input may not be written in place: the view+inplace
    // rebase would route its gradient around the Function's backward (PyTorch raises too).
    if (!(is_input && is_modified) && is_view(out)) out.impl()->autograd->creation_meta = CreationMeta::InCustomFunction;
    num_diff_outputs += differentiable;
    result[i] = out.is_same(var) ? outputs[i] : py::reinterpret_steal<py::object>(wrap(out));
    if (is_modified || (differentiable && !is_input)) saved_as_output[impl] = out;
  }
  // Views among several differentiable outputs share one node: none may be written in place.
  if (num_diff_outputs > 1)
    for (py::handle o : result)
      if (is_tensor(o.ptr()) && is_view(tensor_of(o.ptr())))
        tensor_of(o.ptr()).impl()->autograd->creation_meta = CreationMeta::MultiOutputNode;
  EMBER_CHECK(dirty_returned >= dirty.size(), Runtime, "Some elements marked as dirty during the forward method were "
              "not returned as output. The inputs that are modified inplace must all be outputs of the Function.");

  py::object to_save = py::reinterpret_steal<py::object>(PyObject_GetAttrString(ctx, "to_save"));
  if (!to_save) PyErr_Clear();
  if (node->executable && to_save && !to_save.is_none()) {
    if (!PyTuple_Check(to_save.ptr())) throw py::type_error("to_save must be a tuple");
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(to_save.ptr()); ++i) {
      PyObject* t = PyTuple_GET_ITEM(to_save.ptr(), i);
      if (t == Py_None) {
        node->saved.emplace_back();
        continue;
      }
      EMBER_CHECK(is_tensor(t), Type, "save_for_backward can only save variables, but argument ", i,
                  " is of type ", Py_TYPE(t)->tp_name);
      auto as_output = saved_as_output.find(tensor_of(t).impl());
      if (as_output != saved_as_output.end()) node->saved.emplace_back(as_output->second, true);
      else node->saved.emplace_back(tensor_of(t), false);
    }
  }
  // What ctx names is processed: dropping it breaks the cycles a dirty input would make.
  for (const char* attr : {"to_save", "dirty_tensors", "non_differentiable"}) forget_attr(ctx, attr);
  return unpack ? py::object(result[0]) : py::object(result);
}

}  // namespace

// ---------------------------------------------------------------- PyNode
TensorList PyNode::apply(TensorList&& grads) {
  return with_gil([&] {
    grads.resize(output_info.size());
    const bool materialize = as_ctx(ctx.get())->materialize_grads;
    py::tuple args(grads.size());
    for (size_t i = 0; i < grads.size(); ++i) {
      const OutputInfo& info = output_info[i];
      Tensor g = grads[i];
      if (!g.defined() && materialize && info.is_tensor) g = ember::zeros(info.shape, info.dtype, info.device);
      args[i] = py::reinterpret_steal<py::object>(wrap(g));
    }
    py::object res = py::reinterpret_borrow<py::object>(ctx.get()).attr("apply")(*args);
    py::tuple r = PyTuple_Check(res.ptr()) ? py::reinterpret_borrow<py::tuple>(res) : py::make_tuple(res);
    const size_t num_inputs = is_tensor_input.size();
    size_t num_grads = r.size();
    // Extra results are fine when they are all None.
    if (num_grads > num_inputs) {
      bool all_none = true;
      for (size_t i = num_inputs; i < num_grads; ++i) all_none &= r[i].is_none();
      if (all_none) num_grads = num_inputs;
    }
    EMBER_CHECK(num_grads == num_inputs, Runtime, "function ", name_, " returned an incorrect number of gradients "
                "(expected ", num_inputs, ", got ", num_grads, ")");
    TensorList out;
    out.reserve(next_edges.size());
    for (size_t i = 0; i < num_inputs; ++i) {
      PyObject* g = r[i].ptr();
      if (!is_tensor_input[i]) {
        EMBER_CHECK(g == Py_None, Runtime, "function ", name_, " returned a gradient different than None at position ",
                    i + 1, ", but the corresponding forward input was not a Variable");
        continue;
      }
      if (g == Py_None) {
        out.emplace_back();
        continue;
      }
      EMBER_CHECK(is_tensor(g), Runtime, "expected Variable or None (got ", Py_TYPE(g)->tp_name, ")");
      out.push_back(tensor_of(g));
    }
    // PyTorch's validate_outputs: a gradient must broadcast to its input and live on its device.
    for (size_t i = 0; i < out.size(); ++i) {
      if (!out[i].defined() || !next_edges[i].valid()) continue;
      const InputMeta& meta = input_meta[i];
      EMBER_CHECK(expandable_to(meta.shape, out[i].sizes()), Runtime, "Function ", name_,
                  " returned an invalid gradient at index ", i, " - got ", shape_str(out[i].sizes()),
                  " but expected shape compatible with ", shape_str(meta.shape));
      EMBER_CHECK(out[i].device() == meta.device, Runtime, "Function ", name_, " returned an invalid gradient at index ",
                  i, " - expected device ", meta.device, " but got ", out[i].device());
    }
    return out;
  });
}

void PyNode::release_saved() {
  for (SavedVariable& s : saved) s.reset();
}

void PyNode::forget_modified_saved() {
  for (SavedVariable& s : saved) s.forget_if_modified();
}

PyObject* PyNode::unpack_saved() {
  std::shared_ptr<Node> self = shared_from_this();
  PyObject* tup = PyTuple_New((Py_ssize_t)saved.size());
  if (!tup) return nullptr;
  try {
    for (size_t i = 0; i < saved.size(); ++i) PyTuple_SET_ITEM(tup, i, wrap(saved[i].unpack(self)));
  } catch (...) {
    Py_DECREF(tup);
    throw;
  }
  return tup;
}

// The Python class of nodes named `name`: a subclass of _C.Node made on first use, so that
// type(loss.grad_fn).__name__ is 'NllLossBackward0' as in PyTorch (one class per node name).
static PyObject* node_class(const std::string& name, PyObject* base) {
  static PyObject* classes = PyDict_New();  // name -> class, for the life of the process
  if (!classes) throw py::error_already_set();
  if (PyObject* cls = PyDict_GetItemString(classes, name.c_str())) return cls;
  py::dict body;
  body["__slots__"] = py::tuple();  // the layout of _C.Node, so an instance's __class__ may change to it
  body["__module__"] = "builtins";  // PyTorch's: <class 'MulBackward0'>
  body["__qualname__"] = name;
  py::object cls = py::handle(reinterpret_cast<PyObject*>(Py_TYPE(base)))(name, py::make_tuple(py::handle(base)), body);
  auto* made = reinterpret_cast<PyTypeObject*>(cls.ptr());
  auto* node_type = reinterpret_cast<PyTypeObject*>(base);
  if (made->tp_basicsize != node_type->tp_basicsize || made->tp_dictoffset != node_type->tp_dictoffset ||
      PyType_IS_GC(made) != PyType_IS_GC(node_type))
    throw std::logic_error("node_class: a node class must have _C.Node's layout");
  if (PyDict_SetItemString(classes, name.c_str(), cls.ptr()) < 0) throw py::error_already_set();
  return cls.ptr();
}

py::object node_to_python(const std::shared_ptr<Node>& node) {
  if (auto* py_node = dynamic_cast<PyNode*>(node.get())) return py::reinterpret_borrow<py::object>(py_node->ctx.get());
  static PyObject* base = py::type::of<Node>().ptr();
  py::object obj = py::cast(node);
  // A new wrapper is a plain _C.Node no one else has seen; it becomes its name's class, whose layout is
  // _C.Node's (__class__ assignment refuses: the deallocators differ, pybind11's and subtype_dealloc,
  // which calls pybind11's). An existing wrapper already has its class.
  if (Py_TYPE(obj.ptr()) == reinterpret_cast<PyTypeObject*>(base)) {
    // PyTorch's C++ nodes are named torch::autograd::CopySlices; their class is CopySlices.
    std::string name = node->name();
    const std::string ns = "torch::autograd::";
    if (name.compare(0, ns.size(), ns) == 0) name.erase(0, ns.size());
    auto* cls = reinterpret_cast<PyTypeObject*>(node_class(name, base));
    Py_INCREF(cls);
    Py_SET_TYPE(obj.ptr(), cls);
    Py_DECREF(base);
  }
  return obj;
}

void bind_custom_function(py::module_& m) {
  create_function_base_type(m);
  m.def("_function_node", [](py::handle ctx, const py::tuple& args) -> std::shared_ptr<Node> {
    if (!is_function_ctx(ctx.ptr())) throw py::type_error("_function_node: ctx must be a _C._FunctionBase");
    auto node = std::make_shared<PyNode>();
    node->ctx = PyRef::borrow(ctx.ptr());
    node->name_ = py::str(py::type::handle_of(ctx).attr("__name__"));
    bool any_requires_grad = false;
    for (py::handle a : args)
      if (is_tensor(a.ptr())) any_requires_grad |= tensor_of(a.ptr()).requires_grad();
    node->executable = GradMode::is_enabled() && any_requires_grad;
    py::tuple needs(args.size());
    for (size_t i = 0; i < args.size(); ++i) {
      const bool tensor = is_tensor(args[i].ptr());
      node->is_tensor_input.push_back(tensor);
      needs[i] = py::bool_(tensor && tensor_of(args[i].ptr()).requires_grad());
      if (tensor && node->executable) node->add_input(tensor_of(args[i].ptr()));
    }
    PyFunctionBase* c = as_ctx(ctx.ptr());
    Py_XSETREF(c->needs_input_grad, needs.release().ptr());
    c->cdata = node;
    return node;
  }, "Function.apply's first step: the node of this call, with edges to the tensor arguments.");
  m.def("_function_finish", &function_finish,
        "Function.apply's last step: the outputs with their history; ctx.save_for_backward's tensors kept.");
  m.def("_delayed_error", [](const std::string& message, const py::tuple& tensors) {
    auto node = std::make_shared<DelayedErrorNode>();
    node->message = message;
    py::tuple out(tensors.size());
    for (size_t i = 0; i < tensors.size(); ++i) {
      if (!is_tensor(tensors[i].ptr())) {
        out[i] = tensors[i];
        continue;
      }
      node->add_input(tensor_of(tensors[i].ptr()));
      Tensor alias = detach_copy(tensor_of(tensors[i].ptr()));
      autograd::set_history(alias, node, (uint32_t)i);
      out[i] = py::reinterpret_steal<py::object>(wrap(alias));
    }
    return out;
  }, "Aliases of `tensors` whose backward raises RuntimeError(message) (once_differentiable).");
}

}  // namespace ember::python
