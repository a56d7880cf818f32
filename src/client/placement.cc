#include "client/placement.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <xxhash.h>

#include <algorithm>
#include <cctype>
#include <map>

namespace memkv::client {

std::string CanonicalServerId(const std::string& host, uint16_t port, bool* resolved) {
  if (resolved != nullptr) *resolved = true;
  const std::string suffix = ":" + std::to_string(port);
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0 || found == nullptr) {
    if (resolved != nullptr) *resolved = false;
    std::string lower = host;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    return (lower.find(':') != std::string::npos ? "[" + lower + "]" : lower) + suffix;
  }
  const addrinfo* pick = nullptr;
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
    if (a->ai_family == AF_INET && (pick == nullptr || pick->ai_family != AF_INET)) pick = a;
    if (a->ai_family == AF_INET6 && pick == nullptr) pick = a;
  }
  char text[INET6_ADDRSTRLEN] = "";
  std::string id;
  if (pick != nullptr && pick->ai_family == AF_INET) {
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(pick->ai_addr)->sin_addr, text, sizeof(text));
    id = std::string(text) + suffix;
  } else if (pick != nullptr) {
    ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(pick->ai_addr)->sin6_addr, text, sizeof(text));
    id = "[" + std::string(text) + "]" + suffix;
  }
  ::freeaddrinfo(found);
  if (id.empty()) {
    if (resolved != nullptr) *resolved = false;
    return host + suffix;
  }
  return id;
}

Result<Placement> Placement::Create(std::vector<std::string> names, const std::vector<std::string>& ids) {
  if (names.empty()) return InvalidArgument("placement needs at least one server");
  if (ids.size() != names.size()) return InvalidArgument("placement needs one id per server");
  std::map<std::string_view, size_t> seen;
  std::vector<uint64_t> seeds;
  seeds.reserve(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    auto [at, inserted] = seen.emplace(ids[i], i);
    if (!inserted) {
      const std::string& first = names[at->second];
      return InvalidArgument("server '" + names[i] + "' is listed twice" +
                             (first == names[i] ? std::string() : " (as '" + first + "', both " + ids[i] + ")") +
                             "; list each server once");
    }
    seeds.push_back(XXH3_64bits(ids[i].data(), ids[i].size()));
  }
  return Placement(std::move(names), std::move(seeds));
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
