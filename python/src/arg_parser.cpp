// Argument parsing for generated bindings: PyTorch's calling conventions
// (positional or keyword, defaults, `x.view(2, 3)` varargs sizes, numbers
// where tensors are expected) checked against specs the generator writes.
#include <cstring>
#include <exception>
#include <new>

#include "ember/forward_ad.h"
#include "python_exception.h"
#include "python_support.h"

namespace ember::python {
namespace {

const char* type_label(ArgType t) {
  switch (t) {
    case ArgType::Tensor: return "Tensor";
    case ArgType::TensorList: return "tuple of Tensors";
    case ArgType::OptTensorList: return "tuple of Tensors or None";
    case ArgType::Int: return "int";
    case ArgType::IntList: return "tuple of ints";
    case ArgType::Float: return "float";
    case ArgType::Bool: return "bool";
    case ArgType::Str: return "str";
    case ArgType::Scalar: return "Number";
    case ArgType::ScalarType: return "dtype";
    case ArgType::Device: return "device";
    case ArgType::Generator: return "Generator";
  }
  return "?";
}

std::string obj_label(PyObject* o) { return is_tensor(o) ? "Tensor" : Py_TYPE(o)->tp_name; }

bool is_int(PyObject* o) { return !is_tensor(o) && (PyLong_Check(o) || (PyIndex_Check(o) && !PyFloat_Check(o))); }

// While set, a Scalar takes only a 0-d tensor that needs no gradient (PyTorch's rule), so that
// clamp(x, t) with a 1-d or differentiable t reaches clamp.Tensor; the lenient retry keeps the
// "only supports 0-dimension value tensor" error of Scalar-only ops (fill_).
thread_local bool t_strict_scalars = false;

// A 0-d tensor a Scalar may take in the strict pass: no gradient and no forward-mode tangent.
bool plain_0d(const Tensor& t) {
  return t.dim() == 0 && !t.requires_grad() && !(forward_ad::maybe_active() && forward_ad::wanted({&t}));
}

bool check_type(PyObject* o, const ParamSpec& p) {
  if (o == Py_None) return p.optional;
  switch (p.type) {
    case ArgType::Tensor: return is_tensor(o) || (p.allow_number && is_number(o));
    case ArgType::TensorList:
    case ArgType::OptTensorList: {
      if (!PyList_Check(o) && !PyTuple_Check(o)) return false;
      Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
      PyObject** items = PySequence_Fast_ITEMS(o);
      for (Py_ssize_t i = 0; i < n; ++i)
        if (!is_tensor(items[i]) && !(p.type == ArgType::OptTensorList && items[i] == Py_None)) return false;
      return true;
    }
    case ArgType::Int: return is_int(o) && !PyBool_Check(o);
    case ArgType::IntList: {
      if (is_int(o)) return p.list_size > 0;
      if (!PyList_Check(o) && !PyTuple_Check(o)) return false;
      Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
      PyObject** items = PySequence_Fast_ITEMS(o);
      for (Py_ssize_t i = 0; i < n; ++i) if (!is_int(items[i])) return false;
      return true;
    }
    case ArgType::Float: return is_number(o) && !PyBool_Check(o);
    case ArgType::Bool: return PyBool_Check(o);
    case ArgType::Str: return PyUnicode_Check(o);
    case ArgType::Scalar:
      return is_number(o) || (is_tensor(o) && (!t_strict_scalars || plain_0d(tensor_of(o))));
    case ArgType::ScalarType: return PyObject_TypeCheck(o, DTypeType);
    case ArgType::Device: return PyUnicode_Check(o) || PyObject_TypeCheck(o, DeviceType) || (is_int(o) && !PyBool_Check(o));
    case ArgType::Generator: return PyObject_TypeCheck(o, GeneratorType);
  }
  return false;
}

// The op being parsed, for messages raised while converting its arguments.
thread_local const char* t_current_op = "";

// Keeps a tuple of gathered varargs sizes alive until the converters have run.
thread_local PyObject* t_varargs = nullptr;

bool try_match(const OverloadSpec& ov, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames, PyObject** out,
               std::string* why) {
  const int np = ov.nparams;
  for (int i = 0; i < np; ++i) out[i] = nullptr;
  int pos = 0;  // next positional param
  Py_ssize_t a = 0;
  auto fail = [&](std::string msg) { if (why) *why = std::move(msg); return false; };
  // `x.view(2, 3)`: a leading int[] takes all leading int arguments when it is the only
  // positional parameter, as PyTorch's parser (so `x.roll(1, 0)` is shifts=1, dims=0).
  if (np > 0 && nargs > 0 && !ov.params[0].kw_only && ov.params[0].type == ArgType::IntList && is_int(args[0]) &&
      (np == 1 || ov.params[1].kw_only) &&
      !(ov.params[0].list_size > 0 && nargs == 1)) {
    Py_ssize_t k = 0;
    while (k < nargs && is_int(args[k]) && !PyBool_Check(args[k])) ++k;
    if (k > 1 || ov.params[0].list_size == 0) {
      PyObject* tup = PyTuple_New(k);
      for (Py_ssize_t i = 0; i < k; ++i) { Py_INCREF(args[i]); PyTuple_SET_ITEM(tup, i, args[i]); }
      Py_XDECREF(t_varargs);
      t_varargs = tup;
      out[0] = tup;
      pos = 1;
      a = k;
    }
  }
  for (; a < nargs; ++a, ++pos) {
    while (pos < np && out[pos]) ++pos;
    if (pos >= np || ov.params[pos].kw_only) {
      int npos = 0;
      for (int i = 0; i < np; ++i) npos += !ov.params[i].kw_only;
      return fail(str("takes ", npos, " positional argument", npos == 1 ? "" : "s", " but ", nargs, " were given"));
    }
    out[pos] = args[a];
  }
  Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  for (Py_ssize_t k = 0; k < nkw; ++k) {
    const char* key = PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwnames, k));
    int idx = -1;
    for (int i = 0; i < np; ++i)
      if (!std::strcmp(ov.params[i].name, key) || (!std::strcmp(key, "input") && !std::strcmp(ov.params[i].name, "self")))
        idx = i;
    if (idx < 0) return fail(str("got an unexpected keyword argument '", key, "'"));
    if (out[idx]) return fail(str("got multiple values for argument '", key, "'"));
    out[idx] = args[nargs + k];
  }
  for (int i = 0; i < np; ++i) {
    const ParamSpec& p = ov.params[i];
    if (!out[i]) {
      if (!p.has_default) return fail(str("missing required argument '", p.name, "'"));
      continue;
    }
    if (!check_type(out[i], p))
      return fail(str("argument '", p.name, "' must be ", type_label(p.type), ", not ", obj_label(out[i])));
  }
  return true;
}

}  // namespace

int parse_args(const char* name, const OverloadSpec* overloads, int n, PyObject* const* args, Py_ssize_t nargs,
               PyObject* kwnames, PyObject** out) {
  t_current_op = name;
  if (n > 1) {
    t_strict_scalars = true;
    for (int k = 0; k < n; ++k)
      if (try_match(overloads[k], args, nargs, kwnames, out, nullptr)) {
        t_strict_scalars = false;
        return k;
      }
    t_strict_scalars = false;
  }
  for (int k = 0; k < n; ++k)
    if (try_match(overloads[k], args, nargs, kwnames, out, nullptr)) return k;
  std::string msg;
  if (n == 1) {
    std::string why;
    try_match(overloads[0], args, nargs, kwnames, out, &why);
    msg = str(name, "(): ", why, "\nexpected: ", overloads[0].display);
  } else {
    std::string got;
    for (Py_ssize_t i = 0; i < nargs; ++i) got += (i ? ", " : "") + obj_label(args[i]);
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t k = 0; k < nkw; ++k)
      got += ((nargs + k) ? ", " : "") + std::string(PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwnames, k))) + "=" +
             obj_label(args[nargs + k]);
    msg = str(name, "() received an invalid combination of arguments - got (", got, "), but expected one of:");
    for (int k = 0; k < n; ++k) msg += str("\n * ", overloads[k].display);
  }
  PyErr_SetString(PyExc_TypeError, msg.c_str());
  throw PythonError{};
}

bool is_number(PyObject* o) {
  if (is_tensor(o)) return false;
  // Arrays implement __index__/__float__ too, but they are not numbers.
  return PyLong_Check(o) || PyFloat_Check(o) || PyBool_Check(o) ||
         ((PyIndex_Check(o) || (Py_TYPE(o)->tp_as_number && Py_TYPE(o)->tp_as_number->nb_float)) &&
          !PySequence_Check(o));
}

bool is_ndarray(PyObject* o) {
  return !is_tensor(o) && PySequence_Check(o) && PyObject_HasAttrString(o, "__array_interface__");
}

static Scalar number_to_scalar(PyObject* o) {
  if (PyBool_Check(o)) return Scalar(o == Py_True);
  if (PyLong_Check(o)) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow) EMBER_FAIL(Runtime, "Overflow when unpacking long");
    return Scalar((int64_t)v);
  }
  if (PyFloat_Check(o)) return Scalar(PyFloat_AS_DOUBLE(o));
  if (is_tensor(o)) {
    const Tensor& t = tensor_of(o);
    EMBER_CHECK(t.dim() == 0, Runtime, t_current_op, " only supports 0-dimension value tensor but got tensor with ",
                t.dim(), " dimensions.");
    return t.item();
  }
  // NumPy scalars and other number-likes: integers through __index__, else __float__.
  if (PyIndex_Check(o) && !PyFloat_Check(o)) {
    PyObject* i = PyNumber_Index(o);
    if (!i) throw PythonError{};
    long long v = PyLong_AsLongLong(i);
    Py_DECREF(i);
    const char* tn = Py_TYPE(o)->tp_name;
    if (std::strstr(tn, "bool")) return Scalar(v != 0);
    return Scalar((int64_t)v);
  }
  double d = PyFloat_AsDouble(o);
  if (d == -1.0 && PyErr_Occurred()) throw PythonError{};
  return Scalar(d);
}

Tensor arg_tensor(PyObject* o, bool allow_number) {
  if (is_tensor(o)) return tensor_of(o);
  if (allow_number && is_number(o)) return wrap_number(number_to_scalar(o));
  EMBER_FAIL(Type, "expected a Tensor, got ", obj_label(o));
}
Tensor arg_opt_tensor(PyObject* o, bool allow_number) {
  return o == Py_None ? Tensor() : arg_tensor(o, allow_number);
}
TensorList arg_tensor_list(PyObject* o) {
  TensorList out;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
  PyObject** items = PySequence_Fast_ITEMS(o);
  out.reserve(n);
  for (Py_ssize_t i = 0; i < n; ++i) out.push_back(items[i] == Py_None ? Tensor() : tensor_of(items[i]));
  return out;
}
TensorList arg_opt_tensor_list(PyObject* o) { return arg_tensor_list(o); }
int64_t arg_int(PyObject* o) {
  long long v = PyLong_AsLongLong(o);
  if (v == -1 && PyErr_Occurred()) throw PythonError{};
  return v;
}
std::optional<int64_t> arg_opt_int(PyObject* o) {
  if (o == Py_None) return std::nullopt;
  return arg_int(o);
}
IntList arg_int_list(PyObject* o) {
  if (!PyList_Check(o) && !PyTuple_Check(o)) return IntList{arg_int(o)};
  Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
  PyObject** items = PySequence_Fast_ITEMS(o);
  IntList out(n);
  for (Py_ssize_t i = 0; i < n; ++i) out[i] = arg_int(items[i]);
  return out;
}
std::optional<IntList> arg_opt_int_list(PyObject* o) {
  if (o == Py_None) return std::nullopt;
  return arg_int_list(o);
}
double arg_double(PyObject* o) {
  double d = PyFloat_AsDouble(o);
  if (d == -1.0 && PyErr_Occurred()) throw PythonError{};
  return d;
}
std::optional<double> arg_opt_double(PyObject* o) {
  if (o == Py_None) return std::nullopt;
  return arg_double(o);
}
bool arg_bool(PyObject* o) { return o == Py_True; }
std::optional<bool> arg_opt_bool(PyObject* o) {
  if (o == Py_None) return std::nullopt;
  return o == Py_True;
}
std::string arg_str(PyObject* o) { return PyUnicode_AsUTF8(o); }
std::optional<std::string> arg_opt_str(PyObject* o) {
  if (o == Py_None) return std::nullopt;
  return arg_str(o);
}
Scalar arg_scalar(PyObject* o) { return number_to_scalar(o); }
std::optional<Scalar> arg_opt_scalar(PyObject* o) {
  if (o == Py_None) return std::nullopt;
  return number_to_scalar(o);
}
ScalarType arg_dtype(PyObject* o) { return reinterpret_cast<PyDType*>(o)->dtype; }
std::optional<ScalarType> arg_opt_dtype(PyObject* o) {
  if (o == Py_None) return std::nullopt;
  return arg_dtype(o);
}
Device arg_device(PyObject* o) {
  if (PyObject_TypeCheck(o, DeviceType)) return reinterpret_cast<PyDevice*>(o)->device;
  if (PyUnicode_Check(o)) return Device::parse(PyUnicode_AsUTF8(o));
  return Device(ember::DeviceType::CUDA, (int)arg_int(o));
}
std::optional<Device> arg_opt_device(PyObject* o) {
  if (o == Py_None) return default_factory_device();  // device=None given explicitly: only factories take a Device?
  return arg_device(o);
}
Generator* arg_generator(PyObject* o) {
  if (o == Py_None) return nullptr;
  return reinterpret_cast<PyGenerator*>(o)->gen;
}

PyObject* linalg_error_type = nullptr;

void set_python_error(const std::exception& e) {
  if (auto* py = dynamic_cast<const PythonException*>(&e)) {
    py->restore();
  } else if (auto* err = dynamic_cast<const Error*>(&e)) {
    PyObject* type = PyExc_RuntimeError;
    switch (err->kind) {
      case ErrorKind::Runtime: type = PyExc_RuntimeError; break;
      case ErrorKind::Type: type = PyExc_TypeError; break;
      case ErrorKind::Value: type = PyExc_ValueError; break;
      case ErrorKind::Index: type = PyExc_IndexError; break;
      case ErrorKind::NotImplemented: type = PyExc_NotImplementedError; break;
      case ErrorKind::ZeroDivision: type = PyExc_ZeroDivisionError; break;
      case ErrorKind::LinAlg: type = linalg_error_type ? linalg_error_type : PyExc_RuntimeError; break;
    }
    PyErr_SetString(type, err->what());
  } else if (dynamic_cast<const std::bad_alloc*>(&e)) {
    PyErr_SetString(PyExc_MemoryError, e.what());
  } else {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  }
}

WarningScope::~WarningScope() noexcept(false) {
  // A thread's own warnings are in the count it reads, so 0 means none here.
  if (pending_warning_count.load(std::memory_order_relaxed) == 0) return;
  std::vector<std::string>& pending = pending_warnings();
  if (pending.size() <= start_) return;
  std::vector<std::string> mine(pending.begin() + (std::ptrdiff_t)start_, pending.end());
  pending.resize(start_);
  pending_warning_count.fetch_sub(mine.size(), std::memory_order_relaxed);
  if (std::uncaught_exceptions()) return;
  for (const std::string& m : mine)
    if (PyErr_WarnEx(PyExc_UserWarning, m.c_str(), 1) < 0) throw PythonError();
}

}  // namespace ember::python
