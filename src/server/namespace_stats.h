// NamespaceStats: lookups, hits, bytes and evictions per key namespace, so an
// operator can read the hit rate of one model or adapter (docs/metrics.md,
// "Namespaces").
//
// A key's namespace is its text up to the first `separator` (metrics.
// namespace_separator; "/" by default, which is the adapters' layout
// `<namespace>/<model>/...`); a key without one belongs to the namespace "".
//
// Label cardinality stays bounded: at most `top` namespaces (metrics.
// namespace_top) are reported under their own name, everything else under
// "other". A namespace is reported as soon as it is seen while fewer than
// `top` are; after that, the others are ranked by traffic (lookups + puts,
// space-saving over at most kCandidatesPerSlot * top of them) and, at a
// snapshot, one whose traffic is more than twice the quietest reported one's
// takes its place. Every series stays monotonic: what a namespace counted
// before it was reported stays in "other" (its own series starts from zero),
// and a namespace that loses its place folds its counts into "other".
//
// Hit ratio: hits over lookups, where lookups are requested blocks (each key
// of a get, an exists or a prefix match) and hits those found (a prefix
// match's matched keys).
//
// Thread-safety: every method may be called from any thread (one mutex; a
// batch is counted with one lock per run of keys in the same namespace).
#ifndef MEMKV_SERVER_NAMESPACE_STATS_H_
#define MEMKV_SERVER_NAMESPACE_STATS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/mutex.h"

namespace memkv::server {

struct NamespaceStatsOptions {
  std::string separator = "/";  // empty: every key is in the namespace ""
  uint32_t top = 16;            // 0: nothing per namespace, everything in "other"
};

struct NamespaceCounts {
  uint64_t lookups = 0;        // blocks asked for (gets, exists, prefix-match keys)
  uint64_t hits = 0;           // of those, found
  uint64_t read_bytes = 0;     // value bytes served
  uint64_t puts = 0;           // values stored
  uint64_t written_bytes = 0;  // value bytes stored
  uint64_t evictions = 0;      // values evicted to make room (any tier)

  void Add(const NamespaceCounts& other);
  double hit_ratio() const { return lookups == 0 ? 0.0 : double(hits) / double(lookups); }
};

struct NamespaceRow {
  std::string name;
  NamespaceCounts counts;
};

// One lookup, get or put's worth of counts for a key.
struct KeyCounts {
  std::string_view key;
  NamespaceCounts counts;
};

class NamespaceStats {
 public:
  static constexpr uint32_t kCandidatesPerSlot = 8;
  static constexpr std::string_view kOther = "other";

  explicit NamespaceStats(NamespaceStatsOptions options);

  std::string_view NamespaceOf(std::string_view key) const;

  void Count(std::string_view key, const NamespaceCounts& counts);
  // Several keys at once: one lock per run of keys in one namespace.
  void CountMany(const std::vector<KeyCounts>& items);

  // The reported namespaces by name, then "other" (always present). Promotes
  // and demotes as the class comment says.
  std::vector<NamespaceRow> Snapshot();

 private:
  struct Entry {
    NamespaceCounts counts;  // since it was last reported or folded
    uint64_t traffic = 0;    // lookups + puts over its life here (the ranking)
    bool reported = false;
  };

  void CountLocked(std::string_view ns, const NamespaceCounts& counts) MEMKV_REQUIRES(mu_);
  // Space-saving: a new candidate takes the place of the quietest unreported
  // one when the candidates are full, inheriting its traffic (as an upper
  // bound) and folding its counts into other.
  Entry* AdmitLocked(std::string_view ns) MEMKV_REQUIRES(mu_);
  void RebalanceLocked() MEMKV_REQUIRES(mu_);

  // Looked up by string_view: counting a request allocates nothing.
  struct NameHash {
    using is_transparent = void;
    size_t operator()(std::string_view name) const { return std::hash<std::string_view>()(name); }
  };

  NamespaceStatsOptions options_;
  Mutex mu_;
  std::unordered_map<std::string, Entry, NameHash, std::equal_to<>> entries_ MEMKV_GUARDED_BY(mu_);
  uint32_t reported_ MEMKV_GUARDED_BY(mu_) = 0;
  NamespaceCounts other_ MEMKV_GUARDED_BY(mu_);
};

}  // namespace memkv::server

#endif  // MEMKV_SERVER_NAMESPACE_STATS_H_
