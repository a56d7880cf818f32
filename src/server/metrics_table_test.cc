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
  }
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
