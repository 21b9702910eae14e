// ember.utils.trace's link to the C++ trace hook: each entered TraceMode is
// a trace::Handler that turns an OpCall into Python objects and passes it to
// the mode's `_receive`. Ops may run without the GIL: the handler takes it.
#include <pybind11/pybind11.h>

#include <algorithm>
#include <unordered_map>

#include "ember/trace.h"
#include "python_exception.h"
#include "python_support.h"

namespace py = pybind11;

namespace ember::python {
namespace {

struct GilHeld {  // whether or not this thread holds it already
  PyGILState_STATE state = PyGILState_Ensure();
  GilHeld() = default;
  GilHeld(const GilHeld&) = delete;
  ~GilHeld() { PyGILState_Release(state); }
};

class ModeHandler final : public trace::Handler {
 public:
  ModeHandler(py::object mode, bool nested) : Handler(nested), mode_(mode.release().ptr()) {}
  ~ModeHandler() override {
    if (!Py_IsInitialized()) return;  // a thread's stack freed after the interpreter: leak
    GilHeld gil;
    for (auto& entry : tensors_) Py_DECREF(entry.second);
    Py_DECREF(mode_);
  }
  PyObject* mode() const { return mode_; }

  void on_call(const trace::OpCall& call) override {
    GilHeld gil;
    try {
      deliver(call);
    } catch (py::error_already_set& e) {
      e.restore();
      throw PythonException();
    } catch (const PythonError&) {
      throw PythonException();
    }
  }

 private:
  void deliver(const trace::OpCall& call) {
    py::list args;
    py::dict kwargs;
    for (int i = 0; i < call.op.num_params; ++i) {
      const trace::Param& p = call.op.params[i];
      py::object v = convert(call.args[i]);
      if (p.kw_only) kwargs[p.name] = v;
      else args.append(v);
    }
    py::tuple outputs(call.outputs.size());
    for (size_t i = 0; i < call.outputs.size(); ++i) outputs[i] = convert(call.outputs[i]);
    py::handle(mode_).attr("_receive")(call.op.name, call.op.overload, py::tuple(args), kwargs, outputs,
                                       call.depth, call.in_backward);
  }

  py::object convert(const trace::Value& value) {
    return std::visit([this](const auto& v) -> py::object { return to_python(v); }, value);
  }
  py::object to_python(std::monostate) { return py::none(); }
  py::object to_python(const Tensor& t) { return tensor(t); }
  py::object to_python(const TensorList& ts) {
    py::list out;
    for (const Tensor& t : ts) out.append(t.defined() ? tensor(t) : py::none());
    return std::move(out);
  }
  py::object to_python(int64_t v) { return py::int_(v); }
  py::object to_python(const IntList& v) {
    py::list out;
    for (int64_t x : v) out.append(py::int_(x));
    return std::move(out);
  }
  py::object to_python(double v) { return py::float_(v); }
  py::object to_python(bool v) { return py::bool_(v); }
  py::object to_python(const std::string& v) { return py::str(v); }
  py::object to_python(const Scalar& s) {
    if (s.is_bool()) return py::bool_(s.to_bool());
    if (s.is_integral()) return py::int_(s.to_int());
    return py::float_(s.to_double());
  }
  py::object to_python(ScalarType t) { return py::reinterpret_borrow<py::object>(dtype_object(t)); }
  py::object to_python(Device d) { return steal(device_object(d)); }
  py::object to_python(Generator* g) {
    if (PyObject* owner = generator_owner(g)) return py::reinterpret_borrow<py::object>(owner);
    return steal(generator_object(g));  // a default generator, which lives as long as the process
  }
  static py::object steal(PyObject* o) {
    if (!o) throw py::error_already_set();
    return py::reinterpret_steal<py::object>(o);
  }

  // One Python object per tensor across this mode's calls, so the recording is
  // a dataflow graph (`calls[1].args[0] is calls[0].outputs[0]`); held weakly.
  // A live object keeps its TensorImpl alive, so its address cannot name another.
  py::object tensor(const Tensor& t) {
    auto it = tensors_.find(t.impl());
    if (it != tensors_.end()) {
      PyObject* known = PyWeakref_GetObject(it->second);
      if (known != Py_None) return py::reinterpret_borrow<py::object>(known);
    }
    py::object obj = steal(wrap(t));
    PyObject* ref = PyWeakref_NewRef(obj.ptr(), nullptr);
    if (!ref) throw py::error_already_set();
    if (it != tensors_.end()) {
      Py_DECREF(it->second);
      it->second = ref;
    } else {
      tensors_.emplace(t.impl(), ref);
      if (tensors_.size() >= prune_at_) forget_dead();
    }
    return obj;
  }
  void forget_dead() {
    for (auto it = tensors_.begin(); it != tensors_.end();) {
      if (PyWeakref_GetObject(it->second) != Py_None) { ++it; continue; }
      Py_DECREF(it->second);
      it = tensors_.erase(it);
    }
    prune_at_ = std::max<size_t>(64, 2 * tensors_.size());
  }

  PyObject* mode_;
  std::unordered_map<TensorImpl*, PyObject*> tensors_;  // weak references
  size_t prune_at_ = 64;
};

}  // namespace

void bind_trace(py::module_& m) {
  // Hand-bound functions (the backward pass) meet a handler's exception too.
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const PythonException& e) {
      e.restore();
    }
  });
  m.def("_trace_push", [](py::object mode, bool nested) {
    trace::push_handler(std::make_shared<ModeHandler>(std::move(mode), nested));
  }, "Installs a TraceMode on this thread (ember.utils.trace).");
  m.def("_trace_pop", [](py::object mode) {
    std::shared_ptr<trace::Handler> innermost = trace::innermost_handler();
    auto* handler = dynamic_cast<ModeHandler*>(innermost.get());
    EMBER_CHECK(handler && handler->mode() == mode.ptr(), Runtime,
                "trace: a TraceMode must exit on the thread that entered it, innermost first");
    trace::pop_handler(handler);
  }, "Removes this thread's innermost TraceMode, which must be `mode`.");
  m.def("_trace_state", []() {
    trace::ThreadSummary s = trace::thread_summary();
    return py::make_tuple(s.installed_anywhere, s.installed_here, s.depth);
  }, "(handlers installed on all threads, on this thread, op calls this thread is inside).");
}

}  // namespace ember::python
