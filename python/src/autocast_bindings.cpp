// torch.*autocast* state functions over ember/autocast.h (PyTorch's torch/csrc/autograd/init.cpp names).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>

#include "ember/autocast.h"
#include "ember/device.h"
#include "python_exception.h"
#include "python_support.h"

namespace py = pybind11;

namespace ember::python {
namespace {

ember::DeviceType device_type_of(const std::string& name) { return Device::parse(name).type; }

py::object dtype_py(ScalarType t) { return py::reinterpret_borrow<py::object>(dtype_object(t)); }

// PyTorch's argument errors: "f(): argument 'enabled' (position 2) must be bool, not str".
[[noreturn]] void wrong_type(const char* fn, const char* arg, int position, const char* want, py::handle got) {
  throw py::type_error(std::string(fn) + "(): argument '" + arg + "' (position " + std::to_string(position) +
                       ") must be " + want + ", not " + Py_TYPE(got.ptr())->tp_name);
}

bool bool_arg(const char* fn, const char* arg, int position, py::handle o) {
  if (!PyBool_Check(o.ptr())) wrong_type(fn, arg, position, "bool", o);
  return o.ptr() == Py_True;
}

ScalarType dtype_arg(const char* fn, int position, py::handle o) {
  if (!PyObject_TypeCheck(o.ptr(), DTypeType)) wrong_type(fn, "dtype", position, "torch.dtype", o);
  return arg_dtype(o.ptr());
}

std::string str_arg(const char* fn, py::handle o) {
  if (!PyUnicode_Check(o.ptr())) wrong_type(fn, "device_type", 1, "str", o);
  return o.cast<std::string>();
}

void deprecated(const char* old_name, const char* new_call) {
  std::string message = std::string("torch.") + old_name + "() is deprecated. Please use torch." + new_call +
                        " instead.";
  if (PyErr_WarnEx(PyExc_DeprecationWarning, message.c_str(), 1) < 0) throw py::error_already_set();
}

}  // namespace

void bind_autocast(py::module_& m) {
  // With no device type: CUDA's, as PyTorch's legacy torch.is_autocast_enabled().
  m.def("is_autocast_enabled", [](std::optional<std::string> device_type) {
    return autocast::is_enabled(device_type ? device_type_of(*device_type) : ember::DeviceType::CUDA);
  }, py::arg("device_type") = py::none());
  m.def("set_autocast_enabled", [](py::args args) {
    if (args.size() == 1) {  // set_autocast_enabled(enabled): CUDA's
      autocast::set_enabled(ember::DeviceType::CUDA, bool_arg("set_autocast_enabled", "enabled", 1, args[0]));
      return;
    }
    if (args.size() != 2) throw py::type_error("set_autocast_enabled() takes (device_type, enabled) or (enabled)");
    const std::string type = str_arg("set_autocast_enabled", args[0]);
    autocast::set_enabled(device_type_of(type), bool_arg("set_autocast_enabled", "enabled", 2, args[1]));
  });
  m.def("_is_any_autocast_enabled", [] { return autocast::detail::state().enabled_mask != 0; });
  m.def("_is_autocast_available", [](const std::string& device_type) {
    Device::parse(device_type);  // raises for an unknown one
    const std::string type = device_type.substr(0, device_type.find(':'));
    return type == "cpu" || type == "cuda";
  });
  m.def("get_autocast_dtype", [](const std::string& device_type) {
    return dtype_py(autocast::dtype(device_type_of(device_type)));
  });
  m.def("set_autocast_dtype", [](const std::string& device_type, py::handle dtype) {
    autocast::set_dtype(device_type_of(device_type), dtype_arg("set_autocast_dtype", 2, dtype));
  });
  m.def("is_autocast_cpu_enabled", [] {
    deprecated("is_autocast_cpu_enabled", "is_autocast_enabled('cpu')");
    return autocast::is_enabled(ember::DeviceType::CPU);
  });
  m.def("set_autocast_cpu_enabled", [](bool enabled) {
    deprecated("set_autocast_cpu_enabled", "set_autocast_enabled('cpu', enabled)");
    autocast::set_enabled(ember::DeviceType::CPU, enabled);
  });
  m.def("get_autocast_cpu_dtype", [] {
    deprecated("get_autocast_cpu_dtype", "get_autocast_dtype('cpu')");
    return dtype_py(autocast::dtype(ember::DeviceType::CPU));
  });
  m.def("set_autocast_cpu_dtype", [](py::handle dtype) {
    deprecated("set_autocast_cpu_dtype", "set_autocast_dtype('cpu', dtype)");
    autocast::set_dtype(ember::DeviceType::CPU, dtype_arg("set_autocast_cpu_dtype", 1, dtype));
  });
  m.def("get_autocast_gpu_dtype", [] {
    deprecated("get_autocast_gpu_dtype", "get_autocast_dtype('cuda')");
    return dtype_py(autocast::dtype(ember::DeviceType::CUDA));
  });
  m.def("set_autocast_gpu_dtype", [](py::handle dtype) {
    deprecated("set_autocast_gpu_dtype", "set_autocast_dtype('cuda', dtype)");
    autocast::set_dtype(ember::DeviceType::CUDA, dtype_arg("set_autocast_gpu_dtype", 1, dtype));
  });
  m.def("is_autocast_cache_enabled", &autocast::is_cache_enabled);
  m.def("set_autocast_cache_enabled", &autocast::set_cache_enabled);
  m.def("autocast_increment_nesting", &autocast::increment_nesting);
  m.def("autocast_decrement_nesting", &autocast::decrement_nesting);
  m.def("clear_autocast_cache", &autocast::clear_cache);
  // For Python-level ops with a policy (ember/_autocast_policy.py): the C++ entries' cast (with its weight
  // cache) and promote rule, and suspending autocast while the op runs.
  m.def("_autocast_cast", [](py::handle tensor, py::handle dtype, const std::string& device_type) {
    if (!is_tensor(tensor.ptr())) throw py::type_error("_autocast_cast: expected a Tensor");
    return py::reinterpret_steal<py::object>(
        wrap(autocast::cast(arg_dtype(dtype.ptr()), tensor_of(tensor.ptr()), device_type_of(device_type))));
  });
  m.def("_autocast_promote_type", [](const std::string& device_type, const py::list& tensors) {
    TensorList list;
    for (py::handle t : tensors)
      if (is_tensor(t.ptr())) list.push_back(tensor_of(t.ptr()));
    return dtype_py(autocast::promote_type(device_type_of(device_type), {}, {&list}));
  });
  m.def("_autocast_suspend", [] {
    const uint8_t mask = autocast::detail::state().enabled_mask;
    autocast::detail::set_mask(0);
    return (int)mask;
  });
  m.def("_autocast_restore", [](int mask) { autocast::detail::set_mask((uint8_t)mask); });
  // Threads with autocast on (the entries' global flag); for tests.
  m.def("_autocast_active_threads", [] { return autocast::detail::g_active_threads.load(); });
}

}  // namespace ember::python
