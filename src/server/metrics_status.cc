#include "server/metrics_status.h"

#include <string>
#include <vector>

namespace memkv::server {

using drive::DriveStateName;
using drive::DriveStats;

std::string DeviceName(const DriveStats& d) { return "drive" + std::to_string(d.index); }

const std::vector<DriveStats>& Drives(const ServerSnapshot& s) {
  static const std::vector<DriveStats> kNone;
  return s.drives ? s.drives->drives : kNone;
}

Capacity TotalCapacity(const ServerSnapshot& s) {
  if (!s.drives) return {s.memory.pool_bytes, s.memory.pool_bytes, s.memory.used_bytes};
  Capacity c;
  for (const DriveStats& d : s.drives->drives) {
    c.raw += d.raw_bytes;
    c.usable += d.usable_bytes;
    c.used += d.used_bytes;
  }
  return c;
}

void WriteDevicesJson(const ServerSnapshot& s, JsonWriter& w) {
  w.BeginArray();
  w.BeginObject()
      .Key("name").String("dram")
      .Key("kind").String("memory")
      .Key("state").String("online")
      .Key("raw_bytes").Number(s.memory.pool_bytes)
      .Key("usable_bytes").Number(s.memory.pool_bytes)
      .Key("used_bytes").Number(s.memory.used_bytes)
      .EndObject();
  for (const DriveStats& d : Drives(s)) {
    w.BeginObject()
        .Key("name").String(DeviceName(d))
        .Key("kind").String(s.storage_mode)
        .Key("path").String(d.path)
        .Key("state").String(DriveStateName(d.state))
        .Key("reason").String(d.reason)
        .Key("raw_bytes").Number(d.raw_bytes)
        .Key("usable_bytes").Number(d.usable_bytes)
        .Key("used_bytes").Number(d.used_bytes)
        .Key("value_bytes").Number(d.value_bytes)
        .Key("free_bytes").Number(d.free_bytes)
        .Key("largest_free_bytes").Number(d.largest_free_bytes)
        .Key("fragmentation").Number(d.fragmentation())
        .Key("journal_used_bytes").Number(d.journal_used_bytes)
        .Key("journal_area_bytes").Number(d.journal_area_bytes)
        .EndObject();
  }
  w.EndArray();
}

void WriteNamespacesJson(const ServerSnapshot& s, JsonWriter& w) {
  w.BeginArray();
  for (const NamespaceRow& row : s.namespaces) {
    const NamespaceCounts& c = row.counts;
    w.BeginObject()
        .Key("name").String(row.name)
        .Key("lookups").Number(c.lookups)
        .Key("hits").Number(c.hits)
        .Key("hit_ratio").Number(c.hit_ratio())
        .Key("read_bytes").Number(c.read_bytes)
        .Key("puts").Number(c.puts)
        .Key("written_bytes").Number(c.written_bytes)
        .Key("evictions").Number(c.evictions)
        .EndObject();
  }
  w.EndArray();
}

void WriteIdentitiesJson(const ServerSnapshot& s, JsonWriter& w) {
  auto n = [](const std::atomic<uint64_t>& c) { return c.load(std::memory_order_relaxed); };
  w.BeginArray();
  for (const Identities::Row& row : s.identities) {
    const IdentityCounters& c = *row.counters;
    const uint64_t lookups = n(c.lookups), found = n(c.found), fetched = n(c.fetched);
    const uint64_t in_time = n(c.fetched_in_time);
    w.BeginObject().Key("tenant").String(row.tenant).Key("identity").String(row.identity);
    auto info = s.identity_info.find(row.identity);
    if (info != s.identity_info.end()) {
      const CacheIdentity& id = info->second;
      w.Key("model").String(id.model).Key("revision").String(id.revision).Key("kv_dtype").String(id.kv_dtype)
          .Key("layout").String(id.layout).Key("block_tokens").Number(uint64_t{id.block_tokens})
          .Key("tp_rank").Number(uint64_t{id.tp_rank}).Key("tp_size").Number(uint64_t{id.tp_size})
          .Key("engine").String(id.engine).Key("engine_version").String(id.engine_version);
    }
    uint64_t evictions = 0;
    for (const auto& tier : c.evictions) {
      for (const auto& reason : tier) evictions += n(reason);
    }
    w.Key("lookups").Number(lookups)
        .Key("found").Number(found)
        .Key("fetched").Number(fetched)
        .Key("fetched_in_time").Number(in_time)
        .Key("fetched_late").Number(n(c.fetched_late))
        .Key("hit_ratio").Number(lookups == 0 ? 0.0 : double(found) / double(lookups))
        .Key("in_time_ratio").Number(lookups == 0 ? 0.0 : double(in_time) / double(lookups))
        .Key("fetched_bytes").Number(n(c.fetched_bytes))
        .Key("stores").Number(n(c.stores))
        .Key("stored_bytes").Number(n(c.stored_bytes))
        .Key("stores_shed").Number(n(c.stores_shed))
        .Key("evictions").Number(evictions)
        .EndObject();
  }
  w.EndArray();
}

void WriteTenantsJson(const ServerSnapshot& s, JsonWriter& w) {
  w.BeginArray();
  for (const TenantRow& row : s.tenants) {
    const TenantCountsRow& r = row.requests;
    const TenantUsage& u = row.usage;
    w.BeginObject()
        .Key("name").String(row.name())
        .Key("configured").Bool(row.configured)
        .Key("dram_bytes").Number(u.dram_bytes)
        .Key("dram_keys").Number(u.dram_keys)
        .Key("dram_quota_bytes").Number(row.dram_quota_bytes)
        .Key("drive_bytes").Number(u.drive_bytes)
        .Key("drive_keys").Number(u.drive_keys)
        .Key("drive_quota_bytes").Number(row.drive_quota_bytes)
        .Key("lookups").Number(r.lookups)
        .Key("hits").Number(r.hits)
        .Key("misses").Number(r.misses())
        .Key("hit_ratio").Number(r.lookups == 0 ? 0.0 : double(r.hits) / double(r.lookups))
        .Key("read_bytes").Number(r.read_bytes)
        .Key("puts").Number(r.puts)
        .Key("written_bytes").Number(r.written_bytes)
        .Key("evictions").Number(u.evictions)
        .Key("quota_evictions").Number(u.quota_evictions)
        .Key("quota_refusals").Number(u.quota_refusals)
        .Key("read_only_refusals").Number(r.read_only_refusals)
        .Key("connections").Number(r.connections)
        .Key("connections_open").Number(r.open_connections)
        .Key("connections_refused").Number(r.connections_refused)
        .EndObject();
  }
  w.EndArray();
}

std::vector<TenantRow> JoinTenantRows(std::vector<TenantCountsRow> requests, const TenantMap& map,
                                      const std::vector<TenantUsage>& usage) {
  std::vector<TenantRow> rows;
  std::vector<bool> joined(map.size(), false);
  auto fill = [&](TenantRow& row, uint32_t i) {
    row.configured = true;
    if (i < usage.size()) row.usage = usage[i];
    row.dram_quota_bytes = map[i].dram_quota_bytes;
    row.drive_quota_bytes = map[i].drive_quota_bytes;
    joined[i] = true;
  };
  for (TenantCountsRow& r : requests) {
    TenantRow& row = rows.emplace_back();
    row.requests = std::move(r);
    const uint32_t i = map.FindByName(row.name());
    if (i != TenantMap::kNone) fill(row, i);
  }
  for (uint32_t i = 0; i < map.size(); ++i) {
    if (joined[i]) continue;
    TenantRow& row = rows.emplace_back();
    row.requests.name = map[i].name;
    fill(row, i);
  }
  return rows;
}

void WriteHealthJson(JsonWriter& w, const HealthReport& h) {
  w.BeginObject()
      .Key("status").String(h.status)
      .Key("reason").String(h.reason)
      .Key("rdma_active").Bool(h.rdma_active)
      .Key("drives_online").Number(uint64_t(h.drives_online))
      .Key("drives_offline").Number(uint64_t(h.drives_offline))
      .Key("drives_total").Number(uint64_t(h.drives_total))
      .EndObject();
}

}  // namespace memkv::server
