#include "tier/key_locks.h"

#include <algorithm>
#include <utility>

namespace memkv::tier {

KeyLocks::Held::Held(Held&& other) noexcept
    : owner_(std::exchange(other.owner_, nullptr)), keys_(std::move(other.keys_)) {}

KeyLocks::Held::~Held() {
  if (owner_ != nullptr) owner_->Release(keys_);
}

KeyLocks::Held KeyLocks::Lock(std::string_view key) {
  const std::string_view keys[] = {key};
  return LockAll(keys);
}

KeyLocks::Held KeyLocks::LockAll(std::span<const std::string_view> keys) {
  // Each key once (a single key, the common case, is taken as it comes).
  std::vector<std::string_view> sorted;
  std::span<const std::string_view> wanted = keys;
  if (keys.size() > 1) {
    sorted.assign(keys.begin(), keys.end());
    std::sort(sorted.begin(), sorted.end());
    sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
    wanted = sorted;
  }
  std::vector<const std::string*> taken;
  taken.reserve(wanted.size());
  MutexLock lock(mu_);
  auto none_held = [&]() MEMKV_REQUIRES(mu_) {
    for (std::string_view k : wanted) {
      if (held_.contains(k)) return false;
    }
    return true;
  };
  if (!none_held()) {
    ++waiting_;
    lock.Wait(released_, none_held);
    --waiting_;
  }
  try {
    for (std::string_view k : wanted) taken.push_back(&*held_.emplace(k).first);
  } catch (...) {  // out of memory: no key stays held by nobody
    for (const std::string* k : taken) held_.erase(held_.find(*k));
    throw;
  }
  return Held(this, std::move(taken));
}

void KeyLocks::Release(std::span<const std::string* const> keys) {
  bool wake = false;
  {
    MutexLock lock(mu_);
    // Found by the set's own copy, which the erase then frees.
    for (const std::string* k : keys) held_.erase(held_.find(*k));
    wake = waiting_ > 0;
  }
  if (wake) released_.notify_all();
}

size_t KeyLocks::held() const {
  MutexLock lock(mu_);
  return held_.size();
}

size_t KeyLocks::waiting() const {
  MutexLock lock(mu_);
  return waiting_;
}

}  // namespace memkv::tier
