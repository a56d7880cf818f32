#include "convert.h"

#include <stdexcept>
#include <string>

#include "errors.h"

namespace memkv::python {
namespace {

std::string Named(std::string_view call, const ArgName& what, std::string_view rule, py::handle got) {
  std::string message(call);
  message += ": ";
  message += what.ToString();
  message += rule;
  message += ", got ";
  message += Py_TYPE(got.ptr())->tp_name;
  return message;
}

// Neither a str nor bytes counts as a sequence of items here: "abc" passed
// as keys is a mistake, not three one-letter keys.
bool IsItemSequence(py::handle object) {
  PyObject* o = object.ptr();
  return !PyUnicode_Check(o) && !PyBytes_Check(o) && PySequence_Check(o);
}

}  // namespace

std::string ArgName::ToString() const {
  std::string out(name);
  if (index >= 0) out += "[" + std::to_string(index) + "]";
  return out;
}

py::str Utf8Lossy(std::string_view text) {
  PyObject* s = PyUnicode_DecodeUTF8(text.data(), static_cast<Py_ssize_t>(text.size()), "replace");
  if (s == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(s);
}

std::string_view KeyView(py::handle key, std::string_view call, ArgName what) {
  PyObject* k = key.ptr();
  if (PyUnicode_Check(k)) {
    Py_ssize_t size = 0;
    const char* data = PyUnicode_AsUTF8AndSize(k, &size);  // cached in the str: no copy after the first
    if (data == nullptr) throw py::error_already_set();   // lone surrogates
    return {data, static_cast<size_t>(size)};
  }
  if (PyBytes_Check(k)) return {PyBytes_AS_STRING(k), static_cast<size_t>(PyBytes_GET_SIZE(k))};
  throw py::type_error(Named(call, what, " must be str or bytes", key));
}

KeyList::KeyList(py::handle keys, std::string_view call) {
  if (!IsItemSequence(keys)) throw py::type_error(Named(call, {"keys"}, " must be a sequence of str or bytes", keys));
  PyObject* tuple = PySequence_Tuple(keys.ptr());
  if (tuple == nullptr) throw py::error_already_set();
  tuple_ = py::reinterpret_steal<py::tuple>(tuple);
  const Py_ssize_t n = PyTuple_GET_SIZE(tuple);
  views_.reserve(static_cast<size_t>(n));
  for (Py_ssize_t i = 0; i < n; ++i) views_.push_back(KeyView(PyTuple_GET_ITEM(tuple, i), call, {"keys", i}));
}

py::object FastSequence(py::handle sequence, std::string_view call, ArgName what) {
  if (!IsItemSequence(sequence)) throw py::type_error(Named(call, what, " must be a sequence", sequence));
  PyObject* fast = PySequence_Fast(sequence.ptr(), "not a sequence");
  if (fast == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(fast);
}

HeldBuffers::~HeldBuffers() {
  for (Py_buffer& view : views_) PyBuffer_Release(&view);
}

std::span<uint8_t> HeldBuffers::Acquire(py::handle object, Access access, std::string_view call, ArgName what) {
  if (views_.size() == views_.capacity()) {
    throw std::logic_error("HeldBuffers: more buffers than reserved");  // a bug in this module
  }
  if (!PyObject_CheckBuffer(object.ptr())) {
    throw py::type_error(Named(
        call, what, " must support the buffer protocol (bytes, bytearray, memoryview, mmap, numpy array)", object));
  }
  const bool write = access == Access::kWrite;
  Py_buffer& view = views_.emplace_back();
  if (PyObject_GetBuffer(object.ptr(), &view, PyBUF_C_CONTIGUOUS | (write ? PyBUF_WRITABLE : 0)) != 0) {
    views_.pop_back();
    // The exporter's reason ("ndarray is not C-contiguous", "Object is not
    // writable.") goes into the message of the error that replaces it.
    py::error_already_set reason;
    ThrowInvalidArgument(call, what.ToString() + (write ? " must be a writable" : " must be a") +
                                   " C-contiguous buffer: " + reason.what());
  }
  return {static_cast<uint8_t*>(view.buf), static_cast<size_t>(view.len)};
}

std::span<uint8_t> RawSpan(uintptr_t address, size_t length, std::string_view call, ArgName what) {
  if (address == 0 && length != 0) {
    ThrowInvalidArgument(call, what.ToString() + " is a null address with length " + std::to_string(length));
  }
  return {reinterpret_cast<uint8_t*>(address), length};
}

size_t SizeArg(py::handle value, std::string_view call, ArgName what) {
  // Anything with __index__ (an int, a numpy integer), but not a bool.
  if (PyBool_Check(value.ptr()) || !PyIndex_Check(value.ptr())) {
    throw py::type_error(Named(call, what, " must be an int", value));
  }
  const py::object index = py::reinterpret_steal<py::object>(PyNumber_Index(value.ptr()));
  if (!index) throw py::error_already_set();
  const size_t size = PyLong_AsSize_t(index.ptr());
  if (size == static_cast<size_t>(-1) && PyErr_Occurred()) {
    PyErr_Clear();
    ThrowInvalidArgument(call, what.ToString() + " " + py::str(index).cast<std::string>() +
                                   " is out of range 0..2**64-1");
  }
  return size;
}

std::vector<size_t> Lengths(py::handle lengths, size_t count, std::string_view call) {
  if (!IsItemSequence(lengths)) return std::vector<size_t>(count, SizeArg(lengths, call, {"lengths"}));
  py::object items = FastSequence(lengths, call, {"lengths"});
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(items.ptr());
  if (static_cast<size_t>(n) != count) {
    ThrowInvalidArgument(call, std::to_string(count) + " keys but " + std::to_string(n) + " lengths");
  }
  std::vector<size_t> out(count);
  for (Py_ssize_t i = 0; i < n; ++i) out[i] = SizeArg(PySequence_Fast_GET_ITEM(items.ptr(), i), call, {"lengths", i});
  return out;
}

}  // namespace memkv::python
