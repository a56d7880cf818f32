// tenants[] in the server config: the fields, keys from files, and every
// rule across tenants, each problem one line naming the field (and never a
// key's bytes).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/units.h"
#include "config/config_test_util.h"
#include "config/server_config.h"

namespace memkv::config {
namespace {

using testing::CountLinesWith;
using testing::HasLineWith;
using testing::ProblemLines;
using testing::TempFile;

const std::string kA(64, 'a');
const std::string kB(64, 'b');
const std::string kC(64, 'c');
const std::string kD(64, 'd');
const std::string kE(64, 'e');

Result<ServerConfig> Parse(const std::string& tenants) {
  return ParseServerConfig("storage:\n  mode: memory\ntenants:\n" + tenants, "test.yaml");
}

std::string Item(const std::string& name, const std::string& prefix, const std::string& key_line) {
  return "  - name: " + name + "\n    prefix: \"" + prefix + "\"\n" + key_line;
}
std::string Key(const std::string& hex) { return "    key: \"" + hex + "\"\n"; }

bool NoKeyShown(const std::vector<std::string>& lines) {
  for (const std::string& line : lines) {
    for (const std::string* key : {&kA, &kB, &kC, &kD, &kE}) {
      if (line.find(*key) != std::string::npos) return false;
    }
  }
  return true;
}

TEST(TenantsConfigTest, EveryFieldIsRead) {
  Result<ServerConfig> c = Parse(Item("team-a", "team-a/", Key(kA)) + "    next_key: \"" + kB +
                                 "\"\n    read_only: true\n    rdma: true\n    dram_quota: 8GiB\n"
                                 "    drive_quota: 100GiB\n    max_connections: 64\n"
                                 "    events_publish: tcp://127.0.0.1:5571\n"
                                 "    events_replay: tcp://127.0.0.1:5572\n" +
                                 Item("team_b-2", "b/", Key(kC)));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_EQ(c->tenants.size(), 2u);
  const TenantConfig& a = c->tenants[0];
  EXPECT_EQ(a.name, "team-a");
  EXPECT_EQ(a.prefix, "team-a/");
  EXPECT_EQ(a.key, std::vector<uint8_t>(32, 0xaa));
  EXPECT_EQ(a.next_key, std::vector<uint8_t>(32, 0xbb));
  EXPECT_TRUE(a.read_only);
  EXPECT_TRUE(a.rdma);
  EXPECT_EQ(a.dram_quota_bytes, 8 * kGiB);
  EXPECT_EQ(a.drive_quota_bytes, 100 * kGiB);
  EXPECT_EQ(a.max_connections, 64u);
  EXPECT_EQ(a.events_publish, "tcp://127.0.0.1:5571");
  EXPECT_EQ(a.events_replay, "tcp://127.0.0.1:5572");
  const TenantConfig& b = c->tenants[1];
  EXPECT_FALSE(b.read_only);
  EXPECT_FALSE(b.rdma);
  EXPECT_TRUE(b.next_key.empty());
  EXPECT_EQ(b.dram_quota_bytes, 0u);
  EXPECT_EQ(b.max_connections, 0u) << "no limit unless given";

  TenantMap map = TenantMapOf(c->tenants);
  ASSERT_EQ(map.size(), 2u);
  EXPECT_EQ(map.Find("team-a/x"), 0u);
  EXPECT_EQ(map.Find("b/x"), 1u);
  EXPECT_EQ(map[0].dram_quota_bytes, 8 * kGiB);
  EXPECT_EQ(map[0].drive_quota_bytes, 100 * kGiB);
}

TEST(TenantsConfigTest, KeysFromFilesRawOrHex) {
  TempFile hex("\n" + kA + "\n");
  TempFile raw(std::string(32, '\x07'));
  Result<ServerConfig> c = Parse(Item("a", "a/", "    key_file: " + hex.path() + "\n") +
                                 Item("b", "b/", Key(kB)) + "    next_key_file: " + raw.path() + "\n");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->tenants[0].key, std::vector<uint8_t>(32, 0xaa));
  EXPECT_EQ(c->tenants[1].next_key, std::vector<uint8_t>(32, 0x07));

  TempFile junk("not a key");
  std::vector<std::string> lines = ProblemLines(Parse(Item("a", "a/", "    key_file: /nonexistent/key\n") +
                                                      Item("b", "b/", "    key_file: " + junk.path() + "\n")));
  EXPECT_TRUE(HasLineWith(lines, {"tenants[0].key_file", "/nonexistent/key"}));
  EXPECT_TRUE(HasLineWith(lines, {"tenants[1].key_file", junk.path(), "64 hex"}));
  EXPECT_EQ(CountLinesWith(lines, {"not a key"}), 0u) << "the file's bytes are not shown";
}

TEST(TenantsConfigTest, EachItemsProblemsAreLinesOfTheirOwn) {
  std::vector<std::string> lines = ProblemLines(
      Parse("  - name: Team A\n    prefix: \"\"\n    key: \"xyz\"\n"                 // bad name, prefix, key
            "  - prefix: \"p/\"\n"                                                  // no name, no key
            "  - name: c\n    key: \"" + kC + "\"\n    key_file: /x\n"               // no prefix, two keys
            "  - name: d\n    prefix: \"" + std::string(257, 'p') + "\"\n" + Key(kB) +  // prefix too long
            "    next_key: \"" + std::string(63, '1') + "\"\n    colour: red\n"
            "  - name: e\n    prefix: \"e/\"\n" + Key(kD) + "    events_publish: udp://x:1\n"  // not tcp://
            "  - name: f\n    prefix: \"f/\"\n" + Key(kE) + "    events_replay: tcp://127.0.0.1:1\n"  // no publish
            "  - name: g\n    prefix: \"g/\"\n" + Key(std::string(64, '1')) + "    max_connections: 0\n"
            "  - name: h\n    prefix: \"h/\"\n" + Key(std::string(64, '2')) + "    max_connections: many\n"));
  EXPECT_TRUE(HasLineWith(lines, {"tenants[0].name", "'Team A'", "a-z, 0-9"}));
  EXPECT_TRUE(HasLineWith(lines, {"tenants[0].prefix", "0 bytes", "1..256"}));
  EXPECT_TRUE(HasLineWith(lines, {"tenants[0].key", "3 characters", "64 hex"}));
  EXPECT_TRUE(HasLineWith(lines, {"tenants[1].name", "missing"}));
  EXPECT_TRUE(HasLineWith(lines, {"tenants[1].key", "missing", "key_file"}));
  EXPECT_TRUE(HasLineWith(lines, {"tenants[2].prefix", "missing"}));
  EXPECT_TRUE(HasLineWith(lines, {"tenants[2].key", "both given"}));
  EXPECT_TRUE(HasLineWith(lines, {"tenants[3].prefix", "257 bytes", "1..256"}));
  EXPECT_TRUE(HasLineWith(lines, {"tenants[3].next_key", "63 characters"}));
  EXPECT_TRUE(HasLineWith(lines, {"tenants[3]", "colour"}));
  EXPECT_TRUE(HasLineWith(lines, {"tenants[4].events_publish", "udp://x:1", "tcp://HOST:PORT"}));
  EXPECT_TRUE(HasLineWith(lines, {"tenants[5].events_replay", "without", "events_publish"}));
  EXPECT_TRUE(HasLineWith(lines, {"tenants[6].max_connections", "0", "1..1000000", "leave it out"}));
  EXPECT_TRUE(HasLineWith(lines, {"tenants[7].max_connections", "many", "1..1000000"}));
  EXPECT_TRUE(NoKeyShown(lines));
}

TEST(TenantsConfigTest, NamesPrefixesAndKeysMustNotClash) {
  std::vector<std::string> lines = ProblemLines(ParseServerConfig(
      "storage:\n  mode: memory\nnetwork:\n  auth_key: \"" + kC + "\"\ntenants:\n" +
          Item("team-a", "team-a/", Key(kA)) +            // 0
          Item("team-a", "team-b/", Key(kB)) +            // 1: the same name
          Item("wide", "team-", Key(kC)) +                // 2: overlaps 0 and 1; the administrator's key
          Item("d", "d/", Key(std::string(64, 'd'))) + "    next_key: \"" + kA + "\"\n",  // 3: A's key again
      "test.yaml"));
  EXPECT_TRUE(HasLineWith(lines, {"tenants[1].name", "'team-a'", "tenants[0]", "unique"}));
  EXPECT_TRUE(HasLineWith(lines, {"tenants[2].prefix", "'team-'", "wide", "'team-a/'", "team-a", "disjoint"}));
  EXPECT_TRUE(HasLineWith(lines, {"tenants[2].prefix", "'team-b/'"}));
  EXPECT_TRUE(HasLineWith(lines, {"tenants[2].key", "network.auth_key", "administrator"}));
  EXPECT_TRUE(HasLineWith(lines, {"tenants[3].next_key", "tenants[0].key", "tenant team-a"}));
  EXPECT_TRUE(NoKeyShown(lines));
}

TEST(TenantsConfigTest, AtMost1024Tenants) {
  std::string items;
  for (int i = 0; i < 1025; ++i) {
    char hex[65];
    std::snprintf(hex, sizeof(hex), "%064x", i + 1);
    items += Item("t" + std::to_string(i), "p" + std::to_string(i) + "/", Key(hex));
  }
  EXPECT_TRUE(HasLineWith(ProblemLines(Parse(items)), {"tenants", "1025 tenants", "at most 1024"}));
}

}  // namespace
}  // namespace memkv::config
