// ember.dtype, ember.device and ember.Generator as small C types: op
// bindings read them on every call. ember.UntypedStorage, what pickling and
// deepcopy see of the memory tensors share.
#include <cstring>
#include <memory>
#include <unordered_map>

#include "python_support.h"
#include "ember/autograd.h"
#include "ember/cuda/api.h"

namespace ember::python {

PyTypeObject* DTypeType = nullptr;
PyTypeObject* DeviceType = nullptr;
PyTypeObject* GeneratorType = nullptr;
PyTypeObject* StorageType = nullptr;
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
// Pickles as ember.device(type[, index]).
PyObject* device_reduce(PyObject* self, PyObject*) {
  Device d = reinterpret_cast<PyDevice*>(self)->device;
  PyObject* type = PyUnicode_FromString(d.is_cpu() ? "cpu" : "cuda");
  PyObject* args = d.index < 0 ? PyTuple_Pack(1, type) : Py_BuildValue("(Oi)", type, (int)d.index);
  Py_DECREF(type);
  if (!args) return nullptr;
  PyObject* out = PyTuple_Pack(2, (PyObject*)Py_TYPE(self), args);
  Py_DECREF(args);
  return out;
}
// `with ember.device(d):` makes d the default of the factories called in the block.
PyObject* device_enter(PyObject* self, PyObject*) {
  enter_device_context(reinterpret_cast<PyDevice*>(self)->device);
  Py_INCREF(self);
  return self;
}
PyObject* device_exit(PyObject*, PyObject*) {
  exit_device_context();
  Py_RETURN_NONE;
}
PyMethodDef device_methods[] = {{"__reduce__", device_reduce, METH_NOARGS, nullptr},
                                {"__enter__", device_enter, METH_NOARGS, nullptr},
                                {"__exit__", device_exit, METH_VARARGS, nullptr},
                                {nullptr, nullptr, 0, nullptr}};
PyGetSetDef device_getsets[] = {
    {"type", device_type, nullptr, nullptr, nullptr},
    {"index", device_index, nullptr, nullptr, nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

// The Python object owning each Generator made by ember.Generator(), so a C++
// Generator* (a traced call's argument) leads back to it. Used with the GIL held.
std::unordered_map<Generator*, PyObject*>& generator_owners() {
  static std::unordered_map<Generator*, PyObject*> owners;
  return owners;
}

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
  generator_owners()[g->gen] = obj;
  return obj;
  EMBER_PY_END
}
void generator_dealloc(PyObject* self) {
  auto* g = reinterpret_cast<PyGenerator*>(self);
  if (g->owned) {
    generator_owners().erase(g->gen);
    delete g->gen;
  }
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
  return PyLong_FromUnsignedLongLong(reinterpret_cast<PyGenerator*>(self)->gen->initial_seed());
}
// The state is (seed, offset) as 16 little-endian bytes in a CPU uint8 tensor:
// restoring it replays the same draws (activation checkpointing relies on this).
constexpr int64_t kGeneratorStateBytes = 2 * sizeof(uint64_t);
PyObject* generator_get_state(PyObject* self, PyObject*) {
  EMBER_PY_BEGIN
  Generator* gen = reinterpret_cast<PyGenerator*>(self)->gen;
  uint64_t words[2];
  {
    std::lock_guard<std::mutex> g(gen->mutex);
    words[0] = gen->seed;
    words[1] = gen->offset;
  }
  Tensor state = empty_tensor({kGeneratorStateBytes}, ScalarType::UInt8);
  std::memcpy(state.data_ptr(), words, sizeof(words));
  return wrap(state);
  EMBER_PY_END
}
PyObject* generator_set_state(PyObject* self, PyObject* arg) {
  EMBER_PY_BEGIN
  if (!is_tensor(arg)) {
    PyErr_Format(PyExc_TypeError, "expected a ember.ByteTensor, but got %s", Py_TYPE(arg)->tp_name);
    return nullptr;
  }
  const Tensor& state = tensor_of(arg);
  if (state.dtype() != ScalarType::UInt8 || !state.device().is_cpu()) {
    PyErr_SetString(PyExc_TypeError, "RNG state must be a ember.ByteTensor");
    return nullptr;
  }
  EMBER_CHECK(state.numel() == kGeneratorStateBytes, Runtime, "Expected a GeneratorState of size ",
              kGeneratorStateBytes, " but found the input RNG state size to be ", state.numel());
  // Any 16-element uint8 tensor (a view of another state too): read by element.
  uint8_t raw[kGeneratorStateBytes];
  const int64_t step = state.dim() == 1 ? state.stride(0) : 1;
  const uint8_t* src = state.data<uint8_t>();
  if (state.dim() != 1 && !state.is_contiguous()) EMBER_FAIL(Runtime, "set_state(): expected a 1-D or contiguous state");
  for (int64_t i = 0; i < kGeneratorStateBytes; ++i) raw[i] = src[i * step];
  uint64_t words[2];
  std::memcpy(words, raw, sizeof(words));
  Generator* gen = reinterpret_cast<PyGenerator*>(self)->gen;
  {
    std::lock_guard<std::mutex> g(gen->mutex);
    gen->seed = words[0];
    gen->offset = words[1];
  }
  Py_INCREF(self);
  return self;
  EMBER_PY_END
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
    {"get_state", generator_get_state, METH_NOARGS, "The state as a uint8 tensor (see set_state)."},
    {"set_state", generator_set_state, METH_O, "Restores a state from get_state; returns the generator."},
    {nullptr, nullptr, 0, nullptr}};

// ---------------------------------------------------------------- storages
// The live Python object of each storage (entries leave when it dies; while it
// lives it holds the storage, so the address cannot be reused). GIL-protected.
std::unordered_map<StorageImpl*, PyObject*>& storage_objects() {
  static auto* objects = new std::unordered_map<StorageImpl*, PyObject*>();  // objects may die at exit
  return *objects;
}

PyStorage* as_storage(PyObject* o) {
  if (!PyObject_TypeCheck(o, StorageType))
    EMBER_FAIL(Type, "expected an ember.UntypedStorage, got ", Py_TYPE(o)->tp_name);
  return reinterpret_cast<PyStorage*>(o);
}

void storage_dealloc(PyObject* self) {
  auto* s = reinterpret_cast<PyStorage*>(self);
  storage_objects().erase(s->storage.get());
  s->storage.~Ref<StorageImpl>();
  PyTypeObject* tp = Py_TYPE(self);
  tp->tp_free(self);
  Py_DECREF(tp);
}
const StorageImpl& storage_of(PyObject* self) { return *reinterpret_cast<PyStorage*>(self)->storage; }
PyObject* storage_nbytes(PyObject* self, PyObject*) { return PyLong_FromSize_t(storage_of(self).nbytes); }
Py_ssize_t storage_len(PyObject* self) { return (Py_ssize_t)storage_of(self).nbytes; }
PyObject* storage_element_size(PyObject*, PyObject*) { return PyLong_FromLong(1); }
PyObject* storage_data_ptr(PyObject* self, PyObject*) { return PyLong_FromVoidPtr(storage_of(self).data.ptr); }
PyObject* storage_device(PyObject* self, void*) { return device_object(storage_of(self).device); }

// The bytes of a CPU storage, shared (pickle protocol 5 writes them without a copy).
int storage_getbuffer(PyObject* self, Py_buffer* view, int flags) {
  const StorageImpl& s = storage_of(self);
  if (!s.device.is_cpu()) {
    PyErr_Format(PyExc_BufferError, "UntypedStorage on %s has no buffer: copy it to the CPU first",
                 s.device.str().c_str());
    return -1;
  }
  return PyBuffer_FillInfo(view, self, s.data.ptr, (Py_ssize_t)s.nbytes, 0, flags);
}

PyMethodDef storage_methods[] = {
    {"nbytes", storage_nbytes, METH_NOARGS, "Bytes in the storage."},
    {"size", storage_nbytes, METH_NOARGS, "Bytes in the storage (an untyped storage counts bytes)."},
    {"element_size", storage_element_size, METH_NOARGS, "1: an untyped storage holds bytes."},
    {"data_ptr", storage_data_ptr, METH_NOARGS, "The address of the first byte."},
    {nullptr, nullptr, 0, nullptr}};
PyGetSetDef storage_getsets[] = {{"device", storage_device, nullptr, nullptr, nullptr},
                                 {nullptr, nullptr, nullptr, nullptr, nullptr}};

// A zero-copy storage's buffer and the storage it lies under (kept current by _storage_set_data_),
// registered by data pointer: _C._storage_over_buffer finds a live storage again from its address
// (ember.multiprocessing's cache of received shared storages).
struct BufferOwner {
  Py_buffer view;
  StorageImpl* storage = nullptr;
};
std::unordered_map<void*, BufferOwner*>& buffer_owners() {
  static auto* owners = new std::unordered_map<void*, BufferOwner*>();  // never destroyed: used at exit
  return *owners;
}

// Runs when a zero-copy storage dies, on any thread: releases the Py_buffer (and
// so its exporter, e.g. an mmap) under the GIL. At interpreter exit it leaks instead.
void release_buffer(void* ctx, void* ptr) {
  auto* owner = static_cast<BufferOwner*>(ctx);
#if PY_VERSION_HEX >= 0x030D0000
  if (Py_IsFinalizing()) return;
#else
  if (_Py_IsFinalizing()) return;
#endif
  PyGILState_STATE gil = PyGILState_Ensure();
  auto it = buffer_owners().find(ptr);
  if (it != buffer_owners().end() && it->second == owner) buffer_owners().erase(it);
  PyBuffer_Release(&owner->view);
  PyGILState_Release(gil);
  delete owner;
}

// _C._storage_over_buffer(data_ptr): the live zero-copy storage whose memory starts at data_ptr, or None
// (never one already dying: its count is raised only from above 0).
PyObject* storage_over_buffer(PyObject*, PyObject* address) {
  EMBER_PY_BEGIN
  void* ptr = PyLong_AsVoidPtr(address);
  if (!ptr && PyErr_Occurred()) return nullptr;
  auto it = buffer_owners().find(ptr);
  if (it == buffer_owners().end()) Py_RETURN_NONE;
  StorageImpl* s = it->second->storage;
  int32_t count = s->refcount_.load(std::memory_order_acquire);
  do {
    if (count == 0) Py_RETURN_NONE;
  } while (!s->refcount_.compare_exchange_weak(count, count + 1, std::memory_order_acq_rel));
  Ref<StorageImpl> storage(s);
  s->refcount_.fetch_sub(1, std::memory_order_relaxed);  // `storage` holds the count raised above
  return storage_object(storage);
  EMBER_PY_END
}

// _C._storage_from_buffer(buffer, copy=True): a new CPU storage holding a copy of
// the bytes, or with copy=False one over the buffer's own memory that keeps the
// buffer alive. A read-only buffer is accepted (as torch.frombuffer does): writing
// through such a storage is the caller's problem (a PROT_READ mmap would fault).
PyObject* storage_from_buffer(PyObject*, PyObject* args, PyObject* kwargs) {
  EMBER_PY_BEGIN
  static const char* kw[] = {"buffer", "copy", nullptr};
  PyObject* buffer;
  int copy = 1;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|p", const_cast<char**>(kw), &buffer, &copy)) return nullptr;
  if (!copy) {
    auto owner = std::make_unique<BufferOwner>();
    Py_buffer* view = &owner->view;
    if (PyObject_GetBuffer(buffer, view, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) {
      PyErr_Clear();  // read-only (exporters raise different classes): shared all the same, or the real error
      if (PyObject_GetBuffer(buffer, view, PyBUF_C_CONTIGUOUS) < 0) return nullptr;
    }
    DataPtr data{view->buf, owner.get(), release_buffer};
    Ref<StorageImpl> storage = Ref<StorageImpl>::make(data, (size_t)view->len, Device());
    owner->storage = storage.get();
    buffer_owners()[view->buf] = owner.release();  // the storage owns it now
    return storage_object(storage);
  }
  Py_buffer view;
  if (PyObject_GetBuffer(buffer, &view, PyBUF_C_CONTIGUOUS) < 0) return nullptr;
  struct Release { Py_buffer* v; ~Release() { PyBuffer_Release(v); } } release{&view};
  Ref<StorageImpl> storage = new_storage((size_t)view.len, Device());
  if (view.len) std::memcpy(storage->data.ptr, view.buf, (size_t)view.len);
  return storage_object(storage);
  EMBER_PY_END
}

// _C._storage_set_data_(storage, other): copies storage's bytes into other's memory
// and swaps the two memories, so every tensor over `storage` now uses what was
// other's memory (e.g. shared memory), and `other` holds (and frees) the old one.
PyObject* storage_set_data(PyObject*, PyObject* args) {
  EMBER_PY_BEGIN
  PyObject *self_obj, *other_obj;
  if (!PyArg_ParseTuple(args, "OO", &self_obj, &other_obj)) return nullptr;
  StorageImpl& self = *as_storage(self_obj)->storage;
  StorageImpl& other = *as_storage(other_obj)->storage;
  EMBER_CHECK(self.device.is_cpu() && other.device.is_cpu(), Runtime,
              "_storage_set_data_: both storages must be on the CPU, got ", self.device.str(), " and ",
              other.device.str());
  EMBER_CHECK(self.nbytes == other.nbytes, Runtime, "_storage_set_data_: the storages differ in size (",
              self.nbytes, " and ", other.nbytes, " bytes)");
  if (&self != &other) {
    if (self.nbytes) std::memmove(other.data.ptr, self.data.ptr, self.nbytes);
    std::swap(self.data, other.data);
    for (StorageImpl* s : {&self, &other})  // a zero-copy memory's owner follows it to its new storage
      if (s->data.deleter == release_buffer) static_cast<BufferOwner*>(s->data.ctx)->storage = s;
  }
  Py_RETURN_NONE;
  EMBER_PY_END
}

// _C._storage_resize_(storage, nbytes): the storage grows (or shrinks) in place, keeping its first bytes, so
// every tensor over it sees the new memory (Tensor.resize_ past the end of its storage, as PyTorch's).
PyObject* storage_resize(PyObject*, PyObject* args) {
  EMBER_PY_BEGIN
  PyObject* storage_obj;
  long long nbytes;
  if (!PyArg_ParseTuple(args, "OL", &storage_obj, &nbytes)) return nullptr;
  StorageImpl& self = *as_storage(storage_obj)->storage;
  EMBER_CHECK(nbytes >= 0, Runtime, "_storage_resize_: negative size ", nbytes);
  EMBER_CHECK(self.device.is_cpu(), NotImplemented, "resize_: growing a storage is implemented on the CPU only, not on ",
              self.device.str());
  Ref<StorageImpl> fresh = new_storage((size_t)nbytes, self.device);
  const size_t kept = std::min(self.nbytes, (size_t)nbytes);
  if (kept) std::memcpy(fresh->data.ptr, self.data.ptr, kept);
  std::swap(self.data, fresh->data);  // `fresh` frees the old memory
  std::swap(self.nbytes, fresh->nbytes);
  self.bump_version();
  Py_RETURN_NONE;
  EMBER_PY_END
}

// _C._storage_bytes(storage): a uint8 tensor over every byte of the storage (shared).
PyObject* storage_bytes(PyObject*, PyObject* storage) {
  EMBER_PY_BEGIN
  const Ref<StorageImpl>& s = as_storage(storage)->storage;
  return wrap(Tensor(Ref<TensorImpl>::make(s, DimVector{(int64_t)s->nbytes}, DimVector{1}, 0, ScalarType::UInt8)));
  EMBER_PY_END
}

// _C._tensor_from_storage(storage, offset, size, stride, dtype): a tensor (no
// autograd) over the storage, checked as PyTorch's set_ checks it, so that a
// damaged pickle raises instead of reading out of bounds.
PyObject* tensor_from_storage(PyObject*, PyObject* args) {
  EMBER_PY_BEGIN
  PyObject *storage, *size_obj, *stride_obj, *dtype, *into = Py_None;
  long long offset;
  if (!PyArg_ParseTuple(args, "OLOOO!|O", &storage, &offset, &size_obj, &stride_obj, DTypeType, &dtype, &into))
    return nullptr;
  const Ref<StorageImpl>& s = as_storage(storage)->storage;
  const ScalarType type = arg_dtype(dtype);
  auto dims = [](PyObject* o, const char* what) {
    EMBER_CHECK(PyList_Check(o) || PyTuple_Check(o), Type, "_rebuild_tensor: ", what, " must be a tuple of ints, not ",
                Py_TYPE(o)->tp_name);
    PyObject* seq = PySequence_Fast(o, what);
    if (!seq) throw PythonError{};
    IntList out;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); ++i) {
      long long v = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq, i));
      if (v == -1 && PyErr_Occurred()) { Py_DECREF(seq); throw PythonError{}; }
      out.push_back(v);
    }
    Py_DECREF(seq);
    return out;
  };
  const IntList size = dims(size_obj, "size"), stride = dims(stride_obj, "stride");
  EMBER_CHECK(size.size() == stride.size(), Runtime, "_rebuild_tensor: mismatch in length of strides and shape");
  EMBER_CHECK(offset >= 0, Runtime, "_rebuild_tensor: invalid storage offset ", offset);
  bool empty = false, overflow = false;
  int64_t last = offset;  // the last element the view reaches
  for (size_t d = 0; d < size.size(); ++d) {
    EMBER_CHECK(size[d] >= 0, Runtime, "Trying to create tensor with negative dimension ", size[d], ": ",
                shape_str(size));
    EMBER_CHECK(stride[d] >= 0, Runtime, "as_strided: Negative strides are not supported at the moment, got strides: ",
                shape_str(stride));
    int64_t reach = 0;
    empty |= size[d] == 0;
    overflow |= __builtin_mul_overflow(size[d] ? size[d] - 1 : 0, stride[d], &reach) ||
                __builtin_add_overflow(last, reach, &last);
  }
  int64_t needed = 0;
  if (!empty) overflow |= __builtin_mul_overflow(last + 1, (int64_t)itemsize(type), &needed);
  EMBER_CHECK(!overflow && (uint64_t)needed <= s->nbytes, Runtime, "setStorage: sizes ", shape_str(size),
              ", strides ", shape_str(stride), ", storage offset ", offset, ", and itemsize ", itemsize(type),
              " requiring a storage size of ", overflow ? std::string("more than 2**63") : std::to_string(needed),
              " are out of bounds for storage of size ", s->nbytes);
  if (into != Py_None) {  // Tensor.set_: `into` now views this storage (a new version, as any in-place op)
    EMBER_CHECK(is_tensor(into), Type, "set_: expected a Tensor, got ", Py_TYPE(into)->tp_name);
    const Tensor& t = tensor_of(into);
    EMBER_CHECK(t.dtype() == type, Runtime, "Expected a Storage of type ", dtype_name(t.dtype()),
                " or an UntypedStorage, but got type ", dtype_name(type), " for argument 1 'storage'");
    autograd::check_inplace(t, "set_");
    TensorImpl& impl = *t.impl();
    impl.storage = s;
    impl.sizes = size;
    impl.strides = stride;
    impl.offset = (int64_t)offset;
    impl.refresh_geometry();
    t.bump_version();
    Py_INCREF(into);
    return into;
  }
  return wrap(Tensor(Ref<TensorImpl>::make(s, size, stride, (int64_t)offset, type)));
  EMBER_PY_END
}

PyMethodDef storage_functions[] = {
    {"_storage_from_buffer", (PyCFunction)(void (*)())storage_from_buffer, METH_VARARGS | METH_KEYWORDS,
     "A new CPU storage holding a copy of the buffer's bytes, or (copy=False) viewing them."},
    {"_storage_set_data_", storage_set_data, METH_VARARGS,
     "Moves a storage's bytes into another's memory of the same size, in place (swapping the memories)."},
    {"_storage_bytes", storage_bytes, METH_O, "A uint8 tensor over every byte of the storage."},
    {"_storage_resize_", storage_resize, METH_VARARGS, "Grows or shrinks a CPU storage in place, keeping its bytes."},
    {"_storage_over_buffer", storage_over_buffer, METH_O,
     "The live storage made by _storage_from_buffer(copy=False) whose memory starts at the address, or None."},
    {"_tensor_from_storage", tensor_from_storage, METH_VARARGS,
     "A tensor over (storage, offset, size, stride, dtype), or with a 6th argument that tensor set to it."},
    {nullptr, nullptr, 0, nullptr}};

}  // namespace

PyObject* storage_object(const Ref<StorageImpl>& storage) {
  auto [it, fresh] = storage_objects().try_emplace(storage.get(), nullptr);
  if (!fresh) {
    Py_INCREF(it->second);
    return it->second;
  }
  PyObject* obj = PyType_GenericAlloc(StorageType, 0);
  if (!obj) {
    storage_objects().erase(it);
    throw PythonError{};
  }
  new (&reinterpret_cast<PyStorage*>(obj)->storage) Ref<StorageImpl>(storage);
  it->second = obj;
  return obj;
}

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
                                       {Py_tp_methods, device_methods}, {0, nullptr}};
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

  static PyType_Slot storage_slots[] = {{Py_tp_dealloc, (void*)storage_dealloc}, {Py_tp_methods, storage_methods},
                                        {Py_tp_getset, storage_getsets}, {Py_mp_length, (void*)storage_len},
                                        {Py_bf_getbuffer, (void*)storage_getbuffer}, {0, nullptr}};
  static PyType_Spec storage_spec = {"ember.UntypedStorage", sizeof(PyStorage), 0, Py_TPFLAGS_DEFAULT,
                                     storage_slots};
  StorageType = (PyTypeObject*)PyType_FromSpec(&storage_spec);
  PyModule_AddObject(module, "UntypedStorage", (PyObject*)StorageType);
  Py_INCREF(StorageType);
  PyModule_AddFunctions(module, storage_functions);
}

PyObject* generator_object(Generator* gen) {
  PyObject* obj = PyType_GenericAlloc(GeneratorType, 0);
  reinterpret_cast<PyGenerator*>(obj)->gen = gen;
  reinterpret_cast<PyGenerator*>(obj)->owned = false;
  return obj;
}

PyObject* generator_owner(Generator* gen) {
  auto it = generator_owners().find(gen);
  return it == generator_owners().end() ? nullptr : it->second;
}

PyObject* device_object(Device d) {
  PyObject* obj = PyType_GenericAlloc(DeviceType, 0);
  reinterpret_cast<PyDevice*>(obj)->device = d;
  return obj;
}

}  // namespace ember::python
