// The YAML a client config file holds, read without a YAML library
// (internal to src/config).
//
// A client config (MEMKV_CONFIG) is one map of option names to a scalar or a
// list of scalars. libmemkv reads it with this small reader instead of
// yaml-cpp, so the client library and the Python wheel carry no YAML library.
// It takes the YAML a person writes for such a file:
//
//   # comment
//   servers: ["10.0.0.1:9900", 10.0.0.2:9900]   # flow list
//   rdma_devices:                               # block list
//     - mlx5_0
//   auth_key: "00ff..."                         # plain, "double" or 'single' quoted
//   prometheus_bind:                            # nothing: the option keeps its default
//
// and refuses the rest (nested maps, anchors, tags, block scalars, a second
// document) with a line naming where and what is allowed, so nothing is
// read differently from what YAML would mean. Malformed YAML (an unclosed
// quote or '[') is a "YAML syntax error".
#ifndef MEMKV_CONFIG_FLAT_YAML_H_
#define MEMKV_CONFIG_FLAT_YAML_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/diagnostics.h"

namespace memkv::config::internal {

struct FlatYamlValue {
  enum class Kind { kNull, kScalar, kList };
  Kind kind = Kind::kNull;
  std::vector<std::string> items;  // kScalar: the one value; kList: the entries
  std::vector<int> item_lines;     // 0-based line of each item
};

struct FlatYamlEntry {
  std::string key;
  int line = 0;  // 0-based, as Diagnostics::NoteLocation takes them
  int column = 0;        // of the key
  int value_column = 0;  // of the value on the key's line (the key's for nothing or a block list)
  FlatYamlValue value;
};

// The document's entries in text order (duplicates included: the caller
// reports them). nullopt, with the problem failed on "" in `d` (located at
// its line), when the text is not such a map.
std::optional<std::vector<FlatYamlEntry>> ParseFlatYaml(std::string_view text, Diagnostics* d);

// "nothing", "a string", "a list": what a value holds, for messages.
std::string_view FlatYamlKind(const FlatYamlValue& value);

}  // namespace memkv::config::internal

#endif  // MEMKV_CONFIG_FLAT_YAML_H_
