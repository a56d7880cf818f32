// Building a Client from the config layer's ClientConfig (MEMKV_CONFIG and
// MEMKV_* resolved by LoadClientConfig). Used by Client::CreateFromEnvironment
// and by the CLI, which resolves the environment with local defaults first.
#ifndef MEMKV_CLIENT_CLIENT_FROM_CONFIG_H_
#define MEMKV_CLIENT_CLIENT_FROM_CONFIG_H_

#include <memory>

#include "config/client_config.h"
#include "memkv/client.h"

namespace memkv {

Result<std::unique_ptr<Client>> CreateClient(const ClientConfig& config);

}  // namespace memkv

#endif  // MEMKV_CLIENT_CLIENT_FROM_CONFIG_H_
