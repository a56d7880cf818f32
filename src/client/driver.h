// Driver: the threads that run a Client's asynchronous submissions, and the
// AsyncQueue they complete into (memkv/async.h states the caller's rules).
//
// A BatchJob says what to run (the op and the caller's lent spans) and holds
// the completion the run fills in. The client hands the Driver one JobRunner,
// the same function its blocking Batch* calls run inline on the caller's
// thread; the Driver runs it on one of at most max_threads threads, started
// one at a time when a submission finds none idle. So a submission and a
// blocking call take the same path through the client, and the blocking path
// never crosses a thread.
//
// Ownership: the Client owns the Driver through a shared_ptr, and every queue
// holds one too, so a queue may outlive the client. The Client calls
// Shutdown() in its destructor, before anything the runner touches is gone:
// it cancels what has not started, joins the threads (so waits for what is
// running), and from then on submissions complete at once as cancelled.
//
// Thread-safety: every method may be called from any thread except Shutdown,
// which must not be called from a driver thread (the runner never calls it).
#ifndef MEMKV_CLIENT_DRIVER_H_
#define MEMKV_CLIENT_DRIVER_H_

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <span>
#include <string_view>
#include <thread>
#include <vector>

#include "base/mutex.h"
#include "base/unique_fd.h"
#include "memkv/async.h"

namespace memkv::client {

struct BatchJob {
  AsyncOp op = AsyncOp::kGet;
  std::span<const std::string_view> keys;
  std::span<const std::span<const uint8_t>> values;  // put
  std::span<const PutOptions> options;               // put: empty, or one per key
  std::span<const std::span<uint8_t>> buffers;       // get
  AsyncCompletion completion;                        // id, tag and op set on submission
};

// Fills job->completion (statuses, present_prefix, sizes) from the keys.
using JobRunner = std::function<void(BatchJob* job)>;

// Every key of `job` Unavailable "cancelled: <why>"; marks it cancelled.
void CompleteCancelled(BatchJob* job, std::string_view why);

class QueueCore;

class Driver {
 public:
  static constexpr size_t kDefaultThreads = 4;  // ClientOptions::async_threads' default

  Driver(JobRunner runner, size_t max_threads = kDefaultThreads);
  ~Driver();  // Shutdown()
  Driver(const Driver&) = delete;
  Driver& operator=(const Driver&) = delete;

  // Queues `job` for `queue` (which counts it outstanding first); a
  // submission after Shutdown completes at once as cancelled.
  void Submit(const std::shared_ptr<QueueCore>& queue, std::unique_ptr<BatchJob> job);
  // Takes `id` back if it is `queue`'s and has not started; completes it
  // as cancelled. True when it did.
  bool Cancel(const QueueCore* queue, AsyncId id);
  // Cancels every submission of `queue` that has not started.
  void CancelAll(const QueueCore* queue, std::string_view why);
  // Runs the oldest submission of `queue` that no driver thread has started
  // yet on the calling thread and posts its completion. False when there was
  // none, or after Shutdown began; Shutdown waits for the runs in progress.
  bool RunOneOf(const QueueCore* queue);
  void Shutdown();

  AsyncId NextId() { return next_id_.fetch_add(1, std::memory_order_relaxed); }
  size_t threads_started() const;

 private:
  struct Pending {
    std::shared_ptr<QueueCore> queue;
    std::unique_ptr<BatchJob> job;
  };
  void Loop();

  const JobRunner runner_;
  const size_t max_threads_;
  std::atomic<AsyncId> next_id_{1};
  mutable Mutex mu_;
  std::condition_variable cv_;
  std::deque<Pending> pending_ MEMKV_GUARDED_BY(mu_);
  size_t idle_ MEMKV_GUARDED_BY(mu_) = 0;             // threads waiting for work
  size_t callers_running_ MEMKV_GUARDED_BY(mu_) = 0;  // batches RunOneOf runs now
  std::condition_variable callers_done_;              // callers_running_ dropped
  bool stopping_ MEMKV_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_ MEMKV_GUARDED_BY(mu_);  // joined by Shutdown
};

// A queue's completions and its eventfd, readable while any are waiting.
// Shared by the AsyncQueue, the Driver's pending entries and running jobs.
class QueueCore {
 public:
  static Result<std::shared_ptr<QueueCore>> Create();
  int fd() const { return fd_.get(); }
  // A submission was accepted: it is outstanding until taken.
  void AddOutstanding();
  // A submission finished; kept for Take unless the queue is closed.
  void Post(AsyncCompletion completion);
  size_t Take(std::vector<AsyncCompletion>* out, size_t max);
  // Waits up to `timeout_ms` (negative: no limit) for a completion to wait.
  void WaitReady(int timeout_ms);
  // Drops what is waiting and every later post; waits until nothing posted
  // to it is still running (every outstanding submission was posted).
  void CloseAndWait();
  size_t outstanding() const;
  bool has_completions() const;

 private:
  explicit QueueCore(UniqueFd fd) : fd_(std::move(fd)) {}
  // An eventfd whose count is 1 exactly while done_ is not empty (written
  // and read under mu_).
  const UniqueFd fd_;
  mutable Mutex mu_;
  std::condition_variable cv_;
  std::deque<AsyncCompletion> done_ MEMKV_GUARDED_BY(mu_);
  size_t running_ MEMKV_GUARDED_BY(mu_) = 0;  // submitted, not yet posted
  bool closed_ MEMKV_GUARDED_BY(mu_) = false;
};

// The AsyncQueue a Client hands out.
class DriverQueue final : public AsyncQueue {
 public:
  DriverQueue(std::shared_ptr<Driver> driver, std::shared_ptr<QueueCore> core)
      : driver_(std::move(driver)), core_(std::move(core)) {}
  ~DriverQueue() override;

  AsyncId SubmitGet(std::span<const std::string_view> keys, std::span<const std::span<uint8_t>> buffers,
                    uint64_t tag) override;
  AsyncId SubmitPut(std::span<const std::string_view> keys, std::span<const std::span<const uint8_t>> values,
                    uint64_t tag) override;
  AsyncId SubmitPutWith(std::span<const std::string_view> keys, std::span<const std::span<const uint8_t>> values,
                        std::span<const PutOptions> options, uint64_t tag) override;
  AsyncId SubmitExists(std::span<const std::string_view> keys, uint64_t tag) override;
  AsyncId SubmitDelete(std::span<const std::string_view> keys, uint64_t tag) override;
  bool Cancel(AsyncId id) override { return driver_->Cancel(core_.get(), id); }
  int fd() const override { return core_->fd(); }
  size_t Poll(std::vector<AsyncCompletion>* out, size_t max) override { return core_->Take(out, max); }
  size_t Wait(std::vector<AsyncCompletion>* out, size_t max, int timeout_ms) override;
  size_t outstanding() const override { return core_->outstanding(); }

 private:
  AsyncId Submit(std::unique_ptr<BatchJob> job, uint64_t tag);

  std::shared_ptr<Driver> driver_;
  std::shared_ptr<QueueCore> core_;
};

}  // namespace memkv::client

#endif  // MEMKV_CLIENT_DRIVER_H_
