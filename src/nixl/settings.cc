#include "nixl/settings.h"

#include <cctype>
#include <limits>
#include <utility>

namespace memkv::nixl {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())) != 0) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())) != 0) s.remove_suffix(1);
  return s;
}

// The value as a whole number in [min, max], or nullopt.
std::optional<uint32_t> ParseNumber(std::string_view text, uint32_t min, uint32_t max) {
  text = Trim(text);
  if (text.empty() || text.size() > 10) return std::nullopt;
  uint64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + static_cast<uint64_t>(c - '0');
  }
  if (value < min || value > max) return std::nullopt;
  return static_cast<uint32_t>(value);
}

// Applies one value to the settings; an empty string when it was taken, else
// what the parameter allows.
using Apply = std::string (*)(std::string_view value, EngineSettings& s);

template <uint32_t EngineSettings::*Field, uint32_t Min, uint32_t Max>
std::string EngineNumber(std::string_view value, EngineSettings& s) {
  std::optional<uint32_t> n = ParseNumber(value, Min, Max);
  if (!n.has_value()) return "a whole number in " + std::to_string(Min) + ".." + std::to_string(Max);
  s.*Field = *n;
  return "";
}

std::string KeyPrefix(std::string_view value, EngineSettings& s) {
  s.key_prefix = std::string(value);
  return "";
}

struct Entry {
  Parameter parameter;
  Apply apply;
  bool required = false;
};

// The client options of the table (memkv/client.h), each by its name and
// variable, then the engine's own. A null `apply` is a client option: its
// value goes through SetClientOption.
const std::vector<Entry>& Entries() {
  static const std::vector<Entry> entries = [] {
    std::vector<Entry> out;
    for (const ClientOptionInfo& o : ClientOptionTable()) out.push_back({{o.name, o.env, o.doc}, nullptr, o.required});
    out.push_back({{"key_prefix", "MEMKV_NIXL_KEY_PREFIX", "prepended to every MemKV key of an object (default none)"},
                   &KeyPrefix});
    out.push_back({{"batch_size", "MEMKV_NIXL_BATCH_SIZE", "descriptors per MemKV batch call, 1..4096 (default 64)"},
                   &EngineNumber<&EngineSettings::batch_size, 1, kMaxBatchSize>});
    out.push_back({{"workers", "MEMKV_NIXL_WORKERS", "threads that carry posted transfers, 1..64 (default 2)"},
                   &EngineNumber<&EngineSettings::workers, 1, kMaxWorkers>});
    return out;
  }();
  return entries;
}

}  // namespace

const std::vector<Parameter>& Parameters() {
  static const std::vector<Parameter> parameters = [] {
    std::vector<Parameter> out;
    for (const Entry& e : Entries()) out.push_back(e.parameter);
    return out;
  }();
  return parameters;
}

Result<EngineSettings> SettingsFrom(const std::map<std::string, std::string>& params, const Lookup& env) {
  EngineSettings settings;
  std::vector<std::string> problems;
  std::string known;
  for (const Entry& e : Entries()) known += (known.empty() ? "" : ", ") + std::string(e.parameter.name);
  for (const auto& [name, value] : params) {
    bool found = false;
    for (const Entry& e : Entries()) found = found || e.parameter.name == name;
    if (!found) problems.push_back("unknown parameter '" + name + "'; the MEMKV backend reads " + known);
  }
  for (const Entry& e : Entries()) {
    const std::string name(e.parameter.name);
    std::string source = name;
    std::optional<std::string> value;
    if (auto it = params.find(name); it != params.end() && !Trim(it->second).empty()) {
      value = it->second;
    } else if (std::optional<std::string> v = env(e.parameter.env); v.has_value() && !Trim(*v).empty()) {
      value = *v;
      source = std::string(e.parameter.env);
    }
    if (!value.has_value()) {
      if (e.required) {
        problems.push_back(name + " is not set (neither the backend parameter nor " + std::string(e.parameter.env) +
                           "); set it to " + std::string(e.parameter.meaning));
      }
      continue;
    }
    if (e.apply == nullptr) {
      const std::string from = source == name ? name + " (NIXL parameter)" : source;
      const Status s = SetClientOption(&settings.client, name, *value, from);
      if (!s.ok()) problems.push_back(s.message());
      continue;
    }
    const std::string allowed = e.apply(*value, settings);
    if (!allowed.empty()) {
      const std::string from = source == name ? "parameter " + name : source;
      problems.push_back(from + " '" + *value + "' is not " + allowed);
    }
  }
  // The cache identity comes only from the identity_* parameters (their
  // MEMKV_IDENTITY_* variables): nixlBackendInitParams holds nothing of the
  // model's (the agent's name names a process, not what its blocks hold).
  CacheIdentity& id = settings.client.identity;
  if (!id.model.empty() && id.engine.empty()) id.engine = kDefaultIdentityEngine;
  if (problems.empty() && !id.empty()) {
    if (const Status s = id.Check(); !s.ok()) {
      problems.push_back(s.message() + " (from the identity_* parameters and MEMKV_IDENTITY_*)");
    }
  }
  if (!problems.empty()) {
    std::string text;
    for (const std::string& p : problems) text += (text.empty() ? "" : "; ") + p;
    return InvalidArgument(text);
  }
  return settings;
}

}  // namespace memkv::nixl
