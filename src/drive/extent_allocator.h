// ExtentAllocator: which slots of one drive are free.
//
// Not persisted: the store rebuilds it at open from the journal's live
// records (MarkUsed each referenced slot, then Seal), so it can never
// disagree with the index. Allocation takes the lowest free slots first on a
// fresh drive and reuses recently freed slots after that.
//
// Not thread-safe: the extent store calls it under its mutex.
#ifndef MEMKV_DRIVE_EXTENT_ALLOCATOR_H_
#define MEMKV_DRIVE_EXTENT_ALLOCATOR_H_

#include <cstdint>
#include <optional>
#include <vector>

namespace memkv {

class ExtentAllocator {
 public:
  ExtentAllocator() = default;
  // Every slot free, but nothing allocatable until Seal().
  explicit ExtentAllocator(uint64_t slot_count);

  // At open: false when the slot is out of range or already used (two live
  // records claiming one slot; the caller drops the later one).
  bool MarkUsed(uint64_t slot);
  // Builds the free list from what was not marked.
  void Seal();

  std::optional<uint64_t> Allocate();
  // False (and nothing changes) when the slot is out of range or not in use.
  bool Free(uint64_t slot);

  uint64_t slot_count() const { return slot_count_; }
  uint64_t used_count() const { return used_count_; }
  uint64_t free_count() const { return slot_count_ - used_count_; }
  bool IsUsed(uint64_t slot) const;

 private:
  uint64_t slot_count_ = 0;
  uint64_t used_count_ = 0;
  std::vector<uint64_t> used_bits_;
  std::vector<uint32_t> free_;  // a stack; the back is allocated next
};

}  // namespace memkv

#endif  // MEMKV_DRIVE_EXTENT_ALLOCATOR_H_
