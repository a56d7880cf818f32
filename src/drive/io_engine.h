// IoEngine: the seam between the extent store and the kernel's I/O calls.
//
// A DriveFile (drive_file.h) says what a drive is; an IoEngine moves its
// bytes. The unit of work is a batch: Run(ops) issues every op of the batch
// before it waits for any, so the extents of a striped value are read from all
// drives at once, and several extents on one drive are in flight together (up
// to the queue depth). That is why the seam is a batch over all drives and not
// one call per file: per-file blocking calls would need a thread per drive to
// overlap.
//
// Implementations:
//   io_uring  (uring_engine.cc): a small pool of rings, one per concurrent
//             Run; drive fds and the store's staging buffers are registered
//             with each ring (READ_FIXED / WRITE_FIXED skip per-I/O page
//             pinning); fdatasync is IORING_OP_FSYNC(DATASYNC), so syncs of
//             several drives also overlap.
//   pread     (this file): pread/pwrite/fdatasync one op after another. Used
//             when io_uring cannot be set up (old kernel, seccomp: ENOSYS or
//             EPERM from io_uring_setup); CreateIoEngine logs one warning.
//   faulty    (fault_engine.h): a decorator for tests.
//
// Ops address drives by index into the fd table given at creation. Buffers,
// offsets and lengths must suit O_DIRECT (multiples of the drive's logical
// block size, page-aligned memory). Run never fails as a whole: each op gets
// its own result (bytes moved, or -errno).
//
// Thread-safety: Run may be called from many threads at once.
#ifndef MEMKV_DRIVE_IO_ENGINE_H_
#define MEMKV_DRIVE_IO_ENGINE_H_

#include <sys/uio.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "memkv/status.h"

namespace memkv::drive {

enum class IoKind : uint8_t { kRead, kWrite, kSync };

struct IoOp {
  IoKind kind = IoKind::kRead;
  uint32_t drive = 0;        // index into the engine's fd table
  uint64_t offset = 0;
  uint8_t* buf = nullptr;
  uint32_t length = 0;
  int32_t fixed_buffer = -1;  // index of the registered buffer that holds buf, or -1
  int32_t result = 0;         // out: bytes moved (reads, writes), 0 (sync), or -errno
  // A write that may go through the page cache: when Run returns it is in the
  // kernel (it survives the process being killed, not a power cut), and it is
  // on the drive after the next kSync of its drive (fdatasync flushes the
  // file's dirty pages, whatever descriptor wrote them). storage.sync:
  // interval writes journal appends and small extents this way, where an
  // O_DIRECT write would wait for the device. Runs as an ordinary write where
  // the engine has no buffered descriptor for the drive.
  bool buffered = false;

  // A read or write that moved fewer bytes than asked is a failure too.
  bool ok() const { return kind == IoKind::kSync ? result == 0 : result == int32_t(length); }
  // The errno of a failed op (EIO for a short transfer).
  int error() const { return result < 0 ? -result : 5 /* EIO */; }
};

class IoEngine {
 public:
  virtual ~IoEngine() = default;
  // "io_uring", "pread", or a decorator's name around its inner engine's.
  virtual std::string_view name() const = 0;
  virtual void Run(std::span<IoOp> ops) = 0;
  // Run, calling done(i) on this thread as soon as ops[i] has its result
  // (in completion order), while the other ops may still be in flight: a
  // reader checks and copies the first pieces of a value while the drive
  // still reads the rest. This default calls done in order after Run.
  virtual void RunEach(std::span<IoOp> ops, const std::function<void(size_t)>& done) {
    Run(ops);
    for (size_t i = 0; i < ops.size(); ++i) done(i);
  }
  // Run, calling prepare(i) on this thread, in order, just before ops[i] is
  // submitted: the ops before it may already be in flight while prepare(i)
  // fills its buffer (a writer encodes the next segment of a value while the
  // drive writes the ones before). This default prepares all, then Runs.
  virtual void RunPrepared(std::span<IoOp> ops, const std::function<void(size_t)>& prepare) {
    for (size_t i = 0; i < ops.size(); ++i) prepare(i);
    Run(ops);
  }
};

enum class IoEngineKind : uint8_t {
  kAuto,   // io_uring, else pread with one warning
  kUring,  // io_uring or an error
  kSync,   // pread/pwrite
};

struct IoEngineOptions {
  IoEngineKind kind = IoEngineKind::kAuto;
  uint32_t queue_depth = 64;
  std::vector<int> fds;                // drive index -> fd; -1 for a drive that is absent
  std::vector<int> buffered_fds;       // drive index -> a descriptor of the same file without
                                       // O_DIRECT, for buffered writes; empty or -1: none
  std::vector<iovec> fixed_buffers;    // registered with every ring when the kernel allows
};

// Unavailable (naming the errno) when kind is kUring and io_uring cannot be
// set up; InvalidArgument on a queue depth of 0.
Result<std::unique_ptr<IoEngine>> CreateIoEngine(const IoEngineOptions& options);

// The pread/pwrite engine, directly (tests; the fallback).
std::unique_ptr<IoEngine> CreateSyncIoEngine(std::vector<int> fds, std::vector<int> buffered_fds = {});

// The descriptor an op runs on: the buffered one for a buffered write when
// there is one, else the drive's; -1 for a drive that is absent.
int DescriptorFor(const IoOp& op, std::span<const int> fds, std::span<const int> buffered_fds);

// Runs one op on `fd` with pread/pwrite/fdatasync (retrying EINTR and short
// transfers) and stores its result. The building block of the pread engine and
// the io_uring engine's fallback.
void RunOpSync(int fd, IoOp& op);

}  // namespace memkv::drive

#endif  // MEMKV_DRIVE_IO_ENGINE_H_
