#include "server/tenant_stats.h"

namespace memkv::server {

TenantCounters* TenantStats::Slot(std::string_view name) {
  MutexLock lock(mu_);
  for (auto& [slot_name, counters] : slots_) {
    if (slot_name == name) return &counters;
  }
  auto& slot = slots_.emplace_back(std::piecewise_construct, std::forward_as_tuple(name), std::forward_as_tuple());
  return &slot.second;
}

std::vector<TenantCountsRow> TenantStats::Snapshot() const {
  MutexLock lock(mu_);
  std::vector<TenantCountsRow> rows;
  rows.reserve(slots_.size());
  for (const auto& [name, c] : slots_) {
    rows.push_back({name, c.lookups.load(std::memory_order_relaxed), c.hits.load(std::memory_order_relaxed),
                    c.read_bytes.load(std::memory_order_relaxed), c.puts.load(std::memory_order_relaxed),
                    c.written_bytes.load(std::memory_order_relaxed),
                    c.read_only_refusals.load(std::memory_order_relaxed),
                    c.connections.load(std::memory_order_relaxed),
                    c.open_connections.load(std::memory_order_relaxed),
                    c.connections_refused.load(std::memory_order_relaxed)});
  }
  return rows;
}

}  // namespace memkv::server
