// Interposers of the path calls: the stat family, access, unlink, rmdir,
// rename, mkdir and truncate.
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "preload/files.h"
#include "preload/hooks.h"
#include "preload/real.h"

namespace memkv::preload {
namespace {

void ToStatx(const struct stat& st, unsigned mask, struct statx* out) {
  (void)mask;
  memset(out, 0, sizeof *out);
  out->stx_mask = STATX_BASIC_STATS;
  out->stx_blksize = static_cast<uint32_t>(st.st_blksize);
  out->stx_nlink = static_cast<uint32_t>(st.st_nlink);
  out->stx_uid = st.st_uid;
  out->stx_gid = st.st_gid;
  out->stx_mode = static_cast<uint16_t>(st.st_mode);
  out->stx_ino = st.st_ino;
  out->stx_size = static_cast<uint64_t>(st.st_size);
  out->stx_blocks = static_cast<uint64_t>(st.st_blocks);
  out->stx_atime = {st.st_atim.tv_sec, static_cast<uint32_t>(st.st_atim.tv_nsec), 0};
  out->stx_mtime = {st.st_mtim.tv_sec, static_cast<uint32_t>(st.st_mtim.tv_nsec), 0};
  out->stx_ctime = {st.st_ctim.tv_sec, static_cast<uint32_t>(st.st_ctim.tv_nsec), 0};
  out->stx_dev_major = static_cast<uint32_t>(st.st_dev >> 8);
  out->stx_dev_minor = static_cast<uint32_t>(st.st_dev & 0xff);
}

// The parent directory of a key: "" (the root) for a top-level one.
std::string ParentKey(const std::string& key) {
  size_t slash = key.rfind('/');
  return slash == std::string::npos ? std::string() : key.substr(0, slash);
}

// Moves one value: get, put under the new key, delete the old one (three
// operations, not atomic).
int MoveValue(const std::string& from_key, const std::string& to_key) {
  int fd = memfd_create("memkv-rename", MFD_CLOEXEC);
  if (fd < 0) return errno;
  int err = Load(from_key, fd);
  if (err == 0) err = Commit(to_key, fd);
  Real().close(fd);
  if (err == 0) err = Delete(from_key);
  return err;
}

// What the destination of a rename is: 0 nothing, 1 a file, 2 a directory.
int Kind(const std::string& key, int* kind) {
  bool present = false;
  if (int err = Exists(key, &present)) return err;
  if (present) {
    *kind = 1;
    return 0;
  }
  bool is_dir = false;
  if (int err = IsDirectory(key, &is_dir)) return err;
  *kind = is_dir ? 2 : 0;
  return 0;
}

// Renames a directory: every key below it (its marker included) moves, one
// MoveValue each, in key order. Not atomic: a failure part-way leaves the
// keys moved so far under the new name and the rest under the old.
int RenameDirectory(const Target& from, const Target& to, int to_kind, unsigned flags) {
  if (to.key.size() > from.key.size() && to.key.compare(0, from.key.size() + 1, from.key + "/") == 0) {
    return EINVAL;  // into itself
  }
  if (to_kind == 1) return ENOTDIR;
  if (to_kind == 2) {
    if ((flags & RENAME_NOREPLACE) != 0) return EEXIST;
    bool any = false;
    if (int err = HasEntries(to.key, &any)) return err;
    if (any) return ENOTEMPTY;
    int err = Delete(MarkerKey(to.key));  // an empty directory is replaced
    if (err != 0 && err != ENOENT) return err;
  }
  // The old parent stays when this was its last entry (KeepDirectory).
  if (ParentKey(from.key) != ParentKey(to.key)) {
    if (int err = KeepDirectory(ParentKey(from.key))) return err;
  }
  std::vector<std::string> keys;
  if (int err = ListKeys(from.key + "/", &keys)) return err;
  for (const std::string& key : keys) {
    if (int err = MoveValue(key, to.key + key.substr(from.key.size()))) return err;
  }
  return 0;
}

// rename() within the prefixes: of a value, or of a directory and all below.
int RenameTargets(const Target& from, const Target& to, unsigned flags) {
  if (from.key.empty() || to.key.empty()) return EBUSY;
  if (from.key.size() > kMaxKeyBytes || to.key.size() > kMaxKeyBytes) return ENAMETOOLONG;
  int from_kind = 0;
  if (int err = Kind(from.key, &from_kind)) return err;
  if (from_kind == 0) return ENOENT;
  if (from.key == to.key) return 0;
  int to_kind = 0;
  if (int err = Kind(to.key, &to_kind)) return err;
  if (from_kind == 2) return RenameDirectory(from, to, to_kind, flags);
  if (to_kind == 2) return EISDIR;
  if (to_kind == 1 && (flags & RENAME_NOREPLACE) != 0) return EEXIST;
  if (ParentKey(from.key) != ParentKey(to.key)) {
    if (int err = KeepDirectory(ParentKey(from.key))) return err;
  }
  return MoveValue(from.key, to.key);
}

int RenameAt(int old_dirfd, const char* old_path, int new_dirfd, const char* new_path, unsigned flags) {
  Target from;
  Target to;
  bool from_ours = Resolve(old_dirfd, old_path, &from);
  bool to_ours = Resolve(new_dirfd, new_path, &to);
  if (!from_ours && !to_ours) {
    if (flags == 0) return Real().renameat(old_dirfd, old_path, new_dirfd, new_path);
    if (Real().renameat2 == nullptr) return ErrnoResult(ENOSYS, -1);
    return Real().renameat2(old_dirfd, old_path, new_dirfd, new_path, flags);
  }
  if (from_ours != to_ours) return ErrnoResult(EXDEV, -1);
  if ((flags & ~static_cast<unsigned>(RENAME_NOREPLACE)) != 0) return ErrnoResult(EINVAL, -1);
  return ErrnoResult(RenameTargets(from, to, flags));
}

// unlink() and rmdir(). The parent of what is deleted is made explicit
// first (KeepDirectory): a directory stays until rmdir, as on a filesystem,
// even when it was implied by the key deleted here alone.
int UnlinkTarget(const Target& target, bool remove_dir) {
  if (target.key.empty()) return remove_dir ? EBUSY : EISDIR;
  const std::string parent = ParentKey(target.key);
  if (remove_dir) {
    bool any = false;
    bool marked = false;
    if (int err = HasEntries(target.key, &any, &marked)) return err;
    if (any) return ENOTEMPTY;
    if (marked) {
      if (int err = KeepDirectory(parent)) return err;
      return Delete(MarkerKey(target.key));
    }
    bool present = false;
    if (int err = Exists(target.key, &present)) return err;
    return present ? ENOTDIR : ENOENT;
  }
  int err = KeepDirectory(parent);  // ENOENT: no parent, so no file either
  if (err == 0) err = Delete(target.key);
  if (err == ENOENT) {
    bool is_dir = false;
    if (IsDirectory(target.key, &is_dir) == 0 && is_dir) return EISDIR;
  }
  return err;
}

// mkdir() puts the directory's marker (store.h), so that it exists, empty,
// for every process. As on a filesystem, the parent must be a directory.
int MkdirTarget(const Target& target) {
  if (target.key.empty()) return EEXIST;
  if (target.key.size() >= kMaxKeyBytes) return ENAMETOOLONG;
  int kind = 0;
  if (int err = Kind(target.key, &kind)) return err;
  if (kind != 0) return EEXIST;
  std::string parent = ParentKey(target.key);
  if (!parent.empty()) {
    int parent_kind = 0;
    if (int err = Kind(parent, &parent_kind)) return err;
    if (parent_kind != 2) return parent_kind == 1 ? ENOTDIR : ENOENT;
  }
  return PutMarker(target.key);
}

}  // namespace

int StatAt(int dirfd, const char* path, struct stat* st, int flags) {
  if ((flags & AT_EMPTY_PATH) != 0 && path != nullptr && path[0] == '\0') {
    if (std::shared_ptr<File> file = LookupFd(dirfd)) return ErrnoResult(StatFile(*file, dirfd, st));
    return Real().fstatat(dirfd, path, st, flags);
  }
  Target target;
  if (!Resolve(dirfd, path, &target)) return Real().fstatat(dirfd, path, st, flags);
  return ErrnoResult(StatTarget(target, st));
}

int StatxAt(int dirfd, const char* path, int flags, unsigned mask, struct statx* out) {
  struct stat st {};
  if ((flags & AT_EMPTY_PATH) != 0 && path != nullptr && path[0] == '\0') {
    std::shared_ptr<File> file = LookupFd(dirfd);
    if (!file) return Real().statx(dirfd, path, flags, mask, out);
    if (int err = StatFile(*file, dirfd, &st)) return ErrnoResult(err, -1);
  } else {
    Target target;
    if (!Resolve(dirfd, path, &target)) return Real().statx(dirfd, path, flags, mask, out);
    if (int err = StatTarget(target, &st)) return ErrnoResult(err, -1);
  }
  ToStatx(st, mask, out);
  return 0;
}

}  // namespace memkv::preload

using namespace memkv::preload;  // NOLINT: the interposers below are libc's names

MEMKV_PRELOAD_EXPORT int stat(const char* path, struct stat* st) { return StatAt(AT_FDCWD, path, st, 0); }
MEMKV_PRELOAD_EXPORT int stat64(const char* path, struct stat64* st) {
  return StatAt(AT_FDCWD, path, reinterpret_cast<struct stat*>(st), 0);
}
MEMKV_PRELOAD_EXPORT int lstat(const char* path, struct stat* st) {
  return StatAt(AT_FDCWD, path, st, AT_SYMLINK_NOFOLLOW);
}
MEMKV_PRELOAD_EXPORT int lstat64(const char* path, struct stat64* st) {
  return StatAt(AT_FDCWD, path, reinterpret_cast<struct stat*>(st), AT_SYMLINK_NOFOLLOW);
}
MEMKV_PRELOAD_EXPORT int fstatat(int dirfd, const char* path, struct stat* st, int flags) {
  return StatAt(dirfd, path, st, flags);
}
MEMKV_PRELOAD_EXPORT int fstatat64(int dirfd, const char* path, struct stat64* st, int flags) {
  return StatAt(dirfd, path, reinterpret_cast<struct stat*>(st), flags);
}
MEMKV_PRELOAD_EXPORT int __xstat(int ver, const char* path, struct stat* st) {
  Target target;
  if (!Resolve(AT_FDCWD, path, &target)) return Real().__xstat(ver, path, st);
  return ErrnoResult(StatTarget(target, st));
}
MEMKV_PRELOAD_EXPORT int __xstat64(int ver, const char* path, struct stat64* st) {
  return __xstat(ver, path, reinterpret_cast<struct stat*>(st));
}
MEMKV_PRELOAD_EXPORT int __lxstat(int ver, const char* path, struct stat* st) {
  Target target;
  if (!Resolve(AT_FDCWD, path, &target)) return Real().__lxstat(ver, path, st);
  return ErrnoResult(StatTarget(target, st));
}
MEMKV_PRELOAD_EXPORT int __lxstat64(int ver, const char* path, struct stat64* st) {
  return __lxstat(ver, path, reinterpret_cast<struct stat*>(st));
}
MEMKV_PRELOAD_EXPORT int __fxstatat(int ver, int dirfd, const char* path, struct stat* st, int flags) {
  Target target;
  if ((flags & AT_EMPTY_PATH) != 0 || !Resolve(dirfd, path, &target)) {
    return Real().__fxstatat(ver, dirfd, path, st, flags);
  }
  return ErrnoResult(StatTarget(target, st));
}
MEMKV_PRELOAD_EXPORT int __fxstatat64(int ver, int dirfd, const char* path, struct stat64* st, int flags) {
  return __fxstatat(ver, dirfd, path, reinterpret_cast<struct stat*>(st), flags);
}
MEMKV_PRELOAD_EXPORT int statx(int dirfd, const char* path, int flags, unsigned mask, struct statx* out) {
  return StatxAt(dirfd, path, flags, mask, out);
}

MEMKV_PRELOAD_EXPORT int access(const char* path, int mode) {
  Target target;
  if (!Resolve(AT_FDCWD, path, &target)) return Real().access(path, mode);
  return ErrnoResult(TargetExists(target));
}
MEMKV_PRELOAD_EXPORT int faccessat(int dirfd, const char* path, int mode, int flags) {
  Target target;
  if (!Resolve(dirfd, path, &target)) return Real().faccessat(dirfd, path, mode, flags);
  return ErrnoResult(TargetExists(target));
}

MEMKV_PRELOAD_EXPORT int unlink(const char* path) {
  Target target;
  if (!Resolve(AT_FDCWD, path, &target)) return Real().unlink(path);
  return ErrnoResult(UnlinkTarget(target, false));
}
MEMKV_PRELOAD_EXPORT int unlinkat(int dirfd, const char* path, int flags) {
  Target target;
  if (!Resolve(dirfd, path, &target)) return Real().unlinkat(dirfd, path, flags);
  return ErrnoResult(UnlinkTarget(target, (flags & AT_REMOVEDIR) != 0));
}
MEMKV_PRELOAD_EXPORT int rmdir(const char* path) {
  Target target;
  if (!Resolve(AT_FDCWD, path, &target)) return Real().rmdir(path);
  return ErrnoResult(UnlinkTarget(target, true));
}

MEMKV_PRELOAD_EXPORT int rename(const char* old_path, const char* new_path) {
  return RenameAt(AT_FDCWD, old_path, AT_FDCWD, new_path, 0);
}
MEMKV_PRELOAD_EXPORT int renameat(int old_dirfd, const char* old_path, int new_dirfd, const char* new_path) {
  return RenameAt(old_dirfd, old_path, new_dirfd, new_path, 0);
}
MEMKV_PRELOAD_EXPORT int renameat2(int old_dirfd, const char* old_path, int new_dirfd, const char* new_path,
                                   unsigned flags) {
  return RenameAt(old_dirfd, old_path, new_dirfd, new_path, flags);
}

MEMKV_PRELOAD_EXPORT int mkdir(const char* path, mode_t mode) {
  Target target;
  if (!Resolve(AT_FDCWD, path, &target)) return Real().mkdir(path, mode);
  return ErrnoResult(MkdirTarget(target));
}
MEMKV_PRELOAD_EXPORT int mkdirat(int dirfd, const char* path, mode_t mode) {
  Target target;
  if (!Resolve(dirfd, path, &target)) return Real().mkdirat(dirfd, path, mode);
  return ErrnoResult(MkdirTarget(target));
}

MEMKV_PRELOAD_EXPORT int truncate(const char* path, off_t length) {
  Target target;
  if (!Resolve(AT_FDCWD, path, &target)) return Real().truncate(path, length);
  int fd = OpenTarget(target, O_WRONLY);
  if (fd < 0) return -1;
  int result = ftruncate(fd, length);
  int saved = errno;
  int closed = close(fd);
  if (result != 0) errno = saved;
  return result != 0 ? result : closed;
}
MEMKV_PRELOAD_EXPORT int truncate64(const char* path, off_t length) { return truncate(path, length); }
