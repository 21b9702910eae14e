// ember.from_numpy in C++: reads the array through NumPy's C-level array interface
// (__array_struct__) instead of building __array_interface__'s dict, and shares the
// array's memory, keeping the array alive; checks and messages follow torch's order.
#include "python_support.h"

namespace ember::python {

namespace {

// PyArrayInterface and its flags, as NumPy's ndarraytypes.h defines them (a stable ABI).
struct ArrayInterface {
  int two;  // always 2: a sanity check
  int nd;
  char typekind;
  int itemsize;
  int flags;
  Py_intptr_t* shape;
  Py_intptr_t* strides;
  void* data;
  PyObject* descr;
};
constexpr int kNotSwapped = 0x0200;
constexpr int kWriteable = 0x0400;

PyTypeObject* ndarray_type() {
  static PyTypeObject* type = nullptr;
  if (!type) {
    PyObject* numpy = PyImport_ImportModule("numpy");
    if (!numpy) throw PythonError{};
    type = reinterpret_cast<PyTypeObject*>(PyObject_GetAttrString(numpy, "ndarray"));
    Py_DECREF(numpy);
    if (!type) throw PythonError{};
  }
  return type;
}

// The ember dtype of a NumPy (kind, itemsize), or Undefined when ember has none.
ScalarType dtype_of(char kind, int size) {
  switch (kind) {
    case 'b': return size == 1 ? ScalarType::Bool : ScalarType::Undefined;
    case 'u': return size == 1 ? ScalarType::UInt8 : ScalarType::Undefined;
    case 'i':
      switch (size) {
        case 1: return ScalarType::Int8;
        case 2: return ScalarType::Int16;
        case 4: return ScalarType::Int32;
        case 8: return ScalarType::Int64;
      }
      return ScalarType::Undefined;
    case 'f':
      switch (size) {
        case 2: return ScalarType::Float16;
        case 4: return ScalarType::Float32;
        case 8: return ScalarType::Float64;
      }
      return ScalarType::Undefined;
  }
  return ScalarType::Undefined;
}

// torch's TypeError for an unsupported dtype names its scalar type ("numpy.complex64").
[[noreturn]] void fail_unsupported_dtype(PyObject* array) {
  PyObject* dtype = PyObject_GetAttrString(array, "dtype");
  PyObject* scalar = dtype ? PyObject_GetAttrString(dtype, "type") : nullptr;
  Py_XDECREF(dtype);
  if (!scalar) throw PythonError{};
  std::string name = PyType_Check(scalar) ? reinterpret_cast<PyTypeObject*>(scalar)->tp_name : "object";
  Py_DECREF(scalar);
  EMBER_FAIL(Type, "can't convert np.ndarray of type ", name, ". The only supported types are: "
             "float64, float32, float16, int64, int32, int16, int8, uint8, and bool.");
}

void warn_not_writeable_once() {
  static bool warned = false;  // torch warns once per program
  if (warned) return;
  if (PyErr_WarnEx(PyExc_UserWarning,
                   "The given NumPy array is not writable, and PyTorch does not support non-writable tensors. This "
                   "means writing to this tensor will result in undefined behavior. You may want to copy the array "
                   "to protect its data or make it writable before converting it to a tensor. This type of warning "
                   "will be suppressed for the rest of this program.", 1) < 0)
    throw PythonError{};
  warned = true;
}

void release_array(void* array, void*) {
  PyGILState_STATE gil = PyGILState_Ensure();
  Py_DECREF(reinterpret_cast<PyObject*>(array));
  PyGILState_Release(gil);
}

PyObject* from_numpy(PyObject*, PyObject* array) {
  EMBER_PY_BEGIN
  EMBER_CHECK(PyObject_TypeCheck(array, ndarray_type()), Type, "expected np.ndarray (got ", Py_TYPE(array)->tp_name,
              ")");
  PyObject* capsule = PyObject_GetAttrString(array, "__array_struct__");
  if (!capsule) throw PythonError{};
  struct Drop { PyObject* o; ~Drop() { Py_DECREF(o); } } drop{capsule};
  auto* info = static_cast<ArrayInterface*>(PyCapsule_GetPointer(capsule, nullptr));
  if (!info) throw PythonError{};
  EMBER_CHECK(info->two == 2, Runtime, "from_numpy: the array's __array_struct__ is not a PyArrayInterface");
  // NumPy zeroes the flags of arrays with fields (structured dtypes, kind 'V'; their byte order is '|',
  // native for torch): ask the array itself.
  const bool fields = info->typekind == 'V';
  bool writeable = info->flags & kWriteable;
  if (fields) {
    PyObject* flags = PyObject_GetAttrString(array, "flags");
    PyObject* flag = flags ? PyObject_GetAttrString(flags, "writeable") : nullptr;
    Py_XDECREF(flags);
    if (!flag) throw PythonError{};
    writeable = flag == Py_True;
    Py_DECREF(flag);
  }
  if (!writeable) warn_not_writeable_once();
  const int nd = info->nd;
  DimVector sizes(nd), strides(nd);
  for (int i = 0; i < nd; ++i) {
    sizes[i] = info->shape[i];
    EMBER_CHECK(info->strides[i] % info->itemsize == 0, Value, "given numpy array strides not a multiple of the "
                "element byte size. Copy the numpy array to reallocate the memory.");
    strides[i] = info->strides[i] / info->itemsize;
  }
  for (int i = 0; i < nd; ++i)
    EMBER_CHECK(strides[i] >= 0, Value, "At least one stride in the given numpy array is negative, and tensors with "
                "negative strides are not currently supported. (You can probably work around this by making a copy "
                "of your array  with array.copy().) ");
  EMBER_CHECK(fields || (info->flags & kNotSwapped), Value, "given numpy array has byte order different from the native byte "
              "order. Conversion between byte orders is currently not supported.");
  ScalarType dtype = dtype_of(info->typekind, info->itemsize);
  if (dtype == ScalarType::Undefined) fail_unsupported_dtype(array);
  // The storage spans the elements from the first to one past the last.
  int64_t extent = 1;
  for (int i = 0; i < nd; ++i) {
    if (sizes[i] == 0) { extent = 0; break; }
    extent += (sizes[i] - 1) * strides[i];
  }
  Py_INCREF(array);  // the storage owns this reference
  DataPtr data{info->data, array, &release_array};
  auto storage = Ref<StorageImpl>::make(data, (size_t)extent * info->itemsize, Device());
  return wrap(Tensor(Ref<TensorImpl>::make(std::move(storage), std::move(sizes), std::move(strides), 0, dtype)));
  EMBER_PY_END
}

PyMethodDef from_numpy_functions[] = {
    {"from_numpy", from_numpy, METH_O,
     "from_numpy(ndarray) -> Tensor\n\nCreates a Tensor from a numpy.ndarray, sharing its memory."},
    {nullptr, nullptr, 0, nullptr}};

}  // namespace

void add_from_numpy(PyObject* module) {
  if (PyModule_AddFunctions(module, from_numpy_functions) < 0) throw PythonError{};
}

}  // namespace ember::python
