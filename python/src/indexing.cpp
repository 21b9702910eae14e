// Tensor.__getitem__ / __setitem__ with PyTorch's rules: ints, slices, None
// and ... give views (select/slice/unsqueeze); integer and bool tensors (or
// lists) are advanced indices, gathered by `index` and written by `index_put_`.
#include <vector>

#include "ember/op_support.h"
#include "ember/ops/copy_.h"
#include "ember/ops/fill_.h"
#include "ember/ops/index.h"
#include "ember/ops/index_put_.h"
#include "ember/ops/select.h"
#include "ember/ops/slice.h"
#include "ember/ops/unsqueeze.h"
#include "ember/ops/view.h"
#include "python_support.h"

namespace ember::python {

PyObject* g_index_tensor_from = nullptr;  // ember.tensor, for list indices

Tensor tensor_from_data(PyObject* data) {
  PyObject* obj = PyObject_CallOneArg(g_index_tensor_from, data);
  if (!obj) throw PythonError{};
  Tensor t = tensor_of(obj);
  Py_DECREF(obj);
  return t;
}

namespace {

// Owns a new reference for the scope.
struct OwnedRef {
  PyObject* o;
  ~OwnedRef() { Py_XDECREF(o); }
};

bool is_index_int(PyObject* o) {
  return !is_tensor(o) && !PyBool_Check(o) && (PyLong_Check(o) || (PyIndex_Check(o) && !PySequence_Check(o)));
}

struct Indexed {
  Tensor view;              // after ints, slices, None, ...
  // For ember::index: per dim of `view`, undefined for non-advanced dims; a
  // k-dim bool mask stands for k dims (ember::index expands it, on any device).
  TensorList advanced;
  bool has_advanced = false;
};

Indexed apply_index(const Tensor& self, PyObject* index) {
  PyObject* tup;
  if (PyTuple_Check(index)) { tup = index; Py_INCREF(tup); }
  else tup = PyTuple_Pack(1, index);
  OwnedRef owned{tup};
  Py_ssize_t n = PyTuple_GET_SIZE(tup);

  // How many tensor dims the index consumes (for expanding ...).
  int64_t consumed = 0;
  bool seen_ellipsis = false;
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* it = PyTuple_GET_ITEM(tup, i);
    if (it == Py_Ellipsis) {
      EMBER_CHECK(!seen_ellipsis, Index, "an index can only have a single ellipsis ('...')");
      seen_ellipsis = true;
    } else if (it == Py_None || PyBool_Check(it)) {
    } else if (is_tensor(it) && (tensor_of(it).dtype() == ScalarType::Bool || tensor_of(it).dtype() == ScalarType::UInt8)) {
      consumed += std::max<int64_t>(tensor_of(it).dim(), 1) * (tensor_of(it).dim() > 0);
    } else {
      consumed += 1;
    }
  }
  EMBER_CHECK(consumed <= self.dim(), Index, "too many indices for tensor of dimension ", self.dim());

  Indexed r;
  r.view = self;
  int64_t dim = 0;       // the next dim of r.view
  int64_t self_dim = 0;  // the next dim of self, for error messages
  struct Advanced {
    int64_t dim;   // the first dim of r.view it indexes
    Tensor index;
    int64_t span;  // how many dims it indexes
  };
  std::vector<Advanced> adv;
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* it = PyTuple_GET_ITEM(tup, i);
    bool zero_dim_int = is_tensor(it) && tensor_of(it).dim() == 0 && is_integral(tensor_of(it).dtype(), false);
    if (is_index_int(it) || zero_dim_int) {
      int64_t idx = zero_dim_int ? tensor_of(it).item().to_int() : arg_int(it);
      int64_t size = r.view.sizes()[dim];
      EMBER_CHECK(idx >= -size && idx < size, Index, "index ", idx, " is out of bounds for dimension ", self_dim,
                  " with size ", size);
      r.view = ember::select(r.view, dim, idx);
      ++self_dim;
    } else if (PySlice_Check(it)) {
      auto* s = reinterpret_cast<PySliceObject*>(it);
      std::optional<int64_t> start, stop;
      int64_t step = 1;
      if (s->start != Py_None) start = arg_int(s->start);
      if (s->stop != Py_None) stop = arg_int(s->stop);
      if (s->step != Py_None) step = arg_int(s->step);
      EMBER_CHECK(step > 0, Value, "step must be greater than zero");
      r.view = ember::slice(r.view, dim, start, stop, step);
      ++dim;
      ++self_dim;
    } else if (it == Py_None) {
      r.view = ember::unsqueeze(r.view, dim);
      ++dim;
    } else if (it == Py_Ellipsis) {
      dim += self.dim() - consumed;
      self_dim += self.dim() - consumed;
    } else {
      Tensor t;
      if (is_tensor(it)) {
        t = tensor_of(it);
      } else if (PyList_Check(it) || PyTuple_Check(it) || PyBool_Check(it) || is_ndarray(it)) {
        t = tensor_from_data(it);
      } else {
        EMBER_FAIL(Index, "only integers, slices (`:`), ellipsis (`...`), None and long or bool tensors are "
                   "valid indices (got ", Py_TYPE(it)->tp_name, ")");
      }
      if (t.dtype() == ScalarType::Bool || t.dtype() == ScalarType::UInt8) {
        if (t.dim() == 0) {
          r.view = ember::unsqueeze(r.view, dim);
          const bool keep = t.item().to_bool();
          adv.push_back({dim, empty_tensor({keep ? 1 : 0}, ScalarType::Int64), 1});
          if (keep) ember::fill_(adv.back().index, Scalar(int64_t(0)));
          ++dim;
          continue;
        }
        for (int64_t d = 0; d < t.dim(); ++d)
          EMBER_CHECK(dim + d < r.view.dim() && t.sizes()[d] == r.view.sizes()[dim + d], Index,
                      "The shape of the mask ", t.sizes(), " at index ", d,
                      " does not match the shape of the indexed tensor ", r.view.sizes(), " at index ", dim + d);
        adv.push_back({dim, t, t.dim()});
        dim += t.dim();
        self_dim += t.dim();
      } else {
        EMBER_CHECK(t.dtype() == ScalarType::Int64 || t.dtype() == ScalarType::Int32, Index,
                    "tensors used as indices must be long, int, byte or bool tensors");
        adv.push_back({dim++, t, 1});
        ++self_dim;
      }
    }
  }
  if (!adv.empty()) {
    r.has_advanced = true;
    int64_t covered = 0;  // dims of r.view the list stands for so far
    for (const Advanced& a : adv) {
      for (; covered < a.dim; ++covered) r.advanced.push_back(Tensor());
      r.advanced.push_back(a.index);
      covered += a.span;
    }
  }
  return r;
}

}  // namespace

PyObject* tensor_getitem(PyObject* self, PyObject* index) {
  EMBER_PY_BEGIN
  const Tensor& t = tensor_of(self);
  if (is_index_int(index)) {
    EMBER_CHECK(t.dim() > 0, Index, "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
                "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number");
    int64_t idx = arg_int(index), size = t.sizes()[0];
    EMBER_CHECK(idx >= -size && idx < size, Index, "index ", idx, " is out of bounds for dimension 0 with size ", size);
    return wrap(ember::select(t, 0, idx));
  }
  Indexed r = apply_index(t, index);
  if (r.has_advanced)
    return wrap(run_op(work_of(r.view) + work_of(r.advanced), [&] { return ember::index(r.view, r.advanced); }));
  if (r.view.is_same(t)) return wrap(ember::view(t, t.sizes()));  // x[...] is a new view
  return wrap(r.view);
  EMBER_PY_END
}

int tensor_setitem(PyObject* self, PyObject* index, PyObject* value) {
  try {
    WarningScope warnings;
    if (!value) { PyErr_SetString(PyExc_TypeError, "Tensor does not support item deletion"); return -1; }
    const Tensor& t = tensor_of(self);
    Indexed r = apply_index(t, index);
    // Written with the GIL released when large (the view's size is the work; `value` is read as a tensor first).
    if (r.has_advanced) {
      // Through fill_, so t[idx] = 1000 on int8 raises the overflow error, as in PyTorch.
      Tensor v = is_tensor(value) ? tensor_of(value) : ember::fill_(empty_tensor({}, t.dtype()), arg_scalar(value));
      run_op(work_of(r.view) + work_of(v), [&] { ember::index_put_(r.view, r.advanced, v, false); });
    } else if (is_tensor(value)) {
      const Tensor& v = tensor_of(value);
      run_op(work_of(r.view), [&] { ember::copy_(r.view, v, false); });
    } else if (is_number(value)) {
      Scalar v = arg_scalar(value);
      // PyTorch copies the number in (a[:] = 1 on an expanded `a` raises), though fill_ itself allows it.
      check_no_internal_overlap(r.view, "copy_");
      run_op(work_of(r.view), [&] { ember::fill_(r.view, v); });
    } else {
      Tensor v = tensor_from_data(value);
      run_op(work_of(r.view), [&] { ember::copy_(r.view, v, false); });
    }
    return 0;
  } catch (const PythonError&) {
    return -1;
  } catch (const std::exception& e) {
    set_python_error(e);
    return -1;
  }
}

}  // namespace ember::python
