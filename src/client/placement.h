// Placement: which server owns a key, by weighted rendezvous (highest random
// weight) hashing. Every server i gets h_i = XXH3(key, seed = XXH3(id_i));
// with equal weights the highest h_i wins (ties: the lower index); with
// weights, u_i = ((h_i >> 11) + 0.5) * 2^-53 in (0,1) and the highest
// w_i / -ln(u_i) wins, which gives server i the fraction w_i / sum(w) of
// the keys and keeps rendezvous' minimal movement (a server's score for a
// key does not depend on the other servers).
//
// Why rendezvous: clients place keys on their own (servers never talk to each
// other), so every client must agree given the same server list, and adding a
// server to N must move only the ~1/(N+1) of keys the new server wins, all of
// them to the new server; removing one moves only the keys it owned. The
// order of the list does not matter, only the servers' identities.
//
// A server's identity is its id (ServerInfo) or, for a server that predates
// ServerInfo, its canonical address (CanonicalServerId): the
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
  // server, and `weights` (empty: all equal; else one per server, each > 0).
  // InvalidArgument when empty, when two servers share an id, naming both
  // as written, or when a weight is 0.
  static Result<Placement> Create(std::vector<std::string> names, const std::vector<std::string>& ids,
                                  std::vector<uint64_t> weights = {});
  // Ids equal to the names (tests).
  static Result<Placement> Create(std::vector<std::string> servers) { return Create(servers, servers); }

  // Index into the server list of the key's owner.
  size_t ServerFor(std::string_view key) const;
  // The key's rendezvous order: every server index, the owner first, then
  // the one that would own the key without it, and so on. A key's fallback
  // server (its owner down or draining) is the next one here, and it is the
  // owner the key had before the owner joined.
  std::vector<size_t> Order(std::string_view key) const;
  size_t size() const { return seeds_.size(); }
  const std::string& name(size_t index) const { return names_[index]; }
  // The weight in use (1 each when the weights are equal) and the fraction
  // of the key space it gives server `index`.
  uint64_t weight(size_t index) const { return weights_.empty() ? 1 : weights_[index]; }
  double share(size_t index) const { return static_cast<double>(weight(index)) / total_weight_; }

 private:
  Placement(std::vector<std::string> names, std::vector<uint64_t> seeds, std::vector<uint64_t> weights);
  // Server `index`'s score for the key; higher wins.
  double Score(std::string_view key, size_t index) const;

  std::vector<std::string> names_;
  std::vector<uint64_t> seeds_;    // XXH3 of each id
  std::vector<uint64_t> weights_;  // empty: all equal (scores are the raw hashes)
  double total_weight_ = 0;
};

}  // namespace memkv::client

#endif  // MEMKV_CLIENT_PLACEMENT_H_
