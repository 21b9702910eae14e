// grad_fn._saved_<name>: what a node keeps for backward (Node::saved_fields), as
// PyTorch shows it: saved tensors (an output re-attached to its node; reading one
// after backward freed it raises), numbers, shapes as tuples, absent optionals as None.
// dir(grad_fn) lists them, as PyTorch's (torchviz finds them so).
#include <pybind11/pybind11.h>

#include <string>
#include <type_traits>

#include "python_autograd.h"

namespace py = pybind11;

namespace ember::python {
namespace {

constexpr const char kPrefix[] = "_saved_";
constexpr size_t kPrefixLength = sizeof(kPrefix) - 1;

py::object to_python(const SavedField::Value& value, const std::shared_ptr<Node>& owner) {
  return std::visit([&](const auto& v) -> py::object {
    using T = std::decay_t<decltype(v)>;
    if constexpr (std::is_same_v<T, std::monostate>) {
      return py::none();
    } else if constexpr (std::is_same_v<T, const SavedVariable*>) {
      return py::reinterpret_steal<py::object>(wrap(v->unpack(owner)));
    } else if constexpr (std::is_same_v<T, TensorList>) {
      return py::reinterpret_steal<py::object>(wrap(v));
    } else if constexpr (std::is_same_v<T, Scalar>) {
      if (v.is_floating()) return py::float_(v.to_double());
      if (v.is_integral()) return py::int_(v.to_int());
      return py::bool_(v.to_bool());
    } else if constexpr (std::is_same_v<T, DimVector>) {
      py::tuple out(v.size());
      for (size_t i = 0; i < v.size(); ++i) out[i] = py::int_(v[i]);
      return out;
    } else if constexpr (std::is_same_v<T, ScalarType>) {
      return py::reinterpret_borrow<py::object>(dtype_object(v));
    } else if constexpr (std::is_same_v<T, Device>) {
      return py::reinterpret_steal<py::object>(device_object(v));
    } else {
      return py::cast(v);  // bool, int64_t, double, str
    }
  }, value);
}

py::object saved_attribute(const std::shared_ptr<Node>& node, const std::string& name) {
  if (name.compare(0, kPrefixLength, kPrefix) == 0)
    for (const SavedField& field : node->saved_fields())
      if (name.compare(kPrefixLength, std::string::npos, field.name) == 0) return to_python(field.value, node);
  throw py::attribute_error("'" + node->name() + "' object has no attribute '" + name + "'");
}

py::list saved_attribute_names(py::handle self, const Node& node) {
  py::list names = py::module_::import("builtins").attr("object").attr("__dir__")(self);
  for (const SavedField& field : node.saved_fields()) names.append(py::str(kPrefix + std::string(field.name)));
  return names;
}

}  // namespace

void bind_saved_fields(py::module_& m) {
  py::object node_class = m.attr("Node");
  node_class.attr("__getattr__") = py::cpp_function(&saved_attribute, py::is_method(node_class), py::name("__getattr__"),
                                                    "grad_fn._saved_<name>: a value the node keeps for backward.");
  node_class.attr("__dir__") = py::cpp_function(
      [](py::handle self) { return saved_attribute_names(self, py::cast<const Node&>(self)); },
      py::is_method(node_class), py::name("__dir__"));
}

}  // namespace ember::python
