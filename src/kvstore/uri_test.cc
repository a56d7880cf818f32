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
      {"memkv://h:1?x=1/ns", "a query"},
      {"memkv://h:1#f", "a fragment"},
      {"memkv://h:1//", "namespace after the servers is empty"},
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

// oMLX appends its model name to the URI's namespace: a local path or a name
// with spaces opens, and keys of the mapped namespace stay apart from those
// of any other name.
TEST(StoreUriTest, ModelNamesThatArePathsOrHoldSpacesOpen) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"memkv://h:1/omlx//Users/me/models/Qwen3", "omlx/%2FUsers/me/models/Qwen3"},
      {"memkv://h:1/omlx/My Model (4bit)", "omlx/My%20Model%20%284bit%29"},
      {"memkv://h:1//abs", "%2Fabs"},
      {"memkv://h:1/a///b/", "a/%2F%2Fb"},
      {"memkv://h:1/100%", "100%25"},
      {"memkv://h:1/ns?x#f", "ns%3Fx%23f"},
      {"memkv://h:1/C:\\models\\qwen#3?", "C:%5Cmodels%5Cqwen%233%3F"},
      {"memkv://h:1/what?=x/a?b c", "what%3F=x/a%3Fb%20c"},
      {"memkv://h:1/caf\xc3\xa9\t", "caf%C3%A9%09"},
      {"memkv://h:1/omlx/mlx-community/Llama-3.2-1B", "omlx/mlx-community/Llama-3.2-1B"},
  };
  for (const auto& [uri, key_form] : cases) {
    Result<StoreUri> u = ParseStoreUri(uri);
    ASSERT_TRUE(u.ok()) << uri << ": " << u.status().ToString();
    EXPECT_EQ(u->name_space, key_form) << uri;
    EXPECT_EQ(u->name_space.find("//"), std::string::npos) << uri;
  }
}

// The mapping is reversible: percent-decoding the key form gives the namespace back.
TEST(StoreUriTest, KeyFormDecodesToTheNamespace) {
  auto decode = [](const std::string& form) {
    std::string out;
    for (size_t i = 0; i < form.size(); ++i) {
      if (form[i] == '%') {
        out.push_back(static_cast<char>(std::stoi(form.substr(i + 1, 2), nullptr, 16)));
        i += 2;
      } else {
        out.push_back(form[i]);
      }
    }
    return out;
  };
  for (std::string ns : {"/Users/me/models/Qwen3", "a b", "a//b", "%41", "x/%2F", "\x01\xff/\x7f"}) {
    EXPECT_EQ(decode(NamespaceKeyForm(ns)), ns) << ns;
  }
  // Names that differ only where one is escaped stay apart.
  EXPECT_NE(NamespaceKeyForm("a b"), NamespaceKeyForm("a%20b"));
  EXPECT_NE(NamespaceKeyForm("a//b"), NamespaceKeyForm("a/%2Fb"));
}

// A key form over 256 bytes is cut (never inside an escape) and ends in '~'
// and 16 hex digits of the whole name's hash; two long names stay apart.
TEST(StoreUriTest, LongNamespacesEndInAHash) {
  const std::string long_path = "/Users/me/" + std::string(300, 'x');
  const std::string a = NamespaceKeyForm(long_path);
  const std::string b = NamespaceKeyForm(long_path + "y");
  EXPECT_EQ(a.size(), kMaxNamespaceBytes);
  EXPECT_EQ(a.substr(0, 14), "%2FUsers/me/xx");
  EXPECT_EQ(a[kMaxNamespaceBytes - 17], '~');
  EXPECT_NE(a, b);
  EXPECT_EQ(a, NamespaceKeyForm(long_path));  // stable
  for (size_t pad = 0; pad < 3; ++pad) {       // the cut lands before, inside and after an escape
    const std::string spaces = std::string(230 + pad, 'n') + std::string(40, ' ');
    const std::string form = NamespaceKeyForm(spaces);
    EXPECT_LE(form.size(), kMaxNamespaceBytes);
    const size_t tilde = form.rfind('~');
    ASSERT_NE(tilde, std::string::npos);
    EXPECT_EQ(form.size() - tilde, 17u);
    for (size_t i = 0; i < tilde; ++i) {
      if (form[i] == '%') {
        EXPECT_LE(i + 3, tilde) << "an escape split at " << i;
      }
    }
  }
  Result<StoreUri> u = ParseStoreUri("memkv://h:1/" + std::string(kMaxNamespaceBytes + 1, 'n'));
  ASSERT_TRUE(u.ok()) << u.status().ToString();
  EXPECT_EQ(u->name_space.size(), kMaxNamespaceBytes);
}

// The query carries the engine's cache identity: each field once, values
// percent-decoded ('+' is a plus sign), in the URI's order.
TEST(StoreUriTest, QueryCarriesTheIdentity) {
  Result<StoreUri> u = ParseStoreUri(
      "memkv://h:1/omlx/Llama-3.2-1B/?model=meta-llama%2FLlama-3.2-1B&kv_dtype=f16&block_tokens=256&tp_rank=1&"
      "tp_size=2&revision=4e20de3&layout=NHD&engine=llama.cpp&engine_version=b4500+cu12&extra.lora=my%20adapter"
      "&extra.pp_rank=0");
  ASSERT_TRUE(u.ok()) << u.status().ToString();
  EXPECT_EQ(u->name_space, "omlx/Llama-3.2-1B");
  const std::vector<std::pair<std::string, std::string>> want = {
      {"model", "meta-llama/Llama-3.2-1B"}, {"kv_dtype", "f16"},         {"block_tokens", "256"},
      {"tp_rank", "1"},                     {"tp_size", "2"},            {"revision", "4e20de3"},
      {"layout", "NHD"},                    {"engine", "llama.cpp"},     {"engine_version", "b4500+cu12"},
      {"extra.lora", "my adapter"},         {"extra.pp_rank", "0"}};
  EXPECT_EQ(u->identity, want);

  Result<StoreUri> plain = ParseStoreUri("memkv://h:1/ns");
  ASSERT_TRUE(plain.ok());
  EXPECT_TRUE(plain->identity.empty());
  // Only a '?' followed by a name and '=' starts the query.
  Result<StoreUri> odd = ParseStoreUri("memkv://h:1/why?/x?model=a?b");
  ASSERT_TRUE(odd.ok()) << odd.status().ToString();
  EXPECT_EQ(odd->name_space, "why%3F/x");
  EXPECT_EQ(odd->identity, (std::vector<std::pair<std::string, std::string>>{{"model", "a?b"}}));
}

// A wrong query is refused naming the field and, for an unknown one, every
// field allowed.
TEST(StoreUriTest, BadQueriesNameTheField) {
  const std::string allowed =
      "allowed fields: model, revision, kv_dtype, layout, block_tokens, tp_rank, tp_size, engine, engine_version, "
      "extra.NAME";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"memkv://h:1/ns?modle=x", "unknown query field 'modle'; " + allowed},
      {"memkv://h:1/ns?model=x&dtype=f16", "unknown query field 'dtype'; " + allowed},
      {"memkv://h:1/ns?extra.=x", "unknown query field 'extra.'"},
      {"memkv://h:1/ns?model=x&extra.a/b=1", "unknown query field 'extra.a/b'"},
      {"memkv://h:1/ns?model=x&&engine=e", "an empty query field"},
      {"memkv://h:1/ns?model=x&", "an empty query field"},
      {"memkv://h:1/ns?model=x&engine", "query field 'engine' has no value"},
      {"memkv://h:1/ns?model=", "query field 'model' has no value"},
      {"memkv://h:1/ns?model=a&model=b", "query field 'model' is given twice"},
      {"memkv://h:1/ns?model=100%", "query field 'model': a '%' not followed by two hex digits"},
      {"memkv://h:1/ns?model=%zz", "query field 'model': a '%' not followed by two hex digits"},
      {"memkv://h:1/ns?model=a#b", "the query holds a '#' (write it as %23)"},
      {"memkv://h:1/?model=a", "the namespace after the servers is empty"},
  };
  for (const auto& [uri, why] : cases) {
    Result<StoreUri> u = ParseStoreUri(uri);
    ASSERT_FALSE(u.ok()) << uri;
    EXPECT_EQ(u.status().code(), StatusCode::kInvalidArgument) << uri;
    EXPECT_NE(u.status().message().find(why), std::string::npos) << uri << ": " << u.status().message();
    EXPECT_NE(u.status().message().find("expected memkv://host:port[,host:port...]/namespace[?field=value&...]"),
              std::string::npos)
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
