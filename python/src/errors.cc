#include "errors.h"

#include "convert.h"

namespace memkv::python {
namespace {

// Owned references, taken at import and never dropped: the module cannot be
// unloaded, and dropping them at interpreter exit could run after Python.
PyObject* g_base = nullptr;     // memkv.Error
PyObject* g_by_code = nullptr;  // memkv._errors._BY_CODE: {code: class}

}  // namespace

void InitErrors(py::module_ errors) {
  g_base = py::object(errors.attr("Error")).release().ptr();
  g_by_code = py::object(errors.attr("_BY_CODE")).release().ptr();
}

py::object ErrorFor(const Status& status, std::string_view call) {
  const int code = static_cast<int>(status.code());
  PyObject* cls = PyDict_GetItem(g_by_code, py::int_(code).ptr());  // borrowed
  py::handle type = cls != nullptr ? py::handle(cls) : py::handle(g_base);
  std::string message(call);
  message += ": ";
  message += status.message();
  return type(Utf8Lossy(message), code);
}

void ThrowStatus(const Status& status, std::string_view call) {
  py::object error = ErrorFor(status, call);
  PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(error.ptr())), error.ptr());
  throw py::error_already_set();
}

void ThrowInvalidArgument(std::string_view call, const std::string& message) {
  ThrowStatus(InvalidArgument(message), call);
}

}  // namespace memkv::python
