#pragma once
// A Python exception carried through C++ frames: Python code called from
// inside an op (a trace handler) raised, and the op may be running without
// the GIL, so the error travels as a C++ exception until a binding restores it
// (set_python_error, or pybind11's translator for hand-bound functions).
#include <Python.h>

#include <exception>
#include <memory>
#include <string>

namespace ember::python {

class PythonException : public std::exception {
 public:
  // Takes the current Python error; call with the GIL held and an error set.
  PythonException() {
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    PyErr_NormalizeException(&type, &value, &traceback);
    if (traceback) PyException_SetTraceback(value, traceback);
    Py_XDECREF(type);
    Py_XDECREF(traceback);
    PyObject* text = PyObject_Str(value);
    const char* utf8 = text ? PyUnicode_AsUTF8(text) : nullptr;
    what_ = std::string(Py_TYPE(value)->tp_name) + ": " + (utf8 ? utf8 : "");
    Py_XDECREF(text);
    PyErr_Clear();  // from str() failing, if it did
    error_ = std::shared_ptr<PyObject>(value, [](PyObject* e) {
      PyGILState_STATE gil = PyGILState_Ensure();  // the last copy may go where the GIL is not held
      Py_DECREF(e);
      PyGILState_Release(gil);
    });
  }
  const char* what() const noexcept override { return what_.c_str(); }
  // Makes it the current Python error again; GIL held.
  void restore() const {
    PyObject* e = error_.get();
    Py_INCREF(Py_TYPE(e));
    Py_INCREF(e);
    PyErr_Restore((PyObject*)Py_TYPE(e), e, PyException_GetTraceback(e));
  }

 private:
  std::shared_ptr<PyObject> error_;
  std::string what_;
};

}  // namespace ember::python
