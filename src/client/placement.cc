#include "client/placement.h"

#include <xxhash.h>

#include <set>

namespace memkv::client {

Result<Placement> Placement::Create(std::vector<std::string> servers) {
  if (servers.empty()) return InvalidArgument("placement needs at least one server");
  std::set<std::string_view> seen;
  std::vector<uint64_t> seeds;
  seeds.reserve(servers.size());
  for (const std::string& name : servers) {
    if (!seen.insert(name).second) {
      return InvalidArgument("server '" + name + "' is listed twice; list each server once");
    }
    seeds.push_back(XXH3_64bits(name.data(), name.size()));
  }
  return Placement(std::move(servers), std::move(seeds));
}

size_t Placement::ServerFor(std::string_view key) const {
  size_t best = 0;
  uint64_t best_score = 0;
  for (size_t i = 0; i < seeds_.size(); ++i) {
    // Seeding with the server's hash makes each server's scores an
    // independent hash of the key, which is all rendezvous hashing needs.
    uint64_t score = XXH3_64bits_withSeed(key.data(), key.size(), seeds_[i]);
    if (i == 0 || score > best_score) {
      best = i;
      best_score = score;
    }
  }
  return best;
}

}  // namespace memkv::client
