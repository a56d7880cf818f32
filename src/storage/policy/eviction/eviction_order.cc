#include "storage/policy/eviction/eviction_order.h"

#include <cassert>
#include <utility>

namespace memkv::storage::policy {

VictimClass Classify(const PolicyEntry& e, int64_t now_ms, const SpareFn* spare) {
  const bool expired = e.expired(now_ms);
  if (e.pins > 0 || (!expired && e.retention_pinned())) return VictimClass::kKept;
  if (expired) return VictimClass::kExpired;
  if (spare != nullptr && *spare && (*spare)(e.stored_key)) return VictimClass::kSpared;
  return e.retention == Retention::kEvictFirst ? VictimClass::kEvictFirst : VictimClass::kNormal;
}

EvictionOrder::EvictionOrder(bool prefix_aware, FindLinked find)
    : prefix_aware_(prefix_aware), find_(std::move(find)) {}

void EvictionOrder::OnLink(PolicyEntry& e) {
  lru_.PushFront(e);
  e.last_use = ++use_seq_;
  linked_cost_ += e.cost;
  if (!prefix_aware_) return;
  if (!e.parent_key.empty()) ChildLinked(e.parent_key);
  Enqueue(e);
}

void EvictionOrder::OnUnlink(PolicyEntry& e, Removal) {
  lru_.Remove(e);
  linked_cost_ -= e.cost;
  if (e.pins > 0) reader_held_cost_ -= e.cost;
  if (!prefix_aware_) return;
  Dequeue(e);
  if (!e.parent_key.empty()) ChildUnlinked(e.parent_key);
}

void EvictionOrder::OnTouch(PolicyEntry& e, int64_t) {
  lru_.MoveToFront(e);
  e.last_use = ++use_seq_;
  if (e.queue != EvictQueue::kNone) {
    // Queued again with the newest use: behind every other entry.
    UseQueue& queue = e.queue == EvictQueue::kFirst ? evict_first_ : leaves_;
    queue.Remove(e);
    queue.Push(e);
  }
}

void EvictionOrder::OnReaders(PolicyEntry& e, bool held) {
  if (held) {
    reader_held_cost_ += e.cost;
  } else {
    reader_held_cost_ -= e.cost;
  }
}

void EvictionOrder::Enqueue(PolicyEntry& e) {
  assert(e.queue == EvictQueue::kNone);
  if (e.retention == Retention::kEvictFirst) {
    e.queue = EvictQueue::kFirst;
    evict_first_.Push(e);
  } else if (e.retention == Retention::kNormal && !HasChildren(e.stored_key)) {
    e.queue = EvictQueue::kLeaf;
    leaves_.Push(e);
  }
}

void EvictionOrder::Dequeue(PolicyEntry& e) {
  if (e.queue != EvictQueue::kNone) (e.queue == EvictQueue::kFirst ? evict_first_ : leaves_).Remove(e);
  e.queue = EvictQueue::kNone;
}

void EvictionOrder::ChildLinked(std::string_view parent_key) {
  auto counted = children_.find(parent_key);
  if (counted != children_.end()) {
    ++counted->second;
    return;
  }
  children_.emplace(std::string(parent_key), 1);
  // The parent's first stored child: it stops being a leaf.
  PolicyEntry* parent = find_ ? find_(parent_key) : nullptr;
  if (parent != nullptr && parent->queue == EvictQueue::kLeaf) Dequeue(*parent);
}

void EvictionOrder::ChildUnlinked(std::string_view parent_key) {
  auto counted = children_.find(parent_key);
  assert(counted != children_.end());
  if (--counted->second > 0) return;
  children_.erase(counted);
  // Its last child went: a leaf again, placed by its own last use.
  PolicyEntry* parent = find_ ? find_(parent_key) : nullptr;
  if (parent != nullptr && parent->queue == EvictQueue::kNone) Enqueue(*parent);
}

}  // namespace memkv::storage::policy
