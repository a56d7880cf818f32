#include "server/expiry_sweeper.h"

#include <utility>

#include "base/thread_name.h"

namespace memkv::server {

ExpirySweeper::ExpirySweeper(Sweep sweep, std::chrono::milliseconds interval)
    : sweep_(std::move(sweep)), interval_(interval), thread_([this] { Loop(); }) {}

ExpirySweeper::~ExpirySweeper() { Stop(); }

void ExpirySweeper::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void ExpirySweeper::Loop() {
  SetThreadName("memkv-expiry");
  std::unique_lock lock(mu_);
  while (!stopping_) {
    lock.unlock();
    while (sweep_(kBatch) == kBatch) {
      std::lock_guard check(mu_);
      if (stopping_) return;
    }
    lock.lock();
    wake_.wait_for(lock, interval_, [this] { return stopping_; });
  }
}

}  // namespace memkv::server
