// Descriptors inherited across exec: a shell's `cmd > /mnt/kv/x` opens the
// file (through the shim, in the shell's child), moves it to fd 1 and execs
// cmd, whose fresh copy of the library has an empty table. At start-up the
// library adopts every inherited memfd named by a shim (files.h), so cmd's
// writes are put at its last close of the file or at its exit, and its reads
// fetch the value if the shell had not.
//
// The table entries made here are the same as OpenTarget's, except that the
// state the previous program kept in memory is recovered from the memfd:
// - access mode: from the name (a memfd's own flags are always O_RDWR);
//   O_APPEND from fcntl(F_GETFL);
// - descriptors of one memfd (same inode) share one File, as dup'd ones do;
// - whether the bytes are the value's: F_SEAL_SEAL. A writable memfd without
//   it was created or truncated and never put: it is put here whatever
//   happens; one with it is put when its content changes from what it is at
//   adoption. A read-only memfd without it is fetched on first use.
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <map>
#include <string>
#include <string_view>

#include "preload/files.h"
#include "preload/real.h"

namespace memkv::preload {
namespace {

// What a shim memfd's name says: "memkv:<index>:<mode>:<key>".
struct MemfdName {
  size_t prefix_index = 0;
  std::string mode;
  std::string key;
};

// Parses readlink(/proc/self/fd/N) of a memfd: "/memfd:NAME (deleted)".
bool ParseMemfdLink(std::string_view link, MemfdName* out) {
  constexpr std::string_view kHead = "/memfd:memkv:";
  constexpr std::string_view kDeleted = " (deleted)";
  if (link.substr(0, kHead.size()) != kHead) return false;
  link.remove_prefix(kHead.size());
  if (link.size() >= kDeleted.size() && link.substr(link.size() - kDeleted.size()) == kDeleted) {
    link.remove_suffix(kDeleted.size());
  }
  size_t colon = link.find(':');
  if (colon == std::string_view::npos) return false;
  auto [end, ec] = std::from_chars(link.data(), link.data() + colon, out->prefix_index);
  if (ec != std::errc() || end != link.data() + colon) return false;
  link.remove_prefix(colon + 1);
  colon = link.find(':');
  if (colon == std::string_view::npos) return false;
  out->mode.assign(link.substr(0, colon));
  out->key.assign(link.substr(colon + 1));
  return true;
}

std::shared_ptr<File> NewAdoptedFile(int fd, const MemfdName& name, const Prefixes& prefixes) {
  auto file = std::make_shared<File>();
  file->key = name.key;
  file->path = prefixes.at(name.prefix_index) + (name.key.empty() ? "" : "/" + name.key);
  file->is_dir = name.mode == "d";
  file->readable = name.mode.find('r') != std::string::npos || file->is_dir;
  file->writable = name.mode.find('w') != std::string::npos;
  int flags = Real().fcntl(fd, F_GETFL);
  file->append = flags >= 0 && (flags & O_APPEND) != 0;
  bool stored = IsStored(fd);
  MutexLock lock(file->mu);  // not shared yet; taken so every access holds it
  if (file->writable) {
    file->loaded = true;
    if (stored) {
      file->has_baseline = TakeBaseline(fd, &file->baseline) == 0;
    }
    file->dirty = !file->has_baseline;
  } else {
    file->loaded = stored;
  }
  return file;
}

void AdoptFd(int fd, std::map<ino_t, std::shared_ptr<File>>* by_inode, const Prefixes& prefixes) {
  char link_path[64];
  char link[PATH_MAX];
  snprintf(link_path, sizeof link_path, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link_path, link, sizeof link);
  if (n <= 0 || static_cast<size_t>(n) >= sizeof link) return;
  MemfdName name;
  if (!ParseMemfdLink(std::string_view(link, static_cast<size_t>(n)), &name)) return;
  if (name.prefix_index >= prefixes.size() || name.mode.find('t') != std::string::npos) {
    LogLine("inherited descriptor " + std::to_string(fd) + " ('" + name.key +
            "') cannot be adopted: its key is cut or its prefix is not in MEMKV_PRELOAD_PREFIX; "
            "this program's reads and writes through it do not reach MemKV");
    return;
  }
  struct stat st {};
  if (Real().fstat(fd, &st) != 0) return;
  auto [it, added] = by_inode->try_emplace(st.st_ino);
  if (added) {
    it->second = NewAdoptedFile(fd, name, prefixes);
  } else {
    it->second->fd_count.fetch_add(1);
  }
  InsertFd(fd, it->second);
}

__attribute__((constructor)) void AdoptInherited() {
  const Prefixes& prefixes = GetPrefixes();
  if (prefixes.empty()) return;
  DIR* dir = Real().opendir("/proc/self/fd");
  if (dir == nullptr) return;
  int own_fd = Real().dirfd(dir);
  std::map<ino_t, std::shared_ptr<File>> by_inode;
  while (struct dirent* entry = Real().readdir(dir)) {
    int fd = 0;
    std::string_view name(entry->d_name);
    auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), fd);
    if (ec != std::errc() || end != name.data() + name.size() || fd == own_fd) continue;
    AdoptFd(fd, &by_inode, prefixes);
  }
  Real().closedir(dir);
}

}  // namespace
}  // namespace memkv::preload
