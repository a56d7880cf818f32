// Reading typed fields out of yaml-cpp nodes (internal to src/config).
//
// yaml-cpp reports problems by throwing; these helpers check node kinds
// before converting, so a wrong type becomes one Diagnostics line naming the
// field instead of an exception. A null value ("key:" with nothing after it)
// counts as absent and leaves the default in place. Every reader returns
// true when it stored a value.
//
// Callers still wrap their walk in a try/catch (see LoadYamlDocument and the
// Parse* functions): yaml-cpp must never throw past the config layer.
#ifndef MEMKV_CONFIG_YAML_FIELDS_H_
#define MEMKV_CONFIG_YAML_FIELDS_H_

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/diagnostics.h"

namespace memkv::config::internal {

// Parses `text` as exactly one YAML document. A syntax error (reported with
// line and column) or a second document fails `""` in `d`; returns nullopt
// then. An empty text or one holding only comments yields a null node.
std::optional<YAML::Node> LoadYamlDocument(std::string_view text, Diagnostics* d);

// "a map", "a list", "a string", "nothing": what a node holds, for messages.
std::string_view NodeKind(const YAML::Node& node);

// One allowed key of a map and what to do with its value; the reader gets
// the value node and its full path ("network.address").
struct FieldSpec {
  std::string_view name;
  std::function<void(const YAML::Node& value, const std::string& path)> read;
};

// Walks the map at `path` ("" for the document): rejects unknown and
// duplicate keys (suggesting the closest allowed name), notes each field's
// location, and hands known values to their readers. Null = empty map.
void ReadMap(const YAML::Node& node, const std::string& path, const std::vector<FieldSpec>& fields,
             Diagnostics* d);

// FieldSpecs for the plain kinds; `out` and `d` must outlive the ReadMap call.
FieldSpec StringField(std::string_view name, Diagnostics* d, std::string* out);
FieldSpec SizeField(std::string_view name, Diagnostics* d, uint64_t* out);
FieldSpec BoolField(std::string_view name, Diagnostics* d, bool* out);
FieldSpec Uint32Field(std::string_view name, std::string_view allowed, Diagnostics* d,
                      uint32_t* out);
FieldSpec FractionField(std::string_view name, Diagnostics* d, double* out);
FieldSpec DurationField(std::string_view name, Diagnostics* d, uint64_t* out_ms);

// A scalar as text.
bool ReadString(const YAML::Node& node, const std::string& path, Diagnostics* d, std::string* out);

// "true" or "false".
bool ReadBool(const YAML::Node& node, const std::string& path, Diagnostics* d, bool* out);

// A list of scalars; each entry as text.
bool ReadStringList(const YAML::Node& node, const std::string& path, Diagnostics* d,
                    std::vector<std::string>* out);

// A decimal integer no larger than `max`; `allowed` describes the rule for
// the message ("0..255").
bool ReadUint(const YAML::Node& node, const std::string& path, uint64_t max,
              std::string_view allowed, Diagnostics* d, uint64_t* out);
bool ReadUint32(const YAML::Node& node, const std::string& path, std::string_view allowed,
                Diagnostics* d, uint32_t* out);

// A decimal number such as "0.5" (the range is the caller's rule).
bool ReadFraction(const YAML::Node& node, const std::string& path, Diagnostics* d, double* out);

// A duration: a whole number and a unit, "1500ms", "90s", "30m", "24h",
// "7d"; stored in milliseconds.
bool ReadDurationMs(const YAML::Node& node, const std::string& path, Diagnostics* d, uint64_t* out);

// A size: "2 MiB", "4096", "1.5 GiB" (see base/units.h).
bool ReadSize(const YAML::Node& node, const std::string& path, Diagnostics* d, uint64_t* out);

}  // namespace memkv::config::internal

#endif  // MEMKV_CONFIG_YAML_FIELDS_H_
