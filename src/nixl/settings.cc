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

std::vector<std::string> SplitList(std::string_view text) {
  std::vector<std::string> items;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    std::string_view item = Trim(text.substr(0, comma));
    if (!item.empty()) items.emplace_back(item);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
  }
  return items;
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

template <uint32_t ClientOptions::*Field>
std::string ClientNumber(std::string_view value, EngineSettings& s) {
  std::optional<uint32_t> n = ParseNumber(value, 0, std::numeric_limits<uint32_t>::max());
  if (!n.has_value()) return "a whole number in 0..4294967295";
  s.client.*Field = *n;
  return "";
}

template <std::string ClientOptions::*Field>
std::string ClientText(std::string_view value, EngineSettings& s) {
  s.client.*Field = std::string(Trim(value));
  return "";
}

template <std::vector<std::string> ClientOptions::*Field>
std::string ClientList(std::string_view value, EngineSettings& s) {
  s.client.*Field = SplitList(value);
  if ((s.client.*Field).empty()) return "a comma-separated list";
  return "";
}

std::string KeyPrefix(std::string_view value, EngineSettings& s) {
  s.key_prefix = std::string(value);
  return "";
}

std::string LogLevel(std::string_view value, EngineSettings& s) {
  for (int l = static_cast<int>(ClientLogLevel::kDebug); l <= static_cast<int>(ClientLogLevel::kOff); ++l) {
    const auto level = static_cast<ClientLogLevel>(l);
    if (Trim(value) == ClientLogLevelName(level)) {
      s.client.log_level = level;
      return "";
    }
  }
  return "a log level: debug, info, warn, error or off";
}

struct Entry {
  Parameter parameter;
  Apply apply;
  bool required = false;
};

const std::vector<Entry>& Entries() {
  static const std::vector<Entry> entries = {
      {{"servers", "MEMKV_SERVERS", "the MemKV servers' data addresses, host:port, comma-separated"},
       &ClientList<&ClientOptions::servers>, true},
      {{"auth_key", "MEMKV_AUTH_KEY", "the servers' authentication key, 64 hex characters"},
       &ClientText<&ClientOptions::auth_key_hex>, true},
      {{"transport", "MEMKV_TRANSPORT", "auto, tcp or rdma (default auto)"}, &ClientText<&ClientOptions::transport>},
      {{"num_connections", "MEMKV_NUM_CONNECTIONS", "connections per server (default 4)"},
       &ClientNumber<&ClientOptions::num_connections>},
      {{"timeout_ms", "MEMKV_TIMEOUT_MS", "deadline of every MemKV operation in milliseconds (default 5000)"},
       &ClientNumber<&ClientOptions::timeout_ms>},
      {{"connect_timeout_ms", "MEMKV_CONNECT_TIMEOUT_MS", "deadline of a connection attempt (default 2000)"},
       &ClientNumber<&ClientOptions::connect_timeout_ms>},
      {{"rdma_devices", "MEMKV_RDMA_DEVICES", "local RDMA devices to use, comma-separated (default: the first)"},
       &ClientList<&ClientOptions::rdma_devices>},
      {{"rdma_mtu", "MEMKV_RDMA_MTU", "RDMA path MTU, equal to the servers' rdma.mtu (default 4096)"},
       &ClientNumber<&ClientOptions::rdma_mtu>},
      {{"rdma_retry_count", "MEMKV_RDMA_RETRY_COUNT", "RDMA transport retries, 0..7 (default 6)"},
       &ClientNumber<&ClientOptions::rdma_retry_count>},
      {{"rdma_timeout", "MEMKV_RDMA_TIMEOUT", "RDMA local ACK timeout exponent (default 14)"},
       &ClientNumber<&ClientOptions::rdma_timeout>},
      {{"rdma_qps", "MEMKV_RDMA_QPS", "RDMA queue pairs per server connection, 1..16 (default 2)"},
       &ClientNumber<&ClientOptions::rdma_qps>},
      {{"prometheus_bind", "MEMKV_PROMETHEUS_BIND", "host:port to serve the client's metrics on (default off)"},
       &ClientText<&ClientOptions::prometheus_bind>},
      {{"log_level", "MEMKV_LOG_LEVEL", "debug, info, warn, error or off (default warn)"}, &LogLevel},
      {{"key_prefix", "MEMKV_NIXL_KEY_PREFIX", "prepended to every MemKV key of an object (default none)"},
       &KeyPrefix},
      {{"batch_size", "MEMKV_NIXL_BATCH_SIZE", "descriptors per MemKV batch call, 1..4096 (default 64)"},
       &EngineNumber<&EngineSettings::batch_size, 1, kMaxBatchSize>},
      {{"workers", "MEMKV_NIXL_WORKERS", "threads that carry posted transfers, 1..64 (default 2)"},
       &EngineNumber<&EngineSettings::workers, 1, kMaxWorkers>},
  };
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
    std::string source = "parameter " + name;
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
    const std::string allowed = e.apply(*value, settings);
    if (!allowed.empty()) problems.push_back(source + " '" + *value + "' is not " + allowed);
  }
  if (!problems.empty()) {
    std::string text;
    for (const std::string& p : problems) text += (text.empty() ? "" : "; ") + p;
    return InvalidArgument(text);
  }
  return settings;
}

}  // namespace memkv::nixl
