#include "options.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "convert.h"
#include "errors.h"

namespace memkv::python {
namespace {

constexpr std::string_view kCall = "memkv.Client";

std::string StringOption(py::handle value, const char* name) {
  if (!PyUnicode_Check(value.ptr())) throw py::type_error(std::string(kCall) + ": " + name + " must be a str");
  return value.cast<std::string>();
}

uint32_t U32Option(py::handle value, const char* name) {
  if (!PyLong_Check(value.ptr()) || PyBool_Check(value.ptr())) {
    throw py::type_error(std::string(kCall) + ": " + name + " must be an int");
  }
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(value.ptr(), &overflow);
  if (overflow != 0 || v < 0 || v > UINT32_MAX) {
    ThrowInvalidArgument(kCall, std::string(name) + " " + py::str(value).cast<std::string>() +
                                    " is out of range 0..4294967295");
  }
  return static_cast<uint32_t>(v);
}

std::string_view Trim(std::string_view text) {
  const size_t first = text.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  return text.substr(first, text.find_last_not_of(" \t") - first + 1);
}

// A list of str, or one str of comma-separated items (as MEMKV_SERVERS is).
std::vector<std::string> ListOption(py::handle value, const char* name) {
  std::vector<std::string> out;
  if (PyUnicode_Check(value.ptr())) {
    const std::string text = value.cast<std::string>();
    for (size_t start = 0; start <= text.size();) {
      const size_t end = std::min(text.find(',', start), text.size());
      const std::string_view item = Trim(std::string_view(text).substr(start, end - start));
      if (!item.empty()) out.emplace_back(item);
      start = end + 1;
    }
    return out;
  }
  if (PyBytes_Check(value.ptr()) || !PySequence_Check(value.ptr())) {
    throw py::type_error(std::string(kCall) + ": " + name + " must be a list of str or a comma-separated str");
  }
  for (py::handle item : py::reinterpret_borrow<py::sequence>(value)) out.push_back(StringOption(item, name));
  return out;
}

// A Python value as the option's text: str as is, int in decimal, a list of
// str (list options) as its entries. Type errors name the option.
void SetOption(ClientOptions& options, std::string_view name, py::handle value) {
  if (value.is_none()) return;
  const std::string n(name);
  if (name == "log_callback") return void(options.log_callback = LogCallbackFromPython(value));
  if (name == "identity") {  // a memkv.CacheIdentity: its identity_* options
    if (!py::hasattr(value, "options")) throw py::type_error(std::string(kCall) + ": identity must be a memkv.CacheIdentity");
    for (auto [field, field_value] : py::dict(value.attr("options")())) {
      SetOption(options, py::str(field).cast<std::string>(), field_value);
    }
    return;
  }
  if (name == "log_level" && PyLong_Check(value.ptr()) && !PyBool_Check(value.ptr())) {
    // An int level (memkv.LOG_*) goes through as is: Client::Create checks it.
    return void(options.log_level = static_cast<ClientLogLevel>(U32Option(value, "log_level")));
  }
  const ClientOptionInfo* info = FindClientOption(name);
  if (info == nullptr) {
    std::string names;
    for (const ClientOptionInfo& o : ClientOptionTable()) names += std::string(o.name) + ", ";
    throw py::type_error(std::string(kCall) + ": unknown option '" + n + "'; allowed: " + names + "log_callback");
  }
  Status s;
  if (info->is_list) {  // a list, or a comma-separated str (blank entries dropped, as before)
    const std::vector<std::string> items = ListOption(value, n.c_str());
    s = SetClientOptionList(&options, name, items);
  } else if (PyUnicode_Check(value.ptr()) && info->type == "integer") {
    throw py::type_error(std::string(kCall) + ": " + n + " must be an int");
  } else if (PyUnicode_Check(value.ptr())) {
    s = SetClientOption(&options, name, value.cast<std::string>());
  } else if (PyFloat_Check(value.ptr()) && info->type == "number") {
    s = SetClientOption(&options, name, py::str(value).cast<std::string>());  // repr: round-trips
  } else if (PyLong_Check(value.ptr()) && !PyBool_Check(value.ptr())) {
    // In decimal through the row's setter, so that -1 or 2**40 is refused
    // with the option's range, as the same text from MEMKV_* would be.
    s = SetClientOption(&options, name, py::str(value).cast<std::string>());
  } else {
    throw py::type_error(std::string(kCall) + ": " + n + " must be a str" +
                         (info->type.find("integer") != std::string_view::npos ? " or an int" : ""));
  }
  if (!s.ok()) ThrowInvalidArgument(kCall, s.message());
}

// SetOption, with the exception it raises (memkv.InvalidArgument or
// TypeError) given an `option` attribute naming the option, so a caller that
// gathered options from several places (the engine adapters) can say where
// the bad one came from without reading the message.
void SetNamedOption(ClientOptions& options, const std::string& name, py::handle value) {
  try {
    SetOption(options, name, value);
  } catch (py::error_already_set& e) {
    e.value().attr("option") = name;
    throw;
  } catch (const py::type_error& e) {
    py::object error = py::reinterpret_borrow<py::object>(PyExc_TypeError)(e.what());
    error.attr("option") = name;
    PyErr_SetObject(PyExc_TypeError, error.ptr());
    throw py::error_already_set();
  }
}

}  // namespace

ClientOptions OptionsFromPython(py::handle servers, py::handle auth_key, const py::kwargs& options) {
  ClientOptions out;
  SetNamedOption(out, "servers", servers);
  SetNamedOption(out, "auth_key", auth_key);
  for (auto [name, value] : options) SetNamedOption(out, py::str(name).cast<std::string>(), value);
  return out;
}

py::list ClientOptionsToPython() {
  py::list out;
  for (const ClientOptionInfo& info : ClientOptionTable()) {
    py::dict row;
    row["name"] = std::string(info.name);
    row["env"] = std::string(info.env);
    row["type"] = std::string(info.type);
    row["default"] = std::string(info.default_text);
    row["allowed"] = std::string(info.allowed);
    row["doc"] = std::string(info.doc);
    row["is_list"] = info.is_list;
    row["required"] = info.required;
    out.append(row);
  }
  return out;
}

py::dict OptionTextsToPython(const ClientOptions& options) {
  py::dict out;
  for (const ClientOptionInfo& info : ClientOptionTable()) {
    out[py::str(std::string(info.name))] = Utf8Lossy(ClientOptionText(options, info.name));
  }
  return out;
}

ClientLogCallback LogCallbackFromPython(py::handle callable) {
  if (!PyCallable_Check(callable.ptr())) throw py::type_error(std::string(kCall) + ": log_callback must be callable");
  // The client copies and destroys its std::function on threads that may not
  // hold the GIL, so the callable's reference is shared by a shared_ptr whose
  // last owner takes the GIL to drop it.
  std::shared_ptr<py::object> fn(new py::object(py::reinterpret_borrow<py::object>(callable)), [](py::object* p) {
    py::gil_scoped_acquire gil;
    delete p;
  });
  return [fn](ClientLogLevel level, std::string_view component, std::string_view message) {
    py::gil_scoped_acquire gil;
    // Nothing may unwind into the client's code.
    try {
      (*fn)(static_cast<int>(level), Utf8Lossy(component), Utf8Lossy(message));
    } catch (py::error_already_set& e) {
      e.discard_as_unraisable("memkv log_callback");
    } catch (...) {
      PyErr_SetString(PyExc_RuntimeError, "memkv log_callback: C++ exception while calling it");
      PyErr_WriteUnraisable(fn->ptr());
    }
  };
}

}  // namespace memkv::python
