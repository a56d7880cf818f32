// Server configuration (docs/configuration.md): the YAML of
// /etc/memkv/config.yaml as typed structs, with defaults, parsing and
// whole-config validation.
//
// Loading never stops at the first problem: every unknown key, unparsable
// value and rule violation is collected, each as one line naming the field,
// the value and what is allowed, and returned together in one
// InvalidArgument status (lines joined with "\n"). Pure functions; no I/O
// except LoadServerConfigFile reading its file.
#ifndef MEMKV_CONFIG_SERVER_CONFIG_H_
#define MEMKV_CONFIG_SERVER_CONFIG_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/tenant_map.h"
#include "memkv/status.h"

namespace memkv::config {

enum class StorageMode { kDirect, kFile, kMemory };
std::string_view StorageModeName(StorageMode mode);

struct NetworkConfig {
  std::string host = "127.0.0.1";        // network.address, split; loopback unless given
  uint16_t port = 9900;                  // 0 = any free port (tests); admin is then any free port too
  std::optional<std::vector<uint8_t>> auth_key;  // 32 bytes when set
  std::string tls_cert;                  // path or empty
  std::string tls_key;                   // path or empty
  // Connections beyond these are closed at once on accept (counted in
  // memkv_connections_refused_total): all open ones, and those that have
  // not authenticated yet (each costs a few KiB until then).
  uint32_t max_connections = 10000;
  uint32_t max_unauthenticated_connections = 4096;
  // An authenticated client must send each frame whole within this of its
  // first byte; one stuck mid-frame is closed, and the pool space reserved
  // for its put released.
  uint32_t frame_timeout_ms = 30000;
  // Loads before stores: each worker serves connections waiting on a load
  // ahead of those receiving a put's value, and takes at most 256 KiB of a
  // value per turn (docs/operations.md, "Loads before stores").
  bool loads_first = true;
  // After a turn, each worker keeps polling its connections for at most
  // this long before it sleeps, so that a request following soon is not
  // delayed by a wakeup; adaptive, 0 = sleep at once (docs/configuration.md).
  uint32_t busy_poll_us = 100;
  bool operator==(const NetworkConfig&) const = default;
};

struct MemoryConfig {
  uint64_t block_size_bytes = 2ULL << 20;
  uint64_t max_size_bytes = 0;           // 0 = sized to the box (DefaultMemoryPoolBytes)
  // Fault the whole pool in at start, so the first pass over it runs at the
  // speed of later ones (docs/configuration.md, "Memory backing").
  bool prefault = true;
  // A value sent to a TCP reader (which checks it end to end) is hashed by
  // the server after the send at most once per this many ms; 0: after every
  // send (docs/configuration.md).
  uint32_t read_check_interval_ms = 1000;
  // The largest value this server stores (announced to clients at Connect);
  // 1 MiB .. 64 GiB (proto::kMaxValueBytesCeiling).
  uint64_t max_value_size_bytes = 16ULL << 30;
  // Values put with retention "pinned" (docs/storage.md): together at
  // most this fraction of the pool, in (0, 1]; a pin put without a TTL
  // gets pin_ttl_ms, and none lasts longer than pin_ttl_max_ms.
  double pinned_max_fraction = 0.5;
  uint64_t pin_ttl_ms = 30ULL * 60 * 1000;
  uint64_t pin_ttl_max_ms = 24ULL * 60 * 60 * 1000;
  bool operator==(const MemoryConfig&) const = default;
};

struct RdmaConfig {
  std::string device = "mlx5_0";
  uint32_t gid_index = 0;                // 0 = auto
  uint32_t traffic_class = 0;            // 0 = auto; ToS byte, DSCP << 2
  uint32_t service_level = 0;            // 0 = auto; 0..15
  uint32_t mtu = 4096;                   // 256/512/1024/2048/4096
  uint32_t num_dcis = 16;                // DC initiator pool size
  bool operator==(const RdmaConfig&) const = default;
};

struct DriveConfig {
  std::string media;
  // Mode file only: the size a missing drive file is created with on the
  // first start (0 = kDefaultDriveFileBytes, at most half the free space).
  uint64_t size_bytes = 0;
  bool operator==(const DriveConfig&) const = default;
};

inline constexpr uint64_t kDefaultDriveFileBytes = 4ULL << 30;

// storage.sync: when a put to the drives is acknowledged (docs/storage.md,
// "Durability").
enum class StorageSync : uint8_t {
  kAlways,    // after its bytes and record are on stable media: survives a power cut
  kInterval,  // once written to the drives: survives kill -9; flushed every sync_interval_ms
};
std::string_view StorageSyncName(StorageSync sync);

// storage.encryption: whether values on the drives are sealed (docs/storage.md,
// "Encryption at rest").
enum class StorageEncryption : uint8_t {
  kOff,
  kAes256Gcm,  // AES-256-GCM under a key per tenant derived from encryption_key_file
};
std::string_view StorageEncryptionName(StorageEncryption encryption);

struct StorageConfig {
  StorageMode mode = StorageMode::kDirect;
  uint64_t block_size_bytes = 4ULL << 20;
  std::vector<DriveConfig> drives;
  bool promote_on_read = true;   // copy values read from a drive back into DRAM
  uint32_t io_threads = 16;      // drive I/O threads, 1..64
  StorageSync sync = StorageSync::kInterval;
  uint32_t sync_interval_ms = 1000;  // kInterval: the longest a write waits for its flush, 1..60000
  // kAlways: an event loop writes and flushes its turn's small puts itself
  // while the drives' recent flushes took at most this long; 0 (the
  // default): an I/O thread does, so a stalled drive never holds a loop.
  uint32_t flush_on_loop_us = 0;  // 0..1000000
  StorageEncryption encryption = StorageEncryption::kOff;
  // The master key: 32 raw bytes or 64 hex characters; required with encryption.
  std::string encryption_key_file;
  // storage.busy_queue_size: puts are answered Busy while the bytes of puts
  // accepted and waiting for the drives are at or above this (docs/fleet.md,
  // "Busy"). Unset: half the DRAM pool; 0: never Busy.
  std::optional<uint64_t> busy_queue_size_bytes;
  // Set when the file names no storage (neither storage.mode nor
  // storage.drives): mode file with the embedded default's one drive file,
  // <data dir>/drive0.memkv, filled in by ResolveDataDir.
  bool drive_in_data_dir = false;
  bool operator==(const StorageConfig&) const = default;
};

// Per-namespace counts in /metrics and /v1/status (docs/metrics.md, "Namespaces").
struct MetricsConfig {
  std::string namespace_separator = "/";  // a key's namespace: its text up to the first of these
  uint32_t namespace_top = 16;            // namespaces with series of their own; the rest are "other"
  bool operator==(const MetricsConfig&) const = default;
};

// identities.*: the cache identities (memkv/identity.h) the server serves
// (docs/client-library.md, "Cache identity").
struct IdentitiesConfig {
  // Entries (base/identity_selector.h): a tag, or field=value pairs. Empty:
  // every identity.
  std::vector<std::string> accept;
  // A tenant's connection must send an identity before naming a key
  // (administrators' keys never have to).
  bool require = false;
  // Identities reported under their own tag in /metrics, /v1/status and
  // memkv stats (with their tenants); the rest are counted under "other".
  uint32_t max = 64;
  bool operator==(const IdentitiesConfig&) const = default;
};

struct LogConfig {
  std::string level = "info";            // debug, info, warn, error; --log-level overrides it
  bool operator==(const LogConfig&) const = default;
};

// events.*: block events for cache-aware routers, in the wire format of
// vLLM's KV-events publisher (docs/events.md). Off unless publish is set.
enum class EventsEncoding : uint8_t { kMap, kArray };
std::string_view EventsEncodingName(EventsEncoding encoding);

struct EventsConfig {
  std::string publish;                   // "tcp://HOST:PORT" of the PUB socket; empty: off
  std::string replay;                    // "tcp://HOST:PORT" of the replay ROUTER socket; empty: none
  std::string topic;                     // first frame of every message
  EventsEncoding encoding = EventsEncoding::kMap;  // each event a tagged map, or a tagged array
  uint32_t queue_size = 100000;          // events waiting to be sent; more are dropped
  uint32_t replay_buffer = 10000;        // batches kept for replay ...
  uint64_t replay_buffer_size_bytes = 64ULL << 20;  // ... in at most this many payload bytes
  bool enabled() const { return !publish.empty(); }
  bool operator==(const EventsConfig&) const = default;
};

// fleet.*: this server's identity and placement weight among the servers
// of a fleet (docs/fleet.md, "Server identity").
struct FleetConfig {
  // Memory mode only: the server id (1..64 of [A-Za-z0-9._-]); empty: the
  // data directory's server-id file. In file and direct mode the id is the
  // drives' store UUID, kept with the data.
  std::string id;
  // The placement weight clients give this server; unset: its capacity in
  // bytes. 1..2^40 when set.
  std::optional<uint64_t> weight;
  bool operator==(const FleetConfig&) const = default;
};
inline constexpr size_t kMaxFleetIdBytes = 64;
inline constexpr uint64_t kMaxFleetWeight = 1ULL << 40;

// tenants[]: a credential bound to a key prefix (docs/tenants.md). Keys
// given as files are read when the config is loaded.
struct TenantConfig {
  std::string name;                  // [a-z0-9_-], 1..64 characters, unique
  std::string prefix;                // non-empty, at most 256 bytes; no prefix starts another
  std::vector<uint8_t> key;          // 32 bytes: key (64 hex) or key_file
  std::vector<uint8_t> next_key;     // empty, or 32 bytes: next_key or next_key_file (rotation)
  bool read_only = false;            // writes refused with PermissionDenied
  bool rdma = false;                 // its connections may set up RDMA
  uint64_t dram_quota_bytes = 0;     // 0: none
  uint64_t drive_quota_bytes = 0;    // 0: none
  uint32_t max_connections = 0;      // connections open at once with its keys; 0: no limit
  // Block events of this tenant's keys alone (docs/tenants.md, "Events"):
  // tcp://HOST:PORT of its own PUB and replay sockets; empty: none. Read
  // at start (a reload that changes them says a restart is needed).
  std::string events_publish;
  std::string events_replay;
};

inline constexpr size_t kMaxTenants = 1024;
inline constexpr size_t kMaxTenantNameBytes = 64;
inline constexpr size_t kMaxTenantPrefixBytes = 256;
inline constexpr uint64_t kMaxTenantConnections = 1000000;
inline constexpr std::string_view kTenantConnectionsAllowed = "1..1000000";

struct ServerConfig {
  NetworkConfig network;
  MemoryConfig memory;
  RdmaConfig rdma;
  StorageConfig storage;
  LogConfig log;
  MetricsConfig metrics;
  EventsConfig events;
  FleetConfig fleet;
  std::vector<TenantConfig> tenants;
  IdentitiesConfig identities;
};

// The tenants' storage identities and quotas, for TieredStore::SetTenants.
TenantMap TenantMapOf(const std::vector<TenantConfig>& tenants);

// The embedded default: what `memkv start` runs with no config file.
// Loopback 127.0.0.1:9900, pool sized to the box, file mode with one drive
// file, `data_dir`/drive0.memkv, created on the first start.
ServerConfig EmbeddedDefaultConfig(const std::string& data_dir);

// Fills in what depends on `memkv start --data-dir`: the default drive file
// when storage.drive_in_data_dir. Idempotent.
void ResolveDataDir(const std::string& data_dir, ServerConfig* config);

// A pool size that suits a machine with `physical_memory_bytes` of RAM:
// one eighth of it, at least 256 MiB and at most 16 GiB.
uint64_t DefaultMemoryPoolBytes(uint64_t physical_memory_bytes);

// Parses YAML text; missing fields keep the defaults of ServerConfig{},
// except that a text naming no storage gets the embedded default's (file
// mode, drive_in_data_dir).
// `source` names the text in messages (a path or "<string>").
Result<ServerConfig> ParseServerConfig(std::string_view yaml_text, std::string_view source);
Result<ServerConfig> LoadServerConfigFile(const std::string& path);

// Rules that span fields (also called by ParseServerConfig). Each violation
// is one line in the returned InvalidArgument; Ok when there are none.
Status ValidateServerConfig(const ServerConfig& config);

}  // namespace memkv::config

#endif  // MEMKV_CONFIG_SERVER_CONFIG_H_
