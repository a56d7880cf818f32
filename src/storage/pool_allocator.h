// PoolAllocator: which parts of the DRAM pool are free, as runs of units.
//
// The pool is `unit_count` units of MemoryStore's kPoolUnitBytes each; a
// value takes ceil(size / unit) units, in one run when a free run is long
// enough (best fit: the shortest run that holds it) and otherwise in several,
// the longest free runs first. Freed runs merge with free neighbours, so a
// freed stretch of the pool is one run again however it was cut.
// docs/storage.md ("The DRAM pool") gives the reasons for this design.
//
// Free runs are kept twice: by offset (to merge with neighbours) and by
// (length, offset) (to find the best fit and the longest runs). Every
// operation is O(log runs) plus the number of pieces it returns.
//
// Not thread-safe: MemoryStore calls it under its mutex.
#ifndef MEMKV_STORAGE_POOL_ALLOCATOR_H_
#define MEMKV_STORAGE_POOL_ALLOCATOR_H_

#include <cstdint>
#include <map>
#include <set>
#include <span>
#include <utility>
#include <vector>

#include "base/small_vector.h"

namespace memkv::storage {

// A stretch of the pool, in units.
struct PoolRun {
  uint64_t offset = 0;
  uint64_t length = 0;
  bool operator==(const PoolRun&) const = default;
};

// A value's runs: nearly always one, kept in place (no allocation).
using PoolRuns = SmallVector<PoolRun, 1>;

class PoolAllocator {
 public:
  // Every unit free.
  explicit PoolAllocator(uint64_t unit_count);

  // Appends to `out` at most `max_pieces` runs adding up to `units`, in pool
  // order within each run. False (and nothing changes) when the free units
  // cannot make `units` in `max_pieces` runs. `units` == 0 always succeeds
  // with no run.
  bool Allocate(uint64_t units, uint32_t max_pieces, PoolRuns* out);
  // Whether Allocate(units, max_pieces) would succeed now.
  bool CanAllocate(uint64_t units, uint32_t max_pieces) const;
  // Returns runs handed out by Allocate (in any grouping). A run that is
  // (partly) free already or outside the pool is a caller bug: asserted in
  // debug builds, ignored otherwise.
  void Free(std::span<const PoolRun> runs);

  uint64_t unit_count() const { return unit_count_; }
  uint64_t free_units() const { return free_units_; }
  uint64_t free_runs() const { return by_offset_.size(); }
  uint64_t largest_free_run() const;

 private:
  void Insert(uint64_t offset, uint64_t length);
  void Erase(std::map<uint64_t, uint64_t>::iterator it);
  // Makes the free run at `it` the run [offset, offset + length), reusing
  // its two nodes (no allocation): a run cut at its front or grown by a
  // freed neighbour.
  void Reshape(std::map<uint64_t, uint64_t>::iterator it, uint64_t offset, uint64_t length);
  // Takes `units` from the start of the free run at `it` (which holds at least that many).
  PoolRun TakeFront(std::map<uint64_t, uint64_t>::iterator it, uint64_t units);

  uint64_t unit_count_ = 0;
  uint64_t free_units_ = 0;
  std::map<uint64_t, uint64_t> by_offset_;           // offset -> length
  std::set<std::pair<uint64_t, uint64_t>> by_size_;  // (length, offset)
  // The two nodes of the run Erase took last, for the next Insert: a value
  // that takes a whole free run and one freed apart from any free run (puts
  // and frees interleaved) allocate no node.
  std::map<uint64_t, uint64_t>::node_type spare_offset_;
  std::set<std::pair<uint64_t, uint64_t>>::node_type spare_size_;
};

}  // namespace memkv::storage

#endif  // MEMKV_STORAGE_POOL_ALLOCATOR_H_
