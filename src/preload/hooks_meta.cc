// Interposers of the calls that set metadata (chmod, chown, the utime
// family, setxattr), make temporary files (the mkstemp family) and change
// the working directory (chdir, fchdir, getcwd).
//
// MemKV values keep no mode, owner or times: on a MemKV path or descriptor
// the metadata calls succeed without doing anything (ENOENT when the path
// names neither a file nor a directory), so that cp -a, tar, rsync and
// sed -i can copy what they copy; setxattr fails with ENOTSUP, which those
// programs take as "no extended attributes here". The mkstemp family is
// interposed because glibc opens the file with its internal open(), which
// no interposer sees.
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#include <utime.h>

#include <string>

#include "preload/files.h"
#include "preload/hooks.h"
#include "preload/real.h"

namespace memkv::preload {
namespace {

constexpr int kPassOn = -2;

// glibc declares some path arguments nonnull that the kernel accepts as
// null (utimensat's, chdir's): hide the pointer from the compiler so the
// check stays.
const char* Opaque(const char* path) {
  asm("" : "+r"(path));
  return path;
}

// For a path call: kPassOn when the path is not the shim's, otherwise what
// the no-op returns (0, or -1 with errno set).
int MetadataAt(int dirfd, const char* path) {
  Target target;
  if (!Resolve(dirfd, path, &target)) return kPassOn;
  return ErrnoResult(TargetExists(target));
}

// mkstemp and its kin under a prefix: the last six characters before
// `suffix_len` must be "XXXXXX"; they are replaced until an O_EXCL open of a
// new key succeeds. kPassOn when the template is not the shim's.
int MakeTemp(char* tmpl, int suffix_len, int flags) {
  Target target;
  if (tmpl == nullptr || !Resolve(AT_FDCWD, tmpl, &target)) return kPassOn;
  size_t len = strlen(tmpl);
  if (suffix_len < 0 || len < 6 + static_cast<size_t>(suffix_len)) return ErrnoResult(EINVAL, -1);
  char* x = tmpl + len - suffix_len - 6;
  if (strncmp(x, "XXXXXX", 6) != 0) return ErrnoResult(EINVAL, -1);
  static const char kChars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  struct timespec now {};
  clock_gettime(CLOCK_REALTIME, &now);
  uint64_t state = static_cast<uint64_t>(now.tv_nsec) ^ (static_cast<uint64_t>(now.tv_sec) << 20) ^
                   (static_cast<uint64_t>(getpid()) << 40);
  for (int attempt = 0; attempt < 100; ++attempt) {
    for (int i = 0; i < 6; ++i) {
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;
      x[i] = kChars[(state >> 33) % (sizeof kChars - 1)];
    }
    int fd = OpenAt(AT_FDCWD, tmpl, O_RDWR | O_CREAT | O_EXCL | (flags & ~O_ACCMODE), 0600);
    if (fd >= 0 || errno != EEXIST) return fd;
  }
  memcpy(x, "XXXXXX", 6);
  return ErrnoResult(EEXIST, -1);
}

int PassOn(int result, int (*real)(char*, int, int), char* tmpl, int suffix_len, int flags) {
  if (result != kPassOn) return result;
  if (real == nullptr) return ErrnoResult(ENOSYS, -1);
  return real(tmpl, suffix_len, flags);
}

}  // namespace
}  // namespace memkv::preload

using namespace memkv::preload;  // NOLINT: the interposers below are libc's names

// --- Mode, owner, times: accepted, not kept -----------------------------------
#define MEMKV_PRELOAD_PATH_NOOP(dirfd, path, real_call) \
  do {                                                  \
    int shim_result = MetadataAt((dirfd), (path));      \
    if (shim_result != kPassOn) return shim_result;          \
    if (Real().real_call == nullptr) return ErrnoResult(ENOSYS, -1); \
  } while (0)

MEMKV_PRELOAD_EXPORT int chmod(const char* path, mode_t mode) {
  MEMKV_PRELOAD_PATH_NOOP(AT_FDCWD, path, chmod);
  return Real().chmod(path, mode);
}
MEMKV_PRELOAD_EXPORT int fchmodat(int dirfd, const char* path, mode_t mode, int flags) {
  MEMKV_PRELOAD_PATH_NOOP(dirfd, path, fchmodat);
  return Real().fchmodat(dirfd, path, mode, flags);
}
MEMKV_PRELOAD_EXPORT int fchmod(int fd, mode_t mode) {
  if (LookupFd(fd)) return 0;
  return Real().fchmod(fd, mode);
}
MEMKV_PRELOAD_EXPORT int chown(const char* path, uid_t owner, gid_t group) {
  MEMKV_PRELOAD_PATH_NOOP(AT_FDCWD, path, chown);
  return Real().chown(path, owner, group);
}
MEMKV_PRELOAD_EXPORT int lchown(const char* path, uid_t owner, gid_t group) {
  MEMKV_PRELOAD_PATH_NOOP(AT_FDCWD, path, lchown);
  return Real().lchown(path, owner, group);
}
MEMKV_PRELOAD_EXPORT int fchownat(int dirfd, const char* path, uid_t owner, gid_t group, int flags) {
  path = Opaque(path);
  if ((flags & AT_EMPTY_PATH) != 0 && path != nullptr && path[0] == '\0' && LookupFd(dirfd)) return 0;
  MEMKV_PRELOAD_PATH_NOOP(dirfd, path, fchownat);
  return Real().fchownat(dirfd, path, owner, group, flags);
}
MEMKV_PRELOAD_EXPORT int fchown(int fd, uid_t owner, gid_t group) {
  if (LookupFd(fd)) return 0;
  return Real().fchown(fd, owner, group);
}
MEMKV_PRELOAD_EXPORT int utime(const char* path, const struct utimbuf* times) {
  MEMKV_PRELOAD_PATH_NOOP(AT_FDCWD, path, utime);
  return Real().utime(path, times);
}
MEMKV_PRELOAD_EXPORT int utimes(const char* path, const struct timeval times[2]) {
  MEMKV_PRELOAD_PATH_NOOP(AT_FDCWD, path, utimes);
  return Real().utimes(path, times);
}
MEMKV_PRELOAD_EXPORT int lutimes(const char* path, const struct timeval times[2]) {
  MEMKV_PRELOAD_PATH_NOOP(AT_FDCWD, path, lutimes);
  return Real().lutimes(path, times);
}
MEMKV_PRELOAD_EXPORT int futimesat(int dirfd, const char* path, const struct timeval times[2]) {
  path = Opaque(path);
  if (path == nullptr && LookupFd(dirfd)) return 0;
  MEMKV_PRELOAD_PATH_NOOP(dirfd, path, futimesat);
  return Real().futimesat(dirfd, path, times);
}
MEMKV_PRELOAD_EXPORT int futimes(int fd, const struct timeval times[2]) {
  if (LookupFd(fd)) return 0;
  return Real().futimes(fd, times);
}
MEMKV_PRELOAD_EXPORT int futimens(int fd, const struct timespec times[2]) {
  if (LookupFd(fd)) return 0;
  return Real().futimens(fd, times);
}
MEMKV_PRELOAD_EXPORT int utimensat(int dirfd, const char* path, const struct timespec times[2], int flags) {
  // A null path (or "" with AT_EMPTY_PATH) names dirfd itself, as futimens.
  path = Opaque(path);
  if ((path == nullptr || path[0] == '\0') && LookupFd(dirfd)) return 0;
  if (path != nullptr) {
    int shim_result = MetadataAt(dirfd, path);
    if (shim_result != kPassOn) return shim_result;
  }
  return Real().utimensat(dirfd, path, times, flags);
}
#undef MEMKV_PRELOAD_PATH_NOOP

// --- Extended attributes: none can be set ------------------------------------
MEMKV_PRELOAD_EXPORT int setxattr(const char* path, const char* name, const void* value, size_t size, int flags) {
  Target target;
  if (Resolve(AT_FDCWD, path, &target)) return ErrnoResult(ENOTSUP, -1);
  return Real().setxattr(path, name, value, size, flags);
}
MEMKV_PRELOAD_EXPORT int lsetxattr(const char* path, const char* name, const void* value, size_t size, int flags) {
  Target target;
  if (Resolve(AT_FDCWD, path, &target)) return ErrnoResult(ENOTSUP, -1);
  return Real().lsetxattr(path, name, value, size, flags);
}
MEMKV_PRELOAD_EXPORT int fsetxattr(int fd, const char* name, const void* value, size_t size, int flags) {
  if (LookupFd(fd)) return ErrnoResult(ENOTSUP, -1);
  return Real().fsetxattr(fd, name, value, size, flags);
}

// --- Temporary files ----------------------------------------------------------
namespace {
int RealMkstemp(char* tmpl, int, int) { return Real().mkstemp != nullptr ? Real().mkstemp(tmpl) : ErrnoResult(ENOSYS, -1); }
int RealMkstemp64(char* tmpl, int, int) {
  return Real().mkstemp64 != nullptr ? Real().mkstemp64(tmpl) : ErrnoResult(ENOSYS, -1);
}
int RealMkostemp(char* tmpl, int, int flags) {
  return Real().mkostemp != nullptr ? Real().mkostemp(tmpl, flags) : ErrnoResult(ENOSYS, -1);
}
int RealMkostemp64(char* tmpl, int, int flags) {
  return Real().mkostemp64 != nullptr ? Real().mkostemp64(tmpl, flags) : ErrnoResult(ENOSYS, -1);
}
int RealMkstemps(char* tmpl, int suffix_len, int) {
  return Real().mkstemps != nullptr ? Real().mkstemps(tmpl, suffix_len) : ErrnoResult(ENOSYS, -1);
}
int RealMkstemps64(char* tmpl, int suffix_len, int) {
  return Real().mkstemps64 != nullptr ? Real().mkstemps64(tmpl, suffix_len) : ErrnoResult(ENOSYS, -1);
}
}  // namespace

MEMKV_PRELOAD_EXPORT int mkstemp(char* tmpl) { return PassOn(MakeTemp(tmpl, 0, 0), RealMkstemp, tmpl, 0, 0); }
MEMKV_PRELOAD_EXPORT int mkstemp64(char* tmpl) { return PassOn(MakeTemp(tmpl, 0, 0), RealMkstemp64, tmpl, 0, 0); }
MEMKV_PRELOAD_EXPORT int mkostemp(char* tmpl, int flags) {
  return PassOn(MakeTemp(tmpl, 0, flags), RealMkostemp, tmpl, 0, flags);
}
MEMKV_PRELOAD_EXPORT int mkostemp64(char* tmpl, int flags) {
  return PassOn(MakeTemp(tmpl, 0, flags), RealMkostemp64, tmpl, 0, flags);
}
MEMKV_PRELOAD_EXPORT int mkstemps(char* tmpl, int suffix_len) {
  return PassOn(MakeTemp(tmpl, suffix_len, 0), RealMkstemps, tmpl, suffix_len, 0);
}
MEMKV_PRELOAD_EXPORT int mkstemps64(char* tmpl, int suffix_len) {
  return PassOn(MakeTemp(tmpl, suffix_len, 0), RealMkstemps64, tmpl, suffix_len, 0);
}
MEMKV_PRELOAD_EXPORT int mkostemps(char* tmpl, int suffix_len, int flags) {
  return PassOn(MakeTemp(tmpl, suffix_len, flags), Real().mkostemps, tmpl, suffix_len, flags);
}
MEMKV_PRELOAD_EXPORT int mkostemps64(char* tmpl, int suffix_len, int flags) {
  return PassOn(MakeTemp(tmpl, suffix_len, flags), Real().mkostemps64, tmpl, suffix_len, flags);
}

// --- Working directory --------------------------------------------------------
MEMKV_PRELOAD_EXPORT int chdir(const char* path) {
  Target target;
  if (Resolve(AT_FDCWD, path, &target)) {
    bool is_dir = false;
    if (int err = IsDirectory(target.key, &is_dir)) return ErrnoResult(err, -1);
    if (!is_dir) return ErrnoResult(TargetExists(target) == 0 ? ENOTDIR : ENOENT, -1);
    SetShimCwd(target.path);
    return 0;
  }
  // A relative path from a shim working directory that leaves the prefix.
  path = Opaque(path);
  std::string cwd = ShimCwd();
  std::string real_path = path != nullptr && path[0] != '/' && !cwd.empty() ? NormalizePath(path, cwd) : "";
  int result = Real().chdir(real_path.empty() ? path : real_path.c_str());
  if (result == 0) SetShimCwd("");
  return result;
}
MEMKV_PRELOAD_EXPORT int fchdir(int fd) {
  if (std::shared_ptr<File> file = LookupFd(fd)) {
    if (!file->is_dir) return ErrnoResult(ENOTDIR, -1);
    SetShimCwd(file->path);
    return 0;
  }
  int result = Real().fchdir(fd);
  if (result == 0) SetShimCwd("");
  return result;
}
MEMKV_PRELOAD_EXPORT char* getcwd(char* buf, size_t size) {
  std::string cwd = ShimCwd();
  if (cwd.empty()) return Real().getcwd(buf, size);
  if (buf == nullptr) {
    if (size != 0 && size < cwd.size() + 1) {
      errno = ERANGE;
      return nullptr;
    }
    buf = static_cast<char*>(malloc(size != 0 ? size : cwd.size() + 1));
    if (buf == nullptr) {
      errno = ENOMEM;
      return nullptr;
    }
  } else if (size < cwd.size() + 1) {
    errno = size == 0 ? EINVAL : ERANGE;
    return nullptr;
  }
  memcpy(buf, cwd.c_str(), cwd.size() + 1);
  return buf;
}
