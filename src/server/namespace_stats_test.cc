#include "server/namespace_stats.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace memkv::server {
namespace {

std::map<std::string, NamespaceCounts> ByName(NamespaceStats& stats) {
  std::map<std::string, NamespaceCounts> out;
  for (NamespaceRow& row : stats.Snapshot()) out[row.name] = row.counts;
  return out;
}

NamespaceCounts Lookups(uint64_t n, uint64_t hits) {
  NamespaceCounts c;
  c.lookups = n;
  c.hits = hits;
  return c;
}

uint64_t TotalLookups(const std::map<std::string, NamespaceCounts>& rows) {
  uint64_t sum = 0;
  for (const auto& [name, c] : rows) sum += c.lookups;
  return sum;
}

TEST(NamespaceStatsTest, NamespaceIsTheKeyUpToTheSeparator) {
  NamespaceStats stats({"/", 4});
  EXPECT_EQ(stats.NamespaceOf("llama/7b/page1"), "llama");
  EXPECT_EQ(stats.NamespaceOf("nosep"), "");
  NamespaceStats colon({"::", 4});
  EXPECT_EQ(colon.NamespaceOf("a::b::c"), "a");
  NamespaceStats none({"", 4});
  EXPECT_EQ(none.NamespaceOf("a/b"), "");
}

TEST(NamespaceStatsTest, CountsAndHitRatioPerNamespace) {
  NamespaceStats stats({"/", 4});
  stats.Count("a/1", Lookups(10, 7));
  stats.Count("b/1", Lookups(4, 1));
  NamespaceCounts put;
  put.puts = 1;
  put.written_bytes = 4096;
  stats.Count("a/2", put);
  auto rows = ByName(stats);
  ASSERT_EQ(rows.size(), 3u);  // a, b, other
  EXPECT_EQ(rows["a"].lookups, 10u);
  EXPECT_DOUBLE_EQ(rows["a"].hit_ratio(), 0.7);
  EXPECT_EQ(rows["a"].written_bytes, 4096u);
  EXPECT_EQ(rows["b"].hits, 1u);
  EXPECT_EQ(rows["other"].lookups, 0u);
}

TEST(NamespaceStatsTest, CountManyGroupsRunsOfOneNamespace) {
  NamespaceStats stats({"/", 4});
  stats.CountMany({{"a/1", Lookups(1, 1)}, {"a/2", Lookups(1, 0)}, {"b/1", Lookups(1, 1)}, {"a/3", Lookups(1, 1)}});
  auto rows = ByName(stats);
  EXPECT_EQ(rows["a"].lookups, 3u);
  EXPECT_EQ(rows["a"].hits, 2u);
  EXPECT_EQ(rows["b"].lookups, 1u);
}

TEST(NamespaceStatsTest, CardinalityIsBoundedAndNothingIsLost) {
  NamespaceStats stats({"/", 3});
  for (int i = 0; i < 500; ++i) stats.Count("ns" + std::to_string(i) + "/k", Lookups(1, 0));
  auto rows = ByName(stats);
  EXPECT_EQ(rows.size(), 4u);  // three reported, plus other
  EXPECT_EQ(TotalLookups(rows), 500u);
}

TEST(NamespaceStatsTest, ALoudNamespaceTakesTheQuietestPlace) {
  NamespaceStats stats({"/", 2});
  stats.Count("q1/k", Lookups(1, 0));
  stats.Count("q2/k", Lookups(2, 0));
  stats.Count("loud/k", Lookups(100, 50));  // arrives with both places taken
  auto first = ByName(stats);
  EXPECT_TRUE(first.count("loud"));
  EXPECT_FALSE(first.count("q1"));  // the quietest gave way
  EXPECT_EQ(first["loud"].lookups, 0u);  // what it did before it was reported stays in other
  EXPECT_EQ(first["other"].lookups, 101u);
  stats.Count("loud/k", Lookups(5, 5));
  auto second = ByName(stats);
  EXPECT_EQ(second["loud"].lookups, 5u);
  EXPECT_EQ(TotalLookups(second), 108u);
}

TEST(NamespaceStatsTest, SeriesNeverGoBackwards) {
  NamespaceStats stats({"/", 2});
  std::map<std::string, uint64_t> last;
  for (int round = 0; round < 50; ++round) {
    // Traffic that shifts between namespaces, so places change hands.
    for (int n = 0; n < 6; ++n) stats.Count("ns" + std::to_string(n) + "/k", Lookups(1 + (round * n) % 7, 0));
    for (const auto& [name, c] : ByName(stats)) {
      if (name == "other") {
        EXPECT_GE(c.lookups, last[name]) << "round " << round;
      }
      last[name] = c.lookups;
    }
  }
}

TEST(NamespaceStatsTest, TopZeroCountsEverythingAsOther) {
  NamespaceStats stats({"/", 0});
  stats.Count("a/1", Lookups(3, 3));
  auto rows = ByName(stats);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows["other"].hits, 3u);
}

}  // namespace
}  // namespace memkv::server
