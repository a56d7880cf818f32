// EvictionOrder: which value goes when a tier needs room.
//
// Every tier keeps its linked values in one LRU list (intrusive: touching
// never allocates). Two ways of choosing from it:
//   - EvictInOrder, the prefix-aware order of the DRAM pool: evict_first
//     values least recently used first, then the "leaves" least recently
//     used first (a value whose descendants, values naming it as
//     parent_key, are stored goes only after them, so a prefix chain loses
//     its tail before its head), then as a last resort (parent cycles,
//     every leaf held by readers) any value not retention-pinned, LRU
//     first. Expired values go before all of these: the tier sweeps them
//     first (ttl/expiry_index.h). The next victim is a queue's front
//     (UseQueue, policy_entry.h): queuing a value just put or hit moves
//     pointers only.
//   - ScanByPass, passes over a list coldest first, each taking the values
//     of some classes (VictimClass): the drives' order (expired,
//     evict_first, normal, then values the caller asked to spare) and the
//     per-tenant quota choice (quota/tenant_quotas.h).
// Values held by readers (PolicyEntry::pins) are never chosen: evicting one
// frees nothing now. Nor are values that free nothing (cost 0).
//
// Owned by Policies; every call under the owning tier's lock.
#ifndef MEMKV_STORAGE_POLICY_EVICTION_EVICTION_ORDER_H_
#define MEMKV_STORAGE_POLICY_EVICTION_EVICTION_ORDER_H_

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>

#include "storage/policy/policy.h"

namespace memkv::storage::policy {

// Keys a caller asks eviction to take only after every other candidate.
using SpareFn = std::function<bool(std::string_view key)>;

// What eviction may do with a value right now.
enum class VictimClass : uint8_t {
  kExpired,     // its TTL ran out (a pin's too)
  kEvictFirst,  // retention evict_first
  kNormal,      // retention normal
  kSpared,      // evict_first or normal, but the caller's SpareFn keeps it
  kKept,        // never: held by readers, or pinned with its TTL running
};

// A pass takes the classes in its mask.
using PassMask = uint8_t;
constexpr PassMask Pass(std::initializer_list<VictimClass> classes) {
  PassMask mask = 0;
  for (VictimClass c : classes) mask |= PassMask(1u << static_cast<uint8_t>(c));
  return mask;
}
constexpr bool InPass(PassMask mask, VictimClass c) { return (mask >> static_cast<uint8_t>(c)) & 1u; }

// The drives' passes: expired, evict_first, normal, then the spared.
inline constexpr PassMask kColdestPasses[] = {Pass({VictimClass::kExpired}), Pass({VictimClass::kEvictFirst}),
                                              Pass({VictimClass::kNormal}), Pass({VictimClass::kSpared})};

// `spare` may be null or empty (nothing spared).
VictimClass Classify(const PolicyEntry& e, int64_t now_ms, const SpareFn* spare);

// For each pass in order, walks `list` coldest first and calls
// take(entry, class) for each entry whose class the pass takes, until take
// returns false. Nothing is unlinked here: take collects.
template <class Take>
void ScanByPass(const EntryList& list, std::span<const PassMask> passes, int64_t now_ms, const SpareFn* spare,
                Take&& take) {
  for (PassMask pass : passes) {
    const bool more = list.ForEachColdestFirst([&](PolicyEntry& e) {
      const VictimClass c = Classify(e, now_ms, spare);
      return !InPass(pass, c) || take(e, c);
    });
    if (!more) return;
  }
}

class EvictionOrder final : public Policy {
 public:
  // Finds the linked entry of a key (the tier's index), for the parent of a
  // value linked or unlinked; only with `prefix_aware`.
  using FindLinked = std::function<PolicyEntry*(std::string_view key)>;

  // `prefix_aware`: keep the evict_first and leaves queues (EvictInOrder);
  // without it only the LRU list is kept.
  explicit EvictionOrder(bool prefix_aware, FindLinked find = nullptr);

  void OnLink(PolicyEntry& e) override;
  void OnUnlink(PolicyEntry& e, Removal why) override;
  void OnTouch(PolicyEntry& e, int64_t now_ms) override;
  void OnReaders(PolicyEntry& e, bool held) override;

  // The prefix-aware order (above): calls take(entry) on the next victim
  // until it returns true (enough room: true) or none is left (false).
  // take must unlink the entry it is given (OnUnlink), and nothing else.
  template <class Take>
  bool EvictInOrder(Take&& take) {
    for (UseQueue* queue : {&evict_first_, &leaves_}) {
      for (UseQueue::Cursor c = queue->Begin(); PolicyEntry* e = queue->At(c);) {
        if (e->pins > 0 || e->cost == 0) {
          queue->Advance(c);
          continue;
        }
        if (take(*e)) return true;
        // Evicting a leaf may have made its parent one, older than what follows.
        c = queue->Begin();
      }
    }
    return !lru_.ForEachColdestFirst([&](PolicyEntry& e) {
      if (e.pins > 0 || e.cost == 0 || e.retention_pinned()) return true;
      return !take(e);
    });
  }

  const EntryList& lru() const { return lru_; }
  uint64_t linked_cost() const { return linked_cost_; }
  // Of linked_cost, what readers hold now.
  uint64_t reader_held_cost() const { return reader_held_cost_; }
  // Whether stored values name `key` as their parent (prefix-aware only).
  // (No values with a parent_key: nothing to hash.)
  bool HasChildren(std::string_view key) const { return !children_.empty() && children_.contains(key); }

 private:
  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  void Enqueue(PolicyEntry& e);
  void Dequeue(PolicyEntry& e);
  void ChildLinked(std::string_view parent_key);
  void ChildUnlinked(std::string_view parent_key);

  const bool prefix_aware_;
  const FindLinked find_;
  EntryList lru_{&PolicyEntry::lru};
  uint64_t use_seq_ = 0;
  uint64_t linked_cost_ = 0;
  uint64_t reader_held_cost_ = 0;
  UseQueue evict_first_;  // linked evict_first entries by last use
  UseQueue leaves_;       // linked normal entries without stored children, by last use
  // Parent key -> how many linked entries name it (the parent itself may be
  // absent: a child can arrive first).
  std::unordered_map<std::string, uint32_t, StringHash, std::equal_to<>> children_;
};

}  // namespace memkv::storage::policy

#endif  // MEMKV_STORAGE_POLICY_EVICTION_EVICTION_ORDER_H_
