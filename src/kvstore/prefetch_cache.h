// PrefetchCache: the chunks a handle's prefetch_chunks fetched, waiting for
// the get_chunk that takes them. Bounded by bytes and by entries; when an
// insert would pass a bound, the oldest entries leave first. A get takes
// its entry out (the caller gets the malloc block itself, no copy), so a
// restore that reads each chunk once leaves the cache empty.
//
// Chunks are immutable, so an entry is never stale. Thread-safe: one mutex
// guards the map; no I/O and no copy of chunk bytes happens under it.
#ifndef MEMKV_KVSTORE_PREFETCH_CACHE_H_
#define MEMKV_KVSTORE_PREFETCH_CACHE_H_

#include <cstddef>
#include <cstdint>
#include <list>
#include <optional>
#include <string>
#include <unordered_map>

#include "base/mutex.h"
#include "kvstore/malloc_buffer.h"

namespace memkv::kvstore {

inline constexpr size_t kMaxPrefetchEntries = 65536;

class PrefetchCache {
 public:
  PrefetchCache(uint64_t max_bytes, size_t max_entries) : max_bytes_(max_bytes), max_entries_(max_entries) {}
  PrefetchCache(const PrefetchCache&) = delete;
  PrefetchCache& operator=(const PrefetchCache&) = delete;

  // Keeps `value` under `key`, evicting the oldest entries to make room. A
  // key already cached keeps its entry; a value larger than the byte bound
  // is not kept. True when the value was kept.
  bool Insert(const std::string& key, MallocBuffer value);
  // Removes the entry and hands its buffer over; nullopt when absent.
  std::optional<MallocBuffer> Take(const std::string& key);
  bool Contains(const std::string& key) const;

  uint64_t max_bytes() const { return max_bytes_; }
  uint64_t bytes() const;
  size_t entries() const;

 private:
  struct Entry {
    MallocBuffer value;
    std::list<std::string>::iterator order;
  };

  const uint64_t max_bytes_;
  const size_t max_entries_;
  mutable Mutex mu_;
  std::unordered_map<std::string, Entry> entries_ MEMKV_GUARDED_BY(mu_);
  std::list<std::string> order_ MEMKV_GUARDED_BY(mu_);  // oldest first
  uint64_t bytes_ MEMKV_GUARDED_BY(mu_) = 0;
};

}  // namespace memkv::kvstore

#endif  // MEMKV_KVSTORE_PREFETCH_CACHE_H_
