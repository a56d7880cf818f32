#include "drive/extent_allocator.h"

#include <algorithm>

namespace memkv::drive {

ExtentAllocator::ExtentAllocator(uint64_t unit_count) : unit_count_(unit_count) {}

bool ExtentAllocator::Overlaps(const std::map<uint64_t, uint64_t>& runs, uint64_t first, uint64_t units) {
  // The runs are disjoint: only the last one starting before the end can reach into the range.
  auto it = runs.lower_bound(first + units);
  if (it == runs.begin()) return false;
  --it;
  return it->first + it->second > first;
}

bool ExtentAllocator::IsUsed(uint64_t first, uint64_t units) const {
  if (!InRange(first, units)) return false;
  // Used unless one free run covers the whole range.
  auto it = by_first_.upper_bound(first);
  if (it == by_first_.begin()) return true;
  --it;
  return !(it->first <= first && it->first + it->second >= first + units);
}

bool ExtentAllocator::MarkUsed(uint64_t first, uint64_t units) {
  if (sealed_ || !InRange(first, units) || Overlaps(claimed_, first, units)) return false;
  claimed_.emplace(first, units);
  used_units_ += units;
  return true;
}

bool ExtentAllocator::Unmark(uint64_t first, uint64_t units) {
  auto it = claimed_.find(first);
  if (sealed_ || it == claimed_.end() || it->second != units) return false;
  claimed_.erase(it);
  used_units_ -= units;
  return true;
}

void ExtentAllocator::Seal() {
  uint64_t next = 0;  // first unit not yet accounted for
  for (const auto& [first, units] : claimed_) {
    if (first > next) AddFree(next, first - next);
    next = first + units;
  }
  if (next < unit_count_) AddFree(next, unit_count_ - next);
  claimed_.clear();
  sealed_ = true;
}

void ExtentAllocator::AddFree(uint64_t first, uint64_t units) {
  by_first_.emplace(first, units);
  by_length_.emplace(units, first);
}

void ExtentAllocator::RemoveFree(std::map<uint64_t, uint64_t>::iterator it) {
  by_length_.erase({it->second, it->first});
  by_first_.erase(it);
}

std::optional<uint64_t> ExtentAllocator::Allocate(uint64_t units) {
  if (!sealed_ || units == 0) return std::nullopt;
  auto fit = by_length_.lower_bound({units, 0});
  if (fit == by_length_.end()) return std::nullopt;
  const auto [length, first] = *fit;
  RemoveFree(by_first_.find(first));
  if (length > units) AddFree(first + units, length - units);
  used_units_ += units;
  return first;
}

std::optional<UnitRun> ExtentAllocator::AllocateLongest(uint64_t units) {
  if (!sealed_ || units == 0 || by_length_.empty()) return std::nullopt;
  const uint64_t take = std::min(units, by_length_.rbegin()->first);
  std::optional<uint64_t> first = Allocate(take);
  if (!first) return std::nullopt;
  return UnitRun{.first = *first, .units = take};
}

bool ExtentAllocator::Free(uint64_t first, uint64_t units) {
  if (!sealed_ || !InRange(first, units) || Overlaps(by_first_, first, units)) return false;
  used_units_ -= units;
  uint64_t start = first;
  uint64_t end = first + units;
  auto next = by_first_.lower_bound(end);
  if (next != by_first_.end() && next->first == end) {
    end += next->second;
    RemoveFree(next);
  }
  auto prev = by_first_.lower_bound(start);
  if (prev != by_first_.begin()) {
    --prev;
    if (prev->first + prev->second == start) {
      start = prev->first;
      RemoveFree(prev);
    }
  }
  AddFree(start, end - start);
  return true;
}

}  // namespace memkv::drive
