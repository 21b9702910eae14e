// DLPack: tensors in and out of PyCapsules ("dltensor" before DLPack 1.0, "dltensor_versioned"
// from 1.0), sharing memory with the other library. The Python checks (requires_grad, device,
// stream, copy) are in ember/utils/dlpack.py; this file only moves pointers and owners.
#include <pybind11/pybind11.h>

#include <string>
#include <type_traits>
#include <vector>

#include "dlpack.h"
#include "python_support.h"

namespace py = pybind11;

namespace ember::python {
namespace {

constexpr const char* kLegacyName = "dltensor";
constexpr const char* kVersionedName = "dltensor_versioned";

template <class Managed>
constexpr const char* capsule_name() {
  return std::is_same_v<Managed, DLManagedTensorVersioned> ? kVersionedName : kLegacyName;
}

// ------------------------------------------------------------ dtypes

DLDataType dl_dtype_of(ScalarType t) {
  uint8_t bits = (uint8_t)(itemsize(t) * 8);
  switch (t) {
    case ScalarType::Bool: return {kDLBool, 8, 1};
    case ScalarType::UInt8: return {kDLUInt, bits, 1};
    case ScalarType::Int8: case ScalarType::Int16: case ScalarType::Int32: case ScalarType::Int64:
      return {kDLInt, bits, 1};
    case ScalarType::BFloat16: return {kDLBfloat, 16, 1};
    case ScalarType::Float16: case ScalarType::Float32: case ScalarType::Float64: return {kDLFloat, bits, 1};
    default: throw py::buffer_error("to_dlpack: unsupported dtype");
  }
}

const char* dl_code_name(uint8_t code) {
  switch (code) {
    case kDLInt: return "int";
    case kDLUInt: return "uint";
    case kDLFloat: return "float";
    case kDLOpaqueHandle: return "opaque handle";
    case kDLBfloat: return "bfloat";
    case kDLComplex: return "complex";
    case kDLBool: return "bool";
    default: return "float8/6/4";
  }
}

ScalarType scalar_type_of(DLDataType d) {
  if (d.lanes != 1)
    throw py::buffer_error("ember does not support DLPack dtypes with lanes != 1 (got " + std::to_string(d.lanes) +
                           " lanes)");
  switch (d.code) {
    case kDLBool: if (d.bits == 8) return ScalarType::Bool; break;
    case kDLUInt: if (d.bits == 8) return ScalarType::UInt8; break;
    case kDLInt:
      if (d.bits == 8) return ScalarType::Int8;
      if (d.bits == 16) return ScalarType::Int16;
      if (d.bits == 32) return ScalarType::Int32;
      if (d.bits == 64) return ScalarType::Int64;
      break;
    case kDLFloat:
      if (d.bits == 16) return ScalarType::Float16;
      if (d.bits == 32) return ScalarType::Float32;
      if (d.bits == 64) return ScalarType::Float64;
      break;
    case kDLBfloat: if (d.bits == 16) return ScalarType::BFloat16; break;
  }
  throw py::buffer_error(std::string("ember does not support the DLPack dtype ") + dl_code_name(d.code) +
                         std::to_string(d.bits) + " (code " + std::to_string(d.code) + ", bits " +
                         std::to_string(d.bits) + ")");
}

// ------------------------------------------------------------ export

// What a capsule's DLManagedTensor(Versioned) points into: it owns a reference to the
// storage (not the tensor: autograd metadata stays behind) and the shape/stride arrays.
template <class Managed>
struct Exported {
  Managed managed{};
  Ref<StorageImpl> storage;
  std::vector<int64_t> shape, strides;
};

// May run on any thread, with or without the GIL: dropping the storage reference takes
// the GIL itself where the storage's owner is a Python object (see release_python_owner).
template <class Managed>
void delete_exported(Managed* self) {
  delete static_cast<Exported<Managed>*>(self->manager_ctx);
}

// A capsule no consumer renamed to "used_..." still owns its tensor: free it.
template <class Managed>
void destroy_capsule(PyObject* capsule) {
  if (!PyCapsule_IsValid(capsule, capsule_name<Managed>())) return;  // consumed (or not ours)
  auto* managed = static_cast<Managed*>(PyCapsule_GetPointer(capsule, capsule_name<Managed>()));
  if (managed && managed->deleter) managed->deleter(managed);
}

template <class Managed>
py::capsule export_tensor(const Tensor& t, bool copied) {
  DLDataType dtype = dl_dtype_of(t.dtype());
  auto* ctx = new Exported<Managed>();
  ctx->storage = t.impl()->storage;
  ctx->shape.assign(t.sizes().begin(), t.sizes().end());
  ctx->strides.assign(t.strides().begin(), t.strides().end());
  Managed& m = ctx->managed;
  m.manager_ctx = ctx;
  m.deleter = &delete_exported<Managed>;
  DLTensor& dl = m.dl_tensor;
  dl.data = t.data_ptr();
  dl.device = {kDLCPU, 0};
  dl.ndim = (int32_t)t.dim();
  dl.dtype = dtype;
  dl.shape = ctx->shape.data();
  dl.strides = ctx->strides.data();
  dl.byte_offset = 0;
  if constexpr (std::is_same_v<Managed, DLManagedTensorVersioned>) {
    m.version = {DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION};
    m.flags = copied ? DLPACK_FLAG_BITMASK_IS_COPIED : 0;
  }
  PyObject* capsule = PyCapsule_New(&m, capsule_name<Managed>(), &destroy_capsule<Managed>);
  if (!capsule) {
    delete ctx;
    throw py::error_already_set();
  }
  return py::reinterpret_steal<py::capsule>(capsule);
}

// ------------------------------------------------------------ import

bool interpreter_finalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing();
#else
  return _Py_IsFinalizing();
#endif
}

// The storage deleter of an imported tensor: hands the memory back to its producer, under
// the GIL (the producer's deleter may touch Python objects, as NumPy's does). After the
// interpreter is gone, or from a thread that cannot take it back during shutdown, it leaks.
template <class Managed>
void release_imported(void* ctx, void*) {
  auto* managed = static_cast<Managed*>(ctx);
  if (!managed->deleter || !Py_IsInitialized()) return;
  if (interpreter_finalizing() && !PyGILState_Check()) return;
  PyGILState_STATE state = PyGILState_Ensure();
  managed->deleter(managed);
  PyGILState_Release(state);
}

std::string shape_error(const char* what) { return std::string("from_dlpack: ") + what; }

template <class Managed>
py::object import_tensor(PyObject* capsule, Managed* managed, bool read_only) {
  const DLTensor& dl = managed->dl_tensor;
  if (dl.device.device_type != kDLCPU)
    throw py::buffer_error("from_dlpack: ember imports only CPU memory (kDLCPU) through DLPack; got device type " +
                           std::to_string((int)dl.device.device_type));
  ScalarType dtype = scalar_type_of(dl.dtype);
  if (dl.ndim < 0 || (dl.ndim > 0 && !dl.shape)) throw py::buffer_error(shape_error("the DLTensor has no shape"));
  std::vector<int64_t> sizes(dl.shape, dl.shape + dl.ndim), strides(dl.ndim);
  for (int64_t s : sizes)
    if (s < 0) throw py::buffer_error(shape_error("the DLTensor has a negative size"));
  bool empty = compute_numel(DimVector(sizes)) == 0;  // raises ember's error on overflow, as expand does
  int64_t step = 1;
  for (int i = dl.ndim - 1; i >= 0; --i) {  // NULL strides: compact row-major
    strides[i] = dl.strides ? dl.strides[i] : step;
    step *= sizes[i] ? sizes[i] : 1;
    if (strides[i] < 0) {
      if (sizes[i] > 1)
        throw py::buffer_error(shape_error("ember does not support negative strides; copy the array first"));
      strides[i] = 1;  // never stepped along
    }
  }
  int64_t extent = empty ? 0 : 1;  // elements from the first to one past the last
  for (int i = 0; i < dl.ndim && !empty; ++i) extent += (sizes[i] - 1) * strides[i];
  if (read_only &&
      PyErr_WarnEx(PyExc_UserWarning,
                   "The DLPack tensor is read-only, and ember does not support non-writable tensors. Writing to "
                   "this tensor will result in undefined behavior. You may want to copy it "
                   "(from_dlpack(x, copy=True)) to protect its data.", 2) < 0)
    throw py::error_already_set();

  // Everything checked: consume the capsule (its destructor now leaves the tensor to us).
  const char* used = std::is_same_v<Managed, DLManagedTensorVersioned> ? "used_dltensor_versioned" : "used_dltensor";
  if (PyCapsule_SetName(capsule, used) < 0) throw py::error_already_set();
  void* data = static_cast<char*>(dl.data) + dl.byte_offset;
  DataPtr ptr{data, managed, &release_imported<Managed>};
  auto storage = Ref<StorageImpl>::make(ptr, (size_t)extent * itemsize(dtype), Device());
  Tensor t(Ref<TensorImpl>::make(std::move(storage), DimVector(sizes), DimVector(strides), 0, dtype));
  PyObject* wrapped = wrap(std::move(t));
  if (!wrapped) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(wrapped);
}

py::object from_dlpack_capsule(py::handle obj) {
  PyObject* o = obj.ptr();
  if (PyCapsule_IsValid(o, kVersionedName)) {
    auto* m = static_cast<DLManagedTensorVersioned*>(PyCapsule_GetPointer(o, kVersionedName));
    if (m->version.major > DLPACK_MAJOR_VERSION)
      throw py::buffer_error("unsupported DLPack capsule major version: " + std::to_string(m->version.major) +
                             ". Maximum supported version: " + std::to_string(DLPACK_MAJOR_VERSION));
    return import_tensor(o, m, m->flags & DLPACK_FLAG_BITMASK_READ_ONLY);
  }
  if (PyCapsule_IsValid(o, kLegacyName))
    return import_tensor(o, static_cast<DLManagedTensor*>(PyCapsule_GetPointer(o, kLegacyName)), false);
  throw std::runtime_error(
      "from_dlpack received an invalid capsule. Note that DLTensor capsules can be consumed only once, so you "
      "might have already constructed a tensor from it once.");
}

}  // namespace

void bind_dlpack(py::module_& m) {
  m.def("_to_dlpack", [](py::handle tensor, bool versioned, bool copied) {
    if (!is_tensor(tensor.ptr())) throw py::type_error("to_dlpack: expected a Tensor");
    const Tensor& t = tensor_of(tensor.ptr());
    if (!t.device().is_cpu()) throw py::buffer_error("to_dlpack: ember exports only CPU tensors through DLPack");
    return versioned ? export_tensor<DLManagedTensorVersioned>(t, copied) : export_tensor<DLManagedTensor>(t, copied);
  }, py::arg("tensor"), py::arg("versioned"), py::arg("copied") = false);
  m.def("_from_dlpack", &from_dlpack_capsule, py::arg("capsule"));
}

}  // namespace ember::python
