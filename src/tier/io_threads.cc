#include "tier/io_threads.h"

#include <algorithm>
#include <utility>

#include "base/thread_name.h"

namespace memkv::tier {

IoThreads::IoThreads(int threads) {
  const int n = std::max(1, threads);
  for (int i = 0; i < n; ++i) threads_.emplace_back([this] {
      SetThreadName("memkv-io");
      Loop();
    });
}

IoThreads::~IoThreads() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void IoThreads::Submit(Job job) {
  {
    MutexLock lock(mu_);
    jobs_.push_back(std::move(job));
  }
  cv_.notify_one();
}

void IoThreads::Loop() {
  for (;;) {
    Job job;
    {
      MutexLock lock(mu_);
      lock.Wait(cv_, [&]() MEMKV_REQUIRES(mu_) { return stopping_ || !jobs_.empty(); });
      if (jobs_.empty()) return;  // stopping, and every queued job has run
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    job();
  }
}

}  // namespace memkv::tier
