// ExtentStore: the drive tier. Values on N drives (block devices or files),
// packed into 4 KiB units, with a journal that makes every acknowledged write
// survive a crash. docs/storage.md has the full contract and the on-drive
// format byte by byte; in short:
//
// Layout. Each drive: superblock, two journal areas, then a data area of
// 4 KiB units. A value is cut into extents of at most block_size bytes, each
// a run of whole units holding only value bytes (the last one zero-padded),
// so a 4 KiB value takes 4 KiB and a 5 KiB one 8 KiB. Extents go round-robin
// over the drives, so reading a big value reads all drives at once (one
// batch through the IoEngine); a per-drive best-fit allocator places them.
//
// Durability. Put returns Ok only after every extent is written (O_DIRECT)
// and a journal record naming the key, its generation, length, checksum and
// extents is written to the journal of every online drive, and those drives
// are fdatasync'ed (one flush covers both); with SyncMode::kInterval the
// flush comes later and small writes go through the page cache (below).
// Delete returns Ok after its
// record is durable the same way. After a crash (kill -9, power loss) the
// store reopens with every acknowledged Put readable byte-exact, unless a
// later acknowledged Delete/Put replaced it; an operation that had not
// returned may be there or not, but never torn: every read checks the whole
// value against the checksum in its record. Concurrent commits share one
// journal write and sync (group commit).
//
// Restart. Open replays the journals (not the data) and rebuilds the index
// and the allocators; when a journal area fills, the live index is
// checkpointed into the other area.
//
// Faults. An I/O error on a drive takes it offline: its values become misses,
// the other drives keep serving, Stats().degraded is true and names it. ENOSPC
// marks a drive full (still readable). A Put that finds no room fails with
// ResourceExhausted naming each drive's free space; the caller (the tier)
// makes room with EvictColdest and retries.
//
// Encryption at rest (ExtentStoreOptions::master_key; drive_crypto.h):
// every value is sealed with AES-256-GCM in seal segments on its way into
// the staging buffers and opened on its way out; a segment that fails its
// tag is a miss (decrypt_failures) and the value is dropped.
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

#include "base/checksum.h"
#include "base/key_page.h"
#include "base/tenant_map.h"
#include "drive/drive_crypto.h"
#include "drive/format.h"
#include "drive/io_engine.h"
#include "base/clock.h"
#include "memkv/status.h"

namespace memkv::drive {

// Default journal size: bytes of each journal area per 4 KiB unit of the
// whole store. A put record takes 72 bytes + key (padded to 8) + 16 per
// extent, 144 bytes for a 4 KiB value under a 64-byte key, and every drive's
// journal holds the records of every drive; puts may fill 3/4 of an area
// (the rest takes what is appended between checkpoints), so 192 bytes per
// unit let a store fill its whole data area with 4 KiB values under keys of
// up to 64 bytes (docs/storage.md, "Journal capacity"). The price is drive
// space: the two areas take 2 x 192 / 4096 = 9.4 % of a one-drive store.
// With N drives that would be N x 9.4 % of each, so the two areas are capped
// at 1/kJournalMaxShareOfDrive of the smallest drive (and 1 GiB each): a
// store of two drives fills 2/3 of its data area with 4 KiB values under
// the default, of four 1/3; `memkv setup --journal-size` sets any size.
inline constexpr uint64_t kJournalBytesPerUnit = 192;
inline constexpr uint64_t kJournalMaxShareOfDrive = 8;

struct DriveFormatOptions {
  std::vector<std::string> drives;      // paths; drive i gets index i
  uint64_t block_size_bytes = 4ull << 20;  // storage.block_size, the longest extent; a multiple of 4 KiB, at most 1 GiB
  // Regular files: create or resize each file to this size. 0: use the
  // existing size (the only choice for block devices).
  uint64_t file_size_bytes = 0;
  // Each of the two journal areas. 0: kJournalBytesPerUnit per 4 KiB unit of
  // the whole store, both areas at most 1/8 of the smallest drive, 1 MiB ..
  // 1 GiB (docs/storage.md, "Journal capacity").
  uint64_t journal_area_bytes = 0;
  bool force = false;                 // overwrite drives that hold a MemKV superblock
  // Set: the drives are formatted encrypted (a fresh encryption id each,
  // and the key check value of this master key); docs/storage.md,
  // "Encryption at rest".
  std::optional<MasterKey> master_key;
  uint64_t created_unix_ns = 0;       // 0: now
};

// When a commit's writes are made durable (storage.sync; docs/storage.md,
// "Durability").
enum class SyncMode : uint8_t {
  // Every commit flushes the drives' caches before it returns: an
  // acknowledged put survives a power cut.
  kAlways,
  // A commit returns once its extents and record are written to the drives
  // or, for journal records and values of at most kBufferedValueBytes, to
  // the kernel's page cache (the way Redis's appendfsync everysec writes its
  // log): either way an acknowledged put survives kill -9 of the process.
  // The drives are flushed every sync_interval_ms (and by Flush, Checkpoint
  // and a clean close), so a power cut loses at most what was acknowledged
  // since the last flush: the journal replays a prefix of the log, never a
  // torn value or another key's bytes.
  kInterval,
};
std::string_view SyncModeName(SyncMode mode);

// Values up to this size, and journal appends, are written through the
// page cache (a copy, microseconds) instead of O_DIRECT (a device round
// trip, about 65 us for 4 KiB on a virtio disk): with kInterval the put
// need not wait for the device at all, and with kAlways the commit's one
// fdatasync writes the extents back with the record instead of after a
// round of its own. Larger values stream to the drive directly, where the
// copy would cost more than it saves and fill the page cache.
inline constexpr uint64_t kBufferedValueBytes = 256 << 10;
// With SyncMode::kAlways, a single put of at least this many bytes (and at
// most kBufferedValueBytes) that finds other puts staged or committing is
// written with O_DIRECT instead, while their commit runs, so that its bytes
// are not written back inside the next commit's fdatasync
// (docs/storage.md, "How small writes go").
inline constexpr uint64_t kDirectWhenBusyBytes = 64 << 10;

struct ExtentStoreOptions {
  std::vector<std::string> drives;    // paths, any order; identified by their superblocks
  SyncMode sync = SyncMode::kAlways;
  // kInterval: how often a background thread flushes the drives (when
  // anything was written since the last flush). 0: only Flush() does.
  uint32_t sync_interval_ms = 1000;
  // kAlways: how long a commit's leader waits for puts still writing their
  // values to join its batch (docs/storage.md, "How small writes go").
  // Negative: as long as the last flush took, at most 1 ms. Tests set it.
  int64_t staged_wait_ns = -1;
  IoEngineKind io = IoEngineKind::kAuto;
  uint32_t queue_depth = 64;
  // Staging buffers of one extent (block size) each, registered with
  // io_uring. They bound the extents in flight at once (larger values go in
  // waves).
  uint32_t io_buffers = 32;
  // Test seam: wraps the I/O engine (e.g. in a FaultInjectingEngine).
  std::function<std::unique_ptr<IoEngine>(std::unique_ptr<IoEngine>)> wrap_engine;
  // Values' expiry instants (ValueAttrs::expires_at_ms); nullptr: the
  // system's wall clock.
  const RealtimeClock* realtime_clock = nullptr;
  // Set: storage.encryption is on; every drive must have been formatted
  // encrypted with this master key (else Open refuses, saying so). Unset:
  // every drive must have been formatted without encryption.
  std::optional<MasterKey> master_key;
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
  uint64_t usable_bytes = 0;        // the data area: units * 4 KiB
  uint64_t used_bytes = 0;          // capacity consumed: units in use * 4 KiB
  uint64_t value_bytes = 0;         // bytes of values stored on it (used_bytes / value_bytes: the packing cost)
  uint64_t free_bytes = 0;          // units free * 4 KiB
  uint64_t largest_free_bytes = 0;  // the longest free run: the longest extent that fits without cutting
  uint64_t free_runs = 0;           // how many pieces the free bytes are in
  // usable_bytes and free_bytes in whole extents of the block size, for
  // callers that count extents (a value of n blocks can fit when n <= these).
  uint64_t slots_total = 0;
  uint64_t slots_free = 0;
  uint64_t journal_used_bytes = 0;  // of the active area
  uint64_t journal_area_bytes = 0;

  // 1 - largest_free_bytes / free_bytes: 0 when the free bytes are one run,
  // near 1 when they are scattered in small pieces. 0 when nothing is free.
  double fragmentation() const;
  // used_bytes / value_bytes (0 without values): what a stored byte costs.
  double bytes_per_value_byte() const;
};

struct ExtentStoreStats {
  Uuid store_uuid;
  SyncMode sync = SyncMode::kAlways;
  uint64_t block_size_bytes = 0;
  uint64_t unit_bytes = 0;          // the allocation unit, 4 KiB
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
  uint64_t expired = 0;             // values deleted because their TTL had run out
  uint64_t checksum_failures = 0;   // reads whose value failed its checksum (torn, stale or rotten extent)
  uint64_t decrypt_failures = 0;    // reads of an encrypted value that failed its tag (dropped, a miss)
  bool encrypted = false;           // the drives are encrypted at rest
  uint64_t io_errors = 0;
  uint64_t journal_commits = 0;     // journal writes (each may carry several operations)
  uint64_t commit_waits = 0;        // kAlways: leaders that waited for puts still writing their values
  uint64_t flushes = 0;             // drive cache flushes of SyncMode::kInterval (Flush and the timer)
  uint64_t checkpoints = 0;
  uint64_t open_nanos = 0;          // how long Open took (journal replay included)
  // The live index as a checkpoint writes it; puts are refused with
  // ResourceExhausted past 3/4 of journal_area_bytes (docs/storage.md).
  uint64_t journal_live_bytes = 0;
  // What journal_live_bytes may reach before puts are refused (3/4 of the
  // smallest online drive's area, less its header).
  uint64_t journal_budget_bytes = 0;
  std::vector<DriveStats> drives;

  // The tier as a whole, summed over its drives (offline drives included:
  // their figures are those of their last open).
  uint64_t used_bytes() const;
  uint64_t usable_bytes() const;
  uint64_t free_bytes() const;
  uint64_t largest_free_bytes() const;  // the longest free run on any one drive
  // 1 - (sum of each drive's longest free run) / free bytes: the share of the
  // free room that a value could only use cut into pieces. 0 when nothing is free.
  double fragmentation() const;
  // used_bytes() / value_bytes (0 without values).
  double bytes_per_value_byte() const;
};

struct ValueInfo {
  uint64_t size_bytes = 0;
  uint64_t checksum = 0;            // Checksum() of the value (what MemoryStore::CommitPut takes)
  uint64_t generation = 0;
  ValueAttrs attrs;                 // what its put said about it
};

// A value the store removed by itself (expired, or evicted for room).
struct RemovedValue {
  std::string key;
  uint64_t size_bytes = 0;
  ValueAttrs attrs;
  bool expired = false;             // its TTL had run out (else evicted)
};

class ExtentWriter;
class ExtentReader;

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
  // TooLarge beyond kMaxExtentsPerValue extents of the block size;
  // ResourceExhausted naming the drives when no room (or the journal is
  // full); IoError when a drive failed (it is then offline and a retry goes
  // to the others); Unavailable when no drive is online.
  Status Put(std::string_view key, std::span<const uint8_t> value);
  // As Put, gathering the value from `value` (read as one byte string) whose
  // Checksum() the caller already knows: the tier writes straight from DRAM
  // pool chunks. The bytes written are checked against `checksum` (every
  // read is): InvalidArgument, nothing stored, when they differ.
  // `attrs` (optional) are journaled with the value and kept across restarts.
  Status PutIov(std::string_view key, std::span<const iovec> value, uint64_t checksum,
                const ValueAttrs* attrs = nullptr);
  // Several PutIov in one group commit: every value is written, then one
  // journal append (and, with kAlways, one flush) publishes them all. The
  // keys must differ. One status per put, in order, each as PutIov's.
  struct IovPut {
    std::string_view key;
    std::span<const iovec> value;
    uint64_t checksum = 0;
    const ValueAttrs* attrs = nullptr;  // optional, as PutIov's
  };
  std::vector<Status> PutManyIov(std::span<const IovPut> puts);
  // A value written in pieces, for a value too large to hold whole in
  // memory (ExtentWriter): reserves its extents now (ResourceExhausted, as
  // Put, when there is no room). Counted as a put.
  Result<std::unique_ptr<ExtentWriter>> BeginPut(std::string_view key, uint64_t size,
                                                 const ValueAttrs* attrs = nullptr);
  // NotFound on a miss, including a value that fails its checksum or whose
  // drive failed (both counted; the value is dropped).
  Result<std::vector<uint8_t>> Get(std::string_view key);
  // A value read in pieces (ExtentReader); NotFound on a miss. Counted as a
  // get once it is read to the end (or fails).
  Result<std::unique_ptr<ExtentReader>> BeginGet(std::string_view key);
  // As Get, into `buffer`; returns the size. TooLarge naming both sizes when
  // the buffer is too small.
  Result<size_t> GetInto(std::string_view key, std::span<uint8_t> buffer);
  // As GetInto, scattering into `buffer` (its iovecs read as one byte
  // string); returns the value's size, checksum and generation. On a failed
  // read the buffer holds unchecked bytes.
  Result<ValueInfo> GetIov(std::string_view key, std::span<const iovec> buffer);
  // Size, checksum and generation from the index (no I/O, no LRU touch).
  Result<ValueInfo> Stat(std::string_view key);
  bool Exists(std::string_view key);
  // An encrypted value's seals (nonce and tag per seal segment), from the
  // index; empty on a plain store or a miss. For inspection and tests.
  std::vector<SegmentSeal> Seals(std::string_view key) const;
  // The size of the value under `key`, if present (index lookup only, like
  // Exists).
  std::optional<uint64_t> ValueSize(std::string_view key);
  // Offers every key in the index to `page` (a List page), under the index
  // lock: O(keys).
  void OfferKeys(KeyPage* page) const;
  // NotFound if absent.
  Status Delete(std::string_view key);

  // Deletes the least recently used values (Put and Get count as use; values
  // being read are skipped) until their extents free at least `bytes` bytes
  // (counted in whole 4 KiB units; an empty value counts 1 byte), and
  // returns their keys, coldest first. A put of n bytes that found no room
  // asks for n. ResourceExhausted when nothing can be
  // evicted. Values for which `spare(key)` is true are taken only when the
  // others do not free enough (the tier spares what DRAM holds: it is hot
  // even though the drives never saw it read). `spare` runs under the store's
  // lock: it must be quick and must not call into this store.
  // Order: values whose TTL has run out, then evict_first values, then the
  // others; pinned values whose TTL runs are never taken.
  Result<std::vector<std::string>> EvictColdest(uint64_t bytes,
                                                const std::function<bool(std::string_view)>& spare = {});
  // EvictColdest, telling what each removed value was.
  Result<std::vector<RemovedValue>> EvictColdestValues(uint64_t bytes,
                                                       const std::function<bool(std::string_view)>& spare = {});
  // Tenant drive quotas (docs/storage.md, "Tenant quotas"). A value belongs
  // to the tenant whose prefix starts its key (TenantMap), or to none.
  // A put (Put, PutIov, PutManyIov, BeginPut) that would take its tenant's
  // value bytes (less the value it replaces) past tenants[].drive_quota
  // fails with ResourceExhausted naming the quota; the caller first makes
  // room with EvictForTenantQuota, as it does with EvictColdest for drive
  // room. Puts in flight at once are each checked against the usage before
  // them, so concurrent puts of one tenant may pass the quota by what they
  // add together; the next put evicts it back under.
  //
  // The tenants to count and hold to their quotas; null or empty: none. Any
  // thread, any time (a reload): recomputes every stored value's tenant from
  // its key (O(keys)); so after Open, SetTenants rebuilds the usage from the
  // index. Counters of a tenant whose name stays carry over.
  // On an encrypted store a value is also sealed under its tenant's data
  // key (the administrator's for a key under no prefix). Each tenant's keys
  // are derived once, by name, and kept. A value written under a tenant
  // that is later removed fails its tag (a counted miss, dropped) until the
  // tenant is configured again.
  void SetTenants(std::shared_ptr<const TenantMap> tenants);
  // One row per tenant of the last SetTenants, in its order: drive_bytes
  // (value bytes of its stored values), drive_keys, evictions (its values
  // evicted, for drive room or its quota; expired ones not counted),
  // quota_evictions (of those, by EvictForTenantQuota), quota_refusals
  // (puts refused at its quota). The DRAM fields are 0.
  std::vector<TenantUsage> TenantUsages() const;
  // Makes room within the drive quota of `key`'s tenant for a put of
  // `bytes` under `key`: evicts that tenant's least recently used values
  // (never another's, never key's own, which the put replaces), in
  // EvictColdest's order and with its `spare`, until the tenant's usage
  // less key's value plus `bytes` fits the quota. Returns what it removed:
  // empty when nothing was needed (no tenant, no quota, within it).
  // ResourceExhausted naming tenants[].drive_quota, nothing evicted and a
  // refusal counted, when the tenant's evictable values cannot free enough.
  Result<std::vector<RemovedValue>> EvictForTenantQuota(std::string_view key, uint64_t bytes,
                                                        const std::function<bool(std::string_view)>& spare = {});
  // Deletes (journaled) up to `max_entries` values whose TTL has run out,
  // soonest first (an expiry-ordered index: it reads only what it frees).
  // Lookups already treat them as misses; this frees their room. Open runs
  // it over every value.
  std::vector<RemovedValue> SweepExpired(size_t max_entries);
  // Writes the live index into the other journal area of every drive (the
  // store does this by itself when an area fills).
  Status Checkpoint();
  // SyncMode::kInterval: flushes every online drive's cache, so that every
  // operation acknowledged before the call survives a power cut. A drive
  // whose flush fails goes offline. Ok at once with kAlways.
  Status Flush();

  ExtentStoreStats Stats() const;
  uint64_t block_size_bytes() const;
  // Whether a put of `value_bytes` is written through the page cache (up to
  // kBufferedValueBytes): a copy, microseconds. With SyncMode::kInterval it
  // is then acknowledged without waiting for the device (unless the journal
  // must checkpoint); with kAlways its commit's fdatasync writes it back
  // (a single put under load may go with O_DIRECT instead:
  // kDirectWhenBusyBytes).
  static bool BuffersPut(uint64_t value_bytes) { return value_bytes <= kBufferedValueBytes; }
  SyncMode sync_mode() const;
  // True while the drives' flushes have been fast: none of the last
  // kRecentFlushes flushes (fdatasync rounds: commits, checkpoints, interval
  // flushes) took longer than `limit_ns`, and none running now has been
  // running longer. A caller that must not wait on a stalled drive waits on
  // a flush only while this holds (TieredStore, storage.flush_on_loop_us).
  bool FlushesWithin(int64_t limit_ns) const;
  static constexpr size_t kRecentFlushes = 16;

  // Opaque outside src/drive (extent_store_impl.h); public only so that the
  // implementation files can define helpers over it.
  struct Impl;

 private:
  explicit ExtentStore(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Internals (extent_store_impl.h).
struct Allocation;
struct Entry;

// A put streamed to the drives: the value's extents are reserved by
// ExtentStore::BeginPut, its bytes written piece by piece in order, then the
// whole is checked against the checksum the caller was given and published
// (Finish), replacing any previous value under the key. Until then readers
// see the previous value; a writer dropped unfinished (the sender stalled or
// went away, a piece failed) frees its extents and leaves it. Nothing is
// retried on another drive: a drive that fails mid-way fails the put.
//
// One thread at a time; must not outlive its store.
class ExtentWriter {
 public:
  ~ExtentWriter();
  ExtentWriter(const ExtentWriter&) = delete;
  ExtentWriter& operator=(const ExtentWriter&) = delete;

  uint64_t size() const { return size_; }
  uint64_t written() const { return written_; }
  // Writes the next IovBytes(piece) bytes of the value. Each piece but the
  // last must be a multiple of 4 KiB (InvalidArgument otherwise, as for a
  // piece past the value's end); on an encrypted store, of kSealSegmentBytes
  // (each segment is sealed whole). IoError or ResourceExhausted when a drive
  // failed: the put is lost, drop the writer.
  Status Write(std::span<const iovec> piece);
  // Every byte written: InvalidArgument (nothing stored) when they do not
  // hash to `checksum`; else the value is journaled and published.
  Status Finish(uint64_t checksum);

 private:
  friend class ExtentStore;
  ExtentWriter(ExtentStore::Impl* store, std::string key, uint64_t size);
  ExtentStore::Impl* store_;
  std::string key_;
  uint64_t size_;
  uint64_t written_ = 0;
  std::unique_ptr<Allocation> allocation_;  // null once published or freed
  ValueAttrs attrs_;
  std::vector<SegmentSeal> seals_;  // an encrypted store's
  ChecksumStream sum_;
};

// A get streamed from the drives: the value stays pinned (not evicted, its
// extents not reused) while the reader lives; its bytes are read piece by
// piece in order, and the last piece checks the whole against its checksum.
// A value that fails the check is dropped (Corruption from that Read): the
// pieces already handed out were wrong, and the caller must say so (the
// server's client checks them against checksum(), sent before them).
//
// One thread at a time; must not outlive its store.
class ExtentReader {
 public:
  ~ExtentReader();
  ExtentReader(const ExtentReader&) = delete;
  ExtentReader& operator=(const ExtentReader&) = delete;

  uint64_t size() const;
  uint64_t checksum() const;
  uint64_t read() const { return read_; }
  // Reads the next IovBytes(piece) bytes (each piece but the last a multiple
  // of 4 KiB; on an encrypted store, of kSealSegmentBytes, so that every
  // byte handed out has passed its segment's tag). Unavailable when a drive
  // failed; AuthFailed, the value dropped, when a segment fails its tag;
  // Corruption, the value dropped, when the last piece completes a value
  // that fails its checksum.
  Status Read(std::span<const iovec> piece);

 private:
  friend class ExtentStore;
  ExtentReader(ExtentStore::Impl* store, std::shared_ptr<Entry> entry);
  ExtentStore::Impl* store_;
  std::shared_ptr<Entry> entry_;
  uint64_t read_ = 0;
  bool finished_ = false;  // the pin is given back
  ChecksumStream sum_;
};

}  // namespace memkv::drive

#endif  // MEMKV_DRIVE_EXTENT_STORE_H_
