// Internals of MemoryStore, shared by its implementation files:
//   memory_store.cc          puts: BeginPut, CommitPut, Delete, lookups, Stats
//   memory_store_reads.cc    Get, ReadHandle, checksums of pinned bytes
//   memory_store_index.cc    the index: link, unlink, pins, expiry, making room
//   memory_store_tenants.cc  tenant quotas: SetTenants, usage, room in a quota
//   memory_store_pool.cc     the pool: mapping, hugepages, prefault, Create, freeing runs
// The policies (LRU and prefix-aware eviction, retention, TTLs, tenant
// usage) are the kit's (storage/policy/policies.h); the store places values
// in the pool and asks the kit what to evict.
//
// Life of a run of units: free (PoolAllocator) -> PendingPut -> StoreEntry
// (linked in the index) -> [unlinked but pinned: "draining"] -> free. Every
// transition happens under Impl::mu, and an entry's runs go back exactly once:
// when it is both unlinked and unpinned (FreeRunsLocked is the only way back
// for committed runs, and it moves the entry to kFreed). So at any instant
//   unit_count == free + linked + draining + held by PendingPuts.
//
// The lock is never held while value bytes are touched: writers fill runs
// before CommitPut takes the lock, readers verify and copy after Get drops it.
// The mutex hand-off (CommitPut unlock -> Get lock; Unpin unlock -> BeginPut
// lock) is what orders those byte accesses between threads.
#ifndef MEMKV_STORAGE_MEMORY_STORE_IMPL_H_
#define MEMKV_STORAGE_MEMORY_STORE_IMPL_H_

#include <sys/uio.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/clock.h"
#include "base/mutex.h"
#include "base/quota_ledger.h"
#include "base/tenant_map.h"
#include "storage/memory_store.h"
#include "storage/policy/policies.h"
#include "storage/pool_allocator.h"

namespace memkv::storage {

enum class EntryState {
  kLinked,    // in the index and the policies
  kUnlinked,  // deleted, overwritten or evicted; room kept for its pins
  kFreed,     // room back in the pool
};

// One value. policy::PolicyEntry carries what the policies keep of it
// (value_bytes is the value's size, cost its units, pins its readers).
struct StoreEntry : policy::PolicyEntry {
  // Immutable once the entry is published; pin holders read them unlocked.
  std::string key;     // the index's string_view key points into this string
  std::string parent;  // PutOptions::parent_key; PolicyEntry::parent_key views it
  uint64_t checksum = 0;
  PoolRuns runs;
  ValueIov iov;
  std::string block_hash;
  std::string parent_hash;
  HashKind hash_kind = HashKind::kBytes;

  // Guarded by MemoryStore::Impl::mu.
  EntryState state = EntryState::kLinked;

  // When a read last found the bytes matching (the store's clock);
  // kNeverChecked until then. Written by readers without the lock.
  std::atomic<Nanos> checked_at{kNeverChecked};
  static constexpr Nanos kNeverChecked = INT64_MIN;

  uint64_t size() const { return value_bytes; }
  uint64_t units() const { return cost; }
};

// Keys may be binary (hashes of token blocks); log them readably and bounded.
std::string KeyForLog(std::string_view key);
inline uint64_t UnitsFor(uint64_t size_bytes) { return (size_bytes + kPoolUnitBytes - 1) / kPoolUnitBytes; }

struct MemoryStore::Impl {
  Impl(uint8_t* base_in, PoolBacking backing_in, const MemoryStoreOptions& options, uint64_t pool_bytes_in);
  ~Impl();  // unmaps the pool
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  class EventScope;
  // The index's key: a view of the entry's key and its hash. A put hashes
  // its key once, for the lookup and the insert; a put that replaces a
  // value keeps the node and repoints `view` at the new entry's key (the
  // same characters, so the same hash and bucket).
  struct IndexKey {
    mutable std::string_view view;
    size_t hash = 0;
  };
  struct IndexHash {
    using is_transparent = void;
    size_t operator()(const IndexKey& k) const noexcept { return k.hash; }
    size_t operator()(std::string_view k) const noexcept { return std::hash<std::string_view>{}(k); }
  };
  struct IndexEq {
    using is_transparent = void;
    static std::string_view View(const IndexKey& k) { return k.view; }
    static std::string_view View(std::string_view k) { return k; }
    template <class A, class B>
    bool operator()(const A& a, const B& b) const noexcept {
      return View(a) == View(b);
    }
  };
  using Index = std::unordered_map<IndexKey, std::shared_ptr<StoreEntry>, IndexHash, IndexEq>;
  static IndexKey KeyOf(std::string_view key) { return IndexKey{key, IndexHash{}(key)}; }

  uint8_t* UnitAddress(uint64_t unit) const { return base + unit * kPoolUnitBytes; }
  // Into `*iov`, the iovec list for `size` bytes in `runs`; runs that touch
  // collapse into one iovec so readv/ChecksumIov see few, large segments.
  void BuildIov(const PoolRuns& runs, uint64_t size, ValueIov* iov) const;

  // --- memory_store_index.cc
  // Into the index and the policies; queues the stored event.
  // `key`: e's key and its hash, KeyOf(e->key).
  void LinkLocked(const IndexKey& key, const std::shared_ptr<StoreEntry>& e) MEMKV_REQUIRES(mu);
  // Publishes a put's entry (MemoryStore::EntryOf) in place of the key's
  // value: CommitPut's checks (the pin cap, the tenant's quota; on a
  // refusal the entry's room is freed) and links. `dram_hold`: the put's,
  // released once the tenant's bytes count the entry.
  Status CommitLocked(std::shared_ptr<StoreEntry> entry, QuotaHold& dram_hold) MEMKV_REQUIRES(mu);
  // Removes the entry at `it` from the index and the policies, and queues
  // its removal event. The entry goes to `dropped`, released after mu.
  void UnlinkLocked(Index::iterator it, RemovalReason reason) MEMKV_REQUIRES(mu);
  // UnlinkLocked of the entry at `it` and LinkLocked of `e` (the same key)
  // in its place, keeping the index's node.
  void ReplaceLocked(Index::iterator it, std::shared_ptr<StoreEntry> e, RemovalReason reason) MEMKV_REQUIRES(mu);
  // The index-independent halves of linking and unlinking: the entry's
  // state, the policies, the counts and the event (and, detached, its room).
  void AttachLocked(StoreEntry& e) MEMKV_REQUIRES(mu);
  void DetachLocked(std::shared_ptr<StoreEntry> e, RemovalReason reason) MEMKV_REQUIRES(mu);
  // The linked entry of `key`, or index.end(); an expired one is unlinked
  // on the way (RemovalReason::kExpired).
  Index::iterator FindLiveLocked(std::string_view key) MEMKV_REQUIRES(mu);
  bool ExpiredLocked(const StoreEntry& e) const MEMKV_REQUIRES(mu) { return e.expired(realtime->NowMillis()); }
  void PinLocked(StoreEntry* e) MEMKV_REQUIRES(mu);
  void UnpinLocked(StoreEntry* e) MEMKV_REQUIRES(mu);
  void FreeRunsLocked(StoreEntry* e) MEMKV_REQUIRES(mu);
  // Unlinks expired values, soonest first, up to `max_entries`, stopping
  // early once `units` (0: never) fit. Returns how many.
  size_t SweepExpiredLocked(size_t max_entries, uint64_t units) MEMKV_REQUIRES(mu);
  bool FitsLocked(uint64_t units) const MEMKV_REQUIRES(mu) {
    return allocator.free_units() >= units && allocator.CanAllocate(units, kMaxPiecesPerValue);
  }
  // Evicts until `units` fit in kMaxPiecesPerValue runs: expired values,
  // then the kit's order (evict_first, leaves, then any other unpinned
  // value); false (having evicted nothing but expired values) when even
  // evicting every evictable value would not free enough units.
  bool MakeRoomLocked(uint64_t units) MEMKV_REQUIRES(mu);
  // Units that evicting every evictable value would free.
  uint64_t EvictableUnitsLocked() const MEMKV_REQUIRES(mu) { return policies.EvictableCost(); }
  void QueueEventLocked(const StoreEntry& e, StoreEventKind kind, RemovalReason reason) MEMKV_REQUIRES(mu);

  // --- memory_store_tenants.cc
  // Room within tenant `t`'s dram quota for a value of `size` bytes under
  // `key`, whose current value (`replaced` bytes, the tenant's) the put
  // replaces: evicts the tenant's coldest evictable values (expired and
  // evict_first ones first; never `key`'s) when the quota needs it. Ok, or
  // ResourceExhausted naming the quota with nothing evicted.
  // `others`: what the tenant's other puts in flight hold of the quota
  // (dram_holds), which the room must leave them.
  Status TenantRoomLocked(uint32_t t, std::string_view key, uint64_t size, uint64_t replaced, uint64_t others)
      MEMKV_REQUIRES(mu);
  // The bytes of `key`'s linked value when it is tenant `t`'s, else 0.
  uint64_t ReplacedBytesLocked(uint32_t t, std::string_view key) const MEMKV_REQUIRES(mu) {
    auto it = index.find(key);
    return policy::TenantQuotas::ReplacedBytes(t, it != index.end() ? it->second.get() : nullptr);
  }

  // --- memory_store_pool.cc
  void FreeLocked(std::span<const PoolRun> runs) MEMKV_REQUIRES(mu);
  void PublishFreeLocked() MEMKV_REQUIRES(mu);
  // Ok when a pin of `units` under `key` stays within the cap.
  Status PinRoomLocked(std::string_view key, uint64_t units) const MEMKV_REQUIRES(mu);

  uint8_t* const base;
  const uint64_t block_size;
  const uint64_t pool_bytes;
  const PoolBacking backing;
  const Nanos read_check_interval;
  const SteadyClock steady_clock;
  const Clock* const clock;
  const SystemRealtimeClock system_realtime;
  const RealtimeClock* const realtime;
  StoreObserver observer;  // set before the store is shared (SetObserver)
  StoreEventSet observed;  // the events `observer` takes
  const policy::RetentionOptions retention_options;

  mutable Mutex mu;
  // Invariant: index[k] == e  <=>  e->state == kLinked, and k views e->key.
  Index index MEMKV_GUARDED_BY(mu);
  // LRU and prefix-aware eviction, retention, expiry, tenant usage; and
  // StoreEntry's PolicyEntry fields of every entry.
  policy::Policies policies MEMKV_GUARDED_BY(mu);
  // The retention policy's relaxed mirrors (pinned bytes and values) and
  // its fixed cap, which Stats reads without the lock.
  const policy::RetentionPolicy* const pin_mirrors;
  uint64_t event_seq MEMKV_GUARDED_BY(mu) = 0;
  PoolAllocator allocator MEMKV_GUARDED_BY(mu);
  uint64_t draining_units MEMKV_GUARDED_BY(mu) = 0;  // held by unlinked entries with pins > 0
  // Collected under mu, handed over after it (EventScope).
  std::vector<StoreEvent> events MEMKV_GUARDED_BY(mu);
  std::vector<std::shared_ptr<StoreEntry>> dropped MEMKV_GUARDED_BY(mu);
  // What puts in flight hold of each tenant's DRAM quota (BeginPut to
  // CommitPut); its own lock.
  QuotaLedger dram_holds{"tenants[].dram_quota"};

  // Mirrors and counters for Stats(); written under mu or not, read lock-free.
  std::atomic<uint64_t> free_units{0};
  std::atomic<uint64_t> largest_free_units{0};
  std::atomic<uint64_t> free_runs{0};
  std::atomic<uint64_t> value_bytes{0};
  std::atomic<uint64_t> keys{0};
  std::atomic<uint64_t> hits{0};
  std::atomic<uint64_t> misses{0};
  std::atomic<uint64_t> evictions{0};
  std::atomic<uint64_t> checksum_failures{0};
  std::atomic<uint64_t> later_checks{0};
  std::atomic<uint64_t> later_checks_skipped{0};
  std::atomic<uint64_t> expired{0};
  std::atomic<uint64_t> pin_refusals{0};
};

// Holds the store's mutex; on the way out releases it, then drops the
// entries unlinked meanwhile and hands their events to the observer, so
// neither runs under the lock. The lists change places with empty ones the
// thread keeps, so a put that replaces a value allocates no list.
class MEMKV_SCOPED_CAPABILITY MemoryStore::Impl::EventScope {
 public:
  explicit EventScope(Impl& s) MEMKV_ACQUIRE(s.mu) : s_(s), lock_(s.mu) {}
  ~EventScope() MEMKV_RELEASE() {
    if (s_.events.empty() && s_.dropped.empty()) {
      lock_.Unlock();
      return;
    }
    thread_local std::vector<StoreEvent> spare_events;
    thread_local std::vector<std::shared_ptr<StoreEntry>> spare_dropped;
    std::vector<StoreEvent> to_observe;
    std::vector<std::shared_ptr<StoreEntry>> to_drop;
    to_observe.swap(spare_events);  // empty, with the capacity kept last time
    to_drop.swap(spare_dropped);
    to_observe.swap(s_.events);
    to_drop.swap(s_.dropped);
    lock_.Unlock();
    to_drop.clear();
    for (const StoreEvent& event : to_observe) s_.observer(event);
    to_observe.clear();
    spare_events.swap(to_observe);
    spare_dropped.swap(to_drop);
  }
  EventScope(const EventScope&) = delete;
  EventScope& operator=(const EventScope&) = delete;

 private:
  Impl& s_;
  MutexLock lock_;
};

}  // namespace memkv::storage

#endif  // MEMKV_STORAGE_MEMORY_STORE_IMPL_H_
