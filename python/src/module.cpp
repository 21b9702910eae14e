// ember._C: the module. pybind11 builds it and binds the hand-written
// functions below; op bindings are generated (python_ops_*.cpp) and use
// the fast argument parser in arg_parser.cpp.
#include <algorithm>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "ember/autograd.h"
#include "ember/blas.h"
#include "ember/cat_threshold.h"
#include "ember/conv_winograd_thresholds.h"
#include "ember/cuda/api.h"
#include "ember/forward_ad.h"
#include "ember/parallel.h"
#include "ember/register_kernels.h"
#include "ember/rnn_layout.h"
#include "python_autograd.h"
#include "python_support.h"

namespace py = pybind11;
using namespace ember;

namespace pybind11::detail {
template <>
struct type_caster<Tensor> {
  PYBIND11_TYPE_CASTER(Tensor, const_name("Tensor"));
  bool load(handle src, bool) {
    if (src.is_none()) { value = Tensor(); return true; }
    if (!python::is_tensor(src.ptr())) return false;
    value = python::tensor_of(src.ptr());
    return true;
  }
  static handle cast(const Tensor& t, return_value_policy, handle) { return python::wrap(t); }
};
template <>
struct type_caster<ScalarType> {
  PYBIND11_TYPE_CASTER(ScalarType, const_name("dtype"));
  bool load(handle src, bool) {
    if (!PyObject_TypeCheck(src.ptr(), python::DTypeType)) return false;
    value = reinterpret_cast<python::PyDType*>(src.ptr())->dtype;
    return true;
  }
  static handle cast(ScalarType t, return_value_policy, handle) {
    PyObject* o = python::dtype_object(t);
    Py_INCREF(o);
    return o;
  }
};
}  // namespace pybind11::detail

namespace ember::python {
std::vector<OpFunction>* create_tensor_type();
void set_tensor_class(PyTypeObject* cls);
void create_object_types(PyObject* module);
void add_from_numpy(PyObject* module);
void bind_caching_allocator_testing(py::module_& m);
void bind_cuda(py::module_& m);
void bind_trace(py::module_& m);
void bind_dlpack(py::module_& m);
void bind_autocast(py::module_& m);
extern PyObject* g_size_type;
extern PyObject* g_index_tensor_from;

PyObject* get_grad_fn(PyObject* self, void*) {
  EMBER_PY_BEGIN
  std::shared_ptr<Node> fn = tensor_of(self).grad_fn();  // a stale view's raises (view_grad_fn)
  if (!fn) Py_RETURN_NONE;
  return node_to_python(fn).release().ptr();
  EMBER_PY_END
}
}  // namespace ember::python

namespace {

// Each generated op function goes on _C under its op name (for ember's own use) and
// into the table of its ember namespace under its public name: _C._VariableFunctions
// for ember itself, _C._linalg for ember.linalg (importable, as PyTorch's
// torch._C._linalg), each with __all__. _C._op_modules maps namespace -> table.
void add_op_functions(py::module_& m, std::vector<python::OpFunction>& functions) {
  py::dict tables;
  py::object sys_modules = py::module_::import("sys").attr("modules");
  std::string c_name = py::str(m.attr("__name__"));
  for (python::OpFunction& f : functions) {
    py::str path(f.module);
    if (!tables.contains(path)) {
      std::string table_name = f.module[0] ? "_" + std::string(f.module) : "_VariableFunctions";
      std::replace(table_name.begin(), table_name.end(), '.', '_');
      py::module_ table = m.def_submodule(table_name.c_str(), "Generated op functions of an ember namespace.");
      table.attr("__all__") = py::list();
      sys_modules[py::str(c_name + "." + table_name)] = table;
      tables[path] = table;
    }
    py::object fn = py::reinterpret_steal<py::object>(PyCFunction_NewEx(&f.def, m.ptr(), m.attr("__name__").ptr()));
    if (!fn) throw py::error_already_set();
    m.attr(f.def.ml_name) = fn;
    py::object table = tables[path];
    table.attr(f.name) = fn;
    table.attr("__all__").attr("append")(f.name);
  }
  for (auto item : tables) item.second.attr("__all__").attr("sort")();
  m.attr("_op_modules") = tables;
}

}  // namespace

PYBIND11_MODULE(_C, m) {
  m.doc() = "ember's C++ core";
  // Hand-bound functions raise ember::Error too: map its kind as the generated bindings do.
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Error& e) {
      python::set_python_error(e);
    }
  });
  python::linalg_error_type = PyErr_NewException("ember._C._LinAlgError", PyExc_RuntimeError, nullptr);
  if (!python::linalg_error_type) throw py::error_already_set();
  m.add_object("_LinAlgError", py::reinterpret_borrow<py::object>(python::linalg_error_type));
  register_cpu_kernels();
  cuda::init();
  python::create_object_types(m.ptr());
  python::add_from_numpy(m.ptr());
  std::vector<python::OpFunction>* functions = python::create_tensor_type();
  if (!python::TensorType) throw py::error_already_set();
  m.add_object("TensorBase", py::reinterpret_borrow<py::object>((PyObject*)python::TensorType));
  add_op_functions(m, *functions);

  python::bind_autograd_hooks(m);
  python::bind_custom_function(m);
  python::bind_anomaly_mode(m);
  python::bind_saved_fields(m);

  m.def("_set_size_type", [](py::object t) { python::g_size_type = t.release().ptr(); });
  // ember.Tensor, the Python class of the tensor objects made from now on.
  m.def("_set_tensor_class", [](py::type cls) {
    try {
      python::set_tensor_class((PyTypeObject*)cls.ptr());
    } catch (const python::PythonError&) {
      throw py::error_already_set();
    } catch (const std::invalid_argument& e) {
      throw py::type_error(e.what());
    }
  });
  m.def("_set_index_tensor_from", [](py::object f) { python::g_index_tensor_from = f.release().ptr(); });
  // The backward pass releases the GIL: other threads run meanwhile, and the nodes and
  // hooks that call Python (custom Functions, hooks) take it back while they do.
  m.def("_backward", [](const TensorList& roots, const TensorList& grads, bool retain_graph, bool create_graph,
                        const TensorList& inputs) {
    autograd::backward(roots, grads, retain_graph, create_graph, inputs);
  }, py::arg("roots"), py::arg("grads"), py::arg("retain_graph"), py::arg("create_graph"),
     py::arg("inputs") = TensorList{}, py::call_guard<py::gil_scoped_release>());
  m.def("_grad", [](const TensorList& outputs, const TensorList& grad_outputs, const TensorList& inputs,
                    bool retain_graph, bool create_graph, bool allow_unused, bool implicit_grads) {
    return autograd::grad(outputs, grad_outputs, inputs, retain_graph, create_graph, allow_unused, implicit_grads);
  }, py::arg("outputs"), py::arg("grad_outputs"), py::arg("inputs"), py::arg("retain_graph"), py::arg("create_graph"),
     py::arg("allow_unused"), py::arg("implicit_grads") = true, py::call_guard<py::gil_scoped_release>());
  // Forward AD (ember.autograd.forward_ad).
  m.def("_enter_dual_level", &forward_ad::enter_level);
  m.def("_exit_dual_level", &forward_ad::exit_level, py::arg("level"));
  m.def("_make_dual", &forward_ad::make_dual, py::arg("tensor"), py::arg("tangent"), py::arg("level"));
  m.def("_unpack_dual", &forward_ad::unpack_dual, py::arg("tensor"), py::arg("level"));
  m.def("_live_tangents", []() { return forward_ad::live_tangents.load(); });
  m.def("is_grad_enabled", &GradMode::is_enabled);
  m.def("_set_grad_enabled", &GradMode::set_enabled);
  m.def("manual_seed", [](uint64_t seed) { default_generator()->manual_seed(seed); });
  m.def("initial_seed", []() { return default_generator()->initial_seed(); });
  m.def("get_num_threads", &get_num_threads);
  m.def("set_num_threads", &set_num_threads);
  m.def("get_default_dtype", &default_dtype);
  m.def("set_default_dtype", [](ScalarType t) {
    if (!is_floating(t)) throw py::type_error("only floating-point types are supported as the default type");
    set_default_dtype(t);
  });
  m.def("promote_types", &promote_types);
  m.def("_set_default_device", [](py::object d) {
    python::set_default_factory_device(d.is_none() ? std::nullopt : std::optional<Device>(python::arg_device(d.ptr())));
  });
  m.def("_get_default_device", []() -> py::object {
    std::optional<Device> d = python::default_factory_device();
    if (!d) return py::none();
    return py::reinterpret_steal<py::object>(python::device_object(*d));
  });
  m.def("_return_types", []() {
    py::list out;
    for (PyTypeObject* t : python::return_types()) out.append(py::handle(reinterpret_cast<PyObject*>(t)));
    return out;
  }, "The named tuple types ops return (ember.return_types).");
  m.def("_blas_corename", &blas_corename);
  m.def("_cpu_cache_stats", []() {
    auto s = cpu_cache_stats();
    return py::make_tuple(s.cached_bytes, s.allocated_bytes);
  });
  m.def("_cpu_empty_cache", &cpu_empty_cache);
  m.def("_cpu_memory_stats", []() {
    auto s = cpu_memory_stats();
    py::dict d;
    d["allocated_bytes.all.current"] = s.allocated_bytes;
    d["allocated_bytes.all.peak"] = s.peak_allocated_bytes;
    return d;
  });
  m.def("_cpu_reset_peak_memory_stats", &cpu_reset_peak_memory_stats);
  m.def("_thresholds", []() {
    namespace t = ember::thresholds;
    py::dict d;
    d["grain_size"] = t::kGrainSize;
    d["parallel_gemm_work"] = t::kParallelGemmWork;
    d["gemm_strip_width"] = t::kGemmStripWidth;
    d["small_batched_product"] = t::kSmallBatchedProduct;
    d["reduce_block"] = t::kReduceBlock;
    d["reduce_accumulators"] = t::kReduceAccumulators;
    d["gil_release_work"] = t::kGilReleaseWork;
    d["sort_insertion_max"] = t::kSortInsertionMax;
    d["topk_split_line"] = t::kTopkSplitLine;
    d["topk_small_k"] = t::kTopkSmallK;
    d["cat_parallel_work"] = t::kCatParallelWork;
    d["rnn_gate_grain"] = ember::rnn::kRnnGateGrain;
    d["conv_winograd_channels"] = t::kMinWinogradChannels;
    d["conv_winograd_width"] = t::kMinWinogradWidth;
    d["conv_winograd_tile_values"] = t::kMaxWinogradTileValues;
    return d;
  });
  python::bind_cuda(m);
  python::bind_caching_allocator_testing(m);
  python::bind_trace(m);
  python::bind_dlpack(m);
  python::bind_autocast(m);
}
