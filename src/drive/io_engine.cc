// The pread/pwrite engine and CreateIoEngine's choice between it and io_uring.
#include "drive/io_engine.h"

#include <unistd.h>

#include <cerrno>
#include <string>
#include <utility>

#include "base/log.h"
#include "drive/drive_file.h"

namespace memkv::drive {

// Defined in uring_engine.cc: Unavailable carrying io_uring_queue_init's errno.
Result<std::unique_ptr<IoEngine>> CreateUringEngine(const IoEngineOptions& options);

namespace {

class SyncIoEngine final : public IoEngine {
 public:
  SyncIoEngine(std::vector<int> fds, std::vector<int> buffered_fds)
      : fds_(std::move(fds)), buffered_fds_(std::move(buffered_fds)) {}
  std::string_view name() const override { return "pread"; }
  void Run(std::span<IoOp> ops) override {
    for (IoOp& op : ops) {
      const int fd = DescriptorFor(op, fds_, buffered_fds_);
      if (fd < 0) {
        op.result = -EBADF;
        continue;
      }
      RunOpSync(fd, op);
    }
  }

 private:
  const std::vector<int> fds_;
  const std::vector<int> buffered_fds_;
};

}  // namespace

void RunOpSync(int fd, IoOp& op) {
  if (op.kind == IoKind::kSync) {
    op.result = ::fdatasync(fd) == 0 ? 0 : -errno;
    return;
  }
  uint32_t done = 0;
  while (done < op.length) {
    ssize_t n = op.kind == IoKind::kRead
                    ? ::pread(fd, op.buf + done, op.length - done, off_t(op.offset + done))
                    : ::pwrite(fd, op.buf + done, op.length - done, off_t(op.offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      op.result = -errno;
      return;
    }
    if (n == 0) break;  // end of file: a short transfer, reported as such
    done += uint32_t(n);
  }
  op.result = int32_t(done);
}

int DescriptorFor(const IoOp& op, std::span<const int> fds, std::span<const int> buffered_fds) {
  if (op.drive >= fds.size() || fds[op.drive] < 0) return -1;
  if (op.buffered && op.kind == IoKind::kWrite && op.drive < buffered_fds.size() && buffered_fds[op.drive] >= 0) {
    return buffered_fds[op.drive];
  }
  return fds[op.drive];
}

std::unique_ptr<IoEngine> CreateSyncIoEngine(std::vector<int> fds, std::vector<int> buffered_fds) {
  return std::make_unique<SyncIoEngine>(std::move(fds), std::move(buffered_fds));
}

Result<std::unique_ptr<IoEngine>> CreateIoEngine(const IoEngineOptions& options) {
  if (options.queue_depth == 0) return InvalidArgument("io queue depth must be at least 1");
  if (options.kind == IoEngineKind::kSync) return CreateSyncIoEngine(options.fds, options.buffered_fds);
  auto uring = CreateUringEngine(options);
  if (uring.ok() || options.kind == IoEngineKind::kUring) return uring;
  LOG_WARN_C("drive") << "io_uring unavailable (" << uring.status().message()
           << "); drive I/O falls back to pread/pwrite, one operation at a time";
  return CreateSyncIoEngine(options.fds, options.buffered_fds);
}

}  // namespace memkv::drive
