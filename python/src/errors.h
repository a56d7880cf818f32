// python/src/errors.h: memkv::Status -> the memkv.Error exceptions.
//
// The exception classes are pure Python (memkv/_errors.py, one per status
// code, each carrying the numeric .code of the wire and C API); this file
// looks them up once at import and raises them. Every function here needs the
// GIL.
#ifndef MEMKV_PYTHON_ERRORS_H_
#define MEMKV_PYTHON_ERRORS_H_

#include <pybind11/pybind11.h>

#include <string>
#include <string_view>

#include "memkv/status.h"

namespace memkv::python {

namespace py = pybind11;

// Reads the classes from memkv._errors (its _BY_CODE table and Error). Called
// once, from the module's initialisation.
void InitErrors(py::module_ errors);

// The exception object for a non-Ok `status`, its message prefixed with the
// Python call ("memkv.Client.put: ..."). An unknown code gives memkv.Error.
py::object ErrorFor(const Status& status, std::string_view call);

// Raises ErrorFor(status, call) as a C++ exception pybind11 passes on.
[[noreturn]] void ThrowStatus(const Status& status, std::string_view call);

// Raises memkv.InvalidArgument (also a ValueError) for a bad Python argument.
[[noreturn]] void ThrowInvalidArgument(std::string_view call, const std::string& message);

// Raises `status` unless it is Ok.
inline void Check(const Status& status, std::string_view call) {
  if (!status.ok()) ThrowStatus(status, call);
}

}  // namespace memkv::python

#endif  // MEMKV_PYTHON_ERRORS_H_
