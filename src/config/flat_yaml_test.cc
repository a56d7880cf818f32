#include "config/flat_yaml.h"

#include <gtest/gtest.h>

namespace memkv::config::internal {
namespace {

using Kind = FlatYamlValue::Kind;

std::vector<FlatYamlEntry> ParseOk(std::string_view text) {
  Diagnostics d("c.yaml");
  std::optional<std::vector<FlatYamlEntry>> entries = ParseFlatYaml(text, &d);
  EXPECT_TRUE(entries.has_value()) << d.ToStatus().message();
  return entries.value_or(std::vector<FlatYamlEntry>{});
}

std::string ParseError(std::string_view text) {
  Diagnostics d("c.yaml");
  std::optional<std::vector<FlatYamlEntry>> entries = ParseFlatYaml(text, &d);
  EXPECT_FALSE(entries.has_value()) << text;
  return d.ToStatus().message();
}

TEST(FlatYamlTest, ReadsScalarsFlowAndBlockListsQuotesCommentsAndNulls) {
  std::vector<FlatYamlEntry> e = ParseOk(
      "---\n"
      "# a client config\n"
      "servers: [\"10.0.0.1:9900\", 10.0.0.2:9900 , '[fd00::2]:9900']  # three\n"
      "auth_key: \"00ff\"\r\n"
      "transport:   tcp   \n"
      "rdma_devices:\n"
      "  - mlx5_0\n"
      "  # between entries\n"
      "  - 'it''s'\n"
      "prometheus_bind:\n"
      "log_level: ~\n"
      "empty: []\n"
      "hash: a#b\n"
      "url: http://x:1/y\n");
  ASSERT_EQ(e.size(), 9u);
  EXPECT_EQ(e[0].key, "servers");
  EXPECT_EQ(e[0].line, 2);
  EXPECT_EQ(e[0].value.kind, Kind::kList);
  EXPECT_EQ(e[0].value.items, (std::vector<std::string>{"10.0.0.1:9900", "10.0.0.2:9900", "[fd00::2]:9900"}));
  EXPECT_EQ(e[1].value.items, std::vector<std::string>{"00ff"});
  EXPECT_EQ(e[2].value.kind, Kind::kScalar);
  EXPECT_EQ(e[2].value.items, std::vector<std::string>{"tcp"});
  EXPECT_EQ(e[3].value.kind, Kind::kList);
  EXPECT_EQ(e[3].value.items, (std::vector<std::string>{"mlx5_0", "it's"}));
  EXPECT_EQ(e[3].value.item_lines, (std::vector<int>{6, 8}));
  EXPECT_EQ(e[4].value.kind, Kind::kNull);
  EXPECT_EQ(e[5].value.kind, Kind::kNull);
  EXPECT_EQ(e[6].value.kind, Kind::kList);
  EXPECT_TRUE(e[6].value.items.empty());
  EXPECT_EQ(e[7].value.items, std::vector<std::string>{"a#b"});
  EXPECT_EQ(e[8].value.items, std::vector<std::string>{"http://x:1/y"});
}

TEST(FlatYamlTest, EmptyAndCommentOnlyDocumentsHaveNoEntries) {
  EXPECT_TRUE(ParseOk("").empty());
  EXPECT_TRUE(ParseOk("# nothing\n\n---\n").empty());
}

TEST(FlatYamlTest, AFlowListMayEndWithAComma) {
  std::vector<FlatYamlEntry> e = ParseOk("servers: [a:1, b:2, ]\n");
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].value.items, (std::vector<std::string>{"a:1", "b:2"}));
}

TEST(FlatYamlTest, KeepsDuplicatesForTheCallerToReport) {
  std::vector<FlatYamlEntry> e = ParseOk("a: 1\na: 2\n");
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[1].line, 1);
}

TEST(FlatYamlTest, RefusesWhatAClientConfigDoesNotHoldNamingTheLine) {
  EXPECT_NE(ParseError("rdma:\n  mtu: 1024\n").find("c.yaml:2:3: an indented line (a nested map?)"), std::string::npos);
  EXPECT_NE(ParseError("a: {b: 1}\n").find("c.yaml:1:4: '{'"), std::string::npos);
  EXPECT_NE(ParseError("a: &x 1\n").find("anchor"), std::string::npos);
  EXPECT_NE(ParseError("a: |\n  text\n").find("block scalar"), std::string::npos);
  EXPECT_NE(ParseError("a: 1\n---\nb: 2\n").find("c.yaml:2:1: a second YAML document"), std::string::npos);
  EXPECT_NE(ParseError("- a\n- b\n").find("the document is a list"), std::string::npos);
  EXPECT_NE(ParseError("a: [1, 2\n").find("does not end with ']'"), std::string::npos);
  EXPECT_NE(ParseError("a: \"open\n").find("does not end on its line"), std::string::npos);
  EXPECT_NE(ParseError("a: b: c\n").find("a map where a value belongs"), std::string::npos);
  EXPECT_NE(ParseError("a: [x]\n  - y\n").find("a list entry that belongs to no key"), std::string::npos);
  EXPECT_NE(ParseError("a: 1\n  - y\n").find("belongs to no key"), std::string::npos);
  EXPECT_NE(ParseError("\ta: 1\n").find("a tab in the indentation"), std::string::npos);
  EXPECT_NE(ParseError("just text\n").find("is not followed by ':'"), std::string::npos);
  EXPECT_NE(ParseError("a: \"x\" y\n").find("more text after the value of 'a'"), std::string::npos);
  EXPECT_NE(ParseError("a: [[1]]\n").find("a list inside a list"), std::string::npos);
  EXPECT_NE(ParseError("a: \"\\q\"\n").find("escape"), std::string::npos);
  EXPECT_NE(ParseError("transport:tcp\n").find("'transport:' needs a blank before its value"), std::string::npos);
}

}  // namespace
}  // namespace memkv::config::internal
