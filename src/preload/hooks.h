// Shared by the interposer files (hooks_*.cc): the export attribute and the
// calls one file's interposers make into another's.
#ifndef MEMKV_PRELOAD_HOOKS_H_
#define MEMKV_PRELOAD_HOOKS_H_

#include <stdio.h>
#include <sys/stat.h>

// The library is built with hidden visibility; only the interposed libc
// names are exported.
#define MEMKV_PRELOAD_EXPORT extern "C" __attribute__((visibility("default")))

namespace memkv::preload {

// stat(2) of (dirfd, path), with the shim's answer for paths under a prefix.
// `follow`: stat rather than lstat (the same for MemKV paths).
int StatAt(int dirfd, const char* path, struct stat* st, int flags);
// open(2) of (dirfd, path); a shim fd for paths under a prefix.
int OpenAt(int dirfd, const char* path, int flags, mode_t mode);

}  // namespace memkv::preload

#endif  // MEMKV_PRELOAD_HOOKS_H_
