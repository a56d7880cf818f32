// Policy: what every storage policy of the kit (src/storage/policy/) hears
// from the tier that owns it, through Policies (policies.h): a value linked
// into the tier's index, unlinked from it, used by a read, and taken or
// released by its readers. A policy keeps its own order or tallies in the
// entries' hooks (policy_entry.h) and answers the tier's questions with
// methods of its own.
//
// Threads: a policy belongs to one tier and every call runs under that
// tier's lock (the callers' *Locked functions say so).
#ifndef MEMKV_STORAGE_POLICY_POLICY_H_
#define MEMKV_STORAGE_POLICY_POLICY_H_

#include <cstdint>

#include "storage/policy/policy_entry.h"

namespace memkv::storage::policy {

// Why a value leaves the index, as far as the policies care.
enum class Removal : uint8_t {
  kOther,    // deleted, replaced, dropped for a bad checksum or a lost drive
  kEvicted,  // for room or for its tenant's quota (counted in the tenant's row)
  kExpired,  // its TTL ran out
};

class Policy {
 public:
  virtual ~Policy() = default;
  // `e` entered the index (its fields marked "set by the tier" are final).
  virtual void OnLink(PolicyEntry& e) = 0;
  // `e` left the index; its pins may still hold it.
  virtual void OnUnlink(PolicyEntry& e, Removal why) = 0;
  // A read or a prefix match used `e` at `now_ms`.
  virtual void OnTouch(PolicyEntry& /*e*/, int64_t /*now_ms*/) {}
  // A linked `e` got its first reader pin (held) or lost its last one.
  virtual void OnReaders(PolicyEntry& /*e*/, bool /*held*/) {}
};

}  // namespace memkv::storage::policy

#endif  // MEMKV_STORAGE_POLICY_POLICY_H_
