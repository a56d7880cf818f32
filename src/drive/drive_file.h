// DriveFile: one opened drive (a block device or a regular file) and what the
// drive layer needs to know about it.
//
// Open() uses O_DIRECT so extents bypass the page cache, learns the logical
// block size (ioctl BLKSSZGET on devices; statx STATX_DIOALIGN on files, 4096
// when the filesystem does not say) and the size (BLKGETSIZE64 / st_size), and
// takes an exclusive flock (plus an O_EXCL claim on devices) on a second
// descriptor so two stores never share a drive. A filesystem
// without O_DIRECT support (EINVAL) gets buffered I/O and one warning for files;
// a block device without it is an error.
//
// ReadAt/WriteAt/Sync are plain synchronous pread/pwrite/fdatasync for the
// rare structural I/O (format, superblocks); the data path goes through an
// IoEngine (io_engine.h) over fd(). Buffers, offsets and lengths passed to
// them must be multiples of logical_block_bytes() (AlignedBuffer memory).
//
// Move-only; owns the descriptor. Thread-safe for concurrent ReadAt/WriteAt.
#ifndef MEMKV_DRIVE_DRIVE_FILE_H_
#define MEMKV_DRIVE_DRIVE_FILE_H_

#include <cstdint>
#include <span>
#include <string>

#include "base/unique_fd.h"
#include "memkv/status.h"

namespace memkv::drive {

struct DriveFileOptions {
  bool writable = true;
  // Regular files only: create the file when missing and make it exactly this
  // size (fallocate; a filesystem without fallocate gets a sparse file and a
  // warning). 0: the file must exist and keeps its size.
  uint64_t create_bytes = 0;
  bool lock = true;  // flock(LOCK_EX | LOCK_NB); FailedPrecondition when held elsewhere
};

class DriveFile {
 public:
  DriveFile() = default;
  // IoError naming the call, the path and errno; FailedPrecondition when the
  // drive is locked by another store, or is neither a file nor a block device.
  static Result<DriveFile> Open(const std::string& path, const DriveFileOptions& options = {});

  DriveFile(DriveFile&&) noexcept = default;
  DriveFile& operator=(DriveFile&&) noexcept = default;

  const std::string& path() const { return path_; }
  int fd() const { return fd_.get(); }
  bool is_block_device() const { return is_block_device_; }
  bool direct_io() const { return direct_io_; }
  uint64_t size_bytes() const { return size_bytes_; }
  uint32_t logical_block_bytes() const { return logical_block_bytes_; }

  Status ReadAt(uint64_t offset, std::span<uint8_t> buf) const;
  Status WriteAt(uint64_t offset, std::span<const uint8_t> buf) const;
  Status Sync() const;  // fdatasync

  // Opens a second descriptor of the drive without O_DIRECT, for writes that
  // go through the page cache (IoOp::buffered). A file already opened
  // without O_DIRECT needs none: buffered_fd() is then fd().
  Status OpenBufferedWrites();
  int buffered_fd() const { return direct_io_ ? buffered_fd_.get() : fd_.get(); }

 private:
  std::string path_;
  UniqueFd fd_;       // all I/O
  UniqueFd buffered_fd_;  // OpenBufferedWrites; -1 until then
  UniqueFd lock_fd_;  // holds the flock (and O_EXCL on devices); never used for I/O
  bool is_block_device_ = false;
  bool direct_io_ = false;
  uint64_t size_bytes_ = 0;
  uint32_t logical_block_bytes_ = 4096;
};

}  // namespace memkv::drive

#endif  // MEMKV_DRIVE_DRIVE_FILE_H_
