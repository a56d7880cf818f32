// "host:port" text (internal to src/config): shared by the server's
// network.address, the client's server list and its metrics bind address.
// Hosts are kept without brackets ("::1"), the form getaddrinfo and
// inet_pton take; brackets are added back only when printing. Pure.
#ifndef MEMKV_CONFIG_HOST_PORT_H_
#define MEMKV_CONFIG_HOST_PORT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "memkv/status.h"

namespace memkv::config::internal {

struct HostPort {
  std::string host;   // without brackets
  uint64_t port = 0;  // not range-checked: each caller has its own range
};

// Splits "host:port" or "[v6]:port" and checks the host (CheckHost). The
// port must be decimal digits. InvalidArgument naming `text` and the cause.
Result<HostPort> SplitHostPort(std::string_view text);

// Why `host` (without brackets) is not an IPv4 address, a hostname or an
// IPv6 address; nullopt when it is one.
std::optional<std::string> CheckHost(std::string_view host);

// "host:port", with brackets around an IPv6 host.
std::string JoinHostPort(std::string_view host, uint64_t port);

}  // namespace memkv::config::internal

#endif  // MEMKV_CONFIG_HOST_PORT_H_
