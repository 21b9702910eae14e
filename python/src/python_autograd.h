#pragma once
// The Python side of autograd's extension points: custom Functions' node
// (PyNode, python_function.cpp) and the Python hooks (python_hooks.cpp).
// The backward pass runs without the GIL: everything here that touches
// Python takes it, and Python errors travel as PythonException.
#include <Python.h>
#include <pybind11/pybind11.h>

#include <memory>
#include <string>
#include <vector>

#include "ember/autograd.h"
#include "python_exception.h"
#include "python_support.h"

namespace ember::python {

struct GilHeld {  // whether or not this thread holds it already
  PyGILState_STATE state = PyGILState_Ensure();
  GilHeld() = default;
  GilHeld(const GilHeld&) = delete;
  ~GilHeld() { PyGILState_Release(state); }
};

// An owned reference that may be dropped anywhere: nodes and saved tensors die
// wherever their last owner lets go, with or without the GIL.
class PyRef {
 public:
  PyRef() = default;
  explicit PyRef(PyObject* stolen) : obj_(stolen) {}
  static PyRef borrow(PyObject* o) {
    Py_XINCREF(o);
    return PyRef(o);
  }
  PyRef(PyRef&& other) noexcept : obj_(other.obj_) { other.obj_ = nullptr; }
  PyRef& operator=(PyRef&& other) noexcept {
    std::swap(obj_, other.obj_);
    return *this;
  }
  PyRef(const PyRef&) = delete;
  PyRef& operator=(const PyRef&) = delete;
  ~PyRef() { reset(); }
  void reset() {
    if (!obj_) return;
    if (Py_IsInitialized()) {  // after the interpreter is gone: leak
      GilHeld gil;
      Py_DECREF(obj_);
    }
    obj_ = nullptr;
  }
  PyObject* get() const { return obj_; }
  explicit operator bool() const { return obj_ != nullptr; }

 private:
  PyObject* obj_ = nullptr;
};

// Raises the current Python error as a C++ exception that can cross the engine.
[[noreturn]] inline void throw_python_error() { throw PythonException(); }

// Runs `f` holding the GIL. Nodes and hooks run inside the engine (and pack hooks
// inside ops), so their Python errors leave as PythonException, which crosses C++ frames.
template <typename F>
auto with_gil(F&& f) -> decltype(f()) {
  GilHeld gil;
  try {
    return f();
  } catch (pybind11::error_already_set& e) {
    e.restore();
    throw PythonException();
  } catch (const PythonError&) {
    throw PythonException();
  }
}

// A gradient list as a Python tuple (None where undefined), and back (None -> undefined).
PyObject* grads_to_tuple(const TensorList& grads);
TensorList tuple_to_grads(PyObject* tuple);

// What the forward of a custom Function returned at one position, for backward.
struct OutputInfo {
  bool is_tensor = false;
  DimVector shape;
  ScalarType dtype = ScalarType::Float32;
  Device device;
};

// The node of one custom Function call (autograd.Function.apply): joins the
// engine's graph like any node; apply takes the GIL and calls the Python backward.
struct PyNode final : Node {
  PyRef ctx;  // the ctx object (an instance of <Name>Backward); it points back weakly
  std::string name_;
  std::vector<bool> is_tensor_input;    // per forward argument
  std::vector<OutputInfo> output_info;  // per forward output
  std::vector<SavedVariable> saved;     // ctx.save_for_backward
  bool executable = false;              // grad mode was on and some input requires grad

  std::string default_name() const override { return name_; }
  TensorList apply(TensorList&& grads) override;
  void release_saved() override;
  void forget_modified_saved() override;
  // ctx.saved_tensors: the saved tensors, checked against in-place changes.
  PyObject* unpack_saved();
};

// The Python object of a node: a custom Function's ctx, else a _C.Node.
pybind11::object node_to_python(const std::shared_ptr<Node>& node);

// Node.metadata: the node's dict, made on first use.
pybind11::object node_metadata(Node& node);

void bind_autograd_hooks(pybind11::module_& m);
void bind_anomaly_mode(pybind11::module_& m);
void bind_saved_fields(pybind11::module_& m);  // after bind_autograd_hooks (it extends _C.Node)
void bind_custom_function(pybind11::module_& m);

}  // namespace ember::python
