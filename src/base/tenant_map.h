// TenantMap: which tenant a stored key belongs to (docs/tenants.md).
//
// A tenant's keys are stored under its prefix (tenants[].prefix): the server
// puts the prefix in front of every key a tenant's client names, so a stored
// key starts with exactly one tenant's prefix or with none (the
// administrator's own keys). Prefixes are disjoint: none starts another
// (config validation refuses overlapping ones), so the match is unique.
//
// Immutable once built; share it with std::shared_ptr<const TenantMap> and
// replace it whole on a reload. Lookup costs one hash probe per distinct
// prefix length.
#ifndef MEMKV_BASE_TENANT_MAP_H_
#define MEMKV_BASE_TENANT_MAP_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace memkv {

// One tenant's storage identity and limits, as configured.
struct TenantLimits {
  std::string name;                // tenants[].name: metrics label, key derivation info
  std::string prefix;              // tenants[].prefix, non-empty
  uint64_t dram_quota_bytes = 0;   // tenants[].dram_quota; 0: none
  uint64_t drive_quota_bytes = 0;  // tenants[].drive_quota; 0: none
};

// What one tenant holds and has lost, as the store counts it
// (TieredStore::TenantUsages, in TenantMap order).
struct TenantUsage {
  uint64_t dram_bytes = 0;        // value bytes in the DRAM pool
  uint64_t dram_keys = 0;
  uint64_t drive_bytes = 0;       // value bytes on the drives
  uint64_t drive_keys = 0;
  uint64_t evictions = 0;         // values evicted, any tier, any cause
  uint64_t quota_evictions = 0;   // of those, evicted to keep the tenant within its own quota
  uint64_t quota_refusals = 0;    // puts refused: the quota could not be met (pinned, being read)
};

class TenantMap {
 public:
  static constexpr uint32_t kNone = UINT32_MAX;  // a key under no tenant's prefix

  TenantMap() = default;
  // `tenants` must have distinct names and disjoint prefixes (the config
  // checks); a later duplicate is ignored.
  explicit TenantMap(std::vector<TenantLimits> tenants);

  // The index of the tenant whose prefix starts `key`, or kNone.
  uint32_t Find(std::string_view key) const;
  // The index of the tenant named `name`, or kNone.
  uint32_t FindByName(std::string_view name) const;

  size_t size() const { return tenants_.size(); }
  bool empty() const { return tenants_.empty(); }
  const TenantLimits& operator[](uint32_t index) const { return tenants_[index]; }
  const std::vector<TenantLimits>& tenants() const { return tenants_; }

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
  };
  std::vector<TenantLimits> tenants_;
  std::vector<size_t> prefix_lengths_;  // distinct, ascending
  std::unordered_map<std::string, uint32_t, Hash, std::equal_to<>> by_prefix_;
};

}  // namespace memkv

#endif  // MEMKV_BASE_TENANT_MAP_H_
