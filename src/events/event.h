// What a MemKV server tells cache-aware routers about the blocks it holds:
// a block stored, blocks removed, or everything cleared (docs/events.md).
// Plain values, built by any thread and handed to a Publisher.
#ifndef MEMKV_EVENTS_EVENT_H_
#define MEMKV_EVENTS_EVENT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "memkv/put_options.h"

namespace memkv::events {

// The mediums a block is reported on (docs/events.md, "Mediums").
inline constexpr std::string_view kMediumDram = "MEMKV_DRAM";
inline constexpr std::string_view kMediumDrive = "MEMKV_DRIVE";

// A block hash as it goes on the wire: opaque bytes (msgpack bin), a signed
// 64-bit integer (an engine's int hash) or an unsigned one (the XXH3-64 of a
// key put without a hash).
struct BlockHash {
  enum class Kind : uint8_t { kBytes, kInt64, kUint64 };
  Kind kind = Kind::kBytes;
  std::string bytes;     // kBytes
  uint64_t value = 0;    // kInt64 (two's complement) and kUint64

  static BlockHash Bytes(std::string_view b) { return {Kind::kBytes, std::string(b), 0}; }
  static BlockHash Int64(int64_t v) { return {Kind::kInt64, {}, static_cast<uint64_t>(v)}; }
  static BlockHash Uint64(uint64_t v) { return {Kind::kUint64, {}, v}; }
  // A hash as a put carries it (memkv/put_options.h): kInt64 is 8 bytes
  // little-endian; any other length of kInt64 is published as bytes.
  static BlockHash FromPut(std::string_view stored, HashKind kind);
  // The hash published for a value put without one: XXH3-64 of its key.
  static BlockHash OfKey(std::string_view key);
  // A value's hash: its put's block hash (FromPut), or OfKey(key) when the
  // put carried none.
  static BlockHash ForValue(std::string_view key, std::string_view block_hash, HashKind kind);

  bool operator==(const BlockHash&) const = default;
};

struct Event {
  enum class Kind : uint8_t { kStored, kRemoved, kAllCleared };
  Kind kind = Kind::kAllCleared;
  std::vector<BlockHash> block_hashes;      // kStored, kRemoved
  std::optional<BlockHash> parent_hash;     // kStored; none: a chain head
  std::string medium;                       // kStored, kRemoved
  uint64_t block_size = 0;                  // kStored: the value's size in bytes

  static Event Stored(BlockHash hash, std::optional<BlockHash> parent, uint64_t size_bytes,
                      std::string_view medium);
  static Event Removed(BlockHash hash, std::string_view medium);
  static Event AllCleared();
};

// The events of one value, from what its put carried (memkv/put_options.h):
// `block_hash` empty publishes the key's XXH3-64, `parent_hash` empty no
// parent. `medium` is kMediumDram or kMediumDrive.
Event ValueStored(std::string_view key, uint64_t size_bytes, std::string_view block_hash,
                  std::string_view parent_hash, HashKind kind, std::string_view medium);
Event ValueRemoved(std::string_view key, std::string_view block_hash, HashKind kind, std::string_view medium);

}  // namespace memkv::events

#endif  // MEMKV_EVENTS_EVENT_H_
