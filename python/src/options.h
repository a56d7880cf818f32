// python/src/options.h: memkv.Client(...)'s arguments -> ClientOptions.
#ifndef MEMKV_PYTHON_OPTIONS_H_
#define MEMKV_PYTHON_OPTIONS_H_

#include <pybind11/pybind11.h>

#include "memkv/client.h"

namespace memkv::python {

namespace py = pybind11;

// ClientOptions from memkv.Client(servers, auth_key, **options): every
// ClientOptions field by its name (auth_key for auth_key_hex); None keeps the
// default. Wrong types raise TypeError and out-of-range numbers or unknown
// level names memkv.InvalidArgument, both naming the option; addresses, the
// key's format and the finer ranges are checked by Client::Create, which
// names the option too. Needs the GIL.
ClientOptions OptionsFromPython(py::handle servers, py::handle auth_key, const py::kwargs& options);

// Wraps a Python callable(level: int, component: str, message: str) as the
// client's log callback. It takes the GIL for each line; an exception it
// raises is reported through sys.unraisablehook and goes no further.
ClientLogCallback LogCallbackFromPython(py::handle callable);

}  // namespace memkv::python

#endif  // MEMKV_PYTHON_OPTIONS_H_
