// MemoryStore: the pool. Mapping it (hugetlb, transparent hugepages or 4 KiB
// pages, hugepages.h), faulting it in, Create, and giving runs back to the
// allocator. See memory_store.h for the contract, memory_store_impl.h for
// the internals.
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <thread>
#include <utility>

#include "base/log.h"
#include "base/mutex.h"
#include "base/thread_name.h"
#include "base/units.h"
#include "storage/memory_store_impl.h"

namespace memkv::storage {
namespace {

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
  std::atomic<bool> populate_works{true};
  Mutex progress_mu;  // progress is called from one thread at a time
  // Guarded by progress_mu (a local: MEMKV_GUARDED_BY annotates fields only).
  uint64_t done = 0;
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
      MutexLock lock(progress_mu);
      done += len;
      if (progress) progress(done, bytes);
    }
  };
  std::vector<std::thread> pool;
  for (unsigned i = 1; i < threads; ++i) {
    pool.emplace_back([&work] {
      SetThreadName("memkv-prefault");
      work();
    });
  }
  work();
  for (std::thread& t : pool) t.join();
}

// The pool's retention settings: a hit re-arms a pin's TTL.
policy::RetentionOptions RetentionOf(const MemoryStoreOptions& o) {
  return policy::RetentionOptions{.pinned_max_fraction = o.pinned_max_fraction,
                                  .pin_ttl_ms = o.pin_ttl_ms,
                                  .pin_ttl_max_ms = o.pin_ttl_max_ms,
                                  .rearm_on_hit = true};
}

}  // namespace

MemoryStore::Impl::Impl(uint8_t* base_in, PoolBacking backing_in, const MemoryStoreOptions& options,
                        uint64_t pool_bytes_in)
    : base(base_in),
      block_size(options.block_size_bytes),
      pool_bytes(pool_bytes_in),
      backing(std::move(backing_in)),
      read_check_interval(options.read_check_interval_ns),
      clock(options.clock != nullptr ? options.clock : &steady_clock),
      realtime(options.realtime_clock != nullptr ? options.realtime_clock : &system_realtime),
      observer(options.observer),
      observed(options.observed),
      retention_options(RetentionOf(options)),
      policies(policy::PolicyOptions{
          .prefix_aware = true,
          .find_linked = [this](std::string_view key) -> policy::PolicyEntry* {
            mu.AssertHeld();  // the kit asks only from inside the store's *Locked calls
            auto it = index.find(key);
            return it != index.end() ? it->second.get() : nullptr;
          },
          .retention = retention_options,
          .capacity_units = pool_bytes_in / kPoolUnitBytes,
          .unit_bytes = kPoolUnitBytes,
          .quota = policy::QuotaKind::kDram,
      }),
      pin_mirrors(&policies.retention()),
      allocator(pool_bytes_in / kPoolUnitBytes) {}

MemoryStore::Impl::~Impl() {
  if (munmap(base, backing.mapping_bytes) != 0) {
    LOG_WARN_C("memory") << "MemoryStore: munmap of the " << FormatSize(backing.mapping_bytes)
                         << " pool failed: " << std::strerror(errno);
  }
}

void MemoryStore::Impl::BuildIov(const PoolRuns& runs, uint64_t size, ValueIov* out) const {
  ValueIov& iov = *out;
  iov.clear();
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
  MEMKV_RETURN_IF_ERROR(policy::CheckRetentionOptions(RetentionOf(options), "MemoryStore"));
  auto impl = std::make_unique<Impl>(pool.base, std::move(pool.backing), options, bytes);
  {
    MutexLock lock(impl->mu);  // no other thread can see impl yet
    impl->PublishFreeLocked();
  }
  return std::unique_ptr<MemoryStore>(new MemoryStore(std::move(impl)));
}

MemoryStore::MemoryStore(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

MemoryStore::~MemoryStore() {
  MutexLock lock(impl_->mu);
  const uint64_t outstanding =
      impl_->allocator.unit_count() - impl_->allocator.free_units() - impl_->policies.eviction().linked_cost();
  if (outstanding != 0) {
    // A PendingPut or ReadHandle outlives the store: its pointers into the
    // pool are about to dangle. That is a caller bug; say so loudly.
    LOG_WARN_C("memory") << "MemoryStore destroyed with " << FormatSize(outstanding * kPoolUnitBytes)
                         << " still held by PendingPuts or ReadHandles ("
                         << FormatSize(impl_->draining_units * kPoolUnitBytes) << " by handles of unlinked values)";
  }
}

void MemoryStore::SetObserver(StoreObserver observer, StoreEventSet observed) {
  impl_->observer = std::move(observer);
  impl_->observed = observed;
}

void* MemoryStore::pool_base() const { return impl_->base; }
uint64_t MemoryStore::pool_bytes() const { return impl_->pool_bytes; }
const PoolBacking& MemoryStore::backing() const { return impl_->backing; }

Status MemoryStore::CorruptForTesting(std::string_view key) {
  MutexLock lock(impl_->mu);
  auto it = impl_->index.find(key);
  if (it == impl_->index.end()) {
    return NotFound("CorruptForTesting: key " + KeyForLog(key) + " not present");
  }
  const StoreEntry& e = *it->second;
  if (e.size() == 0) {
    return FailedPrecondition("CorruptForTesting: key " + KeyForLog(key) + " has an empty value");
  }
  // The last byte: a checksum that skipped the tail of the value would miss it.
  const iovec& last = e.iov.back();
  static_cast<uint8_t*>(last.iov_base)[last.iov_len - 1] ^= 0x5a;
  return Status::Ok();
}

void MemoryStore::ReleaseRuns(PoolRuns& runs) {
  if (runs.empty()) return;
  MutexLock lock(impl_->mu);
  impl_->FreeLocked(runs);
  runs.clear();
}

}  // namespace memkv::storage
