// python/src/options.h: memkv.Client(...)'s arguments -> ClientOptions.
#ifndef MEMKV_PYTHON_OPTIONS_H_
#define MEMKV_PYTHON_OPTIONS_H_

#include <pybind11/pybind11.h>

#include "memkv/client.h"

namespace memkv::python {

namespace py = pybind11;

// ClientOptions from memkv.Client(servers, auth_key, **options): every
// option of the client option table (memkv/client.h) by its name, plus
// log_callback; None keeps the default. Values go through SetClientOption,
// so a bad one raises memkv.InvalidArgument in the table's wording, naming
// the option; a wrong type (a str for an integer option) raises TypeError.
// Either exception carries the option's name as its `option` attribute.
// Needs the GIL.
ClientOptions OptionsFromPython(py::handle servers, py::handle auth_key, const py::kwargs& options);

// memkv.client_options(): the client option table (ClientOptionTable), one
// dict per row in the docs' order, with the keys name, env, type, default,
// allowed, doc (str) and is_list, required (bool). Needs the GIL.
py::list ClientOptionsToPython();

// Client.options(): every table option's value as the text SetClientOption
// takes back (ClientOptionText), by name. Needs the GIL.
py::dict OptionTextsToPython(const ClientOptions& options);

// Wraps a Python callable(level: int, component: str, message: str) as the
// client's log callback. It takes the GIL for each line; an exception it
// raises is reported through sys.unraisablehook and goes no further.
ClientLogCallback LogCallbackFromPython(py::handle callable);

}  // namespace memkv::python

#endif  // MEMKV_PYTHON_OPTIONS_H_
