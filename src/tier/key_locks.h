// KeyLocks: mutual exclusion per key, for the tier's drive work
// (tiered_store.h, "Ordering"). Operations on one key wait for each other;
// operations on different keys never do, however their keys hash. A batch
// takes all its keys at once, all or nothing (it waits while any of them is
// held and holds none meanwhile), so two batches cannot deadlock.
//
// A key is held for a drive write and its commit, which with storage.sync
// always includes an fdatasync: where two keys shared a lock (a fixed array
// of striped mutexes), a batch whose key shared one with a batch being
// flushed waited for that flush before it could join the next group commit.
//
// The held keys live in one hash set under one mutex, taken once to lock and
// once to unlock; a release wakes the waiters only when there are some.
//
// Thread-safety: every method may be called from any thread. A Held must
// not outlive its KeyLocks.
#ifndef MEMKV_TIER_KEY_LOCKS_H_
#define MEMKV_TIER_KEY_LOCKS_H_

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "base/mutex.h"

namespace memkv::tier {

class KeyLocks {
 public:
  // The keys a Lock or LockAll took, released when it goes.
  class [[nodiscard]] Held {
   public:
    Held(Held&& other) noexcept;
    Held& operator=(Held&&) = delete;
    Held(const Held&) = delete;
    Held& operator=(const Held&) = delete;
    ~Held();

   private:
    friend class KeyLocks;
    Held(KeyLocks* owner, std::vector<const std::string*> keys) : owner_(owner), keys_(std::move(keys)) {}

    KeyLocks* owner_ = nullptr;
    std::vector<const std::string*> keys_;  // the set's own copies (nodes never move)
  };

  KeyLocks() = default;
  KeyLocks(const KeyLocks&) = delete;
  KeyLocks& operator=(const KeyLocks&) = delete;

  // Blocks while another holder has `key`, then holds it.
  Held Lock(std::string_view key);
  // Blocks while another holder has any of `keys`, then holds them all. A
  // key may appear more than once.
  Held LockAll(std::span<const std::string_view> keys);

  // Keys held now, and callers blocked waiting for one (tests).
  size_t held() const;
  size_t waiting() const;

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view key) const noexcept { return std::hash<std::string_view>{}(key); }
  };

  void Release(std::span<const std::string* const> keys);

  mutable Mutex mu_;
  std::condition_variable released_;
  std::unordered_set<std::string, Hash, std::equal_to<>> held_ MEMKV_GUARDED_BY(mu_);
  size_t waiting_ MEMKV_GUARDED_BY(mu_) = 0;
};

}  // namespace memkv::tier

#endif  // MEMKV_TIER_KEY_LOCKS_H_
