#include "bench/payload.h"

#include <algorithm>
#include <cstring>

namespace memkv::bench {
namespace {

constexpr uint64_t kEdgeBytes = 8;

void FillPattern(std::vector<uint8_t>* out, uint64_t seed) {
  uint64_t x = seed * 0x9E3779B97F4A7C15ULL + 1;
  size_t i = 0;
  for (; i + sizeof(x) <= out->size(); i += sizeof(x)) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    std::memcpy(out->data() + i, &x, sizeof(x));
  }
  for (; i < out->size(); ++i) (*out)[i] = static_cast<uint8_t>(i);
}

}  // namespace

Payloads::Payloads(uint64_t size_bytes, uint64_t keys, uint32_t threads)
    : size_bytes_(size_bytes), keys_(keys), pattern_(size_bytes + keys * kStrideBytes) {
  FillPattern(&pattern_, size_bytes);
  buffers_.reserve(threads);
  for (uint32_t t = 0; t < threads; ++t) {
    buffers_.push_back(std::make_unique_for_overwrite<uint8_t[]>(size_bytes));
    std::memset(buffers_.back().get(), 0x5a, size_bytes);  // touch every page now
  }
}

std::span<const uint8_t> Payloads::Value(uint64_t key) const {
  return {pattern_.data() + key * kStrideBytes, size_bytes_};
}

std::span<uint8_t> Payloads::Buffer(uint32_t thread) const { return {buffers_[thread].get(), size_bytes_}; }

bool Payloads::QuickCheck(uint64_t key, std::span<const uint8_t> got) const {
  if (got.size() != size_bytes_) return false;
  std::span<const uint8_t> want = Value(key);
  const uint64_t edge = std::min(kEdgeBytes, size_bytes_);
  return std::memcmp(got.data(), want.data(), edge) == 0 &&
         std::memcmp(got.data() + size_bytes_ - edge, want.data() + size_bytes_ - edge, edge) == 0;
}

bool Payloads::FullCheck(uint64_t key, std::span<const uint8_t> got) const {
  return got.size() == size_bytes_ && std::memcmp(got.data(), Value(key).data(), size_bytes_) == 0;
}

}  // namespace memkv::bench
