// IdlePoll: how long a worker keeps polling its connections after a turn
// before it sleeps in epoll_wait (network.busy_poll_us).
//
// A worker that sleeps at once pays a wakeup for the next request: on a
// virtual machine whose idle vCPUs halt, that is a trip through the
// hypervisor on each side, the largest part of a small request's round trip
// at one connection (docs/benchmarks.md, "4 KiB puts in file mode: one commit
// per turn"). Polling for a while catches a request that follows soon. The
// window adapts as the kernel's haltpoll governor does: an idle spell no
// longer than the most the worker may poll (whether the poll caught its end
// or a short sleep did) sets the window to that most; a longer one halves
// it, down to zero, so that a worker whose requests are far apart soon stops
// burning its core on them.
#ifndef MEMKV_SERVER_IDLE_POLL_H_
#define MEMKV_SERVER_IDLE_POLL_H_

#include "base/clock.h"

namespace memkv::server {

class IdlePoll {
 public:
  // `max_ns` 0: never poll.
  explicit IdlePoll(Nanos max_ns) : max_ns_(max_ns), window_ns_(max_ns) {}

  // How long to poll before sleeping, now.
  Nanos window_ns() const { return window_ns_; }

  // The worker was idle this long (polling, then sleeping if the poll found
  // nothing) before its next event or its sleep's timeout.
  void OnIdle(Nanos idle_ns) {
    if (idle_ns <= max_ns_) {
      window_ns_ = max_ns_;
    } else {
      window_ns_ = window_ns_ / 2 < kMinWindowNs ? 0 : window_ns_ / 2;
    }
  }

 private:
  static constexpr Nanos kMinWindowNs = 1000;
  Nanos max_ns_;
  Nanos window_ns_;
};

}  // namespace memkv::server

#endif  // MEMKV_SERVER_IDLE_POLL_H_
