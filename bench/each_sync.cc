#include "bench/each_sync.h"

#include <fcntl.h>
#include <liburing.h>
#include <sys/uio.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

#include "base/errno_text.h"
#include "base/unique_fd.h"
#include "base/units.h"
#include "bench/measure.h"
#include "drive/aligned_buffer.h"

namespace memkv::bench {
namespace {

using Clock = std::chrono::steady_clock;

constexpr uint64_t kRecordBytes = 4 * kKiB;
constexpr uint64_t kMaxRecordAreaBytes = 64 * kMiB;

// What a completion belongs to: the slot (a put in flight) and the part.
enum class Part : uint64_t { kValue = 0, kRecord = 1, kSync = 2 };
uint64_t Tag(uint32_t slot, Part part) { return uint64_t{slot} << 2 | uint64_t(part); }
uint32_t SlotOf(uint64_t tag) { return uint32_t(tag >> 2); }
Part PartOf(uint64_t tag) { return Part(tag & 3); }

class Ring {
 public:
  Ring() = default;
  ~Ring() {
    if (ready_) io_uring_queue_exit(&ring_);
  }
  Ring(const Ring&) = delete;
  Ring& operator=(const Ring&) = delete;
  int Init(unsigned entries) {
    const int rc = io_uring_queue_init(entries, &ring_, 0);
    ready_ = rc == 0;
    return rc;
  }
  io_uring* get() { return &ring_; }

 private:
  io_uring ring_{};
  bool ready_ = false;
};

// One put in flight.
struct Slot {
  int parts_left = 0;  // writes not yet completed
  Clock::time_point started;
};

}  // namespace

Result<FioResult> RunEachSync(const EachSyncJob& job) {
  const uint32_t qd = std::max<uint32_t>(job.queue_depth, 1);
  // The records take the file's last quarter, at most 64 MiB.
  const uint64_t record_area = std::min(kMaxRecordAreaBytes, job.file_size_bytes / 4 / kRecordBytes * kRecordBytes);
  if (job.value_bytes == 0 || job.value_bytes % (4 * kKiB) != 0 || record_area < qd * kRecordBytes ||
      job.file_size_bytes - record_area < job.value_bytes * qd) {
    return InvalidArgument("each-sync: " + FormatSize(job.file_size_bytes) + " cannot hold " + std::to_string(qd) +
                           " values of " + FormatSize(job.value_bytes) + " beside " + FormatSize(record_area) +
                           " of records");
  }
  const uint64_t value_area = (job.file_size_bytes - record_area) / job.value_bytes * job.value_bytes;
  const uint64_t record_base = job.file_size_bytes - record_area;
  const uint64_t record_blocks = record_area / kRecordBytes;

  UniqueFd fd(::open(job.path.c_str(), O_RDWR | O_DIRECT | O_CLOEXEC));
  if (!fd.valid()) return IoError("each-sync: open " + job.path + ": " + ErrnoName(errno));
  Ring ring;
  if (int rc = ring.Init(4 * qd + 4); rc < 0) return IoError("each-sync: io_uring_queue_init: " + ErrnoName(-rc));

  // Buffers 0..qd-1 hold values, qd..2qd-1 records.
  std::vector<drive::AlignedBuffer> buffers;
  std::vector<iovec> iov;
  for (uint32_t i = 0; i < 2 * qd; ++i) {
    MEMKV_ASSIGN_OR_RETURN(drive::AlignedBuffer b,
                           drive::AlignedBuffer::Allocate(i < qd ? job.value_bytes : kRecordBytes));
    std::memset(b.data(), int(0x5a + i), b.size());
    iov.push_back(iovec{b.data(), b.size()});
    buffers.push_back(std::move(b));
  }
  const bool fixed_buffers = io_uring_register_buffers(ring.get(), iov.data(), unsigned(iov.size())) == 0;
  const int file_fd = fd.get();
  const bool fixed_file = io_uring_register_files(ring.get(), &file_fd, 1) == 0;

  auto sqe_for = [&](uint32_t slot, Part part) {
    io_uring_sqe* sqe = io_uring_get_sqe(ring.get());  // the ring holds every part of every slot
    const int target = fixed_file ? 0 : file_fd;
    if (part == Part::kSync) {
      io_uring_prep_fsync(sqe, target, IORING_FSYNC_DATASYNC);
    } else {
      const uint32_t index = part == Part::kValue ? slot : qd + slot;
      if (fixed_buffers) {
        io_uring_prep_write_fixed(sqe, target, iov[index].iov_base, unsigned(iov[index].iov_len), 0, int(index));
      } else {
        io_uring_prep_write(sqe, target, iov[index].iov_base, unsigned(iov[index].iov_len), 0);
      }
    }
    if (fixed_file) sqe->flags |= IOSQE_FIXED_FILE;
    io_uring_sqe_set_data64(sqe, Tag(slot, part));
    return sqe;
  };

  std::vector<Slot> slots(qd);
  uint64_t next_value = 0;
  uint64_t next_record = 0;
  auto start_put = [&](uint32_t s) {
    io_uring_sqe* value = sqe_for(s, Part::kValue);
    value->off = next_value;
    next_value = next_value + job.value_bytes >= value_area ? 0 : next_value + job.value_bytes;
    slots[s].parts_left = 1;
    if (job.record) {
      io_uring_sqe* record = sqe_for(s, Part::kRecord);
      record->off = record_base + (next_record++ % record_blocks) * kRecordBytes;
      slots[s].parts_left = 2;
    }
    slots[s].started = Clock::now();
  };

  const Clock::time_point start = Clock::now();
  const Clock::time_point deadline = start + std::chrono::duration_cast<Clock::duration>(
                                                 std::chrono::duration<double>(job.seconds));
  for (uint32_t s = 0; s < qd; ++s) start_put(s);
  uint32_t in_flight = qd;
  uint64_t ops = 0;
  std::vector<int64_t> latencies_ns;
  Status failure;
  while (in_flight > 0) {
    if (int rc = io_uring_submit_and_wait(ring.get(), 1); rc < 0 && rc != -EINTR) {
      return IoError("each-sync: io_uring_submit_and_wait: " + ErrnoName(-rc));
    }
    io_uring_cqe* cqe = nullptr;
    unsigned head = 0;
    unsigned seen = 0;
    io_uring_for_each_cqe(ring.get(), head, cqe) {
      ++seen;
      const uint32_t s = SlotOf(cqe->user_data);
      const Part part = PartOf(cqe->user_data);
      const int64_t expected = part == Part::kSync ? 0
                               : part == Part::kValue ? int64_t(job.value_bytes)
                                                      : int64_t(kRecordBytes);
      if (cqe->res != expected && failure.ok()) {
        static constexpr const char* kNames[] = {"value write", "record write", "fdatasync"};
        failure = IoError(std::string("each-sync: ") + kNames[int(part)] + " of " + job.path + ": " +
                          (cqe->res < 0 ? ErrnoName(-cqe->res) : "short transfer of " + std::to_string(cqe->res)));
      }
      if (part != Part::kSync) {
        if (--slots[s].parts_left == 0) sqe_for(s, Part::kSync);
        continue;
      }
      const Clock::time_point now = Clock::now();
      if (now < deadline && failure.ok()) {
        ++ops;
        latencies_ns.push_back(std::chrono::duration_cast<std::chrono::nanoseconds>(now - slots[s].started).count());
        start_put(s);
      } else {
        --in_flight;
      }
    }
    io_uring_cq_advance(ring.get(), seen);
  }
  if (!failure.ok()) return failure;

  const double seconds = std::chrono::duration<double>(deadline - start).count();
  FioResult r;
  r.io_bytes = ops * job.value_bytes;
  r.runtime_s = seconds;
  r.bytes_per_s = seconds > 0 ? double(r.io_bytes) / seconds : 0;
  r.iops = seconds > 0 ? double(ops) / seconds : 0;
  std::sort(latencies_ns.begin(), latencies_ns.end());
  if (!latencies_ns.empty()) {
    r.clat_p50_us = PercentileUs(latencies_ns, 0.50);
    r.clat_p99_us = PercentileUs(latencies_ns, 0.99);
    r.clat_p999_us = PercentileUs(latencies_ns, 0.999);
  }
  r.command = std::string("each-sync: io_uring, 1 thread, ") + std::to_string(qd) + " puts in flight, each " +
              FormatSize(job.value_bytes) + " written" + (job.record ? " beside a 4 KiB record block of its own" : "") +
              ", then its own fdatasync; O_DIRECT" + (fixed_buffers ? ", registered buffers" : "") +
              (fixed_file ? ", registered file" : "");
  return r;
}

}  // namespace memkv::bench
