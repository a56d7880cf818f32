// Interposers of stdio opening and closing: fopen/fopen64, fdopen, fclose.
// A FILE on a MemKV path is glibc's own FILE over a shim descriptor: stdio
// reads and writes the memfd directly (glibc's internal calls do not pass
// through the interposers), so the value is fetched before the FILE is made
// and put at fclose.
#include <errno.h>
#include <fcntl.h>
#include <string.h>

#include <string>

#include "preload/files.h"
#include "preload/hooks.h"
#include "preload/real.h"

namespace memkv::preload {
namespace {

// fopen's mode string as open flags, or -1 for a bad mode.
int FlagsForMode(const char* mode) {
  int flags = 0;
  switch (mode[0]) {
    case 'r': flags = O_RDONLY; break;
    case 'w': flags = O_WRONLY | O_CREAT | O_TRUNC; break;
    case 'a': flags = O_WRONLY | O_CREAT | O_APPEND; break;
    default: return -1;
  }
  for (const char* c = mode + 1; *c != '\0' && *c != ','; ++c) {
    if (*c == '+') flags = (flags & ~O_ACCMODE) | O_RDWR;
    if (*c == 'x') flags |= O_EXCL;
    if (*c == 'e') flags |= O_CLOEXEC;
  }
  return flags;
}

// A FILE over shim fd `fd`: the value fetched first (stdio's reads bypass the
// interposers) and the file marked to be put at fclose (so are its writes).
FILE* AttachStdio(int fd, File& file, const char* mode) {
  // stdio writes the memfd behind the interposers: no staging.
  if (int err = Unstage(file, fd)) {
    errno = err;
    return nullptr;
  }
  if (file.readable && !file.is_dir) {
    if (int err = EnsureLoaded(file, fd)) {
      errno = err;
      return nullptr;
    }
  }
  if (file.writable) MarkDirty(file);
  std::string fd_mode;
  for (const char* c = mode; *c != '\0' && *c != ','; ++c) {
    if (*c != 'x') fd_mode += *c;
  }
  return Real().fdopen(fd, fd_mode.c_str());
}

FILE* OpenStream(const char* path, const char* mode) {
  Target target;
  if (path == nullptr || mode == nullptr || !Resolve(AT_FDCWD, path, &target)) return Real().fopen(path, mode);
  int flags = FlagsForMode(mode);
  if (flags < 0) {
    errno = EINVAL;
    return nullptr;
  }
  int fd = OpenTarget(target, flags);
  if (fd < 0) return nullptr;
  std::shared_ptr<File> file = LookupFd(fd);
  FILE* stream = AttachStdio(fd, *file, mode);
  if (stream == nullptr) {
    int err = errno;
    if (std::shared_ptr<File> taken = TakeFd(fd)) {
      memkv::MutexLock lock(taken->mu);
      taken->dirty = false;  // nothing was written: leave the value alone
    }
    Real().close(fd);
    errno = err;
  }
  return stream;
}

}  // namespace
}  // namespace memkv::preload

using namespace memkv::preload;  // NOLINT: the interposers below are libc's names

MEMKV_PRELOAD_EXPORT FILE* fopen(const char* path, const char* mode) { return OpenStream(path, mode); }
MEMKV_PRELOAD_EXPORT FILE* fopen64(const char* path, const char* mode) { return OpenStream(path, mode); }

MEMKV_PRELOAD_EXPORT FILE* fdopen(int fd, const char* mode) {
  std::shared_ptr<File> file = LookupFd(fd);
  if (!file || mode == nullptr) return Real().fdopen(fd, mode);
  return AttachStdio(fd, *file, mode);
}

MEMKV_PRELOAD_EXPORT int fclose(FILE* stream) {
  int fd = stream != nullptr ? fileno(stream) : -1;
  std::shared_ptr<File> file = LookupFd(fd);
  if (!file) return Real().fclose(stream);
  // Flush stdio's buffer into the memfd, put the value, then let fclose
  // close the descriptor.
  int flushed = fflush(stream);
  int flush_errno = errno;
  file = TakeFd(fd);
  int err = file ? ReleaseFile(file, fd) : 0;
  int closed = Real().fclose(stream);
  if (flushed != 0) return ErrnoResult(flush_errno, -1);
  if (err != 0) return ErrnoResult(err, -1);
  return closed;
}
