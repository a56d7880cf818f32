// MemoryStore: the DRAM tier. A block index over a pool of fixed-size chunks.
//
// The pool is one anonymous mapping of `max_size_bytes`, carved into chunks of
// `chunk_size_bytes`, allocated once at Create() and never resized: it is the
// region the RDMA transport registers. A value occupies ceil(size / chunk)
// chunks (zero for an empty value); the chunks need not be contiguous.
//
// Page backing (MemoryStoreOptions::hugepages, hugepages.h): explicit 2 MiB
// hugetlb pages when the policy asks for them or enough are free, else
// transparent hugepages (madvise), else 4 KiB pages. backing() says which the
// pool got and why; start logs it.
//
// Writing is two-phase so the network layer can receive straight into the pool
// with no intermediate copy:
//   auto w = store.BeginPut(size);          // reserves chunks, may evict LRU
//   readv(socket, w->iov())                 // fill the chunks, lock-free
//   store.CommitPut(std::move(*w), key, checksum);  // publish atomically
// Until CommitPut the bytes are invisible; a dropped PendingPut returns its
// chunks. CommitPut replaces any previous value of the key in one step, so a
// reader sees the old value or the new one, never a mix.
//
// Reading pins the value: Get() returns a ReadHandle whose chunks stay valid
// (not reused by eviction, overwrite or delete) until the handle is destroyed.
// Get() verifies the checksum over the pinned bytes before returning; a
// mismatch drops the entry, counts a checksum failure and reports a miss.
//
// Eviction: when BeginPut needs chunks and the free list is short, committed
// values are evicted least-recently-used first (Get and CommitPut count as
// use). Eviction skips pinned values: a reader is using them, and evicting one
// would free nothing now. A value deleted or overwritten while pinned is
// unlinked from the index at once but its chunks return to the free list only
// when the last pin goes. A value larger than the whole pool is refused with
// TooLarge; if not enough can be freed right now (everything pinned or
// pending), BeginPut fails with ResourceExhausted and evicts nothing.
//
// Thread-safety: every method may be called from any thread. One mutex guards
// the index, LRU list and free list; checksum work and data copies happen
// outside it. PendingPut and ReadHandle are move-only and may be destroyed on
// any thread, but must not outlive the store.
#ifndef MEMKV_STORAGE_MEMORY_STORE_H_
#define MEMKV_STORAGE_MEMORY_STORE_H_

#include <sys/uio.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/key_page.h"
#include "memkv/status.h"
#include "storage/hugepages.h"

namespace memkv {

struct MemoryStoreOptions {
  uint64_t max_size_bytes = 256ULL << 20;   // pool size; rounded down to whole chunks
  uint64_t chunk_size_bytes = 2ULL << 20;   // memory.block_size
  // kAuto: hugetlb if enough 2 MiB pages are free, else THP, else 4 KiB.
  // kRequire: Create fails (FailedPrecondition, NotEnoughHugePages) unless
  // the pool is hugetlb-backed. kNever: 4 KiB pages, THP refused too.
  HugePagePolicy hugepages = HugePagePolicy::kAuto;
  // Root under which the hugepage counters and the THP setting are read
  // (HugePageReader); tests point it at a fixture tree. The mapping itself is
  // always the real kernel's.
  std::string host_root = "/";
};

// How the pool is mapped; fixed at Create().
struct PoolBacking {
  PageKind kind = PageKind::kSmall;
  uint64_t mapping_bytes = 0;  // the mmap length: the pool, rounded up to 2 MiB for hugetlb
  // One line for the start-up log: the kind, and why not a better one
  // ("transparent hugepages (THP enabled: madvise; hugetlb not used: 0 free
  // 2 MiB hugepages, 128 needed)").
  std::string detail;
};

// Counters, readable at any time (relaxed atomics; a snapshot may be skewed).
struct MemoryStoreStats {
  uint64_t pool_bytes = 0;         // chunks * chunk size
  uint64_t chunk_size_bytes = 0;
  uint64_t chunks_total = 0;
  uint64_t chunks_free = 0;
  uint64_t used_bytes = 0;         // sum of committed value sizes
  uint64_t keys = 0;               // committed values in the index
  uint64_t hits = 0;
  uint64_t misses = 0;
  uint64_t evictions = 0;          // values evicted to make room
  uint64_t checksum_failures = 0;  // reads whose bytes did not match
  PageKind page_kind = PageKind::kSmall;  // PageKindName(): "hugetlb 2MiB", ...
};

class MemoryStore;
struct StoreEntry;  // internal

// Chunks reserved by BeginPut, not yet visible. Move-only; destroying it
// without CommitPut gives the chunks back.
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

 private:
  friend class MemoryStore;
  MemoryStore* store_ = nullptr;
  uint64_t size_ = 0;
  std::vector<uint32_t> chunks_;
  std::vector<iovec> iov_;
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

 private:
  friend class MemoryStore;
  MemoryStore* store_ = nullptr;
  std::shared_ptr<StoreEntry> entry_;
};

class MemoryStore {
 public:
  // InvalidArgument when the chunk size is 0 or the pool holds no whole chunk;
  // FailedPrecondition when options.hugepages is kRequire and the pool cannot
  // be hugetlb-backed (too few free 2 MiB pages: NotEnoughHugePages's
  // message; or the hugetlb mmap fails); Internal when the mapping fails
  // (naming the size and errno).
  static Result<std::unique_ptr<MemoryStore>> Create(const MemoryStoreOptions& options);
  ~MemoryStore();
  MemoryStore(const MemoryStore&) = delete;
  MemoryStore& operator=(const MemoryStore&) = delete;

  Result<PendingPut> BeginPut(uint64_t size);
  // Publishes the value under key. `checksum` is Checksum() of the bytes the
  // caller wrote; it is stored and verified on every read.
  Status CommitPut(PendingPut put, std::string_view key, uint64_t checksum);

  // NotFound on a miss (including a checksum mismatch, which is also counted).
  Result<ReadHandle> Get(std::string_view key);
  // Index lookup only: no checksum verification, no hit/miss counting and no
  // LRU refresh, so batch prefix probes stay cheap and do not skew the
  // counters. A later Get may still miss if the bytes turn out corrupt.
  bool Exists(std::string_view key);
  // The size of the value under `key`, if present (index lookup only, like
  // Exists).
  std::optional<uint64_t> ValueSize(std::string_view key);
  // Offers every key in the index to `page` (a List page), under the index
  // lock: O(keys).
  void OfferKeys(KeyPage* page) const;
  // NotFound if absent. Safe while reads of the key are in flight.
  Status Delete(std::string_view key);

  // Convenience for tests and small callers: BeginPut + copy + CommitPut.
  Status Put(std::string_view key, const void* data, uint64_t size);

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
  // Back to the free list: the chunks of a PendingPut dropped uncommitted.
  void ReleaseChunks(std::vector<uint32_t>& chunks);
  // Drops one ReadHandle pin; frees the chunks if it was the last pin of an
  // entry already unlinked from the index.
  void Unpin(const std::shared_ptr<StoreEntry>& entry);
  std::unique_ptr<Impl> impl_;
};

}  // namespace memkv

#endif  // MEMKV_STORAGE_MEMORY_STORE_H_
