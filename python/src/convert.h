// python/src/convert.h: Python arguments -> what the C++ client takes, with
// no copy of keys or values.
//
// Keys are str (their UTF-8, which the str caches) or bytes; values and
// destinations are any object with the buffer protocol, or raw (address,
// length) pairs. Everything here runs with the GIL held; the views it returns
// stay valid while the owning object (KeyList, HeldBuffers, or the caller's
// argument) is alive, so a call may release the GIL while it uses them.
#ifndef MEMKV_PYTHON_CONVERT_H_
#define MEMKV_PYTHON_CONVERT_H_

#include <pybind11/pybind11.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace memkv::python {

namespace py = pybind11;

// Names an argument in error messages: "key", or "keys[3]" with an index.
// Formatted only when an error is raised, so naming costs nothing per item.
struct ArgName {
  std::string_view name;
  Py_ssize_t index = -1;
  std::string ToString() const;
};

// A str from bytes that may not be valid UTF-8 (server addresses, messages):
// bad sequences become U+FFFD instead of raising.
py::str Utf8Lossy(std::string_view text);

// The bytes of `key` (str: UTF-8; bytes: as is), valid while `key` lives.
// TypeError naming `what` ("key", "keys[3]") for any other type.
std::string_view KeyView(py::handle key, std::string_view call, ArgName what);

// The keys of a batch call. The caller's sequence is copied into a tuple
// first (one reference per key), so another thread that mutates a list while
// the call runs without the GIL cannot free a key under it.
class KeyList {
 public:
  KeyList(py::handle keys, std::string_view call);
  std::span<const std::string_view> views() const { return views_; }
  size_t size() const { return views_.size(); }

 private:
  py::tuple tuple_;
  std::vector<std::string_view> views_;
};

// Items of a sequence argument, as a fast sequence (a list or tuple is not
// copied). TypeError naming `what` when it is not a sequence.
py::object FastSequence(py::handle sequence, std::string_view call, ArgName what);

enum class Access { kRead, kWrite };

// Buffers exported by Python objects for the duration of one call (or of a
// memory registration): each is held, so its memory stays alive and in place
// (a bytearray cannot be resized while exported), until this is destroyed,
// which must happen with the GIL held.
class HeldBuffers {
 public:
  explicit HeldBuffers(size_t capacity) { views_.reserve(capacity); }
  ~HeldBuffers();
  HeldBuffers(const HeldBuffers&) = delete;
  HeldBuffers& operator=(const HeldBuffers&) = delete;

  // The memory of `object`: C-contiguous, and writable for kWrite. TypeError
  // when it has no buffer protocol, memkv.InvalidArgument when its buffer is
  // not contiguous or not writable; both name `what`. At most `capacity`
  // acquisitions.
  std::span<uint8_t> Acquire(py::handle object, Access access, std::string_view call, ArgName what);

 private:
  std::vector<Py_buffer> views_;  // reserved up front: a Py_buffer is never moved once filled
};

// Memory given as a raw address and length (an engine's page pointers):
// memkv.InvalidArgument for a null address with a non-zero length.
std::span<uint8_t> RawSpan(uintptr_t address, size_t length, std::string_view call, ArgName what);

// A non-negative int argument (an address or a length): TypeError for
// another type, memkv.InvalidArgument when negative or over 64 bits.
size_t SizeArg(py::handle value, std::string_view call, ArgName what);

// The lengths of a raw batch: one int for every item, or a sequence of `count`.
std::vector<size_t> Lengths(py::handle lengths, size_t count, std::string_view call);

}  // namespace memkv::python

#endif  // MEMKV_PYTHON_CONVERT_H_
