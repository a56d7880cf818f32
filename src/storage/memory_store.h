// MemoryStore: the DRAM tier. A block index over one registered pool in which
// values are packed at the granularity they need.
//
// The pool is one anonymous mapping of `max_size_bytes` (rounded down to whole
// `block_size_bytes`), allocated once at Create() and never resized: it is the
// region the RDMA transport registers, and values are addressed at their
// offsets in it. A value takes ceil(size / kPoolUnitBytes) units of 64 bytes,
// in one contiguous run when the pool has one (best fit), else in up to
// kMaxPiecesPerValue runs; an empty value takes none. PoolAllocator
// (pool_allocator.h) keeps the free runs; docs/storage.md ("The DRAM pool")
// says why this design and not slabs.
//
// Page backing (MemoryStoreOptions::hugepages, hugepages.h): explicit 2 MiB
// hugetlb pages when the policy asks for them or enough are free, else
// transparent hugepages (madvise), else 4 KiB pages. backing() says which the
// pool got and why; start logs it. With `prefault` the whole pool is faulted
// in by Create, so the first pass over it runs at the speed of later ones.
//
// Writing is two-phase so the network layer can receive straight into the pool
// with no intermediate copy:
//   auto w = store.BeginPut(size);          // reserves room, may evict LRU
//   readv(socket, w->iov())                 // fill it, lock-free
//   store.CommitPut(std::move(*w), key, checksum);  // publish atomically
// Until CommitPut the bytes are invisible; a dropped PendingPut returns its
// room. CommitPut replaces any previous value of the key in one step, so a
// reader sees the old value or the new one, never a mix.
//
// Reading pins the value: Get() returns a ReadHandle whose bytes stay valid
// (not reused by eviction, overwrite or delete) until the handle is destroyed.
// Get() verifies the checksum over the pinned bytes before returning; a
// mismatch drops the entry, counts a checksum failure and reports a miss.
//
// Eviction: when BeginPut cannot place a value, committed values are evicted
// least-recently-used first (Get and CommitPut count as use) until it can:
// until enough units are free in at most kMaxPiecesPerValue runs, so a put
// evicts about its own size, not a fixed chunk. Eviction skips pinned values:
// a reader is using them, and evicting one would free nothing now. A value
// deleted or overwritten while pinned is unlinked from the index at once but
// its units return to the pool only when the last pin goes. A value larger
// than the whole pool is refused with TooLarge; if not enough can be freed
// right now (everything pinned or pending), BeginPut fails with
// ResourceExhausted and evicts nothing.
//
// Value attributes (PutOptions, docs/storage.md): CommitPut keeps each
// value's expiry (wall-clock ms, from the RealtimeClock), retention class,
// parent key and block hashes.
//   - Expiry: past it a value is a miss to Get, Exists, ValueSize and
//     OfferKeys, and its room is freed when a lookup meets it, when room is
//     needed, or by SweepExpired (an expiry-ordered index keeps that cheap).
//   - Retention pinned: not evicted while its TTL runs; each Get hit re-arms
//     the TTL (ttl 0: pin_ttl; at most pin_ttl_max). All pinned values
//     together take at most pinned_max_fraction of the pool: CommitPut of a
//     pin past that fails ResourceExhausted and leaves the key as it was.
//   - Eviction order: expired values, then evict_first values (least
//     recently used first), then normal values least recently used first
//     among the "leaves": a value whose descendants (values naming it as
//     parent_key) are stored goes only after them, so prefix chains lose
//     their tails before their heads. As a last resort (parent cycles, or
//     every leaf held by readers) any unpinned value goes, LRU first.
// Tenant quotas (SetTenants, docs/storage.md "Tenant quotas"): each value
// belongs to the tenant whose prefix starts its key (TenantMap), or to none
// (the administrator's keys, which have no quota). The store counts each
// tenant's value bytes and keys and keeps an LRU list per tenant. A put of a
// tenant whose usage (less the value the put replaces) plus the new value
// would pass its dram quota first evicts that tenant's own values, coldest
// first (expired and evict_first ones before the others; within a tenant
// plain LRU, without the leaves-first order), never another tenant's or the
// administrator's. Values it cannot evict (retention pinned, held by
// readers) make the put fail with ResourceExhausted naming
// tenants[].dram_quota, having evicted nothing. BeginPut(size, key) does
// this before any eviction for pool room, and CommitPut checks again (so
// that a tenant's usage never passes its quota); a refused CommitPut leaves
// the key's previous value as it was.
// These policies (expiry, retention, eviction order, tenant usage) are the
// storage policy kit's (storage/policy/policies.h), which the drive tier
// composes too; the store places values in the pool and asks the kit.
// An observer (MemoryStoreOptions::observer, store_event.h) hears of every
// publish and every removal, after the change, outside the store's lock.
//
// Thread-safety: every method may be called from any thread. One mutex guards
// the index, LRU list and allocator; checksum work and data copies happen
// outside it. PendingPut and ReadHandle are move-only and may be destroyed on
// any thread, but must not outlive the store.
#ifndef MEMKV_STORAGE_MEMORY_STORE_H_
#define MEMKV_STORAGE_MEMORY_STORE_H_

#include <sys/uio.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "base/key_page.h"
#include "base/quota_ledger.h"
#include "base/small_vector.h"
#include "base/tenant_map.h"
#include "memkv/put_options.h"
#include "memkv/status.h"
#include "storage/hugepages.h"
#include "storage/pool_allocator.h"
#include "storage/store_event.h"

namespace memkv::storage {

// The pool's allocation unit: every value's room is a whole number of these,
// and every value starts at a multiple of it (cache-line aligned).
inline constexpr uint64_t kPoolUnitBytes = 64;
// A value is placed in at most this many runs of the pool (iovecs, RDMA
// segments); past that, eviction goes on until it fits in fewer. IOV_MAX.
inline constexpr uint32_t kMaxPiecesPerValue = 1024;

// Called by Create while it faults the pool in: bytes done so far and the total.
using PrefaultProgress = std::function<void(uint64_t done_bytes, uint64_t total_bytes)>;

struct MemoryStoreOptions {
  uint64_t max_size_bytes = 256ULL << 20;   // pool size; rounded down to whole blocks
  uint64_t block_size_bytes = 2ULL << 20;   // memory.block_size: the pool is a whole number of these
  // kAuto: hugetlb if enough 2 MiB pages are free, else THP, else 4 KiB.
  // kRequire: Create fails (FailedPrecondition, NotEnoughHugePages) unless
  // the pool is hugetlb-backed. kNever: 4 KiB pages, THP refused too.
  HugePagePolicy hugepages = HugePagePolicy::kAuto;
  // Root under which the hugepage counters and the THP setting are read
  // (HugePageReader); tests point it at a fixture tree. The mapping itself is
  // always the real kernel's.
  std::string host_root = "/";
  // Fault every page of the pool in at Create (MADV_POPULATE_WRITE, on
  // several threads), so that no put pays for first touches. Off: pages are
  // touched lazily, by the first value written there.
  bool prefault = false;
  PrefaultProgress prefault_progress = nullptr;  // optional; called every few hundred MiB
  // memory.read_check_interval_ms. A value handed out unchecked
  // (ReadCheck::kLater: a TCP get, whose client checks the bytes end to end)
  // is hashed by CheckLater at most once per this interval: a value whose
  // bytes matched less than this long ago is not hashed again. 0: hashed
  // after every send. Gets checked before they return (kNow) always hash.
  Nanos read_check_interval_ns = 0;
  const Clock* clock = nullptr;  // for that interval; nullptr: the real monotonic clock
  // Expiry instants (ms since the epoch, so the drives can keep them);
  // nullptr: the system's wall clock.
  const RealtimeClock* realtime_clock = nullptr;
  // memory.pinned_max_fraction: the most of the pool that pinned values may
  // take together, in (0, 1].
  double pinned_max_fraction = 0.5;
  // memory.pin_ttl: the TTL of a pinned value put without one.
  uint64_t pin_ttl_ms = 30ULL * 60 * 1000;
  // memory.pin_ttl_max: longer pin TTLs are cut to this.
  uint64_t pin_ttl_max_ms = 24ULL * 60 * 60 * 1000;
  // Told of every publish and removal (store_event.h) in `observed`; optional.
  StoreObserver observer = nullptr;
  StoreEventSet observed = StoreEventSet::All();
};

// How the pool is mapped; fixed at Create().
struct PoolBacking {
  PageKind kind = PageKind::kSmall;
  uint64_t mapping_bytes = 0;  // the mmap length: the pool, rounded up to 2 MiB for hugetlb
  // One line for the start-up log: the kind, and why not a better one
  // ("transparent hugepages (THP enabled: madvise; hugetlb not used: 0 free
  // 2 MiB hugepages, 128 needed)").
  std::string detail;
  uint64_t prefault_nanos = 0;  // how long faulting the pool in took (0: not prefaulted)
};

// Counters, readable at any time (relaxed atomics; a snapshot may be skewed).
struct MemoryStoreStats {
  uint64_t pool_bytes = 0;         // the pool's capacity
  uint64_t block_size_bytes = 0;
  // Capacity consumed: pool bytes not free (committed values, values still
  // pinned by readers after a delete or overwrite, puts in flight), each
  // rounded up to whole units.
  uint64_t used_bytes = 0;
  uint64_t value_bytes = 0;        // sum of committed value sizes
  uint64_t free_bytes = 0;         // pool_bytes - used_bytes
  uint64_t largest_free_bytes = 0; // the longest free run
  uint64_t free_runs = 0;          // how many pieces the free bytes are in
  uint64_t keys = 0;               // committed values in the index
  uint64_t hits = 0;
  uint64_t misses = 0;
  uint64_t evictions = 0;          // values evicted to make room
  uint64_t checksum_failures = 0;  // reads whose bytes did not match
  // CheckLater calls: hashed, and not hashed because the value had matched
  // within read_check_interval_ns.
  uint64_t later_checks = 0;
  uint64_t later_checks_skipped = 0;
  uint64_t expired = 0;            // values dropped because their TTL ran out
  // Room held by values of retention class pinned, and its cap
  // (pinned_max_fraction of the pool).
  uint64_t pinned_bytes = 0;
  uint64_t pinned_cap_bytes = 0;
  uint64_t pinned_values = 0;
  uint64_t pin_refusals = 0;       // pinned puts refused at the cap
  PageKind page_kind = PageKind::kSmall;  // PageKindName(): "hugetlb 2MiB", ...

  // 1 - largest_free_bytes / free_bytes: 0 when the free bytes are one run,
  // near 1 when they are scattered in small pieces. 0 when nothing is free.
  double fragmentation() const;
  // used_bytes / value_bytes (0 without values): what a stored byte costs.
  double bytes_per_value_byte() const;
};

class MemoryStore;
struct StoreEntry;  // internal

// Where a value's bytes are in the pool: one iovec per stretch, nearly always
// one, kept in place (no allocation).
using ValueIov = SmallVector<iovec, 1>;

// Room reserved by BeginPut, not yet visible. Move-only; destroying it
// without CommitPut gives the room back.
class PendingPut {
 public:
  PendingPut() = default;
  PendingPut(PendingPut&& other) noexcept;
  PendingPut& operator=(PendingPut&& other) noexcept;
  PendingPut(const PendingPut&) = delete;
  PendingPut& operator=(const PendingPut&) = delete;
  ~PendingPut();

  uint64_t size() const { return size_; }
  // Where the value's bytes go, in order; total length == size().
  std::span<const iovec> iov() const { return iov_; }
  // The tenant's DRAM quota the put holds (QuotaLedger), from BeginPut(size,
  // key) until CommitPut publishes it or the put is dropped.
  const QuotaHold& dram_hold() const { return dram_hold_; }
  // The tenant's drive quota the put holds, for a tier that writes it to
  // its drives (TieredStore::Reserve); given back once they hold it.
  QuotaHold drive_hold;

 private:
  friend class MemoryStore;
  MemoryStore* store_ = nullptr;
  uint64_t size_ = 0;
  QuotaHold dram_hold_;
  PoolRuns runs_;
  ValueIov iov_;
};

// A pinned, checksum-verified value. Move-only; destroying it releases the pin.
class ReadHandle {
 public:
  ReadHandle() = default;
  ReadHandle(ReadHandle&& other) noexcept;
  ReadHandle& operator=(ReadHandle&& other) noexcept;
  ReadHandle(const ReadHandle&) = delete;
  ReadHandle& operator=(const ReadHandle&) = delete;
  ~ReadHandle();

  uint64_t size() const;
  uint64_t checksum() const;
  std::span<const iovec> iov() const;
  // Copies the value into dst (which must hold size() bytes).
  void CopyTo(void* dst) const;
  // For a handle from Get(key, ReadCheck::kLater), once its bytes have been
  // used (sent under checksum() to a reader that checks them): hashes them,
  // and on a mismatch drops the value from the store, counts the failure and
  // returns Corruption. Ok, without hashing, for a handle checked at Get and
  // for a value whose bytes matched within read_check_interval_ns.
  Status CheckLater();

 private:
  friend class MemoryStore;
  MemoryStore* store_ = nullptr;
  std::shared_ptr<StoreEntry> entry_;
  bool unchecked_ = false;
};

// When Get checks a value's bytes against its checksum.
enum class ReadCheck {
  kNow,    // before it returns: a mismatch is a miss
  kLater,  // by the caller, with ReadHandle::CheckLater once the bytes are used
};

// What a put of a tenant's key that cannot be placed within the tenant's
// quota is: a refused put (counted in TenantUsage::quota_refusals), or a
// promotion from the drives, which the tier just skips (not counted).
enum class QuotaUse : uint8_t { kPut, kPromotion };

class MemoryStore {
 public:
  // InvalidArgument when the block size is not a multiple of kPoolUnitBytes
  // or the pool holds no whole block;
  // FailedPrecondition when options.hugepages is kRequire and the pool cannot
  // be hugetlb-backed (too few free 2 MiB pages: NotEnoughHugePages's
  // message; or the hugetlb mmap fails); Internal when the mapping fails
  // (naming the size and errno).
  static Result<std::unique_ptr<MemoryStore>> Create(const MemoryStoreOptions& options);
  ~MemoryStore();
  MemoryStore(const MemoryStore&) = delete;
  MemoryStore& operator=(const MemoryStore&) = delete;

  Result<PendingPut> BeginPut(uint64_t size);
  // BeginPut for a put of `key` (the stored key, tenant prefix included):
  // when key's tenant would pass its dram quota, first evicts that tenant's
  // own coldest values (the key's current value, which the put replaces,
  // counts as freed and is not evicted), and only then anything for pool
  // room. ResourceExhausted naming tenants[].dram_quota, nothing evicted,
  // when the tenant's evictable values do not free enough. For a key under
  // no tenant (or without tenants) exactly BeginPut(size).
  Result<PendingPut> BeginPut(uint64_t size, std::string_view key, QuotaUse use = QuotaUse::kPut);
  // The same, into `*put` (empty on entry, and on any error): a put on the
  // request path is reserved where it stays, not moved through a Result.
  Status BeginPut(uint64_t size, std::string_view key, QuotaUse use, PendingPut* put);
  // Publishes the value under key. `checksum` is Checksum() of the bytes the
  // caller wrote; it is stored and verified on every read. `options` are
  // kept with the value (see above). ResourceExhausted, naming
  // memory.pinned_max_fraction and the figures, when a pinned value would
  // take the pinned values past their cap: the room goes back to the pool
  // and any previous value of the key stays.
  Status CommitPut(PendingPut put, std::string_view key, uint64_t checksum, const PutOptions& options = {});
  // CommitPut for several puts under one hold of the store's lock, in order
  // (a key named twice ends with the later value); a status per put. Each
  // put's room is taken over (its PendingPut is left empty) unless its
  // status says it was not this store's.
  struct Commit {
    PendingPut* put = nullptr;
    std::string_view key;
    uint64_t checksum = 0;
    const PutOptions* options = nullptr;
    // The caller's string `key` views, when the caller is done with it: the
    // entry takes it over instead of copying it (null: copied).
    std::string* key_owner = nullptr;
  };
  std::vector<Status> CommitPuts(std::span<const Commit> puts);

  // What CommitPut of a value of `size` bytes under `key` with `options`
  // would say about the pin cap, now: Ok, or its ResourceExhausted. For a
  // caller that must know before it writes the value elsewhere (the drives);
  // CommitPut checks again.
  Status CheckPinRoom(std::string_view key, uint64_t size, const PutOptions& options) const;

  // NotFound on a miss (including a checksum mismatch, which is also counted).
  // With ReadCheck::kLater the bytes are returned unchecked, for a caller
  // whose reader checks them end to end anyway (a TCP get: the client hashes
  // what it receives against the checksum sent with it): the hash then runs
  // after the send, on bytes the send has just brought into cache, instead
  // of on the request's latency path.
  Result<ReadHandle> Get(std::string_view key, ReadCheck check = ReadCheck::kNow);
  // Index lookup only: no checksum verification, no hit/miss counting and no
  // LRU refresh, so batch prefix probes stay cheap and do not skew the
  // counters. A later Get may still miss if the bytes turn out corrupt.
  // An expired value is absent (and freed).
  bool Exists(std::string_view key);
  // Exists for a prefix match: also re-arms a pinned value's TTL, as a hit
  // does (the engine is about to use the value).
  bool Match(std::string_view key);
  // Frees up to `max_entries` values whose TTL has run out, soonest expired
  // first; returns how many. Cheap when none has: meant to be called
  // periodically (a Redis-style active sweep) beside the lazy freeing.
  size_t SweepExpired(size_t max_entries);
  // The size of the value under `key`, if present (index lookup only, like
  // Exists).
  std::optional<uint64_t> ValueSize(std::string_view key);
  // Offers every key in the index to `page` (a List page), under the index
  // lock: O(keys).
  void OfferKeys(KeyPage* page) const;
  // NotFound if absent. Safe while reads of the key are in flight.
  Status Delete(std::string_view key);

  // Convenience for tests and small callers: BeginPut + copy + CommitPut.
  Status Put(std::string_view key, const void* data, uint64_t size, const PutOptions& options = {});

  // The tenants whose quotas and usage the store keeps; null or empty: none.
  // Any thread, any time (a config reload): recomputes every stored value's
  // tenant under the store's lock (O(keys)). Counters of a tenant whose name
  // stays carry over; the new quotas apply from the next put.
  void SetTenants(std::shared_ptr<const TenantMap> tenants);
  // One row per tenant of the last SetTenants, in its order: dram_bytes
  // (value bytes of the tenant's stored values), dram_keys, evictions (its
  // values evicted, for pool room or its quota), quota_evictions (of those,
  // for its quota), quota_refusals (puts refused at its quota). The drive
  // fields are 0.
  std::vector<TenantUsage> TenantUsages() const;

  // Replaces the observer (MemoryStoreOptions::observer). Only before the
  // store is shared between threads: the observer is read without a lock.
  void SetObserver(StoreObserver observer, StoreEventSet observed = StoreEventSet::All());

  // The TTL CommitPut gives a value put with `options`: a pin's defaulted
  // (pin_ttl) and clamped (pin_ttl_max); others' as given (0: none).
  uint64_t AppliedTtlMs(const PutOptions& options) const;
  // The clock expiry instants are read from.
  const RealtimeClock& realtime_clock() const;

  MemoryStoreStats Stats() const;
  // The pool mapping (for RDMA registration).
  void* pool_base() const;
  uint64_t pool_bytes() const;
  const PoolBacking& backing() const;

  // TEST ONLY: flips one byte of the stored value of `key` in the pool so that
  // tests can provoke a checksum mismatch. NotFound if absent,
  // FailedPrecondition for an empty value (no byte to flip). Races with
  // concurrent readers of that key; never call it outside tests.
  Status CorruptForTesting(std::string_view key);

 private:
  friend class PendingPut;
  friend class ReadHandle;
  struct Impl;
  explicit MemoryStore(std::unique_ptr<Impl> impl);
  // The entry a put of `key` publishes, built outside the lock (the key copy
  // and allocations cost nothing there); it takes over the put's room.
  std::shared_ptr<StoreEntry> EntryOf(PendingPut& put, std::string_view key, uint64_t checksum,
                                      const PutOptions& options) const;
  // The same, taking `key` over.
  std::shared_ptr<StoreEntry> EntryOf(PendingPut& put, std::string&& key, uint64_t checksum,
                                      const PutOptions& options) const;
  // Back to the pool: the room of a PendingPut dropped uncommitted.
  void ReleaseRuns(PoolRuns& runs);
  // Hands events collected under the lock to the observer.
  void Emit(std::vector<StoreEvent>& events) const;
  // Drops one ReadHandle pin; frees the room if it was the last pin of an
  // entry already unlinked from the index.
  void Unpin(const std::shared_ptr<StoreEntry>& entry);
  // Hashes a pinned entry's bytes; on a mismatch unlinks it (when still
  // linked), counts and logs the failure and returns Corruption.
  Status CheckPinned(const std::shared_ptr<StoreEntry>& entry);
  // ReadHandle::CheckLater: CheckPinned, unless the bytes matched within
  // read_check_interval_ns.
  Status CheckPinnedLater(const std::shared_ptr<StoreEntry>& entry);
  std::unique_ptr<Impl> impl_;
};

}  // namespace memkv::storage

#endif  // MEMKV_STORAGE_MEMORY_STORE_H_
