#include "drive/extent_allocator.h"

namespace memkv {

ExtentAllocator::ExtentAllocator(uint64_t slot_count)
    : slot_count_(slot_count), used_bits_((slot_count + 63) / 64, 0) {}

bool ExtentAllocator::IsUsed(uint64_t slot) const {
  return slot < slot_count_ && (used_bits_[slot / 64] >> (slot % 64) & 1) != 0;
}

bool ExtentAllocator::MarkUsed(uint64_t slot) {
  if (slot >= slot_count_ || IsUsed(slot)) return false;
  used_bits_[slot / 64] |= uint64_t{1} << (slot % 64);
  ++used_count_;
  return true;
}

void ExtentAllocator::Seal() {
  free_.clear();
  free_.reserve(slot_count_ - used_count_);
  for (uint64_t s = slot_count_; s-- > 0;) {
    if (!IsUsed(s)) free_.push_back(uint32_t(s));
  }
}

std::optional<uint64_t> ExtentAllocator::Allocate() {
  if (free_.empty()) return std::nullopt;
  uint64_t slot = free_.back();
  free_.pop_back();
  used_bits_[slot / 64] |= uint64_t{1} << (slot % 64);
  ++used_count_;
  return slot;
}

bool ExtentAllocator::Free(uint64_t slot) {
  if (!IsUsed(slot)) return false;
  used_bits_[slot / 64] &= ~(uint64_t{1} << (slot % 64));
  --used_count_;
  free_.push_back(uint32_t(slot));
  return true;
}

}  // namespace memkv
