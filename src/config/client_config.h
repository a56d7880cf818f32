// Client configuration (SPEC §4): the YAML file named by MEMKV_CONFIG, then
// MEMKV_* environment variables, each variable overriding the file's field.
//
// The environment is passed in as a lookup function so nothing here calls
// getenv: main() hands in the real environment, tests hand in a map.
#ifndef MEMKV_CONFIG_CLIENT_CONFIG_H_
#define MEMKV_CONFIG_CLIENT_CONFIG_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/log.h"
#include "memkv/status.h"

namespace memkv {

enum class TransportMode { kAuto, kRdma, kTcp };
std::string_view TransportModeName(TransportMode mode);

struct ServerAddress {
  std::string host;
  uint16_t port = 0;
  std::string ToString() const;  // "host:port" ("[::1]:9900" for IPv6)
};

// Parses "host:port", "[v6]:port"; InvalidArgument naming the text otherwise.
Result<ServerAddress> ParseServerAddress(std::string_view text);

struct ClientConfig {
  std::vector<ServerAddress> servers;
  std::vector<uint8_t> auth_key;          // 32 bytes
  TransportMode transport = TransportMode::kAuto;
  uint32_t num_connections = 4;           // per server, 1..256
  uint32_t timeout_ms = 5000;             // per-operation deadline, 1..3600000
  uint32_t connect_timeout_ms = 2000;     // 1..3600000
  std::vector<std::string> rdma_devices;  // MEMKV_RDMA_DEVICES
  uint32_t rdma_mtu = 4096;               // MEMKV_RDMA_MTU: 256..4096, power of two
  uint32_t rdma_retry_count = 6;          // MEMKV_RDMA_RETRY_COUNT: 0..7 (7 = forever on rxe)
  uint32_t rdma_timeout = 14;             // MEMKV_RDMA_TIMEOUT: ACK timeout exponent 1..31
  uint32_t rdma_qps = 2;                  // MEMKV_RDMA_QPS: QPs per connection, 1..16
  std::string prometheus_bind;            // MEMKV_PROMETHEUS_BIND, optional
  LogLevel log_level = LogLevel::kWarn;   // MEMKV_LOG_LEVEL: debug, info, warn, error, off
};

using EnvLookup = std::function<std::optional<std::string>(std::string_view name)>;

// YAML keys (all optional): servers (list of "host:port"), auth_key (64 hex),
// transport, num_connections, timeout_ms, connect_timeout_ms, rdma_devices
// (list), rdma_mtu, rdma_retry_count, rdma_timeout, rdma_qps,
// prometheus_bind, log_level. Unknown keys are an error.
// Environment: MEMKV_CONFIG (path of that YAML), MEMKV_SERVERS (comma list),
// MEMKV_AUTH_KEY, MEMKV_TRANSPORT, MEMKV_NUM_CONNECTIONS, MEMKV_TIMEOUT_MS,
// MEMKV_RDMA_DEVICES, MEMKV_RDMA_MTU, MEMKV_RDMA_RETRY_COUNT,
// MEMKV_RDMA_TIMEOUT, MEMKV_RDMA_QPS, MEMKV_PROMETHEUS_BIND, MEMKV_LOG_LEVEL.
// Every problem is reported at once, as in ParseServerConfig. Missing servers
// or auth key is an error naming the variable to set.
Result<ClientConfig> LoadClientConfig(const EnvLookup& env);

// The parts of LoadClientConfig, for tests.
Result<ClientConfig> ParseClientConfigYaml(std::string_view yaml_text, std::string_view source);

}  // namespace memkv

#endif  // MEMKV_CONFIG_CLIENT_CONFIG_H_
