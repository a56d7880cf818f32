#include "kvstore/settings.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <limits>
#include <utility>

#include "kvstore/uri.h"

namespace memkv::kvstore {
namespace {

constexpr std::array<std::pair<std::string_view, ClientLogLevel>, 5> kLogLevels = {{
    {"debug", ClientLogLevel::kDebug},
    {"info", ClientLogLevel::kInfo},
    {"warn", ClientLogLevel::kWarn},
    {"error", ClientLogLevel::kError},
    {"off", ClientLogLevel::kOff},
}};

std::optional<uint64_t> ParseDecimal(std::string_view text) {
  if (text.empty() || text.size() > 19) return std::nullopt;
  uint64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + static_cast<uint64_t>(c - '0');
  }
  return value;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())) != 0) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())) != 0) s.remove_suffix(1);
  return s;
}

// Reads the variables into `settings`, appending one line per problem.
class EnvReader {
 public:
  explicit EnvReader(const EnvLookup& env) : env_(env) {}

  void Required(std::string_view name, std::string* out, std::string_view meaning) {
    std::optional<std::string> v = env_(name);
    if (!v.has_value() || v->empty()) {
      problems_.push_back(std::string(name) + " is not set; set it to " + std::string(meaning));
      return;
    }
    *out = *v;
  }

  void Client(ClientOptions* out) {
    const Status s = SetClientOptionsFromEnvironment(out, env_);
    if (!s.ok()) problems_.push_back(s.message());
  }

  // The URI's identity fields over the environment's.
  void UriIdentity(std::span<const std::pair<std::string, std::string>> fields, ClientOptions* out) {
    std::vector<std::pair<std::string, std::string>> extras = out->identity.extras;
    bool extras_given = false;
    for (const auto& [name, value] : fields) {
      if (name.starts_with(kExtraPrefix)) {
        const std::string extra = name.substr(kExtraPrefix.size());
        std::erase_if(extras, [&](const auto& e) { return e.first == extra; });
        extras.emplace_back(extra, value);
        extras_given = true;
        continue;
      }
      const Status s = SetClientOption(out, "identity_" + name, value, "URI field '" + name + "'");
      if (!s.ok()) problems_.push_back(s.message());
    }
    if (extras_given) {
      std::vector<std::string> items;
      for (const auto& [name, value] : extras) items.push_back(name + "=" + value);
      const Status s = SetClientOptionList(out, "identity_extras", items, "URI extra.* fields");
      if (!s.ok()) problems_.push_back(s.message());
    }
    CacheIdentity& id = out->identity;
    if (!id.model.empty() && id.engine.empty()) id.engine = kDefaultIdentityEngine;
    if (problems_.empty() && !id.empty()) {
      const Status s = id.Check();
      if (!s.ok()) problems_.push_back(s.message() + " (from the URI's query and MEMKV_IDENTITY_*)");
    }
  }

  void Bytes(std::string_view name, uint64_t* out, uint64_t min, uint64_t max) {
    std::optional<std::string> v = env_(name);
    if (!v.has_value() || v->empty()) return;
    std::optional<uint64_t> n = ParseByteCount(*v);
    if (!n.has_value() || *n < min || *n > max) {
      problems_.push_back(std::string(name) + " '" + *v + "' is not a byte count in " + std::to_string(min) + ".." +
                          std::to_string(max >> 30) + " GiB (a number, optionally followed by KiB, MiB or GiB)");
      return;
    }
    *out = *n;
  }

  void Count(std::string_view name, uint64_t* out, uint64_t max) {
    std::optional<std::string> v = env_(name);
    if (!v.has_value() || v->empty()) return;
    std::optional<uint64_t> n = ParseDecimal(Trim(*v));
    if (!n.has_value() || *n > max) {
      problems_.push_back(std::string(name) + " '" + *v + "' is not a whole number in 0.." + std::to_string(max));
      return;
    }
    *out = *n;
  }

  Status Done() const {
    if (problems_.empty()) return Status::Ok();
    std::string text;
    for (const std::string& p : problems_) text += (text.empty() ? "" : "; ") + p;
    return InvalidArgument(text);
  }

 private:
  const EnvLookup& env_;
  std::vector<std::string> problems_;
};

// Appends `text` to a key so that no two lists of pieces give the same key.
void AppendPiece(std::string* key, std::string_view text) {
  *key += std::to_string(text.size());
  *key += ':';
  *key += text;
}

}  // namespace

std::optional<uint64_t> ParseByteCount(std::string_view text) {
  text = Trim(text);
  size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  std::optional<uint64_t> n = ParseDecimal(text.substr(0, digits));
  if (!n.has_value()) return std::nullopt;
  std::string_view unit = Trim(text.substr(digits));
  int shift = 0;
  if (unit == "KiB") {
    shift = 10;
  } else if (unit == "MiB") {
    shift = 20;
  } else if (unit == "GiB") {
    shift = 30;
  } else if (!unit.empty()) {
    return std::nullopt;
  }
  if (*n > (std::numeric_limits<uint64_t>::max() >> shift)) return std::nullopt;
  return *n << shift;
}

std::optional<ClientLogLevel> LogLevelFromEnvironment(const EnvLookup& env) {
  std::optional<std::string> v = env("MEMKV_LOG_LEVEL");
  if (!v.has_value()) return std::nullopt;
  for (const auto& [text, level] : kLogLevels) {
    if (*v == text) return level;
  }
  return std::nullopt;
}

Result<StoreSettings> SettingsFromEnvironment(const EnvLookup& env, std::vector<std::string> servers,
                                              std::span<const std::pair<std::string, std::string>> identity) {
  StoreSettings settings;
  ClientOptions& c = settings.client;
  // The client key: the servers, the URI's identity fields, then each
  // variable as it is read (unset apart from empty).
  std::string& key_text = settings.client_key;
  for (const std::string& server : servers) AppendPiece(&key_text, server);
  key_text += '|';
  for (const auto& [name, value] : identity) {
    AppendPiece(&key_text, name);
    AppendPiece(&key_text, value);
  }
  key_text += '|';
  const EnvLookup recorded = [&](std::string_view name) {
    std::optional<std::string> value = env(name);
    AppendPiece(&key_text, name);
    if (value.has_value()) {
      AppendPiece(&key_text, *value);
    } else {
      key_text += '-';
    }
    return value;
  };
  EnvReader read(recorded);
  std::string key;
  read.Required("MEMKV_AUTH_KEY", &key,
                "the servers' 64-hex-character key (a kv_store backend reads the MEMKV_* variables, "
                "not MEMKV_CONFIG)");
  // Every client option from its MEMKV_* variable, through the table; the
  // servers are the URI's, whatever MEMKV_SERVERS says.
  read.Client(&c);
  c.servers = std::move(servers);
  read.UriIdentity(identity, &c);
  read.Bytes("MEMKV_KV_STORE_BUFFER_BYTES", &settings.buffer_bytes, kMinBufferBytes, kMaxBoundBytes);
  read.Bytes("MEMKV_KV_STORE_PREFETCH_BYTES", &settings.prefetch_bytes, 0, kMaxBoundBytes);
  read.Count("MEMKV_KV_STORE_SHARED_CLIENTS", &settings.shared_clients, kMaxSharedClients);
  MEMKV_RETURN_IF_ERROR(read.Done());
  return settings;
}

}  // namespace memkv::kvstore
