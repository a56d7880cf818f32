// The client's tables: ClientMetricTable() against the Prometheus rules and
// docs/metrics.md, ClientStatsTable() against ClientStats and ClientCounters.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <set>

#include "client/client_metrics.h"
#include "client/counters.h"
#include "metrics/docs_test_util.h"

namespace memkv::client {
namespace {

TEST(ClientMetricTableTest, RowsFollowThePrometheusRules) {
  EXPECT_EQ(metrics::CheckTable(metrics::Infos(ClientMetricTable())).message(), "");
}

// docs/metrics.md's "Client" table lists exactly the families the table
// exports, with their types and labels.
TEST(ClientMetricTableTest, DocsListEveryRow) {
  for (const std::string& problem : metrics::testing::DocsProblems(metrics::Infos(ClientMetricTable()), "## Client")) {
    ADD_FAILURE() << problem;
  }
}

// Every reader emits samples of its row's type and labels (a broken row would
// be dropped from the scrape in release builds), completion errors included.
TEST(ClientMetricTableTest, EveryRowWritesWhatItDeclares) {
  ClientMetrics cells;
  cells.Record(ClientOp::kGet, true, 1000, false);
  cells.RecordBatch(ClientOp::kBatchPut, 3);
  ClientStats stats;
  stats.completion_errors[12] = 2;
  ServerView server;
  server.name = "127.0.0.1:9900";
  server.id = "3f2a";
  server.state = "draining";
  server.share = 0.25;
  const std::string text = cells.Text(stats, {server});
  for (const ClientMetric& row : ClientMetricTable()) {
    EXPECT_NE(text.find("# TYPE " + std::string(row.name) + " "), std::string::npos) << row.name << "\n" << text;
  }
  EXPECT_NE(text.find("memkv_client_rdma_completion_errors_total{status=\"12\"} 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("memkv_client_requests_total{op=\"get\",transport=\"rdma\"} 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("memkv_client_server_state{server=\"127.0.0.1:9900\",server_id=\"3f2a\",state=\"draining\"} 1\n"),
            std::string::npos) << text;
  EXPECT_NE(text.find("memkv_client_server_state{server=\"127.0.0.1:9900\",server_id=\"3f2a\",state=\"up\"} 0\n"),
            std::string::npos) << text;
  EXPECT_NE(text.find("memkv_client_server_share{server=\"127.0.0.1:9900\",server_id=\"3f2a\"} 0.25\n"),
            std::string::npos) << text;

  auto calls = std::make_unique<ClientCallTable>();
  ClientBatchKeys batch_keys{metrics::Histogram::ForSizesBytes(), metrics::Histogram::ForSizesBytes(),
                             metrics::Histogram::ForSizesBytes()};
  metrics::PrometheusWriter writer;
  EXPECT_EQ(metrics::WriteTable(ClientMetricTable(), ClientScrape{calls.get(), &batch_keys, &stats}, &writer), 0u);
  EXPECT_EQ(writer.dropped(), 0u);
}

TEST(ClientStatsTableTest, OneRowPerFieldWithOneMember) {
  std::set<std::string_view> names;
  std::vector<uint64_t ClientStats::*> counts;  // member pointers have == but no <
  for (const ClientStatInfo& row : ClientStatsTable()) {
    EXPECT_TRUE(names.insert(row.name).second) << row.name << " twice";
    EXPECT_FALSE(row.doc.empty()) << row.name;
    const int members = (row.count != nullptr) + (row.text != nullptr) + (row.by_status != nullptr);
    EXPECT_EQ(members, 1) << row.name;
    switch (row.kind) {
      case ClientStatKind::kCount:
        EXPECT_NE(row.count, nullptr) << row.name;
        EXPECT_EQ(std::count(counts.begin(), counts.end(), row.count), 0) << row.name << ": a field two rows read";
        counts.push_back(row.count);
        break;
      case ClientStatKind::kText: EXPECT_NE(row.text, nullptr) << row.name; break;
      case ClientStatKind::kByStatus: EXPECT_NE(row.by_status, nullptr) << row.name; break;
    }
  }
}

// Each counting row reads its own cell into its own field.
TEST(ClientStatsTableTest, SnapshotReadsEveryCounterIntoItsField) {
  ClientCounters c;
  const std::map<std::string_view, uint64_t> expected = {
      {"ops", 1},      {"bytes_sent", 2},          {"bytes_received", 3}, {"checksum_failures", 4},
      {"timeouts", 5}, {"connections_opened", 6},  {"rdma_ops", 7},       {"rdma_bytes", 8},
      {"rdma_zero_copy_ops", 9}, {"tcp_ops", 10}, {"tcp_bytes", 11},     {"rdma_reissued", 12},
      {"fallbacks", 13}, {"put_options_dropped", 14}, {"grace_lookups", 15}, {"grace_hits", 16},
      {"stores_shed", 17}, {"placement_changes", 18}, {"fallback_reads", 19}, {"fallback_writes", 20},
      {"server_problems", 21}, {"lookups", 22}, {"found", 23}, {"fetched", 24}, {"fetched_in_time", 25},
      {"fetched_late", 26}, {"rdma_spare_puts", 27}};
  c.ops = 1;
  c.bytes_sent = 2;
  c.bytes_received = 3;
  c.checksum_failures = 4;
  c.timeouts = 5;
  c.connections_opened = 6;
  c.rdma_ops = 7;
  c.rdma_bytes = 8;
  c.rdma_zero_copy_ops = 9;
  c.tcp_ops = 10;
  c.tcp_bytes = 11;
  c.rdma_reissued = 12;
  c.fallbacks = 13;
  c.put_options_dropped = 14;
  c.grace_lookups = 15;
  c.grace_hits = 16;
  c.stores_shed = 17;
  c.placement_changes = 18;
  c.fallback_reads = 19;
  c.fallback_writes = 20;
  c.server_problems = 21;
  c.lookups = 22;
  c.found = 23;
  c.fetched = 24;
  c.fetched_in_time = 25;
  c.fetched_late = 26;
  c.rdma_spare_puts = 27;
  c.CountCompletionError(5);
  c.SetFallbackReason("why");
  c.SetRdmaPath("mlx5_0");
  const ClientStats s = c.Snapshot();
  size_t count_rows = 0;
  for (const ClientStatInfo& row : ClientStatsTable()) {
    if (row.kind != ClientStatKind::kCount) continue;
    ++count_rows;
    ASSERT_TRUE(expected.count(row.name)) << row.name;
    EXPECT_EQ(s.*(row.count), expected.at(row.name)) << row.name;
  }
  EXPECT_EQ(count_rows, expected.size());
  EXPECT_EQ(s.completion_errors, (std::map<int, uint64_t>{{5, 1}}));
  EXPECT_EQ(s.fallback_reason, "why");
  EXPECT_EQ(s.rdma_path, "mlx5_0");
}

}  // namespace
}  // namespace memkv::client
