#include "client/placement.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace memkv::client {
namespace {

constexpr int kKeys = 100'000;

std::string KeyOf(int i) { return "block-" + std::to_string(i * 2654435761u); }

std::vector<size_t> Owners(const Placement& p) {
  std::vector<size_t> owners(kKeys);
  for (int i = 0; i < kKeys; ++i) owners[i] = p.ServerFor(KeyOf(i));
  return owners;
}

std::vector<std::string> Servers(int n) {
  std::vector<std::string> s;
  for (int i = 0; i < n; ++i) s.push_back("10.0.0." + std::to_string(i + 1) + ":9900");
  return s;
}

TEST(PlacementTest, RejectsEmptyAndDuplicateServers) {
  EXPECT_EQ(Placement::Create({}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Placement::Create({"a:1", "a:1"}).status().code(), StatusCode::kInvalidArgument);
}

TEST(PlacementTest, SpreadsKeysEvenly) {
  auto p = Placement::Create(Servers(4));
  ASSERT_TRUE(p.ok());
  std::vector<int> count(4);
  for (size_t owner : Owners(*p)) ++count[owner];
  for (int c : count) {
    EXPECT_GT(c, kKeys / 4 * 0.9);
    EXPECT_LT(c, kKeys / 4 * 1.1);
  }
}

TEST(PlacementTest, DependsOnNamesNotOrder) {
  std::vector<std::string> names = Servers(4);
  auto a = Placement::Create(names);
  std::vector<std::string> reversed(names.rbegin(), names.rend());
  auto b = Placement::Create(reversed);
  ASSERT_TRUE(a.ok() && b.ok());
  for (int i = 0; i < 1000; ++i) {
    EXPECT_EQ(a->name(a->ServerFor(KeyOf(i))), b->name(b->ServerFor(KeyOf(i))));
  }
}

TEST(PlacementTest, AddingAFifthServerMovesAboutAFifthAllToIt) {
  auto four = Placement::Create(Servers(4));
  auto five = Placement::Create(Servers(5));
  ASSERT_TRUE(four.ok() && five.ok());
  std::vector<size_t> before = Owners(*four);
  std::vector<size_t> after = Owners(*five);
  int moved = 0;
  for (int i = 0; i < kKeys; ++i) {
    if (before[i] == after[i]) continue;
    ++moved;
    EXPECT_EQ(after[i], 4u) << "key " << i << " moved between old servers";
  }
  EXPECT_GE(moved, kKeys * 12 / 100);
  EXPECT_LE(moved, kKeys * 28 / 100);
}

TEST(PlacementTest, RemovingAServerMovesOnlyItsKeys) {
  std::vector<std::string> names = Servers(5);
  auto five = Placement::Create(names);
  std::vector<std::string> without = names;
  without.erase(without.begin() + 2);
  auto four = Placement::Create(without);
  ASSERT_TRUE(five.ok() && four.ok());
  int moved = 0;
  for (int i = 0; i < kKeys; ++i) {
    const std::string& old_owner = five->name(five->ServerFor(KeyOf(i)));
    const std::string& new_owner = four->name(four->ServerFor(KeyOf(i)));
    if (old_owner == names[2]) {
      ++moved;
    } else {
      EXPECT_EQ(old_owner, new_owner) << "key " << i << " moved off a server that stayed";
    }
  }
  EXPECT_GT(moved, 0);
}

TEST(CanonicalServerIdTest, NamesAndNumericSpellingsOfOneAddressAgree) {
  bool resolved = false;
  EXPECT_EQ(CanonicalServerId("127.0.0.1", 9900, &resolved), "127.0.0.1:9900");
  EXPECT_TRUE(resolved);
  EXPECT_EQ(CanonicalServerId("localhost", 9900), "127.0.0.1:9900");  // IPv4 preferred over ::1
  EXPECT_EQ(CanonicalServerId("LocalHost", 9900), "127.0.0.1:9900");
  EXPECT_EQ(CanonicalServerId("::1", 1), "[::1]:1");
  EXPECT_EQ(CanonicalServerId("0:0:0:0:0:0:0:1", 1), "[::1]:1");
  EXPECT_EQ(CanonicalServerId("Host-That-Does-Not-Exist.invalid", 7, &resolved), "host-that-does-not-exist.invalid:7");
  EXPECT_FALSE(resolved);
}

TEST(PlacementTest, TwoSpellingsOfOneServerAreListedTwice) {
  auto p = Placement::Create({"localhost:1", "127.0.0.1:1"}, {"127.0.0.1:1", "127.0.0.1:1"});
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("'127.0.0.1:1' is listed twice (as 'localhost:1'"), std::string::npos)
      << p.status().ToString();
}

// Shares of `p` over kWeightedKeys keys.
constexpr int kWeightedKeys = 200'000;
std::vector<double> Shares(const Placement& p) {
  std::vector<double> share(p.size());
  for (int i = 0; i < kWeightedKeys; ++i) share[p.ServerFor(KeyOf(i))] += 1.0 / kWeightedKeys;
  return share;
}

TEST(WeightedPlacementTest, ADoubleWeightServerGetsTwiceTheKeys) {
  auto p = Placement::Create(Servers(3), Servers(3), {1, 1, 2});
  ASSERT_TRUE(p.ok());
  std::vector<double> share = Shares(*p);
  EXPECT_NEAR(share[0], 0.25, 0.02);
  EXPECT_NEAR(share[1], 0.25, 0.02);
  EXPECT_NEAR(share[2], 0.50, 0.02);
  EXPECT_DOUBLE_EQ(p->share(2), 0.5);
  EXPECT_EQ(p->weight(2), 2u);
}

TEST(WeightedPlacementTest, EqualWeightsPlaceAsUnweighted) {
  auto plain = Placement::Create(Servers(4));
  auto weighted = Placement::Create(Servers(4), Servers(4), {7, 7, 7, 7});
  ASSERT_TRUE(plain.ok() && weighted.ok());
  for (int i = 0; i < 10'000; ++i) EXPECT_EQ(plain->ServerFor(KeyOf(i)), weighted->ServerFor(KeyOf(i)));
  EXPECT_EQ(weighted->weight(0), 1u);
}

TEST(WeightedPlacementTest, AJoinMovesOnlyItsWeightedShareToIt) {
  std::vector<std::string> names = Servers(4);
  auto before = Placement::Create(Servers(3), Servers(3), {1, 1, 2});
  auto after = Placement::Create(names, names, {1, 1, 2, 4});  // the joiner owns 4/8
  ASSERT_TRUE(before.ok() && after.ok());
  int moved = 0;
  for (int i = 0; i < kWeightedKeys; ++i) {
    const size_t a = before->ServerFor(KeyOf(i));
    const size_t b = after->ServerFor(KeyOf(i));
    if (a == b) continue;
    ++moved;
    ASSERT_EQ(b, 3u) << "key " << i << " moved between servers that stayed";
  }
  EXPECT_NEAR(static_cast<double>(moved) / kWeightedKeys, 0.5, 0.02);
}

TEST(WeightedPlacementTest, ALeaveMovesOnlyItsKeysAndOrderDoesNotMatter) {
  std::vector<std::string> names = Servers(4);
  std::vector<uint64_t> weights = {1, 3, 2, 2};
  auto all = Placement::Create(names, names, weights);
  std::vector<std::string> reversed(names.rbegin(), names.rend());
  auto all_reversed = Placement::Create(reversed, reversed, std::vector<uint64_t>(weights.rbegin(), weights.rend()));
  std::vector<std::string> without = {names[0], names[2], names[3]};
  auto rest = Placement::Create(without, without, {1, 2, 2});
  ASSERT_TRUE(all.ok() && all_reversed.ok() && rest.ok());
  int moved = 0;
  for (int i = 0; i < kWeightedKeys; ++i) {
    const std::string& owner = all->name(all->ServerFor(KeyOf(i)));
    ASSERT_EQ(owner, all_reversed->name(all_reversed->ServerFor(KeyOf(i))));
    const std::string& now = rest->name(rest->ServerFor(KeyOf(i)));
    if (owner == names[1]) {
      ++moved;
      // Its keys go where its rendezvous order says next.
      ASSERT_EQ(now, all->name(all->Order(KeyOf(i))[1]));
    } else {
      ASSERT_EQ(owner, now) << "key " << i << " moved off a server that stayed";
    }
  }
  EXPECT_NEAR(static_cast<double>(moved) / kWeightedKeys, 3.0 / 8, 0.02);
}

TEST(WeightedPlacementTest, OrderStartsWithTheOwnerAndNamesEveryServerOnce) {
  auto p = Placement::Create(Servers(5), Servers(5), {1, 2, 3, 4, 5});
  ASSERT_TRUE(p.ok());
  for (int i = 0; i < 1000; ++i) {
    std::vector<size_t> order = p->Order(KeyOf(i));
    ASSERT_EQ(order.size(), 5u);
    EXPECT_EQ(order.front(), p->ServerFor(KeyOf(i)));
    std::sort(order.begin(), order.end());
    EXPECT_EQ(order, (std::vector<size_t>{0, 1, 2, 3, 4}));
  }
  EXPECT_EQ(Placement::Create({"a:1"}, {"a:1"}, {0}).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace memkv::client
