// tenants[] in the server's YAML (internal to src/config): reading each
// item, key files included, and the rules across them (docs/tenants.md).
#ifndef MEMKV_CONFIG_TENANTS_CONFIG_H_
#define MEMKV_CONFIG_TENANTS_CONFIG_H_

#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "config/diagnostics.h"
#include "config/server_config.h"

namespace memkv::config::internal {

// Reads the list at `path` ("tenants"): every field of every item, key
// files read now (a missing or malformed file is a problem naming its path).
void ReadTenants(const YAML::Node& node, const std::string& path, Diagnostics* d, std::vector<TenantConfig>* out);

// Names, prefixes and keys across the tenants and network.auth_key: each
// problem one line. Key bytes are never shown.
void CheckTenantRules(const ServerConfig& config, Diagnostics* d);

}  // namespace memkv::config::internal

#endif  // MEMKV_CONFIG_TENANTS_CONFIG_H_
