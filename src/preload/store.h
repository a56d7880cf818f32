// The MemKV side of the shim: one client per process, opened lazily from the
// environment (memkv_client_open_env: MEMKV_CONFIG, MEMKV_SERVERS,
// MEMKV_AUTH_KEY, ...) on the first operation that needs it, and every
// operation as an errno value (0 is success).
//
// Values move between MemKV and a descriptor's memfd without an extra copy:
// Load gets straight into a shared mapping of the memfd, Commit puts straight
// from one. All functions are thread-safe; none calls an interposed function
// except through Real(). After fork() the child opens its own client.
#ifndef MEMKV_PRELOAD_STORE_H_
#define MEMKV_PRELOAD_STORE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace memkv::preload {

// The shim has no value limit of its own: a put bigger than the server's
// memory.max_value_size (announced at Connect, applied by the client) fails
// with TooLarge, EFBIG here, at the fsync or close that puts it. Writes are
// refused (EFBIG) only past the largest value any server takes, the 64 GiB
// ceiling of memory.max_value_size and of a TCP frame.
inline constexpr uint64_t kMaxValueCeilingBytes = uint64_t{64} << 30;
// The fixed limit of servers older than memory.max_value_size: the room a
// load makes when the server cannot tell a value's size (no Stat opcode).
inline constexpr uint64_t kLegacyMaxValueBytes = uint64_t{256} << 20;
// Keys are at most this long.
inline constexpr size_t kMaxKeyBytes = 1024;

// The errno of a memkv_status_t (MEMKV_NOT_FOUND: ENOENT, ...).
int ErrnoForStatus(int status);

// A value size that is not known.
inline constexpr uint64_t kUnknownSize = ~uint64_t{0};

// The value of `key` into `fd` (an empty memfd), which ends up exactly the
// value's size. ENOENT on a miss. The value's size (`size_hint`, from Probe,
// or asked here) sizes the memfd: its pages are allocated in one call and
// mapped before the get, instead of faulted in one page at a time; a value
// that grew past it since is asked for again. Only a server that cannot tell
// sizes (older than the Stat opcode, so its values are at most
// kLegacyMaxValueBytes) gets a sparse memfd of that size.
int Load(const std::string& key, int fd, uint64_t size_hint = kUnknownSize);
// The value of `key` straight into `buf` (capacity `capacity`), *len set to
// its size. ENOENT on a miss, EOVERFLOW when buf is too small (nothing is
// then known of the value).
int GetInto(const std::string& key, void* buf, size_t capacity, size_t* len);
// Whether `key` has a value and, where the server can tell without sending
// the value, its size (*size is kUnknownSize otherwise): one round trip.
int Probe(const std::string& key, bool* present, uint64_t* size);
// The whole content of `fd` as the value of `key` (EFBIG when the server's
// value limit refuses it).
int Commit(const std::string& key, int fd);
// The `len` bytes at `data` as the value of `key`: the put of a file whose
// writes are staged (files.h, "Staged writes"), straight from the buffer.
int CommitBytes(const std::string& key, const void* data, size_t len);
// *present: whether `key` has a value.
int Exists(const std::string& key, bool* present);
// The size of the value of `key`, without its bytes (memkv_value_size; a
// server older than that call makes it fetch the value).
int ValueSize(const std::string& key, uint64_t* size);
int Delete(const std::string& key);

struct DirEntry {
  std::string name;
  bool is_dir = false;
};
// The immediate children of directory `dir_key` ("" is the root): a key
// dir_key/name is a file, a key dir_key/name/... makes `name` a directory.
// Sorted by name, each once.
int ListChildren(const std::string& dir_key, std::vector<DirEntry>* entries);
// *any: whether some key lies below `dir_key` (its marker included).
int HasChildren(const std::string& dir_key, bool* any);
// *any: whether some key other than its marker lies below `dir_key`;
// *marked (when given): whether its marker is there.
int HasEntries(const std::string& dir_key, bool* any, bool* marked = nullptr);

// A directory made by mkdir() is kept as a marker: the key "dir_key/" with
// an empty value. Listings never show it as a file (its name below the
// directory is empty), and it makes dir_key a directory for every process,
// empty or not, until rmdir() deletes it.
std::string MarkerKey(const std::string& dir_key);
int PutMarker(const std::string& dir_key);
// Makes directory `dir_key` explicit (its marker) unless it is the root or
// has its marker already; ENOENT when it is no directory (nothing below it).
// Called before a key below it is deleted (by unlink, rmdir or rename), so
// that deleting its last key leaves it, as on a filesystem, until rmdir: a
// directory implied by keys alone would vanish with them. One listing of
// the directory tells (the marker is its first key), and a put follows only
// for an implied one.
//
// A directory known to have its marker costs no round trip: what is known
// is cached per process (inherited by fork), a marker this process put or
// one a listing or a directory check came across (mkdir's EEXIST check,
// stat, opendir, rm's listing all see it), and dropped when this process
// deletes it. So unlinking the files of a directory the process made or
// looked at costs nothing more. The cache is stale only where another
// process removed the marker (rmdir, a rename) meanwhile: such a directory
// vanishes with its last key, as every implied one once did.
int KeepDirectory(const std::string& dir_key);
// Every key that starts with `prefix`, in key order.
int ListKeys(const std::string& prefix, std::vector<std::string>* keys);

// Writes "memkv_preload: <text>\n" to stderr (through Real()).
void LogLine(const std::string& text);

}  // namespace memkv::preload

#endif  // MEMKV_PRELOAD_STORE_H_
