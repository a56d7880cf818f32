// python/src/put_options.h: memkv.PutOptions and the put keywords
// (ttl_ms, retention, parent_key, block_hash, parent_hash) -> memkv::PutOptions
// (memkv/put_options.h).
//
// A hash is bytes (HashKind kBytes, at most kMaxBlockHashBytes) or an int
// (HashKind kInt64: -2**63..2**64-1, held as 8 bytes little-endian, two's
// complement); block_hash and parent_hash of one put are of one kind.
// Retention is "normal", "pinned" or "evict_first". Everything here needs
// the GIL; a bad value raises memkv.InvalidArgument naming the field and what
// is allowed, a wrong type TypeError.
#ifndef MEMKV_PYTHON_PUT_OPTIONS_H_
#define MEMKV_PYTHON_PUT_OPTIONS_H_

#include <pybind11/pybind11.h>

#include <cstddef>
#include <string_view>
#include <vector>

#include "convert.h"
#include "memkv/put_options.h"

namespace memkv::python {

namespace py = pybind11;

// The options of one put from its keywords (None: not set).
PutOptions PutOptionsFrom(py::handle ttl_ms, py::handle retention, py::handle parent_key, py::handle block_hash,
                          py::handle parent_hash, std::string_view call);

// The `options` argument of a batch put: None (plain puts: an empty vector)
// or a sequence of `count` items, each a memkv.PutOptions or None.
std::vector<PutOptions> PutOptionsList(py::handle options, size_t count, std::string_view call);

// Binds memkv.PutOptions.
void BindPutOptions(py::module_& m);

}  // namespace memkv::python

#endif  // MEMKV_PYTHON_PUT_OPTIONS_H_
