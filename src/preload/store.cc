#include "preload/store.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <limits>
#include <string_view>
#include <unordered_set>

#include "base/mutex.h"
#include "memkv/memkv.h"
#include "preload/real.h"
#include "preload/stats.h"

namespace memkv::preload {
namespace {

// The process's client. A preload library has no main() to own it, so it
// lives here, built on first use.
struct StoreState {
  Mutex mu;
  memkv_client_t* client MEMKV_GUARDED_BY(mu) = nullptr;
  bool open_failed MEMKV_GUARDED_BY(mu) = false;  // the failure is logged once
};

StoreState& State() {
  static StoreState* state = [] {
    auto* s = new StoreState();  // never freed: used until the process exits
    // pthread_atfork holds the lock across fork(): taken before, released
    // after in parent and child, which the analysis cannot follow.
    pthread_atfork([]() MEMKV_NO_THREAD_SAFETY_ANALYSIS { State().mu.lock(); },
                   []() MEMKV_NO_THREAD_SAFETY_ANALYSIS { State().mu.unlock(); },
                   []() MEMKV_NO_THREAD_SAFETY_ANALYSIS {
                     // The parent's client shares its connections with the
                     // parent: leave it, open a fresh one when needed.
                     StoreState& st = State();
                     st.client = nullptr;
                     st.open_failed = false;
                     st.mu.unlock();
                   });
    return s;
  }();
  return *state;
}

int GetClient(memkv_client_t** out) {
  StoreState& state = State();
  MutexLock lock(state.mu);
  if (state.client == nullptr) {
    memkv_client_t* client = nullptr;
    memkv_status_t status = memkv_client_open_env(&client);
    if (status != MEMKV_OK) {
      if (!state.open_failed) {
        LogLine(std::string("opening the MemKV client from the environment failed: ") + memkv_last_error());
        state.open_failed = true;
      }
      return ErrnoForStatus(status) == ENOENT ? EIO : ErrnoForStatus(status);
    }
    state.client = client;
  }
  *out = state.client;
  return 0;
}

// The errno of a failed call, logging the client's message unless a miss.
int Failed(const char* what, const std::string& key, memkv_status_t status) {
  if (status != MEMKV_NOT_FOUND) {
    LogLine(std::string(what) + " '" + key + "' failed: " + memkv_last_error());
  }
  return ErrnoForStatus(status);
}

// Directories known to have their marker (KeepDirectory in store.h).
struct MarkCache {
  Mutex mu;
  std::unordered_set<std::string> dirs MEMKV_GUARDED_BY(mu);
};

// Past this many directories the cache starts again: knowing fewer costs a
// listing more each, never a wrong answer.
constexpr size_t kMaxKnownMarks = 65536;

MarkCache& Marks() {
  static MarkCache* marks = [] {
    auto* m = new MarkCache();  // never freed: used until the process exits
    // A child keeps what the parent knew (the markers are the server's),
    // and never finds the mutex held by a thread it does not have (held
    // across fork(), which the analysis cannot follow).
    pthread_atfork([]() MEMKV_NO_THREAD_SAFETY_ANALYSIS { Marks().mu.lock(); },
                   []() MEMKV_NO_THREAD_SAFETY_ANALYSIS { Marks().mu.unlock(); },
                   []() MEMKV_NO_THREAD_SAFETY_ANALYSIS { Marks().mu.unlock(); });
    return m;
  }();
  return *marks;
}

void NoteMarked(std::string_view dir_key) {
  if (dir_key.empty()) return;
  MarkCache& marks = Marks();
  MutexLock lock(marks.mu);
  if (marks.dirs.size() >= kMaxKnownMarks) marks.dirs.clear();
  marks.dirs.emplace(dir_key);
}

// The root (which has no marker and never goes), or a directory known to
// have its marker.
bool KnownKept(const std::string& dir_key) {
  if (dir_key.empty()) return true;
  MarkCache& marks = Marks();
  MutexLock lock(marks.mu);
  return marks.dirs.count(dir_key) > 0;
}

void NoteUnmarked(std::string_view dir_key) {
  MarkCache& marks = Marks();
  MutexLock lock(marks.mu);
  marks.dirs.erase(std::string(dir_key));
}

}  // namespace

void LogLine(const std::string& text) {
  std::string line = "memkv_preload: " + text + "\n";
  ssize_t ignored = Real().write(2, line.data(), line.size());
  (void)ignored;
}

int ErrnoForStatus(int status) {
  switch (status) {
    case MEMKV_OK: return 0;
    case MEMKV_NOT_FOUND: return ENOENT;
    case MEMKV_INVALID_ARGUMENT: return EINVAL;
    case MEMKV_DEADLINE_EXCEEDED: return ETIMEDOUT;
    case MEMKV_UNAVAILABLE: return ENOTCONN;
    case MEMKV_AUTH_FAILED: return EACCES;
    case MEMKV_TOO_LARGE: return EFBIG;
    case MEMKV_RESOURCE_EXHAUSTED: return ENOSPC;
    default: return EIO;
  }
}

namespace {

// Maps the first `bytes` of memfd `fd` (mmap flags `map_flags` besides
// MAP_SHARED), gets the value of `key` into the mapping, unmaps it and cuts
// the file to the value (empty when the get failed). Returns an errno when
// mapping or cutting failed, else 0 with the get's outcome in *status.
int GetIntoFile(memkv_client_t* client, const std::string& key, int fd, size_t bytes, int map_flags,
                memkv_status_t* status) {
  void* map = Real().mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | map_flags, fd, 0);
  if (map == MAP_FAILED) {
    int err = errno;
    Real().ftruncate(fd, 0);
    return err;
  }
  size_t len = 0;
  *status = memkv_get(client, key.data(), key.size(), map, bytes, &len);
  munmap(map, bytes);
  if (Real().ftruncate(fd, *status == MEMKV_OK ? static_cast<off_t>(len) : 0) != 0) return errno;
  return 0;
}

// Load with the value's size known: fallocate allocates the memfd's pages in
// one call, MAP_POPULATE maps them all, and the get lands in them without a
// page fault. *fits: false when the value no longer fits `size` (it grew
// since its size was learnt; the memfd is left empty then).
int LoadSized(memkv_client_t* client, const std::string& key, int fd, uint64_t size, bool* fits) {
  *fits = false;
  if (size == 0) {
    char none = 0;  // an empty value needs no pages; a bigger one says so
    size_t len = 0;
    memkv_status_t status = memkv_get(client, key.data(), key.size(), &none, 0, &len);
    if (status == MEMKV_TOO_LARGE) return 0;
    if (status != MEMKV_OK) return Failed("get", key, status);
    *fits = true;
    return 0;
  }
  if (size > static_cast<uint64_t>(std::numeric_limits<off_t>::max()) ||
      size > std::numeric_limits<size_t>::max()) {
    return EFBIG;
  }
  const off_t file_size = static_cast<off_t>(size);
  if (fallocate(fd, 0, 0, file_size) != 0) {
    // A kernel without fallocate on shmem: the pages come with the mapping.
    if (errno != EOPNOTSUPP && errno != ENOSYS) return errno;
    if (Real().ftruncate(fd, file_size) != 0) return errno;
  }
  memkv_status_t status = MEMKV_OK;
  if (int err = GetIntoFile(client, key, fd, static_cast<size_t>(size), MAP_POPULATE, &status); err != 0) return err;
  *fits = status != MEMKV_TOO_LARGE;
  if (status == MEMKV_OK || status == MEMKV_TOO_LARGE) return 0;
  return Failed("get", key, status);
}

// Load from a server that cannot tell a value's size: the memfd is sparse,
// so room for the biggest value such a server keeps costs nothing until
// written, and the get lands in the file's own pages.
int LoadUnsized(memkv_client_t* client, const std::string& key, int fd) {
  if (Real().ftruncate(fd, static_cast<off_t>(kLegacyMaxValueBytes)) != 0) return errno;
  memkv_status_t status = MEMKV_OK;
  if (int err = GetIntoFile(client, key, fd, kLegacyMaxValueBytes, 0, &status); err != 0) return err;
  return status == MEMKV_OK ? 0 : Failed("get", key, status);
}

// How many times Load asks a value's size again when it grew under it.
constexpr int kLoadAttempts = 4;

int LoadValue(const std::string& key, int fd, uint64_t size_hint) {
  memkv_client_t* client = nullptr;
  if (int err = GetClient(&client)) return err;
  uint64_t size = size_hint;
  for (int attempt = 0; attempt < kLoadAttempts; ++attempt) {
    if (size == kUnknownSize) {
      bool present = false;
      if (int err = Probe(key, &present, &size)) return err;
      if (!present) return ENOENT;
      if (size == kUnknownSize) return LoadUnsized(client, key, fd);  // an old server
    }
    bool fits = false;
    if (int err = LoadSized(client, key, fd, size, &fits); err != 0 || fits) return err;
    size = kUnknownSize;  // it grew: ask again
  }
  LogLine("get '" + key + "' failed: the value kept changing size while it was fetched");
  return EAGAIN;
}

int PutValue(const std::string& key, int fd, uint64_t* size_out) {
  memkv_client_t* client = nullptr;
  if (int err = GetClient(&client)) return err;
  struct stat st {};
  if (Real().fstat(fd, &st) != 0) return errno;
  // No limit of the shim's own: the client refuses a value over the
  // server's memory.max_value_size (TooLarge, EFBIG) before sending it.
  const size_t size = static_cast<size_t>(st.st_size);
  *size_out = size;
  void* map = nullptr;
  if (size > 0) {
    map = Real().mmap(nullptr, size, PROT_READ, MAP_SHARED | MAP_POPULATE, fd, 0);
    if (map == MAP_FAILED) return errno;
  }
  memkv_status_t status = memkv_put(client, key.data(), key.size(), map, size);
  if (map != nullptr) munmap(map, size);
  return status == MEMKV_OK ? 0 : Failed("put", key, status);
}

}  // namespace

int Load(const std::string& key, int fd, uint64_t size_hint) {
  int err = LoadValue(key, fd, size_hint);
  struct stat st {};
  CountGet(err == 0 && Real().fstat(fd, &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0, err);
  return err;
}

int GetInto(const std::string& key, void* buf, size_t capacity, size_t* len) {
  memkv_client_t* client = nullptr;
  if (int err = GetClient(&client)) return err;
  memkv_status_t status = memkv_get(client, key.data(), key.size(), buf, capacity, len);
  if (status == MEMKV_TOO_LARGE) return EOVERFLOW;  // not a fetch: the caller loads instead
  int err = status == MEMKV_OK ? 0 : Failed("get", key, status);
  CountGet(err == 0 ? *len : 0, err);
  return err;
}

int Probe(const std::string& key, bool* present, uint64_t* size) {
  memkv_client_t* client = nullptr;
  if (int err = GetClient(&client)) return err;
  *size = kUnknownSize;
  memkv_status_t status = memkv_value_size(client, key.data(), key.size(), size);
  if (status == MEMKV_OK || status == MEMKV_NOT_FOUND) {
    *present = status == MEMKV_OK;
    if (!*present) *size = kUnknownSize;
    return 0;
  }
  // A server older than the Stat opcode: ask only whether it is there.
  if (status == MEMKV_PROTOCOL_ERROR) return Exists(key, present);
  return Failed("size of", key, status);
}

// Counts a put of `bytes` under `key` and notes whether it was stored.
static int Settle(const std::string& key, uint64_t bytes, int err) {
  CountPut(bytes, err);
  if (err == 0) {
    NoteStored(key);
  } else {
    NoteLost(key);
  }
  return err;
}

int Commit(const std::string& key, int fd) {
  uint64_t size = 0;
  int err = PutValue(key, fd, &size);
  return Settle(key, size, err);
}

int CommitBytes(const std::string& key, const void* data, size_t len) {
  memkv_client_t* client = nullptr;
  int err = GetClient(&client);
  if (err == 0) {
    memkv_status_t status = memkv_put(client, key.data(), key.size(), data, len);
    if (status != MEMKV_OK) err = Failed("put", key, status);
  }
  return Settle(key, len, err);
}

int Exists(const std::string& key, bool* present) {
  memkv_client_t* client = nullptr;
  if (int err = GetClient(&client)) return err;
  int found = 0;
  memkv_status_t status = memkv_exists(client, key.data(), key.size(), &found);
  if (status != MEMKV_OK) return Failed("exists", key, status);
  *present = found != 0;
  return 0;
}

int ValueSize(const std::string& key, uint64_t* size) {
  memkv_client_t* client = nullptr;
  if (int err = GetClient(&client)) return err;
  memkv_status_t status = memkv_value_size(client, key.data(), key.size(), size);
  if (status == MEMKV_OK) return 0;
  if (status != MEMKV_PROTOCOL_ERROR) return Failed("size of", key, status);
  // A server older than the Stat opcode: fetch the value to learn its size.
  int fd = memfd_create("memkv-stat", MFD_CLOEXEC);
  if (fd < 0) return errno;
  int err = Load(key, fd);
  struct stat st {};
  if (err == 0 && Real().fstat(fd, &st) != 0) err = errno;
  Real().close(fd);
  if (err == 0) *size = static_cast<uint64_t>(st.st_size);
  return err;
}

int Delete(const std::string& key) {
  memkv_client_t* client = nullptr;
  if (int err = GetClient(&client)) return err;
  memkv_status_t status = memkv_delete(client, key.data(), key.size());
  if (status == MEMKV_OK || status == MEMKV_NOT_FOUND) {
    NoteStored(key);  // nothing more to store
    if (!key.empty() && key.back() == '/') NoteUnmarked(std::string_view(key).substr(0, key.size() - 1));
  }
  return status == MEMKV_OK ? 0 : Failed("delete", key, status);
}

namespace {

// Calls `visit` with each key that starts with `prefix`, in key order, a page
// of `page_size` keys per round trip, until the keys run out or `visit`
// returns false.
template <typename Visit>
int ForEachKey(const std::string& prefix, size_t page_size, Visit visit) {
  memkv_client_t* client = nullptr;
  if (int err = GetClient(&client)) return err;
  std::string cursor;
  do {
    memkv_key_page_t* page = nullptr;
    memkv_status_t status = memkv_list_keys(client, prefix.data(), prefix.size(), cursor.data(), cursor.size(),
                                            page_size, &page);
    if (status != MEMKV_OK) return Failed("list keys under", prefix, status);
    bool more = true;
    for (size_t i = 0; more && i < memkv_key_page_count(page); ++i) {
      size_t len = 0;
      const char* key = static_cast<const char*>(memkv_key_page_key(page, i, &len));
      more = visit(std::string_view(key, len));
    }
    size_t cursor_len = 0;
    const void* next = memkv_key_page_cursor(page, &cursor_len);
    cursor.assign(more ? static_cast<const char*>(next) : "", more ? cursor_len : 0);
    memkv_key_page_free(page);
  } while (!cursor.empty());
  return 0;
}

std::string DirPrefix(const std::string& dir_key) { return dir_key.empty() ? std::string() : dir_key + "/"; }

}  // namespace

int ListChildren(const std::string& dir_key, std::vector<DirEntry>* entries) {
  const std::string prefix = DirPrefix(dir_key);
  std::string last_dir;
  entries->clear();
  int err = ForEachKey(prefix, 1024, [&](std::string_view key) {
    std::string_view rest = key.substr(prefix.size());
    size_t slash = rest.find('/');
    if (slash == std::string_view::npos) {
      if (rest.empty()) {
        NoteMarked(dir_key);  // the marker, not a file
      } else {
        entries->push_back({std::string(rest), false});
      }
    } else if (slash > 0 && rest.substr(0, slash) != last_dir) {
      last_dir = std::string(rest.substr(0, slash));
      entries->push_back({last_dir, true});
    }
    return true;
  });
  if (err != 0) return err;
  // Keys come in key order, which is not name order for directories ("a.b"
  // sorts before "a/x", so the directory "a" after the file "a.b"), and a
  // file and a directory may share a name: sort, and keep one per name.
  std::sort(entries->begin(), entries->end(), [](const DirEntry& a, const DirEntry& b) {
    return a.name != b.name ? a.name < b.name : a.is_dir > b.is_dir;
  });
  entries->erase(std::unique(entries->begin(), entries->end(),
                             [](const DirEntry& a, const DirEntry& b) { return a.name == b.name; }),
                 entries->end());
  return 0;
}

int HasChildren(const std::string& dir_key, bool* any) {
  const std::string prefix = DirPrefix(dir_key);
  *any = false;
  return ForEachKey(prefix, 1, [&](std::string_view key) {
    *any = true;
    if (key.size() == prefix.size()) NoteMarked(dir_key);  // the marker comes first when there is one
    return false;  // one key is enough
  });
}

std::string MarkerKey(const std::string& dir_key) { return dir_key + "/"; }

int PutMarker(const std::string& dir_key) {
  memkv_client_t* client = nullptr;
  int err = GetClient(&client);
  if (err == 0) {
    std::string key = MarkerKey(dir_key);
    memkv_status_t status = memkv_put(client, key.data(), key.size(), nullptr, 0);
    if (status != MEMKV_OK) err = Failed("put", key, status);
  }
  CountPut(0, err);
  if (err == 0) NoteMarked(dir_key);
  return err;
}

int KeepDirectory(const std::string& dir_key) {
  if (KnownKept(dir_key)) return 0;
  bool any = false;
  bool marked = false;
  if (int err = HasEntries(dir_key, &any, &marked)) return err;  // notes the marker
  if (marked) return 0;
  return any ? PutMarker(dir_key) : ENOENT;
}

int ListKeys(const std::string& prefix, std::vector<std::string>* keys) {
  keys->clear();
  return ForEachKey(prefix, 1024, [&](std::string_view key) {
    keys->emplace_back(key);
    return true;
  });
}

int HasEntries(const std::string& dir_key, bool* any, bool* marked) {
  const std::string prefix = DirPrefix(dir_key);
  *any = false;
  if (marked != nullptr) *marked = false;
  // The marker, when there is one, is the first key: the next says enough.
  return ForEachKey(prefix, 2, [&](std::string_view key) {
    *any = key.size() > prefix.size();  // not the marker itself
    if (!*any) {
      NoteMarked(dir_key);
      if (marked != nullptr) *marked = true;
    }
    return !*any;
  });
}

}  // namespace memkv::preload
