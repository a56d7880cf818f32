#include "server/namespace_stats.h"

#include <algorithm>
#include <utility>

#include "base/identity_selector.h"

namespace memkv::server {

void NamespaceCounts::Add(const NamespaceCounts& other) {
  lookups += other.lookups;
  hits += other.hits;
  read_bytes += other.read_bytes;
  puts += other.puts;
  written_bytes += other.written_bytes;
  evictions += other.evictions;
}

NamespaceStats::NamespaceStats(NamespaceStatsOptions options) : options_(std::move(options)) {}

std::string_view NamespaceStats::NamespaceOf(std::string_view key) const {
  if (options_.separator.empty()) return {};
  // A cache identity's segment ("@<tag>/") is not a namespace: the adapter's is behind it.
  if (key.size() > CacheIdentity::kTagChars + 2 && key[0] == '@' && key[CacheIdentity::kTagChars + 1] == '/' &&
      IsIdentityTag(key.substr(1, CacheIdentity::kTagChars))) {
    key.remove_prefix(CacheIdentity::kTagChars + 2);
  }
  const size_t end = key.find(options_.separator);
  return end == std::string_view::npos ? std::string_view() : key.substr(0, end);
}

void NamespaceStats::Count(std::string_view key, const NamespaceCounts& counts) {
  MutexLock lock(mu_);
  CountLocked(NamespaceOf(key), counts);
}

void NamespaceStats::CountMany(const std::vector<KeyCounts>& items) {
  size_t i = 0;
  while (i < items.size()) {
    const std::string_view ns = NamespaceOf(items[i].key);
    NamespaceCounts run;
    for (; i < items.size() && NamespaceOf(items[i].key) == ns; ++i) run.Add(items[i].counts);
    MutexLock lock(mu_);
    CountLocked(ns, run);
  }
}

void NamespaceStats::CountLocked(std::string_view ns, const NamespaceCounts& counts) {
  if (options_.top == 0) {
    other_.Add(counts);
    return;
  }
  auto it = entries_.find(ns);
  Entry* entry = it != entries_.end() ? &it->second : AdmitLocked(ns);
  if (entry == nullptr) {
    other_.Add(counts);
    return;
  }
  entry->counts.Add(counts);
  entry->traffic += counts.lookups + counts.puts;
}

NamespaceStats::Entry* NamespaceStats::AdmitLocked(std::string_view ns) {
  const size_t limit = size_t(options_.top) * (1 + kCandidatesPerSlot);
  uint64_t inherited = 0;
  if (entries_.size() >= limit) {
    auto quietest = entries_.end();
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (it->second.reported) continue;
      if (quietest == entries_.end() || it->second.traffic < quietest->second.traffic) quietest = it;
    }
    if (quietest == entries_.end()) return nullptr;
    other_.Add(quietest->second.counts);
    inherited = quietest->second.traffic;
    entries_.erase(quietest);
  }
  Entry& entry = entries_[std::string(ns)];
  entry.traffic = inherited;
  if (reported_ < options_.top) {
    entry.reported = true;
    ++reported_;
  }
  return &entry;
}

void NamespaceStats::RebalanceLocked() {
  // The loudest candidate against the quietest reported namespace, until the
  // candidate is not twice as loud.
  for (;;) {
    auto loudest = entries_.end();
    auto quietest = entries_.end();
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      auto& slot = it->second.reported ? quietest : loudest;
      const bool better = slot == entries_.end() || (it->second.reported ? it->second.traffic < slot->second.traffic
                                                                         : it->second.traffic > slot->second.traffic);
      if (better) slot = it;
    }
    if (loudest == entries_.end()) return;
    if (quietest != entries_.end() && reported_ >= options_.top) {
      if (loudest->second.traffic <= 2 * quietest->second.traffic) return;
      other_.Add(quietest->second.counts);
      quietest->second.counts = {};
      quietest->second.reported = false;
      --reported_;
    }
    if (reported_ >= options_.top) return;
    other_.Add(loudest->second.counts);
    loudest->second.counts = {};
    loudest->second.reported = true;
    ++reported_;
  }
}

std::vector<NamespaceRow> NamespaceStats::Snapshot() {
  std::vector<NamespaceRow> rows;
  MutexLock lock(mu_);
  RebalanceLocked();
  NamespaceCounts other = other_;
  for (const auto& [name, entry] : entries_) {
    if (entry.reported) {
      rows.push_back({name, entry.counts});
    } else {
      other.Add(entry.counts);
    }
  }
  std::sort(rows.begin(), rows.end(), [](const NamespaceRow& a, const NamespaceRow& b) { return a.name < b.name; });
  rows.push_back({std::string(kOther), other});
  return rows;
}

}  // namespace memkv::server
