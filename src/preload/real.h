// The libc functions libmemkv_preload.so interposes, as the next object in
// the lookup order (normally libc) defines them: dlsym(RTLD_NEXT, ...).
//
// Every call the shim makes to one of these functions goes through Real(),
// never through the plain name, so the shim never re-enters itself. Real()
// resolves all of them once, on first use (which may come before the
// library's constructor, from another library's constructor); it is
// thread-safe and does not allocate beyond what dlsym does.
#ifndef MEMKV_PRELOAD_REAL_H_
#define MEMKV_PRELOAD_REAL_H_

#include <dirent.h>
#include <spawn.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <utime.h>

namespace memkv::preload {

#define MEMKV_PRELOAD_REAL_FUNCTIONS(X)                                                   \
  X(open, int (*)(const char*, int, ...))                                                 \
  X(openat, int (*)(int, const char*, int, ...))                                          \
  X(close, int (*)(int))                                                                  \
  X(read, ssize_t (*)(int, void*, size_t))                                                \
  X(pread, ssize_t (*)(int, void*, size_t, off_t))                                        \
  X(write, ssize_t (*)(int, const void*, size_t))                                         \
  X(pwrite, ssize_t (*)(int, const void*, size_t, off_t))                                 \
  X(readv, ssize_t (*)(int, const struct iovec*, int))                                    \
  X(writev, ssize_t (*)(int, const struct iovec*, int))                                   \
  X(preadv, ssize_t (*)(int, const struct iovec*, int, off_t))                            \
  X(pwritev, ssize_t (*)(int, const struct iovec*, int, off_t))                           \
  X(lseek, off_t (*)(int, off_t, int))                                                    \
  X(fstat, int (*)(int, struct stat*))                                                    \
  X(stat, int (*)(const char*, struct stat*))                                             \
  X(lstat, int (*)(const char*, struct stat*))                                            \
  X(fstatat, int (*)(int, const char*, struct stat*, int))                                \
  X(statx, int (*)(int, const char*, int, unsigned, struct statx*))                       \
  X(__xstat, int (*)(int, const char*, struct stat*))                                     \
  X(__lxstat, int (*)(int, const char*, struct stat*))                                    \
  X(__fxstat, int (*)(int, int, struct stat*))                                            \
  X(__fxstatat, int (*)(int, int, const char*, struct stat*, int))                        \
  X(fsync, int (*)(int))                                                                  \
  X(fdatasync, int (*)(int))                                                              \
  X(ftruncate, int (*)(int, off_t))                                                       \
  X(truncate, int (*)(const char*, off_t))                                                \
  X(posix_fadvise, int (*)(int, off_t, off_t, int))                                       \
  X(unlink, int (*)(const char*))                                                         \
  X(unlinkat, int (*)(int, const char*, int))                                             \
  X(rmdir, int (*)(const char*))                                                          \
  X(rename, int (*)(const char*, const char*))                                            \
  X(renameat, int (*)(int, const char*, int, const char*))                                \
  X(renameat2, int (*)(int, const char*, int, const char*, unsigned))                     \
  X(access, int (*)(const char*, int))                                                    \
  X(faccessat, int (*)(int, const char*, int, int))                                       \
  X(mkdir, int (*)(const char*, mode_t))                                                  \
  X(mkdirat, int (*)(int, const char*, mode_t))                                           \
  X(dup, int (*)(int))                                                                    \
  X(dup2, int (*)(int, int))                                                              \
  X(dup3, int (*)(int, int, int))                                                         \
  X(fcntl, int (*)(int, int, ...))                                                        \
  X(fcntl64, int (*)(int, int, ...))                                                      \
  X(mmap, void* (*)(void*, size_t, int, int, int, off_t))                                 \
  X(copy_file_range, ssize_t (*)(int, off64_t*, int, off64_t*, size_t, unsigned))         \
  X(sendfile, ssize_t (*)(int, int, off_t*, size_t))                                      \
  X(opendir, DIR* (*)(const char*))                                                       \
  X(fdopendir, DIR* (*)(int))                                                             \
  X(readdir, struct dirent* (*)(DIR*))                                                    \
  X(readdir64, struct dirent64* (*)(DIR*))                                                \
  X(closedir, int (*)(DIR*))                                                              \
  X(dirfd, int (*)(DIR*))                                                                 \
  X(rewinddir, void (*)(DIR*))                                                            \
  X(getdents64, ssize_t (*)(int, void*, size_t))                                          \
  X(scandir, int (*)(const char*, struct dirent***, int (*)(const struct dirent*),        \
                     int (*)(const struct dirent**, const struct dirent**)))               \
  X(fopen, FILE* (*)(const char*, const char*))                                           \
  X(fdopen, FILE* (*)(int, const char*))                                                  \
  X(fclose, int (*)(FILE*))                                                               \
  X(getxattr, ssize_t (*)(const char*, const char*, void*, size_t))                       \
  X(lgetxattr, ssize_t (*)(const char*, const char*, void*, size_t))                      \
  X(fgetxattr, ssize_t (*)(int, const char*, void*, size_t))                              \
  X(listxattr, ssize_t (*)(const char*, char*, size_t))                                   \
  X(llistxattr, ssize_t (*)(const char*, char*, size_t))                                  \
  X(flistxattr, ssize_t (*)(int, char*, size_t))                                         \
  X(setxattr, int (*)(const char*, const char*, const void*, size_t, int))                \
  X(lsetxattr, int (*)(const char*, const char*, const void*, size_t, int))               \
  X(fsetxattr, int (*)(int, const char*, const void*, size_t, int))                       \
  X(chmod, int (*)(const char*, mode_t))                                                  \
  X(fchmod, int (*)(int, mode_t))                                                         \
  X(fchmodat, int (*)(int, const char*, mode_t, int))                                     \
  X(chown, int (*)(const char*, uid_t, gid_t))                                            \
  X(lchown, int (*)(const char*, uid_t, gid_t))                                           \
  X(fchown, int (*)(int, uid_t, gid_t))                                                   \
  X(fchownat, int (*)(int, const char*, uid_t, gid_t, int))                               \
  X(utime, int (*)(const char*, const struct utimbuf*))                                   \
  X(utimes, int (*)(const char*, const struct timeval*))                                  \
  X(lutimes, int (*)(const char*, const struct timeval*))                                 \
  X(futimes, int (*)(int, const struct timeval*))                                         \
  X(futimesat, int (*)(int, const char*, const struct timeval*))                          \
  X(futimens, int (*)(int, const struct timespec*))                                       \
  X(utimensat, int (*)(int, const char*, const struct timespec*, int))                    \
  X(mkstemp, int (*)(char*))                                                              \
  X(mkstemp64, int (*)(char*))                                                            \
  X(mkostemp, int (*)(char*, int))                                                        \
  X(mkostemp64, int (*)(char*, int))                                                      \
  X(mkstemps, int (*)(char*, int))                                                        \
  X(mkstemps64, int (*)(char*, int))                                                      \
  X(mkostemps, int (*)(char*, int, int))                                                  \
  X(mkostemps64, int (*)(char*, int, int))                                                \
  X(chdir, int (*)(const char*))                                                          \
  X(fchdir, int (*)(int))                                                                 \
  X(getcwd, char* (*)(char*, size_t))                                                     \
  X(fork, pid_t (*)())                                                                    \
  X(execve, int (*)(const char*, char* const[], char* const[]))                          \
  X(execv, int (*)(const char*, char* const[]))                                           \
  X(execvp, int (*)(const char*, char* const[]))                                          \
  X(execvpe, int (*)(const char*, char* const[], char* const[]))                         \
  X(fexecve, int (*)(int, char* const[], char* const[]))                                  \
  X(execveat, int (*)(int, const char*, char* const[], char* const[], int))              \
  X(posix_spawn, int (*)(pid_t*, const char*, const posix_spawn_file_actions_t*,          \
                         const posix_spawnattr_t*, char* const[], char* const[]))          \
  X(posix_spawnp, int (*)(pid_t*, const char*, const posix_spawn_file_actions_t*,         \
                          const posix_spawnattr_t*, char* const[], char* const[]))         \
  X(system, int (*)(const char*))                                                         \
  X(popen, FILE* (*)(const char*, const char*))

// Pointers are null only where the next object lacks the symbol (then the
// interposer fails with ENOSYS).
struct RealLibc {
#define MEMKV_PRELOAD_DECLARE(name, type) \
  using name##_fn = type;                 \
  name##_fn name;
  MEMKV_PRELOAD_REAL_FUNCTIONS(MEMKV_PRELOAD_DECLARE)
#undef MEMKV_PRELOAD_DECLARE
};

const RealLibc& Real();

}  // namespace memkv::preload

#endif  // MEMKV_PRELOAD_REAL_H_
