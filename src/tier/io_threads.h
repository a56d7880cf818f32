// IoThreads: the threads that do the tiered store's drive work, so that no
// event-loop thread waits on a drive read or a slow flush. Jobs run in
// submission order (one FIFO queue); each thread blocks on one drive
// operation at a time.
//
// Thread-safety: Submit may be called from any thread, also from a job. The
// destructor runs every job still queued, then joins.
#ifndef MEMKV_TIER_IO_THREADS_H_
#define MEMKV_TIER_IO_THREADS_H_

#include <condition_variable>
#include <deque>
#include <thread>
#include <vector>

#include "base/mutex.h"
#include "tier/callback.h"

namespace memkv::tier {

class IoThreads {
 public:
  using Job = Callback<void()>;

  explicit IoThreads(int threads);  // at least one
  ~IoThreads();
  IoThreads(const IoThreads&) = delete;
  IoThreads& operator=(const IoThreads&) = delete;

  void Submit(Job job);

 private:
  void Loop();

  Mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> jobs_ MEMKV_GUARDED_BY(mu_);
  bool stopping_ MEMKV_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace memkv::tier

#endif  // MEMKV_TIER_IO_THREADS_H_
