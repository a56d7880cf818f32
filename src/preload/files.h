// The shim's descriptors: which fds are MemKV files or directories, and the
// operations on them that more than one interposer needs.
//
// Every shim descriptor is a real one, a memfd holding the file's bytes, so
// dup(), poll(), fork() and the calls the shim does not interpose (mmap after
// a load, splice, lseek's SEEK_DATA) all work on it. A file opened for
// reading is fetched into its memfd on first use (EnsureLoaded, or ReadWhole
// for a first read that takes the whole value); one opened
// for writing is put from its memfd at fsync() and at the close of its last
// descriptor (Commit on a dirty File).
//
// Writes that bypass the interposers (stdio's, which call libc's internal
// write; those of a program that inherited the descriptor across exec) are
// found by comparison: a writable File not known to be dirty keeps a Baseline
// of the bytes MemKV holds and is put when the memfd differs from it.
//
// Staged writes: a file opened write-only, new or truncated (O_TRUNC or
// created), not O_APPEND, keeps the bytes of its sequential write() and
// writev() calls in a staging buffer instead of its memfd, and is put
// straight from that buffer at fsync() and at close. The buffers come from a
// small per-process pool and go back to it at close with their pages still
// allocated, so a program writing file after file does not allocate, fill
// and free a memfd's shmem pages per file (docs/preload.md, "Figures"). The
// memfd keeps the file's size and offset (ftruncate and lseek after each
// staged write) without its pages: fstat, lseek and writes that bypass the
// interposers see the right size and offset. Any other use of the
// descriptor (pwrite, lseek that moves, ftruncate, dup, fcntl, mmap, the copy
// calls, fdopen) first writes the staged bytes into the memfd and ends
// staging for the file (Unstage); so do fork(), the exec calls, posix_spawn,
// system() and popen() for every staged file (UnstageAll), so that a child
// or a new program sees the bytes in the memfd. A write that bypassed the
// interposers while the file was staged shows as data in the memfd (the
// staged range has no pages) or a size other than the staged one; the
// commit then writes the staged bytes under it and puts the memfd.
//
// Each memfd is named "memkv:<prefix index>:<mode>:<key>" (mode: d, r, w, rw;
// a trailing t when the key was cut to fit the name) so that a program
// started by exec() can adopt the descriptors it inherits (inherit.cc). The
// memfd carries F_SEAL_SEAL once its bytes are those of the value (fetched or
// put): an inherited writable memfd without it was never put and must be.
//
// The table maps fd -> File. A lookup of an fd that is not the shim's costs
// one atomic load; the table's mutex is held only to find, add or take an
// entry, never across a MemKV or libc call, so the client's own socket I/O
// (which passes through the interposers) cannot deadlock on it.
#ifndef MEMKV_PRELOAD_FILES_H_
#define MEMKV_PRELOAD_FILES_H_

#include <errno.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>

#include <atomic>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/mutex.h"
#include "preload/paths.h"
#include "preload/store.h"

namespace memkv::preload {

// What a memfd held when it matched the value: its size and times, and a hash
// of its bytes when the times cannot tell a later write apart (it was taken
// within the clock tick of the last change; see Take in files.cc).
struct Baseline {
  uint64_t size = 0;
  struct timespec mtime {};
  struct timespec ctime {};
  bool hashed = false;
  size_t hash = 0;
};

// A staging buffer (Staged writes above): `len` bytes of the file at `data`,
// room for `cap`. Only [0, len) is ever read: the pool's buffers keep the
// bytes of earlier files beyond it.
struct StageBuffer {
  char* data = nullptr;
  size_t cap = 0;
  size_t len = 0;
};

// One open file description of the shim (dup'd fds share it).
struct File {
  std::string key;   // "" for the root directory
  std::string path;  // absolute, normalized
  bool is_dir = false;
  bool readable = false;
  bool writable = false;
  bool append = false;
  std::atomic<int> fd_count{1};  // table entries pointing here

  Mutex mu;
  bool loaded MEMKV_GUARDED_BY(mu) = false;  // the memfd holds the value
  // The value's size when opened for reading (kUnknownSize when the server
  // could not tell), a hint for the load.
  uint64_t open_size MEMKV_GUARDED_BY(mu) = kUnknownSize;
  // The value went whole into a caller's buffer by the first read
  // (ReadWhole) and the memfd was left empty, its offset at the end; reads
  // there find the end of file, any other use fetches the value.
  bool read_into_caller MEMKV_GUARDED_BY(mu) = false;
  bool dirty MEMKV_GUARDED_BY(mu) = false;  // to be put at fsync / last close
  // A writable file's content as MemKV holds it, to find writes the
  // interposers did not see.
  bool has_baseline MEMKV_GUARDED_BY(mu) = false;
  Baseline baseline MEMKV_GUARDED_BY(mu);
  std::vector<DirEntry> entries MEMKV_GUARDED_BY(mu);  // directories, for getdents64
  size_t next_entry MEMKV_GUARDED_BY(mu) = 0;
  bool listed MEMKV_GUARDED_BY(mu) = false;
  // Whether write() may still stage (Staged writes above); false once the
  // file was unstaged.
  bool may_stage MEMKV_GUARDED_BY(mu) = false;
  StageBuffer stage MEMKV_GUARDED_BY(mu);  // data is null while none is held
};

// Where a path argument points. Resolve() returns false for paths outside
// every prefix (the caller passes the call through).
struct Target {
  std::string path;  // absolute, normalized
  std::string key;
  size_t prefix_index = 0;  // which MEMKV_PRELOAD_PREFIX entry it lies below
};
bool Resolve(int dirfd, const char* path, Target* target);

// The working directory of a process that chdir()'d into a prefix, where
// the kernel's cannot follow (the prefix need not exist on disk): relative
// paths and getcwd() use it, and the kernel's stays where it was. "" while
// the kernel's is the working directory. Per process, inherited by fork();
// a program started by exec() starts in the kernel's.
std::string ShimCwd();
void SetShimCwd(std::string path);

std::shared_ptr<File> LookupFd(int fd);
// Fast check, no lock: whether fd may be the shim's.
bool MaybeShimFd(int fd);
void InsertFd(int fd, std::shared_ptr<File> file);
std::shared_ptr<File> TakeFd(int fd);
// Every shim descriptor and its file, as the table holds them now.
std::vector<std::pair<int, std::shared_ptr<File>>> OpenFiles();

// open() of a target: a new shim fd, or -1 with errno set.
int OpenTarget(const Target& target, int flags);
// The shim's part of close(fd) for a file taken from the table: the put of a
// dirty file when fd is its last descriptor. 0 or an errno.
int ReleaseFile(const std::shared_ptr<File>& file, int fd);
// Fetches the value into fd's memfd if not done yet. 0 or an errno.
int EnsureLoaded(File& file, int fd);
// The first read of a file not loaded yet, at offset 0 (read() at file
// offset 0, `moves_offset`; pread() at 0), into a buffer that holds the whole
// value: the value is got straight into `buf`, and the memfd stays empty (no
// pages to allocate, fill and free) with read()'s offset moved to the end.
// *n: the bytes read. Returns false, having done nothing, where that does not
// apply (the caller then loads and reads as usual); true with *err set
// otherwise.
bool ReadWhole(File& file, int fd, void* buf, size_t len, bool moves_offset, ssize_t* n, int* err);
// After ReadWhole: whether a read at `offset` (-1: the descriptor's) is at or
// past the end of the value, so that it returns 0 without fetching it again.
bool AtEndOfUnloaded(File& file, int fd, off_t offset = -1);
// Puts the file if dirty or changed since its baseline. `stays_open`: the
// descriptor is used afterwards (fsync), so the put content becomes the new
// baseline; at the last close and at exit no baseline is taken. 0 or an errno.
int CommitIfDirty(File& file, int fd, bool stays_open = true);
void MarkDirty(File& file);

// write()/writev() of a file that stages (Staged writes above): the bytes go
// to its staging buffer. Returns false, having done nothing, where the file
// does not stage (the caller writes the memfd as usual); true with *n (the
// bytes taken) or *err set otherwise.
bool StageWrite(File& file, int fd, const struct iovec* iov, int count, ssize_t* n, int* err);
// Ends staging for the file: its staged bytes are written into its memfd. 0
// or an errno (the bytes stay staged then).
int Unstage(File& file, int fd);
// Unstage for every file of the process (fork, exec, spawn).
void UnstageAll();
// Holds staging off across fork(): from before UnstageAll to after the fork
// (ForkGateOpen in parent and child).
void ForkGateClose();
void ForkGateOpen(bool in_child);

// The baseline of fd's memfd now. 0 or an errno.
int TakeBaseline(int fd, Baseline* baseline);
// Whether fd's memfd differs from `baseline` (true when that cannot be told).
bool DiffersFrom(int fd, const Baseline& baseline);
// Marks fd's memfd as holding the value's bytes (F_SEAL_SEAL; see above).
void MarkStored(int fd);
// Whether fd's memfd is so marked.
bool IsStored(int fd);
// The prefix list of MEMKV_PRELOAD_PREFIX (built once).
const Prefixes& GetPrefixes();

// stat() of a target: a file (the value's true size), a directory, or an
// errno (ENOENT when neither).
int StatTarget(const Target& target, struct stat* st);
// fstat() of a shim fd.
int StatFile(File& file, int fd, struct stat* st);
// The entries of a directory target (ENOENT/ENOTDIR when it is none).
int ListDirectory(const std::string& key, std::vector<DirEntry>* entries);
// Whether key is a directory: the root, or one with keys (its marker among
// them) below.
int IsDirectory(const std::string& key, bool* is_dir);
// 0 when the target is a file or a directory, ENOENT when neither.
int TargetExists(const Target& target);

// Sets errno and returns -1 when err is not 0; returns `ok` otherwise.
inline int ErrnoResult(int err, int ok = 0) {
  if (err == 0) return ok;
  errno = err;
  return -1;
}

}  // namespace memkv::preload

#endif  // MEMKV_PRELOAD_FILES_H_
