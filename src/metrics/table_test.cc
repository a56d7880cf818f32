#include "metrics/table.h"

#include <gtest/gtest.h>

#include <array>

namespace memkv::metrics {
namespace {

struct Toy {
  uint64_t hits = 0;
  uint64_t misses = 0;
  double used_bytes = 0;
  bool has_drive = false;
};

constexpr std::array<MetricDescriptor<Toy>, 3> kToyTable = {{
    {"toy_lookups_total", MetricType::kCounter, "result", "Lookups, by result.",
     [](const Toy& t, Samples& out) {
       out.Counter({{"result", "hit"}}, t.hits);
       out.Counter({{"result", "miss"}}, t.misses);
     }},
    {"toy_drive_used_bytes", MetricType::kGauge, "", "Drive bytes used; only with a drive.",
     [](const Toy& t, Samples& out) {
       if (t.has_drive) out.Gauge({}, t.used_bytes);
     }},
    {"toy_up", MetricType::kGauge, "", "Always 1.", [](const Toy&, Samples& out) { out.Gauge({}, 1); }},
}};

TEST(MetricTableTest, WritesRowsInTableOrder) {
  PrometheusWriter w;
  EXPECT_EQ(WriteTable<Toy>(kToyTable, Toy{3, 4, 1.5, true}, &w), 0u);
  EXPECT_EQ(w.Text(),
            "# HELP toy_lookups_total Lookups, by result.\n"
            "# TYPE toy_lookups_total counter\n"
            "toy_lookups_total{result=\"hit\"} 3\n"
            "toy_lookups_total{result=\"miss\"} 4\n"
            "# HELP toy_drive_used_bytes Drive bytes used; only with a drive.\n"
            "# TYPE toy_drive_used_bytes gauge\n"
            "toy_drive_used_bytes 1.5\n"
            "# HELP toy_up Always 1.\n"
            "# TYPE toy_up gauge\n"
            "toy_up 1\n");
  EXPECT_EQ(w.dropped(), 0u);
}

TEST(MetricTableTest, FamilyWithoutSamplesIsLeftOut) {
  PrometheusWriter w;
  WriteTable<Toy>(kToyTable, Toy{}, &w);
  EXPECT_EQ(w.Text().find("toy_drive_used_bytes"), std::string::npos) << w.Text();
  EXPECT_NE(w.Text().find("toy_up 1\n"), std::string::npos) << w.Text();
}

// A sample that does not fit its row: release builds drop it and count it,
// debug builds assert.
constexpr MetricDescriptor<Toy> kBroken[] = {
    {"toy_hits_total", MetricType::kCounter, "result", "Hits.",
     [](const Toy& t, Samples& out) {
       out.Counter({{"tier", "dram"}}, t.hits);  // another label
       out.Gauge({{"result", "hit"}}, 1);        // another type
       out.Counter({{"result", "hit"}}, t.hits);
     }},
};

TEST(MetricTableTest, SampleNotFittingItsRowAssertsInDebugAndIsDroppedInRelease) {
  PrometheusWriter w;
#ifdef NDEBUG
  EXPECT_EQ(WriteTable<Toy>(kBroken, Toy{3, 4, 0, false}, &w), 2u);
  EXPECT_EQ(w.Text(),
            "# HELP toy_hits_total Hits.\n"
            "# TYPE toy_hits_total counter\n"
            "toy_hits_total{result=\"hit\"} 3\n");
#else
  EXPECT_DEATH(WriteTable<Toy>(kBroken, Toy{3, 4, 0, false}, &w), "another type or with other labels");
#endif
}

TEST(MetricTableTest, CheckTableFindsBrokenRows) {
  EXPECT_TRUE(CheckTable(Infos<Toy>(kToyTable)).ok());
  const MetricInfo twice[] = {{"a_total", MetricType::kCounter, "", "A."}, {"a_total", MetricType::kCounter, "", "A."}};
  EXPECT_NE(CheckTable(twice).message().find("two rows"), std::string::npos);
  const MetricInfo no_suffix[] = {{"a", MetricType::kCounter, "", "A."}};
  EXPECT_NE(CheckTable(no_suffix).message().find("_total"), std::string::npos);
  const MetricInfo le[] = {{"a_seconds", MetricType::kHistogram, "op,le", "A."}};
  EXPECT_NE(CheckTable(le).message().find("label 'le'"), std::string::npos);
}

TEST(MetricTableTest, SplitsLabelNames) {
  EXPECT_TRUE(SplitLabelNames("").empty());
  EXPECT_EQ(SplitLabelNames("op, transport"), (std::vector<std::string_view>{"op", "transport"}));
}

constexpr std::string_view kDocs =
    "# Metrics\n"
    "## Toy\n"
    "Intro with `toy_not_a_row`.\n"
    "| name | type | labels | meaning |\n"
    "|---|---|---|---|\n"
    "| `toy_lookups_total` | counter | `result` | lookups: `hit`, `miss` |\n"
    "| `toy_drive_used_bytes`, `toy_up` | gauge | | bytes |\n"
    "### Queries\n"
    "| `toy_in_a_subsection_total` | counter | | still Toy |\n"
    "## Other\n"
    "| `other_total` | counter | | elsewhere |\n";

TEST(MetricTableTest, ParsesDocumentedMetricsOfOneSection) {
  const std::vector<DocumentedMetric> docs = ParseDocumentedMetrics(kDocs, "## Toy");
  ASSERT_EQ(docs.size(), 4u);
  EXPECT_EQ(docs[0].name, "toy_lookups_total");
  EXPECT_EQ(docs[0].type, "counter");
  EXPECT_EQ(docs[0].labels, std::vector<std::string>{"result"});
  EXPECT_EQ(docs[1].name, "toy_drive_used_bytes");
  EXPECT_EQ(docs[2].name, "toy_up");
  EXPECT_EQ(docs[2].type, "gauge");
  EXPECT_TRUE(docs[2].labels.empty());
  EXPECT_EQ(docs[3].name, "toy_in_a_subsection_total");
}

TEST(MetricTableTest, DocsCheckNamesEveryDisagreement) {
  std::vector<DocumentedMetric> docs = ParseDocumentedMetrics(kDocs, "## Toy");
  docs.pop_back();
  EXPECT_TRUE(CheckTableAgainstDocs(Infos<Toy>(kToyTable), docs).empty());

  docs[0].type = "gauge";
  docs[1].labels = {"device"};
  docs.push_back({"toy_gone_total", "counter", {}});
  docs.erase(docs.begin() + 2);  // toy_up
  const std::vector<std::string> problems = CheckTableAgainstDocs(Infos<Toy>(kToyTable), docs);
  ASSERT_EQ(problems.size(), 4u);
  EXPECT_EQ(problems[0], "toy_lookups_total (counter, labels 'result'): documented as a gauge");
  EXPECT_EQ(problems[1], "toy_drive_used_bytes (gauge, labels ''): documented with labels 'device'");
  EXPECT_EQ(problems[2], "toy_up (gauge, labels ''): exported but not documented");
  EXPECT_EQ(problems[3], "toy_gone_total: documented but no table row exports it");
}

}  // namespace
}  // namespace memkv::metrics
