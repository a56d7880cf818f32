#include "config/tenants_config.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <utility>

#include "base/bytes.h"
#include "config/events_config.h"
#include "config/yaml_fields.h"

namespace memkv::config {
namespace internal {
namespace {

constexpr std::string_view kNameAllowed = "allowed: 1..64 characters of a-z, 0-9, '_' and '-'";
constexpr std::string_view kKeyFileAllowed =
    "allowed: a file holding the 32-byte key raw, or as 64 hex characters (`openssl rand -hex 32 > FILE`)";

bool ValidName(std::string_view name) {
  if (name.empty() || name.size() > kMaxTenantNameBytes) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
}

// A key file: exactly 32 raw bytes, or 64 hex characters (whitespace around
// them allowed), as the data directory's key file.
Result<std::vector<uint8_t>> ReadKeyFile(const std::string& path) {
  Result<std::string> text = ReadConfigFile(path);
  if (!text.ok()) return IoError("cannot read key file: " + text.status().message());
  if (text->size() == kAuthKeyBytes) return std::vector<uint8_t>(text->begin(), text->end());
  std::string_view trimmed = *text;
  while (!trimmed.empty() && std::isspace(static_cast<unsigned char>(trimmed.front()))) trimmed.remove_prefix(1);
  while (!trimmed.empty() && std::isspace(static_cast<unsigned char>(trimmed.back()))) trimmed.remove_suffix(1);
  Result<std::vector<uint8_t>> key = ParseAuthKeyHex(trimmed);
  if (!key.ok()) {
    return InvalidArgument("key file '" + path + "' holds " + std::to_string(text->size()) + " bytes that are " +
                           "neither a raw 32-byte key nor 64 hex characters; " + std::string(kKeyFileAllowed));
  }
  return key;
}

// One key slot (key / key_file, or next_key / next_key_file).
struct KeySlot {
  bool given_hex = false;
  bool given_file = false;
  std::string file;
};

void ReadKeyHex(const YAML::Node& v, const std::string& p, Diagnostics* d, KeySlot* slot, std::vector<uint8_t>* out) {
  slot->given_hex = true;
  std::string text;
  if (!ReadString(v, p, d, &text)) return;
  Result<std::vector<uint8_t>> key = ParseAuthKeyHex(text);
  if (!key.ok()) {
    d->Fail(p, p + ": " + key.status().message());
    return;
  }
  *out = std::move(*key);
}

void ReadKeyFileField(const YAML::Node& v, const std::string& p, Diagnostics* d, KeySlot* slot,
                      std::vector<uint8_t>* out) {
  slot->given_file = true;
  if (!ReadString(v, p, d, &slot->file)) return;
  Result<std::vector<uint8_t>> key = ReadKeyFile(slot->file);
  if (!key.ok()) {
    d->Fail(p, p + ": " + key.status().message());
    return;
  }
  *out = std::move(*key);
}

// A tenant's events endpoint: tcp://HOST:PORT, as events.publish.
void ReadEndpoint(const YAML::Node& v, const std::string& p, Diagnostics* d, std::string* out) {
  if (!ReadString(v, p, d, out)) return;
  if (std::optional<std::string> why = CheckEventsEndpoint(*out)) {
    d->Fail(p, p + ": '" + *out + "' " + *why + "; " + std::string(kEventsEndpointAllowed));
  }
}

void ReadTenant(const YAML::Node& item, const std::string& path, Diagnostics* d, TenantConfig* t) {
  KeySlot key, next;
  bool has_name = false, has_prefix = false;
  auto name = [&](const YAML::Node& v, const std::string& p) {
    has_name = true;
    if (!ReadString(v, p, d, &t->name)) return;
    if (!ValidName(t->name)) d->Fail(p, p + ": '" + t->name + "' is not a tenant name; " + std::string(kNameAllowed));
  };
  auto prefix = [&](const YAML::Node& v, const std::string& p) {
    has_prefix = true;
    if (!ReadString(v, p, d, &t->prefix)) return;
    if (t->prefix.empty() || t->prefix.size() > kMaxTenantPrefixBytes) {
      d->Fail(p, p + ": a prefix of " + std::to_string(t->prefix.size()) + " bytes; allowed: 1.." +
                     std::to_string(kMaxTenantPrefixBytes) + " bytes");
    }
  };
  ReadMap(item, path,
          {{"name", name},
           {"prefix", prefix},
           {"key", [&](const YAML::Node& v, const std::string& p) { ReadKeyHex(v, p, d, &key, &t->key); }},
           {"key_file", [&](const YAML::Node& v, const std::string& p) { ReadKeyFileField(v, p, d, &key, &t->key); }},
           {"next_key", [&](const YAML::Node& v, const std::string& p) { ReadKeyHex(v, p, d, &next, &t->next_key); }},
           {"next_key_file",
            [&](const YAML::Node& v, const std::string& p) { ReadKeyFileField(v, p, d, &next, &t->next_key); }},
           BoolField("read_only", d, &t->read_only),
           BoolField("rdma", d, &t->rdma),
           SizeField("dram_quota", d, &t->dram_quota_bytes),
           SizeField("drive_quota", d, &t->drive_quota_bytes),
           {"max_connections",
            [&](const YAML::Node& v, const std::string& p) {
              uint64_t n = 0;
              if (!ReadUint(v, p, kMaxTenantConnections, kTenantConnectionsAllowed, d, &n)) return;
              if (n == 0) {
                d->Fail(p, p + ": 0; allowed: " + std::string(kTenantConnectionsAllowed) +
                               " (leave it out for no limit)");
              }
              t->max_connections = static_cast<uint32_t>(n);
            }},
           {"events_publish", [&](const YAML::Node& v, const std::string& p) { ReadEndpoint(v, p, d, &t->events_publish); }},
           {"events_replay", [&](const YAML::Node& v, const std::string& p) { ReadEndpoint(v, p, d, &t->events_replay); }}},
          d);
  if (!t->events_replay.empty() && t->events_publish.empty() && !d->IsFailed(path + ".events_publish")) {
    d->Fail(path + ".events_replay", path + ".events_replay: set without " + path +
                                         ".events_publish; a replay socket serves what the tenant's publisher sent");
  }
  if (!has_name && !d->IsFailed(path + ".name")) {
    d->Fail(path + ".name", path + ".name: missing; each tenant has a name (" + std::string(kNameAllowed) + ")");
  }
  if (!has_prefix && !d->IsFailed(path + ".prefix")) {
    d->Fail(path + ".prefix", path + ".prefix: missing; each tenant has a non-empty key prefix, e.g. \"" +
                                  (t->name.empty() ? std::string("team-a") : t->name) + "/\"");
  }
  if (!key.given_hex && !key.given_file) {
    d->Fail(path + ".key", path + ".key: missing; each tenant has a key: key (64 hex characters) or key_file (a path)");
  } else if (key.given_hex && key.given_file) {
    d->Fail(path + ".key", path + ".key and " + path + ".key_file: both given; allowed: one of them");
  }
  if (next.given_hex && next.given_file) {
    d->Fail(path + ".next_key", path + ".next_key and " + path + ".next_key_file: both given; allowed: one of them");
  }
}

}  // namespace

void ReadTenants(const YAML::Node& node, const std::string& path, Diagnostics* d, std::vector<TenantConfig>* out) {
  if (node.IsNull()) return;
  if (!node.IsSequence()) {
    d->Fail(path, path + ": expected a list of tenants ({name, prefix, key, ...}), got " + std::string(NodeKind(node)));
    return;
  }
  out->clear();
  for (size_t i = 0; i < node.size(); ++i) {
    const std::string item_path = path + "[" + std::to_string(i) + "]";
    const YAML::Node item = node[i];
    d->NoteLocation(item_path, item.Mark().line, item.Mark().column);
    ReadTenant(item, item_path, d, &out->emplace_back());
  }
}

void CheckTenantRules(const ServerConfig& config, Diagnostics* d) {
  const std::vector<TenantConfig>& tenants = config.tenants;
  auto at = [](size_t i) { return "tenants[" + std::to_string(i) + "]"; };
  if (tenants.size() > kMaxTenants) {
    d->Violation({"tenants"}, "tenants: " + std::to_string(tenants.size()) + " tenants; allowed: at most " +
                                  std::to_string(kMaxTenants));
  }
  for (size_t i = 0; i < tenants.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      const TenantConfig& a = tenants[j];
      const TenantConfig& b = tenants[i];
      if (!a.name.empty() && a.name == b.name) {
        d->Violation({at(i) + ".name", at(j) + ".name"},
                     at(i) + ".name: '" + b.name + "' is also the name of " + at(j) + "; allowed: unique names");
      }
      if (!a.prefix.empty() && !b.prefix.empty() &&
          (a.prefix.starts_with(b.prefix) || b.prefix.starts_with(a.prefix))) {
        d->Violation({at(i) + ".prefix", at(j) + ".prefix"},
                     at(i) + ".prefix: '" + b.prefix + "' (tenant " + b.name + ") overlaps '" + a.prefix + "' of " +
                         at(j) + " (tenant " + a.name + "); allowed: disjoint prefixes, none starting another");
      }
    }
  }
  // Each key signs for exactly one credential: the same bytes twice would
  // make a Connect ambiguous. Key bytes are never shown, only their places.
  struct Place {
    const std::vector<uint8_t>* key;
    std::string field;
    std::string owner;
  };
  std::vector<Place> places;
  if (config.network.auth_key) places.push_back({&*config.network.auth_key, "network.auth_key", "the administrator"});
  for (size_t i = 0; i < tenants.size(); ++i) {
    const std::string who = "tenant " + (tenants[i].name.empty() ? at(i) : tenants[i].name);
    if (tenants[i].key.size() == kAuthKeyBytes) places.push_back({&tenants[i].key, at(i) + ".key", who});
    if (tenants[i].next_key.size() == kAuthKeyBytes) places.push_back({&tenants[i].next_key, at(i) + ".next_key", who});
  }
  for (size_t i = 0; i < places.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (*places[i].key != *places[j].key) continue;
      d->Violation({places[i].field, places[j].field},
                   places[i].field + ": the same key as " + places[j].field + " (" + places[j].owner +
                       "); allowed: a key of its own for each credential, or a Connect could not tell them apart");
    }
  }
}

}  // namespace internal

TenantMap TenantMapOf(const std::vector<TenantConfig>& tenants) {
  std::vector<TenantLimits> limits;
  limits.reserve(tenants.size());
  for (const TenantConfig& t : tenants) {
    limits.push_back({t.name, t.prefix, t.dram_quota_bytes, t.drive_quota_bytes});
  }
  return TenantMap(std::move(limits));
}

}  // namespace memkv::config
