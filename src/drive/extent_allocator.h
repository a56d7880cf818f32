// ExtentAllocator: which 4 KiB units of one drive's data area are free, as
// runs of consecutive units.
//
// Not persisted: the store rebuilds it at open from the journal's live
// records (MarkUsed each extent's units, newest record first, then Seal), so
// it can never disagree with the index.
//
// Allocation is best fit: the shortest free run that holds the extent, the
// lowest-numbered one among equals, cut from its front. Freed runs coalesce
// with free neighbours at once. So small values fill the holes that small
// values left, a fresh drive fills from unit 0 up, and a long run is cut
// only when no shorter one fits. Free runs are kept twice: by first unit
// (to find neighbours) and by (length, first unit) (to find the best fit),
// both O(log runs). Memory: about 100 bytes per free run; there are never
// more free runs than live extents + 1.
//
// Not thread-safe: the extent store calls it under its mutex.
#ifndef MEMKV_DRIVE_EXTENT_ALLOCATOR_H_
#define MEMKV_DRIVE_EXTENT_ALLOCATOR_H_

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <utility>

namespace memkv::drive {

struct UnitRun {
  uint64_t first = 0;
  uint64_t units = 0;
  bool operator==(const UnitRun&) const = default;
};

class ExtentAllocator {
 public:
  ExtentAllocator() = default;
  // Every unit free, but nothing allocatable until Seal().
  explicit ExtentAllocator(uint64_t unit_count);

  // Before Seal, at open: claims [first, first + units). False (and nothing
  // changes) when the run is empty, out of range or overlaps a run already
  // claimed (two live records naming one unit: the caller drops the older).
  bool MarkUsed(uint64_t first, uint64_t units);
  // Before Seal: gives back a run claimed by MarkUsed (a record dropped after
  // part of its extents were claimed). False when no such claim exists.
  bool Unmark(uint64_t first, uint64_t units);
  // Builds the free runs from what was not claimed.
  void Seal();

  // Best fit for `units` units; nullopt when no free run is that long (or
  // before Seal). The first unit of the run handed out.
  std::optional<uint64_t> Allocate(uint64_t units);
  // The longest free run, or its first `units` units when it is longer:
  // for cutting a value when no run holds a whole extent. nullopt when
  // nothing is free.
  std::optional<UnitRun> AllocateLongest(uint64_t units);
  // Returns [first, first + units) to the free runs. False (and nothing
  // changes) when it is empty, out of range or overlaps a free run (a double
  // free).
  bool Free(uint64_t first, uint64_t units);

  uint64_t unit_count() const { return unit_count_; }
  uint64_t used_units() const { return used_units_; }
  uint64_t free_units() const { return unit_count_ - used_units_; }
  uint64_t free_runs() const { return by_first_.size(); }
  uint64_t longest_free_run() const { return by_length_.empty() ? 0 : by_length_.rbegin()->first; }
  // True when any unit of [first, first + units) is in use (after Seal).
  bool IsUsed(uint64_t first, uint64_t units = 1) const;

 private:
  bool InRange(uint64_t first, uint64_t units) const {
    return units != 0 && first < unit_count_ && units <= unit_count_ - first;
  }
  // True when [first, first + units) overlaps a run of `runs` (first -> units).
  static bool Overlaps(const std::map<uint64_t, uint64_t>& runs, uint64_t first, uint64_t units);
  void AddFree(uint64_t first, uint64_t units);
  void RemoveFree(std::map<uint64_t, uint64_t>::iterator it);

  uint64_t unit_count_ = 0;
  uint64_t used_units_ = 0;
  bool sealed_ = false;
  std::map<uint64_t, uint64_t> claimed_;                  // before Seal: first -> units
  std::map<uint64_t, uint64_t> by_first_;                 // free runs: first -> units
  std::set<std::pair<uint64_t, uint64_t>> by_length_;     // free runs: (units, first)
};

}  // namespace memkv::drive

#endif  // MEMKV_DRIVE_EXTENT_ALLOCATOR_H_
