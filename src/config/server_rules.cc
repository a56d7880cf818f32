#include "config/server_rules.h"

#include <algorithm>
#include <bit>
#include <map>
#include <sstream>
#include <string>

#include "base/log.h"
#include "base/units.h"
#include "config/events_config.h"
#include "config/host_port.h"

namespace memkv::config::internal {
namespace {

constexpr uint64_t kMinBlockBytes = 4 * kKiB;
constexpr uint64_t kMaxBlockBytes = 1 * kGiB;
// memory.max_value_size; the top is the protocol's ceiling for one value
// (proto::kMaxValueBytesCeiling, checked where the server reads the setting).
constexpr uint64_t kMinValueLimitBytes = 1 * kMiB;
constexpr uint64_t kMaxValueLimitBytes = 64 * kGiB;
// Port+1 is the admin endpoint, so the data port cannot be the last one.
constexpr uint32_t kMaxDataPort = 65534;
constexpr uint32_t kMaxGidIndex = 255;
constexpr uint32_t kMaxTrafficClass = 255;
constexpr uint32_t kMaxServiceLevel = 15;
constexpr uint32_t kMinDcis = 1;
constexpr uint32_t kMaxDcis = 1024;

std::string OutOfRange(const std::string& path, uint64_t value, std::string_view allowed) {
  return path + ": " + std::to_string(value) + " is out of range; allowed: " + std::string(allowed);
}

void CheckNetwork(const NetworkConfig& n, Diagnostics* d) {
  const std::string address = JoinHostPort(n.host, n.port);
  if (std::optional<std::string> why = CheckHost(n.host)) {
    d->Violation({"network.address"}, "network.address: " + *why + " in '" + address + "'; " +
                                          std::string(kAddressAllowed));
  }
  if (n.port > kMaxDataPort) {
    d->Violation({"network.address"}, "network.address: port " + std::to_string(n.port) + " in '" +
                                          address + "' is out of range; " +
                                          std::string(kAddressAllowed));
  }
  if (n.auth_key && n.auth_key->size() != kAuthKeyBytes) {
    d->Violation({"network.auth_key"}, "network.auth_key: a key of " +
                                           std::to_string(n.auth_key->size()) +
                                           " bytes; allowed: exactly 32 bytes (64 hex characters)");
  }
  if (n.tls_cert.empty() != n.tls_key.empty()) {
    const bool has_cert = !n.tls_cert.empty();
    const std::string missing = has_cert ? "network.tls_key" : "network.tls_cert";
    const std::string present = has_cert ? "network.tls_cert" : "network.tls_key";
    const std::string& value = has_cert ? n.tls_cert : n.tls_key;
    d->Violation({present, missing}, missing + ": missing while " + present + " is set ('" + value +
                                         "'); HTTPS on the admin endpoint needs both; set " +
                                         missing + " or remove " + present);
  }
}

void CheckConnectionLimits(const NetworkConfig& n, Diagnostics* d) {
  if (n.max_connections < 1 || n.max_connections > kMaxConnectionsLimit) {
    d->Violation({"network.max_connections"},
                 OutOfRange("network.max_connections", n.max_connections, kMaxConnectionsAllowed));
  }
  if (n.max_unauthenticated_connections < 1 || n.max_unauthenticated_connections > n.max_connections) {
    d->Violation({"network.max_unauthenticated_connections", "network.max_connections"},
                 OutOfRange("network.max_unauthenticated_connections", n.max_unauthenticated_connections,
                            std::string(kMaxUnauthenticatedAllowed) + " (" + std::to_string(n.max_connections) +
                                ")"));
  }
  if (n.frame_timeout_ms < kMinFrameTimeoutMs || n.frame_timeout_ms > kMaxFrameTimeoutMs) {
    d->Violation({"network.frame_timeout_ms"},
                 OutOfRange("network.frame_timeout_ms", n.frame_timeout_ms, kFrameTimeoutAllowed));
  }
  if (n.busy_poll_us > kMaxBusyPollUs) {
    d->Violation({"network.busy_poll_us"}, OutOfRange("network.busy_poll_us", n.busy_poll_us, kBusyPollAllowed));
  }
}

void CheckBlockSize(const std::string& path, uint64_t bytes, Diagnostics* d) {
  const std::string allowed = "; allowed: a power of two from 4 KiB to 1 GiB";
  if (!std::has_single_bit(bytes)) {
    d->Violation({path}, path + ": " + FormatSize(bytes) + " is not a power of two" + allowed);
  } else if (bytes < kMinBlockBytes || bytes > kMaxBlockBytes) {
    d->Violation({path}, path + ": " + FormatSize(bytes) + " is out of range" + allowed);
  }
}

std::string FormatMillis(uint64_t ms) {
  if (ms % 3'600'000 == 0) return std::to_string(ms / 3'600'000) + "h";
  if (ms % 60'000 == 0) return std::to_string(ms / 60'000) + "m";
  if (ms % 1000 == 0) return std::to_string(ms / 1000) + "s";
  return std::to_string(ms) + "ms";
}

// Pinned values: the cap, and TTLs from a second to kMaxPinTtlMs.
void CheckPinning(const MemoryConfig& m, Diagnostics* d) {
  constexpr uint64_t kMaxPinTtlMs = 30ULL * 86'400'000;
  if (!(m.pinned_max_fraction > 0.0 && m.pinned_max_fraction <= 1.0)) {
    std::ostringstream text;
    text << "memory.pinned_max_fraction: " << m.pinned_max_fraction
         << " is out of range; allowed: above 0, at most 1 (the share of memory.max_size pinned values may take)";
    d->Violation({"memory.pinned_max_fraction"}, text.str());
  }
  if (m.pin_ttl_max_ms < 1000 || m.pin_ttl_max_ms > kMaxPinTtlMs) {
    d->Violation({"memory.pin_ttl_max"}, "memory.pin_ttl_max: " + FormatMillis(m.pin_ttl_max_ms) +
                                             " is out of range; allowed: 1s to 30d");
  } else if (m.pin_ttl_ms < 1000 || m.pin_ttl_ms > m.pin_ttl_max_ms) {
    d->Violation({"memory.pin_ttl", "memory.pin_ttl_max"},
                 "memory.pin_ttl: " + FormatMillis(m.pin_ttl_ms) + " is out of range; allowed: 1s to memory.pin_ttl_max (" +
                     FormatMillis(m.pin_ttl_max_ms) + ")");
  }
}

void CheckMemory(const MemoryConfig& m, Diagnostics* d) {
  CheckBlockSize("memory.block_size", m.block_size_bytes, d);
  if (m.max_size_bytes != 0 && m.max_size_bytes < m.block_size_bytes) {
    d->Violation({"memory.max_size", "memory.block_size"},
                 "memory.max_size: " + FormatSize(m.max_size_bytes) +
                     " is smaller than memory.block_size (" + FormatSize(m.block_size_bytes) +
                     "); allowed: 0 (sized to the machine) or at least one block");
  }
  if (m.max_value_size_bytes < kMinValueLimitBytes || m.max_value_size_bytes > kMaxValueLimitBytes) {
    d->Violation({"memory.max_value_size"}, "memory.max_value_size: " + FormatSize(m.max_value_size_bytes) +
                                                " is out of range; allowed: 1 MiB to 64 GiB");
  }
  if (m.read_check_interval_ms > kMaxReadCheckIntervalMs) {
    d->Violation({"memory.read_check_interval_ms"},
                 OutOfRange("memory.read_check_interval_ms", m.read_check_interval_ms, kReadCheckIntervalAllowed));
  }
  CheckPinning(m, d);
}

void CheckIdentities(const IdentitiesConfig& c, Diagnostics* d) {
  if (c.max > 4096) d->Violation({"identities.max"}, OutOfRange("identities.max", c.max, "0..4096"));
}

void CheckMetrics(const MetricsConfig& m, Diagnostics* d) {
  if (m.namespace_top > kMaxNamespaceTop) {
    d->Violation({"metrics.namespace_top"}, OutOfRange("metrics.namespace_top", m.namespace_top, kNamespaceTopAllowed));
  }
  if (m.namespace_separator.size() > kMaxNamespaceSeparatorBytes) {
    d->Violation({"metrics.namespace_separator"},
                 "metrics.namespace_separator: '" + m.namespace_separator + "' is " +
                     std::to_string(m.namespace_separator.size()) +
                     " bytes long; allowed: 0 to 8 bytes (empty: every key in one namespace)");
  }
}

std::string TrafficClassHint(uint32_t tc) {
  // People often write the DSCP itself (26) where the ToS byte (104) is meant.
  if (tc <= 63) {
    return "if " + std::to_string(tc) + " is the DSCP, write " + std::to_string(tc << 2) +
           " (= DSCP " + std::to_string(tc) + " << 2); ";
  }
  const uint32_t lower = tc & ~3u;
  return "the nearest is " + std::to_string(lower) + " (= DSCP " + std::to_string(lower >> 2) +
         " << 2); ";
}

void CheckRdma(const RdmaConfig& r, Diagnostics* d) {
  if (r.gid_index > kMaxGidIndex) {
    d->Violation({"rdma.gid_index"}, OutOfRange("rdma.gid_index", r.gid_index, kGidIndexAllowed));
  }
  if (r.traffic_class > kMaxTrafficClass) {
    d->Violation({"rdma.traffic_class"},
                 OutOfRange("rdma.traffic_class", r.traffic_class, kTrafficClassAllowed));
  } else if (r.traffic_class % 4 != 0) {
    d->Violation({"rdma.traffic_class"},
                 "rdma.traffic_class: " + std::to_string(r.traffic_class) +
                     " is not a multiple of 4; it is the ToS byte DSCP << 2; " +
                     TrafficClassHint(r.traffic_class) +
                     "allowed: " + std::string(kTrafficClassAllowed));
  }
  if (r.service_level > kMaxServiceLevel) {
    d->Violation({"rdma.service_level"},
                 OutOfRange("rdma.service_level", r.service_level, kServiceLevelAllowed));
  }
  if (r.mtu < 256 || r.mtu > 4096 || !std::has_single_bit(r.mtu)) {
    d->Violation({"rdma.mtu"},
                 "rdma.mtu: " + std::to_string(r.mtu) +
                     " is not an RDMA path MTU; allowed: " + std::string(kMtuAllowed));
  }
  if (r.num_dcis < kMinDcis || r.num_dcis > kMaxDcis) {
    d->Violation({"rdma.num_dcis"}, OutOfRange("rdma.num_dcis", r.num_dcis, kNumDcisAllowed));
  }
}

void CheckDrives(const StorageConfig& s, Diagnostics* d) {
  std::map<std::string, size_t> first_index;
  for (size_t i = 0; i < s.drives.size(); ++i) {
    const std::string path = "storage.drives[" + std::to_string(i) + "].media";
    const std::string& media = s.drives[i].media;
    if (media.empty()) {
      d->Violation({path}, path +
                               ": empty; allowed: the path of a block device (mode direct) "
                               "or a file (mode file)");
      continue;
    }
    auto [it, inserted] = first_index.emplace(media, i);
    if (!inserted) {
      d->Violation({path}, path + ": '" + media + "' is already storage.drives[" +
                               std::to_string(it->second) + "]; allowed: each drive listed once");
    }
  }
}

void CheckStorage(const StorageConfig& s, Diagnostics* d) {
  CheckBlockSize("storage.block_size", s.block_size_bytes, d);
  CheckDrives(s, d);
  if (s.io_threads < 1 || s.io_threads > 64) {
    d->Violation({"storage.io_threads"}, OutOfRange("storage.io_threads", s.io_threads, kIoThreadsAllowed));
  }
  if (s.sync_interval_ms < 1 || s.sync_interval_ms > 60000) {
    d->Violation({"storage.sync_interval_ms"},
                 OutOfRange("storage.sync_interval_ms", s.sync_interval_ms, kSyncIntervalAllowed));
  }
  if (s.flush_on_loop_us > 1'000'000) {
    d->Violation({"storage.flush_on_loop_us"},
                 OutOfRange("storage.flush_on_loop_us", s.flush_on_loop_us, kFlushOnLoopAllowed));
  }
  for (size_t i = 0; i < s.drives.size(); ++i) {
    const DriveConfig& drive = s.drives[i];
    const std::string path = "storage.drives[" + std::to_string(i) + "].size";
    if (drive.size_bytes != 0 && s.mode != StorageMode::kFile) {
      d->Violation({path, "storage.mode"},
                   path + ": only drive files (storage.mode file) are created with a size; a block device "
                          "has its own; remove it");
    } else if (drive.size_bytes != 0 && drive.size_bytes < 64 * kMiB) {
      d->Violation({path}, path + ": " + FormatSize(drive.size_bytes) + " is too small; allowed: at least 64 MiB");
    }
  }
  const std::string mode(StorageModeName(s.mode));
  if (s.mode != StorageMode::kMemory && s.drives.empty() && !s.drive_in_data_dir) {
    d->Violation({"storage.drives", "storage.mode"},
                 "storage.drives: mode '" + mode +
                     "' needs at least one drive; add drives or set storage.mode: memory");
  }
  if (s.encryption != StorageEncryption::kOff && s.mode == StorageMode::kMemory) {
    d->Violation({"storage.encryption", "storage.mode"},
                 "storage.encryption: mode 'memory' has no drives to encrypt (values stay in RAM); set "
                 "storage.encryption: off or use storage.mode: direct or file");
  } else if (s.encryption != StorageEncryption::kOff && s.encryption_key_file.empty()) {
    d->Violation({"storage.encryption_key_file", "storage.encryption"},
                 "storage.encryption_key_file: missing; storage.encryption: aes-256-gcm needs the path of a "
                 "master key file (32 raw bytes or 64 hex characters)");
  }
  if (s.mode == StorageMode::kMemory && !s.drives.empty()) {
    d->Violation({"storage.drives", "storage.mode"},
                 "storage.drives: mode 'memory' keeps blocks in RAM only, but " +
                     std::to_string(s.drives.size()) +
                     " drive(s) are listed; remove storage.drives or set storage.mode: direct "
                     "or file");
  }
}

void CheckFleet(const ServerConfig& config, Diagnostics* d) {
  const FleetConfig& f = config.fleet;
  if (!f.id.empty()) {
    const bool chars_ok = std::all_of(f.id.begin(), f.id.end(), [](char c) {
      return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
             c == '-';
    });
    if (f.id.size() > kMaxFleetIdBytes || !chars_ok) {
      d->Violation({"fleet.id"}, "fleet.id: '" + f.id + "' is not a server id; allowed: 1..64 characters of "
                                 "A-Z a-z 0-9 . _ -");
    }
    if (config.storage.mode != StorageMode::kMemory) {
      d->Violation({"fleet.id", "storage.mode"},
                   "fleet.id: storage.mode '" + std::string(StorageModeName(config.storage.mode)) +
                       "' keeps the server id with the data (the drives' store UUID, the same wherever the "
                       "drives move); fleet.id is for storage.mode memory only; remove it");
    }
  }
  if (f.weight && *f.weight == 0) {
    d->Violation({"fleet.weight"}, "fleet.weight: 0 is out of range; allowed: 1..1099511627776 (2^40); leave it "
                                   "out to weigh the server by its capacity");
  }
}

}  // namespace

void CheckServerRules(const ServerConfig& config, Diagnostics* d) {
  LogLevel level;
  if (!ParseLogLevel(config.log.level, &level) || level == LogLevel::kOff) {
    d->Violation({"log.level"}, "log.level: '" + config.log.level + "' is not a log level; allowed: debug, info, warn, error");
  }
  CheckNetwork(config.network, d);
  CheckConnectionLimits(config.network, d);
  CheckMemory(config.memory, d);
  CheckRdma(config.rdma, d);
  CheckMetrics(config.metrics, d);
  CheckIdentities(config.identities, d);
  CheckStorage(config.storage, d);
  CheckEvents(config.events, d);
  CheckFleet(config, d);
}

}  // namespace memkv::config::internal
