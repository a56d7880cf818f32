// PolicyEntry: what the storage policies (src/storage/policy/) keep in every
// stored value, and EntryList, the intrusive list their LRU orders are made of.
//
// Both tiers' entries derive from PolicyEntry (storage::StoreEntry in the
// DRAM pool, drive::Entry on the drives), so the policies order, count and
// choose values without a map of their own: linking, touching and unlinking
// a value moves pointers inside it and never allocates (the expiry index
// is a std::set whose nodes are re-keyed in place on a touch, a node
// allocated only when a value is linked; the evict queues are intrusive
// lists, UseQueue, with a set only for values queued out of use order).
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
using LateQueue = std::set<std::pair<uint64_t, PolicyEntry*>>;
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
  ListLinks queue_links;              // in its evict queue's list (queue != kNone, !queued_late)
  bool queued_late = false;           // in its evict queue's late set instead, at late_pos
  LateQueue::iterator late_pos;
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
  // The entry pushed last; null when empty.
  PolicyEntry* Front() const { return head_.next->owner; }
  // For a walk coldest first: the coldest links, and the next warmer ones;
  // links whose owner is null end the walk.
  const ListLinks* Coldest() const { return head_.prev; }
  static const ListLinks* Warmer(const ListLinks* l) { return l->prev; }
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

// Entries by last use, oldest first, for the prefix-aware evict queues.
// Almost every entry joins with the newest use (a put, a hit), so it goes
// to the front of an intrusive list (EntryList) that stays in use order and
// never allocates. An entry that joins with an older use (a parent whose
// last child went, placed by its own last use) waits in a small ordered set
// beside the list; the oldest entry is the older of the list's coldest and
// the set's first.
class UseQueue {
 public:
  UseQueue() = default;
  UseQueue(const UseQueue&) = delete;
  UseQueue& operator=(const UseQueue&) = delete;

  void Push(PolicyEntry& e) {
    const PolicyEntry* newest = list_.Front();
    e.queued_late = newest != nullptr && e.last_use < newest->last_use;
    if (e.queued_late) {
      e.late_pos = late_.emplace(e.last_use, &e).first;
    } else {
      list_.PushFront(e);
    }
  }
  void Remove(PolicyEntry& e) {
    if (e.queued_late) {
      late_.erase(e.late_pos);
      e.queued_late = false;
    } else {
      list_.Remove(e);
    }
  }

  // A position in use order: the next entry of the list and of the set.
  struct Cursor {
    const ListLinks* in_list;
    LateQueue::const_iterator in_late;
  };
  Cursor Begin() const { return Cursor{list_.Coldest(), late_.begin()}; }
  // The entry at `c`, the older of the two; null past the end.
  PolicyEntry* At(const Cursor& c) const {
    PolicyEntry* listed = c.in_list->owner;
    PolicyEntry* late = c.in_late != late_.end() ? c.in_late->second : nullptr;
    if (listed == nullptr || late == nullptr) return listed != nullptr ? listed : late;
    return listed->last_use < late->last_use ? listed : late;
  }
  // Past At(c), which must not be null.
  void Advance(Cursor& c) const {
    if (At(c)->queued_late) {
      ++c.in_late;
    } else {
      c.in_list = EntryList::Warmer(c.in_list);
    }
  }

 private:
  EntryList list_{&PolicyEntry::queue_links};  // front: the newest use
  LateQueue late_;
};

}  // namespace memkv::storage::policy

#endif  // MEMKV_STORAGE_POLICY_POLICY_ENTRY_H_
