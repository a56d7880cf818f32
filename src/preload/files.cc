#include "preload/files.h"

#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sys/uio.h>
#include <sys/mman.h>
#include <unistd.h>

#include <stdio.h>
#include <string.h>

#include <algorithm>
#include <string_view>

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
  Mutex mu;
  std::unordered_map<int, std::shared_ptr<File>> files MEMKV_GUARDED_BY(mu);
};

Table& GetTable() {
  static Table* table = [] {
    auto* t = new Table();  // never freed: descriptors live until exit
    for (auto& flag : t->is_shim) flag.store(false, std::memory_order_relaxed);
    // pthread_atfork holds the lock across fork(): taken before, released
    // after in parent and child, which the analysis cannot follow.
    pthread_atfork([]() MEMKV_NO_THREAD_SAFETY_ANALYSIS { GetTable().mu.lock(); },
                   []() MEMKV_NO_THREAD_SAFETY_ANALYSIS { GetTable().mu.unlock(); },
                   []() MEMKV_NO_THREAD_SAFETY_ANALYSIS { GetTable().mu.unlock(); });
    return t;
  }();
  return *table;
}

// The longest memfd name the kernel keeps (NAME_MAX less "memfd:").
constexpr size_t kMaxMemfdName = 249;

// A memfd named for adoption after exec (files.h): "memkv:<index>:<mode>:<key>".
int NewMemfd(const Target& target, const char* mode, int flags) {
  std::string head = "memkv:" + std::to_string(target.prefix_index) + ":" + mode;
  std::string name = head + ":" + target.key;
  if (name.size() > kMaxMemfdName) name = head + "t:" + target.key.substr(0, kMaxMemfdName - head.size() - 2);
  unsigned mfd_flags = MFD_ALLOW_SEALING | ((flags & O_CLOEXEC) != 0 ? MFD_CLOEXEC : 0);
  return memfd_create(name.c_str(), mfd_flags);
}

const char* MemfdMode(int access) {
  switch (access) {
    case O_WRONLY: return "w";
    case O_RDWR: return "rw";
    default: return "r";
  }
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

namespace {

int HashContent(int fd, uint64_t size, size_t* hash) {
  if (size == 0) {
    *hash = std::hash<std::string_view>()(std::string_view());
    return 0;
  }
  void* map = Real().mmap(nullptr, size, PROT_READ, MAP_SHARED | MAP_POPULATE, fd, 0);
  if (map == MAP_FAILED) return errno;
  *hash = std::hash<std::string_view>()(std::string_view(static_cast<const char*>(map), size));
  munmap(map, size);
  return 0;
}

bool SameTime(const struct timespec& a, const struct timespec& b) {
  return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

}  // namespace

// A write moves a memfd's ctime to the kernel's coarse clock (or, on kernels
// with multigrain timestamps, to a finer time once the old one was read, as
// here). When that clock is already past the ctime we read, any later write
// changes it, so the times suffice; otherwise the bytes are hashed (a value
// just fetched or put, within the same tick).
int TakeBaseline(int fd, Baseline* baseline) {
  struct stat st {};
  if (Real().fstat(fd, &st) != 0) return errno;
  struct timespec now {};
  clock_gettime(CLOCK_REALTIME_COARSE, &now);
  baseline->size = static_cast<uint64_t>(st.st_size);
  baseline->mtime = st.st_mtim;
  baseline->ctime = st.st_ctim;
  bool tick_passed = now.tv_sec > st.st_ctim.tv_sec ||
                     (now.tv_sec == st.st_ctim.tv_sec && now.tv_nsec > st.st_ctim.tv_nsec);
  baseline->hashed = !tick_passed;
  return baseline->hashed ? HashContent(fd, baseline->size, &baseline->hash) : 0;
}

bool DiffersFrom(int fd, const Baseline& baseline) {
  struct stat st {};
  if (Real().fstat(fd, &st) != 0) return true;
  if (static_cast<uint64_t>(st.st_size) != baseline.size || !SameTime(st.st_mtim, baseline.mtime) ||
      !SameTime(st.st_ctim, baseline.ctime)) {
    return true;
  }
  if (!baseline.hashed) return false;
  size_t hash = 0;
  return HashContent(fd, baseline.size, &hash) != 0 || hash != baseline.hash;
}

void MarkStored(int fd) { Real().fcntl(fd, F_ADD_SEALS, F_SEAL_SEAL); }

bool IsStored(int fd) {
  int seals = Real().fcntl(fd, F_GET_SEALS);
  return seals >= 0 && (seals & F_SEAL_SEAL) != 0;
}

namespace {

struct CwdState {
  Mutex mu;
  std::string path MEMKV_GUARDED_BY(mu);
};

CwdState& Cwd() {
  static CwdState* cwd = [] {
    auto* c = new CwdState();  // never freed
    // pthread_atfork holds the lock across fork(): taken before, released
    // after in parent and child, which the analysis cannot follow.
    pthread_atfork([]() MEMKV_NO_THREAD_SAFETY_ANALYSIS { Cwd().mu.lock(); },
                   []() MEMKV_NO_THREAD_SAFETY_ANALYSIS { Cwd().mu.unlock(); },
                   []() MEMKV_NO_THREAD_SAFETY_ANALYSIS { Cwd().mu.unlock(); });
    return c;
  }();
  return *cwd;
}

}  // namespace

std::string ShimCwd() {
  CwdState& cwd = Cwd();
  MutexLock lock(cwd.mu);
  return cwd.path;
}

void SetShimCwd(std::string path) {
  CwdState& cwd = Cwd();
  MutexLock lock(cwd.mu);
  cwd.path = std::move(path);
}

namespace {

// Staged writes (files.h). A file stages up to this many bytes; past it the
// staged bytes go to the memfd and the file continues there.
constexpr size_t kMaxStagedBytes = size_t{1} << 30;
// Buffers up to this size go back to the pool at close, at most kPoolBuffers
// of them (a program writing from two threads keeps both warm); bigger ones
// are unmapped.
constexpr size_t kKeepBufferBytes = size_t{64} << 20;
constexpr size_t kPoolBuffers = 2;
// Buffers are sized in steps of kSmallStep below kBigStep, of kBigStep from
// there. No madvise(MADV_HUGEPAGE): with THP's defrag at "madvise", the
// first 16 MiB write into a new buffer took 36 ms (compaction) against 9 ms
// in 4 KiB pages, for 0.2 ms less per later file.
constexpr size_t kSmallStep = size_t{64} << 10;
constexpr size_t kBigStep = size_t{2} << 20;

struct StagePool {
  Mutex mu;
  std::vector<StageBuffer> free MEMKV_GUARDED_BY(mu);
};

StagePool& Pool() {
  static StagePool* pool = [] {
    auto* p = new StagePool();  // never freed: buffers live until exit
    pthread_atfork([]() MEMKV_NO_THREAD_SAFETY_ANALYSIS { Pool().mu.lock(); },
                   []() MEMKV_NO_THREAD_SAFETY_ANALYSIS { Pool().mu.unlock(); },
                   []() MEMKV_NO_THREAD_SAFETY_ANALYSIS { Pool().mu.unlock(); });
    return p;
  }();
  return *pool;
}

// Staging is held off from fork()'s UnstageAll until the fork is done: a
// write staged in between would be missing from the child's memfd.
pthread_rwlock_t fork_gate = PTHREAD_RWLOCK_INITIALIZER;

size_t RoundUpToStep(size_t n) {
  size_t step = n < kBigStep ? kSmallStep : kBigStep;
  return (n + step - 1) / step * step;
}

void FreeBuffer(StageBuffer* buf) {
  if (buf->data != nullptr) munmap(buf->data, buf->cap);
  *buf = StageBuffer{};
}

// Room for `need` bytes in *buf (its first buf->len kept). 0 or an errno.
int Reserve(StageBuffer* buf, size_t need) {
  if (need <= buf->cap) return 0;
  if (buf->data == nullptr) {
    // The pool's biggest buffer: it has the most pages in place already.
    StagePool& pool = Pool();
    {
      MutexLock lock(pool.mu);
      if (!pool.free.empty()) {
        auto best = std::max_element(pool.free.begin(), pool.free.end(),
                                     [](const StageBuffer& a, const StageBuffer& b) { return a.cap < b.cap; });
        *buf = *best;
        pool.free.erase(best);
        buf->len = 0;
      }
    }
    if (need <= buf->cap) return 0;
  }
  size_t cap = RoundUpToStep(std::max(need, buf->cap * 2));
  void* data = nullptr;
  if (buf->data == nullptr) {
    data = Real().mmap(nullptr, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  } else {
    data = mremap(buf->data, buf->cap, cap, MREMAP_MAYMOVE);
  }
  if (data == MAP_FAILED) return errno;
  buf->data = static_cast<char*>(data);
  buf->cap = cap;
  return 0;
}

// Gives a file's buffer back to the pool (or unmaps it).
void ReleaseStage(StageBuffer* buf) {
  if (buf->data == nullptr) return;
  if (buf->cap <= kKeepBufferBytes) {
    StagePool& pool = Pool();
    MutexLock lock(pool.mu);
    if (pool.free.size() < kPoolBuffers) {
      pool.free.push_back(*buf);
      pool.free.back().len = 0;
      *buf = StageBuffer{};
      return;
    }
  }
  FreeBuffer(buf);
}

// The staged bytes into the memfd, staging ended for the file.
int UnstageLocked(File& file, int fd) MEMKV_REQUIRES(file.mu) {
  file.may_stage = false;
  StageBuffer& stage = file.stage;
  if (stage.data == nullptr) return 0;
  size_t done = 0;
  while (done < stage.len) {
    ssize_t n = Real().pwrite(fd, stage.data + done, stage.len - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int err = n < 0 ? errno : EIO;
      file.may_stage = true;  // still staged: the put takes the buffer
      return err;
    }
    done += static_cast<size_t>(n);
  }
  ReleaseStage(&stage);
  if (!file.dirty) {
    // Put already (fsync): the memfd now holds the value.
    MarkStored(fd);
    file.has_baseline = TakeBaseline(fd, &file.baseline) == 0;
    if (!file.has_baseline) file.dirty = true;
  }
  return 0;
}

// Whether something wrote the memfd of a staged file behind the
// interposers: data in it (the staged range has no pages) or another size.
bool StageBypassed(int fd, size_t len) {
  struct stat st {};
  if (Real().fstat(fd, &st) != 0 || static_cast<uint64_t>(st.st_size) != len) return true;
  return Real().lseek(fd, 0, SEEK_DATA) >= 0 || errno != ENXIO;
}

}  // namespace

bool StageWrite(File& file, int fd, const struct iovec* iov, int count, ssize_t* n, int* err) {
  pthread_rwlock_rdlock(&fork_gate);
  bool staged = false;
  {
    MutexLock lock(file.mu);
    size_t total = 0;
    for (int i = 0; i < count; ++i) total += iov[i].iov_len;
    if (file.may_stage) {
      size_t len = file.stage.len;
      if (total > kMaxStagedBytes - len || total > static_cast<size_t>(SSIZE_MAX)) {
        // Big files continue in the memfd (the caller's write then).
        UnstageLocked(file, fd);
      } else if (Reserve(&file.stage, len + total) != 0) {
        UnstageLocked(file, fd);
      } else {
        for (int i = 0; i < count; ++i) {
          if (iov[i].iov_len == 0) continue;
          memcpy(file.stage.data + len, iov[i].iov_base, iov[i].iov_len);
          len += iov[i].iov_len;
        }
        // The memfd keeps the size and offset, without pages.
        if (Real().ftruncate(fd, static_cast<off_t>(len)) != 0 ||
            Real().lseek(fd, static_cast<off_t>(len), SEEK_SET) < 0) {
          *err = errno;
          Real().ftruncate(fd, static_cast<off_t>(file.stage.len));
          Real().lseek(fd, static_cast<off_t>(file.stage.len), SEEK_SET);
        } else {
          file.stage.len = len;
          file.dirty = true;
          *err = 0;
          *n = static_cast<ssize_t>(total);
        }
        staged = true;
      }
    }
  }
  pthread_rwlock_unlock(&fork_gate);
  return staged;
}

int Unstage(File& file, int fd) {
  if (file.is_dir) return 0;
  MutexLock lock(file.mu);
  if (!file.may_stage) return 0;
  return UnstageLocked(file, fd);
}

void UnstageAll() {
  for (auto& [fd, file] : OpenFiles()) {
    if (int err = Unstage(*file, fd)) {
      LogLine("writing the staged bytes of '" + file->key + "' into its descriptor " + std::to_string(fd) +
              " failed: " + strerror(err));
    }
  }
}

void ForkGateClose() { pthread_rwlock_wrlock(&fork_gate); }

void ForkGateOpen(bool in_child) {
  if (in_child) {
    // The child's only thread: a fresh lock rather than an unlock by a
    // thread the lock does not know.
    pthread_rwlock_init(&fork_gate, nullptr);
  } else {
    pthread_rwlock_unlock(&fork_gate);
  }
}

bool Resolve(int dirfd, const char* path, Target* target) {
  const Prefixes& prefixes = GetPrefixes();
  if (prefixes.empty() || path == nullptr) return false;
  std::string base;
  if (path[0] != '/') {
    if (dirfd == AT_FDCWD) {
      base = ShimCwd();
      if (base.empty()) {
        char cwd[PATH_MAX];
        if (Real().getcwd(cwd, sizeof cwd) == nullptr) return false;
        base = cwd;
      }
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
  return prefixes.Match(target->path, &target->key, &target->prefix_index);
}

bool MaybeShimFd(int fd) {
  return fd >= 0 && fd < kMaxShimFds && GetTable().is_shim[fd].load(std::memory_order_acquire);
}

std::shared_ptr<File> LookupFd(int fd) {
  if (!MaybeShimFd(fd)) return nullptr;
  Table& table = GetTable();
  MutexLock lock(table.mu);
  auto it = table.files.find(fd);
  return it == table.files.end() ? nullptr : it->second;
}

void InsertFd(int fd, std::shared_ptr<File> file) {
  Table& table = GetTable();
  MutexLock lock(table.mu);
  table.files[fd] = std::move(file);
  table.is_shim[fd].store(true, std::memory_order_release);
}

std::shared_ptr<File> TakeFd(int fd) {
  if (!MaybeShimFd(fd)) return nullptr;
  Table& table = GetTable();
  MutexLock lock(table.mu);
  auto it = table.files.find(fd);
  if (it == table.files.end()) return nullptr;
  std::shared_ptr<File> file = std::move(it->second);
  table.files.erase(it);
  table.is_shim[fd].store(false, std::memory_order_release);
  return file;
}

std::vector<std::pair<int, std::shared_ptr<File>>> OpenFiles() {
  Table& table = GetTable();
  MutexLock lock(table.mu);
  return {table.files.begin(), table.files.end()};
}

int IsDirectory(const std::string& key, bool* is_dir) {
  if (key.empty()) {
    *is_dir = true;
    return 0;
  }
  return HasChildren(key, is_dir);
}

int TargetExists(const Target& target) {
  if (target.key.empty()) return 0;
  bool present = false;
  if (int err = Exists(target.key, &present)) return err;
  if (present) return 0;
  bool is_dir = false;
  if (int err = IsDirectory(target.key, &is_dir)) return err;
  return is_dir ? 0 : ENOENT;
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
    // A reader learns the size in the same round trip, for its load.
    int err = writable ? Exists(target.key, &exists) : Probe(target.key, &exists, &file->open_size);
    if (err != 0) return ErrnoResult(err, -1);
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
    int fd = NewMemfd(target, "d", flags);
    if (fd < 0) return -1;
    return InstallFd(fd, std::move(file));
  }
  if (checked && exists && (flags & O_CREAT) && (flags & O_EXCL)) return ErrnoResult(EEXIST, -1);
  if (checked && !exists && !(flags & O_CREAT)) return ErrnoResult(ENOENT, -1);

  int fd = NewMemfd(target, MemfdMode(access), flags);
  if (fd < 0) return -1;
  if (writable) {
    MutexLock lock(file->mu);  // not shared yet; taken so every access holds it
    // Written files are whole in the memfd from the start: an existing value
    // opened without O_TRUNC is read first (read-modify-write).
    if (checked && exists && !(flags & O_TRUNC)) {
      int err = Load(target.key, fd);
      // The baseline finds the writes the interposers do not see (stdio's).
      if (err == 0) err = TakeBaseline(fd, &file->baseline);
      if (err != 0) {
        Real().close(fd);
        return ErrnoResult(err, -1);
      }
      MarkStored(fd);
      file->has_baseline = true;
    }
    file->loaded = true;
    // A new or truncated file exists once put, written or not.
    file->dirty = !file->has_baseline;
    // Its writes are staged while it is written sequentially (files.h).
    file->may_stage = file->dirty && access == O_WRONLY && !file->append;
  }
  if (file->append) Real().fcntl(fd, F_SETFL, O_APPEND);
  return InstallFd(fd, std::move(file));
}

int EnsureLoaded(File& file, int fd) {
  if (file.is_dir) return 0;
  MutexLock lock(file.mu);
  if (file.loaded) return 0;
  int err = Load(file.key, fd, file.open_size);
  // A value deleted since open(): the descriptor no longer has data.
  if (err == ENOENT) err = ESTALE;
  if (err == 0) {
    file.loaded = true;
    MarkStored(fd);
  }
  return err;
}

bool ReadWhole(File& file, int fd, void* buf, size_t len, bool moves_offset, ssize_t* n, int* err) {
  if (file.is_dir || !file.readable) return false;
  MutexLock lock(file.mu);
  // Only where the value is known to fit: a get into a buffer too small
  // would move the value for nothing.
  if (file.loaded || file.open_size == kUnknownSize || file.open_size == 0 || file.open_size > len) return false;
  if (moves_offset && Real().lseek(fd, 0, SEEK_CUR) != 0) return false;
  size_t got = 0;
  *err = GetInto(file.key, buf, len, &got);
  if (*err == EOVERFLOW) return false;  // grew past len since open: load as usual
  if (*err == ENOENT) *err = ESTALE;
  if (*err != 0) return true;
  // The memfd stays empty: a program that reads a file whole and closes it
  // (the common case) never needs its pages. Reads at the end find EOF
  // (AtEndOfUnloaded); anything else fetches the value then (EnsureLoaded).
  if (moves_offset && Real().lseek(fd, static_cast<off_t>(got), SEEK_SET) < 0) {
    *err = errno;
    return true;
  }
  file.read_into_caller = true;
  file.open_size = got;
  *n = static_cast<ssize_t>(got);
  return true;
}

bool AtEndOfUnloaded(File& file, int fd, off_t offset) {
  if (file.is_dir) return false;
  MutexLock lock(file.mu);
  if (file.loaded || !file.read_into_caller) return false;
  if (offset < 0) offset = Real().lseek(fd, 0, SEEK_CUR);
  return offset >= 0 && static_cast<uint64_t>(offset) >= file.open_size;
}

void MarkDirty(File& file) {
  MutexLock lock(file.mu);
  file.dirty = true;
}

int CommitIfDirty(File& file, int fd, bool stays_open) {
  if (!file.writable) return 0;
  MutexLock lock(file.mu);
  if (file.stage.data != nullptr && StageBypassed(fd, file.stage.len)) {
    // Written behind the interposers: the staged bytes under those writes,
    // and the memfd is put.
    if (int err = UnstageLocked(file, fd)) return err;
    file.dirty = true;
  }
  if (!file.dirty && file.has_baseline) file.dirty = DiffersFrom(fd, file.baseline);
  if (!file.dirty) {
    if (!stays_open) ReleaseStage(&file.stage);
    return 0;
  }
  if (file.stage.data != nullptr) {
    int err = CommitBytes(file.key, file.stage.data, file.stage.len);
    if (!stays_open) {
      file.may_stage = false;
      ReleaseStage(&file.stage);
    }
    if (err != 0) return err;
    // The memfd does not hold the bytes: no seal, no baseline (a bypassing
    // write shows as StageBypassed); Unstage seals it.
    file.dirty = false;
    return 0;
  }
  if (file.may_stage && !stays_open) file.may_stage = false;
  int err = Commit(file.key, fd);
  if (err != 0) return err;
  file.dirty = false;
  MarkStored(fd);
  file.has_baseline = stays_open && TakeBaseline(fd, &file.baseline) == 0;
  // Without a baseline the file must be put again at the next chance.
  if (stays_open && !file.has_baseline) file.dirty = true;
  return 0;
}

int ReleaseFile(const std::shared_ptr<File>& file, int fd) {
  if (file->fd_count.fetch_sub(1) != 1) return 0;
  return CommitIfDirty(*file, fd, /*stays_open=*/false);
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
