#include "config/server_config.h"

#include <algorithm>
#include <exception>

#include "base/identity_selector.h"
#include "base/units.h"
#include "config/diagnostics.h"
#include "config/events_config.h"
#include "config/host_port.h"
#include "config/server_rules.h"
#include "config/tenants_config.h"
#include "config/yaml_fields.h"

namespace memkv::config {
namespace {

using internal::BoolField;
using internal::Diagnostics;
using internal::ReadMap;
using internal::ReadString;
using internal::SizeField;
using internal::StringField;
using internal::Uint32Field;

using internal::kAddressAllowed;
using internal::kFlushOnLoopAllowed;
using internal::kGidIndexAllowed;
using internal::kIoThreadsAllowed;
using internal::kMtuAllowed;
using internal::kNumDcisAllowed;
using internal::kServiceLevelAllowed;
using internal::kSyncIntervalAllowed;
using internal::kTrafficClassAllowed;

void ReadAddress(const YAML::Node& node, const std::string& path, Diagnostics* d,
                 NetworkConfig* out) {
  std::string text;
  if (!ReadString(node, path, d, &text)) return;
  Result<internal::HostPort> split = internal::SplitHostPort(text);
  if (!split.ok()) {
    d->Fail(path, path + ": " + split.status().message() + "; " + std::string(kAddressAllowed));
    return;
  }
  if (split->port > UINT16_MAX) {
    d->Fail(path, path + ": port " + std::to_string(split->port) + " in '" + text +
                      "' is out of range; " + std::string(kAddressAllowed));
    return;
  }
  out->host = split->host;
  out->port = static_cast<uint16_t>(split->port);
}

void ReadAuthKey(const YAML::Node& node, const std::string& path, Diagnostics* d,
                 std::optional<std::vector<uint8_t>>* out) {
  std::string text;
  if (!ReadString(node, path, d, &text)) return;
  Result<std::vector<uint8_t>> key = internal::ParseAuthKeyHex(text);
  if (!key.ok()) {
    d->Fail(path, path + ": " + key.status().message());
    return;
  }
  *out = std::move(*key);
}

void ReadNetwork(const YAML::Node& node, Diagnostics* d, NetworkConfig* out) {
  auto address = [d, out](const YAML::Node& v, const std::string& p) { ReadAddress(v, p, d, out); };
  auto auth_key = [d, out](const YAML::Node& v, const std::string& p) {
    ReadAuthKey(v, p, d, &out->auth_key);
  };
  ReadMap(node, "network",
          {{"address", address},
           {"auth_key", auth_key},
           StringField("tls_cert", d, &out->tls_cert),
           StringField("tls_key", d, &out->tls_key),
           Uint32Field("max_connections", internal::kMaxConnectionsAllowed, d, &out->max_connections),
           Uint32Field("max_unauthenticated_connections", internal::kMaxUnauthenticatedAllowed, d,
                       &out->max_unauthenticated_connections),
           Uint32Field("frame_timeout_ms", internal::kFrameTimeoutAllowed, d, &out->frame_timeout_ms),
           BoolField("loads_first", d, &out->loads_first),
           Uint32Field("busy_poll_us", internal::kBusyPollAllowed, d, &out->busy_poll_us)},
          d);
}

void ReadMemory(const YAML::Node& node, Diagnostics* d, MemoryConfig* out) {
  ReadMap(node, "memory",
          {SizeField("block_size", d, &out->block_size_bytes), SizeField("max_size", d, &out->max_size_bytes),
           SizeField("max_value_size", d, &out->max_value_size_bytes), BoolField("prefault", d, &out->prefault),
           Uint32Field("read_check_interval_ms", internal::kReadCheckIntervalAllowed, d, &out->read_check_interval_ms),
           FractionField("pinned_max_fraction", d, &out->pinned_max_fraction),
           DurationField("pin_ttl", d, &out->pin_ttl_ms), DurationField("pin_ttl_max", d, &out->pin_ttl_max_ms)},
          d);
}

void ReadMetrics(const YAML::Node& node, Diagnostics* d, MetricsConfig* out) {
  ReadMap(node, "metrics",
          {StringField("namespace_separator", d, &out->namespace_separator),
           Uint32Field("namespace_top", internal::kNamespaceTopAllowed, d, &out->namespace_top)},
          d);
}

void ReadIdentities(const YAML::Node& node, Diagnostics* d, IdentitiesConfig* out) {
  auto accept = [d, out](const YAML::Node& v, const std::string& p) {
    std::vector<std::string> entries;
    if (!internal::ReadStringList(v, p, d, &entries)) return;
    for (size_t i = 0; i < entries.size(); ++i) {
      Result<IdentitySelector> selector = IdentitySelector::Parse(entries[i]);
      if (!selector.ok()) d->Fail(p, p + "[" + std::to_string(i) + "]: " + selector.status().message());
    }
    out->accept = std::move(entries);
  };
  ReadMap(node, "identities",
          {{"accept", accept}, BoolField("require", d, &out->require),
           Uint32Field("max", "0..4096", d, &out->max)},
          d);
}

void ReadRdma(const YAML::Node& node, Diagnostics* d, RdmaConfig* out) {
  ReadMap(node, "rdma",
          {StringField("device", d, &out->device),
           Uint32Field("gid_index", kGidIndexAllowed, d, &out->gid_index),
           Uint32Field("traffic_class", kTrafficClassAllowed, d, &out->traffic_class),
           Uint32Field("service_level", kServiceLevelAllowed, d, &out->service_level),
           Uint32Field("mtu", kMtuAllowed, d, &out->mtu),
           Uint32Field("num_dcis", kNumDcisAllowed, d, &out->num_dcis)},
          d);
}

void ReadStorageMode(const YAML::Node& node, const std::string& path, Diagnostics* d,
                     StorageMode* out) {
  std::string text;
  if (!ReadString(node, path, d, &text)) return;
  for (StorageMode mode : {StorageMode::kDirect, StorageMode::kFile, StorageMode::kMemory}) {
    if (text == StorageModeName(mode)) {
      *out = mode;
      return;
    }
  }
  d->Fail(path, path + ": '" + text + "' is not a storage mode; allowed: direct, file, memory");
}

void ReadStorageSync(const YAML::Node& node, const std::string& path, Diagnostics* d, StorageSync* out) {
  std::string text;
  if (!ReadString(node, path, d, &text)) return;
  for (StorageSync sync : {StorageSync::kAlways, StorageSync::kInterval}) {
    if (text == StorageSyncName(sync)) {
      *out = sync;
      return;
    }
  }
  d->Fail(path, path + ": '" + text + "' is not a sync policy; allowed: always, interval");
}

void ReadStorageEncryption(const YAML::Node& node, const std::string& path, Diagnostics* d,
                           StorageEncryption* out) {
  std::string text;
  if (!ReadString(node, path, d, &text)) return;
  for (StorageEncryption e : {StorageEncryption::kOff, StorageEncryption::kAes256Gcm}) {
    if (text == StorageEncryptionName(e)) {
      *out = e;
      return;
    }
  }
  d->Fail(path, path + ": '" + text + "' is not an encryption; allowed: off, aes-256-gcm");
}

void ReadDrives(const YAML::Node& node, const std::string& path, Diagnostics* d,
                std::vector<DriveConfig>* out) {
  if (node.IsNull()) return;
  if (!node.IsSequence()) {
    d->Fail(path, path + ": expected a list of {media: PATH}, got " + std::string(internal::NodeKind(node)));
    return;
  }
  out->clear();
  for (size_t i = 0; i < node.size(); ++i) {
    const std::string drive_path = path + "[" + std::to_string(i) + "]";
    const std::string media_path = drive_path + ".media";
    const YAML::Node item = node[i];
    d->NoteLocation(drive_path, item.Mark().line, item.Mark().column);
    if (item.IsScalar()) {
      // The usual slip: "- /dev/nvme0n1" instead of "- media: /dev/nvme0n1".
      d->Fail(drive_path,
              drive_path + ": '" + item.Scalar() +
                  "' is a bare path; allowed: a map, written '- media: " + item.Scalar() + "'");
      out->emplace_back();
      continue;
    }
    DriveConfig& drive = out->emplace_back();
    bool has_media = false;
    auto media = [&](const YAML::Node& v, const std::string& p) {
      has_media = ReadString(v, p, d, &drive.media);
    };
    ReadMap(item, drive_path, {{"media", media}, SizeField("size", d, &drive.size_bytes)}, d);
    if (!has_media && !d->IsFailed(media_path)) {
      d->Fail(media_path, media_path +
                              ": missing; each drive is {media: PATH} (a block "
                              "device for mode direct, a file for mode file)");
    }
  }
}

void ReadStorage(const YAML::Node& node, Diagnostics* d, StorageConfig* out, bool* mode_given) {
  auto mode = [d, out, mode_given](const YAML::Node& v, const std::string& p) {
    *mode_given = true;
    ReadStorageMode(v, p, d, &out->mode);
  };
  auto drives = [d, out](const YAML::Node& v, const std::string& p) {
    ReadDrives(v, p, d, &out->drives);
  };
  auto sync = [d, out](const YAML::Node& v, const std::string& p) { ReadStorageSync(v, p, d, &out->sync); };
  auto encryption = [d, out](const YAML::Node& v, const std::string& p) {
    ReadStorageEncryption(v, p, d, &out->encryption);
  };
  auto busy_queue = [d, out](const YAML::Node& v, const std::string& p) {
    uint64_t bytes = 0;
    if (internal::ReadSize(v, p, d, &bytes)) out->busy_queue_size_bytes = bytes;
  };
  ReadMap(node, "storage",
          {{"mode", mode},
           SizeField("block_size", d, &out->block_size_bytes),
           {"drives", drives},
           BoolField("promote_on_read", d, &out->promote_on_read),
           Uint32Field("io_threads", kIoThreadsAllowed, d, &out->io_threads),
           {"sync", sync},
           Uint32Field("sync_interval_ms", kSyncIntervalAllowed, d, &out->sync_interval_ms),
           Uint32Field("flush_on_loop_us", kFlushOnLoopAllowed, d, &out->flush_on_loop_us),
           {"encryption", encryption},
           StringField("encryption_key_file", d, &out->encryption_key_file),
           {"busy_queue_size", busy_queue}},
          d);
}

void ReadFleet(const YAML::Node& node, Diagnostics* d, FleetConfig* out) {
  auto weight = [d, out](const YAML::Node& v, const std::string& p) {
    uint64_t w = 0;
    if (internal::ReadUint(v, p, kMaxFleetWeight, "1..1099511627776 (2^40)", d, &w)) out->weight = w;
  };
  ReadMap(node, "fleet", {StringField("id", d, &out->id), {"weight", weight}}, d);
}

// Each section's reader knows its own path, so the one given here is unused.
void ReadServerConfig(const YAML::Node& root, Diagnostics* d, ServerConfig* out) {
  bool mode_given = false;
  bool* const given = &mode_given;
  auto section = [](auto read) {
    return [read](const YAML::Node& v, const std::string&) { read(v); };
  };
  ReadMap(root, "",
          {{"network", section([=](const YAML::Node& v) { ReadNetwork(v, d, &out->network); })},
           {"memory", section([=](const YAML::Node& v) { ReadMemory(v, d, &out->memory); })},
           {"rdma", section([=](const YAML::Node& v) { ReadRdma(v, d, &out->rdma); })},
           {"storage", section([=](const YAML::Node& v) { ReadStorage(v, d, &out->storage, given); })},
           {"metrics", section([=](const YAML::Node& v) { ReadMetrics(v, d, &out->metrics); })},
           {"identities", section([=](const YAML::Node& v) { ReadIdentities(v, d, &out->identities); })},
           {"log", section([=](const YAML::Node& v) {
              ReadMap(v, "log", {StringField("level", d, &out->log.level)}, d);
            })},
           {"events", section([=](const YAML::Node& v) { internal::ReadEvents(v, d, &out->events); })},
           {"fleet", section([=](const YAML::Node& v) { ReadFleet(v, d, &out->fleet); })},
           {"tenants", [=](const YAML::Node& v, const std::string& p) { internal::ReadTenants(v, p, d, &out->tenants); }}},
          d);
  // No storage named at all: what the embedded default does, as every field
  // is optional (docs/configuration.md). A mode without drives stays an error.
  if (!mode_given && out->storage.drives.empty()) {
    out->storage.mode = StorageMode::kFile;
    out->storage.drive_in_data_dir = true;
  }
}

}  // namespace

std::string_view StorageModeName(StorageMode mode) {
  switch (mode) {
    case StorageMode::kDirect: return "direct";
    case StorageMode::kFile: return "file";
    case StorageMode::kMemory: return "memory";
  }
  return "unknown";
}

std::string_view StorageSyncName(StorageSync sync) {
  return sync == StorageSync::kAlways ? "always" : "interval";
}

std::string_view StorageEncryptionName(StorageEncryption encryption) {
  return encryption == StorageEncryption::kAes256Gcm ? "aes-256-gcm" : "off";
}

ServerConfig EmbeddedDefaultConfig(const std::string& data_dir) {
  ServerConfig config;
  // Loopback (NetworkConfig's default, as for a file without
  // network.address): a config-less start must not expose the store.
  config.network.host = "127.0.0.1";
  config.network.port = 9900;
  config.storage.mode = StorageMode::kFile;
  config.storage.drive_in_data_dir = true;
  ResolveDataDir(data_dir, &config);
  config.memory.max_size_bytes = 0;
  return config;
}

void ResolveDataDir(const std::string& data_dir, ServerConfig* config) {
  StorageConfig& s = config->storage;
  if (!s.drive_in_data_dir || !s.drives.empty()) return;
  s.drives = {DriveConfig{.media = data_dir + "/drive0.memkv"}};
}

uint64_t DefaultMemoryPoolBytes(uint64_t physical_memory_bytes) {
  constexpr uint64_t kMin = 256 * kMiB;
  constexpr uint64_t kMax = 16 * kGiB;
  // Rounded down to 2 MiB: the pool is backed by 2 MiB hugepages and carved
  // into blocks, so a ragged tail would be wasted (or need one more page).
  constexpr uint64_t kGranule = 2 * kMiB;
  uint64_t eighth = std::clamp(physical_memory_bytes / 8, kMin, kMax);
  return eighth / kGranule * kGranule;
}

Result<ServerConfig> ParseServerConfig(std::string_view yaml_text, std::string_view source) {
  Diagnostics d{std::string(source)};
  ServerConfig config;
  try {
    std::optional<YAML::Node> root = internal::LoadYamlDocument(yaml_text, &d);
    if (root) ReadServerConfig(*root, &d, &config);
  } catch (const std::exception& e) {
    // The readers check node kinds first; this is a backstop so yaml-cpp
    // never throws past the config layer.
    d.Fail("", std::string("reading the YAML failed: ") + e.what());
  }
  internal::CheckServerRules(config, &d);
  internal::CheckTenantRules(config, &d);
  if (!d.empty()) return d.ToStatus();
  return config;
}

Result<ServerConfig> LoadServerConfigFile(const std::string& path) {
  Result<std::string> text = internal::ReadConfigFile(path);
  if (!text.ok()) return text.status();
  return ParseServerConfig(*text, path);
}

Status ValidateServerConfig(const ServerConfig& config) {
  Diagnostics d("");
  internal::CheckServerRules(config, &d);
  internal::CheckTenantRules(config, &d);
  return d.ToStatus();
}

}  // namespace memkv::config
