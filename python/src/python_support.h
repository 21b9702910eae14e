#pragma once
// The glue every binding uses: the Python Tensor object, argument parsing
// against generated specs, conversions, and C++ -> Python exception mapping.
#include <Python.h>

#include <algorithm>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "ember/errors.h"
#include "ember/generator.h"
#include "ember/tensor.h"
#include "ember/thresholds.h"

namespace ember::python {

// ---------------------------------------------------------------- objects
struct PyTensor {
  PyObject_HEAD
  Tensor tensor;
  PyObject* dict;
  PyObject* weakrefs;
};
// _C.TensorBase, the C type every tensor object is an instance of; new tensor
// objects are made of TensorClass, the Python ember.Tensor (a subclass of it)
// once ember/_tensor.py has set it (_C._set_tensor_class), else of TensorBase.
extern PyTypeObject* TensorType;
extern PyTypeObject* TensorClass;

struct PyDType {
  PyObject_HEAD
  ScalarType dtype;
};
extern PyTypeObject* DTypeType;
PyObject* dtype_object(ScalarType t);  // borrowed

struct PyDevice {
  PyObject_HEAD
  Device device;
};
extern PyTypeObject* DeviceType;
PyObject* device_object(Device d);  // new reference

struct PyGenerator {
  PyObject_HEAD
  Generator* gen;
  bool owned;
};
extern PyTypeObject* GeneratorType;
PyObject* generator_object(Generator* gen);  // new reference to a generator it does not own
PyObject* generator_owner(Generator* gen);   // borrowed: the ember.Generator that owns `gen`, or nullptr

// ember.UntypedStorage: the bytes a tensor and its views share. One Python
// object per live storage, so pickle's and deepcopy's memos see views' storage as one.
struct PyStorage {
  PyObject_HEAD
  Ref<StorageImpl> storage;
};
extern PyTypeObject* StorageType;
PyObject* storage_object(const Ref<StorageImpl>& storage);  // new reference

inline bool is_tensor(PyObject* o) { return PyObject_TypeCheck(o, TensorType); }
inline const Tensor& tensor_of(PyObject* o) { return reinterpret_cast<PyTensor*>(o)->tensor; }
// A new Python object for `t` (None when undefined).
PyObject* wrap(Tensor t);
PyObject* wrap(const TensorList& ts);
// `receiver` itself when `t` is its tensor, else a new object.
PyObject* wrap_same(Tensor t, PyObject* receiver);
PyObject* wrap(const std::tuple<Tensor, Tensor>& ts, PyTypeObject* type = nullptr);
inline PyObject* wrap_tuple(const std::tuple<Tensor, Tensor>& ts, PyTypeObject* type) { return wrap(ts, type); }
PyObject* wrap(const std::tuple<Tensor, Tensor, Tensor>& ts, PyTypeObject* type = nullptr);
inline PyObject* wrap_tuple(const std::tuple<Tensor, Tensor, Tensor>& ts, PyTypeObject* type) { return wrap(ts, type); }
PyObject* wrap(const std::tuple<Tensor, Tensor, Tensor, Tensor>& ts, PyTypeObject* type = nullptr);
inline PyObject* wrap_tuple(const std::tuple<Tensor, Tensor, Tensor, Tensor>& ts, PyTypeObject* type) {
  return wrap(ts, type);
}
// Several results as a named tuple of `type` (a plain tuple without one); takes the references.
PyObject* wrap_items(PyObject* const* items, Py_ssize_t n, PyTypeObject* type);
// A named tuple type an op returns (ember.return_types.<op>), with PyTorch's repr; listed by return_types().
PyTypeObject* make_return_type(PyStructSequence_Desc* desc);
std::vector<PyTypeObject*>& return_types();
// Longer tuples of tensors (_rnn_fused_backward's eight gradients).
template <typename... T, std::enable_if_t<(sizeof...(T) > 4), int> = 0>
PyObject* wrap_tuple(const std::tuple<T...>& ts, PyTypeObject* type) {
  PyObject* items[sizeof...(T)];
  Py_ssize_t i = 0;
  std::apply([&](const auto&... t) { ((items[i++] = wrap(t)), ...); }, ts);
  return wrap_items(items, (Py_ssize_t)sizeof...(T), type);
}

// A generated op function: its method def (named by the op, as errors name it), the
// ember namespace it belongs to ("" for ember itself, "linalg", ...) and its name there.
struct OpFunction {
  const char* module;
  const char* name;
  PyMethodDef def;
};

// ---------------------------------------------------------------- parsing
enum class ArgType : uint8_t {
  Tensor, TensorList, OptTensorList, Int, IntList, Float, Bool, Str, Scalar, ScalarType, Device, Generator
};

struct ParamSpec {
  const char* name;
  ArgType type;
  bool optional;
  bool kw_only;
  bool has_default;
  bool allow_number;  // a Python number is accepted for a Tensor
  int list_size;      // int[1]: a lone int is accepted
};

struct OverloadSpec {
  const char* display;  // the signature shown in TypeErrors
  const ParamSpec* params;
  int nparams;
};

constexpr int kMaxParams = 24;  // _rnn_fused_jvp has 19

// Matches the call against each overload in turn; fills `out` with borrowed
// objects (nullptr where the default applies) and returns the overload index.
// Raises TypeError naming the accepted signatures when nothing matches.
int parse_args(const char* name, const OverloadSpec* overloads, int n, PyObject* const* args, Py_ssize_t nargs,
               PyObject* kwnames, PyObject** out);

// Thrown when a Python exception is already set.
struct PythonError {};

// Issues the warnings ember::warn recorded while a binding ran, when it returns
// (a warning the filters make an error raises it); an op that failed drops them.
class WarningScope {
 public:
  WarningScope() : start_(pending_warning_count.load(std::memory_order_relaxed) ? pending_warnings().size() : 0) {}
  WarningScope(const WarningScope&) = delete;
  ~WarningScope() noexcept(false);

 private:
  size_t start_;
};

Tensor arg_tensor(PyObject* o, bool allow_number = false);
Tensor arg_opt_tensor(PyObject* o, bool allow_number = false);
TensorList arg_tensor_list(PyObject* o);
TensorList arg_opt_tensor_list(PyObject* o);
int64_t arg_int(PyObject* o);
std::optional<int64_t> arg_opt_int(PyObject* o);
IntList arg_int_list(PyObject* o);
std::optional<IntList> arg_opt_int_list(PyObject* o);
double arg_double(PyObject* o);
std::optional<double> arg_opt_double(PyObject* o);
bool arg_bool(PyObject* o);
std::optional<bool> arg_opt_bool(PyObject* o);
std::string arg_str(PyObject* o);
std::optional<std::string> arg_opt_str(PyObject* o);
Scalar arg_scalar(PyObject* o);
std::optional<Scalar> arg_opt_scalar(PyObject* o);
ScalarType arg_dtype(PyObject* o);
std::optional<ScalarType> arg_opt_dtype(PyObject* o);
Device arg_device(PyObject* o);
std::optional<Device> arg_opt_device(PyObject* o);
// A factory's device=None: the thread's default (default_device.cpp), if one is set.
std::optional<Device> default_factory_device();
void set_default_factory_device(std::optional<Device> d);
void enter_device_context(Device d);
void exit_device_context();
Generator* arg_generator(PyObject* o);
bool is_number(PyObject* o);
// A NumPy array (not a NumPy scalar): converted like ember.tensor(data) where PyTorch accepts one.
bool is_ndarray(PyObject* o);
Tensor tensor_from_data(PyObject* data);

// ---------------------------------------------------------------- the GIL
// Elements an op's arguments hold: its work estimate for releasing the GIL.
// Capped at 2^56, so that the bindings may add up many estimates without overflow.
constexpr int64_t kWorkCap = int64_t(1) << 56;
inline int64_t work_of(const Tensor& t) { return t.defined() ? std::min(t.numel(), kWorkCap) : 0; }
inline int64_t work_of(const TensorList& ts) {
  int64_t n = 0;
  for (const Tensor& t : ts) n = std::min(n + work_of(t), kWorkCap);
  return n;
}
// A factory's work: the elements it makes (saturating; a bad size fails in the op).
inline int64_t work_of_size(const IntList& size) {
  int64_t n = 1;
  for (int64_t s : size) {
    if (s <= 0) return 0;
    if (__builtin_mul_overflow(n, s, &n)) return kWorkCap;
  }
  return n;
}

struct GilReleased {
  PyThreadState* state = PyEval_SaveThread();
  GilReleased() = default;
  GilReleased(const GilReleased&) = delete;
  ~GilReleased() { PyEval_RestoreThread(state); }
};

// Runs `op` (pure C++: no Python object may be touched) with the GIL released
// when `work` reaches thresholds::kGilReleaseWork; small ops keep it, as a
// release would cost more than it frees. A C++ exception leaves after the GIL
// is retaken, so EMBER_PY_END translates it safely.
template <typename F>
decltype(auto) run_op(int64_t work, F&& op) {
  if (work < thresholds::kGilReleaseWork) return op();
  GilReleased released;
  return op();
}

// Maps a C++ exception to the matching Python exception.
void set_python_error(const std::exception& e);
// _C._LinAlgError (a RuntimeError subclass, as torch._C._LinAlgError), raised for ErrorKind::LinAlg.
extern PyObject* linalg_error_type;

}  // namespace ember::python

#define EMBER_PY_BEGIN try { ::ember::python::WarningScope ember_warnings__;
#define EMBER_PY_END                                                        \
  }                                                                         \
  catch (const ::ember::python::PythonError&) { return nullptr; }           \
  catch (const std::exception& e) { ::ember::python::set_python_error(e); return nullptr; }
