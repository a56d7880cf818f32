#include "nixl/transfer_engine.h"

#include <algorithm>
#include <atomic>
#include <utility>

namespace memkv::nixl {
namespace {

// MemKV's longest key (docs/wire-protocol.md).
constexpr size_t kMaxKeyBytes = 1024;

std::string Describe(size_t index, const std::string& key) {
  return "descriptor " + std::to_string(index) + " (key '" + key + "')";
}

}  // namespace

// Lets a released Transfer take back its batches that have not started,
// while the engine (and its queue) exists: the engine clears `queue` under
// `mu` before it goes.
struct TransferEngine::CancelHub {
  Mutex mu;
  AsyncQueue* queue MEMKV_GUARDED_BY(mu) = nullptr;
};

// The plan of one prepared transfer and its progress, shared by the caller's
// Transfer and the batches submitted for it: a batch that outlives a released
// Transfer still has valid keys to send and a place to report to.
struct Transfer::Job {
  Direction direction = Direction::kWrite;
  std::vector<std::string> keys;
  std::vector<std::span<uint8_t>> buffers;
  uint64_t bytes = 0;
  std::shared_ptr<TransferEngine::CancelHub> hub;

  std::atomic<bool> cancelled{false};
  std::atomic<size_t> batches_left{0};
  std::atomic<TransferState> state{TransferState::kIdle};
  Mutex mu;
  Status error MEMKV_GUARDED_BY(mu);
  size_t error_index MEMKV_GUARDED_BY(mu) = SIZE_MAX;
  std::vector<AsyncId> submitted MEMKV_GUARDED_BY(mu);  // the batches of the last Post

  // Keeps the error of the lowest descriptor index.
  void Fail(size_t index, Status status) {
    MutexLock lock(mu);
    if (index < error_index) {
      error_index = index;
      error = std::move(status);
    }
  }

  // One batch ended; the last one settles the state. True when this was the
  // last and the transfer failed.
  bool BatchEnded() {
    if (batches_left.fetch_sub(1, std::memory_order_acq_rel) != 1) return false;
    bool failed = false;
    {
      MutexLock lock(mu);
      failed = error_index != SIZE_MAX;
    }
    state.store(failed ? TransferState::kFailed : TransferState::kDone, std::memory_order_release);
    return failed;
  }
};

Transfer::Transfer(std::shared_ptr<Job> job) : job_(std::move(job)) {}

// Cancel only takes a batch off the client's queue; it never waits.
Transfer::~Transfer() {
  if (!job_) return;
  job_->cancelled.store(true, std::memory_order_release);
  std::vector<AsyncId> ids;
  {
    MutexLock lock(job_->mu);
    ids = job_->submitted;
  }
  MutexLock lock(job_->hub->mu);
  if (job_->hub->queue == nullptr) return;
  for (AsyncId id : ids) job_->hub->queue->Cancel(id);
}

size_t Transfer::size() const { return job_->keys.size(); }
const std::string& Transfer::key(size_t i) const { return job_->keys[i]; }

// The engine's batches on the client's AsyncQueue: submitted by Post,
// settled into their transfers by Drain (from Poll and Stats, on the
// caller's thread).
class TransferEngine::Batches {
 public:
  explicit Batches(std::unique_ptr<AsyncQueue> queue) : queue_(std::move(queue)) {}

  // Cancels what has not started, waits for what runs (the client's
  // deadline at most) and settles every batch, so each transfer ends.
  ~Batches() {
    std::vector<AsyncId> ids;
    {
      MutexLock lock(mu_);
      for (const auto& [id, batch] : inflight_) ids.push_back(id);
    }
    for (AsyncId id : ids) queue_->Cancel(id);
    while (queue_->outstanding() > 0) Drain(/*wait_ms=*/100);
  }

  AsyncQueue& queue() { return *queue_; }

  // Submits the job's batches, counted in batches_left before any can end.
  void Push(const std::shared_ptr<Transfer::Job>& job, size_t batch_size) {
    const size_t n = job->keys.size();
    MutexLock lock(mu_);  // Drain sees each batch recorded
    MutexLock job_lock(job->mu);
    job->submitted.clear();
    job->batches_left.store((n + batch_size - 1) / batch_size, std::memory_order_release);
    for (size_t begin = 0; begin < n; begin += batch_size) {
      auto b = std::make_unique<Batch>();
      b->job = job;
      b->begin = begin;
      b->end = std::min(n, begin + batch_size);
      b->keys.assign(job->keys.begin() + static_cast<ptrdiff_t>(b->begin),
                     job->keys.begin() + static_cast<ptrdiff_t>(b->end));
      const std::span<const std::span<uint8_t>> buffers(job->buffers.data() + b->begin, b->end - b->begin);
      AsyncId id = 0;
      if (job->direction == Direction::kWrite) {
        b->values.assign(buffers.begin(), buffers.end());
        id = queue_->SubmitPut(b->keys, b->values);
      } else {
        id = queue_->SubmitGet(b->keys, buffers);
      }
      job->submitted.push_back(id);
      inflight_.emplace(id, std::move(b));
    }
  }

  // Settles the batches that completed, after waiting up to `wait_ms` for one.
  void Drain(int wait_ms = 0) {
    std::vector<AsyncCompletion> done;
    queue_->Wait(&done, SIZE_MAX, wait_ms);
    for (AsyncCompletion& c : done) {
      std::unique_ptr<Batch> b;
      {
        MutexLock lock(mu_);
        auto node = inflight_.extract(c.id);
        if (node.empty()) continue;
        b = std::move(node.mapped());
      }
      Settle(*b, c);
      if (b->job->BatchEnded()) failed.fetch_add(1, std::memory_order_relaxed);
    }
  }

  EngineStats Stats() const {
    EngineStats s;
    s.transfers_posted = posted.load(std::memory_order_relaxed);
    s.transfers_failed = failed.load(std::memory_order_relaxed);
    s.batches = batches.load(std::memory_order_relaxed);
    s.bytes_written = bytes_written.load(std::memory_order_relaxed);
    s.bytes_read = bytes_read.load(std::memory_order_relaxed);
    return s;
  }

  std::atomic<uint64_t> posted{0};
  std::atomic<uint64_t> failed{0};
  std::atomic<uint64_t> batches{0};
  std::atomic<uint64_t> bytes_written{0};
  std::atomic<uint64_t> bytes_read{0};

 private:
  // One submitted batch: descriptors [begin, end) of its job, and the views
  // the client reads until the batch completes.
  struct Batch {
    std::shared_ptr<Transfer::Job> job;
    size_t begin = 0;
    size_t end = 0;
    std::vector<std::string_view> keys;
    std::vector<std::span<const uint8_t>> values;  // writes
  };

  void Settle(const Batch& b, const AsyncCompletion& c) {
    Transfer::Job& job = *b.job;
    if (c.cancelled) {
      job.Fail(b.begin, job.cancelled.load(std::memory_order_acquire)
                            ? FailedPrecondition("cancelled: the transfer was released before this batch was sent")
                            : Unavailable("the MEMKV backend was destroyed before this batch was sent"));
      return;
    }
    batches.fetch_add(1, std::memory_order_relaxed);
    uint64_t bytes = 0;
    for (size_t i = b.begin; i < b.end; ++i) {
      const size_t j = i - b.begin;
      const Status& s = j < c.statuses.size() ? c.statuses[j] : Status(Internal("no status returned"));
      if (!s.ok()) {
        job.Fail(i, Status(s.code(), Describe(i, job.keys[i]) + ": " + s.message()));
      } else if (job.direction == Direction::kRead && c.sizes[j] != job.buffers[i].size()) {
        job.Fail(i, InvalidArgument(Describe(i, job.keys[i]) + ": the stored value is " + std::to_string(c.sizes[j]) +
                                    " bytes and the descriptor reads " + std::to_string(job.buffers[i].size()) +
                                    "; a read must ask for the whole value written at that offset"));
      } else {
        bytes += job.buffers[i].size();
      }
    }
    (job.direction == Direction::kWrite ? bytes_written : bytes_read).fetch_add(bytes, std::memory_order_relaxed);
  }

  std::unique_ptr<AsyncQueue> queue_;
  Mutex mu_;
  std::unordered_map<AsyncId, std::unique_ptr<Batch>> inflight_ MEMKV_GUARDED_BY(mu_);
};

namespace {

Status CheckSettings(const EngineSettings& settings) {
  if (settings.batch_size == 0 || settings.batch_size > kMaxBatchSize) {
    return InvalidArgument("batch_size " + std::to_string(settings.batch_size) + " is not in 1.." +
                           std::to_string(kMaxBatchSize));
  }
  if (settings.workers == 0 || settings.workers > kMaxWorkers) {
    return InvalidArgument("workers " + std::to_string(settings.workers) + " is not in 1.." +
                           std::to_string(kMaxWorkers));
  }
  return Status::Ok();
}

}  // namespace

// The engine's own client runs `workers` batches at once.
Result<std::unique_ptr<TransferEngine>> TransferEngine::Create(const EngineSettings& settings) {
  MEMKV_RETURN_IF_ERROR(CheckSettings(settings));
  ClientOptions options = settings.client;
  options.async_threads = settings.workers;
  MEMKV_ASSIGN_OR_RETURN(std::unique_ptr<Client> client, Client::Create(options));
  return Create(settings, std::move(client));
}

Result<std::unique_ptr<TransferEngine>> TransferEngine::Create(const EngineSettings& settings,
                                                               std::unique_ptr<Client> client) {
  if (client == nullptr) return InvalidArgument("TransferEngine::Create: no client");
  MEMKV_RETURN_IF_ERROR(CheckSettings(settings));
  MEMKV_ASSIGN_OR_RETURN(std::unique_ptr<AsyncQueue> queue, client->NewAsyncQueue());
  return std::unique_ptr<TransferEngine>(new TransferEngine(settings, std::move(client), std::move(queue)));
}

TransferEngine::TransferEngine(const EngineSettings& settings, std::unique_ptr<Client> client,
                               std::unique_ptr<AsyncQueue> queue)
    : settings_(settings),
      client_(std::move(client)),
      hub_(std::make_shared<CancelHub>()),
      batches_(std::make_unique<Batches>(std::move(queue))) {
  hub_->queue = &batches_->queue();
}

TransferEngine::~TransferEngine() {
  {
    MutexLock lock(hub_->mu);
    hub_->queue = nullptr;  // released Transfers no longer reach the queue
  }
  batches_.reset();  // before the client: settles every batch
}

std::string TransferEngine::ObjectKey(uint64_t dev_id, std::string_view meta_info) const {
  return settings_.key_prefix + (meta_info.empty() ? std::to_string(dev_id) : std::string(meta_info));
}

std::string TransferEngine::ValueKey(const std::string& object_key, uint64_t offset) {
  return offset == 0 ? object_key : object_key + "@" + std::to_string(offset);
}

Result<std::string> TransferEngine::RegisterObject(uint64_t dev_id, std::string_view meta_info) {
  std::string key = ObjectKey(dev_id, meta_info);
  // Room for "@" and the longest offset.
  if (key.size() + 21 > kMaxKeyBytes) {
    return InvalidArgument("object " + std::to_string(dev_id) + ": its key is " + std::to_string(key.size()) +
                           " bytes; MemKV keys are at most " + std::to_string(kMaxKeyBytes) +
                           " bytes, and an object key may take " + std::to_string(kMaxKeyBytes - 21) +
                           " (key_prefix plus metaInfo)");
  }
  MutexLock lock(objects_mu_);
  objects_[dev_id] = key;
  return key;
}

Status TransferEngine::UnregisterObject(uint64_t dev_id) {
  MutexLock lock(objects_mu_);
  if (objects_.erase(dev_id) == 0) return NotFound("object " + std::to_string(dev_id) + " is not registered");
  return Status::Ok();
}

Status TransferEngine::RegisterBuffer(std::span<uint8_t> region) { return client_->RegisterMemory(region); }

Status TransferEngine::UnregisterBuffer(void* base) { return client_->UnregisterMemory(base); }

Result<std::unique_ptr<Transfer>> TransferEngine::Prepare(Direction direction, std::span<const LocalSpan> local,
                                                          std::span<const ObjectSpan> remote) const {
  if (local.size() != remote.size()) {
    return InvalidArgument("the request has " + std::to_string(local.size()) + " local descriptors and " +
                           std::to_string(remote.size()) + " object descriptors; they must pair up one to one");
  }
  auto job = std::make_shared<Transfer::Job>();
  job->direction = direction;
  job->hub = hub_;
  job->keys.reserve(remote.size());
  job->buffers.reserve(local.size());
  {
    MutexLock lock(objects_mu_);
    for (size_t i = 0; i < remote.size(); ++i) {
      if (local[i].len != remote[i].len) {
        return InvalidArgument("descriptor " + std::to_string(i) + ": the local buffer is " +
                               std::to_string(local[i].len) + " bytes and the object range " +
                               std::to_string(remote[i].len) + "; they must be equal");
      }
      if (local[i].addr == 0 && local[i].len != 0) {
        return InvalidArgument("descriptor " + std::to_string(i) + ": the local buffer's address is null");
      }
      auto it = objects_.find(remote[i].dev_id);
      if (it == objects_.end()) {
        return InvalidArgument("descriptor " + std::to_string(i) + ": object " + std::to_string(remote[i].dev_id) +
                               " is not registered with the MEMKV backend (registerMem with OBJ_SEG first)");
      }
      job->keys.push_back(ValueKey(it->second, remote[i].offset));
      job->buffers.emplace_back(reinterpret_cast<uint8_t*>(local[i].addr), local[i].len);
      job->bytes += local[i].len;
    }
  }
  if (direction == Direction::kWrite) {
    std::unordered_map<std::string_view, size_t> seen;
    for (size_t i = 0; i < job->keys.size(); ++i) {
      auto [it, fresh] = seen.emplace(job->keys[i], i);
      if (!fresh) {
        return InvalidArgument("descriptors " + std::to_string(it->second) + " and " + std::to_string(i) +
                               " both write key '" + job->keys[i] +
                               "' (the same object and offset); one write request writes each value once");
      }
    }
  }
  return std::unique_ptr<Transfer>(new Transfer(std::move(job)));
}

Status TransferEngine::Post(Transfer& transfer) {
  Transfer::Job& job = *transfer.job_;
  if (job.state.load(std::memory_order_acquire) == TransferState::kInProgress) {
    return FailedPrecondition("the transfer is still in progress; poll it until it ends before posting it again");
  }
  {
    MutexLock lock(job.mu);
    job.error = Status::Ok();
    job.error_index = SIZE_MAX;
  }
  batches_->posted.fetch_add(1, std::memory_order_relaxed);
  if (job.keys.empty()) {
    job.state.store(TransferState::kDone, std::memory_order_release);
    return Status::Ok();
  }
  job.state.store(TransferState::kInProgress, std::memory_order_release);
  batches_->Push(transfer.job_, settings_.batch_size);
  return Status::Ok();
}

TransferStatus TransferEngine::Poll(const Transfer& transfer) const {
  batches_->Drain();
  Transfer::Job& job = *transfer.job_;
  TransferStatus out;
  out.state = job.state.load(std::memory_order_acquire);
  if (out.state == TransferState::kFailed) {
    MutexLock lock(job.mu);
    out.error = job.error;
  }
  return out;
}

Result<std::vector<bool>> TransferEngine::Exists(std::span<const std::string> keys) const {
  std::vector<std::string_view> views(keys.begin(), keys.end());
  BatchResult result = client_->BatchExists(views);
  std::vector<bool> present(keys.size(), false);
  for (size_t i = 0; i < keys.size(); ++i) {
    const Status& s = i < result.statuses.size() ? result.statuses[i] : Status(Internal("no status returned"));
    if (s.ok()) {
      present[i] = true;
    } else if (s.code() != StatusCode::kNotFound) {
      return Status(s.code(), "key '" + keys[i] + "': " + s.message());
    }
  }
  return present;
}

EngineStats TransferEngine::Stats() const {
  batches_->Drain();
  return batches_->Stats();
}

}  // namespace memkv::nixl
