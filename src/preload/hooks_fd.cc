// Interposers of the descriptor calls: open, close, read, write, seek, stat of
// an fd, sync, truncate, dup, fcntl, mmap and the kernel copy calls.
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/uio.h>
#include <unistd.h>

#include <limits.h>
#include <string.h>

#include <algorithm>
#include <string>

#include "preload/files.h"
#include "preload/hooks.h"
#include "preload/real.h"
#include "preload/stats.h"

namespace memkv::preload {
namespace {

// Room left below the largest value any server takes (store.h) for a write
// of `len` at the current offset (or the end, for O_APPEND): 0 when it fits,
// EFBIG otherwise. The server's own limit is applied at the put.
int CheckWriteFits(const File& file, int fd, size_t len, off_t offset = -1) {
  if (offset < 0) {
    if (file.append) {
      struct stat st {};
      if (Real().fstat(fd, &st) != 0) return errno;
      offset = st.st_size;
    } else {
      offset = Real().lseek(fd, 0, SEEK_CUR);
      if (offset < 0) return errno;
    }
  }
  const uint64_t start = static_cast<uint64_t>(offset);
  return start > kMaxValueCeilingBytes || len > kMaxValueCeilingBytes - start ? EFBIG : 0;
}

size_t IovecBytes(const struct iovec* iov, int count) {
  size_t total = 0;
  for (int i = 0; i < count; ++i) total += iov[i].iov_len;
  return total;
}

// The checks before a read: 0, or the errno to fail with.
int BeforeRead(File& file, int fd) {
  if (file.is_dir) return EISDIR;
  if (!file.readable) return EBADF;
  return EnsureLoaded(file, fd);
}

// For the copy calls, whose length is often "as much as there is": *len is
// cut to what fits below the largest value (EFBIG when nothing does).
int BeforeCopyInto(File& file, int fd, size_t* len, off_t offset = -1) {
  if (file.is_dir) return EISDIR;
  if (!file.writable) return EBADF;
  if (int err = Unstage(file, fd)) return err;
  if (offset < 0) {
    offset = Real().lseek(fd, 0, SEEK_CUR);
    if (offset < 0) return errno;
  }
  if (static_cast<uint64_t>(offset) >= kMaxValueCeilingBytes) return *len == 0 ? 0 : EFBIG;
  *len = std::min<uint64_t>(*len, kMaxValueCeilingBytes - static_cast<uint64_t>(offset));
  MarkDirty(file);
  return 0;
}

int BeforeWrite(File& file, int fd, size_t len, off_t offset = -1) {
  if (file.is_dir) return EISDIR;
  if (!file.writable) return EBADF;
  if (int err = Unstage(file, fd)) return err;
  if (int err = CheckWriteFits(file, fd, len, offset)) return err;
  MarkDirty(file);
  return 0;
}

// Any use of a staged file's descriptor but write, fstat and close ends its
// staging first (files.h, "Staged writes"). 0 or an errno.
int UnstageFd(int fd) {
  std::shared_ptr<File> file = LookupFd(fd);
  return file ? Unstage(*file, fd) : 0;
}

// write()/writev() into the staging buffer where the file stages.
bool TryStage(File& file, int fd, const struct iovec* iov, int count, ssize_t* result) {
  ssize_t n = 0;
  int err = 0;
  if (!StageWrite(file, fd, iov, count, &n, &err)) return false;
  *result = err != 0 ? ErrnoResult(err, -1) : n;
  return true;
}

int DupResult(int old_fd, int new_fd) {
  if (new_fd < 0) return new_fd;
  if (std::shared_ptr<File> file = LookupFd(old_fd)) {
    if (std::shared_ptr<File> replaced = TakeFd(new_fd)) replaced->fd_count.fetch_sub(1);
    file->fd_count.fetch_add(1);
    InsertFd(new_fd, std::move(file));
  }
  return new_fd;
}

// dup2 and dup3 close new_fd first: a shim file there is released as close()
// would (a shell restoring its stdout after `builtin >> file` puts the file
// here). As with close errors in dup2(2), a failed put does not fail the
// call: it is reported on stderr and counted as unreported (exit.cc).
void ReleaseReplaced(int new_fd) {
  std::shared_ptr<File> old = TakeFd(new_fd);
  if (!old) return;
  if (int err = ReleaseFile(old, new_fd)) {
    uint64_t lost = CountUnreported();
    LogLine("put of '" + old->key + "' when descriptor " + std::to_string(new_fd) + " was replaced failed: " +
            strerror(err) + " (" + std::to_string(lost) + (lost == 1 ? " put" : " puts") +
            " failed where no call could return the error)");
  }
}

int FcntlCommon(int (*real)(int, int, ...), int fd, int cmd, void* arg) {
  if (real == nullptr) return ErrnoResult(ENOSYS, -1);
  if (cmd != F_GETFD && cmd != F_SETFD && cmd != F_GETFL) {
    if (int err = UnstageFd(fd)) return ErrnoResult(err, -1);
  }
  int result = real(fd, cmd, arg);
  if ((cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC) && result >= 0) return DupResult(fd, result);
  return result;
}

}  // namespace

int OpenAt(int dirfd, const char* path, int flags, mode_t mode) {
  Target target;
  if (!Resolve(dirfd, path, &target)) return Real().openat(dirfd, path, flags, mode);
  return OpenTarget(target, flags);
}

}  // namespace memkv::preload

using namespace memkv::preload;  // NOLINT: the interposers below are libc's names

namespace {
mode_t ModeArg(int flags, va_list ap) {
  return (flags & O_CREAT) != 0 || (flags & O_TMPFILE) == O_TMPFILE ? static_cast<mode_t>(va_arg(ap, int)) : 0;
}
}  // namespace

MEMKV_PRELOAD_EXPORT int open(const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t mode = ModeArg(flags, ap);
  va_end(ap);
  return OpenAt(AT_FDCWD, path, flags, mode);
}
MEMKV_PRELOAD_EXPORT int open64(const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t mode = ModeArg(flags, ap);
  va_end(ap);
  return OpenAt(AT_FDCWD, path, flags, mode);
}
MEMKV_PRELOAD_EXPORT int openat(int dirfd, const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t mode = ModeArg(flags, ap);
  va_end(ap);
  return OpenAt(dirfd, path, flags, mode);
}
MEMKV_PRELOAD_EXPORT int openat64(int dirfd, const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t mode = ModeArg(flags, ap);
  va_end(ap);
  return OpenAt(dirfd, path, flags, mode);
}
MEMKV_PRELOAD_EXPORT int __open_2(const char* path, int flags) { return OpenAt(AT_FDCWD, path, flags, 0); }
MEMKV_PRELOAD_EXPORT int __open64_2(const char* path, int flags) { return OpenAt(AT_FDCWD, path, flags, 0); }
MEMKV_PRELOAD_EXPORT int __openat_2(int dirfd, const char* path, int flags) { return OpenAt(dirfd, path, flags, 0); }
MEMKV_PRELOAD_EXPORT int __openat64_2(int dirfd, const char* path, int flags) {
  return OpenAt(dirfd, path, flags, 0);
}
MEMKV_PRELOAD_EXPORT int creat(const char* path, mode_t mode) {
  return OpenAt(AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC, mode);
}
MEMKV_PRELOAD_EXPORT int creat64(const char* path, mode_t mode) {
  return OpenAt(AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC, mode);
}

MEMKV_PRELOAD_EXPORT int close(int fd) {
  std::shared_ptr<File> file = TakeFd(fd);
  if (!file) return Real().close(fd);
  int err = ReleaseFile(file, fd);
  int result = Real().close(fd);
  return err != 0 ? ErrnoResult(err, -1) : result;
}

MEMKV_PRELOAD_EXPORT ssize_t read(int fd, void* buf, size_t len) {
  if (std::shared_ptr<File> file = LookupFd(fd)) {
    ssize_t n = 0;
    int err = 0;
    if (ReadWhole(*file, fd, buf, len, /*moves_offset=*/true, &n, &err)) return err != 0 ? ErrnoResult(err, -1) : n;
    if (AtEndOfUnloaded(*file, fd)) return 0;
    if ((err = BeforeRead(*file, fd))) return ErrnoResult(err, -1);
  }
  return Real().read(fd, buf, len);
}
MEMKV_PRELOAD_EXPORT ssize_t pread(int fd, void* buf, size_t len, off_t offset) {
  if (std::shared_ptr<File> file = LookupFd(fd)) {
    ssize_t n = 0;
    int err = 0;
    if (offset == 0 && ReadWhole(*file, fd, buf, len, /*moves_offset=*/false, &n, &err)) {
      return err != 0 ? ErrnoResult(err, -1) : n;
    }
    if (AtEndOfUnloaded(*file, fd, offset)) return 0;
    if ((err = BeforeRead(*file, fd))) return ErrnoResult(err, -1);
  }
  return Real().pread(fd, buf, len, offset);
}
MEMKV_PRELOAD_EXPORT ssize_t pread64(int fd, void* buf, size_t len, off_t offset) { return pread(fd, buf, len, offset); }
MEMKV_PRELOAD_EXPORT ssize_t readv(int fd, const struct iovec* iov, int count) {
  if (std::shared_ptr<File> file = LookupFd(fd)) {
    if (AtEndOfUnloaded(*file, fd)) return 0;
    if (int err = BeforeRead(*file, fd)) return ErrnoResult(err, -1);
  }
  return Real().readv(fd, iov, count);
}
MEMKV_PRELOAD_EXPORT ssize_t preadv(int fd, const struct iovec* iov, int count, off_t offset) {
  if (std::shared_ptr<File> file = LookupFd(fd)) {
    if (AtEndOfUnloaded(*file, fd, offset)) return 0;
    if (int err = BeforeRead(*file, fd)) return ErrnoResult(err, -1);
  }
  return Real().preadv(fd, iov, count, offset);
}
MEMKV_PRELOAD_EXPORT ssize_t preadv64(int fd, const struct iovec* iov, int count, off_t offset) {
  return preadv(fd, iov, count, offset);
}

MEMKV_PRELOAD_EXPORT ssize_t write(int fd, const void* buf, size_t len) {
  if (std::shared_ptr<File> file = LookupFd(fd)) {
    struct iovec one = {const_cast<void*>(buf), len};
    ssize_t staged = 0;
    if (TryStage(*file, fd, &one, 1, &staged)) return staged;
    if (int err = BeforeWrite(*file, fd, len)) return ErrnoResult(err, -1);
  }
  return Real().write(fd, buf, len);
}
MEMKV_PRELOAD_EXPORT ssize_t pwrite(int fd, const void* buf, size_t len, off_t offset) {
  if (std::shared_ptr<File> file = LookupFd(fd)) {
    if (int err = BeforeWrite(*file, fd, len, offset)) return ErrnoResult(err, -1);
  }
  return Real().pwrite(fd, buf, len, offset);
}
MEMKV_PRELOAD_EXPORT ssize_t pwrite64(int fd, const void* buf, size_t len, off_t offset) {
  return pwrite(fd, buf, len, offset);
}
MEMKV_PRELOAD_EXPORT ssize_t writev(int fd, const struct iovec* iov, int count) {
  if (std::shared_ptr<File> file = LookupFd(fd)) {
    ssize_t staged = 0;
    if (count >= 0 && count <= IOV_MAX && TryStage(*file, fd, iov, count, &staged)) return staged;
    if (int err = BeforeWrite(*file, fd, IovecBytes(iov, count))) return ErrnoResult(err, -1);
  }
  return Real().writev(fd, iov, count);
}
MEMKV_PRELOAD_EXPORT ssize_t pwritev(int fd, const struct iovec* iov, int count, off_t offset) {
  if (std::shared_ptr<File> file = LookupFd(fd)) {
    if (int err = BeforeWrite(*file, fd, IovecBytes(iov, count), offset)) return ErrnoResult(err, -1);
  }
  return Real().pwritev(fd, iov, count, offset);
}
MEMKV_PRELOAD_EXPORT ssize_t pwritev64(int fd, const struct iovec* iov, int count, off_t offset) {
  return pwritev(fd, iov, count, offset);
}

MEMKV_PRELOAD_EXPORT off_t lseek(int fd, off_t offset, int whence) {
  if (std::shared_ptr<File> file = LookupFd(fd)) {
    if (!file->is_dir) {
      if (int err = EnsureLoaded(*file, fd)) return ErrnoResult(err, -1);
      // A staged file's memfd has its offset and size: only a move ends
      // staging.
      bool query = offset == 0 && (whence == SEEK_CUR || whence == SEEK_END);
      if (!query) {
        if (int err = Unstage(*file, fd)) return ErrnoResult(err, -1);
      }
    }
  }
  return Real().lseek(fd, offset, whence);
}
MEMKV_PRELOAD_EXPORT off_t lseek64(int fd, off_t offset, int whence) { return lseek(fd, offset, whence); }

MEMKV_PRELOAD_EXPORT int fstat(int fd, struct stat* st) {
  if (std::shared_ptr<File> file = LookupFd(fd)) return ErrnoResult(StatFile(*file, fd, st));
  return Real().fstat(fd, st);
}
MEMKV_PRELOAD_EXPORT int fstat64(int fd, struct stat64* st) { return fstat(fd, reinterpret_cast<struct stat*>(st)); }
MEMKV_PRELOAD_EXPORT int __fxstat(int ver, int fd, struct stat* st) {
  if (std::shared_ptr<File> file = LookupFd(fd)) return ErrnoResult(StatFile(*file, fd, st));
  return Real().__fxstat(ver, fd, st);
}
MEMKV_PRELOAD_EXPORT int __fxstat64(int ver, int fd, struct stat64* st) {
  return __fxstat(ver, fd, reinterpret_cast<struct stat*>(st));
}

MEMKV_PRELOAD_EXPORT int fsync(int fd) {
  if (std::shared_ptr<File> file = LookupFd(fd)) return ErrnoResult(CommitIfDirty(*file, fd));
  return Real().fsync(fd);
}
MEMKV_PRELOAD_EXPORT int fdatasync(int fd) {
  if (std::shared_ptr<File> file = LookupFd(fd)) return ErrnoResult(CommitIfDirty(*file, fd));
  return Real().fdatasync(fd);
}

MEMKV_PRELOAD_EXPORT int ftruncate(int fd, off_t length) {
  if (std::shared_ptr<File> file = LookupFd(fd)) {
    if (file->is_dir) return ErrnoResult(EISDIR, -1);
    if (!file->writable) return ErrnoResult(EINVAL, -1);
    if (length >= 0 && static_cast<uint64_t>(length) > kMaxValueCeilingBytes) return ErrnoResult(EFBIG, -1);
    if (int err = Unstage(*file, fd)) return ErrnoResult(err, -1);
    MarkDirty(*file);
  }
  return Real().ftruncate(fd, length);
}
MEMKV_PRELOAD_EXPORT int ftruncate64(int fd, off_t length) { return ftruncate(fd, length); }

MEMKV_PRELOAD_EXPORT int posix_fadvise(int fd, off_t offset, off_t len, int advice) {
  if (MaybeShimFd(fd) && LookupFd(fd)) return 0;  // accepted; nothing to advise
  return Real().posix_fadvise(fd, offset, len, advice);
}
MEMKV_PRELOAD_EXPORT int posix_fadvise64(int fd, off_t offset, off_t len, int advice) {
  return posix_fadvise(fd, offset, len, advice);
}

MEMKV_PRELOAD_EXPORT int dup(int fd) {
  if (int err = UnstageFd(fd)) return ErrnoResult(err, -1);
  return DupResult(fd, Real().dup(fd));
}
MEMKV_PRELOAD_EXPORT int dup2(int fd, int new_fd) {
  if (fd == new_fd) return Real().dup2(fd, new_fd);
  if (int err = UnstageFd(fd)) return ErrnoResult(err, -1);
  ReleaseReplaced(new_fd);
  return DupResult(fd, Real().dup2(fd, new_fd));
}
MEMKV_PRELOAD_EXPORT int dup3(int fd, int new_fd, int flags) {
  if (int err = UnstageFd(fd)) return ErrnoResult(err, -1);
  if (fd != new_fd) ReleaseReplaced(new_fd);
  return DupResult(fd, Real().dup3(fd, new_fd, flags));
}
MEMKV_PRELOAD_EXPORT int fcntl(int fd, int cmd, ...) {
  va_list ap;
  va_start(ap, cmd);
  void* arg = va_arg(ap, void*);
  va_end(ap);
  return FcntlCommon(Real().fcntl, fd, cmd, arg);
}
MEMKV_PRELOAD_EXPORT int fcntl64(int fd, int cmd, ...) {
  va_list ap;
  va_start(ap, cmd);
  void* arg = va_arg(ap, void*);
  va_end(ap);
  return FcntlCommon(Real().fcntl64 != nullptr ? Real().fcntl64 : Real().fcntl, fd, cmd, arg);
}

MEMKV_PRELOAD_EXPORT void* mmap(void* addr, size_t len, int prot, int flags, int fd, off_t offset) {
  if (std::shared_ptr<File> file = LookupFd(fd)) {
    if (int err = Unstage(*file, fd)) {
      errno = err;
      return MAP_FAILED;
    }
    if (int err = BeforeRead(*file, fd)) {
      errno = err;
      return MAP_FAILED;
    }
    // A shared writable mapping changes the memfd behind the shim's back:
    // the file is put at its last close (or fsync) whatever happens.
    if ((prot & PROT_WRITE) != 0 && (flags & MAP_SHARED) != 0 && file->writable) MarkDirty(*file);
  }
  return Real().mmap(addr, len, prot, flags, fd, offset);
}
MEMKV_PRELOAD_EXPORT void* mmap64(void* addr, size_t len, int prot, int flags, int fd, off_t offset) {
  return mmap(addr, len, prot, flags, fd, offset);
}

MEMKV_PRELOAD_EXPORT ssize_t copy_file_range(int in_fd, off64_t* in_off, int out_fd, off64_t* out_off, size_t len,
                                             unsigned flags) {
  if (std::shared_ptr<File> in = LookupFd(in_fd)) {
    if (int err = BeforeRead(*in, in_fd)) return ErrnoResult(err, -1);
  }
  if (std::shared_ptr<File> out = LookupFd(out_fd)) {
    if (int err = BeforeCopyInto(*out, out_fd, &len, out_off != nullptr ? *out_off : -1)) return ErrnoResult(err, -1);
  }
  return Real().copy_file_range(in_fd, in_off, out_fd, out_off, len, flags);
}
MEMKV_PRELOAD_EXPORT ssize_t sendfile(int out_fd, int in_fd, off_t* offset, size_t len) {
  if (std::shared_ptr<File> in = LookupFd(in_fd)) {
    if (int err = BeforeRead(*in, in_fd)) return ErrnoResult(err, -1);
  }
  if (std::shared_ptr<File> out = LookupFd(out_fd)) {
    if (int err = BeforeCopyInto(*out, out_fd, &len)) return ErrnoResult(err, -1);
  }
  return Real().sendfile(out_fd, in_fd, offset, len);
}
MEMKV_PRELOAD_EXPORT ssize_t sendfile64(int out_fd, int in_fd, off_t* offset, size_t len) {
  return sendfile(out_fd, in_fd, offset, len);
}

// Extended attributes: MemKV values have none (ls -l asks for ACLs).
namespace {
int NoXattrs(int dirfd, const char* path) {
  Target target;
  return Resolve(dirfd, path, &target) ? ENOTSUP : 0;
}
}  // namespace
MEMKV_PRELOAD_EXPORT ssize_t getxattr(const char* path, const char* name, void* value, size_t size) {
  if (int err = NoXattrs(AT_FDCWD, path)) return ErrnoResult(err, -1);
  return Real().getxattr(path, name, value, size);
}
MEMKV_PRELOAD_EXPORT ssize_t lgetxattr(const char* path, const char* name, void* value, size_t size) {
  if (int err = NoXattrs(AT_FDCWD, path)) return ErrnoResult(err, -1);
  return Real().lgetxattr(path, name, value, size);
}
MEMKV_PRELOAD_EXPORT ssize_t fgetxattr(int fd, const char* name, void* value, size_t size) {
  if (LookupFd(fd)) return ErrnoResult(ENOTSUP, -1);
  return Real().fgetxattr(fd, name, value, size);
}
MEMKV_PRELOAD_EXPORT ssize_t listxattr(const char* path, char* list, size_t size) {
  if (NoXattrs(AT_FDCWD, path) != 0) return 0;
  return Real().listxattr(path, list, size);
}
MEMKV_PRELOAD_EXPORT ssize_t llistxattr(const char* path, char* list, size_t size) {
  if (NoXattrs(AT_FDCWD, path) != 0) return 0;
  return Real().llistxattr(path, list, size);
}
MEMKV_PRELOAD_EXPORT ssize_t flistxattr(int fd, char* list, size_t size) {
  if (LookupFd(fd)) return 0;
  return Real().flistxattr(fd, list, size);
}
