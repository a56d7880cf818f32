#include "storage/policy/policies.h"

#include <utility>

namespace memkv::storage::policy {

Policies::Policies(PolicyOptions options)
    : retention_(options.retention, options.capacity_units, options.unit_bytes, &ttl_),
      eviction_(options.prefix_aware, std::move(options.find_linked)),
      quota_(options.quota),
      // The composition: a new policy is one more line here (and a member).
      all_{
          &ttl_,
          &retention_,
          &eviction_,
          &quota_,
      } {}

}  // namespace memkv::storage::policy
