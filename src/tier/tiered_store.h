// TieredStore: the server's one door to storage. It owns the DRAM pool
// (MemoryStore) and, when drives are configured, the drives behind it
// (ExtentStore) and the I/O threads that do their work. Without drives
// (storage.mode memory) it is the pool alone and starts no thread; callers
// use the same methods either way and never learn which it is.
//
// With drives, put is write-through (docs/storage.md, "The tier in the
// server"): a put's bytes land in reserved pool space (Reserve), are written
// to the drives and made durable, and only then published in DRAM and the put
// completed. So every value in DRAM is also on a drive, and DRAM eviction just
// drops the DRAM copy. A value only on the drives is read back on a DRAM miss
// and, when `promote_on_read` (or for an RDMA grant, which needs a pool pin),
// published in DRAM again; otherwise it is served from a buffer of its own.
// When the drives are full, their coldest values are evicted to make room
// (DRAM -> drive -> gone), values DRAM holds last.
//
// Lookups: a get looks a key up once in DRAM and, on a miss, once in the drive
// index; only a value that is on a drive costs an I/O thread, which reads it
// (the read finds its extents itself). A key in neither tier is answered
// without one.
//
// Ordering: operations on one key that touch the drives are serialised (the
// key's lock, KeyLocks, held across the drive I/O and the DRAM update), so
// DRAM never publishes a value older than what the drives hold. Different
// keys never wait on each other: they proceed in parallel on `io_threads`
// threads, and their commits share the drives' group commit.
//
// Completion. The operations that may need a drive (Commit, CommitMany, Get,
// GetMany, Delete) take a `done` callable and run it exactly once, always on
// the caller's thread:
//   - inline, before returning Completion::kInline: always without drives,
//     and with drives whenever no drive I/O is needed (a DRAM hit, a key in
//     neither tier) or the drives buffer the put and need not flush before
//     acknowledging it (ExtentStore::BuffersPut, storage.sync interval:
//     values up to 256 KiB; the write is a copy into the page cache, cheaper
//     than the hand-off to an I/O thread and back).
//     Nothing is allocated, wrapped or queued for that;
//   - or later, after returning Completion::kPending: the drive work runs on
//     an I/O thread, which posts the completion to `reply.inbox` for
//     `reply.owner`; the caller's loop runs it from there
//     (CompletionInbox::Take), or drops it when the owner is gone;
//   - or at the end of the caller's turn, after returning kTurn: a put
//     that would be written inline is deferred to `reply.turn` when the
//     caller gives one (an event loop's TurnCommits). The loop calls
//     FinishTurn once it has served its ready connections: every put
//     deferred meanwhile is written in one drive commit (one journal append
//     for the turn instead of one per put, as Redis writes its AOF once per
//     loop turn), and the completions come back to run on the loop.
//     With storage.sync always, a small put (BuffersPut) is deferred to
//     the turn too but returns kPending. FinishTurn hands the turn's puts
//     to an I/O thread as one job (one commit, one flush) whose
//     completions come back through the inbox together, so that a stalled
//     drive holds the I/O threads, not the caller. With
//     TieredStoreOptions::flush_on_loop_ns set and the drives' flushes
//     faster than that, it writes and flushes them itself instead, in one
//     commit, and returns their completions as above: the caller's thread
//     waits for one flush, as Redis's does with appendfsync always, and
//     saves the hand-off to an I/O thread and back.
// Whatever `done` captures must stay valid until it runs or is dropped.
//
// Values in pieces: with drives, a value over a quarter of the DRAM pool
// (StreamsPut) is not staged in DRAM at all. Its put reserves extents on the
// drives (BeginStreamPut), writes them a window at a time as the bytes
// arrive (MoveStreamPiece), and publishes the whole, checked, under the key's
// lock, dropping any DRAM copy of the key (FinishStreamPut); until then
// readers see the previous value, and a put given up frees its extents. A
// get of a value on the drives that is too large for a buffer of its own
// (over kStreamGetBytes) and is not promoted comes back streamed(): the
// caller reads it a window at a time (MoveStreamPiece). These always
// complete from `reply`.
//
// Thread-safety: every method may be called from any thread. The destructor
// runs every queued drive job, then joins the I/O threads. Completions still
// in an inbox hold pool pins and reservations: drain or close the inboxes
// before destroying the store.
#ifndef MEMKV_TIER_TIERED_STORE_H_
#define MEMKV_TIER_TIERED_STORE_H_

#include <algorithm>
#include <array>
#include <atomic>
#include <concepts>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/key_page.h"
#include "base/mutex.h"
#include "base/tenant_map.h"
#include "drive/extent_store.h"
#include "memkv/put_options.h"
#include "memkv/status.h"
#include "storage/memory_store.h"
#include "storage/store_event.h"
#include "tier/callback.h"
#include "tier/completion_inbox.h"
#include "tier/io_threads.h"
#include "tier/key_locks.h"
#include "tier/stored_value.h"
#include "tier/value_stream.h"

namespace memkv::tier {

struct TieredStoreOptions {
  int io_threads = 16;           // drive I/O threads (storage.io_threads); none without drives
  bool promote_on_read = true;   // copy a value read from the drives back into DRAM
  // storage.sync always (storage.flush_on_loop_us): FinishTurn writes and
  // flushes the turn's puts on the caller's thread while the drives'
  // flushes take at most this long (ExtentStore::FlushesWithin); 0: always
  // on an I/O thread.
  int64_t flush_on_loop_ns = 0;
  // Told of every value published in or removed from DRAM and the drives
  // (StoreEvent::medium says which); see storage/store_event.h for when and
  // on which thread. Optional; SetObserver replaces it. Only the events in
  // `observed` are built and delivered.
  storage::StoreObserver observer = nullptr;
  storage::StoreEventSet observed = storage::StoreEventSet::All();
};

// How an operation that may need a drive completed.
enum class Completion {
  kInline,   // `done` has run, before the call returned
  kPending,  // `done` will run from the caller's inbox
  kTurn,     // `done` will come back from FinishTurn, at the end of the caller's turn
};

// What a get must return.
enum class ReadNeed {
  kBytes,    // the value's bytes, pinned in DRAM or in a buffer of their own
  kDramPin,  // pinned in the DRAM pool (an RDMA READ source): a value on the
             // drives is promoted, or the get fails with ResourceExhausted
};

// A put whose bytes are in reserved pool space, ready to publish.
struct PutCommit {
  PutCommit() = default;
  PutCommit(storage::PendingPut put_in, std::string key_in, uint64_t checksum_in, PutOptions options_in = {})
      : put(std::move(put_in)), key(std::move(key_in)), checksum(checksum_in), options(std::move(options_in)) {}

  storage::PendingPut put;
  std::string key;
  uint64_t checksum = 0;  // Checksum() of the bytes in `put`
  PutOptions options;     // kept with the value (memory_store.h, "Value attributes")
};

// Puts an event loop deferred to the end of its turn (ReplyTo::turn), for
// TieredStore::FinishTurn. Belongs to one loop: not thread-safe.
class TurnCommits {
 public:
  bool empty() const { return puts_.empty(); }

 private:
  friend class TieredStore;
  // The completion of puts_[first, first + count), for `owner`: `one` for a
  // single put (count 1), else `many`.
  struct Waiter {
    uint64_t owner = 0;
    size_t first = 0;
    size_t count = 0;
    Callback<void(Status)> one;
    Callback<void(std::vector<Status>)> many;
  };
  std::vector<PutCommit> puts_;
  std::vector<Waiter> waiters_;
  std::shared_ptr<CompletionInbox> inbox_;  // where kPending ones are answered
};

struct TierCounters {
  uint64_t drive_hits = 0;        // DRAM misses served from the drives
  uint64_t promotions = 0;        // of those, copied back into DRAM
  uint64_t drive_evictions = 0;   // values evicted from the drives to make room
  uint64_t write_failures = 0;    // puts the drives refused (full, offline, I/O error)
  uint64_t loop_commits = 0;      // turns whose puts FinishTurn flushed on the caller's thread
};

class TieredStore {
 public:
  using StatusDone = Callback<void(Status)>;
  using StatusesDone = Callback<void(std::vector<Status>)>;
  using ValueDone = Callback<void(Result<StoredValue>)>;
  using ValuesDone = Callback<void(std::vector<Result<StoredValue>>)>;
  using StreamDone = Callback<void(Result<std::shared_ptr<ValueStream>>)>;

  // A value on the drives larger than this, not promoted to DRAM, is read
  // in pieces (StoredValue::streamed()) rather than into a buffer of its own.
  static constexpr uint64_t kStreamGetBytes = 4 * ValueStream::kWindowBytes;

  // `drives` null: memory mode.
  TieredStore(std::unique_ptr<storage::MemoryStore> memory, std::unique_ptr<drive::ExtentStore> drives,
              const TieredStoreOptions& options);
  ~TieredStore();
  TieredStore(const TieredStore&) = delete;
  TieredStore& operator=(const TieredStore&) = delete;

  // --- Never waits on a drive. ---

  // Reserves pool space for a value of `size` bytes, to be filled through
  // its iov() and published with Commit (dropped: the space is given back).
  // May evict DRAM values; TooLarge beyond the pool, ResourceExhausted when
  // nothing can be evicted now.
  Result<storage::PendingPut> Reserve(uint64_t size) { return memory_->BeginPut(size); }
  // The same for a put of `key` (the stored key, tenant prefix included):
  // a tenant at its DRAM quota makes room from its own coldest values, never
  // another tenant's; ResourceExhausted naming the quota when it cannot.
  // With drives, the put also holds its size of the tenant's drive quota
  // (HoldDriveQuota; PendingPut::drive_hold) until the drives hold it.
  Result<storage::PendingPut> Reserve(uint64_t size, std::string_view key);
  // The same, into `*put` (empty on entry, and on any error).
  Status Reserve(uint64_t size, std::string_view key, storage::PendingPut* put);
  // Holds `size` bytes of the drive quota of `key`'s tenant for a put in
  // flight (base/quota_ledger.h): an empty hold without drives, tenant or
  // quota; ResourceExhausted naming tenants[].drive_quota when the tenant's
  // puts in flight would together pass it.
  Result<QuotaHold> HoldDriveQuota(std::string_view key, uint64_t size);
  // Whether two keys (stored forms) count against the same tenant's quotas
  // (both no tenant's counts as the same).
  bool SameTenant(std::string_view a, std::string_view b) const;

  // The tenants whose quotas and usage the store keeps (docs/tenants.md;
  // docs/storage.md, "Tenant quotas"). May be called at any time (a
  // reload); tenants are matched by name, so one that stays keeps its
  // counters (its usage is recounted from what is stored). Both tiers
  // recount every value's tenant: O(keys) under each tier's lock.
  void SetTenants(std::shared_ptr<const TenantMap> tenants);
  // One row per tenant of the last SetTenants, in its order: dram_* from
  // the pool, drive_* from the drives (0 without), evictions and
  // quota_evictions summed over both tiers (a value evicted from DRAM and
  // later from the drives counts twice), quota_refusals summed over both
  // (a put refused at a DRAM quota, or at a drive quota).
  std::vector<TenantUsage> TenantUsages() const;
  // The map of the last SetTenants (never null).
  std::shared_ptr<const TenantMap> Tenants() const;
  // In DRAM or on a drive (index lookups only).
  bool Exists(std::string_view key);
  // The size of the value under `key`, in DRAM or on a drive (index lookups only).
  std::optional<uint64_t> ValueSize(std::string_view key);
  // Offers the keys of both tiers to `page` (a key in both is kept once).
  void OfferKeys(KeyPage* page);
  // How many of `keys`, from the first, are stored (in DRAM, else in the
  // drive index): stops at the first key in neither tier, or expired. Index
  // lookups only, no I/O; a matched pinned value's TTL starts again, as a
  // hit's does (the engine is about to load it).
  size_t MatchPrefix(std::span<const std::string_view> keys);
  // Frees up to `max_entries` values whose TTL has run out, in DRAM and on
  // the drives, soonest first; returns how many. For a periodic sweep
  // (cheap when nothing has expired); lookups free what they meet anyway.
  size_t SweepExpired(size_t max_entries);
  // Replaces TieredStoreOptions::observer. Only before the store is shared
  // between threads.
  void SetObserver(storage::StoreObserver observer,
                   storage::StoreEventSet observed = storage::StoreEventSet::All());

  // --- May need a drive: `done` runs inline or from `reply` (see above). ---

  // Publishes `put` under `key`, replacing any previous value; with drives,
  // after writing it through. `options` are kept with the value, in DRAM and
  // on the drives. done(Status): ResourceExhausted naming
  // memory.pinned_max_fraction for a pin past the cap (the key keeps its
  // previous value).
  template <std::invocable<Status> Done>
  Completion Commit(storage::PendingPut put, std::string_view key, uint64_t checksum, const PutOptions& options,
                    const ReplyTo& reply, Done&& done);
  // A plain put: Commit with no options.
  template <std::invocable<Status> Done>
  Completion Commit(storage::PendingPut put, std::string_view key, uint64_t checksum, const ReplyTo& reply,
                    Done&& done) {
    return Commit(std::move(put), key, checksum, PutOptions{}, reply, std::forward<Done>(done));
  }
  // Commit for several puts at once (written through in parallel, or in one
  // drive commit, and one flush, when the drives buffer them all); the keys
  // must differ. done(std::vector<Status>), one per put, in order. `puts`
  // is left empty; without drives it keeps its room, for the caller's next
  // batch.
  template <std::invocable<std::vector<Status>> Done>
  Completion CommitMany(std::vector<PutCommit>&& puts, const ReplyTo& reply, Done&& done);
  // done(Result<StoredValue>): NotFound when in neither tier, or unreadable
  // (a failed checksum or drive).
  template <std::invocable<Result<StoredValue>> Done>
  Completion Get(std::string_view key, ReadNeed need, const ReplyTo& reply, Done&& done,
                 storage::ReadCheck check = storage::ReadCheck::kNow);
  // Get for several keys (ReadNeed::kBytes), drive reads in parallel.
  // done(std::vector<Result<StoredValue>>), one per key, in order.
  // `check`: when a value found in DRAM is checked against its checksum
  // (ReadCheck::kLater: by the caller, StoredValue::CheckLater, once sent);
  // a value read from a drive is always checked by the read.
  template <std::invocable<std::vector<Result<StoredValue>>> Done>
  Completion GetMany(std::span<const std::string_view> keys, const ReplyTo& reply, Done&& done,
                     storage::ReadCheck check = storage::ReadCheck::kNow);
  // Removes `key` from both tiers. done(Status): NotFound when neither had
  // it; a drive's error leaves the value readable.
  template <std::invocable<Status> Done>
  Completion Delete(std::string_view key, const ReplyTo& reply, Done&& done);

  // Writes the puts deferred to `turn` (see "Completion"), in the order they
  // came, and empties it. Returns their completions, each with the owner it
  // was deferred for, in that order, for the loop to run (or drop when the
  // owner is gone). A key deferred twice is written twice, in order. With
  // storage.sync always it returns none: an I/O thread writes the puts and
  // posts the completions to the turn's inbox, in that order.
  std::vector<std::pair<uint64_t, CompletionInbox::Closure>> FinishTurn(TurnCommits& turn);

  // --- Values in pieces (see above); with drives only. ---

  // Whether a put of `size` bytes goes to the drives in pieces.
  bool StreamsPut(uint64_t size) const;
  // Reserves the drive space of a put of `size` bytes under `key` (evicting
  // the drives' coldest values for room, as a put does). done(Result<
  // std::shared_ptr<ValueStream>>): ResourceExhausted without room, TooLarge
  // beyond the drives' extent limit.
  // `options` are kept with the value once FinishStreamPut publishes it.
  // `hold`: the put's share of its tenant's drive quota (HoldDriveQuota),
  // kept until the value is published or dropped.
  void BeginStreamPut(std::string key, uint64_t size, const PutOptions& options, QuotaHold hold,
                      const ReplyTo& reply, StreamDone done);
  void BeginStreamPut(std::string key, uint64_t size, const ReplyTo& reply, StreamDone done) {
    BeginStreamPut(std::move(key), size, PutOptions{}, QuotaHold(), reply, std::move(done));
  }
  // Moves the stream's next piece (next_piece() bytes): a put's window to the
  // drives, or the drives to a get's window. done(Status): a failed piece
  // ends the stream (a put is lost, its extents freed when it goes; a get's
  // value that fails its checksum is dropped: Corruption).
  void MoveStreamPiece(std::shared_ptr<ValueStream> stream, const ReplyTo& reply, StatusDone done);
  // A put whose pieces are all written: checks them against `checksum`
  // (InvalidArgument, nothing stored) and publishes the value. done(Status).
  void FinishStreamPut(std::shared_ptr<ValueStream> stream, uint64_t checksum, const ReplyTo& reply,
                       StatusDone done);

  // --- Reporting (admin endpoint); any thread. ---

  storage::MemoryStoreStats MemoryStats() const { return memory_->Stats(); }
  // Nullopt without drives.
  std::optional<drive::ExtentStoreStats> DrivesStats() const;
  TierCounters Counters() const;

  // The DRAM pool itself, for what sits beside the request path: registering
  // its mapping for RDMA, start-up logging, tests. Requests go through the
  // methods above, which keep the tiers consistent.
  storage::MemoryStore& memory() { return *memory_; }

 private:
  // The part of a get that needs no I/O: the DRAM lookup and, on a miss, the
  // drive index's. When the value is on a drive only, the result is a
  // NotFound to be replaced by a read and *drive_size is set to its size.
  Result<StoredValue> GetWithoutIo(std::string_view key, storage::ReadCheck check, std::optional<uint64_t>* drive_size);

  // tiered_store_drives.cc: the drive paths. The *Later functions queue
  // the work on the I/O threads and post `done` to `reply` when it is done.
  void CommitLater(PutCommit commit, const ReplyTo& reply, StatusDone done);
  // `together`: one I/O job and one drive commit for the whole batch
  // (values the drives buffer); else a job per put, written in parallel.
  void CommitManyLater(std::vector<PutCommit> puts, bool together, const ReplyTo& reply, StatusesDone done);
  void GetLater(std::string key, uint64_t size, ReadNeed need, const ReplyTo& reply, ValueDone done);
  // `values` holds every key's result; `reads` the (index, key, size) of
  // those to read from the drives into it.
  struct DriveRead {
    size_t index = 0;
    std::string key;
    uint64_t size = 0;
  };
  void GetManyLater(std::vector<Result<StoredValue>> values, std::vector<DriveRead> reads, const ReplyTo& reply,
                    ValuesDone done);
  void DeleteLater(std::string key, const ReplyTo& reply, StatusDone done);
  // Runs part(0) .. part(parts - 1) on the I/O threads in parallel; the
  // thread that finishes the last posts `finish` to `reply`.
  void RunOnDrives(size_t parts, std::function<void(size_t)> part, const ReplyTo& reply,
                   CompletionInbox::Closure finish);

  // Blocking, on the I/O threads.
  // Runs `attempt` (a drive write of `size` bytes) again while it fails for
  // want of room that evicting the drives' coldest values can make.
  // First, when `key`'s tenant would pass its drive quota, evicts that
  // tenant's own coldest values (failing with the quota's ResourceExhausted
  // when it cannot), so that drive room is never made from another tenant's
  // values for a tenant at its quota.
  // `hold`: what the put holds of the tenant's drive quota (the room left
  // for the tenant's other puts in flight is what they hold).
  Status WithDriveRoom(std::string_view key, uint64_t size, const QuotaHold& hold,
                       const std::function<Status()>& attempt);
  // The tenant-quota part of WithDriveRoom: evicts for key's tenant quota
  // room for `size` bytes beside what the tenant's other puts hold (all its
  // holds less `own_held`).
  // `t`: key's tenant (TenantMap::kNone: nothing to do).
  Status MakeTenantDriveRoom(std::string_view key, uint32_t t, uint64_t size, uint64_t own_held, bool* evicted);
  // What `hold` counts of tenant `t`'s drive quota now (0 for a hold from
  // before a reload, or no tenant).
  uint64_t OwnDriveHold(uint32_t t, const QuotaHold& hold) const;
  Status WriteThrough(PutCommit commit);
  // Publishes in DRAM a put the drives now hold. When DRAM refuses it at
  // the tenant's quota (taken meanwhile), drops any older DRAM copy and
  // returns Ok: the value is stored, on the drives.
  Status PublishWritten(storage::PendingPut put, const std::string& key, uint64_t checksum,
                        const PutOptions& options);
  // PublishWritten for puts[i] of each i in `which` (keys differ), under one
  // hold of DRAM's lock; a status per i, in order.
  std::vector<Status> PublishWrittenMany(std::vector<PutCommit>& puts, std::span<const size_t> which);
  // What the drives keep of a put's options: the expiry as an instant.
  drive::ValueAttrs DriveAttrs(const PutOptions& options) const;
  // The options a value read back from the drives is published in DRAM with
  // (the TTL it has left).
  PutOptions OptionsFromDrive(const drive::ValueAttrs& attrs) const;
  void NoteDriveRemovals(const std::vector<drive::RemovedValue>& removed);
  // Whether the observer takes this event (TieredStoreOptions::observed).
  bool Observes(storage::StoreEventKind kind, storage::RemovalReason reason) const;
  // The size of the value a drive put of `key` replaces, when the observer
  // takes replacements (a drive index lookup), else nullopt.
  std::optional<uint64_t> ReplacedOnDrives(std::string_view key) const;
  // A drive change the drives do not report themselves, to the observer
  // (medium drive). `options`: the stored value's, when known.
  void NoteDriveEvent(storage::StoreEventKind kind, storage::RemovalReason reason, std::string_view key,
                      uint64_t size, const PutOptions* options);
  // A drive put of `key` (the key's lock held): what it replaced, then it.
  void NoteDrivePut(std::string_view key, uint64_t size, const PutOptions& options,
                    std::optional<uint64_t> replaced_size);
  // WriteThrough for several puts (keys differ) in one drive commit.
  std::vector<Status> WriteThroughMany(std::vector<PutCommit> puts);
  // FinishTurn's writing: the puts in runs of distinct keys, each one
  // WriteThroughMany, then each waiter's completion with its owner.
  std::vector<std::pair<uint64_t, CompletionInbox::Closure>> WriteTurn(std::vector<PutCommit> puts,
                                                                       std::vector<TurnCommits::Waiter> waiters);
  bool EvictionCanHelp(uint64_t extents) const;
  // `size`: what the drive index said before the key's lock was taken.
  Result<StoredValue> ReadFromDrives(const std::string& key, uint64_t size, ReadNeed need);
  Result<StoredValue> ReadOnce(const std::string& key, uint64_t size, ReadNeed need);
  Status DeleteFromBoth(const std::string& key);

  std::unique_ptr<storage::MemoryStore> memory_;
  std::unique_ptr<drive::ExtentStore> drives_;  // null: memory mode
  TieredStoreOptions options_;
  // A key's lock serialises the drive operations on the key (see "Ordering"
  // above); it guards no field.
  KeyLocks key_locks_;

  std::atomic<uint64_t> drive_hits_{0};
  std::atomic<uint64_t> promotions_{0};
  std::atomic<uint64_t> drive_evictions_{0};
  std::atomic<uint64_t> write_failures_{0};
  std::atomic<uint64_t> loop_commits_{0};
  std::atomic<uint64_t> drive_event_seq_{0};
  mutable Mutex tenants_mu_;
  std::shared_ptr<const TenantMap> tenants_ MEMKV_GUARDED_BY(tenants_mu_);  // never null
  // What puts in flight hold of each tenant's drive quota (Reserve,
  // HoldDriveQuota), given back once the drives hold the value.
  QuotaLedger drive_holds_{"tenants[].drive_quota"};

  // Last: joined (running what is queued) before the stores go.
  std::unique_ptr<IoThreads> io_;  // null: memory mode
};

template <std::invocable<Status> Done>
Completion TieredStore::Commit(storage::PendingPut put, std::string_view key, uint64_t checksum,
                               const PutOptions& options, const ReplyTo& reply, Done&& done) {
  if (drives_ == nullptr) {
    std::forward<Done>(done)(memory_->CommitPut(std::move(put), key, checksum, options));
    return Completion::kInline;
  }
  const bool small = drives_->BuffersPut(put.size());
  const bool inline_write = drives_->sync_mode() == drive::SyncMode::kInterval && small;
  PutCommit commit{std::move(put), std::string(key), checksum, options};
  if (small && reply.turn != nullptr) {
    TurnCommits& turn = *reply.turn;
    turn.waiters_.push_back({reply.owner, turn.puts_.size(), 1, StatusDone(std::forward<Done>(done)), {}});
    turn.puts_.push_back(std::move(commit));
    turn.inbox_ = reply.inbox;
    return inline_write ? Completion::kTurn : Completion::kPending;
  }
  if (inline_write) {
    std::forward<Done>(done)(WriteThrough(std::move(commit)));
    return Completion::kInline;
  }
  CommitLater(std::move(commit), reply, StatusDone(std::forward<Done>(done)));
  return Completion::kPending;
}

template <std::invocable<std::vector<Status>> Done>
Completion TieredStore::CommitMany(std::vector<PutCommit>&& puts, const ReplyTo& reply, Done&& done) {
  if (drives_ == nullptr || puts.empty()) {
    std::vector<storage::MemoryStore::Commit> commits;
    commits.reserve(puts.size());
    // The puts end here: each entry takes its key over.
    for (PutCommit& p : puts) commits.push_back({&p.put, p.key, p.checksum, &p.options, &p.key});
    std::forward<Done>(done)(memory_->CommitPuts(commits));
    puts.clear();
    return Completion::kInline;
  }
  const bool small = std::all_of(puts.begin(), puts.end(), [&](const PutCommit& p) { return drives_->BuffersPut(p.put.size()); });
  if (small && reply.turn != nullptr) {
    TurnCommits& turn = *reply.turn;
    turn.waiters_.push_back({reply.owner, turn.puts_.size(), puts.size(), {}, StatusesDone(std::forward<Done>(done))});
    for (PutCommit& p : puts) turn.puts_.push_back(std::move(p));
    puts.clear();
    turn.inbox_ = reply.inbox;
    return drives_->sync_mode() == drive::SyncMode::kInterval ? Completion::kTurn : Completion::kPending;
  }
  if (small && drives_->sync_mode() == drive::SyncMode::kInterval) {
    std::forward<Done>(done)(WriteThroughMany(std::move(puts)));
    return Completion::kInline;
  }
  CommitManyLater(std::move(puts), small, reply, StatusesDone(std::forward<Done>(done)));
  return Completion::kPending;
}

template <std::invocable<Result<StoredValue>> Done>
Completion TieredStore::Get(std::string_view key, ReadNeed need, const ReplyTo& reply, Done&& done,
                            storage::ReadCheck check) {
  std::optional<uint64_t> drive_size;
  Result<StoredValue> value =
      GetWithoutIo(key, need == ReadNeed::kDramPin ? storage::ReadCheck::kNow : check, &drive_size);
  if (!drive_size) {
    std::forward<Done>(done)(std::move(value));
    return Completion::kInline;
  }
  GetLater(std::string(key), *drive_size, need, reply, ValueDone(std::forward<Done>(done)));
  return Completion::kPending;
}

template <std::invocable<std::vector<Result<StoredValue>>> Done>
Completion TieredStore::GetMany(std::span<const std::string_view> keys, const ReplyTo& reply, Done&& done,
                                storage::ReadCheck check) {
  std::vector<Result<StoredValue>> values;
  values.reserve(keys.size());
  std::vector<DriveRead> reads;
  for (size_t i = 0; i < keys.size(); ++i) {
    std::optional<uint64_t> drive_size;
    values.push_back(GetWithoutIo(keys[i], check, &drive_size));
    if (drive_size) reads.push_back({i, std::string(keys[i]), *drive_size});
  }
  if (reads.empty()) {
    std::forward<Done>(done)(std::move(values));
    return Completion::kInline;
  }
  GetManyLater(std::move(values), std::move(reads), reply, ValuesDone(std::forward<Done>(done)));
  return Completion::kPending;
}

template <std::invocable<Status> Done>
Completion TieredStore::Delete(std::string_view key, const ReplyTo& reply, Done&& done) {
  if (drives_ == nullptr) {
    std::forward<Done>(done)(memory_->Delete(key));
    return Completion::kInline;
  }
  DeleteLater(std::string(key), reply, StatusDone(std::forward<Done>(done)));
  return Completion::kPending;
}

}  // namespace memkv::tier

#endif  // MEMKV_TIER_TIERED_STORE_H_
