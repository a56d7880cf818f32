// A scratch file of memkv-drive-bench: the store's drive (file mode), or the
// twin that fio writes to: same parent directory, same size, written the same
// way, so both sides see the same filesystem and device. (fio cannot write
// the store's own file: it would destroy the values that the store keeps
// between cells so that memkv and fio cells can alternate in time. fio's
// reads do use the store's file.)
//
// Create() writes the whole file once with O_DIRECT and pseudo-random bytes
// before anything is measured. Without that, ext4/xfs would hand out
// unwritten extents: reads of them return zeros without touching the device,
// and the first write of each pays an extent conversion. Neither side should
// measure that. Random bytes, not zeros, so a virtual disk that detects zero
// writes cannot turn them into holes either.
//
// Move-only; the destructor removes the file and its directory.
#ifndef MEMKV_BENCH_SCRATCH_FILE_H_
#define MEMKV_BENCH_SCRATCH_FILE_H_

#include <cstdint>
#include <string>

#include "memkv/status.h"

namespace memkv::bench {

class ScratchFile {
 public:
  // Makes "<parent>/memkv-drive-bench-XXXXXX/<name>" of `size_bytes` and
  // writes it. FailedPrecondition naming the directory and its filesystem
  // when O_DIRECT is refused there (tmpfs before Linux 6.6, some FUSE and
  // network filesystems): the page cache would make both sides meaningless.
  static Result<ScratchFile> Create(const std::string& parent, const std::string& name, uint64_t size_bytes);

  ScratchFile(ScratchFile&& other) noexcept;
  ScratchFile& operator=(ScratchFile&&) = delete;
  ScratchFile(const ScratchFile&) = delete;
  ~ScratchFile();

  const std::string& path() const { return path_; }
  uint64_t size_bytes() const { return size_bytes_; }
  // The untimed initial write, for the facts line (sequential, 4 MiB, qd 1).
  double write_mib_per_s() const { return write_mib_per_s_; }

 private:
  ScratchFile() = default;
  std::string dir_;
  std::string path_;
  uint64_t size_bytes_ = 0;
  double write_mib_per_s_ = 0;
};

// "ext4 on vda (virtio disk, write cache: write back, scheduler: mq-deadline)"
// as far as statfs and /sys tell; parts it cannot learn are left out.
std::string DescribeStorage(const std::string& path);

}  // namespace memkv::bench

#endif  // MEMKV_BENCH_SCRATCH_FILE_H_
