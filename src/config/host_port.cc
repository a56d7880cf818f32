#include "config/host_port.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>

#include "base/parse_number.h"
#include "config/diagnostics.h"

namespace memkv::config::internal {
namespace {

constexpr size_t kMaxHostnameLength = 253;
constexpr size_t kMaxLabelLength = 63;
// More digits than any port; keeps a typo like "99999999999999999999" from
// being reported as an overflow rather than as a bad port.
constexpr size_t kMaxPortDigits = 9;

bool IsHostnameChar(char c) {
  // '_' is not RFC 1123, but container and internal DNS names use it and
  // getaddrinfo resolves them, so refusing it would only get in the way.
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
}

bool LooksNumeric(std::string_view host) {
  return std::all_of(host.begin(), host.end(), [](char c) {
    return c == '.' || std::isdigit(static_cast<unsigned char>(c));
  });
}

bool IsIpv4(std::string_view host) {
  in_addr addr{};
  return inet_pton(AF_INET, std::string(host).c_str(), &addr) == 1;
}

bool IsIpv6(std::string_view host) {
  in6_addr addr{};
  return inet_pton(AF_INET6, std::string(host).c_str(), &addr) == 1;
}

std::optional<std::string> CheckHostname(std::string_view host) {
  if (host.size() > kMaxHostnameLength) return "hostname longer than 253 characters";
  if (host.back() == '.') host.remove_suffix(1);  // fully qualified "example.com."
  while (true) {
    size_t dot = host.find('.');
    std::string_view label = host.substr(0, dot);
    if (label.empty()) return "hostname has an empty label";
    if (label.size() > kMaxLabelLength) return "hostname label longer than 63 characters";
    if (!std::all_of(label.begin(), label.end(), IsHostnameChar)) {
      return "hostname may hold only letters, digits, '-', '_' and '.'";
    }
    if (label.front() == '-' || label.back() == '-') {
      return "hostname label starts or ends with '-'";
    }
    if (dot == std::string_view::npos) return std::nullopt;
    host.remove_prefix(dot + 1);
  }
}

Status Bad(std::string_view text, std::string_view why) {
  return InvalidArgument("'" + std::string(text) + "' is not host:port: " + std::string(why));
}

}  // namespace

std::optional<std::string> CheckHost(std::string_view host) {
  if (host.empty()) return "empty host";
  if (host.find(':') != std::string_view::npos) {
    if (IsIpv6(host)) return std::nullopt;
    return "'" + std::string(host) + "' is not an IPv6 address";
  }
  if (LooksNumeric(host)) {
    if (IsIpv4(host)) return std::nullopt;
    return "'" + std::string(host) + "' is not an IPv4 address";
  }
  return CheckHostname(host);
}

Result<HostPort> SplitHostPort(std::string_view text) {
  HostPort out;
  std::string_view port_text;
  if (!text.empty() && text.front() == '[') {
    size_t close = text.find(']');
    if (close == std::string_view::npos) return Bad(text, "'[' without ']'");
    out.host = std::string(text.substr(1, close - 1));
    std::string_view rest = text.substr(close + 1);
    if (rest.empty() || rest.front() != ':') return Bad(text, "missing ':port' after ']'");
    port_text = rest.substr(1);
    if (out.host.find(':') == std::string::npos) {
      return Bad(text, "brackets are for IPv6 addresses only");
    }
  } else {
    size_t colon = text.rfind(':');
    if (colon == std::string_view::npos) return Bad(text, "missing ':port'");
    out.host = std::string(text.substr(0, colon));
    port_text = text.substr(colon + 1);
    if (out.host.find(':') != std::string::npos) {
      return Bad(text, "an IPv6 host needs brackets, e.g. '[::1]:9900'");
    }
  }
  if (std::optional<std::string> why = CheckHost(out.host)) return Bad(text, *why);
  if (port_text.empty()) return Bad(text, "empty port");
  std::optional<uint64_t> port = ParseDecimal(port_text);
  if (!port || port_text.size() > kMaxPortDigits) {
    return Bad(text, "port '" + std::string(port_text) + "' is not a number");
  }
  out.port = *port;
  return out;
}

std::string JoinHostPort(std::string_view host, uint64_t port) {
  std::string out;
  if (host.find(':') != std::string_view::npos) {
    out = "[" + std::string(host) + "]";
  } else {
    out = std::string(host);
  }
  return out + ":" + std::to_string(port);
}

}  // namespace memkv::config::internal
