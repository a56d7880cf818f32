#include "config/client_config.h"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <set>
#include <span>

#include "base/log.h"
#include "base/parse_number.h"
#include "config/diagnostics.h"
#include "config/flat_yaml.h"
#include "config/host_port.h"
#include "config/server_source.h"

namespace memkv::config {
namespace {

using internal::Diagnostics;

// ---- The option table ----
//
// Each row: what ClientOptionInfo publishes, how a value is set from its
// text(s), and how the current value reads back as text. Client::Create's
// check is read-back-then-set (CheckClientOptions), so a rule lives only in
// its setter. A setter writes `o` only when the value is good.
using Values = std::span<const std::string>;
using SetFn = Status (*)(Values values, const std::string& src, ClientOptions* o);
using GetFn = std::vector<std::string> (*)(const ClientOptions& o);

struct OptionRow {
  ClientOptionInfo info;
  SetFn set;
  GetFn get;
};

constexpr uint64_t kMaxTimeoutMs = 3'600'000;  // an hour: anything longer is a mistake

Status NotA(const std::string& src, std::string_view text, std::string_view what, std::string_view allowed) {
  return InvalidArgument(src + ": '" + std::string(text) + "' is not " + std::string(what) + "; allowed: " +
                         std::string(allowed));
}

// A whole number in [min, max]; InvalidArgument naming `src` otherwise.
Result<uint32_t> ParseInRange(const std::string& text, const std::string& src, uint64_t min, uint64_t max) {
  const std::string allowed = std::to_string(min) + ".." + std::to_string(max);
  std::optional<uint64_t> value = ParseDecimal(text);
  if (!value) return NotA(src, text, "a non-negative integer", allowed);
  if (*value < min || *value > max) {
    return InvalidArgument(src + ": " + text + " is out of range; allowed: " + allowed);
  }
  return static_cast<uint32_t>(*value);
}

template <uint32_t ClientOptions::*Field, uint64_t Min, uint64_t Max>
Status SetNumber(Values v, const std::string& src, ClientOptions* o) {
  MEMKV_ASSIGN_OR_RETURN(uint32_t n, ParseInRange(v.front(), src, Min, Max));
  o->*Field = n;
  return Status::Ok();
}

template <uint32_t ClientOptions::*Field>
std::vector<std::string> GetNumber(const ClientOptions& o) {
  return {std::to_string(o.*Field)};
}

// "auto" (nullopt) or a whole number in [0, Max]; Step > 1: a multiple of it.
template <std::optional<uint32_t> ClientOptions::*Field, uint64_t Max, uint64_t Step>
Status SetAutoNumber(Values v, const std::string& src, ClientOptions* o) {
  if (v.front() == "auto") {
    o->*Field = std::nullopt;
    return Status::Ok();
  }
  std::string allowed = "auto or 0.." + std::to_string(Max);
  if (Step > 1) allowed += ", a multiple of " + std::to_string(Step);
  std::optional<uint64_t> value = ParseDecimal(v.front());
  if (!value) return NotA(src, v.front(), "auto or a non-negative integer", allowed);
  if (*value > Max || *value % Step != 0) {
    return InvalidArgument(src + ": " + v.front() + " is out of range; allowed: " + allowed);
  }
  o->*Field = static_cast<uint32_t>(*value);
  return Status::Ok();
}

template <std::optional<uint32_t> ClientOptions::*Field>
std::vector<std::string> GetAutoNumber(const ClientOptions& o) {
  return {(o.*Field).has_value() ? std::to_string(*(o.*Field)) : "auto"};
}

template <std::string ClientOptions::*Field>
std::vector<std::string> GetText(const ClientOptions& o) {
  return {o.*Field};
}

template <std::vector<std::string> ClientOptions::*Field>
std::vector<std::string> GetList(const ClientOptions& o) {
  return o.*Field;
}

Status SetServers(Values v, const std::string& src, ClientOptions* o) {
  std::set<std::string> seen;
  for (const std::string& value : v) {
    // An address, or a DNS name standing for several (docs/fleet.md).
    Result<ServerSource> source = ParseServerSource(value);
    if (!source.ok()) return InvalidArgument(src + ": " + source.status().message());
    const std::string key = source->kind == ServerSource::Kind::kAddress
                                ? ServerAddress{source->host, source->port}.ToString()
                                : source->text;
    if (!seen.insert(key).second) {
      return InvalidArgument(src + ": '" + value + "' is listed twice; allowed: each server once");
    }
  }
  o->servers.assign(v.begin(), v.end());
  return Status::Ok();
}

Status SetAuthKey(Values v, const std::string& src, ClientOptions* o) {
  // The key is never echoed: the message says only what is wrong with it.
  Result<std::vector<uint8_t>> key = internal::ParseAuthKeyHex(v.front());
  if (!key.ok()) return InvalidArgument(src + ": " + key.status().message());
  o->auth_key_hex = v.front();
  return Status::Ok();
}

constexpr std::string_view kTransports = "auto, tcp, rdma";

Status SetTransport(Values v, const std::string& src, ClientOptions* o) {
  for (TransportMode mode : {TransportMode::kAuto, TransportMode::kTcp, TransportMode::kRdma}) {
    if (v.front() == TransportModeName(mode)) {
      o->transport = v.front();
      return Status::Ok();
    }
  }
  return NotA(src, v.front(), "a transport", kTransports);
}

constexpr std::string_view kMtus = "256, 512, 1024, 2048, 4096";

Status SetRdmaMtu(Values v, const std::string& src, ClientOptions* o) {
  std::optional<uint64_t> mtu = ParseDecimal(v.front());
  if (!mtu || *mtu < 256 || *mtu > 4096 || !std::has_single_bit(*mtu)) {
    return NotA(src, v.front(), "an RDMA path MTU", kMtus);
  }
  o->rdma_mtu = static_cast<uint32_t>(*mtu);
  return Status::Ok();
}

Status SetRdmaDevices(Values v, const std::string& src, ClientOptions* o) {
  std::set<std::string> seen;
  for (const std::string& device : v) {
    if (device.empty()) return InvalidArgument(src + ": an empty device name; allowed: HCA names such as mlx5_0");
    if (!seen.insert(device).second) {
      return InvalidArgument(src + ": '" + device + "' is listed twice; allowed: each device once");
    }
  }
  o->rdma_devices.assign(v.begin(), v.end());
  return Status::Ok();
}

// The DNS server discovery asks: "IP:PORT" (a numeric address: naming it
// would need DNS already).
Status SetDnsServer(Values v, const std::string& src, ClientOptions* o) {
  const std::string& text = v.front();
  if (!text.empty()) {
    Result<ServerAddress> address = ParseServerAddress(text);
    const bool numeric = address.ok() && address->host.find_first_not_of("0123456789.:abcdefABCDEF") == std::string::npos;
    if (!numeric) {
      return InvalidArgument(src + ": '" + text + "' is not a numeric address; allowed: IP:PORT or [IPv6]:PORT, or "
                             "empty for the system's name servers");
    }
  }
  o->dns_server = text;
  return Status::Ok();
}

Status SetPrometheusBind(Values v, const std::string& src, ClientOptions* o) {
  const std::string& text = v.front();
  if (!text.empty()) {
    Result<internal::HostPort> split = internal::SplitHostPort(text);
    // Port 0 would be a port nobody learns, so nothing could scrape it.
    if (!split.ok() || split->port == 0 || split->port > UINT16_MAX) {
      const std::string why = split.ok() ? "port " + std::to_string(split->port) + " is out of range"
                                         : split.status().message();
      return InvalidArgument(src + ": " + why + "; allowed: host:port to serve /metrics on, port 1..65535");
    }
  }
  o->prometheus_bind = text;  // empty: off
  return Status::Ok();
}

constexpr std::string_view kLogLevels = "debug, info, warn, error, off";

Status SetLogLevel(Values v, const std::string& src, ClientOptions* o) {
  LogLevel level;
  if (!ParseLogLevel(v.front(), &level)) return NotA(src, v.front(), "a log level", kLogLevels);
  o->log_level = static_cast<ClientLogLevel>(level);
  return Status::Ok();
}

std::vector<std::string> GetLogLevel(const ClientOptions& o) {
  const int level = static_cast<int>(o.log_level);
  constexpr std::string_view kNames[] = {"debug", "info", "warn", "error", "off"};
  if (level < 0 || level > 4) return {std::to_string(level)};
  return {std::string(kNames[level])};
}

// The access log's file: an absolute path (a library does not know the
// host program's working directory), or empty for off.
Status SetAccessLogPath(Values v, const std::string& src, ClientOptions* o) {
  const std::string& text = v.front();
  if (!text.empty() && text.front() != '/') {
    return NotA(src, text, "an absolute path", "a path starting with /; empty: off");
  }
  o->access_log_path = text;
  return Status::Ok();
}

// The access log's sample: a fraction in (0, 1].
Status SetSample(Values v, const std::string& src, ClientOptions* o) {
  const std::string& text = v.front();
  char* end = nullptr;
  const double x = text.empty() ? 0 : std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !(x > 0 && x <= 1)) return NotA(src, text, "a fraction", "0 < x <= 1");
  o->access_log_sample = x;
  return Status::Ok();
}

std::vector<std::string> GetSample(const ClientOptions& o) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", o.access_log_sample);
  return {text};
}

// The identity_* rows: a field of ClientOptions::identity each. The whole
// identity is checked by CheckClientOptions (CacheIdentity::Check).
template <std::string CacheIdentity::*Field>
Status SetIdentityText(Values v, const std::string& src, ClientOptions* o) {
  if (v.front().size() > CacheIdentity::kMaxFieldBytes) {
    return InvalidArgument(src + ": " + std::to_string(v.front().size()) + " bytes; allowed: at most " +
                           std::to_string(CacheIdentity::kMaxFieldBytes));
  }
  o->identity.*Field = v.front();
  return Status::Ok();
}

template <std::string CacheIdentity::*Field>
std::vector<std::string> GetIdentityText(const ClientOptions& o) {
  return {o.identity.*Field};
}

template <uint32_t CacheIdentity::*Field, uint64_t Min, uint64_t Max>
Status SetIdentityNumber(Values v, const std::string& src, ClientOptions* o) {
  MEMKV_ASSIGN_OR_RETURN(uint32_t n, ParseInRange(v.front(), src, Min, Max));
  o->identity.*Field = n;
  return Status::Ok();
}

template <uint32_t CacheIdentity::*Field>
std::vector<std::string> GetIdentityNumber(const ClientOptions& o) {
  return {std::to_string(o.identity.*Field)};
}

Status SetIdentityExtras(Values v, const std::string& src, ClientOptions* o) {
  std::vector<std::pair<std::string, std::string>> extras;
  for (const std::string& item : v) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0) {
      return NotA(src, item, "an extra", "name=value entries, names of A-Z a-z 0-9 _ . -");
    }
    extras.emplace_back(item.substr(0, eq), item.substr(eq + 1));
  }
  CacheIdentity probe;
  probe.model = "-";
  probe.extras = extras;
  if (Status s = probe.Check(); !s.ok()) return InvalidArgument(src + ": " + s.message());
  o->identity.extras = std::move(extras);
  return Status::Ok();
}

std::vector<std::string> GetIdentityExtras(const ClientOptions& o) {
  std::vector<std::string> out;
  for (const auto& [name, value] : o.identity.extras) out.push_back(name + "=" + value);
  return out;
}

const OptionRow kRows[] = {
    {{"servers", "MEMKV_SERVERS", "list", "",
      "host:port, [IPv6]:port, dns:NAME:PORT or srv:NAME; port 1..65535; each once",
      "the MemKV servers: addresses, or DNS names resolved to them; keys are placed over them by weighted "
      "rendezvous hashing", true, true},
     SetServers, GetList<&ClientOptions::servers>},
    {{"auth_key", "MEMKV_AUTH_KEY", "string", "", "64 hex characters",
      "the servers' network.auth_key (32 bytes in hex)", false, true},
     SetAuthKey, GetText<&ClientOptions::auth_key_hex>},
    {{"transport", "MEMKV_TRANSPORT", "choice", "auto", kTransports,
      "auto: RDMA where it works, else TCP; rdma: never falls back; tcp: no RDMA device is opened"},
     SetTransport, GetText<&ClientOptions::transport>},
    {{"num_connections", "MEMKV_NUM_CONNECTIONS", "integer", "4", "1..256", "connections per server"},
     SetNumber<&ClientOptions::num_connections, 1, 256>, GetNumber<&ClientOptions::num_connections>},
    {{"timeout_ms", "MEMKV_TIMEOUT_MS", "integer", "5000", "1..3600000", "deadline of every operation, in ms"},
     SetNumber<&ClientOptions::timeout_ms, 1, kMaxTimeoutMs>, GetNumber<&ClientOptions::timeout_ms>},
    {{"connect_timeout_ms", "MEMKV_CONNECT_TIMEOUT_MS", "integer", "2000", "1..3600000",
      "deadline of one connection attempt (connect and handshake), in ms"},
     SetNumber<&ClientOptions::connect_timeout_ms, 1, kMaxTimeoutMs>, GetNumber<&ClientOptions::connect_timeout_ms>},
    {{"discovery_interval_ms", "MEMKV_DISCOVERY_INTERVAL_MS", "integer", "10000", "0..3600000",
      "how often the server list is resolved again and each server asked its state, in ms; 0: resolve once"},
     SetNumber<&ClientOptions::discovery_interval_ms, 0, kMaxTimeoutMs>,
     GetNumber<&ClientOptions::discovery_interval_ms>},
    {{"dns_server", "MEMKV_DNS_SERVER", "host:port", "", "IP:PORT; empty: the system's name servers",
      "the DNS server that dns: and srv: entries are resolved with"},
     SetDnsServer, GetText<&ClientOptions::dns_server>},
    {{"resolve_timeout_ms", "MEMKV_RESOLVE_TIMEOUT_MS", "integer", "2000", "1..3600000",
      "deadline of resolving one dns: or srv: entry (all its DNS queries), in ms; libresolv waits whole seconds, "
      "so a silent DNS server costs at least 1 s"},
     SetNumber<&ClientOptions::resolve_timeout_ms, 1, kMaxTimeoutMs>, GetNumber<&ClientOptions::resolve_timeout_ms>},
    {{"rebalance_grace_ms", "MEMKV_REBALANCE_GRACE_MS", "integer", "300000", "0..3600000",
      "after a server joins, a miss on it is asked again of the key's previous owner for this long; 0: off"},
     SetNumber<&ClientOptions::rebalance_grace_ms, 0, kMaxTimeoutMs>, GetNumber<&ClientOptions::rebalance_grace_ms>},
    {{"async_threads", "MEMKV_ASYNC_THREADS", "integer", "4", "1..64",
      "threads that run asynchronous submissions (memkv/async.h), started as they are needed"},
     SetNumber<&ClientOptions::async_threads, 1, 64>, GetNumber<&ClientOptions::async_threads>},
    {{"store_shed_latency_ms", "MEMKV_STORE_SHED_LATENCY_MS", "integer", "1000", "0..3600000",
      "stores are shed (answered Busy, counted in stores_shed) while the recent average store latency exceeds "
      "this many ms; one store at a time still goes; 0: never"},
     SetNumber<&ClientOptions::store_shed_latency_ms, 0, kMaxTimeoutMs>,
     GetNumber<&ClientOptions::store_shed_latency_ms>},
    {{"store_shed_inflight", "MEMKV_STORE_SHED_INFLIGHT", "integer", "64", "0..65536",
      "a store is shed (answered Busy, counted in stores_shed) while this many stores are in flight from the "
      "client already; 0: no bound"},
     SetNumber<&ClientOptions::store_shed_inflight, 0, 65536>, GetNumber<&ClientOptions::store_shed_inflight>},
    {{"rdma_devices", "MEMKV_RDMA_DEVICES", "list", "", "HCA names such as mlx5_0, each once",
      "local RDMA devices to use; empty: the first one present", true},
     SetRdmaDevices, GetList<&ClientOptions::rdma_devices>},
    {{"rdma_mtu", "MEMKV_RDMA_MTU", "integer", "4096", kMtus, "RDMA path MTU; must equal the servers' rdma.mtu"},
     SetRdmaMtu, GetNumber<&ClientOptions::rdma_mtu>},
    {{"rdma_retry_count", "MEMKV_RDMA_RETRY_COUNT", "integer", "6", "0..7",
      "RDMA transport retries before a completion error (7 retries forever on Soft-RoCE)"},
     SetNumber<&ClientOptions::rdma_retry_count, 0, 7>, GetNumber<&ClientOptions::rdma_retry_count>},
    {{"rdma_timeout", "MEMKV_RDMA_TIMEOUT", "integer", "14", "1..31",
      "RDMA local ACK timeout exponent: 4.096 us * 2^n"},
     SetNumber<&ClientOptions::rdma_timeout, 1, 31>, GetNumber<&ClientOptions::rdma_timeout>},
    {{"rdma_qps", "MEMKV_RDMA_QPS", "integer", "2", "1..16", "RDMA queue pairs per server connection"},
     SetNumber<&ClientOptions::rdma_qps, 1, 16>, GetNumber<&ClientOptions::rdma_qps>},
    {{"rdma_gid_index", "MEMKV_RDMA_GID_INDEX", "auto or integer", "auto", "auto or 0..255",
      "source GID index; auto: a RoCE v2 GID with an IPv4-mapped address"},
     SetAutoNumber<&ClientOptions::rdma_gid_index, 255, 1>, GetAutoNumber<&ClientOptions::rdma_gid_index>},
    {{"rdma_traffic_class", "MEMKV_RDMA_TRAFFIC_CLASS", "auto or integer", "auto",
      "auto or 0..252, a multiple of 4", "GRH traffic class (DSCP << 2); auto: the server's"},
     SetAutoNumber<&ClientOptions::rdma_traffic_class, 252, 4>, GetAutoNumber<&ClientOptions::rdma_traffic_class>},
    {{"rdma_service_level", "MEMKV_RDMA_SERVICE_LEVEL", "auto or integer", "auto", "auto or 0..15",
      "service level (the lossless priority); auto: the server's"},
     SetAutoNumber<&ClientOptions::rdma_service_level, 15, 1>, GetAutoNumber<&ClientOptions::rdma_service_level>},
    {{"prometheus_bind", "MEMKV_PROMETHEUS_BIND", "host:port", "", "host:port, port 1..65535; empty: off",
      "serve the client's metrics as Prometheus text on http://host:port/metrics"},
     SetPrometheusBind, GetText<&ClientOptions::prometheus_bind>},
    {{"log_level", "MEMKV_LOG_LEVEL", "choice", "warn", kLogLevels, "client log lines below this level are dropped"},
     SetLogLevel, GetLogLevel},
    {{"access_log_path", "MEMKV_ACCESS_LOG_PATH", "string", "", "an absolute path; empty: off",
      "append a sampled access log here, one JSON line per operation on a sampled key (memkv-bench --replay)"},
     SetAccessLogPath, GetText<&ClientOptions::access_log_path>},
    {{"access_log_sample", "MEMKV_ACCESS_LOG_SAMPLE", "number", "0.01", "0 < x <= 1",
      "fraction of the key space the access log samples, by key hash: every operation on a sampled key is logged"},
     SetSample, GetSample},
    {{"access_log_max_lines_per_sec", "MEMKV_ACCESS_LOG_MAX_LINES_PER_SEC", "integer", "1000", "1..1000000",
      "access log lines a second at most; the rest are dropped and counted"},
     SetNumber<&ClientOptions::access_log_max_lines_per_sec, 1, 1'000'000>,
     GetNumber<&ClientOptions::access_log_max_lines_per_sec>},
    {{"identity_model", "MEMKV_IDENTITY_MODEL", "string", "", "UTF-8 text, at most 256 bytes; empty: no identity",
      "cache identity: the model's name; with it set, the client's keys are kept apart from every other identity's"},
     SetIdentityText<&CacheIdentity::model>, GetIdentityText<&CacheIdentity::model>},
    {{"identity_revision", "MEMKV_IDENTITY_REVISION", "string", "", "UTF-8 text, at most 256 bytes",
      "cache identity: the model's revision (a commit or tag) or a digest of its weights"},
     SetIdentityText<&CacheIdentity::revision>, GetIdentityText<&CacheIdentity::revision>},
    {{"identity_kv_dtype", "MEMKV_IDENTITY_KV_DTYPE", "string", "", "UTF-8 text, at most 256 bytes",
      "cache identity: the KV cache's data type (bfloat16, float8_e4m3fn, ...)"},
     SetIdentityText<&CacheIdentity::kv_dtype>, GetIdentityText<&CacheIdentity::kv_dtype>},
    {{"identity_layout", "MEMKV_IDENTITY_LAYOUT", "string", "", "UTF-8 text, at most 256 bytes",
      "cache identity: the engine's KV page layout (NHD, HND, layer_first, ...)"},
     SetIdentityText<&CacheIdentity::layout>, GetIdentityText<&CacheIdentity::layout>},
    {{"identity_block_tokens", "MEMKV_IDENTITY_BLOCK_TOKENS", "integer", "0", "0..1048576",
      "cache identity: tokens per block"},
     SetIdentityNumber<&CacheIdentity::block_tokens, 0, 1 << 20>, GetIdentityNumber<&CacheIdentity::block_tokens>},
    {{"identity_tp_rank", "MEMKV_IDENTITY_TP_RANK", "integer", "0", "0..65535, below identity_tp_size",
      "cache identity: the tensor-parallel rank"},
     SetIdentityNumber<&CacheIdentity::tp_rank, 0, 65535>, GetIdentityNumber<&CacheIdentity::tp_rank>},
    {{"identity_tp_size", "MEMKV_IDENTITY_TP_SIZE", "integer", "1", "1..65536",
      "cache identity: the tensor-parallel world size"},
     SetIdentityNumber<&CacheIdentity::tp_size, 1, 65536>, GetIdentityNumber<&CacheIdentity::tp_size>},
    {{"identity_engine", "MEMKV_IDENTITY_ENGINE", "string", "", "UTF-8 text, at most 256 bytes",
      "cache identity: the engine's name (vllm, sglang, lmcache, llama.cpp, ...)"},
     SetIdentityText<&CacheIdentity::engine>, GetIdentityText<&CacheIdentity::engine>},
    {{"identity_engine_version", "MEMKV_IDENTITY_ENGINE_VERSION", "string", "", "UTF-8 text, at most 256 bytes",
      "cache identity: the engine's version"},
     SetIdentityText<&CacheIdentity::engine_version>, GetIdentityText<&CacheIdentity::engine_version>},
    {{"identity_extras", "MEMKV_IDENTITY_EXTRAS", "list", "", "name=value entries (names of A-Z a-z 0-9 _ . -), at most 16",
      "cache identity: free-form fields (a pipeline rank, a LoRA adapter, a quantization recipe)", true},
     SetIdentityExtras, GetIdentityExtras},
};

const std::vector<ClientOptionInfo>& Infos() {
  static const std::vector<ClientOptionInfo> infos = [] {
    std::vector<ClientOptionInfo> out;
    for (const OptionRow& row : kRows) out.push_back(row.info);
    return out;
  }();
  return infos;
}

const OptionRow* FindRow(std::string_view name) {
  for (const OptionRow& row : kRows) {
    if (row.info.name == name) return &row;
  }
  return nullptr;
}

std::string OptionNames() {
  std::string names;
  for (const OptionRow& row : kRows) names += (names.empty() ? "" : ", ") + std::string(row.info.name);
  return names;
}

std::string Trim(std::string_view text) {
  const size_t first = text.find_first_not_of(" \t");
  if (first == std::string_view::npos) return "";
  return std::string(text.substr(first, text.find_last_not_of(" \t") + 1 - first));
}

// Splits a comma list, trimming blanks around entries; "" is the empty
// list, and an empty entry ("a,,b" or a trailing comma) is reported rather
// than skipped.
Result<std::vector<std::string>> SplitList(std::string_view text, const std::string& src) {
  std::vector<std::string> items;
  if (Trim(text).empty()) return items;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    std::string item = Trim(text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
    if (item.empty()) {
      return InvalidArgument(src + ": entry " + std::to_string(items.size() + 1) + " of '" + std::string(text) +
                             "' is empty; allowed: a comma-separated list");
    }
    items.push_back(std::move(item));
    if (comma == std::string_view::npos) return items;
    start = comma + 1;
  }
}

Status UnknownOption(std::string_view name, std::string_view source) {
  const std::string where = source.empty() ? "" : std::string(source) + ": ";
  return InvalidArgument(where + "unknown client option '" + std::string(name) + "'; allowed: " + OptionNames());
}

// What a default looks like in the docs' table.
std::string DefaultCell(const ClientOptionInfo& info) {
  if (info.required) return "required";
  if (info.default_text.empty()) return "empty";
  return "`" + std::string(info.default_text) + "`";
}

// A value of the file through the row's setter: one string, or the list's
// strings. A null value ("key:" alone) keeps the default.
void ReadClientField(const OptionRow& row, const internal::FlatYamlEntry& entry, Diagnostics* d,
                     ClientOptions* options) {
  using Kind = internal::FlatYamlValue::Kind;
  const std::string& path = entry.key;
  const internal::FlatYamlValue& value = entry.value;
  if (value.kind == Kind::kNull) return;
  const Kind want = row.info.is_list ? Kind::kList : Kind::kScalar;
  if (value.kind != want) {
    d->Fail(path, path + ": expected " + (row.info.is_list ? "a list" : "a string") + ", got " +
                      std::string(internal::FlatYamlKind(value)));
    return;
  }
  std::vector<std::string> values = value.items;
  if (!row.info.is_list) values[0] = Trim(values[0]);
  if (Status s = row.set(values, path, options); !s.ok()) d->Fail(path, s.message());
}

void ParseYamlInto(std::string_view yaml_text, Diagnostics* d, ClientOptions* options) {
  std::optional<std::vector<internal::FlatYamlEntry>> entries = internal::ParseFlatYaml(yaml_text, d);
  if (!entries) return;
  std::vector<std::string_view> names;
  for (const OptionRow& row : kRows) names.push_back(row.info.name);
  std::set<std::string, std::less<>> seen;
  for (const internal::FlatYamlEntry& entry : *entries) {
    d->NoteLocation(entry.key, entry.line, entry.value_column);
    if (!seen.insert(entry.key).second) {
      d->Fail(entry.key, "duplicate field '" + entry.key + "'; give each field once");
      continue;
    }
    auto row = std::find_if(std::begin(kRows), std::end(kRows),
                            [&](const OptionRow& r) { return r.info.name == entry.key; });
    if (row == std::end(kRows)) {
      std::string text = "unknown field '" + entry.key + "'";
      if (std::optional<std::string_view> close = internal::ClosestName(entry.key, names)) {
        text += " (did you mean '" + std::string(*close) + "'?)";
      }
      d->Fail(entry.key, text + "; allowed: " + internal::JoinNames(names));
      continue;
    }
    ReadClientField(*row, entry, d, options);
  }
}

std::optional<std::string> GetEnv(const EnvLookup& env, std::string_view name) {
  if (!env) return std::nullopt;
  std::optional<std::string> value = env(name);
  // An empty variable counts as unset, as shells make "VAR=" easy to leave behind.
  if (value && value->empty()) return std::nullopt;
  return value;
}

void ApplyEnv(const EnvLookup& env, Diagnostics* d, ClientOptions* options) {
  for (const OptionRow& row : kRows) {
    std::optional<std::string> value = GetEnv(env, row.info.env);
    if (!value) continue;
    Status s = SetClientOption(options, row.info.name, *value, row.info.env);
    if (!s.ok()) d->Fail(std::string(row.info.env), s.message());
  }
}

// Without servers or a key the client cannot do anything; say which
// variable to set rather than failing later at connect. `unreadable` lists
// the fields whose value was given but could not be read: "none
// configured" would only misdirect there.
void CheckRequired(const ClientOptions& config, const std::optional<std::string>& config_path,
                   const std::set<std::string>& unreadable, std::vector<std::string>* problems) {
  const std::string in_file = config_path ? "in " + *config_path + " (named by MEMKV_CONFIG)"
                                          : "in a YAML file named by MEMKV_CONFIG";
  if (config.servers.empty() && !unreadable.count("servers")) {
    problems->push_back(
        "servers: none configured; set MEMKV_SERVERS=host:port[,host:port...] "
        "(or `servers:` " +
        in_file + ")");
  }
  if (config.auth_key_hex.empty() && !unreadable.count("auth_key")) {
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
  for (const OptionRow& row : kRows) {
    const bool from_file = file_unreadable || (file_d && file_d->IsFailed(row.info.name));
    const bool from_env = env_d.IsFailed(row.info.env);
    if (from_file || from_env) out->insert(std::string(row.info.name));
  }
}

// The parsed forms the CLI reads; the values were checked by their setters.
ClientConfig Resolved(ClientOptions options) {
  ClientConfig config;
  for (const std::string& server : options.servers) {
    if (Result<ServerAddress> a = ParseServerAddress(server); a.ok()) config.servers.push_back(std::move(*a));
  }
  if (Result<std::vector<uint8_t>> key = internal::ParseAuthKeyHex(options.auth_key_hex); key.ok()) {
    config.auth_key = std::move(*key);
  }
  config.options = std::move(options);
  return config;
}

}  // namespace
}  // namespace memkv::config

// The client-option API of memkv/client.h, over the table above.
namespace memkv {

std::span<const ClientOptionInfo> ClientOptionTable() { return config::Infos(); }

const ClientOptionInfo* FindClientOption(std::string_view name) {
  for (const ClientOptionInfo& info : config::Infos()) {
    if (info.name == name) return &info;
  }
  return nullptr;
}

Status SetClientOptionList(ClientOptions* options, std::string_view name, std::span<const std::string> values,
                           std::string_view source) {
  const config::OptionRow* row = config::FindRow(name);
  if (row == nullptr) return config::UnknownOption(name, source);
  const std::string src(source.empty() ? name : source);
  if (!row->info.is_list && values.size() != 1) {
    return InvalidArgument(src + ": " + std::to_string(values.size()) + " values; allowed: one");
  }
  return row->set(values, src, options);
}

Status SetClientOption(ClientOptions* options, std::string_view name, std::string_view value,
                       std::string_view source) {
  const config::OptionRow* row = config::FindRow(name);
  if (row == nullptr) return config::UnknownOption(name, source);
  const std::string src(source.empty() ? name : source);
  if (!row->info.is_list) {
    const std::string text = config::Trim(value);
    return row->set(std::span<const std::string>(&text, 1), src, options);
  }
  MEMKV_ASSIGN_OR_RETURN(std::vector<std::string> items, config::SplitList(value, src));
  return row->set(items, src, options);
}

std::string ClientOptionText(const ClientOptions& options, std::string_view name) {
  const config::OptionRow* row = config::FindRow(name);
  if (row == nullptr) return "";
  std::string text;
  for (const std::string& value : row->get(options)) text += (text.empty() ? "" : ",") + value;
  return text;
}

Status CheckClientOptions(const ClientOptions& options) {
  if (options.servers.empty()) return InvalidArgument("servers: none given; list at least one host:port");
  ClientOptions scratch;
  for (const config::OptionRow& row : config::kRows) {
    const std::vector<std::string> values = row.get(options);
    MEMKV_RETURN_IF_ERROR(row.set(values, std::string(row.info.name), &scratch));
  }
  // The identity's fields together (its rows check each alone).
  if (!options.identity.empty()) MEMKV_RETURN_IF_ERROR(options.identity.Check());
  return Status::Ok();
}

Status SetClientOptionsFromEnvironment(ClientOptions* options, const ClientEnvLookup& env) {
  config::Diagnostics d("");
  config::ApplyEnv(env, &d, options);
  return d.ToStatus();
}

std::string ClientOptionsMarkdown() {
  std::string out =
      "| option (YAML key) | variable | default | allowed | meaning |\n"
      "|---|---|---|---|---|\n";
  for (const ClientOptionInfo& info : ClientOptionTable()) {
    out += "| `" + std::string(info.name) + "` | `" + std::string(info.env) + "` | " + config::DefaultCell(info) +
           " | " + std::string(info.allowed) + " | " + std::string(info.doc) + " |\n";
  }
  return out;
}

}  // namespace memkv

namespace memkv::config {

std::string_view TransportModeName(TransportMode mode) {
  switch (mode) {
    case TransportMode::kAuto: return "auto";
    case TransportMode::kRdma: return "rdma";
    case TransportMode::kTcp: return "tcp";
  }
  return "unknown";
}

std::string ServerAddress::ToString() const { return internal::JoinHostPort(host, port); }

Result<ServerAddress> ParseServerAddress(std::string_view text) {
  constexpr std::string_view kAllowed = "; allowed: host:port or [IPv6]:port, port 1..65535";
  Result<internal::HostPort> split = internal::SplitHostPort(text);
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
  ClientOptions options;
  ParseYamlInto(yaml_text, &d, &options);
  if (!d.empty()) return d.ToStatus();
  return Resolved(std::move(options));
}

Result<ClientConfig> LoadClientConfig(const EnvLookup& env) {
  ClientOptions options;
  std::vector<std::string> problems;
  std::optional<Diagnostics> file_d;
  bool file_unreadable = false;
  std::optional<std::string> config_path = GetEnv(env, "MEMKV_CONFIG");
  if (config_path) {
    Result<std::string> text = internal::ReadConfigFile(*config_path);
    if (!text.ok()) {
      problems.push_back("MEMKV_CONFIG: " + text.status().message());
      file_unreadable = true;
    } else {
      file_d.emplace(*config_path);
      ParseYamlInto(*text, &*file_d, &options);
      for (std::string& line : file_d->lines()) problems.push_back(std::move(line));
    }
  }
  Diagnostics env_d("");
  ApplyEnv(env, &env_d, &options);
  for (std::string& line : env_d.lines()) problems.push_back(std::move(line));
  std::set<std::string> unreadable;
  CollectUnreadable(file_d ? &*file_d : nullptr, file_unreadable, env_d, &unreadable);
  CheckRequired(options, config_path, unreadable, &problems);
  if (!problems.empty()) return internal::JoinProblems(problems);
  return Resolved(std::move(options));
}

}  // namespace memkv::config
