// What a kv_store handle is opened with besides its servers and namespace:
// the client options and the handle's own bounds, from the MEMKV_*
// environment, and the cache identity, from the URI's query over the
// environment's MEMKV_IDENTITY_*.
//
// The environment is passed in as a lookup function: the C edge (vtable.cc)
// hands in getenv, tests a map. Pure otherwise; any thread.
#ifndef MEMKV_KVSTORE_SETTINGS_H_
#define MEMKV_KVSTORE_SETTINGS_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "memkv/client.h"
#include "memkv/status.h"

namespace memkv::kvstore {

using EnvLookup = std::function<std::optional<std::string>(std::string_view name)>;

inline constexpr uint64_t kDefaultBufferBytes = 1ULL << 30;    // MEMKV_KV_STORE_BUFFER_BYTES
inline constexpr uint64_t kDefaultPrefetchBytes = 1ULL << 30;  // MEMKV_KV_STORE_PREFETCH_BYTES
inline constexpr uint64_t kDefaultSharedClients = 8;  // MEMKV_KV_STORE_SHARED_CLIENTS
inline constexpr uint64_t kMaxSharedClients = 64;
inline constexpr uint64_t kMinBufferBytes = 1ULL << 20;
inline constexpr uint64_t kMaxBoundBytes = 64ULL << 30;
// The identity's engine when a model is given and no engine is.
inline constexpr std::string_view kDefaultIdentityEngine = "kv_store";

struct StoreSettings {
  ClientOptions client;
  // put_chunk flushes the handle's buffer once it holds this many bytes.
  uint64_t buffer_bytes = kDefaultBufferBytes;
  // The prefetch cache holds at most this many bytes; 0: prefetch is off.
  uint64_t prefetch_bytes = kDefaultPrefetchBytes;
  // MEMKV_KV_STORE_SHARED_CLIENTS: how many clients the process keeps for
  // handles opened alike (SharedClients); 0: every handle its own client.
  uint64_t shared_clients = kDefaultSharedClients;
  // Everything `client` was made from (the servers, the URI's identity
  // fields, each MEMKV_* variable read and its value): handles whose keys
  // are equal may share a client.
  std::string client_key;
};

// The client options for `servers`: every option of the client option table
// (memkv/client.h) from its MEMKV_* variable (unset: the client's default),
// MEMKV_AUTH_KEY required; and the bounds from MEMKV_KV_STORE_BUFFER_BYTES
// (1 MiB..64 GiB) and MEMKV_KV_STORE_PREFETCH_BYTES (0..64 GiB), each a byte
// count with an optional KiB, MiB or GiB suffix, and
// MEMKV_KV_STORE_SHARED_CLIENTS (0..64). Then the cache identity:
// each of `identity` (the URI's query, StoreUri::identity) replaces its
// MEMKV_IDENTITY_* field, an extra.NAME the environment's extra of that
// name; with a model and no engine the engine is kDefaultIdentityEngine; a
// set identity must pass CacheIdentity::Check. InvalidArgument naming every
// variable and URI field that is wrong and what it allows, in the table's
// wording.
Result<StoreSettings> SettingsFromEnvironment(const EnvLookup& env, std::vector<std::string> servers,
                                              std::span<const std::pair<std::string, std::string>> identity = {});

// MEMKV_LOG_LEVEL as a level, or nullopt when it is unset or not a level.
std::optional<ClientLogLevel> LogLevelFromEnvironment(const EnvLookup& env);

// "12", "64 MiB", "1GiB" -> bytes; nullopt when it is not one of those.
std::optional<uint64_t> ParseByteCount(std::string_view text);

}  // namespace memkv::kvstore

#endif  // MEMKV_KVSTORE_SETTINGS_H_
