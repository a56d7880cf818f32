#include "server/metrics_table.h"

#include <gtest/gtest.h>

#include <set>

#include "metrics/docs_test_util.h"

namespace memkv::server {
namespace {

TEST(ServerMetricTableTest, RowsFollowThePrometheusRules) {
  const std::vector<metrics::MetricInfo> infos = metrics::Infos(ServerMetricTable());
  EXPECT_EQ(metrics::CheckTable(infos).message(), "");
}

// docs/metrics.md's "Server" table lists exactly the families the table
// exports, with their types and labels.
TEST(ServerMetricTableTest, DocsListEveryRow) {
  for (const std::string& problem : metrics::testing::DocsProblems(metrics::Infos(ServerMetricTable()), "## Server")) {
    ADD_FAILURE() << problem;
  }
}

// Every reader emits samples of its row's type and labels, with and without
// drives (a broken row would be dropped from the scrape in release builds).
TEST(ServerMetricTableTest, EveryRowWritesWhatItDeclares) {
  ServerMetrics cells;
  ServerSnapshot s;
  s.metrics = &cells;
  s.health.status = "healthy";
  s.version = "1.2.3";
  TenantMap map({{"team-a", "a/", 1 << 20, 0}, {"team-b", "b/", 0, 0}});
  std::vector<TenantUsage> usage(2);
  usage[0].dram_bytes = 4096;
  s.tenants = JoinTenantRows({TenantCountsRow{.name = "gone", .lookups = 3, .hits = 1}}, map, usage);
  FleetState fleet(FleetIdentity{.id = "cache-7", .capacity_bytes = 1 << 30, .weight = 0, .source = "fleet.id"}, 0);
  fleet.SetDraining(true);
  s.fleet = &fleet;
  Identities identities({}, map);
  CacheIdentity id;
  id.model = "llama";
  id.kv_dtype = "bfloat16";
  const std::string tag = id.Tag();
  Result<IdentityCounters*> row = identities.Admit("team-a", id, tag);
  ASSERT_TRUE(row.ok()) << row.status().ToString();
  (*row)->CountLookups(4, 3, 2, 100);
  (*row)->load.Observe(1000);
  storage::StoreEvent evicted;
  evicted.kind = storage::StoreEventKind::kRemoved;
  evicted.reason = storage::RemovalReason::kEvicted;
  evicted.medium = storage::StoreMedium::kDrive;
  evicted.key = "a/@" + tag + "/block";
  identities.CountRemoval(evicted);
  identities.Unidentified("")->CountStored(1, 10);
  s.identities = identities.Snapshot();
  s.identity_info = identities.Known();
  for (bool drives : {false, true}) {
    if (drives) {
      s.drives.emplace();
      s.drives->drives.resize(2);
      s.drives->drives[1].index = 1;
    }
    metrics::PrometheusWriter writer;
    EXPECT_EQ(metrics::WriteTable(ServerMetricTable(), s, &writer), 0u) << (drives ? "with drives" : "memory mode");
    EXPECT_EQ(writer.dropped(), 0u) << (drives ? "with drives" : "memory mode");
    const std::string text = writer.Text();
    EXPECT_EQ(text.find("memkv_drive_state") != std::string::npos, drives) << text;
    EXPECT_NE(text.find("memkv_build_info{version=\"1.2.3\"} 1\n"), std::string::npos) << text;
    EXPECT_NE(text.find("memkv_server_info{server_id=\"cache-7\"} 1\n"), std::string::npos) << text;
    EXPECT_NE(text.find("memkv_draining 1\n"), std::string::npos) << text;
    EXPECT_NE(text.find("memkv_tenant_bytes{tenant=\"team-a\",tier=\"dram\"} 4096\n"), std::string::npos) << text;
    EXPECT_NE(text.find("memkv_tenant_misses_total{tenant=\"gone\"} 2\n"), std::string::npos) << text;
    EXPECT_EQ(text.find("memkv_tenant_bytes{tenant=\"gone\""), std::string::npos) << text;
    const std::string labels = "{tenant=\"team-a\",identity=\"" + tag + "\"}";
    EXPECT_NE(text.find("memkv_identity_found_total" + labels + " 3\n"), std::string::npos) << text;
    EXPECT_NE(text.find("memkv_identity_fetched_total" + labels + " 2\n"), std::string::npos) << text;
    EXPECT_NE(text.find("memkv_identity_load_seconds_count" + labels + " 1\n"), std::string::npos) << text;
    EXPECT_NE(text.find("memkv_identity_stores_total{tenant=\"\",identity=\"none\"} 1\n"), std::string::npos)
        << text;
    EXPECT_NE(text.find("memkv_identity_info{identity=\"" + tag + "\",model=\"llama\""), std::string::npos) << text;
    EXPECT_EQ(text.find("memkv_identity_evictions_total{tenant=\"team-a\",identity=\"" + tag +
                        "\",tier=\"drive\",reason=\"evicted\"} 1\n") != std::string::npos,
              drives)
        << text;
  }
}

// Request counters (every tenant ever seen) meet the store's rows by name:
// a removed tenant keeps its counts without usage, a configured one without
// traffic yet still appears with its quotas.
TEST(ServerMetricTableTest, TenantRowsJoinCountersAndUsageByName) {
  TenantMap map({{"team-a", "a/", 1 << 20, 2 << 20}, {"team-b", "b/", 0, 0}});
  std::vector<TenantUsage> usage(2);
  usage[0].dram_keys = 7;
  usage[1].drive_keys = 9;
  const std::vector<TenantRow> rows = JoinTenantRows(
      {TenantCountsRow{.name = "gone", .lookups = 5}, TenantCountsRow{.name = "team-b", .hits = 2}}, map, usage);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].name(), "gone");
  EXPECT_FALSE(rows[0].configured);
  EXPECT_EQ(rows[0].requests.lookups, 5u);
  EXPECT_EQ(rows[1].name(), "team-b");
  EXPECT_TRUE(rows[1].configured);
  EXPECT_EQ(rows[1].usage.drive_keys, 9u);
  EXPECT_EQ(rows[1].requests.hits, 2u);
  EXPECT_EQ(rows[2].name(), "team-a");
  EXPECT_EQ(rows[2].usage.dram_keys, 7u);
  EXPECT_EQ(rows[2].dram_quota_bytes, 1u << 20);
  EXPECT_EQ(rows[2].drive_quota_bytes, 2u << 20);
}

TEST(ServerStatusTableTest, SectionsAreContiguousAndKeysUnique) {
  std::set<std::string_view> paths, closed;
  std::string_view open;
  for (const StatusField& field : ServerStatusTable()) {
    EXPECT_TRUE(paths.insert(field.path).second) << field.path << " twice";
    const size_t dot = field.path.find('.');
    const std::string_view section = dot == std::string_view::npos ? std::string_view() : field.path.substr(0, dot);
    if (section != open) {
      if (!open.empty()) closed.insert(open);
      EXPECT_FALSE(closed.count(section)) << field.path << ": section " << section << " reopened";
      open = section;
    }
  }
}

TEST(ServerStatusTableTest, SectionsBecomeObjects) {
  ServerMetrics cells;
  ServerSnapshot s;
  s.metrics = &cells;
  s.storage_mode = "memory";
  const std::string json = ServerStatusJson(s);
  EXPECT_NE(json.find("\"storage\":{\"mode\":\"memory\"},\"rdma\":{\"active\":false,\"connections\":0"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("\"connections\":{\"active\":0,\"total\":0},\"requests_total\":0"), std::string::npos) << json;
}

}  // namespace
}  // namespace memkv::server
