#include "client/placement.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <xxhash.h>

#include <algorithm>
#include <cctype>
#include <cmath>
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

Placement::Placement(std::vector<std::string> names, std::vector<uint64_t> seeds, std::vector<uint64_t> weights)
    : names_(std::move(names)), seeds_(std::move(seeds)), weights_(std::move(weights)) {
  // Equal weights keep the unweighted rule (highest hash), so a fleet whose
  // weights are all alike places keys exactly as before weights existed.
  if (!weights_.empty() && std::all_of(weights_.begin(), weights_.end(), [&](uint64_t w) { return w == weights_[0]; })) {
    weights_.clear();
  }
  for (size_t i = 0; i < seeds_.size(); ++i) total_weight_ += static_cast<double>(weight(i));
}

Result<Placement> Placement::Create(std::vector<std::string> names, const std::vector<std::string>& ids,
                                    std::vector<uint64_t> weights) {
  if (names.empty()) return InvalidArgument("placement needs at least one server");
  if (ids.size() != names.size()) return InvalidArgument("placement needs one id per server");
  if (!weights.empty() && weights.size() != names.size()) {
    return InvalidArgument("placement needs one weight per server");
  }
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
    if (!weights.empty() && weights[i] == 0) {
      return InvalidArgument("server '" + names[i] + "' has weight 0; a weight must be at least 1");
    }
    seeds.push_back(XXH3_64bits(ids[i].data(), ids[i].size()));
  }
  return Placement(std::move(names), std::move(seeds), std::move(weights));
}

double Placement::Score(std::string_view key, size_t index) const {
  // Seeding with the server's hash makes each server's scores an
  // independent hash of the key, which is all rendezvous hashing needs.
  const uint64_t h = XXH3_64bits_withSeed(key.data(), key.size(), seeds_[index]);
  if (weights_.empty()) return static_cast<double>(h);  // monotonic in h; ties broken by Order/ServerFor on h
  // u in (0,1): never 0 or 1, so -ln(u) is finite and positive.
  const double u = (static_cast<double>(h >> 11) + 0.5) * 0x1.0p-53;
  return static_cast<double>(weights_[index]) / -std::log(u);
}

size_t Placement::ServerFor(std::string_view key) const {
  if (weights_.empty()) {
    // Compared as integers: the exact rule of the unweighted placement.
    size_t best = 0;
    uint64_t best_score = 0;
    for (size_t i = 0; i < seeds_.size(); ++i) {
      const uint64_t score = XXH3_64bits_withSeed(key.data(), key.size(), seeds_[i]);
      if (i == 0 || score > best_score) {
        best = i;
        best_score = score;
      }
    }
    return best;
  }
  size_t best = 0;
  double best_score = -1;
  for (size_t i = 0; i < seeds_.size(); ++i) {
    const double score = Score(key, i);
    if (score > best_score) {
      best = i;
      best_score = score;
    }
  }
  return best;
}

std::vector<size_t> Placement::Order(std::string_view key) const {
  std::vector<std::pair<uint64_t, size_t>> raw;  // equal weights: by hash, exactly
  std::vector<std::pair<double, size_t>> weighted;
  std::vector<size_t> order;
  order.reserve(seeds_.size());
  if (weights_.empty()) {
    for (size_t i = 0; i < seeds_.size(); ++i) {
      raw.emplace_back(XXH3_64bits_withSeed(key.data(), key.size(), seeds_[i]), i);
    }
    std::stable_sort(raw.begin(), raw.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    for (const auto& [score, i] : raw) order.push_back(i);
  } else {
    for (size_t i = 0; i < seeds_.size(); ++i) weighted.emplace_back(Score(key, i), i);
    std::stable_sort(weighted.begin(), weighted.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    for (const auto& [score, i] : weighted) order.push_back(i);
  }
  return order;
}

}  // namespace memkv::client
