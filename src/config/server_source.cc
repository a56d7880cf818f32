#include "config/server_source.h"

#include "config/client_config.h"
#include "config/host_port.h"

namespace memkv::config {
namespace {

constexpr std::string_view kForms =
    "; allowed: host:port, [IPv6]:port, dns:NAME:PORT (every address NAME resolves to) or srv:NAME "
    "(the SRV records of _memkv._tcp.NAME)";

Status Bad(std::string_view text, const std::string& why) {
  return InvalidArgument("'" + std::string(text) + "': " + why + std::string(kForms));
}

}  // namespace

Result<ServerSource> ParseServerSource(std::string_view text) {
  ServerSource s;
  s.text = std::string(text);
  if (text.starts_with("dns:")) {
    Result<internal::HostPort> split = internal::SplitHostPort(text.substr(4));
    if (!split.ok()) return Bad(text, split.status().message());
    if (split->port == 0 || split->port > UINT16_MAX) {
      return Bad(text, "port " + std::to_string(split->port) + " is out of range 1..65535");
    }
    if (internal::CheckHost(split->host) || split->host.find(':') != std::string::npos) {
      return Bad(text, "'" + split->host + "' is not a DNS name");
    }
    s.kind = ServerSource::Kind::kDns;
    s.host = split->host;
    s.port = static_cast<uint16_t>(split->port);
    return s;
  }
  if (text.starts_with("srv:")) {
    std::string name(text.substr(4));
    if (name.empty()) return Bad(text, "the SRV name is empty");
    if (!name.starts_with("_")) name = "_memkv._tcp." + name;
    if (name.find(':') != std::string::npos) return Bad(text, "an SRV name has no port (its records carry them)");
    // An SRV owner name has labels starting with '_'; check the rest as a host.
    std::string plain = name;
    for (char& c : plain) {
      if (c == '_') c = 'x';
    }
    if (std::optional<std::string> why = internal::CheckHost(plain)) return Bad(text, "not a DNS name: " + *why);
    s.kind = ServerSource::Kind::kSrv;
    s.host = std::move(name);
    return s;
  }
  Result<ServerAddress> address = ParseServerAddress(text);
  if (!address.ok()) {
    return InvalidArgument(address.status().message() + ", dns:NAME:PORT or srv:NAME");
  }
  s.host = address->host;
  s.port = address->port;
  return s;
}

}  // namespace memkv::config
