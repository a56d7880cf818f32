#include "client/driver.h"

#include <poll.h>
#include <sys/eventfd.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <string>
#include <utility>

#include "base/errno_text.h"
#include "base/thread_name.h"

// The public API of memkv/async.h.
namespace memkv {

std::string_view AsyncOpName(AsyncOp op) {
  switch (op) {
    case AsyncOp::kGet: return "get";
    case AsyncOp::kPut: return "put";
    case AsyncOp::kExists: return "exists";
    case AsyncOp::kDelete: return "delete";
  }
  return "unknown";
}

}  // namespace memkv

namespace memkv::client {

void CompleteCancelled(BatchJob* job, std::string_view why) {
  AsyncCompletion& c = job->completion;
  c.cancelled = true;
  c.statuses.assign(job->keys.size(), Unavailable("cancelled: " + std::string(why)));
  c.present_prefix = 0;
  if (c.op == AsyncOp::kGet) {
    c.sizes.assign(job->keys.size(), 0);
  } else {
    c.sizes.clear();
  }
}

// ---- Driver ----

Driver::Driver(JobRunner runner, size_t max_threads)
    : runner_(std::move(runner)), max_threads_(std::max<size_t>(max_threads, 1)) {}

Driver::~Driver() { Shutdown(); }

void Driver::Submit(const std::shared_ptr<QueueCore>& queue, std::unique_ptr<BatchJob> job) {
  queue->AddOutstanding();
  {
    MutexLock lock(mu_);
    if (!stopping_) {
      pending_.push_back(Pending{queue, std::move(job)});
      // A thread more when the idle ones cannot take everything waiting.
      if (pending_.size() > idle_ && threads_.size() < max_threads_) {
        threads_.emplace_back([this] { Loop(); });
      }
      cv_.notify_one();
      return;
    }
  }
  CompleteCancelled(job.get(), "the client was destroyed before this batch was submitted");
  queue->Post(std::move(job->completion));
}

bool Driver::Cancel(const QueueCore* queue, AsyncId id) {
  Pending taken;
  {
    MutexLock lock(mu_);
    auto it = std::find_if(pending_.begin(), pending_.end(), [&](const Pending& p) {
      return p.queue.get() == queue && p.job->completion.id == id;
    });
    if (it == pending_.end()) return false;
    taken = std::move(*it);
    pending_.erase(it);
  }
  CompleteCancelled(taken.job.get(), "Cancel took the batch back before it started");
  taken.queue->Post(std::move(taken.job->completion));
  return true;
}

void Driver::CancelAll(const QueueCore* queue, std::string_view why) {
  std::vector<Pending> taken;
  {
    MutexLock lock(mu_);
    for (auto it = pending_.begin(); it != pending_.end();) {
      if (queue == nullptr || it->queue.get() == queue) {
        taken.push_back(std::move(*it));
        it = pending_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (Pending& p : taken) {
    CompleteCancelled(p.job.get(), why);
    p.queue->Post(std::move(p.job->completion));
  }
}

bool Driver::RunOneOf(const QueueCore* queue) {
  Pending taken;
  {
    MutexLock lock(mu_);
    if (stopping_) return false;  // the client is going: nothing may run now
    auto it = std::find_if(pending_.begin(), pending_.end(), [&](const Pending& p) { return p.queue.get() == queue; });
    if (it == pending_.end()) return false;
    taken = std::move(*it);
    pending_.erase(it);
    ++callers_running_;
  }
  runner_(taken.job.get());
  taken.queue->Post(std::move(taken.job->completion));
  {
    MutexLock lock(mu_);
    --callers_running_;
  }
  callers_done_.notify_all();
  return true;
}

void Driver::Shutdown() {
  std::vector<std::thread> threads;
  {
    MutexLock lock(mu_);
    stopping_ = true;
    threads.swap(threads_);
  }
  cv_.notify_all();
  CancelAll(nullptr, "the client was destroyed before this batch started");
  for (std::thread& t : threads) t.join();
  // And the batches that waiting callers run themselves (RunOneOf).
  MutexLock lock(mu_);
  lock.Wait(callers_done_, [&]() MEMKV_REQUIRES(mu_) { return callers_running_ == 0; });
}

size_t Driver::threads_started() const {
  MutexLock lock(mu_);
  return threads_.size();
}

void Driver::Loop() {
  SetThreadName("memkv-async");
  for (;;) {
    Pending p;
    {
      MutexLock lock(mu_);
      ++idle_;
      lock.Wait(cv_, [&]() MEMKV_REQUIRES(mu_) { return stopping_ || !pending_.empty(); });
      --idle_;
      if (stopping_) return;
      p = std::move(pending_.front());
      pending_.pop_front();
    }
    runner_(p.job.get());
    p.queue->Post(std::move(p.job->completion));
  }
}

// ---- QueueCore ----

Result<std::shared_ptr<QueueCore>> QueueCore::Create() {
  UniqueFd fd(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!fd.valid()) return Internal("eventfd for an async queue: " + ErrnoText(errno));
  return std::shared_ptr<QueueCore>(new QueueCore(std::move(fd)));
}

void QueueCore::AddOutstanding() {
  MutexLock lock(mu_);
  ++running_;
}

void QueueCore::Post(AsyncCompletion completion) {
  MutexLock lock(mu_);
  --running_;
  if (!closed_) {
    done_.push_back(std::move(completion));
    if (done_.size() == 1) {
      const uint64_t one = 1;
      // Cannot fail: the count is 0 here (it is 1 exactly while done_ is not empty).
      [[maybe_unused]] ssize_t n = ::write(fd_.get(), &one, sizeof(one));
    }
  }
  cv_.notify_all();
}

size_t QueueCore::Take(std::vector<AsyncCompletion>* out, size_t max) {
  MutexLock lock(mu_);
  size_t taken = 0;
  while (taken < max && !done_.empty()) {
    out->push_back(std::move(done_.front()));
    done_.pop_front();
    ++taken;
  }
  if (taken > 0 && done_.empty()) {
    uint64_t count = 0;
    [[maybe_unused]] ssize_t n = ::read(fd_.get(), &count, sizeof(count));
  }
  return taken;
}

void QueueCore::WaitReady(int timeout_ms) {
  MutexLock lock(mu_);
  auto ready = [&]() MEMKV_REQUIRES(mu_) { return !done_.empty() || closed_; };
  if (timeout_ms < 0) {
    lock.Wait(cv_, ready);
  } else {
    lock.WaitFor(cv_, std::chrono::milliseconds(timeout_ms), ready);
  }
}

void QueueCore::CloseAndWait() {
  MutexLock lock(mu_);
  closed_ = true;
  if (!done_.empty()) {
    done_.clear();
    uint64_t count = 0;
    [[maybe_unused]] ssize_t n = ::read(fd_.get(), &count, sizeof(count));
  }
  lock.Wait(cv_, [&]() MEMKV_REQUIRES(mu_) { return running_ == 0; });
}

bool QueueCore::has_completions() const {
  MutexLock lock(mu_);
  return !done_.empty();
}

size_t QueueCore::outstanding() const {
  MutexLock lock(mu_);
  return running_ + done_.size();
}

// ---- DriverQueue ----

DriverQueue::~DriverQueue() {
  driver_->CancelAll(core_.get(), "the queue was destroyed before this batch started");
  core_->CloseAndWait();
}

AsyncId DriverQueue::Submit(std::unique_ptr<BatchJob> job, uint64_t tag) {
  const AsyncId id = driver_->NextId();
  job->completion.id = id;
  job->completion.tag = tag;
  job->completion.op = job->op;
  driver_->Submit(core_, std::move(job));
  return id;
}

AsyncId DriverQueue::SubmitGet(std::span<const std::string_view> keys, std::span<const std::span<uint8_t>> buffers,
                               uint64_t tag) {
  auto job = std::make_unique<BatchJob>();
  job->op = AsyncOp::kGet;
  job->keys = keys;
  job->buffers = buffers;
  return Submit(std::move(job), tag);
}

AsyncId DriverQueue::SubmitPut(std::span<const std::string_view> keys,
                               std::span<const std::span<const uint8_t>> values, uint64_t tag) {
  auto job = std::make_unique<BatchJob>();
  job->op = AsyncOp::kPut;
  job->keys = keys;
  job->values = values;
  return Submit(std::move(job), tag);
}

AsyncId DriverQueue::SubmitPutWith(std::span<const std::string_view> keys,
                                   std::span<const std::span<const uint8_t>> values,
                                   std::span<const PutOptions> options, uint64_t tag) {
  auto job = std::make_unique<BatchJob>();
  job->op = AsyncOp::kPut;
  job->keys = keys;
  job->values = values;
  job->options = options;
  return Submit(std::move(job), tag);
}

AsyncId DriverQueue::SubmitExists(std::span<const std::string_view> keys, uint64_t tag) {
  auto job = std::make_unique<BatchJob>();
  job->op = AsyncOp::kExists;
  job->keys = keys;
  return Submit(std::move(job), tag);
}

AsyncId DriverQueue::SubmitDelete(std::span<const std::string_view> keys, uint64_t tag) {
  auto job = std::make_unique<BatchJob>();
  job->op = AsyncOp::kDelete;
  job->keys = keys;
  return Submit(std::move(job), tag);
}

size_t DriverQueue::Wait(std::vector<AsyncCompletion>* out, size_t max, int timeout_ms) {
  // A caller about to wait runs a submission no driver thread has taken yet
  // itself instead of waiting for one to wake up.
  if (timeout_ms != 0 && !core_->has_completions()) driver_->RunOneOf(core_.get());
  if (timeout_ms != 0) core_->WaitReady(timeout_ms);
  return core_->Take(out, max);
}

}  // namespace memkv::client
