// PolicyEntry: what the storage policies (src/storage/policy/) keep in every
// stored value, and EntryList, the intrusive list their LRU orders are made of.
//
// Both tiers' entries derive from PolicyEntry (storage::StoreEntry in the
// DRAM pool, drive::Entry on the drives), so the policies order, count and
// choose values without a map of their own: linking, touching and unlinking
// a value moves pointers inside it and never allocates (the expiry index
// and the evict queues are std::sets whose nodes are re-keyed in place on a
// touch; a node is allocated only when a value is linked).
//
// Ownership: the tier owns its entries; a linked entry must stay alive until
// the tier has called Policies::OnUnlink for it. Threads: every field is
// guarded by the owning tier's lock, except the ones the tier sets before
// OnLink and never changes while linked (marked below), which pin holders
// may read unlocked.
#ifndef MEMKV_STORAGE_POLICY_POLICY_ENTRY_H_
#define MEMKV_STORAGE_POLICY_POLICY_ENTRY_H_

#include <cstdint>
#include <set>
#include <string_view>
#include <utility>

#include "base/tenant_map.h"
#include "memkv/put_options.h"

namespace memkv::storage::policy {

struct PolicyEntry;

// Entries ordered by a sequence (last use) or an instant (expiry); the
// pointer breaks ties and makes each pair unique.
using UseQueue = std::set<std::pair<uint64_t, PolicyEntry*>>;
using ExpiryQueue = std::set<std::pair<int64_t, PolicyEntry*>>;

// One pair of intrusive links; `owner` is null in a list's head.
struct ListLinks {
  ListLinks* prev = this;
  ListLinks* next = this;
  PolicyEntry* owner = nullptr;
};

// Which evict queue of the prefix-aware order an entry waits in.
enum class EvictQueue : uint8_t {
  kNone,   // not queued: pinned, a normal value with stored children, or no prefix-aware order
  kFirst,  // evict_first values
  kLeaf,   // normal values with no stored child
};

struct PolicyEntry {
  PolicyEntry() = default;
  // Not copyable: the links point into the entry itself and its neighbours.
  PolicyEntry(const PolicyEntry&) = delete;
  PolicyEntry& operator=(const PolicyEntry&) = delete;

  // --- Set by the tier before OnLink; unchanged while linked.
  std::string_view stored_key;  // views the tier's own copy of the key
  std::string_view parent_key;  // PutOptions::parent_key (empty: none; never the key itself)
  uint64_t value_bytes = 0;     // what tenant quotas count
  uint64_t cost = 0;            // what evicting it frees, in the tier's unit (0: nothing)
  Retention retention = Retention::kNormal;
  uint64_t ttl_ms = 0;          // as applied (a pin's defaulted and clamped)

  // --- Kept by the tier under its lock.
  uint32_t pins = 0;            // readers holding the value now (not retention pins)

  // --- Kept by the policies under the tier's lock (the tier sets
  // expires_at_ms before OnLink; the kit moves a pin's on with each hit).
  int64_t expires_at_ms = 0;    // ms since the epoch; 0: never
  uint64_t last_use = 0;        // the eviction order's use sequence at the last put or hit
  ListLinks lru;                // in EvictionOrder's LRU list
  ListLinks tenant_lru;         // in its tenant's LRU list (tenant != kNone)
  uint32_t tenant = TenantMap::kNone;
  EvictQueue queue = EvictQueue::kNone;
  UseQueue::iterator queue_pos;       // valid unless queue == kNone
  ExpiryQueue::iterator expiry_pos;   // valid while linked with expires_at_ms != 0

  bool retention_pinned() const { return retention == Retention::kPinned; }
  bool expired(int64_t now_ms) const { return expires_at_ms != 0 && now_ms >= expires_at_ms; }
};

// An intrusive doubly linked list over one ListLinks member of PolicyEntry;
// front: most recently used. Not copyable (the head links to itself).
class EntryList {
 public:
  explicit EntryList(ListLinks PolicyEntry::*member) : member_(member) {}
  EntryList(const EntryList&) = delete;
  EntryList& operator=(const EntryList&) = delete;

  bool empty() const { return head_.next == &head_; }
  void PushFront(PolicyEntry& e) {
    ListLinks& l = e.*member_;
    l.owner = &e;
    l.prev = &head_;
    l.next = head_.next;
    head_.next->prev = &l;
    head_.next = &l;
  }
  void Remove(PolicyEntry& e) {
    ListLinks& l = e.*member_;
    l.prev->next = l.next;
    l.next->prev = l.prev;
    l.prev = &l;
    l.next = &l;
  }
  void MoveToFront(PolicyEntry& e) {
    Remove(e);
    PushFront(e);
  }
  // Calls f(entry) coldest first while it returns true; f may remove the
  // entry it is given (nothing else). False when f stopped it.
  template <class F>
  bool ForEachColdestFirst(F&& f) const {
    for (ListLinks* l = head_.prev; l != &head_;) {
      ListLinks* next = l->prev;  // before f may unlink it
      if (!f(*l->owner)) return false;
      l = next;
    }
    return true;
  }

 private:
  ListLinks PolicyEntry::*member_;
  ListLinks head_;
};

}  // namespace memkv::storage::policy

#endif  // MEMKV_STORAGE_POLICY_POLICY_ENTRY_H_
