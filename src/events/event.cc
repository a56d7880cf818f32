#include "events/event.h"

#include "base/checksum.h"

namespace memkv::events {

BlockHash BlockHash::FromPut(std::string_view stored, HashKind kind) {
  if (kind != HashKind::kInt64 || stored.size() != 8) return Bytes(stored);
  uint64_t v = 0;
  for (size_t i = 0; i < 8; ++i) v |= uint64_t(uint8_t(stored[i])) << (8 * i);
  return Int64(static_cast<int64_t>(v));
}

BlockHash BlockHash::OfKey(std::string_view key) { return Uint64(Checksum(key.data(), key.size())); }

BlockHash BlockHash::ForValue(std::string_view key, std::string_view block_hash, HashKind kind) {
  return block_hash.empty() ? OfKey(key) : FromPut(block_hash, kind);
}

Event Event::Stored(BlockHash hash, std::optional<BlockHash> parent, uint64_t size_bytes,
                    std::string_view medium) {
  Event e;
  e.kind = Kind::kStored;
  e.block_hashes.push_back(std::move(hash));
  e.parent_hash = std::move(parent);
  e.block_size = size_bytes;
  e.medium = medium;
  return e;
}

Event Event::Removed(BlockHash hash, std::string_view medium) {
  Event e;
  e.kind = Kind::kRemoved;
  e.block_hashes.push_back(std::move(hash));
  e.medium = medium;
  return e;
}

Event Event::AllCleared() { return Event{}; }

Event ValueStored(std::string_view key, uint64_t size_bytes, std::string_view block_hash,
                  std::string_view parent_hash, HashKind kind, std::string_view medium) {
  std::optional<BlockHash> parent;
  if (!parent_hash.empty()) parent = BlockHash::FromPut(parent_hash, kind);
  return Event::Stored(BlockHash::ForValue(key, block_hash, kind), std::move(parent), size_bytes, medium);
}

Event ValueRemoved(std::string_view key, std::string_view block_hash, HashKind kind, std::string_view medium) {
  return Event::Removed(BlockHash::ForValue(key, block_hash, kind), medium);
}

}  // namespace memkv::events
