// Anomaly mode's Python side (ember/autograd_anomaly.h): a node made while the
// mode is on keeps its forward traceback in metadata["traceback_"] (and the node
// whose backward made it in metadata["parent_"]), as PyTorch; a node whose
// backward fails warns with those tracebacks before the error propagates.
#include <pybind11/pybind11.h>

#include <string>

#include "ember/autograd_anomaly.h"
#include "python_autograd.h"

namespace py = pybind11;

namespace ember::python {
namespace {

// PyTorch's warnings; a warning filter turning them into errors does not replace the error.
void warn(const std::string& message) {
  if (PyErr_WarnEx(PyExc_UserWarning, message.c_str(), 1) < 0) PyErr_Clear();
}

// One traceback's report: the node that failed, or a parent that made it in its backward.
void warn_stack(PyObject* stack, const std::string& name, bool is_parent) {
  if (!stack) {
    warn("Error detected in " + name + ". No forward pass information available. "
         "Enable detect anomaly during forward pass for more information.");
    return;
  }
  std::string text = py::str("").attr("join")(py::handle(stack)).cast<std::string>();
  if (is_parent)
    warn("\n\nPrevious calculation was induced by " + name +
         ". Traceback of forward call that induced the previous calculation:\n" + text);
  else
    warn("Error detected in " + name + ". Traceback of forward call that caused the error:\n" + text);
}

struct PyAnomalyHandler final : AnomalyHandler {
  void record_creation(Node& node, Node* parent) override {
    with_gil([&] {
      py::object stack = py::module_::import("traceback").attr("format_stack")();
      py::object metadata = node_metadata(node);
      metadata["traceback_"] = stack;
      if (parent) metadata["parent_"] = node_to_python(parent->shared_from_this());
    });
  }

  void report_error(Node& node) override {
    GilHeld gil;
    try {
      PyObject* metadata = node.hooks && node.hooks->metadata ? static_cast<PyObject*>(node.hooks->metadata.get())
                                                               : nullptr;
      warn_stack(metadata ? PyDict_GetItemString(metadata, "traceback_") : nullptr, node.name(), false);
      // Nodes made by a backward (create_graph) name the node whose backward made them, up to a forward node.
      py::object parent = metadata ? py::reinterpret_borrow<py::object>(PyDict_GetItemString(metadata, "parent_"))
                                   : py::object();
      while (parent) {
        py::dict parent_metadata = parent.attr("metadata");
        std::string name = py::str(parent.attr("name")());
        warn_stack(PyDict_GetItemString(parent_metadata.ptr(), "traceback_"), name, true);
        parent = py::reinterpret_borrow<py::object>(PyDict_GetItemString(parent_metadata.ptr(), "parent_"));
      }
    } catch (py::error_already_set&) {
      PyErr_Clear();  // the node's own error is the one to raise
    }
  }
};

PyAnomalyHandler g_handler;

}  // namespace

void bind_anomaly_mode(py::module_& m) {
  autograd::anomaly::set_handler(&g_handler);
  m.def("is_anomaly_enabled", &AnomalyMode::is_enabled);
  m.def("is_anomaly_check_nan_enabled", &AnomalyMode::should_check_nan);
  m.def("set_anomaly_enabled", &AnomalyMode::set_enabled, py::arg("enabled"), py::arg("check_nan") = true);
}

}  // namespace ember::python
