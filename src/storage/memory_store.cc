// MemoryStore implementation. See memory_store.h for the contract.
//
// Life of a chunk: free list -> PendingPut -> StoreEntry (linked in the index)
// -> [unlinked but pinned: "draining"] -> free list. Every transition happens
// under Impl::mu, and an entry's chunks go back exactly once: when it is both
// unlinked and unpinned (FreeChunksLocked is the only way back for committed
// chunks, and it moves the entry to kFreed). So at any instant
//   chunks_total == free + linked + draining + held by PendingPuts.
//
// The lock is never held while value bytes are touched: writers fill chunks
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
#include <unordered_map>
#include <utility>

#include "base/bytes.h"
#include "base/checksum.h"
#include "base/log.h"
#include "base/units.h"

namespace memkv {
namespace {

// Intrusive LRU links, so that touching or unlinking an entry under the lock
// never allocates.
struct LruNode {
  LruNode* prev = this;
  LruNode* next = this;
};

enum class EntryState {
  kLinked,    // in the index and the LRU list
  kUnlinked,  // deleted, overwritten or evicted; chunks kept for its pins
  kFreed,     // chunks back on the free list
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

uint64_t ChunksFor(uint64_t size_bytes, uint64_t chunk_size_bytes) {
  return size_bytes / chunk_size_bytes + (size_bytes % chunk_size_bytes != 0 ? 1 : 0);
}

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
  // Transparent huge pages: a first write into a 2 MiB chunk then costs one
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

}  // namespace

struct StoreEntry : LruNode {
  // Immutable once the entry is published; pin holders read them unlocked.
  std::string key;  // the index's string_view key points into this string
  uint64_t size = 0;
  uint64_t checksum = 0;
  std::vector<uint32_t> chunks;
  std::vector<iovec> iov;

  // Guarded by MemoryStore::Impl::mu.
  uint32_t pins = 0;
  EntryState state = EntryState::kLinked;
};

struct MemoryStore::Impl {
  Impl(MappedPool pool, uint64_t chunk_size_in, uint32_t chunks_total_in)
      : base(pool.base),
        chunk_size(chunk_size_in),
        chunks_total(chunks_total_in),
        backing(std::move(pool.backing)) {}
  ~Impl() {
    if (munmap(base, backing.mapping_bytes) != 0) {
      LOG_WARN_C("memory") << "MemoryStore: munmap of the " << FormatSize(backing.mapping_bytes)
               << " pool failed: " << std::strerror(errno);
    }
  }
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  uint64_t pool_bytes() const { return chunk_size * chunks_total; }
  uint8_t* ChunkAddress(uint32_t chunk) const { return base + uint64_t{chunk} * chunk_size; }

  // The iovec list for `size` bytes in `chunks`; runs of consecutive chunks
  // collapse into one iovec so readv/ChecksumIov see few, large segments.
  std::vector<iovec> BuildIov(const std::vector<uint32_t>& chunks, uint64_t size) const;

  // --- everything below requires mu held ---
  void LruPushFrontLocked(StoreEntry* e);
  static void LruRemoveLocked(StoreEntry* e);
  void LinkLocked(const std::shared_ptr<StoreEntry>& e);
  // Removes the entry at `it` from the index and LRU. Returns it so the caller
  // can drop the last reference after releasing mu.
  using Index = std::unordered_map<std::string_view, std::shared_ptr<StoreEntry>>;
  std::shared_ptr<StoreEntry> UnlinkLocked(Index::iterator it);
  void PinLocked(StoreEntry* e);
  void UnpinLocked(StoreEntry* e);
  void FreeChunksLocked(StoreEntry* e);
  void PushFreeLocked(const std::vector<uint32_t>& chunks);

  uint8_t* const base;
  const uint64_t chunk_size;
  const uint32_t chunks_total;
  const PoolBacking backing;

  mutable std::mutex mu;
  // Guarded by mu: index, lru, free_chunks, the *_chunks tallies below, and
  // StoreEntry::{pins, state, prev, next} of every entry.
  // Invariant: index[k] == e  <=>  e->state == kLinked, and k views e->key.
  Index index;
  LruNode lru;                        // lru.next: most recently used
  std::vector<uint32_t> free_chunks;  // a stack; capacity == chunks_total
  uint64_t linked_chunks = 0;         // held by entries in the index
  uint64_t pinned_linked_chunks = 0;  // subset of linked_chunks with pins > 0
  uint64_t draining_chunks = 0;       // held by unlinked entries with pins > 0

  // Mirrors and counters for Stats(); written under mu or not, read lock-free.
  std::atomic<uint64_t> chunks_free{0};
  std::atomic<uint64_t> used_bytes{0};
  std::atomic<uint64_t> keys{0};
  std::atomic<uint64_t> hits{0};
  std::atomic<uint64_t> misses{0};
  std::atomic<uint64_t> evictions{0};
  std::atomic<uint64_t> checksum_failures{0};
};

std::vector<iovec> MemoryStore::Impl::BuildIov(const std::vector<uint32_t>& chunks,
                                               uint64_t size) const {
  std::vector<iovec> iov;
  uint64_t left = size;
  for (size_t i = 0; i < chunks.size(); ++i) {
    uint64_t len = std::min(left, chunk_size);
    left -= len;
    if (!iov.empty() && chunks[i] == chunks[i - 1] + 1) {
      iov.back().iov_len += len;
    } else {
      iov.push_back(iovec{ChunkAddress(chunks[i]), len});
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

void MemoryStore::Impl::LinkLocked(const std::shared_ptr<StoreEntry>& e) {
  index.emplace(std::string_view(e->key), e);
  LruPushFrontLocked(e.get());
  e->state = EntryState::kLinked;
  linked_chunks += e->chunks.size();
  used_bytes.fetch_add(e->size, std::memory_order_relaxed);
  keys.fetch_add(1, std::memory_order_relaxed);
}

std::shared_ptr<StoreEntry> MemoryStore::Impl::UnlinkLocked(Index::iterator it) {
  std::shared_ptr<StoreEntry> e = std::move(it->second);
  index.erase(it);
  LruRemoveLocked(e.get());
  e->state = EntryState::kUnlinked;
  linked_chunks -= e->chunks.size();
  used_bytes.fetch_sub(e->size, std::memory_order_relaxed);
  keys.fetch_sub(1, std::memory_order_relaxed);
  if (e->pins > 0) {
    pinned_linked_chunks -= e->chunks.size();
    draining_chunks += e->chunks.size();
  } else {
    FreeChunksLocked(e.get());
  }
  return e;
}

void MemoryStore::Impl::PinLocked(StoreEntry* e) {
  if (e->pins++ == 0 && e->state == EntryState::kLinked) {
    pinned_linked_chunks += e->chunks.size();
  }
}

void MemoryStore::Impl::UnpinLocked(StoreEntry* e) {
  assert(e->pins > 0);
  if (--e->pins > 0) return;
  if (e->state == EntryState::kLinked) {
    pinned_linked_chunks -= e->chunks.size();
  } else {
    draining_chunks -= e->chunks.size();
    FreeChunksLocked(e);
  }
}

void MemoryStore::Impl::FreeChunksLocked(StoreEntry* e) {
  assert(e->state == EntryState::kUnlinked && e->pins == 0);
  e->state = EntryState::kFreed;
  PushFreeLocked(e->chunks);
}

void MemoryStore::Impl::PushFreeLocked(const std::vector<uint32_t>& chunks) {
  // Never reallocates: capacity is chunks_total and each chunk is on the free
  // list at most once.
  free_chunks.insert(free_chunks.end(), chunks.begin(), chunks.end());
  chunks_free.store(free_chunks.size(), std::memory_order_relaxed);
}

// ---------------------------------------------------------------------------
// PendingPut

PendingPut::PendingPut(PendingPut&& other) noexcept
    : store_(std::exchange(other.store_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      chunks_(std::move(other.chunks_)),
      iov_(std::move(other.iov_)) {
  other.chunks_.clear();
  other.iov_.clear();
}

PendingPut& PendingPut::operator=(PendingPut&& other) noexcept {
  if (this != &other) {
    if (store_ != nullptr) store_->ReleaseChunks(chunks_);
    store_ = std::exchange(other.store_, nullptr);
    size_ = std::exchange(other.size_, 0);
    chunks_ = std::move(other.chunks_);
    iov_ = std::move(other.iov_);
    other.chunks_.clear();
    other.iov_.clear();
  }
  return *this;
}

PendingPut::~PendingPut() {
  if (store_ != nullptr) store_->ReleaseChunks(chunks_);
}

// ---------------------------------------------------------------------------
// ReadHandle

ReadHandle::ReadHandle(ReadHandle&& other) noexcept
    : store_(std::exchange(other.store_, nullptr)), entry_(std::move(other.entry_)) {}

ReadHandle& ReadHandle::operator=(ReadHandle&& other) noexcept {
  if (this != &other) {
    if (store_ != nullptr) store_->Unpin(entry_);
    store_ = std::exchange(other.store_, nullptr);
    entry_ = std::move(other.entry_);
  }
  return *this;
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
// MemoryStore

Result<std::unique_ptr<MemoryStore>> MemoryStore::Create(const MemoryStoreOptions& options) {
  if (options.chunk_size_bytes == 0) {
    return InvalidArgument("MemoryStore: chunk_size_bytes must be > 0");
  }
  uint64_t chunks = options.max_size_bytes / options.chunk_size_bytes;
  if (chunks == 0) {
    return InvalidArgument("MemoryStore: max_size_bytes " + FormatSize(options.max_size_bytes) +
                           " holds no whole chunk of " + FormatSize(options.chunk_size_bytes));
  }
  // Chunk indices are uint32 to keep per-value metadata small.
  if (chunks > UINT32_MAX) {
    return InvalidArgument("MemoryStore: max_size_bytes " + FormatSize(options.max_size_bytes) +
                           " / chunk_size_bytes " + FormatSize(options.chunk_size_bytes) + " = " +
                           std::to_string(chunks) + " chunks, more than the limit of " +
                           std::to_string(UINT32_MAX) + "; use a larger chunk");
  }
  uint64_t bytes = chunks * options.chunk_size_bytes;
  HugePageReader reader(options.host_root);
  Result<HugePageCounts> counts = options.hugepages == HugePagePolicy::kNever
                                      ? Result<HugePageCounts>(Unavailable("not read (policy never)"))
                                      : reader.Read2MiB();
  MEMKV_ASSIGN_OR_RETURN(BackingPlan plan, PlanPoolBacking(options.hugepages, bytes, counts));
  MEMKV_ASSIGN_OR_RETURN(MappedPool pool, MapPool(bytes, options.hugepages, plan, counts, reader));
  auto impl = std::make_unique<Impl>(std::move(pool), options.chunk_size_bytes, static_cast<uint32_t>(chunks));
  impl->free_chunks.reserve(chunks);
  // Pushed in reverse so allocation starts at chunk 0 and fresh values come
  // out contiguous (one iovec).
  for (uint64_t i = chunks; i > 0; --i) impl->free_chunks.push_back(static_cast<uint32_t>(i - 1));
  impl->chunks_free.store(chunks, std::memory_order_relaxed);
  return std::unique_ptr<MemoryStore>(new MemoryStore(std::move(impl)));
}

MemoryStore::MemoryStore(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

MemoryStore::~MemoryStore() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  uint64_t outstanding = impl_->chunks_total - impl_->free_chunks.size() - impl_->linked_chunks;
  if (outstanding != 0) {
    // A PendingPut or ReadHandle outlives the store: its pointers into the
    // pool are about to dangle. That is a caller bug; say so loudly.
    LOG_WARN_C("memory") << "MemoryStore destroyed with " << outstanding
             << " chunks still held by PendingPuts or ReadHandles (" << impl_->draining_chunks
             << " by handles of unlinked values)";
  }
}

Result<PendingPut> MemoryStore::BeginPut(uint64_t size) {
  Impl& s = *impl_;
  uint64_t needed = ChunksFor(size, s.chunk_size);
  if (needed > s.chunks_total) {
    return TooLarge("BeginPut: value of " + FormatSize(size) +
                    " is larger than the whole memory pool of " + FormatSize(s.pool_bytes()));
  }
  PendingPut put;
  put.store_ = this;
  put.size_ = size;
  put.chunks_.reserve(needed);
  // Declared before the lock so evicted entries are destroyed after it is released.
  std::vector<std::shared_ptr<StoreEntry>> evicted;
  if (needed > 0) {
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.free_chunks.size() < needed) {
      uint64_t evictable = s.linked_chunks - s.pinned_linked_chunks;
      if (s.free_chunks.size() + evictable < needed) {
        // Refuse before evicting anything: emptying the cache for a put that
        // fails anyway would only turn future hits into misses.
        put.store_ = nullptr;
        uint64_t pinned = s.pinned_linked_chunks + s.draining_chunks;
        uint64_t pending =
            s.chunks_total - s.free_chunks.size() - s.linked_chunks - s.draining_chunks;
        return ResourceExhausted(
            "BeginPut: value of " + FormatSize(size) + " needs " + std::to_string(needed) +
            " chunks of " + FormatSize(s.chunk_size) + "; free " +
            std::to_string(s.free_chunks.size()) + ", evictable " + std::to_string(evictable) +
            ", pinned by readers " + std::to_string(pinned) + ", reserved by uncommitted puts " +
            std::to_string(pending) + " (pool: " + std::to_string(s.chunks_total) + " chunks, " +
            FormatSize(s.pool_bytes()) + ")");
      }
      LruNode* node = s.lru.prev;
      while (s.free_chunks.size() < needed && node != &s.lru) {
        auto* e = static_cast<StoreEntry*>(node);
        node = node->prev;  // before e leaves the list
        // Pinned entries would free nothing now; empty ones never free anything.
        if (e->pins > 0 || e->chunks.empty()) continue;
        evicted.push_back(s.UnlinkLocked(s.index.find(e->key)));
        s.evictions.fetch_add(1, std::memory_order_relaxed);
      }
      assert(s.free_chunks.size() >= needed);
    }
    auto first = s.free_chunks.end() - static_cast<std::ptrdiff_t>(needed);
    put.chunks_.assign(std::make_reverse_iterator(s.free_chunks.end()),
                       std::make_reverse_iterator(first));
    s.free_chunks.erase(first, s.free_chunks.end());
    s.chunks_free.store(s.free_chunks.size(), std::memory_order_relaxed);
  }
  put.iov_ = s.BuildIov(put.chunks_, size);
  return put;
}

Status MemoryStore::CommitPut(PendingPut put, std::string_view key, uint64_t checksum) {
  if (put.store_ != this) {
    return InvalidArgument("CommitPut(key " + KeyForLog(key) +
                           "): the PendingPut was not issued by this store "
                           "(default-constructed, moved-from or another store's)");
  }
  // Built outside the lock: the key copy and allocations cost nothing there.
  auto entry = std::make_shared<StoreEntry>();
  entry->key.assign(key);
  entry->size = put.size_;
  entry->checksum = checksum;
  entry->chunks = std::move(put.chunks_);
  entry->iov = std::move(put.iov_);
  put.store_ = nullptr;  // the chunks now belong to the entry

  Impl& s = *impl_;
  std::shared_ptr<StoreEntry> replaced;  // dropped after the lock is released
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.index.find(key);
  if (it != s.index.end()) replaced = s.UnlinkLocked(it);
  s.LinkLocked(entry);
  return Status::Ok();
}

Result<ReadHandle> MemoryStore::Get(std::string_view key) {
  Impl& s = *impl_;
  std::shared_ptr<StoreEntry> entry;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    auto it = s.index.find(key);
    if (it == s.index.end()) {
      s.misses.fetch_add(1, std::memory_order_relaxed);
      return NotFound("Get: key " + KeyForLog(key) + " not present");
    }
    entry = it->second;
    s.PinLocked(entry.get());
    Impl::LruRemoveLocked(entry.get());
    s.LruPushFrontLocked(entry.get());
  }

  // The pin keeps the chunks ours while we hash them unlocked.
  uint64_t actual = ChecksumIov(entry->iov);
  if (actual != entry->checksum) {
    std::shared_ptr<StoreEntry> dropped;
    {
      std::lock_guard<std::mutex> lock(s.mu);
      // A concurrent overwrite or delete may already have replaced it; then
      // the index holds a different value that is not ours to drop.
      if (entry->state == EntryState::kLinked) dropped = s.UnlinkLocked(s.index.find(entry->key));
      s.UnpinLocked(entry.get());
    }
    s.checksum_failures.fetch_add(1, std::memory_order_relaxed);
    s.misses.fetch_add(1, std::memory_order_relaxed);
    LOG_WARN_C("memory") << "MemoryStore: checksum mismatch on key " << KeyForLog(key) << " ("
             << FormatSize(entry->size) << "): stored " << std::hex << entry->checksum
             << ", computed " << actual << std::dec << "; value dropped";
    return NotFound("Get: key " + KeyForLog(key) + " dropped: checksum mismatch");
  }
  s.hits.fetch_add(1, std::memory_order_relaxed);
  ReadHandle handle;
  handle.store_ = this;
  handle.entry_ = std::move(entry);
  return handle;
}

bool MemoryStore::Exists(std::string_view key) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->index.contains(key);
}

std::optional<uint64_t> MemoryStore::ValueSize(std::string_view key) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto it = impl_->index.find(key);
  if (it == impl_->index.end()) return std::nullopt;
  return it->second->size;
}

void MemoryStore::OfferKeys(KeyPage* page) const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  for (const auto& [key, entry] : impl_->index) page->Offer(key);
}

Status MemoryStore::Delete(std::string_view key) {
  Impl& s = *impl_;
  std::shared_ptr<StoreEntry> removed;  // dropped after the lock is released
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.index.find(key);
  if (it == s.index.end()) return NotFound("Delete: key " + KeyForLog(key) + " not present");
  removed = s.UnlinkLocked(it);
  return Status::Ok();
}

Status MemoryStore::Put(std::string_view key, const void* data, uint64_t size) {
  MEMKV_ASSIGN_OR_RETURN(PendingPut put, BeginPut(size));
  const auto* in = static_cast<const uint8_t*>(data);
  for (const iovec& v : put.iov()) {
    std::memcpy(v.iov_base, in, v.iov_len);
    in += v.iov_len;
  }
  return CommitPut(std::move(put), key, Checksum(data, size));
}

MemoryStoreStats MemoryStore::Stats() const {
  const Impl& s = *impl_;
  MemoryStoreStats out;
  out.pool_bytes = s.pool_bytes();
  out.chunk_size_bytes = s.chunk_size;
  out.chunks_total = s.chunks_total;
  out.chunks_free = s.chunks_free.load(std::memory_order_relaxed);
  out.used_bytes = s.used_bytes.load(std::memory_order_relaxed);
  out.keys = s.keys.load(std::memory_order_relaxed);
  out.hits = s.hits.load(std::memory_order_relaxed);
  out.misses = s.misses.load(std::memory_order_relaxed);
  out.evictions = s.evictions.load(std::memory_order_relaxed);
  out.checksum_failures = s.checksum_failures.load(std::memory_order_relaxed);
  out.page_kind = s.backing.kind;
  return out;
}

void* MemoryStore::pool_base() const { return impl_->base; }
uint64_t MemoryStore::pool_bytes() const { return impl_->pool_bytes(); }
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

void MemoryStore::ReleaseChunks(std::vector<uint32_t>& chunks) {
  if (chunks.empty()) return;
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->PushFreeLocked(chunks);
  chunks.clear();
}

void MemoryStore::Unpin(const std::shared_ptr<StoreEntry>& entry) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->UnpinLocked(entry.get());
}

}  // namespace memkv
