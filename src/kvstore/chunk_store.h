// ChunkStore: one kv_store handle (memkv/kv_store.h) over a memkv::Client.
//
// Chunks are content-addressed and immutable; manifests are named and
// replaced whole. PutChunk buffers a chunk (copying the caller's bytes); a
// flush (PutManifest, or a PutChunk that fills the buffer) asks the servers
// which buffered chunks they already hold, in one BatchExists, and sends the
// rest with BatchPut. A chunk of kDirectChunkBytes or more is not copied:
// PutChunk asks whether the servers hold it and sends it from the caller's
// bytes before it returns (a copy would cost as much as the send), and only
// one the servers did not take is buffered for the next flush. PutManifest
// waits for every flush that started before it (a direct send counts as
// one), so the chunks a manifest names are stored before the manifest is.
// PrefetchChunks fills a bounded cache (PrefetchCache) that GetChunk takes
// from.
//
// Handles opened with the same servers and settings share one client
// (SharedClients), so a handle opened after another finds its connections
// open.
//
// Thread-safety: every method may be called from many threads at once; the
// destructor must not race with them. mu_ guards the buffer and the flush
// bookkeeping only: copies of chunk bytes and all network I/O run outside
// it, so threads' transfers overlap. Allocation failures throw
// std::bad_alloc (the C edge maps it); nothing else throws.
#ifndef MEMKV_KVSTORE_CHUNK_STORE_H_
#define MEMKV_KVSTORE_CHUNK_STORE_H_

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "base/mutex.h"
#include "kvstore/malloc_buffer.h"
#include "kvstore/prefetch_cache.h"
#include "kvstore/settings.h"
#include "kvstore/shared_clients.h"
#include "memkv/client.h"
#include "memkv/status.h"

namespace memkv::kvstore {

// A flush sends at most this many chunks; a PutChunk that makes the buffer
// hold this many flushes it (a batch's frame limit on the wire).
inline constexpr size_t kFlushChunks = 1024;
// Chunks of at least this many bytes are sent by PutChunk itself.
inline constexpr size_t kDirectChunkBytes = size_t{1} << 20;

class ChunkStore {
 public:
  // Parses `uri`, reads the environment, and takes the client of `clients`
  // kept for these servers and settings, or creates one (SharedClients).
  static Result<std::unique_ptr<ChunkStore>> Open(std::string_view uri, const EnvLookup& env,
                                                  SharedClients& clients = SharedClients::OfProcess());
  // A store over a client the caller made (tests: a real client wrapped to
  // inject a fault hard to provoke, such as a server shedding puts).
  static std::unique_ptr<ChunkStore> WithClient(std::shared_ptr<Client> client, std::string name_space,
                                                const StoreSettings& settings) {
    return std::unique_ptr<ChunkStore>(new ChunkStore(std::move(client), std::move(name_space), settings));
  }
  ~ChunkStore() = default;
  ChunkStore(const ChunkStore&) = delete;
  ChunkStore& operator=(const ChunkStore&) = delete;

  Status PutChunk(std::span<const uint8_t> hash, std::span<const uint8_t> data);
  Result<MallocBuffer> GetChunk(std::span<const uint8_t> hash);
  Status PutManifest(std::string_view name, std::span<const uint8_t> data);
  Result<MallocBuffer> GetManifest(std::string_view name);
  Status DeleteManifest(std::string_view name);
  // `hashes` holds count hashes of hash_len bytes each.
  Status PrefetchChunks(std::span<const uint8_t> hashes, size_t hash_len, size_t count);

  // Records a chunk the C edge refused before it reached PutChunk (a NULL
  // pointer), so the next PutManifest fails as for PutChunk's own refusals.
  Status Refuse(Status status);

  const std::string& name_space() const { return name_space_; }

 private:
  // Buffered chunks by key. Shared so a GetChunk can copy one outside mu_
  // while a flush may be sending it.
  using ChunkBytes = std::shared_ptr<const MallocBuffer>;
  struct Pending {
    std::unordered_map<std::string, ChunkBytes> chunks;
    uint64_t bytes = 0;
  };

  ChunkStore(std::shared_ptr<Client> client, std::string name_space, const StoreSettings& settings)
      : client_(std::move(client)),
        name_space_(std::move(name_space)),
        buffer_bytes_(settings.buffer_bytes),
        cache_(settings.prefetch_bytes, kMaxPrefetchEntries) {}

  // chunk_store_flush.cc
  // Sends what is buffered now (one flush), putting back what could not be
  // stored. Does not wait for other threads' flushes. *id: the flush's
  // number (every call takes one, also when nothing is buffered).
  Status FlushOnce(uint64_t* id = nullptr);
  // Flushes, then waits for every flush that started earlier; succeeds only
  // when all of them stored their chunks (retrying theirs once if not).
  Status FlushForManifest();
  // BatchExists, then BatchPut of the absent ones. What is stored leaves
  // `batch`; the first failure is returned.
  Status SendBatch(Pending* batch);
  // A large chunk sent now from the caller's bytes (Exists, then Put when
  // absent), in flight meanwhile, as a flush of one chunk. Ok when stored or
  // held already; otherwise a copy is buffered for the next flush.
  Status SendDirect(const std::string& key, std::span<const uint8_t> data);
  // What PutChunk returns for a flush's status: Busy is Ok while the buffer
  // stays within twice its bounds.
  Status Settle(Status status);
  // A chunk's bytes could not be copied (`why`: the allocation's error): the
  // next PutManifest is refused, so no manifest names the lost chunk.
  void RefuseCopyLocked(const char* why) MEMKV_REQUIRES(mu_);

  // Reads one value from the servers into a malloc block; with `use_hint`
  // (chunks) straight into a block of the size hint when the value fits.
  Result<MallocBuffer> FetchOne(const std::string& key, bool use_hint);
  void NoteSize(size_t size);
  // Reports (and forgets) a refusal since the last PutManifest.
  Status TakeRefusal();

  const std::shared_ptr<Client> client_;  // shared with other handles opened alike
  const std::string name_space_;
  const uint64_t buffer_bytes_;
  PrefetchCache cache_;
  // The largest chunk seen on this handle: the size reads allocate first.
  std::atomic<size_t> size_hint_{0};

  Mutex mu_;
  std::condition_variable flush_done_;
  Pending pending_ MEMKV_GUARDED_BY(mu_);
  std::unordered_set<std::string> in_flight_ MEMKV_GUARDED_BY(mu_);  // keys a flush is sending
  uint64_t next_flush_id_ MEMKV_GUARDED_BY(mu_) = 0;
  std::set<uint64_t> active_flushes_ MEMKV_GUARDED_BY(mu_);
  uint64_t failed_flushes_ MEMKV_GUARDED_BY(mu_) = 0;
  Status last_flush_error_ MEMKV_GUARDED_BY(mu_);
  // A PutChunk refused since the last PutManifest; out_of_memory_ when for
  // lack of memory (reported as such).
  std::optional<Status> refused_ MEMKV_GUARDED_BY(mu_);
  bool refused_out_of_memory_ MEMKV_GUARDED_BY(mu_) = false;
};

}  // namespace memkv::kvstore

#endif  // MEMKV_KVSTORE_CHUNK_STORE_H_
