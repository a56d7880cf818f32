// The io_uring engine (io_engine.h).
//
// A ring is not thread-safe, and the store calls Run from many threads, so
// the engine keeps a pool of rings: Run takes an idle ring (creating one when
// none is idle), drives its batch on it to completion and puts it back. The
// pool grows to the number of threads that ever ran I/O at once (the server's
// worker count), each ring a few pages plus its registrations.
//
// Every ring gets the drive fds (IOSQE_FIXED_FILE) and the store's staging
// buffers (READ_FIXED / WRITE_FIXED) registered when the kernel allows;
// without them the same ops run unregistered. A ring that cannot be created
// later (memlock limits) makes that one Run fall back to pread, with a warning
// the first time.
#include <liburing.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <string>
#include <vector>

#include "base/errno_text.h"
#include "base/log.h"
#include "base/mutex.h"
#include "drive/drive_file.h"
#include "drive/io_engine.h"

namespace memkv::drive {
namespace {

struct Ring {
  io_uring ring{};
  bool initialized = false;  // io_uring_queue_init succeeded
  bool fixed_files = false;
  bool fixed_buffers = false;

  Ring() = default;
  Ring(const Ring&) = delete;
  Ring& operator=(const Ring&) = delete;
  ~Ring() {
    if (!initialized) return;
    // The kernel tears a ring down asynchronously, and registered files keep
    // their descriptions (and the drive's flock) alive until it has: drop the
    // registrations first, so a store closed here can be reopened at once.
    if (fixed_files) io_uring_unregister_files(&ring);
    if (fixed_buffers) io_uring_unregister_buffers(&ring);
    io_uring_queue_exit(&ring);
  }
};

// io_uring_enter failing with anything else means a kernel or program bug;
// ops may be in flight into caller memory, so there is no safe way back.
bool RetryableEnterError(int rc) { return rc == -EINTR || rc == -EAGAIN || rc == -EBUSY; }

class UringEngine final : public IoEngine {
 public:
  explicit UringEngine(const IoEngineOptions& options) : options_(options) {}

  std::string_view name() const override { return "io_uring"; }

  // The first ring, made at creation so that a kernel without io_uring is
  // found there and not on the first I/O.
  Status Init() {
    int err = 0;
    auto ring = NewRing(&err);
    if (ring == nullptr) {
      return Unavailable("io_uring_queue_init(" + std::to_string(options_.queue_depth) + "): " + ErrnoName(err));
    }
    if (!ring->fixed_buffers && !options_.fixed_buffers.empty()) {
      LOG_INFO_C("drive") << "io_uring: buffer registration refused; staging buffers are used unregistered";
    }
    MutexLock lock(mu_);
    idle_.push_back(std::move(ring));
    return Status::Ok();
  }

  void Run(std::span<IoOp> ops) override { RunEach(ops, {}); }

  void RunEach(std::span<IoOp> ops, const std::function<void(size_t)>& done) override {
    if (ops.empty()) return;
    // A lone fdatasync gains nothing from the ring: io_uring hands it to a
    // worker thread (it blocks), and waking that thread and then this one
    // costs two context switches a commit.
    const bool lone_sync = ops.size() == 1 && ops[0].kind == IoKind::kSync;
    std::unique_ptr<Ring> ring = lone_sync ? nullptr : Acquire();
    if (ring == nullptr) {
      for (size_t i = 0; i < ops.size(); ++i) {
        RunFallback(ops[i]);
        if (done) done(i);
      }
      return;
    }
    RunOnRing(*ring, ops, done, {});
    Release(std::move(ring));
  }

  void RunPrepared(std::span<IoOp> ops, const std::function<void(size_t)>& prepare) override {
    // Ops that do not go through the ring (a buffered write, an absent
    // drive) run as the default does: all prepared first.
    const bool all_on_ring = std::all_of(ops.begin(), ops.end(), [&](const IoOp& op) {
      const int fd = DescriptorFor(op, options_.fds, options_.buffered_fds);
      return fd >= 0 && fd == options_.fds[op.drive];
    });
    std::unique_ptr<Ring> ring = ops.size() > 1 && all_on_ring ? Acquire() : nullptr;
    if (ring == nullptr) {
      IoEngine::RunPrepared(ops, prepare);
      return;
    }
    RunOnRing(*ring, ops, {}, prepare);
    Release(std::move(ring));
  }

 private:
  std::unique_ptr<Ring> NewRing(int* err) {
    auto r = std::make_unique<Ring>();
    int rc = io_uring_queue_init(options_.queue_depth, &r->ring, 0);
    if (rc < 0) {
      *err = -rc;
      return nullptr;
    }
    r->initialized = true;
    if (!options_.fds.empty()) {
      r->fixed_files = io_uring_register_files(&r->ring, options_.fds.data(), unsigned(options_.fds.size())) == 0;
    }
    if (!options_.fixed_buffers.empty()) {
      r->fixed_buffers = io_uring_register_buffers(&r->ring, options_.fixed_buffers.data(),
                                                   unsigned(options_.fixed_buffers.size())) == 0;
    }
    return r;
  }

  std::unique_ptr<Ring> Acquire() {
    {
      MutexLock lock(mu_);
      if (!idle_.empty()) {
        auto r = std::move(idle_.back());
        idle_.pop_back();
        return r;
      }
    }
    int err = 0;
    auto r = NewRing(&err);
    if (r == nullptr && !warned_no_ring_.exchange(true)) {
      LOG_WARN_C("drive") << "io_uring: another ring could not be created (" << ErrnoName(err)
               << "); I/O beyond the existing rings runs with pread/pwrite";
    }
    return r;
  }

  void Release(std::unique_ptr<Ring> r) {
    MutexLock lock(mu_);
    idle_.push_back(std::move(r));
  }

  void RunFallback(IoOp& op) {
    const int fd = DescriptorFor(op, options_.fds, options_.buffered_fds);
    if (fd < 0) {
      op.result = -EBADF;
      return;
    }
    RunOpSync(fd, op);
  }

  // Fills one SQE for what remains of ops[i] (done[i] bytes already moved).
  void Prep(Ring& r, io_uring_sqe* sqe, const IoOp& op, uint32_t done) {
    int fd = options_.fds[op.drive];
    if (r.fixed_files) fd = int(op.drive);
    if (op.kind == IoKind::kSync) {
      io_uring_prep_fsync(sqe, fd, IORING_FSYNC_DATASYNC);
    } else {
      uint8_t* p = op.buf + done;
      unsigned len = op.length - done;
      uint64_t off = op.offset + done;
      bool fixed = r.fixed_buffers && op.fixed_buffer >= 0 &&
                   size_t(op.fixed_buffer) < options_.fixed_buffers.size();
      if (op.kind == IoKind::kRead) {
        if (fixed) io_uring_prep_read_fixed(sqe, fd, p, len, off, op.fixed_buffer);
        else io_uring_prep_read(sqe, fd, p, len, off);
      } else {
        if (fixed) io_uring_prep_write_fixed(sqe, fd, p, len, off, op.fixed_buffer);
        else io_uring_prep_write(sqe, fd, p, len, off);
      }
    }
    if (r.fixed_files) sqe->flags |= IOSQE_FIXED_FILE;
  }

  // `prepare`, when set: called for each op, in order, just before its
  // first submission, each op submitted on its own (the caller checked
  // that every op goes through the ring).
  void RunOnRing(Ring& r, std::span<IoOp> ops, const std::function<void(size_t)>& done_fn,
                 const std::function<void(size_t)>& prepare) {
    const size_t n = ops.size();
    std::vector<uint32_t> done(n, 0);
    std::vector<bool> prepared(prepare ? n : 0, false);
    std::vector<size_t> pending;  // op indices to (re)submit, taken from the back
    pending.reserve(n);
    auto finished = [&](size_t i) {
      if (done_fn) done_fn(i);
    };
    for (size_t i = n; i-- > 0;) {
      IoOp& op = ops[i];
      const int fd = DescriptorFor(op, options_.fds, options_.buffered_fds);
      if (fd < 0) {
        op.result = -EBADF;
      } else if (fd != options_.fds[op.drive]) {
        // A buffered write is a copy into the page cache: pwrite here costs
        // less than a trip through the ring.
        RunOpSync(fd, op);
      } else {
        op.result = 0;
        pending.push_back(i);
        continue;
      }
      finished(i);
    }
    size_t inflight = 0;
    constexpr int kMaxRetries = 1000;  // EAGAIN/EINTR completions of one op
    std::vector<int> retries(n, 0);
    std::vector<size_t> complete;  // ops finished by one pass over the completion queue
    while (!pending.empty() || inflight > 0) {
      while (!pending.empty() && inflight < options_.queue_depth) {
        io_uring_sqe* sqe = io_uring_get_sqe(&r.ring);
        if (sqe == nullptr) break;  // submission queue full: submit, then refill
        size_t i = pending.back();
        pending.pop_back();
        const bool first = prepare && !prepared[i];
        if (first) {
          prepare(i);
          prepared[i] = true;
        }
        Prep(r, sqe, ops[i], done[i]);
        io_uring_sqe_set_data64(sqe, i);
        ++inflight;
        // In flight while the next op is prepared.
        if (first && !pending.empty()) io_uring_submit(&r.ring);
      }
      int rc = io_uring_submit_and_wait(&r.ring, 1);
      if (rc < 0 && !RetryableEnterError(rc)) {
        LOG_ERROR_C("drive") << "io_uring_enter: " << ErrnoName(-rc) << "; aborting: I/O may be in flight into freed memory";
        std::abort();
      }
      unsigned head = 0;
      unsigned seen = 0;
      io_uring_cqe* cqe = nullptr;
      io_uring_for_each_cqe(&r.ring, head, cqe) {
        ++seen;
        --inflight;
        size_t i = size_t(io_uring_cqe_get_data64(cqe));
        IoOp& op = ops[i];
        int res = cqe->res;
        if ((res == -EAGAIN || res == -EINTR) && ++retries[i] < kMaxRetries) {
          pending.push_back(i);
          continue;
        } else if (res < 0) {
          op.result = res;
        } else if (op.kind == IoKind::kSync) {
          op.result = 0;
        } else if (res == 0) {
          op.result = int32_t(done[i]);  // end of file: short
        } else {
          done[i] += uint32_t(res);
          if (done[i] < op.length) {
            pending.push_back(i);  // short transfer: the rest
            continue;
          }
          op.result = int32_t(done[i]);
        }
        complete.push_back(i);
      }
      io_uring_cq_advance(&r.ring, seen);
      // After the completion queue is released: the ring can take more
      // completions while the caller works on these.
      for (size_t i : complete) finished(i);
      complete.clear();
    }
  }

  const IoEngineOptions options_;
  Mutex mu_;
  std::vector<std::unique_ptr<Ring>> idle_ MEMKV_GUARDED_BY(mu_);
  std::atomic<bool> warned_no_ring_{false};
};

}  // namespace

Result<std::unique_ptr<IoEngine>> CreateUringEngine(const IoEngineOptions& options) {
  auto engine = std::make_unique<UringEngine>(options);
  MEMKV_RETURN_IF_ERROR(engine->Init());
  return std::unique_ptr<IoEngine>(std::move(engine));
}

}  // namespace memkv::drive
