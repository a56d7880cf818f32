#include "kvstore/uri.h"

#include <gtest/gtest.h>

namespace memkv::kvstore {
namespace {

TEST(StoreUriTest, OneServerAndNamespace) {
  Result<StoreUri> u = ParseStoreUri("memkv://127.0.0.1:9900/llama");
  ASSERT_TRUE(u.ok()) << u.status().ToString();
  EXPECT_EQ(u->servers, std::vector<std::string>{"127.0.0.1:9900"});
  EXPECT_EQ(u->name_space, "llama");
}

TEST(StoreUriTest, SeveralServersNestedNamespaceTrailingSlash) {
  Result<StoreUri> u = ParseStoreUri("memkv://a.example:1,[::1]:9900,10.0.0.2:65535/omlx/mlx-community/Llama-3.2-1B/");
  ASSERT_TRUE(u.ok()) << u.status().ToString();
  EXPECT_EQ(u->servers, (std::vector<std::string>{"a.example:1", "[::1]:9900", "10.0.0.2:65535"}));
  EXPECT_EQ(u->name_space, "omlx/mlx-community/Llama-3.2-1B");
}

TEST(StoreUriTest, SchemeIsCaseInsensitive) {
  EXPECT_TRUE(ParseStoreUri("MemKV://h:1/ns").ok());
}

// Each bad URI is refused with a message that names the problem and, always,
// the form that is allowed.
TEST(StoreUriTest, BadUrisNameTheProblem) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "the scheme must be memkv://"},
      {"http://h:1/ns", "the scheme must be memkv://"},
      {"memkv://h:1", "no namespace"},
      {"memkv://h:1/", "namespace after the servers is empty"},
      {"memkv:///ns", "there are no servers"},
      {"memkv://h/ns", "server 'h' has no port"},
      {"memkv://h:0/ns", "port must be a decimal number in 1..65535"},
      {"memkv://h:65536/ns", "port must be a decimal number in 1..65535"},
      {"memkv://h:x/ns", "port must be a decimal number"},
      {"memkv://:1/ns", "has no host"},
      {"memkv://h:1,,g:2/ns", "an empty server entry"},
      {"memkv://h:1,/ns", "an empty server entry"},
      {"memkv://u@h:1/ns", "user information"},
      {"memkv://::1:9900/ns", "IPv6 host needs brackets"},
      {"memkv://h:1/a//b", "empty segment"},
      {"memkv://h:1/a b", "holds ' '"},
      {"memkv://h:1/a%20b", "holds '%'"},
      {"memkv://h:1/ns?x=1", "a query"},
      {"memkv://h:1/ns#f", "a fragment"},
      {"memkv://h:1/" + std::string(kMaxNamespaceBytes + 1, 'n'), "more than the 256 allowed"},
  };
  for (const auto& [uri, why] : cases) {
    Result<StoreUri> u = ParseStoreUri(uri);
    ASSERT_FALSE(u.ok()) << uri;
    EXPECT_EQ(u.status().code(), StatusCode::kInvalidArgument) << uri;
    EXPECT_NE(u.status().message().find(why), std::string::npos) << uri << ": " << u.status().message();
    EXPECT_NE(u.status().message().find("expected memkv://host:port[,host:port...]/namespace"), std::string::npos)
        << u.status().message();
  }
}

TEST(StoreUriTest, KeysOfChunksAndManifestsAreApart) {
  const uint8_t hash[] = {0x00, 0x1f, 0xa0, 0xff};
  EXPECT_EQ(ChunkKey("ns/x", hash), "ns/x/c/001fa0ff");
  EXPECT_EQ(ManifestKey("ns/x", "slot-0"), "ns/x/m/slot-0");
  // The longest hash, name and namespace still make a MemKV key (1024 bytes).
  const std::string ns(kMaxNamespaceBytes, 'n');
  EXPECT_LE(ChunkKey(ns, std::vector<uint8_t>(kMaxHashBytes, 1)).size(), 1024u);
  EXPECT_LE(ManifestKey(ns, std::string(kMaxManifestNameBytes, 'm')).size(), 1024u);
}

}  // namespace
}  // namespace memkv::kvstore
