// Resolver: turns the client's server list (config/server_source.h) into the
// servers' addresses, asking DNS for dns: and srv: entries (docs/fleet.md,
// "Discovery"). The client's refresher calls it at start and every
// discovery_interval_ms.
//
// DNS is asked with libresolv (res_nquery) on a resolver state of its own:
// the system's name servers (/etc/resolv.conf), or the one `dns_server`
// names ("IP:PORT", the client option dns_server / MEMKV_DNS_SERVER), so a
// test can point a client at a DNS server on a loopback port. Answers are
// not cached beyond one Resolve call; a record's TTL does not stretch the
// interval.
//
// Thread-safety: one Resolver is used by one thread at a time (the
// refresher); distinct Resolvers are independent.
#ifndef MEMKV_CLIENT_DISCOVERY_H_
#define MEMKV_CLIENT_DISCOVERY_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "config/server_source.h"
#include "memkv/status.h"

namespace memkv::client {

struct ResolvedServer {
  std::string host;  // numeric address (no brackets) or, for kAddress entries, the host as written
  uint16_t port = 0;
  std::string name;  // "host:port" as printed in messages ("[v6]:port")
  std::string source;  // the server-list entry it came from, as written
  bool operator==(const ResolvedServer&) const = default;
};

class Resolver {
 public:
  // `dns_server`: empty for the system's name servers, else "IP:PORT"
  // (IPv4 or [IPv6]); InvalidArgument naming it when it is not one.
  static Result<std::unique_ptr<Resolver>> Create(const std::string& dns_server);
  virtual ~Resolver() = default;

  // Every server the entries name, deduplicated by host:port and sorted:
  // kAddress entries as they are (not resolved here: connecting resolves
  // them), kDns each A then AAAA address at the entry's port, kSrv each
  // target's addresses at the record's port. An entry whose lookup fails
  // (no such name, no records, a DNS server that does not answer within
  // `timeout_ms`, the client option resolve_timeout_ms, which the message
  // names) contributes nothing and its error is appended to
  // `errors` (naming the entry, the record type and the cause), so one bad
  // record does not hide the servers the others name.
  virtual std::vector<ResolvedServer> Resolve(std::span<const config::ServerSource> entries, uint32_t timeout_ms,
                                              std::vector<Status>* errors) = 0;
};

}  // namespace memkv::client

#endif  // MEMKV_CLIENT_DISCOVERY_H_
