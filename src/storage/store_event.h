// StoreEvent: what a store tells its observer each time a value is published
// or goes away, so that the server can publish BlockStored/BlockRemoved
// events and keep per-namespace metrics without a second index.
//
// The stores (MemoryStore, and the drives through the tier) call the observer
// after the change, outside their locks, on whichever thread made the change.
// Events of different threads may therefore reach the observer in another
// order than the changes happened; `seq` (one counter per store, taken under
// its lock) gives the true order. The observer must be cheap, must not block
// and must not call back into the store.
#ifndef MEMKV_STORAGE_STORE_EVENT_H_
#define MEMKV_STORAGE_STORE_EVENT_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "memkv/put_options.h"

namespace memkv::storage {

enum class StoreEventKind : uint8_t { kStored, kRemoved };

// Why a value went (kNone for kStored).
enum class RemovalReason : uint8_t {
  kNone,
  kEvicted,   // to make room
  kDeleted,   // by a delete
  kExpired,   // its TTL ran out
  kReplaced,  // by a put of the same key
  kChecksum,  // its bytes failed their checksum
};

// "", "evicted", "deleted", "expired", "replaced", "checksum".
constexpr std::string_view RemovalReasonName(RemovalReason reason) {
  switch (reason) {
    case RemovalReason::kEvicted: return "evicted";
    case RemovalReason::kDeleted: return "deleted";
    case RemovalReason::kExpired: return "expired";
    case RemovalReason::kReplaced: return "replaced";
    case RemovalReason::kChecksum: return "checksum";
    case RemovalReason::kNone: break;
  }
  return "";
}

// Where the value was stored or removed.
enum class StoreMedium : uint8_t { kDram, kDrive };

// "dram", "drive".
constexpr std::string_view StoreMediumName(StoreMedium medium) {
  return medium == StoreMedium::kDrive ? "drive" : "dram";
}

struct StoreEvent {
  StoreEventKind kind = StoreEventKind::kStored;
  StoreMedium medium = StoreMedium::kDram;
  RemovalReason reason = RemovalReason::kNone;
  std::string key;
  uint64_t value_size = 0;
  // As the put gave them (PutOptions).
  std::string block_hash;
  std::string parent_hash;
  HashKind hash_kind = HashKind::kBytes;
  Retention retention = Retention::kNormal;
  uint64_t seq = 0;  // the change's place in its store's order
};

using StoreObserver = std::function<void(const StoreEvent&)>;

// The events an observer takes: stores, and removals by reason. The stores
// build and deliver no other, so an observer that wants few costs a put
// nothing for the rest (no key copied, no call made).
class StoreEventSet {
 public:
  static constexpr StoreEventSet All() { return StoreEventSet(~uint32_t{0}); }
  static constexpr StoreEventSet None() { return StoreEventSet(0); }
  constexpr StoreEventSet WithStored() const { return StoreEventSet(bits_ | 1u); }
  constexpr StoreEventSet WithRemoved(RemovalReason reason) const {
    return StoreEventSet(bits_ | RemovedBit(reason));
  }
  constexpr bool Wants(StoreEventKind kind, RemovalReason reason) const {
    return (bits_ & (kind == StoreEventKind::kStored ? 1u : RemovedBit(reason))) != 0;
  }
  constexpr bool operator==(const StoreEventSet&) const = default;

 private:
  constexpr explicit StoreEventSet(uint32_t bits) : bits_(bits) {}
  static constexpr uint32_t RemovedBit(RemovalReason reason) { return 2u << static_cast<uint32_t>(reason); }
  uint32_t bits_;
};

}  // namespace memkv::storage

#endif  // MEMKV_STORAGE_STORE_EVENT_H_
