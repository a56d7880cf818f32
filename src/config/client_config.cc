#include "config/client_config.h"

#include <bit>
#include <exception>
#include <set>

#include "base/log.h"
#include "config/diagnostics.h"
#include "config/host_port.h"
#include "config/yaml_fields.h"

namespace memkv {
namespace {

using config_internal::Diagnostics;

// One client setting: its YAML key, its environment variable, and how to
// apply its value. YAML and the environment feed the same setter, so a
// value is checked, and described, the same way wherever it came from.
// `field` is the name messages use: the YAML path or the variable.
using Setter = void (*)(const std::vector<std::string>& values, const std::string& field,
                        Diagnostics* d, ClientConfig* c);

struct ClientField {
  std::string_view key;
  std::string_view env;  // empty when no variable sets it
  bool is_list;          // YAML list / comma-separated variable
  Setter set;
};

void SetServers(const std::vector<std::string>& values, const std::string& field, Diagnostics* d,
                ClientConfig* c) {
  std::vector<ServerAddress> servers;
  std::set<std::string> seen;
  bool ok = true;
  for (const std::string& value : values) {
    Result<ServerAddress> address = ParseServerAddress(value);
    if (!address.ok()) {
      d->Fail(field, field + ": " + address.status().message());
      ok = false;
    } else if (!seen.insert(address->ToString()).second) {
      d->Fail(field, field + ": '" + value + "' is listed twice; allowed: each server once");
      ok = false;
    } else {
      servers.push_back(std::move(*address));
    }
  }
  if (ok) c->servers = std::move(servers);
}

void SetAuthKey(const std::vector<std::string>& values, const std::string& field, Diagnostics* d,
                ClientConfig* c) {
  Result<std::vector<uint8_t>> key = config_internal::ParseAuthKeyHex(values.front());
  if (!key.ok()) {
    d->Fail(field, field + ": " + key.status().message());
    return;
  }
  c->auth_key = std::move(*key);
}

void SetTransport(const std::vector<std::string>& values, const std::string& field, Diagnostics* d,
                  ClientConfig* c) {
  for (TransportMode mode : {TransportMode::kAuto, TransportMode::kRdma, TransportMode::kTcp}) {
    if (values.front() == TransportModeName(mode)) {
      c->transport = mode;
      return;
    }
  }
  d->Fail(field, field + ": '" + values.front() + "' is not a transport; allowed: auto, rdma, tcp");
}

// Reads a whole number in [min, max]; false (with a line in `d`) otherwise.
bool ParseInRange(const std::string& text, const std::string& field, uint64_t min, uint64_t max,
                  Diagnostics* d, uint32_t* out) {
  std::optional<uint64_t> value = config_internal::ParseDecimal(text);
  const std::string allowed = "; allowed: " + std::to_string(min) + ".." + std::to_string(max);
  if (!value) {
    d->Fail(field, field + ": '" + text + "' is not a non-negative integer" + allowed);
    return false;
  }
  if (*value < min || *value > max) {
    d->Fail(field, field + ": " + text + " is out of range" + allowed);
    return false;
  }
  *out = static_cast<uint32_t>(*value);
  return true;
}

constexpr uint64_t kMaxTimeoutMs = 3'600'000;  // an hour: anything longer is a mistake

void SetNumConnections(const std::vector<std::string>& values, const std::string& field,
                       Diagnostics* d, ClientConfig* c) {
  ParseInRange(values.front(), field, 1, 256, d, &c->num_connections);
}

void SetTimeout(const std::vector<std::string>& values, const std::string& field, Diagnostics* d,
                ClientConfig* c) {
  ParseInRange(values.front(), field, 1, kMaxTimeoutMs, d, &c->timeout_ms);
}

void SetConnectTimeout(const std::vector<std::string>& values, const std::string& field,
                       Diagnostics* d, ClientConfig* c) {
  ParseInRange(values.front(), field, 1, kMaxTimeoutMs, d, &c->connect_timeout_ms);
}

void SetRdmaMtu(const std::vector<std::string>& values, const std::string& field, Diagnostics* d,
                ClientConfig* c) {
  constexpr std::string_view kAllowed = "; allowed: 256, 512, 1024, 2048, 4096";
  std::optional<uint64_t> mtu = config_internal::ParseDecimal(values.front());
  if (!mtu || *mtu < 256 || *mtu > 4096 || !std::has_single_bit(*mtu)) {
    d->Fail(field,
            field + ": '" + values.front() + "' is not an RDMA path MTU" + std::string(kAllowed));
    return;
  }
  c->rdma_mtu = static_cast<uint32_t>(*mtu);
}

void SetRdmaRetryCount(const std::vector<std::string>& values, const std::string& field, Diagnostics* d,
                       ClientConfig* c) {
  // 7 is "retry forever" on Soft-RoCE (rxe): a dropped path would hang.
  ParseInRange(values.front(), field, 0, 7, d, &c->rdma_retry_count);
}

void SetRdmaTimeout(const std::vector<std::string>& values, const std::string& field, Diagnostics* d,
                    ClientConfig* c) {
  ParseInRange(values.front(), field, 1, 31, d, &c->rdma_timeout);
}

void SetRdmaQps(const std::vector<std::string>& values, const std::string& field, Diagnostics* d,
                ClientConfig* c) {
  ParseInRange(values.front(), field, 1, 16, d, &c->rdma_qps);
}

void SetRdmaDevices(const std::vector<std::string>& values, const std::string& field,
                    Diagnostics* d, ClientConfig* c) {
  std::set<std::string> seen;
  bool ok = true;
  for (const std::string& device : values) {
    if (device.empty()) {
      d->Fail(field, field + ": an empty device name; allowed: HCA names such as mlx5_0");
      ok = false;
    } else if (!seen.insert(device).second) {
      d->Fail(field, field + ": '" + device + "' is listed twice; allowed: each device once");
      ok = false;
    }
  }
  if (ok) c->rdma_devices = values;
}

void SetPrometheusBind(const std::vector<std::string>& values, const std::string& field,
                       Diagnostics* d, ClientConfig* c) {
  const std::string& text = values.front();
  if (text.empty()) {
    c->prometheus_bind.clear();  // explicitly off
    return;
  }
  Result<config_internal::HostPort> split = config_internal::SplitHostPort(text);
  if (!split.ok() || split->port > UINT16_MAX) {
    const std::string why = split.ok() ? "port " + std::to_string(split->port) + " is out of range"
                                       : split.status().message();
    d->Fail(field, field + ": " + why + "; allowed: host:port to serve /metrics on, port 0..65535");
    return;
  }
  c->prometheus_bind = text;
}

void SetClientLogLevel(const std::vector<std::string>& values, const std::string& field, Diagnostics* d,
                       ClientConfig* c) {
  if (!ParseLogLevel(values.front(), &c->log_level)) {
    d->Fail(field, field + ": '" + values.front() + "' is not a log level; allowed: debug, info, warn, error, off");
  }
}

constexpr ClientField kFields[] = {
    {"servers", "MEMKV_SERVERS", true, SetServers},
    {"auth_key", "MEMKV_AUTH_KEY", false, SetAuthKey},
    {"transport", "MEMKV_TRANSPORT", false, SetTransport},
    {"num_connections", "MEMKV_NUM_CONNECTIONS", false, SetNumConnections},
    {"timeout_ms", "MEMKV_TIMEOUT_MS", false, SetTimeout},
    {"connect_timeout_ms", "", false, SetConnectTimeout},  // no variable in the header's list
    {"rdma_devices", "MEMKV_RDMA_DEVICES", true, SetRdmaDevices},
    {"rdma_mtu", "MEMKV_RDMA_MTU", false, SetRdmaMtu},
    {"rdma_retry_count", "MEMKV_RDMA_RETRY_COUNT", false, SetRdmaRetryCount},
    {"rdma_timeout", "MEMKV_RDMA_TIMEOUT", false, SetRdmaTimeout},
    {"rdma_qps", "MEMKV_RDMA_QPS", false, SetRdmaQps},
    {"prometheus_bind", "MEMKV_PROMETHEUS_BIND", false, SetPrometheusBind},
    {"log_level", "MEMKV_LOG_LEVEL", false, SetClientLogLevel},
};

// A YAML value as the setter's input: one string, or the list's strings.
void ReadClientField(const ClientField& f, const YAML::Node& node, const std::string& path,
                     Diagnostics* d, ClientConfig* config) {
  std::vector<std::string> values(1);
  const bool present = f.is_list ? config_internal::ReadStringList(node, path, d, &values)
                                 : config_internal::ReadString(node, path, d, &values[0]);
  if (present) f.set(values, path, d, config);
}

void ParseYamlInto(std::string_view yaml_text, Diagnostics* d, ClientConfig* config) {
  try {
    std::optional<YAML::Node> root = config_internal::LoadYamlDocument(yaml_text, d);
    if (!root) return;
    std::vector<config_internal::FieldSpec> specs;
    for (const ClientField& f : kFields) {
      specs.push_back({f.key, [&f, d, config](const YAML::Node& v, const std::string& path) {
                         ReadClientField(f, v, path, d, config);
                       }});
    }
    config_internal::ReadMap(*root, "", specs, d);
  } catch (const std::exception& e) {
    // Backstop: the readers check node kinds, but yaml-cpp must never throw
    // past the config layer.
    d->Fail("", std::string("reading the YAML failed: ") + e.what());
  }
}

std::string Trim(std::string_view text) {
  const size_t first = text.find_first_not_of(" \t");
  if (first == std::string_view::npos) return "";
  return std::string(text.substr(first, text.find_last_not_of(" \t") + 1 - first));
}

// Splits a comma list, trimming blanks around entries; an empty entry
// ("a,,b" or a trailing comma) is reported rather than skipped.
std::optional<std::vector<std::string>> SplitList(const std::string& text, const std::string& field,
                                                  Diagnostics* d) {
  std::vector<std::string> items;
  size_t start = 0;
  while (true) {
    size_t comma = text.find(',', start);
    std::string item = Trim(std::string_view(text).substr(
        start, comma == std::string::npos ? std::string::npos : comma - start));
    if (item.empty()) {
      d->Fail(field, field + ": entry " + std::to_string(items.size() + 1) + " of '" + text +
                         "' is empty; allowed: a comma-separated list");
      return std::nullopt;
    }
    items.push_back(std::move(item));
    if (comma == std::string::npos) return items;
    start = comma + 1;
  }
}

std::optional<std::string> GetEnv(const EnvLookup& env, std::string_view name) {
  if (!env) return std::nullopt;
  std::optional<std::string> value = env(name);
  // An empty variable counts as unset, as shells make "VAR=" easy to leave behind.
  if (value && value->empty()) return std::nullopt;
  return value;
}

void ApplyEnv(const EnvLookup& env, Diagnostics* d, ClientConfig* config) {
  for (const ClientField& f : kFields) {
    if (f.env.empty()) continue;
    std::optional<std::string> value = GetEnv(env, f.env);
    if (!value) continue;
    const std::string field(f.env);
    if (!f.is_list) {
      f.set({*value}, field, d, config);
    } else if (std::optional<std::vector<std::string>> items = SplitList(*value, field, d)) {
      f.set(*items, field, d, config);
    }
  }
}

// Without servers or a key the client cannot do anything; say which
// variable to set rather than failing later at connect. `unreadable` lists
// the fields whose value was given but could not be read: "none
// configured" would only misdirect there.
void CheckRequired(const ClientConfig& config, const std::optional<std::string>& config_path,
                   const std::set<std::string>& unreadable, std::vector<std::string>* problems) {
  const std::string in_file = config_path ? "in " + *config_path + " (named by MEMKV_CONFIG)"
                                          : "in a YAML file named by MEMKV_CONFIG";
  if (config.servers.empty() && !unreadable.count("servers")) {
    problems->push_back(
        "servers: none configured; set MEMKV_SERVERS=host:port[,host:port...] "
        "(or `servers:` " +
        in_file + ")");
  }
  if (config.auth_key.empty() && !unreadable.count("auth_key")) {
    problems->push_back(
        "auth_key: none configured; set MEMKV_AUTH_KEY to the server's "
        "64-hex network.auth_key (or `auth_key:` " +
        in_file + ")");
  }
}

// The required fields that were given in the file or the environment but
// failed to read; all of them when the file itself could not be read.
void CollectUnreadable(const Diagnostics* file_d, bool file_unreadable, const Diagnostics& env_d,
                       std::set<std::string>* out) {
  for (const ClientField& f : kFields) {
    const bool from_file = file_unreadable || (file_d && file_d->IsFailed(f.key));
    const bool from_env = !f.env.empty() && env_d.IsFailed(f.env);
    if (from_file || from_env) out->insert(std::string(f.key));
  }
}

}  // namespace

std::string_view TransportModeName(TransportMode mode) {
  switch (mode) {
    case TransportMode::kAuto: return "auto";
    case TransportMode::kRdma: return "rdma";
    case TransportMode::kTcp: return "tcp";
  }
  return "unknown";
}

std::string ServerAddress::ToString() const { return config_internal::JoinHostPort(host, port); }

Result<ServerAddress> ParseServerAddress(std::string_view text) {
  constexpr std::string_view kAllowed = "; allowed: host:port or [IPv6]:port, port 1..65535";
  Result<config_internal::HostPort> split = config_internal::SplitHostPort(text);
  if (!split.ok()) return InvalidArgument(split.status().message() + std::string(kAllowed));
  if (split->port == 0 || split->port > UINT16_MAX) {
    return InvalidArgument("'" + std::string(text) + "': port " + std::to_string(split->port) +
                           " is out of range" + std::string(kAllowed));
  }
  return ServerAddress{split->host, static_cast<uint16_t>(split->port)};
}

Result<ClientConfig> ParseClientConfigYaml(std::string_view yaml_text, std::string_view source) {
  // Servers and key may still come from the environment, so their absence
  // is checked by LoadClientConfig, not here.
  Diagnostics d{std::string(source)};
  ClientConfig config;
  ParseYamlInto(yaml_text, &d, &config);
  if (!d.empty()) return d.ToStatus();
  return config;
}

Result<ClientConfig> LoadClientConfig(const EnvLookup& env) {
  ClientConfig config;
  std::vector<std::string> problems;
  std::optional<Diagnostics> file_d;
  bool file_unreadable = false;
  std::optional<std::string> config_path = GetEnv(env, "MEMKV_CONFIG");
  if (config_path) {
    Result<std::string> text = config_internal::ReadConfigFile(*config_path);
    if (!text.ok()) {
      problems.push_back("MEMKV_CONFIG: " + text.status().message());
      file_unreadable = true;
    } else {
      file_d.emplace(*config_path);
      ParseYamlInto(*text, &*file_d, &config);
      for (std::string& line : file_d->lines()) problems.push_back(std::move(line));
    }
  }
  Diagnostics env_d("");
  ApplyEnv(env, &env_d, &config);
  for (std::string& line : env_d.lines()) problems.push_back(std::move(line));
  std::set<std::string> unreadable;
  CollectUnreadable(file_d ? &*file_d : nullptr, file_unreadable, env_d, &unreadable);
  CheckRequired(config, config_path, unreadable, &problems);
  if (!problems.empty()) return config_internal::JoinProblems(problems);
  return config;
}

}  // namespace memkv
