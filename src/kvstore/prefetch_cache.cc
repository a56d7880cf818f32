#include "kvstore/prefetch_cache.h"

#include <utility>
#include <vector>

namespace memkv::kvstore {

bool PrefetchCache::Insert(const std::string& key, MallocBuffer value) {
  if (value.size() > max_bytes_ || max_entries_ == 0) return false;
  std::vector<MallocBuffer> evicted;  // freed after the lock is released
  MutexLock lock(mu_);
  if (entries_.contains(key)) return false;
  while (!order_.empty() && (bytes_ + value.size() > max_bytes_ || entries_.size() >= max_entries_)) {
    auto it = entries_.find(order_.front());
    bytes_ -= it->second.value.size();
    evicted.push_back(std::move(it->second.value));
    entries_.erase(it);
    order_.pop_front();
  }
  bytes_ += value.size();
  order_.push_back(key);
  entries_.emplace(key, Entry{std::move(value), std::prev(order_.end())});
  return true;
}

std::optional<MallocBuffer> PrefetchCache::Take(const std::string& key) {
  MutexLock lock(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end()) return std::nullopt;
  MallocBuffer value = std::move(it->second.value);
  bytes_ -= value.size();
  order_.erase(it->second.order);
  entries_.erase(it);
  return value;
}

bool PrefetchCache::Contains(const std::string& key) const {
  MutexLock lock(mu_);
  return entries_.contains(key);
}

uint64_t PrefetchCache::bytes() const {
  MutexLock lock(mu_);
  return bytes_;
}

size_t PrefetchCache::entries() const {
  MutexLock lock(mu_);
  return entries_.size();
}

}  // namespace memkv::kvstore
