// Interposers of directory listing: opendir/fdopendir, readdir/readdir64,
// closedir, dirfd, rewinddir, scandir and getdents64. A MemKV directory is
// listed with key listing (ListChildren); its DIR* is a ShimDir, which only
// these interposers ever see.
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <set>

#include "preload/files.h"
#include "preload/hooks.h"
#include "preload/real.h"

namespace memkv::preload {
namespace {

struct ShimDir {
  int fd = -1;  // a shim directory fd (dirfd()), closed by closedir
  std::vector<DirEntry> entries;  // with "." and ".." first
  size_t next = 0;
  struct dirent current {};
};

struct DirRegistry {
  std::atomic<int> count{0};  // open ShimDirs: readdir of real DIRs skips the lock when 0
  Mutex mu;
  std::set<void*> dirs MEMKV_GUARDED_BY(mu);
};

DirRegistry& Registry() {
  static DirRegistry* registry = new DirRegistry();  // never freed
  return *registry;
}

ShimDir* FindDir(DIR* dir) {
  DirRegistry& registry = Registry();
  if (registry.count.load(std::memory_order_acquire) == 0) return nullptr;
  memkv::MutexLock lock(registry.mu);
  return registry.dirs.count(dir) > 0 ? reinterpret_cast<ShimDir*>(dir) : nullptr;
}

void CloseShimFd(int fd) {
  if (std::shared_ptr<File> file = TakeFd(fd)) ReleaseFile(file, fd);
  Real().close(fd);
}

std::vector<DirEntry> WithDots(std::vector<DirEntry> entries) {
  std::vector<DirEntry> all;
  all.reserve(entries.size() + 2);
  all.push_back({".", true});
  all.push_back({"..", true});
  for (DirEntry& entry : entries) {
    if (entry.name.size() <= 255) all.push_back(std::move(entry));  // longer names do not fit a dirent
  }
  return all;
}

// A ShimDir over shim directory fd `fd` (which it then owns), or nullptr
// with errno set.
DIR* NewDir(int fd, const std::string& key) {
  std::vector<DirEntry> entries;
  if (int err = ListDirectory(key, &entries)) {
    errno = err;
    return nullptr;
  }
  auto* dir = new ShimDir();
  dir->fd = fd;
  dir->entries = WithDots(std::move(entries));
  DirRegistry& registry = Registry();
  memkv::MutexLock lock(registry.mu);
  registry.dirs.insert(dir);
  registry.count.fetch_add(1, std::memory_order_release);
  return reinterpret_cast<DIR*>(dir);
}

void FillDirent(const DirEntry& entry, size_t index, struct dirent* out) {
  memset(out, 0, offsetof(struct dirent, d_name));
  out->d_ino = std::hash<std::string>()(entry.name) | 1;
  out->d_off = static_cast<off_t>(index + 1);
  out->d_reclen = sizeof(struct dirent);
  out->d_type = entry.is_dir ? DT_DIR : DT_REG;
  memcpy(out->d_name, entry.name.c_str(), entry.name.size() + 1);
}

}  // namespace
}  // namespace memkv::preload

using namespace memkv::preload;  // NOLINT: the interposers below are libc's names

MEMKV_PRELOAD_EXPORT DIR* opendir(const char* path) {
  Target target;
  if (!Resolve(AT_FDCWD, path, &target)) return Real().opendir(path);
  int fd = OpenTarget(target, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return nullptr;
  DIR* dir = NewDir(fd, target.key);
  if (dir == nullptr) {
    int err = errno;
    CloseShimFd(fd);
    errno = err;
  }
  return dir;
}

MEMKV_PRELOAD_EXPORT DIR* fdopendir(int fd) {
  std::shared_ptr<File> file = LookupFd(fd);
  if (!file) return Real().fdopendir(fd);
  if (!file->is_dir) {
    errno = ENOTDIR;
    return nullptr;
  }
  return NewDir(fd, file->key);
}

MEMKV_PRELOAD_EXPORT struct dirent* readdir(DIR* dirp) {
  ShimDir* dir = FindDir(dirp);
  if (dir == nullptr) return Real().readdir(dirp);
  if (dir->next >= dir->entries.size()) return nullptr;  // end: errno untouched
  FillDirent(dir->entries[dir->next], dir->next, &dir->current);
  ++dir->next;
  return &dir->current;
}

// struct dirent64 and struct dirent are the same layout on 64-bit Linux.
static_assert(sizeof(struct dirent) == sizeof(struct dirent64));
MEMKV_PRELOAD_EXPORT struct dirent64* readdir64(DIR* dirp) {
  if (FindDir(dirp) == nullptr) return Real().readdir64(dirp);
  return reinterpret_cast<struct dirent64*>(readdir(dirp));
}

MEMKV_PRELOAD_EXPORT int closedir(DIR* dirp) {
  ShimDir* dir = FindDir(dirp);
  if (dir == nullptr) return Real().closedir(dirp);
  {
    DirRegistry& registry = Registry();
    memkv::MutexLock lock(registry.mu);
    registry.dirs.erase(dir);
    registry.count.fetch_sub(1, std::memory_order_release);
  }
  CloseShimFd(dir->fd);
  delete dir;
  return 0;
}

MEMKV_PRELOAD_EXPORT int dirfd(DIR* dirp) {
  ShimDir* dir = FindDir(dirp);
  return dir == nullptr ? Real().dirfd(dirp) : dir->fd;
}

MEMKV_PRELOAD_EXPORT void rewinddir(DIR* dirp) {
  ShimDir* dir = FindDir(dirp);
  if (dir == nullptr) {
    Real().rewinddir(dirp);
    return;
  }
  dir->next = 0;
}

MEMKV_PRELOAD_EXPORT int scandir(const char* path, struct dirent*** out, int (*filter)(const struct dirent*),
                                 int (*compare)(const struct dirent**, const struct dirent**)) {
  Target target;
  if (!Resolve(AT_FDCWD, path, &target)) return Real().scandir(path, out, filter, compare);
  std::vector<DirEntry> entries;
  if (int err = ListDirectory(target.key, &entries)) return ErrnoResult(err, -1);
  entries = WithDots(std::move(entries));
  auto** list = static_cast<struct dirent**>(malloc(sizeof(struct dirent*) * (entries.size() + 1)));
  if (list == nullptr) return ErrnoResult(ENOMEM, -1);
  size_t count = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    auto* entry = static_cast<struct dirent*>(malloc(sizeof(struct dirent)));
    if (entry == nullptr) {
      for (size_t j = 0; j < count; ++j) free(list[j]);
      free(list);
      return ErrnoResult(ENOMEM, -1);
    }
    FillDirent(entries[i], i, entry);
    if (filter != nullptr && filter(entry) == 0) {
      free(entry);
      continue;
    }
    list[count++] = entry;
  }
  if (compare != nullptr) {
    qsort(list, count, sizeof(struct dirent*), reinterpret_cast<int (*)(const void*, const void*)>(compare));
  }
  *out = list;
  return static_cast<int>(count);
}
MEMKV_PRELOAD_EXPORT int scandir64(const char* path, struct dirent64*** out, int (*filter)(const struct dirent64*),
                                   int (*compare)(const struct dirent64**, const struct dirent64**)) {
  return scandir(path, reinterpret_cast<struct dirent***>(out), reinterpret_cast<int (*)(const struct dirent*)>(filter),
                 reinterpret_cast<int (*)(const struct dirent**, const struct dirent**)>(compare));
}

MEMKV_PRELOAD_EXPORT ssize_t getdents64(int fd, void* buf, size_t len) {
  std::shared_ptr<File> file = LookupFd(fd);
  if (!file) {
    if (Real().getdents64 == nullptr) return ErrnoResult(ENOSYS, -1);
    return Real().getdents64(fd, buf, len);
  }
  if (!file->is_dir) return ErrnoResult(ENOTDIR, -1);
  memkv::MutexLock lock(file->mu);
  if (!file->listed) {
    std::vector<DirEntry> entries;
    if (int err = ListDirectory(file->key, &entries)) return ErrnoResult(err, -1);
    file->entries = WithDots(std::move(entries));
    file->listed = true;
  }
  size_t used = 0;
  auto* out = static_cast<char*>(buf);
  while (file->next_entry < file->entries.size()) {
    const DirEntry& entry = file->entries[file->next_entry];
    size_t reclen = (offsetof(struct dirent64, d_name) + entry.name.size() + 1 + 7) & ~size_t{7};
    if (used + reclen > len) {
      if (used == 0) return ErrnoResult(EINVAL, -1);
      break;
    }
    auto* record = reinterpret_cast<struct dirent64*>(out + used);
    record->d_ino = std::hash<std::string>()(entry.name) | 1;
    record->d_off = static_cast<off64_t>(file->next_entry + 1);
    record->d_reclen = static_cast<unsigned short>(reclen);
    record->d_type = entry.is_dir ? DT_DIR : DT_REG;
    memcpy(record->d_name, entry.name.c_str(), entry.name.size() + 1);
    used += reclen;
    ++file->next_entry;
  }
  return static_cast<ssize_t>(used);
}
