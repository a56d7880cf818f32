#include "tier/completion_inbox.h"

#include <unistd.h>

namespace memkv::tier {

void CompletionInbox::Post(uint64_t owner, Closure closure) {
  MutexLock lock(mu_);
  if (closed_) return;  // the loop is gone (its eventfd with it); `closure` is destroyed here
  posted_.emplace_back(owner, std::move(closure));
  uint64_t one = 1;
  ssize_t ignored = ::write(wake_fd_, &one, sizeof(one));
  (void)ignored;  // a full eventfd counter still wakes the loop
}

void CompletionInbox::PostMany(std::vector<std::pair<uint64_t, Closure>> closures) {
  if (closures.empty()) return;
  MutexLock lock(mu_);
  if (closed_) return;  // dropped with `closures`
  for (auto& c : closures) posted_.push_back(std::move(c));
  uint64_t one = 1;
  ssize_t ignored = ::write(wake_fd_, &one, sizeof(one));
  (void)ignored;
}

std::vector<std::pair<uint64_t, CompletionInbox::Closure>> CompletionInbox::Take() {
  MutexLock lock(mu_);
  return std::exchange(posted_, {});
}

void CompletionInbox::Close() {
  std::vector<std::pair<uint64_t, Closure>> dropped;  // destroyed after the lock is released
  MutexLock lock(mu_);
  closed_ = true;
  dropped.swap(posted_);
}

}  // namespace memkv::tier
