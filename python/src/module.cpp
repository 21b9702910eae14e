// ember._C: the module. pybind11 builds it and binds the hand-written
// functions below; op bindings are generated (python_ops_*.cpp) and use
// the fast argument parser in arg_parser.cpp.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "ember/autograd.h"
#include "ember/blas.h"
#include "ember/cuda/api.h"
#include "ember/parallel.h"
#include "ember/register_kernels.h"
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
std::vector<PyMethodDef>* create_tensor_type();
void create_object_types(PyObject* module);
void bind_caching_allocator_testing(py::module_& m);
void bind_cuda(py::module_& m);
void bind_trace(py::module_& m);
extern PyObject* g_size_type;
extern PyObject* g_legacy_new;
extern PyObject* g_index_tensor_from;

PyObject* get_grad_fn(PyObject* self, void*) {
  std::shared_ptr<Node> fn = tensor_of(self).grad_fn();
  if (!fn) Py_RETURN_NONE;
  return py::cast(fn).release().ptr();
}
}  // namespace ember::python

namespace {

void release_numpy_owner(void* ctx, void*) {
  py::gil_scoped_acquire gil;
  Py_DECREF(reinterpret_cast<PyObject*>(ctx));
}

// A tensor over memory owned by a Python object (a NumPy array): shares it.
Tensor from_buffer(uintptr_t ptr, const std::vector<int64_t>& shape, const std::vector<int64_t>& strides,
                   ScalarType dtype, py::object owner, size_t nbytes) {
  PyObject* o = owner.release().ptr();
  DataPtr data{reinterpret_cast<void*>(ptr), o, &release_numpy_owner};
  auto storage = Ref<StorageImpl>::make(data, nbytes, Device());
  return Tensor(Ref<TensorImpl>::make(std::move(storage), DimVector(shape), DimVector(strides), 0, dtype));
}

std::string node_repr(const Node& n) {
  return "<" + n.name() + " object at " + std::to_string(reinterpret_cast<uintptr_t>(&n)) + ">";
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
  register_cpu_kernels();
  cuda::init();
  python::create_object_types(m.ptr());
  std::vector<PyMethodDef>* functions = python::create_tensor_type();
  if (!python::TensorType) throw py::error_already_set();
  m.add_object("Tensor", py::reinterpret_borrow<py::object>((PyObject*)python::TensorType));
  if (PyModule_AddFunctions(m.ptr(), functions->data()) < 0) throw py::error_already_set();
  py::list names;
  for (auto& f : *functions) if (f.ml_name) names.append(f.ml_name);
  m.attr("_op_names") = names;

  py::class_<Node, std::shared_ptr<Node>>(m, "Node")
      .def("name", &Node::name)
      .def_property_readonly("next_functions", [](Node& n) {
        py::tuple out(n.next_edges.size());
        for (size_t i = 0; i < n.next_edges.size(); ++i) {
          const Edge& e = n.next_edges[i];
          out[i] = py::make_tuple(e.fn ? py::cast(e.fn) : py::none(), e.input_nr);
        }
        return out;
      })
      .def_property_readonly("variable", [](Node& n) -> py::object {
        if (auto* acc = dynamic_cast<AccumulateGrad*>(&n)) return py::cast(acc->variable);
        throw py::attribute_error("'" + n.name() + "' object has no attribute 'variable'");
      })
      .def("__repr__", [](Node& n) { return node_repr(n); });

  m.def("_set_size_type", [](py::object t) { python::g_size_type = t.release().ptr(); });
  m.def("_set_legacy_new", [](py::object f) { python::g_legacy_new = f.release().ptr(); });
  m.def("_set_index_tensor_from", [](py::object f) { python::g_index_tensor_from = f.release().ptr(); });
  // The backward pass runs no Python (no Python hooks exist yet): other threads run meanwhile.
  m.def("_backward", [](const TensorList& roots, const TensorList& grads, bool retain_graph, bool create_graph) {
    autograd::backward(roots, grads, retain_graph, create_graph);
  }, py::call_guard<py::gil_scoped_release>());
  m.def("_grad", [](const TensorList& outputs, const TensorList& grad_outputs, const TensorList& inputs,
                    bool retain_graph, bool create_graph, bool allow_unused) {
    return autograd::grad(outputs, grad_outputs, inputs, retain_graph, create_graph, allow_unused);
  }, py::call_guard<py::gil_scoped_release>());
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
  m.def("_from_buffer", &from_buffer);
  m.def("_blas_corename", &blas_corename);
  m.def("_cpu_cache_stats", []() {
    auto s = cpu_cache_stats();
    return py::make_tuple(s.cached_bytes, s.allocated_bytes);
  });
  m.def("_cpu_empty_cache", &cpu_empty_cache);
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
    return d;
  });
  python::bind_cuda(m);
  python::bind_caching_allocator_testing(m);
  python::bind_trace(m);
}
