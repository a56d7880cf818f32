// The shim's descriptors: which fds are MemKV files or directories, and the
// operations on them that more than one interposer needs.
//
// Every shim descriptor is a real one, a memfd holding the file's bytes, so
// dup(), poll(), fork() and the calls the shim does not interpose (mmap after
// a load, splice, lseek's SEEK_DATA) all work on it. A file opened for
// reading is fetched into its memfd on first use (EnsureLoaded); one opened
// for writing is put from its memfd at fsync() and at the close of its last
// descriptor (Commit on a dirty File).
//
// The table maps fd -> File. A lookup of an fd that is not the shim's costs
// one atomic load; the table's mutex is held only to find, add or take an
// entry, never across a MemKV or libc call, so the client's own socket I/O
// (which passes through the interposers) cannot deadlock on it.
#ifndef MEMKV_PRELOAD_FILES_H_
#define MEMKV_PRELOAD_FILES_H_

#include <errno.h>
#include <sys/stat.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "preload/store.h"

namespace memkv::preload {

// One open file description of the shim (dup'd fds share it).
struct File {
  std::string key;   // "" for the root directory
  std::string path;  // absolute, normalized
  bool is_dir = false;
  bool readable = false;
  bool writable = false;
  bool append = false;
  std::atomic<int> fd_count{1};  // table entries pointing here

  std::mutex mu;
  bool loaded = false;  // guarded by mu: the memfd holds the value
  bool dirty = false;   // guarded by mu: to be put at fsync / last close
  std::vector<DirEntry> entries;  // guarded by mu: directories, for getdents64
  size_t next_entry = 0;          // guarded by mu
  bool listed = false;            // guarded by mu
};

// Where a path argument points. Resolve() returns false for paths outside
// every prefix (the caller passes the call through).
struct Target {
  std::string path;  // absolute, normalized
  std::string key;
};
bool Resolve(int dirfd, const char* path, Target* target);

std::shared_ptr<File> LookupFd(int fd);
// Fast check, no lock: whether fd may be the shim's.
bool MaybeShimFd(int fd);
void InsertFd(int fd, std::shared_ptr<File> file);
std::shared_ptr<File> TakeFd(int fd);

// open() of a target: a new shim fd, or -1 with errno set.
int OpenTarget(const Target& target, int flags);
// The shim's part of close(fd) for a file taken from the table: the put of a
// dirty file when fd is its last descriptor. 0 or an errno.
int ReleaseFile(const std::shared_ptr<File>& file, int fd);
// Fetches the value into fd's memfd if not done yet. 0 or an errno.
int EnsureLoaded(File& file, int fd);
// Puts the file if dirty (fsync). 0 or an errno.
int CommitIfDirty(File& file, int fd);
void MarkDirty(File& file);

// stat() of a target: a file (the value's true size), a directory, or an
// errno (ENOENT when neither).
int StatTarget(const Target& target, struct stat* st);
// fstat() of a shim fd.
int StatFile(File& file, int fd, struct stat* st);
// The entries of a directory target (ENOENT/ENOTDIR when it is none).
int ListDirectory(const std::string& key, std::vector<DirEntry>* entries);
// Whether key is a directory: the root, a mkdir()'d one, or one with keys below.
int IsDirectory(const std::string& key, bool* is_dir);

// Sets errno and returns -1 when err is not 0; returns `ok` otherwise.
inline int ErrnoResult(int err, int ok = 0) {
  if (err == 0) return ok;
  errno = err;
  return -1;
}

}  // namespace memkv::preload

#endif  // MEMKV_PRELOAD_FILES_H_
