#include "client/placement.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace memkv::client
