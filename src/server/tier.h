// Tier: the DRAM pool (MemoryStore) in front of the drives (ExtentStore), and
// the I/O threads that do the drive work so that no event-loop thread ever
// waits on a drive.
//
// Write-through (docs/storage.md, "What put promises"): a put's bytes land in
// DRAM pool chunks (a PendingPut), are written to the drives and made durable,
// and only then published in DRAM and acknowledged. So every value in DRAM is
// also on a drive, and DRAM eviction just drops the DRAM copy. A value that
// is only on the drives is read back on a DRAM miss and, when
// `promote_on_read`, published in DRAM again; otherwise it is served from a
// private buffer. When the drives are full, the coldest values on the drives
// are evicted to make room (DRAM -> drive -> gone).
//
// Ordering: operations on one key are serialised (a striped mutex held across
// the drive I/O and the DRAM update), so DRAM never publishes a value older
// than what the drives hold. Different keys proceed in parallel.
//
// Without drives (storage.mode memory) the tier is just the MemoryStore: the
// blocking calls are never used and no thread is started.
//
// Thread-safety: every method may be called from any thread. The blocking
// methods (WriteThrough, Fetch, Delete) belong on the I/O threads (Submit).
// The destructor runs every queued job, then joins.
#ifndef MEMKV_SERVER_TIER_H_
#define MEMKV_SERVER_TIER_H_

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "drive/extent_store.h"
#include "memkv/status.h"
#include "storage/memory_store.h"

namespace memkv {

struct TierOptions {
  int io_threads = 4;            // drive I/O threads; each blocks on one drive operation
  bool promote_on_read = true;   // copy a value read from the drives back into DRAM
};

// A value read for a response: pinned in DRAM (handle) or, when it could not
// be promoted, in `bytes`.
struct FetchedValue {
  ReadHandle handle;
  std::vector<uint8_t> bytes;
  bool in_dram = false;
  uint64_t size = 0;
  uint64_t checksum = 0;
};

struct TierCounters {
  uint64_t drive_hits = 0;        // DRAM misses served from the drives
  uint64_t promotions = 0;        // of those, copied back into DRAM
  uint64_t drive_evictions = 0;   // values evicted from the drives to make room
  uint64_t write_failures = 0;    // puts the drives refused (full, offline, I/O error)
};

class Tier {
 public:
  // `drives` may be null (memory mode). Both must outlive the tier.
  Tier(MemoryStore* memory, ExtentStore* drives, const TierOptions& options);
  ~Tier();
  Tier(const Tier&) = delete;
  Tier& operator=(const Tier&) = delete;

  MemoryStore* memory() const { return memory_; }
  ExtentStore* drives() const { return drives_; }
  bool has_drives() const { return drives_ != nullptr; }

  // Runs `job` on an I/O thread, in submission order per thread pool (FIFO).
  void Submit(std::function<void()> job);

  // In DRAM or on a drive (index lookups only; no I/O).
  bool Exists(std::string_view key);
  // The size of the value under `key`, in DRAM or on a drive (index lookups
  // only; no I/O).
  std::optional<uint64_t> ValueSize(std::string_view key);
  // Offers the keys in DRAM and on the drives to `page` (a List page; a key
  // in both is kept once). Index scans only; no I/O.
  void OfferKeys(KeyPage* page);
  // On a drive but not in DRAM: worth a Fetch.
  bool OnDriveOnly(std::string_view key);

  // Blocking (I/O threads). Writes the bytes of `put` (whose Checksum() is
  // `checksum`) to the drives, durably, then publishes them in DRAM. When
  // the drives are full, evicts their coldest values and tries again.
  Status WriteThrough(PendingPut put, const std::string& key, uint64_t checksum);
  // Blocking. Reads `key` from the drives (promoting it when configured).
  // NotFound when absent or unreadable (a failed checksum or drive).
  // `need_dram`: the caller must have a DRAM pin (an RDMA READ): when the
  // value cannot be promoted, ResourceExhausted.
  Result<FetchedValue> Fetch(const std::string& key, bool need_dram);
  // Blocking. Removes `key` from both tiers; NotFound when neither had it.
  Status Delete(const std::string& key);

  TierCounters Counters() const;

 private:
  std::mutex& StripeFor(std::string_view key);
  bool EvictionCanHelp(uint64_t extents) const;
  void Loop();

  MemoryStore* memory_;
  ExtentStore* drives_;
  TierOptions options_;
  std::array<std::mutex, 256> stripes_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;  // guarded by mu_
  bool stopping_ = false;                    // guarded by mu_
  std::vector<std::thread> threads_;

  std::atomic<uint64_t> drive_hits_{0};
  std::atomic<uint64_t> promotions_{0};
  std::atomic<uint64_t> drive_evictions_{0};
  std::atomic<uint64_t> write_failures_{0};
};

}  // namespace memkv

#endif  // MEMKV_SERVER_TIER_H_
