#include "drive/drive_file.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/errno_text.h"
#include "base/log.h"
#include "drive/format.h"

namespace memkv::drive {
namespace {

std::string Describe(const std::string& call, const std::string& path, int err) {
  return call + " on " + path + ": " + ErrnoName(err);
}

// The filesystem's O_DIRECT offset alignment for a regular file, 0 when the
// kernel does not report it (STATX_DIOALIGN is Linux 6.1+).
uint32_t FileDioAlignment(int fd) {
  struct statx stx {};
  if (::statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &stx) != 0) return 0;
  if ((stx.stx_mask & STATX_DIOALIGN) == 0) return 0;
  return stx.stx_dio_offset_align;
}

}  // namespace

Result<DriveFile> DriveFile::Open(const std::string& path, const DriveFileOptions& options) {
  DriveFile f;
  f.path_ = path;
  int flags = (options.writable ? O_RDWR : O_RDONLY) | O_CLOEXEC;
  if (options.create_bytes > 0) flags |= O_CREAT;
  int fd = ::open(path.c_str(), flags | O_DIRECT, 0600);
  f.direct_io_ = true;
  if (fd < 0 && errno == EINVAL) {
    // Some filesystems refuse O_DIRECT; a regular file there still works with
    // the page cache and fdatasync, only slower. A device never gets here
    // without O_DIRECT support, so the fallback is checked below.
    fd = ::open(path.c_str(), flags, 0600);
    f.direct_io_ = false;
  }
  if (fd < 0) return IoError(Describe("open", path, errno));
  f.fd_.Reset(fd);

  struct stat st {};
  if (::fstat(fd, &st) != 0) return IoError(Describe("fstat", path, errno));
  if (S_ISBLK(st.st_mode)) {
    if (!f.direct_io_) return IoError(Describe("open(O_DIRECT)", path, EINVAL));
    f.is_block_device_ = true;
    int lbs = 0;
    if (::ioctl(fd, BLKSSZGET, &lbs) != 0) return IoError(Describe("ioctl(BLKSSZGET)", path, errno));
    uint64_t bytes = 0;
    if (::ioctl(fd, BLKGETSIZE64, &bytes) != 0) return IoError(Describe("ioctl(BLKGETSIZE64)", path, errno));
    f.logical_block_bytes_ = uint32_t(lbs);
    f.size_bytes_ = bytes;
  } else if (S_ISREG(st.st_mode)) {
    if (!f.direct_io_) {
      LOG_WARN_C("drive") << path << ": the filesystem refuses O_DIRECT; using buffered I/O with fdatasync (slower, "
               << "same durability)";
    }
    if (options.create_bytes > 0 && uint64_t(st.st_size) != options.create_bytes) {
      if (::ftruncate(fd, off_t(options.create_bytes)) != 0) {
        return IoError(Describe("ftruncate(" + std::to_string(options.create_bytes) + ")", path, errno));
      }
    }
    if (options.create_bytes > 0) {
      int rc = ::fallocate(fd, 0, 0, off_t(options.create_bytes));
      if (rc != 0 && errno == ENOSPC) {
        return IoError(Describe("fallocate(" + std::to_string(options.create_bytes) + ")", path, ENOSPC));
      }
      if (rc != 0) {
        LOG_WARN_C("drive") << path << ": fallocate failed (" << ErrnoName(errno)
                 << "); the file stays sparse, so a full filesystem shows up as ENOSPC on writes";
      }
      st.st_size = off_t(options.create_bytes);
    }
    uint32_t align = f.direct_io_ ? FileDioAlignment(fd) : 0;
    f.logical_block_bytes_ = align != 0 ? align : 4096;
    f.size_bytes_ = uint64_t(st.st_size);
  } else {
    return FailedPrecondition(path + " is neither a regular file nor a block device");
  }
  const uint32_t lbs = f.logical_block_bytes_;
  if (lbs < 512 || lbs > kDriveHeaderBytes || (lbs & (lbs - 1)) != 0) {
    return FailedPrecondition(path + ": logical block size " + std::to_string(lbs) +
                              " is not supported (512..4096, a power of two)");
  }
  if (options.lock) {
    // The lock lives on a descriptor of its own that no I/O ever uses. The
    // I/O descriptor is handed to io_uring, and the kernel tears a ring down
    // asynchronously: after a crash (kill -9) its in-flight requests and
    // registered files keep that descriptor open for a moment, and a lock on
    // it would turn the restart away. This one is closed when the process
    // dies. On a block device it is also an O_EXCL open, which the kernel
    // refuses while the device is mounted or claimed by another exclusive
    // opener (another store, mkfs, ...).
    int lock_flags = O_RDONLY | O_CLOEXEC | (f.is_block_device_ && options.writable ? O_EXCL : 0);
    int lock_fd = ::open(path.c_str(), lock_flags);
    if (lock_fd < 0 && errno == EBUSY) return FailedPrecondition(path + " is busy (mounted or held by another process)");
    if (lock_fd < 0) return IoError(Describe("open (lock)", path, errno));
    f.lock_fd_.Reset(lock_fd);
    if (::flock(lock_fd, (options.writable ? LOCK_EX : LOCK_SH) | LOCK_NB) != 0) {
      if (errno == EWOULDBLOCK) return FailedPrecondition(path + " is in use by another MemKV process (flock)");
      return IoError(Describe("flock", path, errno));
    }
  }
  return f;
}

Status DriveFile::OpenBufferedWrites() {
  if (!direct_io_ || buffered_fd_.get() >= 0) return Status::Ok();
  int fd = ::open(path_.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return IoError(Describe("open (buffered writes)", path_, errno));
  buffered_fd_.Reset(fd);
  return Status::Ok();
}

Status DriveFile::ReadAt(uint64_t offset, std::span<uint8_t> buf) const {
  size_t done = 0;
  while (done < buf.size()) {
    ssize_t n = ::pread(fd_.get(), buf.data() + done, buf.size() - done, off_t(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return IoError(Describe("pread(" + std::to_string(buf.size()) + " at " + std::to_string(offset) + ")", path_, errno));
    if (n == 0) return IoError("pread at " + std::to_string(offset + done) + " on " + path_ + ": end of file");
    done += size_t(n);
  }
  return Status::Ok();
}

Status DriveFile::WriteAt(uint64_t offset, std::span<const uint8_t> buf) const {
  size_t done = 0;
  while (done < buf.size()) {
    ssize_t n = ::pwrite(fd_.get(), buf.data() + done, buf.size() - done, off_t(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return IoError(Describe("pwrite(" + std::to_string(buf.size()) + " at " + std::to_string(offset) + ")", path_, errno));
    done += size_t(n);
  }
  return Status::Ok();
}

Status DriveFile::Sync() const {
  if (::fdatasync(fd_.get()) != 0) return IoError(Describe("fdatasync", path_, errno));
  return Status::Ok();
}

}  // namespace memkv::drive
