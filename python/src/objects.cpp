// ember.dtype, ember.device and ember.Generator as small C types: op
// bindings read them on every call.
#include "python_support.h"
#include "ember/cuda/api.h"

namespace ember::python {

PyTypeObject* DTypeType = nullptr;
PyTypeObject* DeviceType = nullptr;
PyTypeObject* GeneratorType = nullptr;
static PyObject* g_dtypes[kNumScalarTypes] = {};

PyObject* dtype_object(ScalarType t) { return g_dtypes[(int)t]; }

namespace {

PyObject* dtype_repr(PyObject* self) {
  return PyUnicode_FromFormat("ember.%s", dtype_name(reinterpret_cast<PyDType*>(self)->dtype));
}
PyObject* dtype_is_floating(PyObject* self, void*) { return PyBool_FromLong(is_floating(reinterpret_cast<PyDType*>(self)->dtype)); }
PyObject* dtype_is_signed(PyObject* self, void*) {
  ScalarType t = reinterpret_cast<PyDType*>(self)->dtype;
  return PyBool_FromLong(t != ScalarType::Bool && t != ScalarType::UInt8);
}
PyObject* dtype_itemsize(PyObject* self, void*) { return PyLong_FromSize_t(itemsize(reinterpret_cast<PyDType*>(self)->dtype)); }
PyObject* dtype_reduce(PyObject* self, PyObject*) {
  // Pickles as the module attribute of the same name.
  return PyUnicode_FromString(dtype_name(reinterpret_cast<PyDType*>(self)->dtype));
}
PyGetSetDef dtype_getsets[] = {
    {"is_floating_point", dtype_is_floating, nullptr, nullptr, nullptr},
    {"is_signed", dtype_is_signed, nullptr, nullptr, nullptr},
    {"itemsize", dtype_itemsize, nullptr, nullptr, nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};
PyMethodDef dtype_methods[] = {{"__reduce__", dtype_reduce, METH_NOARGS, nullptr}, {nullptr, nullptr, 0, nullptr}};

PyObject* device_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  EMBER_PY_BEGIN
  static const char* kw[] = {"type", "index", nullptr};
  PyObject* spec;
  PyObject* index = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O", const_cast<char**>(kw), &spec, &index)) return nullptr;
  Device d;
  if (PyObject_TypeCheck(spec, DeviceType)) d = reinterpret_cast<PyDevice*>(spec)->device;
  else if (PyUnicode_Check(spec)) d = Device::parse(PyUnicode_AsUTF8(spec));
  else if (PyLong_Check(spec)) d = Device(ember::DeviceType::CUDA, (int)PyLong_AsLong(spec));
  else { PyErr_SetString(PyExc_TypeError, "device(): expected a string or an int"); return nullptr; }
  if (index != Py_None) {
    EMBER_CHECK(d.index < 0, Runtime, "type (string) must not include an index because index was passed explicitly");
    d.index = (int8_t)PyLong_AsLong(index);
  }
  PyObject* obj = type->tp_alloc(type, 0);
  reinterpret_cast<PyDevice*>(obj)->device = d;
  return obj;
  EMBER_PY_END
}
PyObject* device_repr(PyObject* self) {
  Device d = reinterpret_cast<PyDevice*>(self)->device;
  if (d.index < 0) return PyUnicode_FromFormat("device(type='%s')", d.is_cpu() ? "cpu" : "cuda");
  return PyUnicode_FromFormat("device(type='%s', index=%d)", d.is_cpu() ? "cpu" : "cuda", (int)d.index);
}
PyObject* device_str(PyObject* self) { return PyUnicode_FromString(reinterpret_cast<PyDevice*>(self)->device.str().c_str()); }
PyObject* device_type(PyObject* self, void*) { return PyUnicode_FromString(reinterpret_cast<PyDevice*>(self)->device.is_cpu() ? "cpu" : "cuda"); }
PyObject* device_index(PyObject* self, void*) {
  int i = reinterpret_cast<PyDevice*>(self)->device.index;
  if (i < 0) Py_RETURN_NONE;
  return PyLong_FromLong(i);
}
PyObject* device_richcompare(PyObject* a, PyObject* b, int op) {
  if ((op != Py_EQ && op != Py_NE) || !PyObject_TypeCheck(b, DeviceType)) Py_RETURN_NOTIMPLEMENTED;
  bool eq = reinterpret_cast<PyDevice*>(a)->device == reinterpret_cast<PyDevice*>(b)->device;
  return PyBool_FromLong(op == Py_EQ ? eq : !eq);
}
Py_hash_t device_hash(PyObject* self) {
  Device d = reinterpret_cast<PyDevice*>(self)->device;
  return (Py_hash_t)((int)d.type * 1000 + d.index + 1);
}
PyGetSetDef device_getsets[] = {
    {"type", device_type, nullptr, nullptr, nullptr},
    {"index", device_index, nullptr, nullptr, nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

PyObject* generator_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  EMBER_PY_BEGIN
  static const char* kw[] = {"device", nullptr};
  PyObject* device = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O", const_cast<char**>(kw), &device)) return nullptr;
  Device d = device == Py_None ? Device() : arg_device(device);
  if (d.is_cuda()) {
    EMBER_CHECK(cuda::is_available(), Runtime, "Generator(): CUDA is not available");
    if (d.index < 0) d.index = (int8_t)cuda::current_device();
  }
  PyObject* obj = type->tp_alloc(type, 0);
  auto* g = reinterpret_cast<PyGenerator*>(obj);
  g->gen = new Generator();
  g->gen->device = d;
  g->owned = true;
  return obj;
  EMBER_PY_END
}
void generator_dealloc(PyObject* self) {
  auto* g = reinterpret_cast<PyGenerator*>(self);
  if (g->owned) delete g->gen;
  PyTypeObject* tp = Py_TYPE(self);
  tp->tp_free(self);
  Py_DECREF(tp);
}
PyObject* generator_manual_seed(PyObject* self, PyObject* seed) {
  unsigned long long s = PyLong_AsUnsignedLongLongMask(seed);
  if (PyErr_Occurred()) return nullptr;
  reinterpret_cast<PyGenerator*>(self)->gen->manual_seed(s);
  Py_INCREF(self);
  return self;
}
PyObject* generator_initial_seed(PyObject* self, PyObject*) {
  return PyLong_FromUnsignedLongLong(reinterpret_cast<PyGenerator*>(self)->gen->seed);
}
PyObject* generator_device(PyObject* self, void*) {
  Device d = reinterpret_cast<PyGenerator*>(self)->gen->device;
  return device_object(d.is_cpu() ? Device() : d);
}
PyGetSetDef generator_getsets[] = {{"device", generator_device, nullptr, nullptr, nullptr},
                                   {nullptr, nullptr, nullptr, nullptr, nullptr}};
PyMethodDef generator_methods[] = {
    {"manual_seed", generator_manual_seed, METH_O, "Seeds the generator; returns it."},
    {"initial_seed", generator_initial_seed, METH_NOARGS, "The seed."},
    {nullptr, nullptr, 0, nullptr}};

}  // namespace

void create_object_types(PyObject* module) {
  static PyType_Slot dtype_slots[] = {{Py_tp_repr, (void*)dtype_repr}, {Py_tp_getset, dtype_getsets},
                                      {Py_tp_methods, dtype_methods}, {0, nullptr}};
  static PyType_Spec dtype_spec = {"ember.dtype", sizeof(PyDType), 0, Py_TPFLAGS_DEFAULT, dtype_slots};
  DTypeType = (PyTypeObject*)PyType_FromSpec(&dtype_spec);
  for (int i = 0; i < kNumScalarTypes; ++i) {
    PyObject* o = PyType_GenericAlloc(DTypeType, 0);
    reinterpret_cast<PyDType*>(o)->dtype = (ScalarType)i;
    g_dtypes[i] = o;
    PyModule_AddObject(module, dtype_name((ScalarType)i), o);
    Py_INCREF(o);
  }
  PyModule_AddObject(module, "dtype", (PyObject*)DTypeType);
  Py_INCREF(DTypeType);

  static PyType_Slot device_slots[] = {{Py_tp_new, (void*)device_new}, {Py_tp_repr, (void*)device_repr},
                                       {Py_tp_str, (void*)device_str}, {Py_tp_getset, device_getsets},
                                       {Py_tp_richcompare, (void*)device_richcompare}, {Py_tp_hash, (void*)device_hash},
                                       {0, nullptr}};
  static PyType_Spec device_spec = {"ember.device", sizeof(PyDevice), 0, Py_TPFLAGS_DEFAULT, device_slots};
  DeviceType = (PyTypeObject*)PyType_FromSpec(&device_spec);
  PyModule_AddObject(module, "device", (PyObject*)DeviceType);
  Py_INCREF(DeviceType);

  static PyType_Slot gen_slots[] = {{Py_tp_new, (void*)generator_new}, {Py_tp_dealloc, (void*)generator_dealloc},
                                    {Py_tp_methods, generator_methods}, {Py_tp_getset, generator_getsets},
                                    {0, nullptr}};
  static PyType_Spec gen_spec = {"ember.Generator", sizeof(PyGenerator), 0, Py_TPFLAGS_DEFAULT, gen_slots};
  GeneratorType = (PyTypeObject*)PyType_FromSpec(&gen_spec);
  PyModule_AddObject(module, "Generator", (PyObject*)GeneratorType);
  Py_INCREF(GeneratorType);
  PyModule_AddObject(module, "default_generator", generator_object(default_generator()));
}

PyObject* generator_object(Generator* gen) {
  PyObject* obj = PyType_GenericAlloc(GeneratorType, 0);
  reinterpret_cast<PyGenerator*>(obj)->gen = gen;
  reinterpret_cast<PyGenerator*>(obj)->owned = false;
  return obj;
}

PyObject* device_object(Device d) {
  PyObject* obj = PyType_GenericAlloc(DeviceType, 0);
  reinterpret_cast<PyDevice*>(obj)->device = d;
  return obj;
}

}  // namespace ember::python
