#include "preload/paths.h"

#include <gtest/gtest.h>

namespace memkv::preload {
namespace {

TEST(NormalizePath, CollapsesComponents) {
  EXPECT_EQ(NormalizePath("/a//b/./c/", "/x"), "/a/b/c");
  EXPECT_EQ(NormalizePath("/a/b/../c", "/x"), "/a/c");
  EXPECT_EQ(NormalizePath("/../a", "/x"), "/a");
  EXPECT_EQ(NormalizePath("b/c", "/x/y"), "/x/y/b/c");
  EXPECT_EQ(NormalizePath("../c", "/x/y"), "/x/c");
  EXPECT_EQ(NormalizePath("/", "/x"), "/");
  EXPECT_EQ(NormalizePath("", "/x"), "/x");
}

TEST(Prefixes, MatchesPrefixAndBelowOnly) {
  std::vector<std::string> rejected;
  Prefixes prefixes = Prefixes::Parse("/mnt/kv/:relative::/:/other//p", &rejected);
  EXPECT_EQ(rejected, (std::vector<std::string>{"relative", "/"}));
  std::string key;
  ASSERT_TRUE(prefixes.Match("/mnt/kv", &key));
  EXPECT_EQ(key, "");
  ASSERT_TRUE(prefixes.Match("/mnt/kv/a/b.bin", &key));
  EXPECT_EQ(key, "a/b.bin");
  ASSERT_TRUE(prefixes.Match("/other/p/x", &key));
  EXPECT_EQ(key, "x");
  EXPECT_FALSE(prefixes.Match("/mnt/kv2/a", &key));
  EXPECT_FALSE(prefixes.Match("/mnt", &key));
  EXPECT_FALSE(prefixes.Match("/tmp/a", &key));
}

TEST(Prefixes, MatchNamesWhichPrefix) {
  Prefixes prefixes = Prefixes::Parse("/mnt/kv:/other//p");
  ASSERT_EQ(prefixes.size(), 2u);
  EXPECT_EQ(prefixes.at(1), "/other/p");
  std::string key;
  size_t index = 9;
  ASSERT_TRUE(prefixes.Match("/other/p/x", &key, &index));
  EXPECT_EQ(index, 1u);
  ASSERT_TRUE(prefixes.Match("/mnt/kv/y", &key, &index));
  EXPECT_EQ(index, 0u);
}

TEST(Prefixes, EmptySpecMatchesNothing) {
  Prefixes prefixes = Prefixes::Parse("");
  EXPECT_TRUE(prefixes.empty());
  std::string key;
  EXPECT_FALSE(prefixes.Match("/a", &key));
}

}  // namespace
}  // namespace memkv::preload
