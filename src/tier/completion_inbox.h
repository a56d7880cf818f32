// CompletionInbox: how a storage operation that waited on a drive gets back
// to the event loop that started it.
//
// The tier's I/O thread finishes the drive work and posts the operation's
// completion (a closure) with the id of its owner, e.g. a connection. The
// loop owns the inbox, is woken through `wake_fd` (an eventfd it polls), takes
// what was posted and runs each closure for its owner, or drops it (which
// destroys what it holds: pins, reserved pool space) when the owner is gone.
// So completions never run on an I/O thread, and a loop never waits on a
// drive's reads or slow flushes (TieredStore, "Completion").
//
// Thread-safety: Post may be called from any thread; Take and Close belong to
// the owning loop. After Close, posts are dropped: the closure is destroyed on
// the posting thread. Shared (shared_ptr) between the loop and the ReplyTo of
// every operation in flight, so a post after the loop is gone is harmless.
#ifndef MEMKV_TIER_COMPLETION_INBOX_H_
#define MEMKV_TIER_COMPLETION_INBOX_H_

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "base/mutex.h"
#include "tier/callback.h"

namespace memkv::tier {

class CompletionInbox {
 public:
  using Closure = Callback<void()>;

  // `wake_fd`: an eventfd the owning loop polls; written once per post. It
  // must stay open until Close.
  explicit CompletionInbox(int wake_fd) : wake_fd_(wake_fd) {}
  CompletionInbox(const CompletionInbox&) = delete;
  CompletionInbox& operator=(const CompletionInbox&) = delete;

  void Post(uint64_t owner, Closure closure);
  // Post for each, in order, with one wakeup.
  void PostMany(std::vector<std::pair<uint64_t, Closure>> closures);
  // Everything posted since the last Take, in posting order.
  std::vector<std::pair<uint64_t, Closure>> Take();
  // Drops what is pending and every later post.
  void Close();

 private:
  Mutex mu_;
  std::vector<std::pair<uint64_t, Closure>> posted_ MEMKV_GUARDED_BY(mu_);
  bool closed_ MEMKV_GUARDED_BY(mu_) = false;
  int wake_fd_;
};

// Where an operation's completion goes when it cannot complete inline: the
// caller's inbox, tagged with `owner`. A caller builds one and passes it by
// reference to every operation; the tier copies it only for drive work.
class TurnCommits;

struct ReplyTo {
  std::shared_ptr<CompletionInbox> inbox;
  uint64_t owner = 0;
  // The caller's loop's puts deferred to the end of its turn (TieredStore,
  // "Completion"); null: none are deferred.
  TurnCommits* turn = nullptr;
};

}  // namespace memkv::tier

#endif  // MEMKV_TIER_COMPLETION_INBOX_H_
