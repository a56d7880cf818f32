// Client::CreateFromEnvironment: the one place the client reads the process
// environment, through the config loader. Kept apart from
// client.cc so the rest of the library never touches getenv.
#include <cstdlib>

#include "client/client_from_config.h"
#include "config/client_config.h"
#include "memkv/client.h"

namespace memkv {

Result<std::unique_ptr<Client>> Client::CreateFromEnvironment() {
  config::EnvLookup env = [](std::string_view name) -> std::optional<std::string> {
    const char* value = std::getenv(std::string(name).c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
  MEMKV_ASSIGN_OR_RETURN(config::ClientConfig config, config::LoadClientConfig(env));
  return client::CreateClient(config);
}

}  // namespace memkv

namespace memkv::client {

Result<std::unique_ptr<Client>> CreateClient(const config::ClientConfig& config) {
  return Client::Create(config.options);
}

}  // namespace memkv::client
