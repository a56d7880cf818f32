// FaultInjectingEngine: an IoEngine decorator that makes drives misbehave on
// cue, for tests. It wraps a real engine (usually pread over temporary files)
// and changes what reaches it:
//
//   FailNth        the nth read/write/sync on a drive fails with an errno
//                  (sticky: that one and every later one: a dead drive)
//   LimitWrites    writes ending beyond a byte offset fail with ENOSPC
//   TearNthWrite   the nth write on a drive persists only a prefix and still
//                  reports success (a lying drive; checksums must catch it)
//   volatile cache writes are held in memory, visible to reads, until a sync
//                  of their drive makes them durable (like a drive's write cache)
//   HoldSyncs      a batch with a sync in it waits until the hold is lifted
//                  (a flush that stalls), before anything else of it runs
//   HoldNextWrite  the next batch with a write at or past an offset of a
//                  drive waits until ReleaseWrite (a slow value write)
//   PowerCutAt     at the nth write-or-sync from now, every write not yet
//                  synced is dropped, kept, or torn (a random subset of its
//                  4 KiB blocks: caches destage in no order), at random;
//                  the op that hits the cut persists a torn prefix and fails,
//                  and every op after it fails with EIO. Reopening the files
//                  with a clean engine then shows what a power loss would.
//
// Counts start at 1 and run from the moment the rule is set. Torn prefixes
// are whole multiples of the tear granularity (4096, valid for O_DIRECT).
//
// Thread-safety: all methods may be called from any thread; Run holds one
// mutex for the whole batch (serialising I/O, which tests do not mind).
#ifndef MEMKV_DRIVE_FAULT_ENGINE_H_
#define MEMKV_DRIVE_FAULT_ENGINE_H_

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "base/mutex.h"
#include "drive/aligned_buffer.h"
#include "drive/io_engine.h"

namespace memkv::drive {

class FaultInjectingEngine final : public IoEngine {
 public:
  explicit FaultInjectingEngine(std::unique_ptr<IoEngine> inner, uint64_t seed = 1);
  ~FaultInjectingEngine() override;

  std::string_view name() const override { return name_; }
  void Run(std::span<IoOp> ops) override;

  void FailNth(uint32_t drive, IoKind kind, uint64_t n, int err, bool sticky = false);
  void LimitWrites(uint32_t drive, uint64_t limit_bytes);
  void TearNthWrite(uint32_t drive, uint64_t n, uint32_t keep_bytes);
  // pass_syncs: also fdatasync the real file at each sync (off keeps tests
  // fast: the simulation, not the file, decides what "survives").
  void EnableVolatileCache(bool pass_syncs = false);
  void PowerCutAt(uint64_t n);
  // true: batches holding a sync wait in Run (outside the engine's lock)
  // until HoldSyncs(false).
  void HoldSyncs(bool hold);
  // Batches waiting in Run for HoldSyncs(false).
  size_t syncs_held() const;
  // The next batch holding a write on `drive` at `from_offset` or past it
  // waits in Run (outside the engine's lock) until ReleaseWrite; the
  // batches after it pass.
  void HoldNextWrite(uint32_t drive, uint64_t from_offset);
  void ReleaseWrite();
  // Batches waiting in Run for ReleaseWrite (0 or 1).
  size_t writes_held() const;
  void ClearFaults();  // every rule above, and power back on

  bool powered_off() const;
  // Writes plus syncs seen on all drives since construction (to plan cuts).
  uint64_t writes_and_syncs() const;
  // Ops of a kind seen on a drive since construction.
  uint64_t ops_seen(uint32_t drive, IoKind kind) const;

 private:
  struct FailRule {
    uint32_t drive;
    IoKind kind;
    uint64_t at;  // absolute count of (drive, kind)
    int err;
    bool sticky;
  };
  struct TearRule {
    uint32_t drive;
    uint64_t at;
    uint32_t keep_bytes;
  };
  struct CachedWrite {
    uint64_t offset;
    AlignedBuffer bytes;
    uint32_t length;
  };
  uint64_t& Count(uint32_t drive, IoKind kind) MEMKV_REQUIRES(mu_);
  void WriteSomeBlocks(uint32_t drive, const CachedWrite& w) MEMKV_REQUIRES(mu_);
  void WriteThrough(uint32_t drive, uint64_t offset, const uint8_t* bytes, uint32_t length);
  uint32_t RandomPrefix(uint32_t length) MEMKV_REQUIRES(mu_);
  void CutPower(IoOp* hit) MEMKV_REQUIRES(mu_);

  std::unique_ptr<IoEngine> inner_;
  std::string name_;
  mutable Mutex mu_;
  std::mt19937_64 rng_ MEMKV_GUARDED_BY(mu_);
  std::map<std::pair<uint32_t, int>, uint64_t> counts_ MEMKV_GUARDED_BY(mu_);
  uint64_t writes_and_syncs_ MEMKV_GUARDED_BY(mu_) = 0;
  std::vector<FailRule> fail_rules_ MEMKV_GUARDED_BY(mu_);
  std::vector<TearRule> tear_rules_ MEMKV_GUARDED_BY(mu_);
  std::map<uint32_t, uint64_t> write_limits_ MEMKV_GUARDED_BY(mu_);
  bool volatile_cache_ MEMKV_GUARDED_BY(mu_) = false;
  bool pass_syncs_ MEMKV_GUARDED_BY(mu_) = false;
  std::map<uint32_t, std::vector<CachedWrite>> cached_ MEMKV_GUARDED_BY(mu_);
  uint64_t cut_at_ MEMKV_GUARDED_BY(mu_) = 0;  // absolute writes_and_syncs_ count; 0: none
  bool powered_off_ MEMKV_GUARDED_BY(mu_) = false;
  mutable Mutex hold_mu_;
  std::condition_variable hold_cv_;
  bool hold_syncs_ MEMKV_GUARDED_BY(hold_mu_) = false;
  size_t syncs_held_ MEMKV_GUARDED_BY(hold_mu_) = 0;
  struct WriteHold {
    bool armed = false;     // the next matching batch is held
    bool released = false;
    uint32_t drive = 0;
    uint64_t from_offset = 0;
    size_t held = 0;
  };
  WriteHold write_hold_ MEMKV_GUARDED_BY(hold_mu_);
};

}  // namespace memkv::drive

#endif  // MEMKV_DRIVE_FAULT_ENGINE_H_
