// MemoryStore implementation. See memory_store.h for the contract.
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
#include "storage/memory_store.h"

#include <sys/mman.h>

#include <algorithm>
#include <cassert>
#include <cctype>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <iterator>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>
#include <unordered_map>
#include <utility>

#include "base/bytes.h"
#include "base/checksum.h"
#include "base/log.h"
#include "base/clock.h"
#include "base/units.h"

namespace memkv::storage {
namespace {

// Intrusive LRU links, so that touching or unlinking an entry under the lock
// never allocates.
struct LruNode {
  LruNode* prev = this;
  LruNode* next = this;
};

enum class EntryState {
  kLinked,    // in the index and the LRU list
  kUnlinked,  // deleted, overwritten or evicted; room kept for its pins
  kFreed,     // room back in the pool
};

// Keys may be binary (hashes of token blocks); log them readably and bounded.
std::string KeyForLog(std::string_view key) {
  constexpr size_t kMaxPrintable = 64;
  constexpr size_t kMaxHexBytes = 32;
  bool printable = true;
  for (char c : key) {
    if (!std::isprint(static_cast<unsigned char>(c))) {
      printable = false;
      break;
    }
  }
  if (printable) {
    std::string out = "'";
    out.append(key.substr(0, kMaxPrintable));
    out.append(key.size() > kMaxPrintable ? "'..." : "'");
    return out;
  }
  size_t n = std::min(key.size(), kMaxHexBytes);
  return "0x" + HexEncode(reinterpret_cast<const uint8_t*>(key.data()), n) +
         (key.size() > n ? "..." : "");
}

uint64_t UnitsFor(uint64_t size_bytes) { return (size_bytes + kPoolUnitBytes - 1) / kPoolUnitBytes; }

#ifndef MAP_HUGE_2MB
#define MAP_HUGE_2MB (21 << MAP_HUGE_SHIFT)  // log2(2 MiB); older libc headers lack it
#endif

struct MappedPool {
  uint8_t* base = nullptr;
  PoolBacking backing;
};

// Explicit 2 MiB pages for `bytes`, rounded up to whole pages. On failure the
// status message is the failed call, for the caller to word.
Result<MappedPool> MapHugetlb(uint64_t bytes, const HugePageCounts& counts) {
  const uint64_t pages = HugePagesFor(bytes);
  const uint64_t length = pages * kHugePageBytes;
  // No MAP_NORESERVE: the kernel reserves every page now, so a shortfall
  // fails this call instead of raising SIGBUS at the first touch.
  void* base = mmap(nullptr, length, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | MAP_HUGE_2MB, -1, 0);
  if (base == MAP_FAILED) {
    int err = errno;
    return Internal("mmap(" + FormatSize(length) + ", MAP_HUGETLB|MAP_HUGE_2MB) for " + std::to_string(pages) +
                    " 2 MiB hugepages: " + std::strerror(err) + " (errno " + std::to_string(err) + ")");
  }
  MappedPool pool{static_cast<uint8_t*>(base), {PageKind::kHugetlb2MiB, length, ""}};
  pool.backing.detail = std::string(PageKindName(PageKind::kHugetlb2MiB)) + " (" + std::to_string(pages) +
                        " pages reserved of " + std::to_string(counts.available()) + " free)";
  return pool;
}

// An ordinary mapping: THP advised (4 KiB pages where THP is off), or THP
// refused under kNever. `why_not_hugetlb` goes into the detail line.
Result<MappedPool> MapOrdinary(uint64_t bytes, HugePagePolicy policy, const std::string& why_not_hugetlb,
                               const HugePageReader& reader) {
  // NORESERVE: the pool is sized to the box and touched lazily; do not make
  // the kernel account it all as committed up front.
  void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (base == MAP_FAILED) {
    int err = errno;
    return Internal("MemoryStore: mmap(" + FormatSize(bytes) + " = " + std::to_string(bytes) +
                    " bytes, MAP_PRIVATE|MAP_ANONYMOUS|MAP_NORESERVE) for the memory pool: " +
                    std::strerror(err) + " (errno " + std::to_string(err) + ")");
  }
  MappedPool pool{static_cast<uint8_t*>(base), {PageKind::kSmall, bytes, ""}};
  const std::string small(PageKindName(PageKind::kSmall));
  if (policy == HugePagePolicy::kNever) {
    // Keeps THP "always" off this mapping too, so "4 KiB pages" is the truth.
    if (madvise(base, bytes, MADV_NOHUGEPAGE) != 0) {
      LOG_DEBUG_C("memory") << "madvise(MADV_NOHUGEPAGE) on the memory pool: " << std::strerror(errno);
    }
    pool.backing.detail = small + " (" + why_not_hugetlb + ")";
    return pool;
  }
  // Transparent huge pages: a first write into a 2 MiB page then costs one
  // fault instead of 512, and the TLB covers the pool. Best effort: the
  // kernel may still hand out 4 KiB pages when it cannot find 2 MiB ones.
  if (madvise(base, bytes, MADV_HUGEPAGE) != 0) {
    int err = errno;
    pool.backing.detail = small + " (madvise(MADV_HUGEPAGE): " + std::strerror(err) + "; hugetlb not used: " +
                          why_not_hugetlb + ")";
    return pool;
  }
  const ThpMode thp = reader.ReadThp();
  const std::string thp_name(ThpModeName(thp));
  if (thp == ThpMode::kAlways || thp == ThpMode::kMadvise) {
    pool.backing.kind = PageKind::kTransparent;
    pool.backing.detail = std::string(PageKindName(PageKind::kTransparent)) + " (THP enabled: " + thp_name +
                          "; hugetlb not used: " + why_not_hugetlb + ")";
  } else {
    pool.backing.detail = small + " (THP " + thp_name + "; hugetlb not used: " + why_not_hugetlb + ")";
  }
  return pool;
}

// Maps `bytes` for the pool as `plan` says: hugetlb, else (unless the policy
// requires it) an ordinary mapping. See PoolBacking::detail.
Result<MappedPool> MapPool(uint64_t bytes, HugePagePolicy policy, const BackingPlan& plan,
                           const Result<HugePageCounts>& counts, const HugePageReader& reader) {
  if (!plan.try_hugetlb) return MapOrdinary(bytes, policy, plan.why_not_hugetlb, reader);
  Result<MappedPool> huge = MapHugetlb(bytes, *counts);
  if (huge.ok()) return huge;
  if (policy == HugePagePolicy::kRequire) {
    // The counts said enough were free: another process took them since, or
    // a hugetlb cgroup limit stands in the way.
    return FailedPrecondition("memory.max_size " + FormatSize(bytes) + ": " + huge.status().message() +
                              " although " + std::to_string(counts->available()) + " were free per " +
                              counts->source + " (taken meanwhile, or a hugetlb cgroup limit); free more with "
                              "sysctl -w vm.nr_hugepages=" + std::to_string(counts->total + HugePagesFor(bytes)) +
                              " (or lower memory.max_size)");
  }
  LOG_WARN_C("memory") << "memory pool: " << huge.status().message() << "; falling back to transparent hugepages";
  return MapOrdinary(bytes, policy, huge.status().message(), reader);
}


#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14; older libc headers lack it
#endif

// Faults [base, base + bytes) in, writable, on up to `threads` threads, in
// slices so `progress` can be called between them. MADV_POPULATE_WRITE where
// the kernel has it (one call per slice, no user-space loop); else a write to
// each page, which the kernel turns into the same faults. Page faults zero the
// pages, and zeroing is what costs: threads divide it.
void Prefault(uint8_t* base, uint64_t bytes, uint64_t page_bytes, const PrefaultProgress& progress) {
  constexpr uint64_t kSlice = 256ULL << 20;  // progress granule, and each thread's step
  const unsigned threads = std::max(1u, std::min(8u, std::thread::hardware_concurrency()));
  std::atomic<uint64_t> next{0};
  uint64_t done = 0;  // guarded by progress_mu
  std::atomic<bool> populate_works{true};
  std::mutex progress_mu;  // progress is called from one thread at a time
  auto work = [&] {
    for (;;) {
      const uint64_t begin = next.fetch_add(kSlice);
      if (begin >= bytes) return;
      const uint64_t len = std::min(kSlice, bytes - begin);
      if (!populate_works.load(std::memory_order_relaxed) || madvise(base + begin, len, MADV_POPULATE_WRITE) != 0) {
        populate_works.store(false, std::memory_order_relaxed);
        for (uint64_t off = 0; off < len; off += page_bytes) {
          reinterpret_cast<volatile uint8_t*>(base + begin)[off] = 0;
        }
      }
      std::lock_guard<std::mutex> lock(progress_mu);
      done += len;
      if (progress) progress(done, bytes);
    }
  };
  std::vector<std::thread> pool;
  for (unsigned i = 1; i < threads; ++i) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
}

}  // namespace

struct StoreEntry;

namespace {

// Entries ordered by a sequence (last use) or an instant (expiry); the
// pointer breaks ties and makes each pair unique.
using SeqSet = std::set<std::pair<uint64_t, StoreEntry*>>;
using ExpirySet = std::set<std::pair<int64_t, StoreEntry*>>;

// Which eviction queue an entry waits in.
enum class EvictQueue : uint8_t {
  kNone,   // not evictable in order: pinned, or a normal value with stored children
  kFirst,  // evict_first values
  kLeaf,   // normal values with no stored child
};

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

}  // namespace

// A value's links in its tenant's LRU list (intrusive, as LruNode).
struct TenantLink {
  TenantLink* prev = this;
  TenantLink* next = this;
  StoreEntry* owner = nullptr;  // null in a list's head
};

struct StoreEntry : LruNode {
  // Immutable once the entry is published; pin holders read them unlocked.
  std::string key;  // the index's string_view key points into this string
  uint64_t size = 0;
  uint64_t checksum = 0;
  uint64_t units = 0;  // the room it takes, in units
  std::vector<PoolRun> runs;
  std::vector<iovec> iov;
  // The put's attributes (PutOptions); ttl_ms as applied (a pin's clamped).
  Retention retention = Retention::kNormal;
  uint64_t ttl_ms = 0;
  std::string parent_key;
  std::string block_hash;
  std::string parent_hash;
  HashKind hash_kind = HashKind::kBytes;

  // Guarded by MemoryStore::Impl::mu.
  uint32_t pins = 0;
  EntryState state = EntryState::kLinked;
  int64_t expires_at_ms = 0;  // 0: never; a pin's moves on with each hit
  uint64_t last_use = 0;      // Impl::use_seq at the last put or hit
  EvictQueue queue = EvictQueue::kNone;
  SeqSet::iterator queue_pos;       // valid unless queue == kNone
  ExpirySet::iterator expiry_pos;   // valid when expires_at_ms != 0
  uint32_t tenant = TenantMap::kNone;  // index in Impl::tenant_states, while linked
  TenantLink tenant_link;              // in that tenant's LRU list (tenant != kNone)

  // When a read last found the bytes matching (the store's clock);
  // kNeverChecked until then. Written by readers without the lock.
  std::atomic<Nanos> checked_at{kNeverChecked};
  static constexpr Nanos kNeverChecked = INT64_MIN;

  bool pinned() const { return retention == Retention::kPinned; }
};

struct MemoryStore::Impl {
  Impl(MappedPool pool, const MemoryStoreOptions& options, uint64_t pool_bytes_in)
      : base(pool.base),
        block_size(options.block_size_bytes),
        pool_bytes(pool_bytes_in),
        backing(std::move(pool.backing)),
        read_check_interval(options.read_check_interval_ns),
        clock(options.clock != nullptr ? options.clock : &steady_clock),
        realtime(options.realtime_clock != nullptr ? options.realtime_clock : &system_realtime),
        pinned_max_fraction(options.pinned_max_fraction),
        pinned_cap_units(static_cast<uint64_t>(options.pinned_max_fraction *
                                               static_cast<double>(pool_bytes_in / kPoolUnitBytes))),
        pin_ttl_ms(options.pin_ttl_ms),
        pin_ttl_max_ms(options.pin_ttl_max_ms),
        observer(options.observer),
        allocator(pool_bytes_in / kPoolUnitBytes) {}
  ~Impl() {
    if (munmap(base, backing.mapping_bytes) != 0) {
      LOG_WARN_C("memory") << "MemoryStore: munmap of the " << FormatSize(backing.mapping_bytes)
               << " pool failed: " << std::strerror(errno);
    }
  }
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  class EventScope;

  uint8_t* UnitAddress(uint64_t unit) const { return base + unit * kPoolUnitBytes; }

  // The iovec list for `size` bytes in `runs`; runs that touch collapse into
  // one iovec so readv/ChecksumIov see few, large segments.
  std::vector<iovec> BuildIov(const std::vector<PoolRun>& runs, uint64_t size) const;

  // --- everything below requires mu held ---
  void LruPushFrontLocked(StoreEntry* e);
  static void LruRemoveLocked(StoreEntry* e);
  void LinkLocked(const std::shared_ptr<StoreEntry>& e);
  // Removes the entry at `it` from the index, LRU and queues, and queues its
  // removal event. The entry goes to `dropped`, released after mu.
  using Index = std::unordered_map<std::string_view, std::shared_ptr<StoreEntry>>;
  void UnlinkLocked(Index::iterator it, RemovalReason reason);
  // The linked entry of `key`, or index.end(); an expired one is unlinked
  // on the way (RemovalReason::kExpired).
  Index::iterator FindLiveLocked(std::string_view key);
  bool ExpiredLocked(const StoreEntry& e) const {
    return e.expires_at_ms != 0 && realtime->NowMillis() >= e.expires_at_ms;
  }
  // A use: most recently used now; a pin's TTL starts again.
  void TouchLocked(StoreEntry* e);
  void SetExpiryLocked(StoreEntry* e, int64_t expires_at_ms);
  // The eviction queue an entry belongs in (by retention and stored children).
  void EnqueueLocked(StoreEntry* e);
  void DequeueLocked(StoreEntry* e);
  void ChildLinkedLocked(const std::string& parent_key);
  void ChildUnlinkedLocked(const std::string& parent_key);
  bool HasChildrenLocked(std::string_view key) const { return children.contains(key); }
  void PinLocked(StoreEntry* e);
  void UnpinLocked(StoreEntry* e);
  void FreeRunsLocked(StoreEntry* e);
  void FreeLocked(std::span<const PoolRun> runs);
  // Unlinks expired values, soonest first, up to `max_entries`, stopping
  // early once `units` (0: never) fit. Returns how many.
  size_t SweepExpiredLocked(size_t max_entries, uint64_t units);
  bool FitsLocked(uint64_t units) const {
    return allocator.free_units() >= units && allocator.CanAllocate(units, kMaxPiecesPerValue);
  }
  // Evicts from `queue` front to back, skipping values readers hold, until
  // `units` fit; true when they do.
  bool EvictFromQueueLocked(SeqSet& queue, uint64_t units);
  // The last resort: any unpinned value, least recently used first.
  bool EvictLruLocked(uint64_t units);
  // Evicts until `units` fit in kMaxPiecesPerValue runs: expired values,
  // then evict_first ones, then leaves, then (parent cycles, leaves held by
  // readers) any other unpinned value; false (having evicted nothing but
  // expired values) when even evicting every evictable value would not free
  // enough units.
  bool MakeRoomLocked(uint64_t units);
  // --- tenant quotas (mu held)
  struct TenantState {
    const TenantLimits* limits = nullptr;  // in tenant_map
    uint64_t bytes = 0;                    // value bytes of its linked entries
    uint64_t keys = 0;
    uint64_t evictions = 0;
    uint64_t quota_evictions = 0;
    uint64_t quota_refusals = 0;
    TenantLink lru;                        // lru.next: most recently used
  };
  // The tenant of `key` under the current map (kNone without tenants).
  uint32_t TenantOfLocked(std::string_view key) const {
    return tenant_states.empty() ? TenantMap::kNone : tenant_map->Find(key);
  }
  static void TenantListRemove(TenantLink* l) {
    l->prev->next = l->next;
    l->next->prev = l->prev;
    l->prev = l;
    l->next = l;
  }
  static void TenantListPushFront(TenantLink* head, TenantLink* l) {
    l->prev = head;
    l->next = head->next;
    head->next->prev = l;
    head->next = l;
  }
  // Room within tenant `t`'s dram quota for a value of `size` bytes under
  // `key`, whose current value (`replaced` bytes, the tenant's) the put
  // replaces: evicts the tenant's coldest evictable values (expired and
  // evict_first ones first; never `key`'s) when the quota needs it. Ok, or
  // ResourceExhausted naming the quota with nothing evicted.
  // `others`: what the tenant's other puts in flight hold of the quota
  // (dram_holds), which the room must leave them.
  Status TenantRoomLocked(uint32_t t, std::string_view key, uint64_t size, uint64_t replaced, uint64_t others);
  // The bytes of `key`'s linked value when it is tenant `t`'s, else 0.
  uint64_t ReplacedBytesLocked(uint32_t t, std::string_view key) const {
    auto it = index.find(key);
    return it != index.end() && it->second->tenant == t ? it->second->size : 0;
  }

  // Units that evicting every evictable value would free.
  uint64_t EvictableUnitsLocked() const { return linked_units - pinned_linked_units - held_units; }
  void PublishFreeLocked();
  void QueueEventLocked(const StoreEntry& e, StoreEventKind kind, RemovalReason reason);
  // Ok when a pin of `units` under `key` stays within the cap.
  Status PinRoomLocked(std::string_view key, uint64_t units) const;
  std::string PinCapMessage(std::string_view key, uint64_t units, uint64_t others_units) const;

  uint8_t* const base;
  const uint64_t block_size;
  const uint64_t pool_bytes;
  const PoolBacking backing;
  const Nanos read_check_interval;
  const SteadyClock steady_clock;
  const Clock* const clock;
  const SystemRealtimeClock system_realtime;
  const RealtimeClock* const realtime;
  const double pinned_max_fraction;
  const uint64_t pinned_cap_units;
  const uint64_t pin_ttl_ms;
  const uint64_t pin_ttl_max_ms;
  StoreObserver observer;  // set before the store is shared (SetObserver)

  mutable std::mutex mu;
  // Guarded by mu: index, lru, queues, children, allocator, the *_units
  // tallies below, and StoreEntry::{pins, state, prev, next, expires_at_ms,
  // last_use, queue*} of every entry.
  // Invariant: index[k] == e  <=>  e->state == kLinked, and k views e->key.
  Index index;
  LruNode lru;  // lru.next: most recently used
  ExpirySet by_expiry;   // linked entries with an expiry
  SeqSet evict_first;    // linked evict_first entries by last use
  SeqSet leaves;         // linked normal entries without stored children, by last use
  // Parent key -> how many linked entries name it (the parent itself may be
  // absent: a child can arrive first).
  std::unordered_map<std::string, uint32_t, StringHash, std::equal_to<>> children;
  uint64_t use_seq = 0;
  uint64_t event_seq = 0;
  PoolAllocator allocator;
  uint64_t linked_units = 0;         // held by entries in the index
  uint64_t pinned_linked_units = 0;  // subset of linked_units with pins > 0
  uint64_t draining_units = 0;       // held by unlinked entries with pins > 0
  uint64_t retained_units = 0;       // linked entries of retention pinned
  uint64_t held_units = 0;           // of those, with no reader pin (not in pinned_linked_units)
  // Collected under mu, handed over after it (EventScope).
  std::vector<StoreEvent> events;
  std::vector<std::shared_ptr<StoreEntry>> dropped;
  // Tenants (SetTenants): empty without; tenant_states[i] is tenant_map's i.
  std::shared_ptr<const TenantMap> tenant_map;
  std::vector<std::unique_ptr<TenantState>> tenant_states;
  // What puts in flight hold of each tenant's DRAM quota (BeginPut to CommitPut).
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
  std::atomic<uint64_t> retained_bytes{0};
  std::atomic<uint64_t> retained_values{0};
  std::atomic<uint64_t> pin_refusals{0};
};

namespace {

Status CheckRetentionOptions(const MemoryStoreOptions& o) {
  if (!(o.pinned_max_fraction > 0.0 && o.pinned_max_fraction <= 1.0)) {
    std::ostringstream text;
    text << "MemoryStore: pinned_max_fraction " << o.pinned_max_fraction << " is out of range; allowed: above 0, at most 1";
    return InvalidArgument(text.str());
  }
  if (o.pin_ttl_ms == 0 || o.pin_ttl_max_ms < o.pin_ttl_ms) {
    return InvalidArgument("MemoryStore: pin_ttl_ms " + std::to_string(o.pin_ttl_ms) + " and pin_ttl_max_ms " +
                           std::to_string(o.pin_ttl_max_ms) + ": allowed: 0 < pin_ttl_ms <= pin_ttl_max_ms");
  }
  return Status::Ok();
}

// The instant `ttl_ms` after `now_ms` (0 for no TTL), saturating.
int64_t ExpiryAfter(int64_t now_ms, uint64_t ttl_ms) {
  constexpr uint64_t kMax = static_cast<uint64_t>(INT64_MAX);
  if (ttl_ms == 0) return 0;
  if (now_ms < 0 || ttl_ms > kMax - static_cast<uint64_t>(now_ms)) return INT64_MAX;
  return now_ms + static_cast<int64_t>(ttl_ms);
}

}  // namespace

// Holds the store's mutex; on the way out releases it, then drops the
// entries unlinked meanwhile and hands their events to the observer, so
// neither runs under the lock.
class MemoryStore::Impl::EventScope {
 public:
  explicit EventScope(Impl& s) : s_(s), lock_(s.mu) {}
  ~EventScope() {
    std::vector<StoreEvent> events = std::move(s_.events);
    std::vector<std::shared_ptr<StoreEntry>> dropped = std::move(s_.dropped);
    s_.events.clear();
    s_.dropped.clear();
    lock_.unlock();
    dropped.clear();
    for (const StoreEvent& event : events) s_.observer(event);
  }
  EventScope(const EventScope&) = delete;
  EventScope& operator=(const EventScope&) = delete;

 private:
  Impl& s_;
  std::unique_lock<std::mutex> lock_;
};

std::vector<iovec> MemoryStore::Impl::BuildIov(const std::vector<PoolRun>& runs, uint64_t size) const {
  std::vector<iovec> iov;
  iov.reserve(runs.size());
  uint64_t left = size;
  for (const PoolRun& run : runs) {
    const uint64_t len = std::min(left, run.length * kPoolUnitBytes);
    uint8_t* at = UnitAddress(run.offset);
    left -= len;
    if (!iov.empty() && static_cast<uint8_t*>(iov.back().iov_base) + iov.back().iov_len == at) {
      iov.back().iov_len += len;
    } else {
      iov.push_back(iovec{at, len});
    }
  }
  return iov;
}

void MemoryStore::Impl::LruPushFrontLocked(StoreEntry* e) {
  e->prev = &lru;
  e->next = lru.next;
  lru.next->prev = e;
  lru.next = e;
}

void MemoryStore::Impl::LruRemoveLocked(StoreEntry* e) {
  e->prev->next = e->next;
  e->next->prev = e->prev;
  e->prev = e;
  e->next = e;
}

void MemoryStore::Impl::QueueEventLocked(const StoreEntry& e, StoreEventKind kind, RemovalReason reason) {
  if (!observer) return;
  events.push_back(StoreEvent{.kind = kind,
                              .medium = StoreMedium::kDram,
                              .reason = reason,
                              .key = e.key,
                              .value_size = e.size,
                              .block_hash = e.block_hash,
                              .parent_hash = e.parent_hash,
                              .hash_kind = e.hash_kind,
                              .retention = e.retention,
                              .seq = ++event_seq});
}

void MemoryStore::Impl::LinkLocked(const std::shared_ptr<StoreEntry>& e) {
  index.emplace(std::string_view(e->key), e);
  LruPushFrontLocked(e.get());
  e->state = EntryState::kLinked;
  e->last_use = ++use_seq;
  if (e->expires_at_ms != 0) e->expiry_pos = by_expiry.emplace(e->expires_at_ms, e.get()).first;
  linked_units += e->units;
  if (e->pinned()) {
    retained_units += e->units;
    held_units += e->units;  // a fresh entry has no reader pin
    retained_bytes.store(retained_units * kPoolUnitBytes, std::memory_order_relaxed);
    retained_values.fetch_add(1, std::memory_order_relaxed);
  }
  if (!e->parent_key.empty()) ChildLinkedLocked(e->parent_key);
  EnqueueLocked(e.get());
  if (e->tenant != TenantMap::kNone) {
    TenantState& ts = *tenant_states[e->tenant];
    e->tenant_link.owner = e.get();
    TenantListPushFront(&ts.lru, &e->tenant_link);
    ts.bytes += e->size;
    ++ts.keys;
  }
  value_bytes.fetch_add(e->size, std::memory_order_relaxed);
  keys.fetch_add(1, std::memory_order_relaxed);
  QueueEventLocked(*e, StoreEventKind::kStored, RemovalReason::kNone);
}

void MemoryStore::Impl::UnlinkLocked(Index::iterator it, RemovalReason reason) {
  std::shared_ptr<StoreEntry> e = std::move(it->second);
  index.erase(it);
  LruRemoveLocked(e.get());
  DequeueLocked(e.get());
  if (e->expires_at_ms != 0) by_expiry.erase(e->expiry_pos);
  e->state = EntryState::kUnlinked;
  linked_units -= e->units;
  if (e->pinned()) {
    retained_units -= e->units;
    if (e->pins == 0) held_units -= e->units;
    retained_bytes.store(retained_units * kPoolUnitBytes, std::memory_order_relaxed);
    retained_values.fetch_sub(1, std::memory_order_relaxed);
  }
  if (!e->parent_key.empty()) ChildUnlinkedLocked(e->parent_key);
  value_bytes.fetch_sub(e->size, std::memory_order_relaxed);
  keys.fetch_sub(1, std::memory_order_relaxed);
  if (reason == RemovalReason::kEvicted) evictions.fetch_add(1, std::memory_order_relaxed);
  if (e->tenant != TenantMap::kNone) {
    TenantState& ts = *tenant_states[e->tenant];
    TenantListRemove(&e->tenant_link);
    ts.bytes -= e->size;
    --ts.keys;
    if (reason == RemovalReason::kEvicted) ++ts.evictions;
  }
  if (reason == RemovalReason::kExpired) expired.fetch_add(1, std::memory_order_relaxed);
  QueueEventLocked(*e, StoreEventKind::kRemoved, reason);
  if (e->pins > 0) {
    pinned_linked_units -= e->units;
    draining_units += e->units;
  } else {
    FreeRunsLocked(e.get());
  }
  dropped.push_back(std::move(e));
}

MemoryStore::Impl::Index::iterator MemoryStore::Impl::FindLiveLocked(std::string_view key) {
  auto it = index.find(key);
  if (it == index.end() || !ExpiredLocked(*it->second)) return it;
  UnlinkLocked(it, RemovalReason::kExpired);
  return index.end();
}

void MemoryStore::Impl::SetExpiryLocked(StoreEntry* e, int64_t expires_at_ms) {
  if (e->expires_at_ms == expires_at_ms) return;
  if (e->expires_at_ms != 0) by_expiry.erase(e->expiry_pos);
  e->expires_at_ms = expires_at_ms;
  if (expires_at_ms != 0) e->expiry_pos = by_expiry.emplace(expires_at_ms, e).first;
}

void MemoryStore::Impl::TouchLocked(StoreEntry* e) {
  LruRemoveLocked(e);
  LruPushFrontLocked(e);
  if (e->tenant != TenantMap::kNone) {
    TenantListRemove(&e->tenant_link);
    TenantListPushFront(&tenant_states[e->tenant]->lru, &e->tenant_link);
  }
  e->last_use = ++use_seq;
  if (e->queue != EvictQueue::kNone) {
    // Re-keyed in place: extract and insert move the node, allocating
    // nothing; the newest use goes last, so the end is the exact hint.
    SeqSet& queue = e->queue == EvictQueue::kFirst ? evict_first : leaves;
    auto node = queue.extract(e->queue_pos);
    node.value().first = e->last_use;
    e->queue_pos = queue.insert(queue.end(), std::move(node));
  }
  if (e->pinned()) SetExpiryLocked(e, ExpiryAfter(realtime->NowMillis(), e->ttl_ms));
}

void MemoryStore::Impl::EnqueueLocked(StoreEntry* e) {
  assert(e->queue == EvictQueue::kNone);
  if (e->retention == Retention::kEvictFirst) {
    e->queue = EvictQueue::kFirst;
    e->queue_pos = evict_first.emplace(e->last_use, e).first;
  } else if (e->retention == Retention::kNormal && !HasChildrenLocked(e->key)) {
    e->queue = EvictQueue::kLeaf;
    e->queue_pos = leaves.emplace(e->last_use, e).first;
  }
}

void MemoryStore::Impl::DequeueLocked(StoreEntry* e) {
  if (e->queue == EvictQueue::kFirst) evict_first.erase(e->queue_pos);
  if (e->queue == EvictQueue::kLeaf) leaves.erase(e->queue_pos);
  e->queue = EvictQueue::kNone;
}

void MemoryStore::Impl::ChildLinkedLocked(const std::string& parent_key) {
  auto counted = children.find(std::string_view(parent_key));
  if (counted != children.end()) {
    ++counted->second;
    return;
  }
  children.emplace(parent_key, 1);
  // The parent's first stored child: it stops being a leaf.
  auto parent = index.find(parent_key);
  if (parent != index.end() && parent->second->queue == EvictQueue::kLeaf) DequeueLocked(parent->second.get());
}

void MemoryStore::Impl::ChildUnlinkedLocked(const std::string& parent_key) {
  auto counted = children.find(std::string_view(parent_key));
  assert(counted != children.end());
  if (--counted->second > 0) return;
  children.erase(counted);
  // Its last child went: a leaf again, placed by its own last use.
  auto parent = index.find(parent_key);
  if (parent != index.end() && parent->second->queue == EvictQueue::kNone) EnqueueLocked(parent->second.get());
}

void MemoryStore::Impl::PinLocked(StoreEntry* e) {
  if (e->pins++ == 0 && e->state == EntryState::kLinked) {
    pinned_linked_units += e->units;
    if (e->pinned()) held_units -= e->units;
  }
}

void MemoryStore::Impl::UnpinLocked(StoreEntry* e) {
  assert(e->pins > 0);
  if (--e->pins > 0) return;
  if (e->state == EntryState::kLinked) {
    pinned_linked_units -= e->units;
    if (e->pinned()) held_units += e->units;
  } else {
    draining_units -= e->units;
    FreeRunsLocked(e);
  }
}

void MemoryStore::Impl::FreeRunsLocked(StoreEntry* e) {
  assert(e->state == EntryState::kUnlinked && e->pins == 0);
  e->state = EntryState::kFreed;
  FreeLocked(e->runs);
}

void MemoryStore::Impl::FreeLocked(std::span<const PoolRun> runs) {
  allocator.Free(runs);
  PublishFreeLocked();
}

void MemoryStore::Impl::PublishFreeLocked() {
  free_units.store(allocator.free_units(), std::memory_order_relaxed);
  largest_free_units.store(allocator.largest_free_run(), std::memory_order_relaxed);
  free_runs.store(allocator.free_runs(), std::memory_order_relaxed);
}

size_t MemoryStore::Impl::SweepExpiredLocked(size_t max_entries, uint64_t units) {
  if (by_expiry.empty()) return 0;
  const int64_t now = realtime->NowMillis();
  size_t swept = 0;
  while (swept < max_entries && !by_expiry.empty() && by_expiry.begin()->first <= now) {
    UnlinkLocked(index.find(by_expiry.begin()->second->key), RemovalReason::kExpired);
    ++swept;
    if (units != 0 && FitsLocked(units)) break;
  }
  return swept;
}

bool MemoryStore::Impl::EvictFromQueueLocked(SeqSet& queue, uint64_t units) {
  auto it = queue.begin();
  while (it != queue.end()) {
    StoreEntry* e = it->second;
    // Values readers hold would free nothing now; empty ones never free anything.
    if (e->pins > 0 || e->units == 0) {
      ++it;
      continue;
    }
    UnlinkLocked(index.find(e->key), RemovalReason::kEvicted);
    // Only whole-unit counts matter until enough are free; then whether they
    // come in few enough pieces.
    if (FitsLocked(units)) return true;
    // Evicting a leaf may have made its parent one, older than what follows.
    it = queue.begin();
  }
  return false;
}

bool MemoryStore::Impl::EvictLruLocked(uint64_t units) {
  LruNode* node = lru.prev;
  while (node != &lru) {
    auto* e = static_cast<StoreEntry*>(node);
    node = node->prev;  // before e leaves the list
    if (e->pins > 0 || e->units == 0 || e->pinned()) continue;
    UnlinkLocked(index.find(e->key), RemovalReason::kEvicted);
    if (FitsLocked(units)) return true;
  }
  return false;
}

bool MemoryStore::Impl::MakeRoomLocked(uint64_t units) {
  if (allocator.CanAllocate(units, kMaxPiecesPerValue)) return true;
  // Expired values first: their room is free for the taking anyway.
  SweepExpiredLocked(SIZE_MAX, units);
  if (FitsLocked(units)) return true;
  // Refuse before evicting anything: emptying the cache for a put that fails
  // anyway would only turn future hits into misses.
  if (allocator.free_units() + EvictableUnitsLocked() < units) return false;
  if (EvictFromQueueLocked(evict_first, units) || EvictFromQueueLocked(leaves, units) || EvictLruLocked(units)) {
    return true;
  }
  // Everything unpinned is gone and the pinned values still cut the free
  // room into more than kMaxPiecesPerValue pieces.
  return allocator.CanAllocate(units, kMaxPiecesPerValue);
}

Status MemoryStore::Impl::TenantRoomLocked(uint32_t t, std::string_view key, uint64_t size, uint64_t replaced,
                                           uint64_t others) {
  TenantState& ts = *tenant_states[t];
  const uint64_t quota = ts.limits->dram_quota_bytes;
  if (quota == 0) return Status::Ok();
  const uint64_t used = ts.bytes - replaced + others;
  if (used + size <= quota) return Status::Ok();
  const std::string& name = ts.limits->name;
  if (size > quota) {
    return ResourceExhausted("tenant " + name + ": a value of " + FormatSizeRounded(size) +
                             " is larger than its DRAM quota (tenants[].dram_quota " + FormatSizeRounded(quota) + ")");
  }
  // Choose first, evict after: a put that fails anyway evicts nothing.
  const uint64_t need = used + size - quota;
  uint64_t freed = 0;
  std::vector<StoreEntry*> victims;
  for (int pass = 0; pass < 2 && freed < need; ++pass) {
    for (TenantLink* l = ts.lru.prev; l != &ts.lru && freed < need; l = l->prev) {
      StoreEntry* e = l->owner;
      if (e->pins > 0 || e->pinned() || e->size == 0 || e->key == key) continue;
      const bool early = e->retention == Retention::kEvictFirst || ExpiredLocked(*e);
      if (early != (pass == 0)) continue;
      victims.push_back(e);
      freed += e->size;
    }
  }
  if (freed < need) {
    return ResourceExhausted("tenant " + name + " is at its DRAM quota (tenants[].dram_quota " +
                             FormatSizeRounded(quota) + ", " + FormatSizeRounded(ts.bytes) + " used, " +
                             FormatSizeRounded(others) + " held by puts in flight; a put of " +
                             FormatSizeRounded(size) + " needs " + FormatSizeRounded(need) +
                             " freed and what is left is pinned or being read)");
  }
  for (StoreEntry* e : victims) {
    const bool expired_now = ExpiredLocked(*e);
    UnlinkLocked(index.find(e->key), expired_now ? RemovalReason::kExpired : RemovalReason::kEvicted);
    if (!expired_now) ++ts.quota_evictions;
  }
  return Status::Ok();
}

Status MemoryStore::Impl::PinRoomLocked(std::string_view key, uint64_t units) const {
  // A pin replacing a pin of the same key gives its room back.
  auto it = index.find(key);
  const uint64_t replaced = it != index.end() && it->second->pinned() ? it->second->units : 0;
  const uint64_t others = retained_units - replaced;
  if (others + units <= pinned_cap_units) return Status::Ok();
  return ResourceExhausted(PinCapMessage(key, units, others));
}

std::string MemoryStore::Impl::PinCapMessage(std::string_view key, uint64_t units, uint64_t others_units) const {
  std::ostringstream fraction;
  fraction << pinned_max_fraction;
  return "CommitPut(key " + KeyForLog(key) + "): pinning " + FormatSize(units * kPoolUnitBytes) +
         " would bring the pinned values to " + FormatSize((others_units + units) * kPoolUnitBytes) +
         ", past memory.pinned_max_fraction " + fraction.str() + " of the " + FormatSize(pool_bytes) +
         " pool (cap " + FormatSize(pinned_cap_units * kPoolUnitBytes) + "; pinned now " +
         FormatSize(others_units * kPoolUnitBytes) +
         "); delete pinned values, let their TTLs run out, or raise memory.pinned_max_fraction";
}

// ---------------------------------------------------------------------------
// PendingPut

PendingPut::PendingPut(PendingPut&& other) noexcept
    : drive_hold(std::move(other.drive_hold)),
      store_(std::exchange(other.store_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      dram_hold_(std::move(other.dram_hold_)),
      runs_(std::move(other.runs_)),
      iov_(std::move(other.iov_)) {
  other.runs_.clear();
  other.iov_.clear();
}

PendingPut& PendingPut::operator=(PendingPut&& other) noexcept {
  if (this != &other) {
    if (store_ != nullptr) store_->ReleaseRuns(runs_);
    store_ = std::exchange(other.store_, nullptr);
    size_ = std::exchange(other.size_, 0);
    dram_hold_ = std::move(other.dram_hold_);
    drive_hold = std::move(other.drive_hold);
    runs_ = std::move(other.runs_);
    iov_ = std::move(other.iov_);
    other.runs_.clear();
    other.iov_.clear();
  }
  return *this;
}

PendingPut::~PendingPut() {
  if (store_ != nullptr) store_->ReleaseRuns(runs_);
}

// ---------------------------------------------------------------------------
// ReadHandle

ReadHandle::ReadHandle(ReadHandle&& other) noexcept
    : store_(std::exchange(other.store_, nullptr)),
      entry_(std::move(other.entry_)),
      unchecked_(std::exchange(other.unchecked_, false)) {}

ReadHandle& ReadHandle::operator=(ReadHandle&& other) noexcept {
  if (this != &other) {
    if (store_ != nullptr) store_->Unpin(entry_);
    store_ = std::exchange(other.store_, nullptr);
    entry_ = std::move(other.entry_);
    unchecked_ = std::exchange(other.unchecked_, false);
  }
  return *this;
}

Status ReadHandle::CheckLater() {
  if (!unchecked_ || store_ == nullptr) return Status::Ok();
  unchecked_ = false;
  return store_->CheckPinnedLater(entry_);
}

ReadHandle::~ReadHandle() {
  if (store_ != nullptr) store_->Unpin(entry_);
}

uint64_t ReadHandle::size() const { return entry_ ? entry_->size : 0; }
uint64_t ReadHandle::checksum() const { return entry_ ? entry_->checksum : 0; }
std::span<const iovec> ReadHandle::iov() const {
  return entry_ ? std::span<const iovec>(entry_->iov) : std::span<const iovec>();
}

void ReadHandle::CopyTo(void* dst) const {
  auto* out = static_cast<uint8_t*>(dst);
  for (const iovec& v : iov()) {
    std::memcpy(out, v.iov_base, v.iov_len);
    out += v.iov_len;
  }
}

// ---------------------------------------------------------------------------
// MemoryStoreStats

double MemoryStoreStats::fragmentation() const {
  return free_bytes == 0 ? 0.0 : 1.0 - static_cast<double>(largest_free_bytes) / static_cast<double>(free_bytes);
}

double MemoryStoreStats::bytes_per_value_byte() const {
  return value_bytes == 0 ? 0.0 : static_cast<double>(used_bytes) / static_cast<double>(value_bytes);
}

// ---------------------------------------------------------------------------
// MemoryStore

Result<std::unique_ptr<MemoryStore>> MemoryStore::Create(const MemoryStoreOptions& options) {
  if (options.block_size_bytes == 0 || options.block_size_bytes % kPoolUnitBytes != 0) {
    return InvalidArgument("MemoryStore: block_size_bytes " + std::to_string(options.block_size_bytes) +
                           " must be a positive multiple of " + std::to_string(kPoolUnitBytes));
  }
  const uint64_t blocks = options.max_size_bytes / options.block_size_bytes;
  if (blocks == 0) {
    return InvalidArgument("MemoryStore: max_size_bytes " + FormatSize(options.max_size_bytes) +
                           " holds no whole block of " + FormatSize(options.block_size_bytes));
  }
  const uint64_t bytes = blocks * options.block_size_bytes;
  HugePageReader reader(options.host_root);
  Result<HugePageCounts> counts = options.hugepages == HugePagePolicy::kNever
                                      ? Result<HugePageCounts>(Unavailable("not read (policy never)"))
                                      : reader.Read2MiB();
  MEMKV_ASSIGN_OR_RETURN(BackingPlan plan, PlanPoolBacking(options.hugepages, bytes, counts));
  MEMKV_ASSIGN_OR_RETURN(MappedPool pool, MapPool(bytes, options.hugepages, plan, counts, reader));
  if (options.prefault) {
    const Nanos start = MonotonicNanos();
    const uint64_t page = pool.backing.kind == PageKind::kSmall ? 4096 : kHugePageBytes;
    Prefault(pool.base, pool.backing.mapping_bytes, page, options.prefault_progress);
    pool.backing.prefault_nanos = std::max<uint64_t>(1, MonotonicNanos() - start);
  }
  if (options.read_check_interval_ns < 0) {
    return InvalidArgument("MemoryStore: read_check_interval_ns " + std::to_string(options.read_check_interval_ns) +
                           " is negative");
  }
  MEMKV_RETURN_IF_ERROR(CheckRetentionOptions(options));
  auto impl = std::make_unique<Impl>(std::move(pool), options, bytes);
  impl->PublishFreeLocked();  // no other thread can see impl yet
  return std::unique_ptr<MemoryStore>(new MemoryStore(std::move(impl)));
}

MemoryStore::MemoryStore(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

MemoryStore::~MemoryStore() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  const uint64_t outstanding = impl_->allocator.unit_count() - impl_->allocator.free_units() - impl_->linked_units;
  if (outstanding != 0) {
    // A PendingPut or ReadHandle outlives the store: its pointers into the
    // pool are about to dangle. That is a caller bug; say so loudly.
    LOG_WARN_C("memory") << "MemoryStore destroyed with " << FormatSize(outstanding * kPoolUnitBytes)
                         << " still held by PendingPuts or ReadHandles ("
                         << FormatSize(impl_->draining_units * kPoolUnitBytes) << " by handles of unlinked values)";
  }
}

Result<PendingPut> MemoryStore::BeginPut(uint64_t size) { return BeginPut(size, std::string_view(), QuotaUse::kPut); }

Result<PendingPut> MemoryStore::BeginPut(uint64_t size, std::string_view key, QuotaUse use) {
  Impl& s = *impl_;
  if (size > s.pool_bytes) {
    return TooLarge("BeginPut: value of " + FormatSize(size) + " is larger than the whole memory pool of " +
                    FormatSize(s.pool_bytes));
  }
  const uint64_t units = UnitsFor(size);
  PendingPut put;
  put.size_ = size;
  if (units > 0) {
    Impl::EventScope scope(s);
    // The tenant's own values first: room in its quota before room in the
    // pool, so a tenant at its quota never pushes out another's values.
    // The quota is held first (QuotaLedger): puts that run at once never
    // hold more than it together, and each makes room for the others.
    if (const uint32_t t = s.TenantOfLocked(key); t != TenantMap::kNone) {
      const TenantLimits& limits = *s.tenant_states[t]->limits;
      Result<QuotaHold> hold = s.dram_holds.Hold(t, limits.name, limits.dram_quota_bytes, size);
      Status room = hold.ok() ? s.TenantRoomLocked(t, key, size, s.ReplacedBytesLocked(t, key),
                                                   s.dram_holds.Others(t, hold->bytes()))
                              : hold.status();
      if (!room.ok()) {
        if (use == QuotaUse::kPut) ++s.tenant_states[t]->quota_refusals;
        return room;
      }
      put.dram_hold_ = std::move(hold).value();
    }
    if (!s.MakeRoomLocked(units)) {
      const uint64_t pinned = s.pinned_linked_units + s.draining_units;
      const uint64_t pending =
          s.allocator.unit_count() - s.allocator.free_units() - s.linked_units - s.draining_units;
      return ResourceExhausted(
          "BeginPut: value of " + FormatSize(size) + " does not fit: free " +
          FormatSize(s.allocator.free_units() * kPoolUnitBytes) + " in " + std::to_string(s.allocator.free_runs()) +
          " pieces (at most " + std::to_string(kMaxPiecesPerValue) + " per value), evictable " +
          FormatSize(s.EvictableUnitsLocked() * kPoolUnitBytes) + ", pinned by readers " +
          FormatSize(pinned * kPoolUnitBytes) + ", pinned values " + FormatSize(s.held_units * kPoolUnitBytes) +
          ", reserved by uncommitted puts " + FormatSize(pending * kPoolUnitBytes) + " (pool: " +
          FormatSize(s.pool_bytes) + ")");
    }
    const bool placed = s.allocator.Allocate(units, kMaxPiecesPerValue, &put.runs_);
    assert(placed);
    (void)placed;
    s.PublishFreeLocked();
  }
  put.store_ = this;
  put.iov_ = s.BuildIov(put.runs_, size);
  return put;
}

Status MemoryStore::CommitPut(PendingPut put, std::string_view key, uint64_t checksum, const PutOptions& options) {
  if (put.store_ != this) {
    return InvalidArgument("CommitPut(key " + KeyForLog(key) +
                           "): the PendingPut was not issued by this store "
                           "(default-constructed, moved-from or another store's)");
  }
  Impl& s = *impl_;
  // Built outside the lock: the key copy and allocations cost nothing there.
  auto entry = std::make_shared<StoreEntry>();
  entry->key.assign(key);
  entry->size = put.size_;
  entry->checksum = checksum;
  entry->units = UnitsFor(put.size_);
  entry->runs = std::move(put.runs_);
  entry->iov = std::move(put.iov_);
  put.store_ = nullptr;  // the room now belongs to the entry
  entry->retention = options.retention;
  entry->ttl_ms = AppliedTtlMs(options);
  // A value naming itself would keep itself forever; it has no parent.
  if (options.parent_key != key) entry->parent_key = options.parent_key;
  entry->block_hash = options.block_hash;
  entry->parent_hash = options.parent_hash;
  entry->hash_kind = options.hash_kind;
  entry->expires_at_ms = ExpiryAfter(s.realtime->NowMillis(), entry->ttl_ms);

  Impl::EventScope scope(s);
  auto it = s.index.find(key);
  if (entry->pinned()) {
    Status room = s.PinRoomLocked(key, entry->units);
    if (!room.ok()) {
      s.pin_refusals.fetch_add(1, std::memory_order_relaxed);
      s.FreeLocked(entry->runs);
      return room;
    }
  }
  entry->tenant = s.TenantOfLocked(key);
  if (entry->tenant != TenantMap::kNone) {
    // Evicting other values of the tenant leaves `it` valid (never the key's).
    const uint32_t t = entry->tenant;
    const uint64_t own = s.dram_holds.Counts(t, put.dram_hold_) ? put.dram_hold_.bytes() : 0;
    Status room = s.TenantRoomLocked(t, key, entry->size, s.ReplacedBytesLocked(t, key), s.dram_holds.Others(t, own));
    if (!room.ok()) {
      ++s.tenant_states[entry->tenant]->quota_refusals;
      s.FreeLocked(entry->runs);
      return room;
    }
  }
  if (it != s.index.end()) {
    s.UnlinkLocked(it, s.ExpiredLocked(*it->second) ? RemovalReason::kExpired : RemovalReason::kReplaced);
  }
  s.LinkLocked(entry);
  put.dram_hold_.Release();  // the tenant's bytes count it now
  return Status::Ok();
}

Result<ReadHandle> MemoryStore::Get(std::string_view key, ReadCheck check) {
  Impl& s = *impl_;
  std::shared_ptr<StoreEntry> entry;
  {
    Impl::EventScope scope(s);
    auto it = s.FindLiveLocked(key);
    if (it == s.index.end()) {
      s.misses.fetch_add(1, std::memory_order_relaxed);
      return NotFound("Get: key " + KeyForLog(key) + " not present");
    }
    entry = it->second;
    s.PinLocked(entry.get());
    s.TouchLocked(entry.get());
  }

  if (check == ReadCheck::kNow) {
    // The pin keeps the bytes ours while we hash them unlocked.
    Status checked = CheckPinned(entry);
    if (!checked.ok()) {
      Unpin(entry);
      s.misses.fetch_add(1, std::memory_order_relaxed);
      return NotFound("Get: key " + KeyForLog(key) + " dropped: checksum mismatch");
    }
  }
  s.hits.fetch_add(1, std::memory_order_relaxed);
  ReadHandle handle;
  handle.store_ = this;
  handle.entry_ = std::move(entry);
  handle.unchecked_ = check == ReadCheck::kLater;
  return handle;
}

Status MemoryStore::CheckPinnedLater(const std::shared_ptr<StoreEntry>& entry) {
  Impl& s = *impl_;
  if (s.read_check_interval > 0) {
    const Nanos at = entry->checked_at.load(std::memory_order_relaxed);
    if (at != StoreEntry::kNeverChecked && s.clock->NowNanos() - at < s.read_check_interval) {
      s.later_checks_skipped.fetch_add(1, std::memory_order_relaxed);
      return Status::Ok();
    }
  }
  s.later_checks.fetch_add(1, std::memory_order_relaxed);
  return CheckPinned(entry);
}

Status MemoryStore::CheckPinned(const std::shared_ptr<StoreEntry>& entry) {
  Impl& s = *impl_;
  const uint64_t actual = ChecksumIov(entry->iov);
  if (actual == entry->checksum) {
    if (s.read_check_interval > 0) entry->checked_at.store(s.clock->NowNanos(), std::memory_order_relaxed);
    return Status::Ok();
  }
  {
    Impl::EventScope scope(s);
    // A concurrent overwrite or delete may already have replaced it; then
    // the index holds a different value that is not ours to drop.
    if (entry->state == EntryState::kLinked) s.UnlinkLocked(s.index.find(entry->key), RemovalReason::kChecksum);
  }
  s.checksum_failures.fetch_add(1, std::memory_order_relaxed);
  LOG_WARN_C("memory") << "MemoryStore: checksum mismatch on key " << KeyForLog(entry->key) << " ("
                       << FormatSize(entry->size) << "): stored " << std::hex << entry->checksum << ", computed "
                       << actual << std::dec << "; value dropped";
  return Corruption("key " + KeyForLog(entry->key) + ": checksum mismatch, value dropped");
}

Status MemoryStore::CheckPinRoom(std::string_view key, uint64_t size, const PutOptions& options) const {
  if (options.retention != Retention::kPinned) return Status::Ok();
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->PinRoomLocked(key, UnitsFor(size));
}

bool MemoryStore::Exists(std::string_view key) {
  Impl::EventScope scope(*impl_);
  return impl_->FindLiveLocked(key) != impl_->index.end();
}

bool MemoryStore::Match(std::string_view key) {
  Impl& s = *impl_;
  Impl::EventScope scope(s);
  auto it = s.FindLiveLocked(key);
  if (it == s.index.end()) return false;
  if (it->second->pinned()) s.SetExpiryLocked(it->second.get(), ExpiryAfter(s.realtime->NowMillis(), it->second->ttl_ms));
  return true;
}

size_t MemoryStore::SweepExpired(size_t max_entries) {
  Impl::EventScope scope(*impl_);
  return impl_->SweepExpiredLocked(max_entries, 0);
}

std::optional<uint64_t> MemoryStore::ValueSize(std::string_view key) {
  Impl::EventScope scope(*impl_);
  auto it = impl_->FindLiveLocked(key);
  if (it == impl_->index.end()) return std::nullopt;
  return it->second->size;
}

void MemoryStore::OfferKeys(KeyPage* page) const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  const int64_t now = impl_->realtime->NowMillis();
  for (const auto& [key, entry] : impl_->index) {
    if (entry->expires_at_ms == 0 || now < entry->expires_at_ms) page->Offer(key);
  }
}

Status MemoryStore::Delete(std::string_view key) {
  Impl& s = *impl_;
  Impl::EventScope scope(s);
  auto it = s.FindLiveLocked(key);
  if (it == s.index.end()) return NotFound("Delete: key " + KeyForLog(key) + " not present");
  s.UnlinkLocked(it, RemovalReason::kDeleted);
  return Status::Ok();
}

Status MemoryStore::Put(std::string_view key, const void* data, uint64_t size, const PutOptions& options) {
  MEMKV_ASSIGN_OR_RETURN(PendingPut put, BeginPut(size));
  const auto* in = static_cast<const uint8_t*>(data);
  for (const iovec& v : put.iov()) {
    std::memcpy(v.iov_base, in, v.iov_len);
    in += v.iov_len;
  }
  return CommitPut(std::move(put), key, Checksum(data, size), options);
}

MemoryStoreStats MemoryStore::Stats() const {
  const Impl& s = *impl_;
  MemoryStoreStats out;
  out.pool_bytes = s.pool_bytes;
  out.block_size_bytes = s.block_size;
  out.free_bytes = s.free_units.load(std::memory_order_relaxed) * kPoolUnitBytes;
  out.used_bytes = out.pool_bytes - std::min(out.pool_bytes, out.free_bytes);
  out.largest_free_bytes = s.largest_free_units.load(std::memory_order_relaxed) * kPoolUnitBytes;
  out.free_runs = s.free_runs.load(std::memory_order_relaxed);
  out.value_bytes = s.value_bytes.load(std::memory_order_relaxed);
  out.keys = s.keys.load(std::memory_order_relaxed);
  out.hits = s.hits.load(std::memory_order_relaxed);
  out.misses = s.misses.load(std::memory_order_relaxed);
  out.evictions = s.evictions.load(std::memory_order_relaxed);
  out.checksum_failures = s.checksum_failures.load(std::memory_order_relaxed);
  out.later_checks = s.later_checks.load(std::memory_order_relaxed);
  out.later_checks_skipped = s.later_checks_skipped.load(std::memory_order_relaxed);
  out.expired = s.expired.load(std::memory_order_relaxed);
  out.pinned_bytes = s.retained_bytes.load(std::memory_order_relaxed);
  out.pinned_cap_bytes = s.pinned_cap_units * kPoolUnitBytes;
  out.pinned_values = s.retained_values.load(std::memory_order_relaxed);
  out.pin_refusals = s.pin_refusals.load(std::memory_order_relaxed);
  out.page_kind = s.backing.kind;
  return out;
}

uint64_t MemoryStore::AppliedTtlMs(const PutOptions& options) const {
  if (options.retention != Retention::kPinned) return options.ttl_ms;
  return options.ttl_ms == 0 ? impl_->pin_ttl_ms : std::min(options.ttl_ms, impl_->pin_ttl_max_ms);
}

const RealtimeClock& MemoryStore::realtime_clock() const { return *impl_->realtime; }

void MemoryStore::SetTenants(std::shared_ptr<const TenantMap> tenants) {
  Impl& s = *impl_;
  if (tenants != nullptr && tenants->empty()) tenants = nullptr;
  std::lock_guard<std::mutex> lock(s.mu);
  if (tenants == nullptr && s.tenant_states.empty()) return;
  std::vector<std::unique_ptr<Impl::TenantState>> states;
  if (tenants != nullptr) {
    for (const TenantLimits& limits : tenants->tenants()) {
      auto ts = std::make_unique<Impl::TenantState>();
      ts->limits = &limits;
      for (const auto& old : s.tenant_states) {
        if (old->limits->name != limits.name) continue;
        ts->evictions = old->evictions;
        ts->quota_evictions = old->quota_evictions;
        ts->quota_refusals = old->quota_refusals;
      }
      states.push_back(std::move(ts));
    }
  }
  // Every linked entry, coldest first, into its tenant's list at the front:
  // each list keeps the order of the global LRU.
  for (LruNode* node = s.lru.prev; node != &s.lru; node = node->prev) {
    auto* e = static_cast<StoreEntry*>(node);
    e->tenant_link.prev = &e->tenant_link;
    e->tenant_link.next = &e->tenant_link;
    e->tenant = tenants != nullptr ? tenants->Find(e->key) : TenantMap::kNone;
    if (e->tenant == TenantMap::kNone) continue;
    Impl::TenantState& ts = *states[e->tenant];
    e->tenant_link.owner = e;
    Impl::TenantListPushFront(&ts.lru, &e->tenant_link);
    ts.bytes += e->size;
    ++ts.keys;
  }
  s.tenant_states = std::move(states);
  s.dram_holds.Reset(s.tenant_states.size());
  s.tenant_map = std::move(tenants);
}

std::vector<TenantUsage> MemoryStore::TenantUsages() const {
  const Impl& s = *impl_;
  std::lock_guard<std::mutex> lock(s.mu);
  std::vector<TenantUsage> rows;
  rows.reserve(s.tenant_states.size());
  for (const auto& ts : s.tenant_states) {
    rows.push_back(TenantUsage{.dram_bytes = ts->bytes,
                               .dram_keys = ts->keys,
                               .evictions = ts->evictions,
                               .quota_evictions = ts->quota_evictions,
                               .quota_refusals = ts->quota_refusals});
  }
  return rows;
}

void MemoryStore::SetObserver(StoreObserver observer) { impl_->observer = std::move(observer); }

void* MemoryStore::pool_base() const { return impl_->base; }
uint64_t MemoryStore::pool_bytes() const { return impl_->pool_bytes; }
const PoolBacking& MemoryStore::backing() const { return impl_->backing; }

Status MemoryStore::CorruptForTesting(std::string_view key) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto it = impl_->index.find(key);
  if (it == impl_->index.end()) {
    return NotFound("CorruptForTesting: key " + KeyForLog(key) + " not present");
  }
  const StoreEntry& e = *it->second;
  if (e.size == 0) {
    return FailedPrecondition("CorruptForTesting: key " + KeyForLog(key) + " has an empty value");
  }
  // The last byte: a checksum that skipped the tail of the value would miss it.
  const iovec& last = e.iov.back();
  static_cast<uint8_t*>(last.iov_base)[last.iov_len - 1] ^= 0x5a;
  return Status::Ok();
}

void MemoryStore::ReleaseRuns(std::vector<PoolRun>& runs) {
  if (runs.empty()) return;
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->FreeLocked(runs);
  runs.clear();
}

void MemoryStore::Unpin(const std::shared_ptr<StoreEntry>& entry) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->UnpinLocked(entry.get());
}

}  // namespace memkv::storage
