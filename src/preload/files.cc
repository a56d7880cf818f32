#include "preload/files.h"

#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <string.h>

#include <unordered_map>

#include "preload/paths.h"
#include "preload/real.h"

namespace memkv::preload {
namespace {

// Descriptors at or above this are never the shim's (OpenTarget refuses
// them with EMFILE), which keeps MaybeShimFd a single array load.
constexpr int kMaxShimFds = 1 << 16;

struct Table {
  std::atomic<bool> is_shim[kMaxShimFds];
  std::mutex mu;
  std::unordered_map<int, std::shared_ptr<File>> files;  // guarded by mu
};

Table& GetTable() {
  static Table* table = [] {
    auto* t = new Table();  // never freed: descriptors live until exit
    for (auto& flag : t->is_shim) flag.store(false, std::memory_order_relaxed);
    pthread_atfork([] { GetTable().mu.lock(); }, [] { GetTable().mu.unlock(); },
                   [] { GetTable().mu.unlock(); });
    return t;
  }();
  return *table;
}

const Prefixes& GetPrefixes() {
  static const Prefixes* prefixes = [] {
    const char* spec = getenv("MEMKV_PRELOAD_PREFIX");
    std::vector<std::string> rejected;
    auto* p = new Prefixes(Prefixes::Parse(spec != nullptr ? spec : "", &rejected));
    for (const std::string& entry : rejected) {
      LogLine("MEMKV_PRELOAD_PREFIX entry '" + entry + "' ignored: it must be an absolute directory other than /");
    }
    return p;
  }();
  return *prefixes;
}

int NewMemfd(const std::string& key, int flags) {
  std::string name = "memkv:" + key.substr(0, 200);
  return memfd_create(name.c_str(), (flags & O_CLOEXEC) != 0 ? MFD_CLOEXEC : 0);
}

int InstallFd(int fd, std::shared_ptr<File> file) {
  if (fd >= kMaxShimFds) {
    Real().close(fd);
    errno = EMFILE;
    return -1;
  }
  InsertFd(fd, std::move(file));
  return fd;
}

void FillCommon(struct stat* st) {
  *st = {};
  st->st_uid = getuid();
  st->st_gid = getgid();
  st->st_blksize = 1 << 20;
  st->st_dev = 0x4d4b56;  // "MKV": one device for every shim file
}

void FillDirectory(const std::string& key, struct stat* st) {
  FillCommon(st);
  st->st_mode = S_IFDIR | 0755;
  st->st_nlink = 2;
  st->st_ino = std::hash<std::string>()("d" + key) | 1;
}

void FillFile(const std::string& key, uint64_t size, struct stat* st) {
  FillCommon(st);
  st->st_mode = S_IFREG | 0644;
  st->st_nlink = 1;
  st->st_size = static_cast<off_t>(size);
  st->st_blocks = static_cast<blkcnt_t>((size + 511) / 512);
  st->st_ino = std::hash<std::string>()("f" + key) | 1;
}

}  // namespace

bool Resolve(int dirfd, const char* path, Target* target) {
  const Prefixes& prefixes = GetPrefixes();
  if (prefixes.empty() || path == nullptr) return false;
  std::string base;
  if (path[0] != '/') {
    if (dirfd == AT_FDCWD) {
      char cwd[PATH_MAX];
      if (getcwd(cwd, sizeof cwd) == nullptr) return false;
      base = cwd;
    } else if (std::shared_ptr<File> dir = LookupFd(dirfd)) {
      base = dir->path;
    } else {
      char link[64];
      char resolved[PATH_MAX];
      snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
      ssize_t n = readlink(link, resolved, sizeof resolved - 1);
      if (n <= 0 || resolved[0] != '/') return false;
      base.assign(resolved, static_cast<size_t>(n));
    }
  }
  target->path = NormalizePath(path, base);
  return prefixes.Match(target->path, &target->key);
}

bool MaybeShimFd(int fd) {
  return fd >= 0 && fd < kMaxShimFds && GetTable().is_shim[fd].load(std::memory_order_acquire);
}

std::shared_ptr<File> LookupFd(int fd) {
  if (!MaybeShimFd(fd)) return nullptr;
  Table& table = GetTable();
  std::lock_guard<std::mutex> lock(table.mu);
  auto it = table.files.find(fd);
  return it == table.files.end() ? nullptr : it->second;
}

void InsertFd(int fd, std::shared_ptr<File> file) {
  Table& table = GetTable();
  std::lock_guard<std::mutex> lock(table.mu);
  table.files[fd] = std::move(file);
  table.is_shim[fd].store(true, std::memory_order_release);
}

std::shared_ptr<File> TakeFd(int fd) {
  if (!MaybeShimFd(fd)) return nullptr;
  Table& table = GetTable();
  std::lock_guard<std::mutex> lock(table.mu);
  auto it = table.files.find(fd);
  if (it == table.files.end()) return nullptr;
  std::shared_ptr<File> file = std::move(it->second);
  table.files.erase(it);
  table.is_shim[fd].store(false, std::memory_order_release);
  return file;
}

int IsDirectory(const std::string& key, bool* is_dir) {
  if (key.empty() || RememberedDirectory(key)) {
    *is_dir = true;
    return 0;
  }
  return HasChildren(key, is_dir);
}

int OpenTarget(const Target& target, int flags) {
  if (target.key.size() > kMaxKeyBytes) return ErrnoResult(ENAMETOOLONG, -1);
  int access = flags & O_ACCMODE;
  bool writable = access == O_WRONLY || access == O_RDWR;
  auto file = std::make_shared<File>();
  file->key = target.key;
  file->path = target.path;
  file->readable = access == O_RDONLY || access == O_RDWR;
  file->writable = writable;
  file->append = (flags & O_APPEND) != 0;

  bool want_dir = (flags & O_DIRECTORY) != 0 || target.key.empty();
  bool exists = false;
  bool checked = false;
  if (!want_dir && !(writable && (flags & O_CREAT) && (flags & O_TRUNC) && !(flags & O_EXCL))) {
    if (int err = Exists(target.key, &exists)) return ErrnoResult(err, -1);
    checked = true;
  }
  if (!want_dir && checked && !exists && !writable) {
    // Not a value: maybe a directory opened without O_DIRECTORY.
    bool is_dir = false;
    if (int err = IsDirectory(target.key, &is_dir)) return ErrnoResult(err, -1);
    if (!is_dir) return ErrnoResult(ENOENT, -1);
    want_dir = true;
  }
  if (want_dir) {
    if (!target.key.empty()) {
      bool is_dir = false;
      if (int err = IsDirectory(target.key, &is_dir)) return ErrnoResult(err, -1);
      if (!is_dir) {
        bool present = false;
        if (int err = Exists(target.key, &present)) return ErrnoResult(err, -1);
        return ErrnoResult(present ? ENOTDIR : ENOENT, -1);
      }
    }
    if (writable) return ErrnoResult(EISDIR, -1);
    file->is_dir = true;
    int fd = NewMemfd(target.key, flags);
    if (fd < 0) return -1;
    return InstallFd(fd, std::move(file));
  }
  if (checked && exists && (flags & O_CREAT) && (flags & O_EXCL)) return ErrnoResult(EEXIST, -1);
  if (checked && !exists && !(flags & O_CREAT)) return ErrnoResult(ENOENT, -1);

  int fd = NewMemfd(target.key, flags);
  if (fd < 0) return -1;
  if (writable) {
    // Written files are whole in the memfd from the start: an existing value
    // opened without O_TRUNC is read first (read-modify-write).
    if (checked && exists && !(flags & O_TRUNC)) {
      if (int err = Load(target.key, fd)) {
        Real().close(fd);
        return ErrnoResult(err, -1);
      }
    }
    file->loaded = true;
    file->dirty = (flags & (O_TRUNC | O_CREAT)) != 0 && !(checked && exists && !(flags & O_TRUNC));
  }
  if (file->append) Real().fcntl(fd, F_SETFL, O_APPEND);
  return InstallFd(fd, std::move(file));
}

int EnsureLoaded(File& file, int fd) {
  if (file.is_dir) return 0;
  std::lock_guard<std::mutex> lock(file.mu);
  if (file.loaded) return 0;
  int err = Load(file.key, fd);
  // A value deleted since open(): the descriptor no longer has data.
  if (err == ENOENT) err = ESTALE;
  if (err == 0) file.loaded = true;
  return err;
}

void MarkDirty(File& file) {
  std::lock_guard<std::mutex> lock(file.mu);
  file.dirty = true;
}

int CommitIfDirty(File& file, int fd) {
  if (!file.writable) return 0;
  std::lock_guard<std::mutex> lock(file.mu);
  if (!file.dirty) return 0;
  int err = Commit(file.key, fd);
  if (err == 0) file.dirty = false;
  return err;
}

int ReleaseFile(const std::shared_ptr<File>& file, int fd) {
  if (file->fd_count.fetch_sub(1) != 1) return 0;
  return CommitIfDirty(*file, fd);
}

int StatFile(File& file, int fd, struct stat* st) {
  if (file.is_dir) {
    FillDirectory(file.key, st);
    return 0;
  }
  if (int err = EnsureLoaded(file, fd)) return err;
  struct stat real {};
  if (Real().fstat(fd, &real) != 0) return errno;
  FillFile(file.key, static_cast<uint64_t>(real.st_size), st);
  st->st_mtim = real.st_mtim;
  st->st_ctim = real.st_ctim;
  st->st_atim = real.st_atim;
  return 0;
}

int StatTarget(const Target& target, struct stat* st) {
  if (target.key.size() > kMaxKeyBytes) return ENAMETOOLONG;
  if (!target.key.empty()) {
    bool present = false;
    if (int err = Exists(target.key, &present)) return err;
    if (present) {
      uint64_t size = 0;
      int err = ValueSize(target.key, &size);
      if (err != 0) return err;
      FillFile(target.key, size, st);
      return 0;
    }
  }
  bool is_dir = false;
  if (int err = IsDirectory(target.key, &is_dir)) return err;
  if (!is_dir) return ENOENT;
  FillDirectory(target.key, st);
  return 0;
}

int ListDirectory(const std::string& key, std::vector<DirEntry>* entries) {
  bool is_dir = false;
  if (int err = IsDirectory(key, &is_dir)) return err;
  if (!is_dir) {
    bool present = false;
    if (int err = Exists(key, &present)) return err;
    return present ? ENOTDIR : ENOENT;
  }
  return ListChildren(key, entries);
}

}  // namespace memkv::preload

namespace memkv::preload {
namespace {

// A program that exits with files still open for writing: put them, as the
// kernel would have kept their bytes. (stdio buffers are flushed after this
// runs: a FILE must be fclose'd.)
__attribute__((destructor)) void CommitAtExit() {
  std::vector<std::pair<int, std::shared_ptr<File>>> open_files;
  {
    Table& table = GetTable();
    std::lock_guard<std::mutex> lock(table.mu);
    open_files.assign(table.files.begin(), table.files.end());
  }
  for (auto& [fd, file] : open_files) {
    if (int err = CommitIfDirty(*file, fd)) {
      LogLine("put of '" + file->key + "' at exit failed: " + strerror(err));
    }
  }
}

}  // namespace
}  // namespace memkv::preload
