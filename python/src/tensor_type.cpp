// _C.TensorBase: a heap type holding an ember::Tensor, with the generated op
// methods, Python operators mapped straight to C++ ops, and the attributes
// PyTorch code reads (shape, dtype, grad, ...). ember.Tensor is the Python
// class deriving from it (python/ember/_tensor.py), as torch.Tensor from
// torch._C.TensorBase; every tensor object the bindings make is of that class.
#include "python_exception.h"
#include "python_support.h"

#include <structmember.h>

#include <algorithm>
#include <stdexcept>

#include "ember/autograd.h"
#include "ember/ops/abs.h"
#include "ember/ops/add.h"
#include "ember/ops/bitwise_and.h"
#include "ember/ops/bitwise_left_shift.h"
#include "ember/ops/bitwise_not.h"
#include "ember/ops/bitwise_or.h"
#include "ember/ops/bitwise_right_shift.h"
#include "ember/ops/bitwise_xor.h"
#include "ember/ops/eq.h"
#include "ember/ops/floor_divide.h"
#include "ember/ops/ge.h"
#include "ember/ops/gt.h"
#include "ember/ops/le.h"
#include "ember/ops/lt.h"
#include "ember/ops/matmul.h"
#include "ember/ops/mul.h"
#include "ember/ops/ne.h"
#include "ember/ops/neg.h"
#include "ember/ops/permute.h"
#include "ember/ops/pow.h"
#include "ember/ops/reciprocal.h"
#include "ember/ops/remainder.h"
#include "ember/ops/sub.h"
#include "ember/ops/t.h"
#include "ember/ops/transpose.h"
#include "ember/ops/true_divide.h"
#include "ember/ops/view.h"

namespace ember::python {

PyTypeObject* TensorType = nullptr;
PyTypeObject* TensorClass = nullptr;
PyObject* g_size_type = nullptr;      // ember.Size, set from Python

// A new object of `type` (TensorBase or a subclass) holding `t`.
static PyObject* new_tensor_object(PyTypeObject* type, Tensor t) {
  PyObject* obj = type->tp_alloc(type, 0);
  if (!obj) return nullptr;
  new (&reinterpret_cast<PyTensor*>(obj)->tensor) Tensor(std::move(t));
  return obj;
}

PyObject* wrap(Tensor t) {
  if (!t.defined()) Py_RETURN_NONE;
  PyObject* obj = new_tensor_object(TensorClass, std::move(t));
  if (!obj) throw PythonError{};
  return obj;
}

PyObject* wrap_same(Tensor t, PyObject* receiver) {
  if (t.defined() && t.is_same(tensor_of(receiver))) {
    Py_INCREF(receiver);
    return receiver;
  }
  return wrap(std::move(t));
}

PyObject* wrap(const TensorList& ts) {
  PyObject* tup = PyTuple_New((Py_ssize_t)ts.size());
  for (size_t i = 0; i < ts.size(); ++i) PyTuple_SET_ITEM(tup, i, wrap(ts[i]));
  return tup;
}

PyObject* wrap(const std::tuple<Tensor, Tensor>& ts, PyTypeObject* type) {
  PyObject* out = type ? PyStructSequence_New(type) : PyTuple_New(2);
  PyObject* a = wrap(std::get<0>(ts));
  PyObject* b = wrap(std::get<1>(ts));
  if (type) { PyStructSequence_SetItem(out, 0, a); PyStructSequence_SetItem(out, 1, b); }
  else { PyTuple_SET_ITEM(out, 0, a); PyTuple_SET_ITEM(out, 1, b); }
  return out;
}

// PyTorch's repr of a returned named tuple: one `field=repr` a line.
static PyObject* return_type_repr(PyObject* self, PyObject*) {
  PyTypeObject* type = Py_TYPE(self);
  std::string text = std::string(type->tp_name) + "(\n";
  const Py_ssize_t n = PyTuple_GET_SIZE(self);
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* repr = PyObject_Repr(PyTuple_GET_ITEM(self, i));
    if (!repr) return nullptr;
    const char* item = PyUnicode_AsUTF8(repr);
    if (!item) { Py_DECREF(repr); return nullptr; }
    text += std::string(type->tp_members[i].name) + "=" + item + (i + 1 < n ? ",\n" : "");
    Py_DECREF(repr);
  }
  return PyUnicode_FromString((text + ")").c_str());
}
static PyMethodDef return_type_repr_def = {"__repr__", return_type_repr, METH_NOARGS, nullptr};

std::vector<PyTypeObject*>& return_types() {
  static std::vector<PyTypeObject*> types;  // ember.return_types lists them
  return types;
}

PyTypeObject* make_return_type(PyStructSequence_Desc* desc) {
  PyTypeObject* type = PyStructSequence_NewType(desc);
  if (!type) throw PythonException();
  PyObject* repr = PyDescr_NewMethod(type, &return_type_repr_def);
  if (!repr || PyObject_SetAttrString(reinterpret_cast<PyObject*>(type), "__repr__", repr) < 0) {
    Py_XDECREF(repr);
    throw PythonException();
  }
  Py_DECREF(repr);
  return_types().push_back(type);
  return type;
}

PyObject* wrap_items(PyObject* const* items, Py_ssize_t n, PyTypeObject* type) {
  PyObject* out = type ? PyStructSequence_New(type) : PyTuple_New(n);
  for (Py_ssize_t i = 0; i < n; ++i) {
    if (type) PyStructSequence_SetItem(out, i, items[i]);
    else PyTuple_SET_ITEM(out, i, items[i]);
  }
  return out;
}

PyObject* wrap(const std::tuple<Tensor, Tensor, Tensor>& ts, PyTypeObject* type) {
  PyObject* items[3] = {wrap(std::get<0>(ts)), wrap(std::get<1>(ts)), wrap(std::get<2>(ts))};
  return wrap_items(items, 3, type);
}

PyObject* wrap(const std::tuple<Tensor, Tensor, Tensor, Tensor>& ts, PyTypeObject* type) {
  PyObject* items[4] = {wrap(std::get<0>(ts)), wrap(std::get<1>(ts)), wrap(std::get<2>(ts)), wrap(std::get<3>(ts))};
  return wrap_items(items, 4, type);
}

static PyObject* size_tuple(const DimVector& s) {
  PyObject* tup = PyTuple_New((Py_ssize_t)s.size());
  for (size_t i = 0; i < s.size(); ++i) PyTuple_SET_ITEM(tup, i, PyLong_FromLongLong(s[i]));
  if (!g_size_type) return tup;
  PyObject* size = PyObject_CallOneArg(g_size_type, tup);
  Py_DECREF(tup);
  return size;
}

PyObject* get_grad_fn(PyObject* self, void*);  // module.cpp

namespace {

void tensor_dealloc(PyObject* self) {
  auto* t = reinterpret_cast<PyTensor*>(self);
  if (t->weakrefs) PyObject_ClearWeakRefs(self);
  Py_CLEAR(t->dict);
  t->tensor.~Tensor();
  PyTypeObject* tp = Py_TYPE(self);
  tp->tp_free(self);
  Py_DECREF(tp);
}

// Called only for objects of GC-tracked subclasses (a user's class deriving from
// ember.Tensor), whose attributes may form cycles: the collector then frees them.
int tensor_traverse(PyObject* self, visitproc visit, void* arg) {
  Py_VISIT(reinterpret_cast<PyTensor*>(self)->dict);
  Py_VISIT(Py_TYPE(self));
  return 0;
}
int tensor_clear(PyObject* self) {
  Py_CLEAR(reinterpret_cast<PyTensor*>(self)->dict);
  return 0;
}

// TensorBase(*sizes): an uninitialized tensor of the default dtype. ember.Tensor's
// __new__ (the legacy constructor, which also takes data) calls it for sizes.
PyObject* tensor_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  EMBER_PY_BEGIN
  Py_ssize_t n = PyTuple_GET_SIZE(args);
  if (kwargs && PyDict_Size(kwargs) > 0) {
    PyErr_SetString(PyExc_TypeError, "TensorBase(): takes only sizes");
    return nullptr;
  }
  IntList sizes(n);
  for (Py_ssize_t i = 0; i < n; ++i) sizes[i] = arg_int(PyTuple_GET_ITEM(args, i));
  return new_tensor_object(type, empty_tensor(sizes, default_dtype()));
  EMBER_PY_END
}

PyTypeObject* tensor_subclass_arg(PyObject* cls, const char* what) {
  if (!PyType_Check(cls) || !PyType_IsSubtype((PyTypeObject*)cls, TensorType)) {
    PyErr_Format(PyExc_TypeError, "%s: cls must be a subclass of Tensor", what);
    return nullptr;
  }
  return (PyTypeObject*)cls;
}

// Tensor._make_subclass(cls, data, requires_grad=False): a `cls` object sharing
// `data`'s memory, a new leaf (nn.Parameter's constructor in PyTorch).
PyObject* make_subclass(PyObject*, PyObject* args) {
  EMBER_PY_BEGIN
  PyObject *cls, *data;
  int requires_grad = 0;
  if (!PyArg_ParseTuple(args, "OO!|p", &cls, TensorType, &data, &requires_grad)) return nullptr;
  PyTypeObject* tp = tensor_subclass_arg(cls, "_make_subclass");
  if (!tp) return nullptr;
  Tensor t = detach_copy(tensor_of(data));
  if (requires_grad) t.set_requires_grad(true);
  return new_tensor_object(tp, std::move(t));
  EMBER_PY_END
}

// ---------------------------------------------------------------- attributes
#define SELF reinterpret_cast<PyTensor*>(self)->tensor
PyObject* get_shape(PyObject* self, void*) { EMBER_PY_BEGIN return size_tuple(SELF.sizes()); EMBER_PY_END }
PyObject* get_dtype(PyObject* self, void*) { PyObject* d = dtype_object(SELF.dtype()); Py_INCREF(d); return d; }
PyObject* get_device(PyObject* self, void*) { return device_object(SELF.device()); }
PyObject* get_ndim(PyObject* self, void*) { return PyLong_FromLongLong(SELF.dim()); }
PyObject* get_is_cuda(PyObject* self, void*) { return PyBool_FromLong(SELF.device().is_cuda()); }
PyObject* get_requires_grad(PyObject* self, void*) { return PyBool_FromLong(SELF.requires_grad()); }
int set_requires_grad(PyObject* self, PyObject* v, void*) {
  try {
    if (!v || !PyBool_Check(v)) { PyErr_SetString(PyExc_TypeError, "requires_grad must be a bool"); return -1; }
    if (!SELF.is_leaf() && v == Py_False) {
      PyErr_SetString(PyExc_RuntimeError, "you can only change requires_grad flags of leaf variables. If you want to "
                      "use a computed variable in a subgraph that doesn't require differentiation use var_no_grad = var.detach().");
      return -1;
    }
    SELF.set_requires_grad(v == Py_True);
    return 0;
  } catch (const std::exception& e) { set_python_error(e); return -1; }
}
PyObject* get_grad(PyObject* self, void*) {
  EMBER_PY_BEGIN
  if (!SELF.is_leaf() && !(SELF.impl()->autograd && SELF.impl()->autograd->retained_grad) &&
      PyErr_WarnEx(PyExc_UserWarning,
                   "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad attribute "
                   "won't be populated during autograd.backward(). If you indeed want the .grad field to be populated "
                   "for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor.", 1) < 0)
    return nullptr;
  return wrap(SELF.grad());
  EMBER_PY_END
}
int set_grad(PyObject* self, PyObject* v, void*) {
  if (!v || v == Py_None) { if (SELF.impl()->autograd) SELF.set_grad(Tensor()); return 0; }
  if (!is_tensor(v)) { PyErr_SetString(PyExc_TypeError, "assigned grad expected to be a Tensor or None"); return -1; }
  const Tensor& g = tensor_of(v);
  if (g.sizes() != SELF.sizes()) {
    PyErr_SetString(PyExc_RuntimeError, "assigned grad has data of a different size");
    return -1;
  }
  SELF.set_grad(g);
  return 0;
}
PyObject* get_is_leaf(PyObject* self, void*) { EMBER_PY_BEGIN return PyBool_FromLong(SELF.is_leaf()); EMBER_PY_END }
// The tensor a view was taken from (the root, for a view of a view), else None.
PyObject* get_base(PyObject* self, void*) {
  EMBER_PY_BEGIN
  const AutogradMeta* meta = SELF.impl()->autograd.get();
  if (!meta || !meta->view_base) Py_RETURN_NONE;
  return wrap(Tensor(meta->view_base));
  EMBER_PY_END
}
PyObject* get_data(PyObject* self, void*) { EMBER_PY_BEGIN return wrap(detach_copy(SELF)); EMBER_PY_END }
int set_data(PyObject* self, PyObject* v, void*) {
  if (!v || !is_tensor(v)) { PyErr_SetString(PyExc_TypeError, "data must be a Tensor"); return -1; }
  TensorImpl* dst = SELF.impl();
  const Tensor& src = tensor_of(v);
  dst->storage = src.impl()->storage;
  dst->sizes = src.sizes();
  dst->strides = src.strides();
  dst->offset = src.offset();
  dst->dtype = src.dtype();
  dst->refresh_geometry();
  return 0;
}
PyObject* get_version(PyObject* self, void*) { return PyLong_FromUnsignedLong(SELF.version()); }
PyObject* get_output_nr(PyObject* self, void*) { return PyLong_FromUnsignedLong(SELF.output_nr()); }
// The TensorImpl's address, as PyTorch's: one tensor's identity across its Python objects.
PyObject* get_cdata(PyObject* self, void*) { return PyLong_FromVoidPtr(SELF.impl()); }
PyObject* get_T(PyObject* self, void*) {
  EMBER_PY_BEGIN
  IntList dims(SELF.dim());
  for (int64_t i = 0; i < SELF.dim(); ++i) dims[i] = SELF.dim() - 1 - i;
  return wrap(ember::permute(SELF, dims));
  EMBER_PY_END
}

// The last two dims swapped (mH, the conjugate transpose, is the same for real dtypes).
PyObject* matrix_transpose(PyObject* self, const char* attr) {
  EMBER_PY_BEGIN
  EMBER_CHECK(SELF.dim() >= 2, Runtime, "tensor.", attr, " is only supported on matrices or batches of matrices. Got ",
              SELF.dim(), "-D tensor.");
  return wrap(ember::transpose(SELF, -2, -1));
  EMBER_PY_END
}
PyObject* get_mT(PyObject* self, void*) { return matrix_transpose(self, "mT"); }
PyObject* get_mH(PyObject* self, void*) { return matrix_transpose(self, "mH"); }
// The conjugate transpose of a matrix: t() for real dtypes; a 0-d tensor is itself, with PyTorch's warning.
PyObject* get_H(PyObject* self, void*) {
  EMBER_PY_BEGIN
  const int64_t ndim = SELF.dim();
  if (ndim == 0) {
    if (PyErr_WarnEx(PyExc_UserWarning, "Tensor.H is deprecated on 0-D tensors. Consider using x.conj().", 1) < 0)
      return nullptr;
    return wrap(ember::t(SELF));
  }
  EMBER_CHECK(ndim == 2, Runtime, "tensor.H is only supported on matrices (2-D tensors). Got ", ndim, "-D tensor.",
              ndim > 2 ? " For batches of matrices, consider using tensor.mH" : "");
  return wrap(ember::t(SELF));
  EMBER_PY_END
}
// True on a non-leaf after retain_grad() (a leaf keeps its .grad anyway).
PyObject* get_retains_grad(PyObject* self, void*) {
  const AutogradMeta* meta = SELF.impl()->autograd.get();
  return PyBool_FromLong(meta && meta->retains_grad && !SELF.is_leaf());
}
PyObject* get_itemsize(PyObject* self, void*) { return PyLong_FromSize_t(SELF.itemsize()); }
// Bytes of the elements this tensor shows (numel * itemsize, as PyTorch: not its storage's size).
PyObject* get_nbytes(PyObject* self, void*) { return PyLong_FromLongLong(SELF.numel() * (int64_t)SELF.itemsize()); }

PyGetSetDef getsets[] = {
    {"shape", get_shape, nullptr, nullptr, nullptr},
    {"dtype", get_dtype, nullptr, nullptr, nullptr},
    {"device", get_device, nullptr, nullptr, nullptr},
    {"ndim", get_ndim, nullptr, nullptr, nullptr},
    {"is_cuda", get_is_cuda, nullptr, nullptr, nullptr},
    {"requires_grad", get_requires_grad, set_requires_grad, nullptr, nullptr},
    {"grad", get_grad, set_grad, nullptr, nullptr},
    {"grad_fn", get_grad_fn, nullptr, nullptr, nullptr},
    {"is_leaf", get_is_leaf, nullptr, nullptr, nullptr},
    {"data", get_data, set_data, nullptr, nullptr},
    {"_version", get_version, nullptr, nullptr, nullptr},
    {"output_nr", get_output_nr, nullptr, nullptr, nullptr},
    {"_base", get_base, nullptr, nullptr, nullptr},
    {"_cdata", get_cdata, nullptr, nullptr, nullptr},
    {"T", get_T, nullptr, nullptr, nullptr},
    {"mT", get_mT, nullptr, nullptr, nullptr},
    {"mH", get_mH, nullptr, nullptr, nullptr},
    {"H", get_H, nullptr, nullptr, nullptr},
    {"retains_grad", get_retains_grad, nullptr, nullptr, nullptr},
    {"itemsize", get_itemsize, nullptr, nullptr, nullptr},
    {"nbytes", get_nbytes, nullptr, nullptr, nullptr},
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, nullptr, nullptr},  // pickling reads attributes
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

// ---------------------------------------------------------------- methods
PyObject* m_size(PyObject* self, PyObject* args) {
  EMBER_PY_BEGIN
  PyObject* dim = Py_None;
  if (!PyArg_ParseTuple(args, "|O", &dim)) return nullptr;
  if (dim == Py_None) return size_tuple(SELF.sizes());
  return PyLong_FromLongLong(SELF.size(arg_int(dim)));
  EMBER_PY_END
}
PyObject* m_stride(PyObject* self, PyObject* args) {
  EMBER_PY_BEGIN
  PyObject* dim = Py_None;
  if (!PyArg_ParseTuple(args, "|O", &dim)) return nullptr;
  if (dim == Py_None) {
    PyObject* tup = PyTuple_New(SELF.dim());
    for (int64_t i = 0; i < SELF.dim(); ++i) PyTuple_SET_ITEM(tup, i, PyLong_FromLongLong(SELF.strides()[i]));
    return tup;
  }
  return PyLong_FromLongLong(SELF.stride(arg_int(dim)));
  EMBER_PY_END
}
PyObject* m_dim(PyObject* self, PyObject*) { return PyLong_FromLongLong(SELF.dim()); }
PyObject* m_numel(PyObject* self, PyObject*) { return PyLong_FromLongLong(SELF.numel()); }
PyObject* scalar_to_py(const Scalar& s) {
  if (s.is_bool()) return PyBool_FromLong(s.to_bool());
  if (s.is_integral()) return PyLong_FromLongLong(s.to_int());
  return PyFloat_FromDouble(s.to_double());
}
PyObject* m_item(PyObject* self, PyObject*) { EMBER_PY_BEGIN return scalar_to_py(SELF.item()); EMBER_PY_END }
PyObject* m_data_ptr(PyObject* self, PyObject*) { return PyLong_FromVoidPtr(SELF.data_ptr()); }
PyObject* m_element_size(PyObject* self, PyObject*) { return PyLong_FromSize_t(SELF.itemsize()); }
PyObject* m_storage_offset(PyObject* self, PyObject*) { return PyLong_FromLongLong(SELF.offset()); }
PyObject* m_is_contiguous(PyObject* self, PyObject*) { return PyBool_FromLong(SELF.is_contiguous()); }
PyObject* m_is_floating_point(PyObject* self, PyObject*) { return PyBool_FromLong(is_floating(SELF.dtype())); }
PyObject* m_is_complex(PyObject*, PyObject*) { Py_RETURN_FALSE; }  // ember has no complex dtypes
// The CUDA device index, -1 on the CPU.
PyObject* m_get_device(PyObject* self, PyObject*) {
  const Device d = SELF.device();
  return PyLong_FromLong(d.is_cpu() ? -1 : std::max<int>(d.index, 0));
}
PyObject* m_requires_grad_(PyObject* self, PyObject* args, PyObject* kwargs) {
  EMBER_PY_BEGIN
  static const char* kw[] = {"requires_grad", nullptr};
  int r = 1;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|p", const_cast<char**>(kw), &r)) return nullptr;
  if (!r && !SELF.is_leaf())
    EMBER_FAIL(Runtime, "you can only change requires_grad flags of leaf variables.");
  SELF.set_requires_grad(r);
  Py_INCREF(self);
  return self;
  EMBER_PY_END
}
PyObject* m_detach(PyObject* self, PyObject*) { EMBER_PY_BEGIN return wrap(detach_copy(SELF)); EMBER_PY_END }
PyObject* m_is_view(PyObject* self, PyObject*) {
  const AutogradMeta* meta = SELF.impl()->autograd.get();
  return PyBool_FromLong(meta && meta->view_base);
}
}  // namespace
}  // namespace ember::python
namespace ember {
// Transposes a tensor of <= 2 dims in place (PyTorch's t_): a new version; with autograd, node TBackward1.
// Defined in aten/src/composite/views.cpp, declared only here (its one caller) to keep tensor.h unchanged.
const Tensor& t_(const Tensor& self);
// The in-place view ops' core (views.cpp): self takes view's geometry and history.
const Tensor& adopt_view_(const Tensor& self, const Tensor& view, const char* op);
}  // namespace ember
namespace ember::python {
namespace {

PyObject* m_t_(PyObject* self, PyObject*) {
  EMBER_PY_BEGIN
  ember::t_(SELF);
  Py_INCREF(self);
  return self;
  EMBER_PY_END
}
// x._adopt_view_(view, op): ember/_tensor_view_ops.py's squeeze_, transpose_, ... (see adopt_view_).
PyObject* m_adopt_view_(PyObject* self, PyObject* args) {
  EMBER_PY_BEGIN
  PyObject* view;
  const char* op;
  if (!PyArg_ParseTuple(args, "Os", &view, &op)) return nullptr;
  EMBER_CHECK(is_tensor(view), Type, "_adopt_view_: expected a Tensor, got ", Py_TYPE(view)->tp_name);
  ember::adopt_view_(SELF, tensor_of(view), op);
  Py_INCREF(self);
  return self;
  EMBER_PY_END
}
PyObject* m_detach_(PyObject* self, PyObject*) {
  if (SELF.impl()->autograd && SELF.impl()->autograd->view_base) {
    PyErr_SetString(PyExc_RuntimeError, "Can't detach views in-place. Use detach() instead.");
    return nullptr;
  }
  if (SELF.impl()->autograd) {
    SELF.impl()->autograd->grad_fn.reset();
    SELF.impl()->autograd->requires_grad = false;
  }
  Py_INCREF(self);
  return self;
}
PyObject* m_retain_grad(PyObject* self, PyObject*) {
  EMBER_PY_BEGIN
  EMBER_CHECK(SELF.requires_grad(), Runtime, "can't retain_grad on Tensor that has requires_grad=False");
  if (!SELF.is_leaf()) {
    AutogradMeta& meta = SELF.impl()->autograd_meta();
    if (!meta.retained_grad) {
      meta.retains_grad = true;
      meta.retained_grad = std::make_shared<Tensor>();
      meta.grad_fn->retained.push_back({meta.output_nr, meta.retained_grad});
    }
  }
  Py_RETURN_NONE;
  EMBER_PY_END
}
// t.as_subclass(cls): a `cls` object viewing t's memory and staying in its graph, as PyTorch's.
PyObject* m_as_subclass(PyObject* self, PyObject* cls) {
  EMBER_PY_BEGIN
  PyTypeObject* tp = tensor_subclass_arg(cls, "as_subclass");
  if (!tp) return nullptr;
  return new_tensor_object(tp, ember::view(SELF, SELF.sizes()));
  EMBER_PY_END
}
PyObject* m_untyped_storage(PyObject* self, PyObject*) {
  EMBER_PY_BEGIN
  return storage_object(SELF.impl()->storage);
  EMBER_PY_END
}

PyMethodDef hand_written_methods[] = {
    {"size", m_size, METH_VARARGS, "The shape, or the size of one dim."},
    {"stride", m_stride, METH_VARARGS, "The strides, or the stride of one dim."},
    {"dim", m_dim, METH_NOARGS, "The number of dims."},
    {"ndimension", m_dim, METH_NOARGS, "The number of dims."},
    {"numel", m_numel, METH_NOARGS, "The number of elements."},
    {"nelement", m_numel, METH_NOARGS, "The number of elements."},
    {"item", m_item, METH_NOARGS, "The value of a one-element tensor as a Python number."},
    {"data_ptr", m_data_ptr, METH_NOARGS, "The address of the first element."},
    {"element_size", m_element_size, METH_NOARGS, "Bytes per element."},
    {"storage_offset", m_storage_offset, METH_NOARGS, "Offset into the storage, in elements."},
    {"is_contiguous", m_is_contiguous, METH_NOARGS, "Whether the tensor is contiguous in row-major order."},
    {"is_floating_point", m_is_floating_point, METH_NOARGS, "Whether the dtype is a floating point type."},
    {"is_complex", m_is_complex, METH_NOARGS, "Whether the dtype is a complex type (never, in ember)."},
    {"get_device", m_get_device, METH_NOARGS, "The CUDA device index, or -1 on the CPU."},
    {"requires_grad_", (PyCFunction)(void (*)(void))m_requires_grad_, METH_VARARGS | METH_KEYWORDS, "Sets requires_grad in place."},
    {"detach", m_detach, METH_NOARGS, "A tensor sharing storage, cut from the graph."},
    {"detach_", m_detach_, METH_NOARGS, "Cuts this tensor from the graph."},
    {"t_", m_t_, METH_NOARGS, "Transposes this tensor of <= 2 dimensions in place."},
    {"_adopt_view_", m_adopt_view_, METH_VARARGS, "Takes the geometry and history of a view of itself, in place."},
    {"_is_view", m_is_view, METH_NOARGS, "Whether this tensor is a view of another (see _base)."},
    {"retain_grad", m_retain_grad, METH_NOARGS, "Keeps .grad of a non-leaf tensor."},
    {"_make_subclass", make_subclass, METH_VARARGS | METH_STATIC, "A `cls` object sharing `data`'s memory, a new leaf."},
    {"as_subclass", m_as_subclass, METH_O, "A `cls` object viewing this tensor, in its graph."},
    {"untyped_storage", m_untyped_storage, METH_NOARGS, "The storage this tensor views (shared by its views)."},
    {nullptr, nullptr, 0, nullptr}};

// ---------------------------------------------------------------- operators
// Either operand may be the tensor (reflected operators); numbers become
// wrapped 0-d tensors. Anything else is NotImplemented so Python tries the other side.
bool operand(PyObject* o, Tensor& out) {
  if (is_tensor(o)) { out = tensor_of(o); return true; }
  if (is_number(o)) { out = wrap_number(arg_scalar(o)); return true; }
  if (is_ndarray(o)) { out = tensor_from_data(o); return true; }  // as PyTorch: t + np.ones(4)
  return false;
}

Tensor sub2(const Tensor& a, const Tensor& b);
template <Tensor (*Op)(const Tensor&, const Tensor&)>
PyObject* binary(PyObject* a, PyObject* b) {
  EMBER_PY_BEGIN
  Tensor x, y;
  if (!operand(a, x) || !operand(b, y)) Py_RETURN_NOTIMPLEMENTED;
  return wrap(run_op(work_of(x) + work_of(y), [&] {
    const uint64_t first_node = autograd::next_sequence_nr();
    Tensor result = Op(x, y);
    // `2 - t` is PyTorch's rsub(t, 2), whose node is RsubBackward1.
    if constexpr (Op == sub2) if (!is_tensor(a)) autograd::name_composite_node(result, first_node, "RsubBackward1");
    return result;
  }));
  EMBER_PY_END
}
template <Tensor (*Op)(const Tensor&, const Tensor&)>
PyObject* inplace(PyObject* a, PyObject* b) {
  EMBER_PY_BEGIN
  Tensor y;
  if (!is_tensor(a) || !operand(b, y)) Py_RETURN_NOTIMPLEMENTED;
  const Tensor& self = tensor_of(a);
  run_op(work_of(self) + work_of(y), [&] { Op(self, y); });
  Py_INCREF(a);
  return a;
  EMBER_PY_END
}
Tensor add2(const Tensor& a, const Tensor& b) { return ember::add(a, b); }
Tensor sub2(const Tensor& a, const Tensor& b) { return ember::sub(a, b); }
Tensor add2_(const Tensor& a, const Tensor& b) { return ember::add_(a, b); }
Tensor sub2_(const Tensor& a, const Tensor& b) { return ember::sub_(a, b); }
Tensor and2(const Tensor& a, const Tensor& b) { return ember::bitwise_and(a, b); }
Tensor or2(const Tensor& a, const Tensor& b) { return ember::bitwise_or(a, b); }
Tensor xor2(const Tensor& a, const Tensor& b) { return ember::bitwise_xor(a, b); }
Tensor and2_(const Tensor& a, const Tensor& b) { return ember::bitwise_and_(a, b); }
Tensor or2_(const Tensor& a, const Tensor& b) { return ember::bitwise_or_(a, b); }
Tensor xor2_(const Tensor& a, const Tensor& b) { return ember::bitwise_xor_(a, b); }
Tensor lshift2(const Tensor& a, const Tensor& b) { return ember::bitwise_left_shift(a, b); }
Tensor rshift2(const Tensor& a, const Tensor& b) { return ember::bitwise_right_shift(a, b); }
Tensor lshift2_(const Tensor& a, const Tensor& b) { return ember::bitwise_left_shift_(a, b); }
Tensor rshift2_(const Tensor& a, const Tensor& b) { return ember::bitwise_right_shift_(a, b); }

// t ** 2 is pow.Tensor_Scalar (PyTorch's special exponents, the negative-exponent check), 2 ** t pow.Scalar.
Tensor pow2(const Tensor& a, const Tensor& b) {
  if (b.is_wrapped_number() && !a.is_wrapped_number()) return ember::pow_Tensor_Scalar(a, b.item());
  if (a.is_wrapped_number() && !b.is_wrapped_number()) return ember::pow_Scalar(a.item(), b);
  return ember::pow(a, b);
}
// 2 / t is PyTorch's Tensor.__rtruediv__: t.reciprocal() * 2 (so its values and its MulBackward0 node).
Tensor div2(const Tensor& a, const Tensor& b) {
  if (a.is_wrapped_number() && !b.is_wrapped_number()) return ember::mul(ember::reciprocal(b), a);
  return ember::true_divide(a, b);
}
Tensor pow2_(const Tensor& a, const Tensor& b) {
  return b.is_wrapped_number() ? ember::pow_Tensor_Scalar_(a, b.item()) : ember::pow_(a, b);
}
PyObject* nb_pow(PyObject* a, PyObject* b, PyObject*) { return binary<pow2>(a, b); }
PyObject* nb_ipow(PyObject* a, PyObject* b, PyObject*) { return inplace<pow2_>(a, b); }
template <Tensor (*Op)(const Tensor&)>
PyObject* unary(PyObject* a) {
  EMBER_PY_BEGIN
  const Tensor& x = tensor_of(a);
  return wrap(run_op(work_of(x), [&] { return Op(x); }));
  EMBER_PY_END
}
PyObject* nb_pos(PyObject* a) { Py_INCREF(a); return a; }
int nb_bool(PyObject* a) {
  try {
    const Tensor& t = tensor_of(a);
    EMBER_CHECK(t.numel() == 1, Runtime, "Boolean value of Tensor with ", t.numel() == 0 ? "no values" : "more than one value", " is ambiguous");
    return t.item().to_bool();
  } catch (const std::exception& e) { set_python_error(e); return -1; }
}
PyObject* nb_float(PyObject* a) {
  EMBER_PY_BEGIN
  const Tensor& t = tensor_of(a);
  EMBER_CHECK(t.numel() == 1, Value, "only one element tensors can be converted to Python scalars");
  return PyFloat_FromDouble(t.item().to_double());
  EMBER_PY_END
}
PyObject* nb_int(PyObject* a) {
  EMBER_PY_BEGIN
  const Tensor& t = tensor_of(a);
  EMBER_CHECK(t.numel() == 1, Value, "only one element tensors can be converted to Python scalars");
  Scalar s = t.item();
  if (s.is_floating()) return PyLong_FromDouble(s.to_double());
  return PyLong_FromLongLong(s.to_int());
  EMBER_PY_END
}
PyObject* nb_index(PyObject* a) {
  EMBER_PY_BEGIN
  const Tensor& t = tensor_of(a);
  EMBER_CHECK(t.numel() == 1 && is_integral(t.dtype(), true), Type,
              "only integer tensors of a single element can be converted to an index");
  return PyLong_FromLongLong(t.item().to_int());
  EMBER_PY_END
}
PyObject* richcompare(PyObject* a, PyObject* b, int op) {
  EMBER_PY_BEGIN
  Tensor x, y;
  if (!operand(a, x) || !operand(b, y)) Py_RETURN_NOTIMPLEMENTED;
  Tensor (*compare)(const Tensor&, const Tensor&) = nullptr;
  switch (op) {
    case Py_EQ: compare = ember::eq; break;
    case Py_NE: compare = ember::ne; break;
    case Py_LT: compare = ember::lt; break;
    case Py_LE: compare = ember::le; break;
    case Py_GT: compare = ember::gt; break;
    case Py_GE: compare = ember::ge; break;
    default: Py_RETURN_NOTIMPLEMENTED;
  }
  return wrap(run_op(work_of(x) + work_of(y), [&] { return compare(x, y); }));
  EMBER_PY_END
}
Py_hash_t tensor_hash(PyObject* self) { return (Py_hash_t)((uintptr_t)self >> 4); }
Py_ssize_t sq_length(PyObject* self) {
  const Tensor& t = SELF;
  if (t.dim() == 0) { PyErr_SetString(PyExc_TypeError, "len() of a 0-d tensor"); return -1; }
  return (Py_ssize_t)t.sizes()[0];
}
#undef SELF

}  // namespace

PyObject* tensor_getitem(PyObject* self, PyObject* index);            // indexing.cpp
int tensor_setitem(PyObject* self, PyObject* index, PyObject* value);  // indexing.cpp
void register_all_ops(std::vector<OpFunction>& functions, std::vector<PyMethodDef>& methods);

static std::vector<PyMethodDef> tensor_methods;  // TensorBase's, generated and hand-written

// Makes `cls` (ember.Tensor, a Python subclass of TensorBase with no instances yet)
// the class of new tensor objects, as fast as TensorBase was:
// - its instances stay out of the cyclic GC, as TensorBase's (Python makes every
//   class GC-tracked; tracking costs each op's result an allocation and a free);
// - it gets its own descriptors of TensorBase's methods, since CPython's fast call
//   of a method descriptor wants the receiver's type to be exactly the descriptor's
//   (a Python subclass of ember.Tensor takes the ordinary path).
void set_tensor_class(PyTypeObject* cls) {
  if (!PyType_IsSubtype(cls, TensorType)) throw std::invalid_argument("_set_tensor_class: expected a subclass of TensorBase");
  bool adds_nothing = cls->tp_basicsize == TensorType->tp_basicsize && cls->tp_dictoffset == TensorType->tp_dictoffset &&
                      cls->tp_weaklistoffset == TensorType->tp_weaklistoffset && !cls->tp_finalize;
#ifdef Py_TPFLAGS_MANAGED_DICT
  adds_nothing = adds_nothing && !(cls->tp_flags & Py_TPFLAGS_MANAGED_DICT);
#endif
#ifdef Py_TPFLAGS_MANAGED_WEAKREF
  adds_nothing = adds_nothing && !(cls->tp_flags & Py_TPFLAGS_MANAGED_WEAKREF);
#endif
  if (adds_nothing && (cls->tp_flags & Py_TPFLAGS_HAVE_GC)) {
    cls->tp_flags &= ~Py_TPFLAGS_HAVE_GC;
    cls->tp_free = PyObject_Free;
  }
  PyObject* own = cls->tp_dict;
  for (PyMethodDef& def : tensor_methods) {
    if (!def.ml_name || (def.ml_flags & (METH_STATIC | METH_CLASS))) continue;
    if (PyDict_GetItemString(own, def.ml_name)) continue;  // written in Python: it stays
    PyObject* descr = PyDescr_NewMethod(cls, &def);
    if (!descr || PyObject_SetAttrString((PyObject*)cls, def.ml_name, descr) < 0) {
      Py_XDECREF(descr);
      throw PythonError{};
    }
    Py_DECREF(descr);
  }
  Py_INCREF(cls);
  TensorClass = cls;
}

// Builds the Tensor type with the generated methods; returns the op functions.
std::vector<OpFunction>* create_tensor_type() {
  static std::vector<OpFunction> functions;
  std::vector<PyMethodDef>& methods = tensor_methods;
  register_all_ops(functions, methods);
  for (PyMethodDef* m = hand_written_methods; m->ml_name; ++m) methods.push_back(*m);
  methods.push_back({nullptr, nullptr, 0, nullptr});

  static PyMemberDef members[] = {
      {"__dictoffset__", T_PYSSIZET, offsetof(PyTensor, dict), READONLY, nullptr},
      {"__weaklistoffset__", T_PYSSIZET, offsetof(PyTensor, weakrefs), READONLY, nullptr},
      {nullptr, 0, 0, 0, nullptr}};
  static PyType_Slot slots[] = {
      {Py_tp_dealloc, (void*)tensor_dealloc},
      {Py_tp_new, (void*)tensor_new},
      {Py_tp_traverse, (void*)tensor_traverse},
      {Py_tp_clear, (void*)tensor_clear},
      {Py_tp_methods, methods.data()},
      {Py_tp_getset, getsets},
      {Py_tp_members, members},
      {Py_tp_richcompare, (void*)richcompare},
      {Py_tp_hash, (void*)tensor_hash},
      {Py_mp_subscript, (void*)tensor_getitem},
      {Py_mp_ass_subscript, (void*)tensor_setitem},
      {Py_mp_length, (void*)sq_length},
      {Py_nb_add, (void*)binary<add2>},
      {Py_nb_subtract, (void*)binary<sub2>},
      {Py_nb_multiply, (void*)binary<ember::mul>},
      {Py_nb_true_divide, (void*)binary<div2>},
      {Py_nb_floor_divide, (void*)binary<ember::floor_divide>},
      {Py_nb_remainder, (void*)binary<ember::remainder>},
      {Py_nb_power, (void*)nb_pow},
      {Py_nb_matrix_multiply, (void*)binary<ember::matmul>},
      {Py_nb_and, (void*)binary<and2>},
      {Py_nb_or, (void*)binary<or2>},
      {Py_nb_xor, (void*)binary<xor2>},
      {Py_nb_inplace_add, (void*)inplace<add2_>},
      {Py_nb_inplace_subtract, (void*)inplace<sub2_>},
      {Py_nb_inplace_multiply, (void*)inplace<ember::mul_>},
      {Py_nb_inplace_true_divide, (void*)inplace<ember::true_divide_>},
      {Py_nb_inplace_floor_divide, (void*)inplace<ember::floor_divide_>},
      {Py_nb_inplace_remainder, (void*)inplace<ember::remainder_>},
      {Py_nb_inplace_power, (void*)nb_ipow},
      {Py_nb_inplace_and, (void*)inplace<and2_>},
      {Py_nb_inplace_or, (void*)inplace<or2_>},
      {Py_nb_inplace_xor, (void*)inplace<xor2_>},
      {Py_nb_lshift, (void*)binary<lshift2>},
      {Py_nb_rshift, (void*)binary<rshift2>},
      {Py_nb_inplace_lshift, (void*)inplace<lshift2_>},
      {Py_nb_inplace_rshift, (void*)inplace<rshift2_>},
      {Py_nb_negative, (void*)unary<ember::neg>},
      {Py_nb_positive, (void*)nb_pos},
      {Py_nb_absolute, (void*)unary<ember::abs>},
      {Py_nb_invert, (void*)unary<ember::bitwise_not>},
      {Py_nb_bool, (void*)nb_bool},
      {Py_nb_float, (void*)nb_float},
      {Py_nb_int, (void*)nb_int},
      {Py_nb_index, (void*)nb_index},
      {0, nullptr}};
  static PyType_Spec spec = {"ember._C.TensorBase", sizeof(PyTensor), 0,
                             Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE, slots};
  TensorType = TensorClass = (PyTypeObject*)PyType_FromSpec(&spec);
  return &functions;
}

}  // namespace ember::python
