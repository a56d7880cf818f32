// Internals of ExtentStore, shared by its implementation files:
//   extent_store.cc         Delete/Evict, expiry, drive faults, flushing, stats
//   extent_store_alloc.cc   staging buffers, extent allocation, the geometry of a range of a value
//   extent_store_write.cc   the write path: WriteValueRange, Put/PutIov/PutManyIov, Publish
//   extent_store_read.cc    the read path: ReadValueRange, pins, Get/GetIov/Stat
//   extent_store_commit.cc  the commit queue (group commit), journal appends, checkpoints
//   extent_store_open.cc    Format, Open: superblocks, journal replay and merge
//   extent_store_tenants.cc tenants' usage and quotas
//   extent_stream.cc        ExtentWriter, ExtentReader: a value in pieces
//   value_codec.h           how value bytes are stored (plain, AES-256-GCM), chosen at Open
//
// Locking: `mu` guards the index, LRU list, allocators, drive states, the
// sequence/generation counters and the counters. `commit_mu` guards only the
// commit queue; the thread at its front (the leader) owns every DriveJournal
// while it writes. Order: commit_mu is never held while taking mu, and mu is
// never held during I/O. The Impl's own fields name their lock
// (MEMKV_GUARDED_BY, checked by clang: docs/threads.md); the fields of Drive
// and Entry that mu guards say so in comments, as their structs cannot name
// it.
#ifndef MEMKV_DRIVE_EXTENT_STORE_IMPL_H_
#define MEMKV_DRIVE_EXTENT_STORE_IMPL_H_

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/checksum.h"
#include "base/clock.h"
#include "base/mutex.h"
#include "base/tenant_map.h"
#include "drive/aligned_buffer.h"
#include "drive/drive_crypto.h"
#include "drive/drive_file.h"
#include "drive/drive_journal.h"
#include "drive/extent_allocator.h"
#include "drive/extent_store.h"
#include "drive/format.h"
#include "drive/io_engine.h"
#include "drive/value_codec.h"
#include "storage/policy/policies.h"

namespace memkv::drive {

// One value in the index. Immutable once published, except `linked`,
// `units_owned` and the policies' hooks (storage::policy::PolicyEntry:
// pins, the readers copying it out right now; value_bytes; the LRU and
// tenant links), which change under Impl::mu (not annotated: an Entry
// cannot name the Impl's lock).
struct Entry : storage::policy::PolicyEntry {
  std::string key;  // the index's string_view key points into this string
  uint64_t sequence = 0;         // of the record that wrote it; kept by checkpoints
  uint64_t generation = 0;
  uint64_t value_checksum = 0;
  std::vector<ExtentRef> extents;
  ValueAttrs attrs;              // expiry, retention, chain, hashes (format.h)
  std::vector<SegmentSeal> seals;  // an encrypted store's: one per seal segment
  bool linked = false;           // in the index and the policies
  bool units_owned = true;       // its units go back to the allocators when unlinked and unpinned
};

// One drive. Fixed after Open: index, path, present, sb, lbs, file (its fd;
// I/O through it takes no lock). Guarded by Impl::mu (not annotated: a Drive
// cannot name the Impl's lock): state, reason, marked_offline, orphans,
// alloc, value_bytes, journal_used. `journal` belongs to the commit leader.
struct Drive {
  uint32_t index = 0;
  std::string path;              // empty when the drive was not given or did not open
  bool present = false;          // opened, superblock valid
  DriveFile file;
  Superblock sb;
  DriveState state = DriveState::kOffline;
  std::string reason;
  bool marked_offline = false;   // a durable journal record says so
  // Extents (on any drive) of the values dropped when this drive went
  // offline. Freed once its offline record is durable: before that, a crash
  // would replay their records, so their units must not be reused yet.
  std::vector<ExtentRef> orphans;
  ExtentAllocator alloc;
  uint64_t value_bytes = 0;
  DriveJournal journal;          // touched only by the commit leader (and Open)
  uint64_t journal_used = 0;     // journal.used_bytes(), copied under mu for Stats
  uint32_t lbs = 4096;           // the device's logical block size
};

// Room for a value: its generation and extents, reserved in the allocators
// until published (Impl::Publish) or freed.
struct Allocation {
  uint64_t generation = 0;
  std::vector<ExtentRef> extents;
};

// A unit of work for the commit queue.
struct CommitOp {
  enum class Kind { kPut, kDelete, kOffline, kCheckpoint };
  Kind kind = Kind::kPut;
  std::string_view key;
  // kPut
  uint64_t generation = 0;
  uint64_t value_bytes = 0;
  uint64_t value_checksum = 0;
  std::vector<ExtentRef> extents;
  ValueAttrs attrs;
  std::vector<SegmentSeal> seals;
  // kDelete: 0 deletes any version; else only that generation (eviction)
  uint64_t expect_generation = 0;
  // kOffline
  uint32_t drive = 0;

  // Set by the leader.
  uint64_t sequence = 0;         // of its journal record
  Status status;
  bool adopted = false;          // kPut: the index owns its units now
  bool drive_failed = false;     // failed because a drive went offline or full: retry elsewhere
  bool done = false;
  // Counted in Impl::staged_puts until Commit enqueues it (BeginStaging).
  bool staged = false;
};

struct ExtentStore::Impl {
  ExtentStoreOptions options;
  Uuid store_uuid;
  uint64_t block_bytes = 0;      // the most data bytes of one extent (storage.block_size)
  uint64_t journal_area_bytes = 0;
  std::vector<Drive> drives;     // by drive index; fixed after Open
  std::unique_ptr<IoEngine> io;
  uint64_t open_nanos = 0;

  // Staging buffers: one extent (block_bytes) each, carved from one registered region.
  AlignedBuffer staging;
  Mutex buf_mu;
  std::condition_variable buf_cv;
  std::vector<uint32_t> free_bufs MEMKV_GUARDED_BY(buf_mu);

  mutable Mutex mu;
  std::unordered_map<std::string_view, std::shared_ptr<Entry>> index MEMKV_GUARDED_BY(mu);
  SystemRealtimeClock system_clock;
  const RealtimeClock* clock = &system_clock;  // options.realtime_clock when given
  bool ExpiredLocked(const Entry& e) const MEMKV_REQUIRES(mu) { return e.attrs.expired(clock->NowMillis()); }
  // The storage policies (src/storage/policy/), guarded by mu: the LRU list
  // (front: most recently used), the expiry index the sweep reads, and the
  // tenants' usage, LRU lists and quota choices. The drives evict in plain
  // LRU passes (kColdestPasses), keep a value's expiry as written, and have
  // no pin cap.
  storage::policy::Policies policies MEMKV_GUARDED_BY(mu){storage::policy::PolicyOptions{
      .prefix_aware = false,
      .find_linked = nullptr,
      .retention = {.pinned_max_fraction = 1.0,
                    .pin_ttl_ms = 1,
                    .pin_ttl_max_ms = 1,
                    .rearm_on_hit = false},
      .capacity_units = 0,
      .unit_bytes = 1,
      .quota = storage::policy::QuotaKind::kDrive,
  }};
  uint64_t next_sequence MEMKV_GUARDED_BY(mu) = 1;
  uint64_t next_generation MEMKV_GUARDED_BY(mu) = 1;
  uint32_t stripe_cursor MEMKV_GUARDED_BY(mu) = 0;
  // What a checkpoint of the live index takes in a journal area (its records,
  // encoded). Puts are refused beyond kJournalLiveShare of the area, so that
  // deletes and evictions always find room.
  uint64_t journal_live_bytes MEMKV_GUARDED_BY(mu) = 0;
  ExtentStoreStats counters MEMKV_GUARDED_BY(mu);  // the counter fields only

  // Tenants (extent_store_tenants.cc; SetTenants): the usage rows are
  // policies.quota()'s.
  // Ok when a put of `value_bytes` under `key` stays within its tenant's
  // drive quota (the key's current value counts as freed); else counts a
  // refusal and returns ResourceExhausted naming tenants[].drive_quota.
  Status TenantQuotaLocked(std::string_view key, uint64_t value_bytes) MEMKV_REQUIRES(mu);
  // Counts the eviction of `key`'s value in its tenant's row.
  void CountTenantEvictionLocked(std::string_view key, bool for_quota) MEMKV_REQUIRES(mu);

  // SyncMode::kInterval: something was written since the last flush; the
  // flusher thread (sync_interval_ms) and its stop signal.
  std::atomic<bool> unflushed{false};
  Mutex flusher_mu;
  std::condition_variable flusher_cv;
  bool flusher_stop MEMKV_GUARDED_BY(flusher_mu) = false;
  std::thread flusher;

  // How value bytes are stored (value_codec.h): chosen at Open, plain or
  // AES-256-GCM (options.master_key set); fixed after.
  std::unique_ptr<ValueCodec> codec;
  // The tenants whose keys the codec tells apart (SetTenants).
  void SetSealTenants(std::shared_ptr<const TenantMap> map);

  // How long flushes take (FlushesWithin): the start of each flush running
  // now, and the durations of the last kRecentFlushes, oldest overwritten.
  mutable Mutex flush_clock_mu;
  std::multiset<Nanos> flushes_running MEMKV_GUARDED_BY(flush_clock_mu);
  std::array<Nanos, ExtentStore::kRecentFlushes> recent_flushes MEMKV_GUARDED_BY(flush_clock_mu){};
  size_t next_recent_flush MEMKV_GUARDED_BY(flush_clock_mu) = 0;

  // The duration of the last flush (SyncDrives), for the leader's wait below.
  std::atomic<Nanos> last_flush{0};

  Mutex commit_mu;
  std::condition_variable commit_cv;
  std::deque<CommitOp*> commit_queue MEMKV_GUARDED_BY(commit_mu);
  // Puts whose extents are being written and that will join the queue next
  // (BeginStaging). With SyncMode::kAlways a leader waits for them, up to
  // the last flush's duration, before it takes its batch: every put that
  // joins saves a flush of its own (WaitForStaging).
  size_t staged_puts MEMKV_GUARDED_BY(commit_mu) = 0;
  bool leader_waiting MEMKV_GUARDED_BY(commit_mu) = false;
  size_t last_batch_ops MEMKV_GUARDED_BY(commit_mu) = 0;  // in the last batch a leader took
  std::atomic<uint64_t> commit_waits{0};                    // ExtentStoreStats::commit_waits
  std::condition_variable staging_cv;  // a staged put joined the queue or gave up

  // --- extent_store_alloc.cc
  uint8_t* buffer(uint32_t i) const { return staging.data() + uint64_t(i) * block_bytes; }
  // Takes up to `want` free staging buffers (at least one: waits for it).
  std::vector<uint32_t> AcquireBuffers(size_t want) MEMKV_EXCLUDES(buf_mu);
  void ReleaseBuffers(const std::vector<uint32_t>& bufs) MEMKV_EXCLUDES(buf_mu);
  // --- extent_store.cc
  // Unlinks from the index and the policies; frees the units now or at the last unpin.
  void UnlinkLocked(Entry* e) MEMKV_REQUIRES(mu);
  void FreeUnitsLocked(const std::vector<ExtentRef>& extents) MEMKV_REQUIRES(mu);
  void LinkLocked(std::shared_ptr<Entry> e) MEMKV_REQUIRES(mu);
  // extent_store_alloc.cc: reserves room for a value (AllocateLocked under
  // mu): TooLarge beyond kMaxExtentsPerValue extents, ResourceExhausted
  // without room.
  Result<Allocation> Allocate(std::string_view key, uint64_t value_bytes) MEMKV_EXCLUDES(mu);
  // Allocate's two halves: the extent count (no lock), and the tenant's
  // quota and the room itself (under mu, which a batch takes once).
  static Status CheckExtentCount(std::string_view key, uint64_t value_bytes, uint64_t block_bytes);
  Result<Allocation> AllocateLockedFor(std::string_view key, uint64_t value_bytes) MEMKV_REQUIRES(mu);
  // extent_store_write.cc: commits put ops (Commit) and frees the units of each one that failed
  // and that the index did not take.
  void CommitPuts(std::span<CommitOp* const> ops) MEMKV_EXCLUDES(mu, commit_mu);
  // Journals a value whose extents are written and publishes it. Frees `a`'s
  // units unless the index took them; *drive_failed: a retry on the other
  // drives may succeed.
  Status Publish(std::string_view key, const Allocation& a, uint64_t value_bytes, uint64_t checksum,
                 const ValueAttrs& attrs, std::vector<SegmentSeal> seals, bool* drive_failed)
      MEMKV_EXCLUDES(mu, commit_mu);
  // Takes a drive offline in memory. True when it was online: the caller
  // must then get a kOffline record into the journal.
  bool MarkOfflineLocked(uint32_t drive, const std::string& reason) MEMKV_REQUIRES(mu);
  // MarkOfflineLocked + journal the record (not for the commit leader).
  void TakeOffline(uint32_t drive, const std::string& reason) MEMKV_EXCLUDES(mu, commit_mu);
  void MarkFullLocked(uint32_t drive, const std::string& reason) MEMKV_REQUIRES(mu);
  // Handles the failed ops of a batch: ENOSPC marks full, others offline.
  // Returns a message describing the first failure.
  std::string HandleFailures(std::span<const IoOp> ops, const char* what) MEMKV_EXCLUDES(mu);

  // --- extent_store_commit.cc
  // `n` puts start writing their extents: each will either join the commit
  // queue marked `staged` (Commit counts it there) or give up (EndStaging).
  // True when other puts are staged or queued: a commit will run before
  // these join one, and they can overlap their writes with it.
  bool BeginStaging(size_t n) MEMKV_EXCLUDES(commit_mu);
  void EndStaging(size_t n) MEMKV_EXCLUDES(commit_mu);
  // The leader's wait for staged puts, with commit_mu held by `lock`.
  void WaitForStaging(MutexLock& lock) MEMKV_REQUIRES(commit_mu);
  // Enqueues the ops and returns when all are done (this thread may lead).
  void Commit(std::span<CommitOp* const> ops) MEMKV_EXCLUDES(mu, commit_mu);
  void ProcessBatch(std::span<CommitOp*> batch) MEMKV_EXCLUDES(mu, commit_mu);
  // Writes records to every online drive's journal and syncs. Handles drive
  // failures by marking them offline and appending their records too.
  // Writes `records` to the journal of every online drive, then fdatasyncs
  // those drives and the `data_drives` (which hold the batch's new extents)
  // in one batch: one flush per drive covers both the extents and the record.
  Status AppendToJournals(std::vector<JournalRecord> records, int depth = 0,
                          std::span<const uint32_t> data_drives = {}) MEMKV_EXCLUDES(mu, commit_mu);
  // Checkpoints the live index into every online journal. `first`: drives
  // whose journals must be rewritten before any other (readmitted drives).
  Status CheckpointAll(const std::vector<uint32_t>& first, int depth = 0) MEMKV_EXCLUDES(mu, commit_mu);
  std::vector<JournalRecord> LiveRecordsLocked() MEMKV_REQUIRES(mu);
  // The drive's offline record is durable: mark it and free its orphans.
  void MarkJournaledLocked(uint32_t drive) MEMKV_REQUIRES(mu);

  // Sync (fdatasync) each drive in `drives` in one batch; returns those that failed.
  std::vector<uint32_t> SyncDrives(const std::vector<uint32_t>& drives);
  // SyncMode::kInterval: flushes every online drive; a failed one goes offline.
  Status FlushAll() MEMKV_EXCLUDES(mu);
  void RunFlusher() MEMKV_EXCLUDES(flusher_mu, mu);
  // Stops the flusher thread and flushes what is left (a clean close).
  void StopFlusher() MEMKV_EXCLUDES(flusher_mu, mu);
};

// --- extent_store.cc

// InvalidArgument unless the key is 1..kMaxDriveKeyBytes bytes.
Status CheckKey(std::string_view key);
// "drive 1 (/path)" for messages.
std::string DriveName(const Drive& d);

// --- extent_store_alloc.cc: the geometry of a range of a value, shared by
// the write and read paths.

// The parts of a value's extents that hold value bytes [from, from + len):
// for each, the extent, the first unit of it that the range touches and the
// value bytes there. `from` is a multiple of the unit.
struct ExtentPiece {
  const ExtentRef* extent = nullptr;
  uint64_t unit = 0;        // within the extent
  uint64_t offset = 0;      // value offset of its first byte
  uint64_t data_bytes = 0;  // value bytes in it (the I/O covers whole units)
};
std::vector<ExtentPiece> PiecesOf(std::span<const ExtentRef> extents, uint64_t value_bytes, uint64_t from,
                                  uint64_t len);
// A value moves in the codec's pieces: InvalidArgument unless [from, from +
// len) starts on one and ends on one or at (or past) the value's end.
Status CheckCodecRange(const ValueCodec& codec, const char* what, std::string_view key, uint64_t from, uint64_t len,
                       uint64_t value_bytes);
// The first of `segments` that ends after value byte `from`.
size_t FirstSegmentAfter(std::span<const SealSegment> segments, uint64_t from);

// --- extent_store_write.cc and extent_store_read.cc: the data path, shared
// with extent_stream.cc.

// Writes value bytes [from, from + IovBytes(src)) into the extents (`from` a
// multiple of the 4 KiB unit; the range ends on one or at the value's end),
// whole units, zero-padded, hashing the bytes into `sum`. No sync.
// *drive_failed when a drive refused (it is then offline or full).
// Each of the codec's segments is encoded on the copy into the staging
// buffer, its seal (if the codec keeps any) stored at its index in *seals
// (resized to the value's seal count); the range starts and ends on the
// codec's pieces (ValueCodec::piece_bytes).
// `buffered`: through the page cache (values that ExtentStore::BuffersPut
// only), else O_DIRECT.
Status WriteValueRange(ExtentStore::Impl& s, std::string_view key, std::span<const iovec> src, uint64_t from,
                       uint64_t value_bytes, std::span<const ExtentRef> extents, bool buffered, ChecksumStream* sum,
                       bool* drive_failed, std::vector<SegmentSeal>* seals);
// InvalidArgument, nothing stored, when the hash of the bytes written is not `checksum`.
Status ChecksumMatches(std::string_view key, uint64_t value_bytes, uint64_t written, uint64_t checksum);
// Reads value bytes [from, from + IovBytes(dst)) of `e` into dst, hashing
// them into `sum` (unchecked until CheckValueSum). The range starts and ends
// on the codec's pieces; each segment is decoded on the copy out of the
// staging buffer, and AuthFailed when one fails its seal.
Status ReadValueRange(ExtentStore::Impl& s, const Entry& e, uint64_t from, std::span<const iovec> dst,
                      ChecksumStream* sum);
// Corruption naming the extents when `digest` is not the value's checksum.
Status CheckValueSum(const Entry& e, uint64_t digest);
// Pins the entry of `key` for a read and marks it used; NotFound on a miss.
Result<std::shared_ptr<Entry>> PinForRead(ExtentStore::Impl& s, std::string_view key) MEMKV_EXCLUDES(s.mu);
// Drops the pin; a read that failed with Corruption (or AuthFailed) drops the value, and any
// failure becomes NotFound. `counted`: false when no read was attempted.
Status FinishRead(ExtentStore::Impl& s, const std::shared_ptr<Entry>& e, const Status& read, bool counted = true)
    MEMKV_EXCLUDES(s.mu);

// Keys may be binary; log them readably and bounded.
std::string KeyForLog(std::string_view key);

// The live index may fill at most this share of a journal area: the rest
// takes the records appended between checkpoints (deletes, evictions).
inline constexpr double kJournalLiveShare = 0.75;

// Bytes a put record of this key and extent count takes in the journal.
uint64_t PutRecordBytes(size_t key_bytes, size_t extents);

}  // namespace memkv::drive

#endif  // MEMKV_DRIVE_EXTENT_STORE_IMPL_H_
