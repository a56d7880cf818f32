// What the MEMKV NIXL backend is created with: the client options and the
// engine's own bounds, from the parameters of createBackend("MEMKV", params),
// each falling back to its MEMKV_* environment variable.
//
// Both sources are passed in as lookups: the NIXL glue hands in the backend's
// parameter map and getenv, tests maps. Pure otherwise; any thread.
#ifndef MEMKV_NIXL_SETTINGS_H_
#define MEMKV_NIXL_SETTINGS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "memkv/client.h"
#include "memkv/status.h"

namespace memkv::nixl {

using Lookup = std::function<std::optional<std::string>(std::string_view name)>;

inline constexpr uint32_t kDefaultBatchSize = 64;
inline constexpr uint32_t kMaxBatchSize = 4096;
inline constexpr uint32_t kDefaultWorkers = 2;
inline constexpr uint32_t kMaxWorkers = 64;
// The identity's engine when identity_model is given and identity_engine is not.
inline constexpr std::string_view kDefaultIdentityEngine = "nixl";

struct EngineSettings {
  ClientOptions client;
  // Prepended to every MemKV key the backend makes (key_prefix).
  std::string key_prefix;
  // Descriptors per MemKV batch call: a transfer of N descriptors is cut into
  // ceil(N / batch_size) batches (batch_size, 1..4096).
  uint32_t batch_size = kDefaultBatchSize;
  // Threads that carry the batches of posted transfers (workers, 1..64).
  uint32_t workers = kDefaultWorkers;
};

// One backend parameter: its name in createBackend's map, the environment
// variable it falls back to, and what it means.
struct Parameter {
  std::string_view name;
  std::string_view env;
  std::string_view meaning;
};

// Every parameter the backend reads: the client options, then its own.
const std::vector<Parameter>& Parameters();

// The settings from `params` (createBackend's map), each unset or empty one
// from `env`. servers and auth_key are required (from either). A parameter
// name the backend does not know, or a value out of its range, is an
// InvalidArgument that names every problem, the parameter, its variable and
// what it allows. Client options (every row of ClientOptionTable, by the
// same name) go through SetClientOption: a bad one reads
// "transport (NIXL parameter): 'x' is not a transport; allowed: ..." or
// "MEMKV_TRANSPORT: ...", by where it came from. The cache identity is the
// identity_* options': with a model and no engine the engine is
// kDefaultIdentityEngine, and a set identity must pass CacheIdentity::Check.
Result<EngineSettings> SettingsFrom(const std::map<std::string, std::string>& params, const Lookup& env);

}  // namespace memkv::nixl

#endif  // MEMKV_NIXL_SETTINGS_H_
