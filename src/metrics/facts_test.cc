#include "metrics/facts.h"

#include <gtest/gtest.h>

namespace memkv::metrics {
namespace {

struct Toy {
  uint64_t hits = 0;
  uint64_t misses = 0;
  double used_bytes = 0;
  bool has_drive = false;
  std::string name = "toy";
};
using ToyFact = Fact<Toy>;
using W = JsonWriter;

bool HasDrive(const Toy& t) { return t.has_drive; }

constexpr ToyFact kToy[] = {
    ToyFact::Field("name", [](const Toy& t, W& w) { w.String(t.name); }),
    ToyFact::Object("cache"),
    ToyFact::Metric("toy_lookups_total", MetricType::kCounter, "result", "Lookups, by result.",
                    [](const Toy& t, Samples& out) {
                      out.Counter({{"result", "hit"}}, t.hits);
                      out.Counter({{"result", "miss"}}, t.misses);
                    })
        .Status("cache.hits", "hit")
        .Status("cache.misses", "miss"),
    ToyFact::Field("total", [](const Toy& t, W& w) { w.Number(t.hits + t.misses); }),
    ToyFact::Metric("toy_drive_used_bytes", MetricType::kGauge, "", "Drive bytes used; only with a drive.",
                    [](const Toy& t, Samples& out) {
                      if (t.has_drive) out.Gauge({}, t.used_bytes);
                    })
        .Status("drive.used_bytes"),
    ToyFact::Object("drive"),
    ToyFact::Field("drive.present", [](const Toy&, W& w) { w.Bool(true); }, HasDrive),
    ToyFact::Metric("toy_up", MetricType::kGauge, "", "Always 1.", [](const Toy&, Samples& out) { out.Gauge({}, 1); }),
};

TEST(FactTableTest, FamiliesAreTheMetricRowsInOrder) {
  const std::vector<MetricDescriptor<Toy>> families = Families<Toy>(kToy);
  ASSERT_EQ(families.size(), 3u);
  EXPECT_EQ(families[0].name, "toy_lookups_total");
  EXPECT_EQ(families[1].name, "toy_drive_used_bytes");
  EXPECT_EQ(families[2].name, "toy_up");
}

// Top-level fields at their rows; an object at its Object row, holding its
// section's fields from anywhere in the table.
TEST(FactTableTest, StatusFieldsFollowTheObjectRows) {
  std::vector<std::string_view> paths;
  for (const StatusField<Toy>& f : StatusFields<Toy>(kToy)) paths.push_back(f.path);
  EXPECT_EQ(paths, (std::vector<std::string_view>{"name", "cache.hits", "cache.misses", "total", "drive.used_bytes",
                                                  "drive.present"}));
}

TEST(FactTableTest, StatusShowsSampleValuesAndLeavesOutWhatIsAbsent) {
  const std::vector<StatusField<Toy>> fields = StatusFields<Toy>(kToy);
  EXPECT_EQ(WriteStatusJson<Toy>(fields, Toy{3, 4, 4096, true}),
            R"({"name":"toy","cache":{"hits":3,"misses":4},"total":7,"drive":{"used_bytes":4096,"present":true}})");
  // No drive: no sample and a predicate saying no, so no "drive" object.
  EXPECT_EQ(WriteStatusJson<Toy>(fields, Toy{1, 0, 0, false}),
            R"({"name":"toy","cache":{"hits":1,"misses":0},"total":1})");
  // A gauge that is not a whole number stays a double.
  EXPECT_EQ(WriteStatusJson<Toy>(fields, Toy{0, 0, 1.5, true}),
            R"({"name":"toy","cache":{"hits":0,"misses":0},"total":0,"drive":{"used_bytes":1.5,"present":true}})");
}

TEST(FactTableTest, CheckAcceptsAGoodTable) {
  EXPECT_EQ(CheckFacts(FactInfos<Toy>(kToy)), std::vector<std::string>{});
}

constexpr ToyFact kBroken[] = {
    ToyFact::Metric("toy_hits_total", MetricType::kCounter, "result", "Hits.", [](const Toy&, Samples&) {})
        .Status("cache.hits")                      // no value for the label
        .Status("total", "hit"),
    ToyFact::Field("total", [](const Toy&, W& w) { w.Number(uint64_t{0}); }),  // shown twice
    ToyFact::Metric("toy_seconds", MetricType::kHistogram, "", "Latency.", [](const Toy&, Samples&) {})
        .Status("p50"),                            // a histogram has no one value
    ToyFact::Field("drive.used_bytes", [](const Toy&, W& w) { w.Null(); }),  // no Object("drive")
    ToyFact::Object("cache"),
    ToyFact::Object("cache"),
    ToyFact::Metric("toy_hits", MetricType::kCounter, "", "Counter without _total.", [](const Toy&, Samples&) {}),
};

TEST(FactTableTest, CheckNamesEveryBrokenRule) {
  const std::vector<std::string> problems = CheckFacts(FactInfos<Toy>(kBroken));
  std::string all;
  for (const std::string& p : problems) all += p + "\n";
  for (const char* want : {"family 'toy_hits_total': status field 'cache.hits' names sample ''",
                           "status field 'total': two rows show it",
                           "family 'toy_seconds': status field 'p50' shows a sample of no counter or gauge",
                           "status section 'drive' has no Object row", "status section 'cache' has two Object rows",
                           "toy_hits"}) {
    EXPECT_NE(all.find(want), std::string::npos) << "missing '" << want << "' in\n" << all;
  }
  EXPECT_EQ(problems.size(), 6u) << all;
}

}  // namespace
}  // namespace memkv::metrics
