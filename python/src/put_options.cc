// memkv.PutOptions and the put keywords (put_options.h).
#include "put_options.h"

#include <cstdint>
#include <optional>
#include <string>

#include "errors.h"

namespace memkv::python {
namespace {

constexpr const char kRetentions[] = "'normal', 'pinned', 'evict_first'";

std::string TypeName(py::handle value) { return Py_TYPE(value.ptr())->tp_name; }

uint64_t TtlFrom(py::handle value, std::string_view call) {
  if (value.is_none()) return 0;
  if (PyBool_Check(value.ptr()) || !PyLong_Check(value.ptr())) {
    throw py::type_error(std::string(call) + ": ttl_ms must be an int, not " + TypeName(value));
  }
  const unsigned long long ttl = PyLong_AsUnsignedLongLong(value.ptr());
  if (ttl == static_cast<unsigned long long>(-1) && PyErr_Occurred()) {
    PyErr_Clear();
    ThrowInvalidArgument(call, "ttl_ms " + py::repr(value).cast<std::string>() +
                                   " is out of range; allowed: 0 (no TTL) .. 2**64-1 milliseconds");
  }
  return ttl;
}

Retention RetentionFrom(py::handle value, std::string_view call) {
  if (value.is_none()) return Retention::kNormal;
  if (!PyUnicode_Check(value.ptr())) {
    throw py::type_error(std::string(call) + ": retention must be a str (" + kRetentions + "), not " +
                         TypeName(value));
  }
  const std::string name = value.cast<std::string>();
  for (Retention r : {Retention::kNormal, Retention::kPinned, Retention::kEvictFirst}) {
    if (name == RetentionName(r)) return r;
  }
  ThrowInvalidArgument(call, "retention '" + name + "' is not a retention class; allowed: " + kRetentions);
}

// One hash into *out; returns its kind, or nullopt for None.
std::optional<HashKind> HashFrom(py::handle value, const char* field, std::string_view call, std::string* out) {
  if (value.is_none()) return std::nullopt;
  if (PyBytes_Check(value.ptr())) {
    *out = value.cast<std::string>();
    if (out->size() > kMaxBlockHashBytes) {
      ThrowInvalidArgument(call, std::string(field) + " is " + std::to_string(out->size()) + " bytes; allowed: at most " +
                                     std::to_string(kMaxBlockHashBytes));
    }
    return HashKind::kBytes;
  }
  if (PyLong_Check(value.ptr()) && !PyBool_Check(value.ptr())) {
    // -2**63..2**64-1, as the 64 bits of its two's complement.
    const bool negative = PyObject_RichCompareBool(value.ptr(), py::int_(0).ptr(), Py_LT) == 1;
    uint64_t bits = negative ? static_cast<uint64_t>(PyLong_AsLongLong(value.ptr()))
                             : static_cast<uint64_t>(PyLong_AsUnsignedLongLong(value.ptr()));
    if (PyErr_Occurred()) {
      PyErr_Clear();
      ThrowInvalidArgument(call, std::string(field) + " " + py::repr(value).cast<std::string>() +
                                     " does not fit 64 bits; allowed: an int in -2**63..2**64-1, or bytes");
    }
    out->resize(8);
    for (size_t i = 0; i < 8; ++i) (*out)[i] = static_cast<char>((bits >> (8 * i)) & 0xff);
    return HashKind::kInt64;
  }
  throw py::type_error(std::string(call) + ": " + field + " must be bytes or an int, not " + TypeName(value));
}

// A hash a chain carries: bytes of 1..kMaxBlockHashBytes, or an int in
// -2**63..2**64-1 that is not a bool, into *out; anything else (None, too
// long, out of range, another type) is nullopt: left out, not an error.
std::optional<HashKind> UsableHash(py::handle value, std::string* out) {
  PyObject* v = value.ptr();
  if (PyBytes_Check(v)) {
    const Py_ssize_t n = PyBytes_GET_SIZE(v);
    if (n <= 0 || static_cast<size_t>(n) > kMaxBlockHashBytes) return std::nullopt;
    out->assign(PyBytes_AS_STRING(v), static_cast<size_t>(n));
    return HashKind::kBytes;
  }
  if (!PyLong_Check(v) || PyBool_Check(v)) return std::nullopt;
  int overflow = 0;
  uint64_t bits = static_cast<uint64_t>(PyLong_AsLongLongAndOverflow(v, &overflow));
  if (overflow > 0) bits = PyLong_AsUnsignedLongLong(v);  // 2**63..2**64-1, or past it
  if (overflow < 0 || PyErr_Occurred()) {
    PyErr_Clear();
    return std::nullopt;
  }
  out->resize(8);
  for (size_t i = 0; i < 8; ++i) (*out)[i] = static_cast<char>((bits >> (8 * i)) & 0xff);
  return HashKind::kInt64;
}

// PutOptions.chain: see its docstring in BindPutOptions.
py::list Chain(py::handle keys, py::handle block_hashes, py::handle parent_key, py::handle parent_hash) {
  constexpr std::string_view kCall = "memkv.PutOptions.chain";
  py::object ks = FastSequence(keys, kCall, {"keys"});
  py::object hs = FastSequence(block_hashes, kCall, {"block_hashes"});
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(ks.ptr());
  if (PySequence_Fast_GET_SIZE(hs.ptr()) != n) {
    ThrowInvalidArgument(kCall, std::to_string(n) + " keys but " +
                                    std::to_string(PySequence_Fast_GET_SIZE(hs.ptr())) + " block hashes");
  }
  std::string previous_key = parent_key.is_none() ? "" : std::string(KeyView(parent_key, kCall, {"parent_key"}));
  std::string previous_hash;
  std::optional<HashKind> previous_kind = UsableHash(parent_hash, &previous_hash);
  py::list out(n);
  for (Py_ssize_t i = 0; i < n; ++i) {
    PutOptions o;
    std::string hash;
    const std::optional<HashKind> kind = UsableHash(PySequence_Fast_GET_ITEM(hs.ptr(), i), &hash);
    if (kind && previous_kind && *kind != *previous_kind) previous_kind.reset();
    o.parent_key = std::move(previous_key);
    if (previous_kind) o.parent_hash = std::move(previous_hash);
    o.hash_kind = kind ? *kind : previous_kind ? *previous_kind : HashKind::kBytes;
    if (kind) o.block_hash = hash;
    previous_key = std::string(KeyView(PySequence_Fast_GET_ITEM(ks.ptr(), i), kCall, {"keys", i}));
    previous_hash = std::move(hash);
    previous_kind = kind;
    out[static_cast<size_t>(i)] = py::cast(std::move(o));
  }
  return out;
}

// PutOptions.of_hashes: see its docstring in BindPutOptions.
py::list OfHashes(py::handle block_hashes) {
  py::object hs = FastSequence(block_hashes, "memkv.PutOptions.of_hashes", {"block_hashes"});
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(hs.ptr());
  py::list out(n);
  for (Py_ssize_t i = 0; i < n; ++i) {
    PutOptions o;
    if (const std::optional<HashKind> kind = UsableHash(PySequence_Fast_GET_ITEM(hs.ptr(), i), &o.block_hash)) {
      o.hash_kind = *kind;
    }
    out[static_cast<size_t>(i)] = py::cast(std::move(o));
  }
  return out;
}

py::object HashToPython(const std::string& hash, HashKind kind) {
  if (hash.empty()) return py::none();
  if (kind == HashKind::kBytes) return py::bytes(hash);
  uint64_t bits = 0;
  for (size_t i = 0; i < 8; ++i) bits |= static_cast<uint64_t>(static_cast<uint8_t>(hash[i])) << (8 * i);
  return py::int_(static_cast<int64_t>(bits));
}

std::string Repr(const PutOptions& o) {
  std::string out = "PutOptions(ttl_ms=" + std::to_string(o.ttl_ms) + ", retention='" +
                    std::string(RetentionName(o.retention)) + "'";
  if (!o.parent_key.empty()) out += ", parent_key=" + py::repr(py::bytes(o.parent_key)).cast<std::string>();
  if (!o.block_hash.empty()) out += ", block_hash=" + py::repr(HashToPython(o.block_hash, o.hash_kind)).cast<std::string>();
  if (!o.parent_hash.empty()) {
    out += ", parent_hash=" + py::repr(HashToPython(o.parent_hash, o.hash_kind)).cast<std::string>();
  }
  return out + ")";
}

constexpr const char kPutOptionsDoc[] = R"(What a put may say about its value besides its bytes.

PutOptions(*, ttl_ms=0, retention="normal", parent_key=None, block_hash=None, parent_hash=None)

ttl_ms       lifetime in milliseconds from the put (0: none); past it the value is a miss
retention    "normal", "pinned" (not evicted while its TTL runs; each hit re-arms it;
             capped by the server's memory.pinned_max_fraction) or "evict_first"
parent_key   the key of the previous block of the value's prefix chain (str or bytes):
             eviction takes tails before heads
block_hash   the engine's hash of this block: bytes (at most 64) or an int
             (-2**63..2**64-1, sent as 8 bytes little-endian); published in events
parent_hash  the engine's hash of the parent block, of the same kind as block_hash

One per key in Client.batch_put(..., options=[...]); Client.put takes the same keywords.)";

}  // namespace

PutOptions PutOptionsFrom(py::handle ttl_ms, py::handle retention, py::handle parent_key, py::handle block_hash,
                          py::handle parent_hash, std::string_view call) {
  PutOptions o;
  o.ttl_ms = TtlFrom(ttl_ms, call);
  o.retention = RetentionFrom(retention, call);
  if (!parent_key.is_none()) o.parent_key = std::string(KeyView(parent_key, call, {"parent_key"}));
  const std::optional<HashKind> block = HashFrom(block_hash, "block_hash", call, &o.block_hash);
  const std::optional<HashKind> parent = HashFrom(parent_hash, "parent_hash", call, &o.parent_hash);
  if (block && parent && *block != *parent) {
    ThrowInvalidArgument(call, "block_hash and parent_hash must be of one kind: both bytes or both int");
  }
  o.hash_kind = block ? *block : parent ? *parent : HashKind::kBytes;
  return o;
}

std::vector<PutOptions> PutOptionsList(py::handle options, size_t count, std::string_view call) {
  if (options.is_none()) return {};
  py::object items = FastSequence(options, call, {"options"});
  const size_t n = static_cast<size_t>(PySequence_Fast_GET_SIZE(items.ptr()));
  if (n != count) ThrowInvalidArgument(call, std::to_string(count) + " keys but " + std::to_string(n) + " options");
  std::vector<PutOptions> out(n);
  for (size_t i = 0; i < n; ++i) {
    py::handle item = PySequence_Fast_GET_ITEM(items.ptr(), static_cast<Py_ssize_t>(i));
    if (item.is_none()) continue;
    if (!py::isinstance<PutOptions>(item)) {
      throw py::type_error(std::string(call) + ": options[" + std::to_string(i) +
                           "] must be a memkv.PutOptions or None, not " + TypeName(item));
    }
    out[i] = item.cast<const PutOptions&>();
  }
  return out;
}

void BindPutOptions(py::module_& m) {
  py::class_<PutOptions>(m, "PutOptions", kPutOptionsDoc)
      .def(py::init([](py::handle ttl_ms, py::handle retention, py::handle parent_key, py::handle block_hash,
                       py::handle parent_hash) {
             return PutOptionsFrom(ttl_ms, retention, parent_key, block_hash, parent_hash, "memkv.PutOptions");
           }),
           py::kw_only(), py::arg("ttl_ms") = 0, py::arg("retention") = "normal", py::arg("parent_key") = py::none(),
           py::arg("block_hash") = py::none(), py::arg("parent_hash") = py::none(),
           "__init__(*, ttl_ms=0, retention='normal', parent_key=None, block_hash=None, parent_hash=None) -> None")
      .def_readonly("ttl_ms", &PutOptions::ttl_ms, "Lifetime in milliseconds from the put; 0: none.")
      .def_property_readonly(
          "retention", [](const PutOptions& o) { return std::string(RetentionName(o.retention)); },
          "\"normal\", \"pinned\" or \"evict_first\".")
      .def_property_readonly(
          "parent_key",
          [](const PutOptions& o) -> py::object {
            return o.parent_key.empty() ? py::object(py::none()) : py::object(py::bytes(o.parent_key));
          },
          "The parent block's key as bytes, or None.")
      .def_property_readonly(
          "block_hash", [](const PutOptions& o) { return HashToPython(o.block_hash, o.hash_kind); },
          "This block's hash (bytes or int), or None.")
      .def_property_readonly(
          "parent_hash", [](const PutOptions& o) { return HashToPython(o.parent_hash, o.hash_kind); },
          "The parent block's hash (bytes or int), or None.")
      .def_property_readonly(
          "hash_kind", [](const PutOptions& o) { return o.hash_kind == HashKind::kInt64 ? "int64" : "bytes"; },
          "\"bytes\" or \"int64\": how the hashes are sent.")
      .def_static("chain", &Chain, py::arg("keys"), py::arg("block_hashes"), py::arg("parent_key") = py::none(),
                  py::arg("parent_hash") = py::none(),
                  "chain(keys, block_hashes, parent_key=None, parent_hash=None) -> list[PutOptions]\n\n"
                  "The options of blocks put in chain order, one per key: block i names block i - 1 as its\n"
                  "parent (its key and hash), block 0 the given parent (None: unknown, or a chain head).\n"
                  "A hash that a PutOptions cannot carry (None, bytes empty or over 64, an int past 64 bits,\n"
                  "another type) is left out, and so is a parent hash of another kind than the block's.\n"
                  "The same as building each PutOptions in a loop, without a Python call per block.")
      .def_static("of_hashes", &OfHashes, py::arg("block_hashes"),
                  "of_hashes(block_hashes) -> list[PutOptions]\n\n"
                  "One PutOptions per hash, carrying that block hash alone (no parent): for blocks that are\n"
                  "not put as one chain. A hash that a PutOptions cannot carry (None, bytes empty or over 64,\n"
                  "an int past 64 bits, another type) is left out of its PutOptions. The same as\n"
                  "PutOptions(block_hash=h) for each usable hash, without a Python call per block.")
      .def("__repr__", &Repr)
      .def("__eq__", [](const PutOptions& a, py::handle b) {
        if (!py::isinstance<PutOptions>(b)) return false;
        const PutOptions& o = b.cast<const PutOptions&>();
        return a.ttl_ms == o.ttl_ms && a.retention == o.retention && a.parent_key == o.parent_key &&
               a.block_hash == o.block_hash && a.parent_hash == o.parent_hash && a.hash_kind == o.hash_kind;
      });
}

}  // namespace memkv::python
