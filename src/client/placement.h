// Placement: which server owns a key, by rendezvous (highest random weight)
// hashing. Every server gets a score XXH3(key, seed = XXH3(server name)) and
// the highest score wins (ties: the lower index).
//
// Why rendezvous: clients place keys on their own (servers never talk to each
// other), so every client must agree given the same server list, and adding a
// server to N must move only the ~1/(N+1) of keys the new server wins, all of
// them to the new server; removing one moves only the keys it owned. The
// order of the list does not matter, only the servers' identities.
//
// A server's identity is its canonical address (CanonicalServerId): the
// numeric IP the host resolves to (IPv4 preferred) and the port, so
// "localhost:9900", "127.0.0.1:9900" and "127.000.000.001:9900" place every
// key alike, and a numeric address's identity is the address as written
// (placement of numeric server lists is unchanged).
//
// Cost: one XXH3 of the key per server, fine for the tens of servers a
// deployment has. Immutable after Create; safe to share between threads.
#ifndef MEMKV_CLIENT_PLACEMENT_H_
#define MEMKV_CLIENT_PLACEMENT_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "memkv/status.h"

namespace memkv::client {

// "ip:port" ("[v6]:port") of host:port: the numeric address itself
// (normalized) or, for a name, the first IPv4 address it resolves to, else
// the first IPv6 one. A name that does not resolve keeps its spelling (lower
// case) and `*resolved` is set false.
std::string CanonicalServerId(const std::string& host, uint16_t port, bool* resolved = nullptr);

class Placement {
 public:
  // `names` (for messages) and `ids` (what keys are placed by), one per
  // server. InvalidArgument when empty, or when two servers share an id,
  // naming both as written.
  static Result<Placement> Create(std::vector<std::string> names, const std::vector<std::string>& ids);
  // Ids equal to the names (tests).
  static Result<Placement> Create(std::vector<std::string> servers) { return Create(servers, servers); }

  // Index into the server list of the key's owner.
  size_t ServerFor(std::string_view key) const;
  size_t size() const { return seeds_.size(); }
  const std::string& name(size_t index) const { return names_[index]; }

 private:
  Placement(std::vector<std::string> names, std::vector<uint64_t> seeds)
      : names_(std::move(names)), seeds_(std::move(seeds)) {}
  std::vector<std::string> names_;
  std::vector<uint64_t> seeds_;  // XXH3 of each id
};

}  // namespace memkv::client

#endif  // MEMKV_CLIENT_PLACEMENT_H_
