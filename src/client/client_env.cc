// Client::CreateFromEnvironment: the one place the client reads the process
// environment (SPEC §4), through the config loader. Kept apart from
// client.cc so the rest of the library never touches getenv.
#include <cstdlib>

#include "base/bytes.h"
#include "client/client_from_config.h"
#include "config/client_config.h"
#include "memkv/client.h"

namespace memkv {

Result<std::unique_ptr<Client>> Client::CreateFromEnvironment() {
  EnvLookup env = [](std::string_view name) -> std::optional<std::string> {
    const char* value = std::getenv(std::string(name).c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
  MEMKV_ASSIGN_OR_RETURN(ClientConfig config, LoadClientConfig(env));
  return CreateClient(config);
}

Result<std::unique_ptr<Client>> CreateClient(const ClientConfig& config) {
  ClientOptions options;
  for (const ServerAddress& server : config.servers) options.servers.push_back(server.ToString());
  options.auth_key_hex = HexEncode(config.auth_key.data(), config.auth_key.size());
  options.transport = std::string(TransportModeName(config.transport));
  options.num_connections = config.num_connections;
  options.timeout_ms = config.timeout_ms;
  options.connect_timeout_ms = config.connect_timeout_ms;
  options.rdma_devices = config.rdma_devices;
  options.rdma_mtu = config.rdma_mtu;
  options.rdma_retry_count = config.rdma_retry_count;
  options.rdma_timeout = config.rdma_timeout;
  options.rdma_qps = config.rdma_qps;
  options.prometheus_bind = config.prometheus_bind;
  options.log_level = static_cast<ClientLogLevel>(config.log_level);
  return Client::Create(options);
}

}  // namespace memkv
