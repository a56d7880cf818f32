// MemoryStore: the index. Linking and unlinking values (the policies hear
// of each), reader pins, lazy expiry and the sweep, and making room in the
// pool in the kit's eviction order. See memory_store_impl.h.
#include <cassert>
#include <utility>

#include "storage/memory_store_impl.h"

namespace memkv::storage {
namespace {

// What the policies count of a removal.
policy::Removal RemovalFor(RemovalReason reason) {
  switch (reason) {
    case RemovalReason::kEvicted: return policy::Removal::kEvicted;
    case RemovalReason::kExpired: return policy::Removal::kExpired;
    default: return policy::Removal::kOther;
  }
}

}  // namespace

void MemoryStore::Impl::QueueEventLocked(const StoreEntry& e, StoreEventKind kind, RemovalReason reason) {
  if (!observer || !observed.Wants(kind, reason)) return;
  events.push_back(StoreEvent{.kind = kind,
                              .medium = StoreMedium::kDram,
                              .reason = reason,
                              .key = e.key,
                              .value_size = e.size(),
                              .block_hash = e.block_hash,
                              .parent_hash = e.parent_hash,
                              .hash_kind = e.hash_kind,
                              .retention = e.retention,
                              .seq = ++event_seq});
}

void MemoryStore::Impl::LinkLocked(const IndexKey& key, const std::shared_ptr<StoreEntry>& e) {
  index.emplace(key, e);
  AttachLocked(*e);
}

void MemoryStore::Impl::UnlinkLocked(Index::iterator it, RemovalReason reason) {
  std::shared_ptr<StoreEntry> e = std::move(it->second);
  index.erase(it);
  DetachLocked(std::move(e), reason);
}

void MemoryStore::Impl::ReplaceLocked(Index::iterator it, std::shared_ptr<StoreEntry> e, RemovalReason reason) {
  it->first.view = e->key;
  std::shared_ptr<StoreEntry> old = std::exchange(it->second, e);
  DetachLocked(std::move(old), reason);
  AttachLocked(*e);
}

void MemoryStore::Impl::AttachLocked(StoreEntry& e) {
  e.state = EntryState::kLinked;
  policies.OnLink(e);
  value_bytes.fetch_add(e.size(), std::memory_order_relaxed);
  keys.fetch_add(1, std::memory_order_relaxed);
  QueueEventLocked(e, StoreEventKind::kStored, RemovalReason::kNone);
}

void MemoryStore::Impl::DetachLocked(std::shared_ptr<StoreEntry> e, RemovalReason reason) {
  policies.OnUnlink(*e, RemovalFor(reason));
  e->state = EntryState::kUnlinked;
  value_bytes.fetch_sub(e->size(), std::memory_order_relaxed);
  keys.fetch_sub(1, std::memory_order_relaxed);
  if (reason == RemovalReason::kEvicted) evictions.fetch_add(1, std::memory_order_relaxed);
  if (reason == RemovalReason::kExpired) expired.fetch_add(1, std::memory_order_relaxed);
  QueueEventLocked(*e, StoreEventKind::kRemoved, reason);
  if (e->pins > 0) {
    draining_units += e->units();
  } else {
    FreeRunsLocked(e.get());
  }
  dropped.push_back(std::move(e));
}

MemoryStore::Impl::Index::iterator MemoryStore::Impl::FindLiveLocked(std::string_view key) {
  auto it = index.find(key);
  if (it == index.end() || !ExpiredLocked(*it->second)) return it;
  UnlinkLocked(it, RemovalReason::kExpired);
  return index.end();
}

void MemoryStore::Impl::PinLocked(StoreEntry* e) { policies.PinReader(*e, e->state == EntryState::kLinked); }

void MemoryStore::Impl::UnpinLocked(StoreEntry* e) {
  assert(e->pins > 0);
  const bool linked = e->state == EntryState::kLinked;
  if (!policies.UnpinReader(*e, linked) || linked) return;
  draining_units -= e->units();
  FreeRunsLocked(e);
}

void MemoryStore::Impl::FreeRunsLocked(StoreEntry* e) {
  assert(e->state == EntryState::kUnlinked && e->pins == 0);
  e->state = EntryState::kFreed;
  FreeLocked(e->runs);
}

size_t MemoryStore::Impl::SweepExpiredLocked(size_t max_entries, uint64_t units) {
  if (policies.ttl().empty()) return 0;
  const int64_t now = realtime->NowMillis();
  size_t swept = 0;
  while (swept < max_entries) {
    policy::PolicyEntry* due = policies.ttl().NextDue(now);
    if (due == nullptr) break;
    UnlinkLocked(index.find(due->stored_key), RemovalReason::kExpired);
    ++swept;
    if (units != 0 && FitsLocked(units)) break;
  }
  return swept;
}

bool MemoryStore::Impl::MakeRoomLocked(uint64_t units) {
  if (allocator.CanAllocate(units, kMaxPiecesPerValue)) return true;
  // Expired values first: their room is free for the taking anyway.
  SweepExpiredLocked(SIZE_MAX, units);
  if (FitsLocked(units)) return true;
  // Refuse before evicting anything: emptying the cache for a put that fails
  // anyway would only turn future hits into misses.
  if (allocator.free_units() + EvictableUnitsLocked() < units) return false;
  const bool fits = policies.eviction().EvictInOrder([&](policy::PolicyEntry& victim) {
    mu.AssertHeld();  // called from inside EvictInOrder, under mu
    UnlinkLocked(index.find(victim.stored_key), RemovalReason::kEvicted);
    // Only whole-unit counts matter until enough are free; then whether they
    // come in few enough pieces.
    return FitsLocked(units);
  });
  if (fits) return true;
  // Everything unpinned is gone and the pinned values still cut the free
  // room into more than kMaxPiecesPerValue pieces.
  return allocator.CanAllocate(units, kMaxPiecesPerValue);
}

}  // namespace memkv::storage
