// Client configuration: the YAML file named by MEMKV_CONFIG, then
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
#include "memkv/client.h"
#include "memkv/status.h"

namespace memkv::config {

enum class TransportMode { kAuto, kRdma, kTcp };
std::string_view TransportModeName(TransportMode mode);

struct ServerAddress {
  std::string host;
  uint16_t port = 0;
  std::string ToString() const;  // "host:port" ("[::1]:9900" for IPv6)
};

// Parses "host:port", "[v6]:port"; InvalidArgument naming the text otherwise.
Result<ServerAddress> ParseServerAddress(std::string_view text);

// The client options LoadClientConfig resolved, with the two the CLI reads
// in parsed form.
struct ClientConfig {
  ClientOptions options;               // every row of ClientOptionTable()
  std::vector<ServerAddress> servers;  // options.servers, parsed
  std::vector<uint8_t> auth_key;       // options.auth_key_hex, decoded (32 bytes)
};

using EnvLookup = std::function<std::optional<std::string>(std::string_view name)>;

// The YAML file named by MEMKV_CONFIG (keys: the option names of
// ClientOptionTable(); unknown keys are an error), then each option's MEMKV_*
// variable, which overrides the file's key. Both go through the table's
// setters (memkv/client.h), so values are checked and reported as everywhere
// else. Every problem is reported at once, as in ParseServerConfig. Missing
// servers or auth key is an error naming the variable to set.
Result<ClientConfig> LoadClientConfig(const EnvLookup& env);

// The parts of LoadClientConfig, for tests.
Result<ClientConfig> ParseClientConfigYaml(std::string_view yaml_text, std::string_view source);

}  // namespace memkv::config

#endif  // MEMKV_CONFIG_CLIENT_CONFIG_H_
