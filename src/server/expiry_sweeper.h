// ExpirySweeper: frees values whose TTL has run out even when nobody looks
// them up again (Redis's active expiry beside its lazy one). A thread wakes
// every `interval` and calls `sweep(batch)`; while a call frees a whole
// batch it calls again at once, so a wave of expiries is freed at the speed
// of the store, and an idle store costs one cheap call per interval.
//
// Thread-safety: Stop (and the destructor) may be called from any thread
// but the sweeper's own; `sweep` runs on the sweeper's thread.
#ifndef MEMKV_SERVER_EXPIRY_SWEEPER_H_
#define MEMKV_SERVER_EXPIRY_SWEEPER_H_

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <thread>

#include "base/mutex.h"

namespace memkv::server {

class ExpirySweeper {
 public:
  // sweep(max): frees up to `max` expired values, returns how many it freed.
  using Sweep = std::function<size_t(size_t max)>;
  static constexpr size_t kBatch = 256;

  ExpirySweeper(Sweep sweep, std::chrono::milliseconds interval);
  ~ExpirySweeper();
  ExpirySweeper(const ExpirySweeper&) = delete;
  ExpirySweeper& operator=(const ExpirySweeper&) = delete;

  void Stop();

 private:
  void Loop();

  Sweep sweep_;
  std::chrono::milliseconds interval_;
  Mutex mu_;
  std::condition_variable wake_;
  bool stopping_ MEMKV_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace memkv::server

#endif  // MEMKV_SERVER_EXPIRY_SWEEPER_H_
