// ExtentStore: the drive tier. Values on N drives (block devices or files) in
// extents of a fixed size, with a journal that makes every acknowledged write
// survive a crash. docs/storage.md has the full contract and the on-drive
// format byte by byte; in short:
//
// Layout. Each drive: superblock, two journal areas, then slots of
// (4 KiB extent header + block_size data). A value takes ceil(size /
// block_size) slots; its extents go round-robin over the drives, so reading a
// big value reads all drives at once (one batch through the IoEngine).
//
// Durability. Put returns Ok only after (1) every extent is written (O_DIRECT)
// and its drive fdatasync'ed, then (2) a journal record naming the key, its
// generation, length, checksum and extents is written to the journal of every
// online drive and fdatasync'ed. Delete returns Ok after its record is durable
// the same way. After a crash (kill -9, power loss) the store reopens with
// every acknowledged Put readable byte-exact, unless a later acknowledged
// Delete/Put replaced it; an operation that had not returned may be there or
// not, but never torn: every extent carries a checksum over its header and
// data plus the key and generation, checked on every read. Concurrent commits
// share one journal write and sync (group commit).
//
// Restart. Open replays the journals (not the data) and rebuilds the index
// and the free-slot allocator; when a journal area fills, the live index is
// checkpointed into the other area.
//
// Faults. An I/O error on a drive takes it offline: its values become misses,
// the other drives keep serving, Stats().degraded is true and names it. ENOSPC
// marks a drive full (still readable). A Put that finds no room fails with
// ResourceExhausted naming each drive's free space; the caller (the tier)
// makes room with EvictColdest and retries.
//
// Thread-safety: every method may be called from any thread. One mutex
// guards the index, the LRU list, the allocators and the drive states; drive
// I/O and checksums run outside it. Journal writes are serialised by the
// commit queue.
#ifndef MEMKV_DRIVE_EXTENT_STORE_H_
#define MEMKV_DRIVE_EXTENT_STORE_H_

#include <sys/uio.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/key_page.h"
#include "drive/format.h"
#include "drive/io_engine.h"
#include "memkv/status.h"

namespace memkv {

struct DriveFormatOptions {
  std::vector<std::string> drives;      // paths; drive i gets index i
  uint64_t block_size_bytes = 4ull << 20;  // storage.block_size; a multiple of 4 KiB, at most 1 GiB
  // Regular files: create or resize each file to this size. 0: use the
  // existing size (the only choice for block devices).
  uint64_t file_size_bytes = 0;
  // Each of the two journal areas. 0: sized for the drives' slot count
  // (256 bytes per slot of the whole store, 1 MiB .. 1 GiB).
  uint64_t journal_area_bytes = 0;
  bool force = false;                 // overwrite drives that hold a MemKV superblock
  uint64_t created_unix_ns = 0;       // 0: now
};

struct ExtentStoreOptions {
  std::vector<std::string> drives;    // paths, any order; identified by their superblocks
  IoEngineKind io = IoEngineKind::kAuto;
  uint32_t queue_depth = 64;
  // Staging buffers of one slot each, registered with io_uring. They bound
  // the extents in flight at once (larger values go in waves).
  uint32_t io_buffers = 32;
  // Test seam: wraps the I/O engine (e.g. in a FaultInjectingEngine).
  std::function<std::unique_ptr<IoEngine>(std::unique_ptr<IoEngine>)> wrap_engine;
};

enum class DriveState : uint8_t {
  kOnline,
  kFull,     // ENOSPC on a write: readable, no new extents
  kOffline,  // I/O error, missing at open, or not part of this store
};
std::string_view DriveStateName(DriveState s);

struct DriveStats {
  uint32_t index = 0;
  std::string path;                 // empty for a drive of the store that was not given
  Uuid uuid;
  DriveState state = DriveState::kOnline;
  std::string reason;               // why it is offline or full
  uint64_t raw_bytes = 0;           // size of the device or file
  uint64_t usable_bytes = 0;        // slots * block size
  uint64_t used_bytes = 0;          // slots in use * block size
  uint64_t value_bytes = 0;         // bytes of values stored on it
  uint64_t slots_total = 0;
  uint64_t slots_free = 0;
  uint64_t journal_used_bytes = 0;  // of the active area
  uint64_t journal_area_bytes = 0;
};

struct ExtentStoreStats {
  Uuid store_uuid;
  uint64_t block_size_bytes = 0;
  std::string io_engine;            // "io_uring", "pread", ...
  bool degraded = false;            // some drive of the store is offline
  uint64_t keys = 0;
  uint64_t value_bytes = 0;
  uint64_t puts = 0;
  uint64_t gets = 0;
  uint64_t hits = 0;
  uint64_t misses = 0;
  uint64_t deletes = 0;
  uint64_t evictions = 0;
  uint64_t checksum_failures = 0;   // reads that found a torn, stale or rotten extent
  uint64_t io_errors = 0;
  uint64_t journal_commits = 0;     // journal writes (each may carry several operations)
  uint64_t checkpoints = 0;
  uint64_t open_nanos = 0;          // how long Open took (journal replay included)
  std::vector<DriveStats> drives;
};

struct ValueInfo {
  uint64_t size_bytes = 0;
  uint64_t checksum = 0;            // Checksum() of the value (what MemoryStore::CommitPut takes)
  uint64_t generation = 0;
};

class ExtentStore {
 public:
  // Writes a superblock and empty journal on each drive. FailedPrecondition
  // when a drive already holds a MemKV superblock and !force; IoError and
  // InvalidArgument name the drive and what is wrong. Progress is logged.
  static Status Format(const DriveFormatOptions& options);

  // Opens the drives and replays their journals. UnsupportedVersion naming
  // both versions when a drive is of a newer format; FailedPrecondition when
  // a drive is unformatted or from another store; Unavailable when no drive
  // of the store is usable. Missing or failing drives are offline (degraded).
  static Result<std::unique_ptr<ExtentStore>> Open(const ExtentStoreOptions& options);
  ~ExtentStore();
  ExtentStore(const ExtentStore&) = delete;
  ExtentStore& operator=(const ExtentStore&) = delete;

  // Stores `value` under `key` (1..1024 bytes), replacing any previous value.
  // TooLarge beyond kMaxExtentsPerValue extents; ResourceExhausted naming the
  // drives when no room; IoError when a drive failed (it is then offline and
  // a retry goes to the others); Unavailable when no drive is online.
  Status Put(std::string_view key, std::span<const uint8_t> value);
  // As Put, gathering the value from `value` (read as one byte string) whose
  // Checksum() the caller already knows: the tier writes straight from DRAM
  // pool chunks. `checksum` is stored, not recomputed.
  Status PutIov(std::string_view key, std::span<const iovec> value, uint64_t checksum);
  // NotFound on a miss, including a value whose extent fails its checksum or
  // whose drive failed (both counted; the value is dropped).
  Result<std::vector<uint8_t>> Get(std::string_view key);
  // As Get, into `buffer`; returns the size. TooLarge naming both sizes when
  // the buffer is too small.
  Result<size_t> GetInto(std::string_view key, std::span<uint8_t> buffer);
  // As GetInto, scattering into `buffer` (its iovecs read as one byte
  // string); returns the value's size, checksum and generation.
  Result<ValueInfo> GetIov(std::string_view key, std::span<const iovec> buffer);
  // Size, checksum and generation from the index (no I/O, no LRU touch).
  Result<ValueInfo> Stat(std::string_view key);
  bool Exists(std::string_view key);
  // The size of the value under `key`, if present (index lookup only, like
  // Exists).
  std::optional<uint64_t> ValueSize(std::string_view key);
  // Offers every key in the index to `page` (a List page), under the index
  // lock: O(keys).
  void OfferKeys(KeyPage* page) const;
  // NotFound if absent.
  Status Delete(std::string_view key);

  // Deletes the least recently used values (Put and Get count as use; values
  // being read are skipped) until at least `extents` extents are free, and
  // returns their keys, coldest first. ResourceExhausted when nothing can be
  // evicted. Values for which `spare(key)` is true are taken only when the
  // others do not free enough (the tier spares what DRAM holds: it is hot
  // even though the drives never saw it read). `spare` runs under the store's
  // lock: it must be quick and must not call into this store.
  Result<std::vector<std::string>> EvictColdest(uint64_t extents,
                                                const std::function<bool(std::string_view)>& spare = {});
  // Writes the live index into the other journal area of every drive (the
  // store does this by itself when an area fills).
  Status Checkpoint();

  ExtentStoreStats Stats() const;
  uint64_t block_size_bytes() const;

  // Opaque outside src/drive (extent_store_impl.h); public only so that the
  // implementation files can define helpers over it.
  struct Impl;

 private:
  explicit ExtentStore(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace memkv

#endif  // MEMKV_DRIVE_EXTENT_STORE_H_
