// PoolAllocator implementation. See pool_allocator.h.
#include "storage/pool_allocator.h"

#include <algorithm>
#include <cassert>
#include <iterator>

namespace memkv::storage {

PoolAllocator::PoolAllocator(uint64_t unit_count) : unit_count_(unit_count) {
  if (unit_count > 0) Insert(0, unit_count);
}

void PoolAllocator::Insert(uint64_t offset, uint64_t length) {
  if (spare_offset_.empty()) {
    by_offset_.emplace(offset, length);
    by_size_.emplace(length, offset);
  } else {
    spare_offset_.key() = offset;
    spare_offset_.mapped() = length;
    spare_size_.value() = {length, offset};
    by_offset_.insert(std::move(spare_offset_));
    by_size_.insert(std::move(spare_size_));
  }
  free_units_ += length;
}

void PoolAllocator::Erase(std::map<uint64_t, uint64_t>::iterator it) {
  free_units_ -= it->second;
  if (spare_offset_.empty()) {
    spare_size_ = by_size_.extract({it->second, it->first});
    spare_offset_ = by_offset_.extract(it);
  } else {
    by_size_.erase({it->second, it->first});
    by_offset_.erase(it);
  }
}

void PoolAllocator::Reshape(std::map<uint64_t, uint64_t>::iterator it, uint64_t offset, uint64_t length) {
  auto by_size = by_size_.extract({it->second, it->first});
  free_units_ = free_units_ - it->second + length;
  auto by_offset = by_offset_.extract(it);
  by_offset.key() = offset;
  by_offset.mapped() = length;
  by_size.value() = {length, offset};
  by_offset_.insert(std::move(by_offset));
  by_size_.insert(std::move(by_size));
}

PoolRun PoolAllocator::TakeFront(std::map<uint64_t, uint64_t>::iterator it, uint64_t units) {
  const PoolRun run{it->first, it->second};
  assert(run.length >= units);
  if (run.length == units) {
    Erase(it);
  } else {
    Reshape(it, run.offset + units, run.length - units);
  }
  return PoolRun{run.offset, units};
}

uint64_t PoolAllocator::largest_free_run() const {
  return by_size_.empty() ? 0 : by_size_.rbegin()->first;
}

bool PoolAllocator::CanAllocate(uint64_t units, uint32_t max_pieces) const {
  if (units == 0) return true;
  if (units > free_units_ || max_pieces == 0) return false;
  uint64_t sum = 0;
  uint32_t pieces = 0;
  for (auto it = by_size_.rbegin(); it != by_size_.rend() && pieces < max_pieces; ++it, ++pieces) {
    sum += it->first;
    if (sum >= units) return true;
  }
  return false;
}

bool PoolAllocator::Allocate(uint64_t units, uint32_t max_pieces, PoolRuns* out) {
  if (units == 0) return true;
  if (!CanAllocate(units, max_pieces)) return false;
  // One run: the shortest that holds it, lowest offset among equals, so a
  // fresh pool fills from the front and consecutive values sit side by side.
  auto fit = by_size_.lower_bound({units, 0});
  if (fit != by_size_.end()) {
    out->push_back(TakeFront(by_offset_.find(fit->second), units));
    return true;
  }
  // Several: the longest runs, so the value is cut as few times as possible.
  // Collected first, since taking a run re-keys by_size_.
  std::vector<uint64_t> offsets;
  uint64_t sum = 0;
  for (auto it = by_size_.rbegin(); sum < units; ++it) {
    offsets.push_back(it->second);
    sum += it->first;
  }
  // In pool order, so the value's iovecs walk the pool forwards.
  std::sort(offsets.begin(), offsets.end());
  uint64_t left = units;
  for (uint64_t offset : offsets) {
    auto it = by_offset_.find(offset);
    out->push_back(TakeFront(it, std::min(left, it->second)));
    left -= out->back().length;
  }
  assert(left == 0);
  return true;
}

void PoolAllocator::Free(std::span<const PoolRun> runs) {
  for (PoolRun run : runs) {
    if (run.length == 0 || run.offset + run.length > unit_count_) {
      assert(false && "PoolAllocator::Free: run outside the pool");
      continue;
    }
    auto next = by_offset_.lower_bound(run.offset);
    if (next != by_offset_.end() && next->first < run.offset + run.length) {
      assert(false && "PoolAllocator::Free: run overlaps a free run");
      continue;
    }
    auto prev = by_offset_.end();
    if (next != by_offset_.begin()) {
      prev = std::prev(next);
      if (prev->first + prev->second > run.offset) {
        assert(false && "PoolAllocator::Free: run overlaps a free run");
        continue;
      }
    }
    // Joined to a free neighbour, the run takes over its nodes.
    const bool joins_prev = prev != by_offset_.end() && prev->first + prev->second == run.offset;
    const bool joins_next = next != by_offset_.end() && next->first == run.offset + run.length;
    if (joins_prev && joins_next) {
      const uint64_t length = prev->second + run.length + next->second;
      Erase(next);
      Reshape(prev, prev->first, length);
    } else if (joins_prev) {
      Reshape(prev, prev->first, prev->second + run.length);
    } else if (joins_next) {
      Reshape(next, run.offset, run.length + next->second);
    } else {
      Insert(run.offset, run.length);
    }
  }
}

}  // namespace memkv::storage
