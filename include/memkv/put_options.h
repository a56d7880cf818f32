// What a put may say about its value besides its bytes: a lifetime, a
// retention class, its place in a prefix chain and the engine's block hashes
// (docs/storage.md, "Value attributes"). The client sends these with the put; the server keeps
// them with the value, in DRAM and in the drive journal, so they survive a
// restart.
#ifndef MEMKV_PUT_OPTIONS_H_
#define MEMKV_PUT_OPTIONS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace memkv {

// How eagerly a value is given up when room is needed.
enum class Retention : uint8_t {
  kNormal = 0,      // least recently used first, tails of prefix chains before heads
  kPinned = 1,      // not evicted while its TTL runs; each hit re-arms the TTL.
                    // All pinned bytes together are capped (memory.pinned_max_fraction
                    // of the pool): a pin past the cap is refused (ResourceExhausted).
  kEvictFirst = 2,  // evicted before any normal value
};
inline constexpr uint8_t kMaxRetention = 2;
// "normal", "pinned", "evict_first".
constexpr std::string_view RetentionName(Retention retention) {
  switch (retention) {
    case Retention::kPinned: return "pinned";
    case Retention::kEvictFirst: return "evict_first";
    case Retention::kNormal: break;
  }
  return "normal";
}

// How the engine's block hashes are spelled: opaque bytes (vLLM's and
// SGLang's hashes) or a signed 64-bit integer (LMCache's chunk hashes), held
// as 8 bytes little-endian. Events carry them back the same way.
enum class HashKind : uint8_t { kBytes = 0, kInt64 = 1 };

// Longest block_hash / parent_hash, in bytes.
inline constexpr size_t kMaxBlockHashBytes = 64;

struct PutOptions {
  // Lifetime in milliseconds from the put (0: none). Past it the value is a
  // miss and its room is freed, in DRAM and on the drives. For a pinned value
  // each hit starts the TTL again; a pinned value with no TTL gets the
  // server's memory.pin_ttl, and no pin lasts longer than memory.pin_ttl_max.
  uint64_t ttl_ms = 0;
  Retention retention = Retention::kNormal;
  // The key of the previous block of this value's prefix chain (empty: a
  // chain head, or not part of a chain). Eviction keeps a value whose
  // descendants are stored until they are gone: tails go before heads.
  std::string parent_key;
  // The engine's hash of this block and of its parent (empty: none), at most
  // kMaxBlockHashBytes each; published in BlockStored/BlockRemoved events.
  std::string block_hash;
  std::string parent_hash;
  HashKind hash_kind = HashKind::kBytes;

  // True when nothing is set: a plain put.
  bool empty() const {
    return ttl_ms == 0 && retention == Retention::kNormal && parent_key.empty() && block_hash.empty() &&
           parent_hash.empty();
  }
};

}  // namespace memkv

#endif  // MEMKV_PUT_OPTIONS_H_
