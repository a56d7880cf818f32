#include "server/expiry_sweeper.h"

#include <utility>

#include "base/thread_name.h"

namespace memkv::server {

ExpirySweeper::ExpirySweeper(Sweep sweep, std::chrono::milliseconds interval)
    : sweep_(std::move(sweep)), interval_(interval), thread_([this] { Loop(); }) {}

ExpirySweeper::~ExpirySweeper() { Stop(); }

void ExpirySweeper::Stop() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void ExpirySweeper::Loop() {
  SetThreadName("memkv-expiry");
  MutexLock lock(mu_);
  while (!stopping_) {
    lock.Unlock();
    while (sweep_(kBatch) == kBatch) {
      MutexLock check(mu_);
      if (stopping_) return;
    }
    lock.Lock();
    lock.WaitFor(wake_, interval_, [&]() MEMKV_REQUIRES(mu_) { return stopping_; });
  }
}

}  // namespace memkv::server
