// Key listing (the List opcode, Client::ListKeys, memkv ls): every key under
// a prefix exactly once, in bytewise order, a page at a time, from one server
// or merged over several; in memory mode and from the drives in file mode.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "tests/harness.h"

namespace memkv::testing {
namespace {

// Every key under `prefix`, walking pages of `page_size`; fails the test on
// an error or a page larger than asked.
std::vector<std::string> ListAll(Client& client, const std::string& prefix, size_t page_size, size_t* pages) {
  std::vector<std::string> all;
  std::string cursor;
  *pages = 0;
  do {
    Result<KeyListPage> page = client.ListKeys(prefix, cursor, page_size);
    EXPECT_TRUE(page.ok()) << page.status().ToString();
    if (!page.ok()) break;
    EXPECT_LE(page->keys.size(), page_size);
    all.insert(all.end(), page->keys.begin(), page->keys.end());
    cursor = page->next_cursor;
    ++*pages;
  } while (!cursor.empty() && *pages < 100000);
  return all;
}

// Stores `count` small values under prefix/NNNNN (in batches of 16, which a
// file-mode server's 32-chunk pool takes at once) and returns the keys sorted.
std::vector<std::string> PutKeys(Client& client, const std::string& prefix, int count) {
  std::vector<std::string> keys;
  for (int i = 0; i < count; ++i) keys.push_back(prefix + std::to_string(100000 + i * 7919 % 100000));
  const std::vector<uint8_t> value = Pattern(100, 1);
  for (size_t start = 0; start < keys.size(); start += 16) {
    const size_t end = std::min(keys.size(), start + 16);
    std::vector<std::string_view> batch(keys.begin() + start, keys.begin() + end);
    std::vector<std::span<const uint8_t>> values(batch.size(), value);
    BatchResult r = client.BatchPut(batch, values);
    for (const Status& s : r.statuses) EXPECT_TRUE(s.ok()) << s.ToString();
  }
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  return keys;
}

class ListKeysTest : public ::testing::TestWithParam<bool> {
 protected:
  bool file_mode() const { return GetParam(); }
  ServerSpec Spec() {
    if (file_mode()) return FileModeSpec(dir_.path(), 2, "128 MiB", "32 MiB");
    ServerSpec spec;
    spec.memory_block_size = "4 KiB";
    return spec;
  }
  TempDir dir_;
};

TEST_P(ListKeysTest, EveryKeyUnderThePrefixOnceInOrderAcrossPages) {
  ServerProcess server;
  ASSERT_TRUE(server.Start(Spec()).ok()) << server.Stderr();
  auto client = ClientFor({&server});
  // File mode: a value takes a 1 MiB extent of 2 x 128 MiB drives (less the
  // journals), so fewer keys.
  const int count = file_mode() ? 100 : 2500;
  const std::vector<std::string> a = PutKeys(*client, "list/a/", count);
  const std::vector<std::string> b = PutKeys(*client, "list/b/", 10);
  size_t pages = 0;
  EXPECT_EQ(ListAll(*client, "list/a/", 64, &pages), a);
  EXPECT_EQ(pages, (a.size() + 63) / 64);
  EXPECT_EQ(ListAll(*client, "list/b/", 1024, &pages), b);
  EXPECT_EQ(pages, 1u);
  std::vector<std::string> both = a;
  both.insert(both.end(), b.begin(), b.end());
  EXPECT_EQ(ListAll(*client, "", 1000, &pages), both) << "an empty prefix lists every key";
  EXPECT_TRUE(ListAll(*client, "list/c/", 10, &pages).empty());

  // A cursor is a place in the order, not in the server's memory: keys
  // deleted behind it or ahead of it do not disturb the walk.
  Result<KeyListPage> first = client->ListKeys("list/a/", "", 10);
  ASSERT_TRUE(first.ok());
  ASSERT_EQ(first->keys.size(), 10u);
  ASSERT_TRUE(client->Delete(a[0]).ok());
  ASSERT_TRUE(client->Delete(a[10]).ok());
  Result<KeyListPage> second = client->ListKeys("list/a/", first->next_cursor, 10);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->keys, std::vector<std::string>(a.begin() + 11, a.begin() + 21));
}

TEST_P(ListKeysTest, FileModeListsWhatOnlyTheDrivesHoldAfterARestart) {
  if (!file_mode()) GTEST_SKIP() << "file mode only";
  std::vector<std::string> keys;
  ServerSpec spec = Spec();
  {
    ServerProcess first;
    ASSERT_TRUE(first.Start(spec).ok()) << first.Stderr();
    auto client = ClientFor({&first});
    keys = PutKeys(*client, "durable/", 40);
    ASSERT_EQ(first.Stop(), 0);
  }
  ServerProcess second;
  ASSERT_TRUE(second.Start(spec).ok()) << second.Stderr();
  auto client = ClientFor({&second});
  size_t pages = 0;
  EXPECT_EQ(ListAll(*client, "durable/", 16, &pages), keys);
}

INSTANTIATE_TEST_SUITE_P(Modes, ListKeysTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& p) { return p.param ? "File" : "Memory"; });

TEST(ListKeysClusterTest, PagesOfSeveralServersMergeIntoOneOrderAndADownServerFailsTheCall) {
  ServerSpec spec;
  spec.memory_block_size = "4 KiB";
  ServerProcess s1, s2, s3;
  for (ServerProcess* s : {&s1, &s2, &s3}) ASSERT_TRUE(s->Start(spec).ok()) << s->Stderr();
  auto client = ClientFor({&s1, &s2, &s3});
  const std::vector<std::string> keys = PutKeys(*client, "cluster/", 700);
  std::set<size_t> owners;
  for (const std::string& k : keys) owners.insert(client->ServerFor(k));
  ASSERT_EQ(owners.size(), 3u) << "the keys should spread over the servers";
  for (size_t page_size : {1u, 7u, 100u, 1024u}) {
    size_t pages = 0;
    EXPECT_EQ(ListAll(*client, "cluster/", page_size, &pages), keys) << "page_size " << page_size;
  }
  s2.Kill();
  Result<KeyListPage> page = client->ListKeys("cluster/", "", 100);
  ASSERT_FALSE(page.ok());
  EXPECT_EQ(page.status().code(), StatusCode::kUnavailable) << page.status().ToString();
  EXPECT_NE(page.status().message().find(s2.address()), std::string::npos) << page.status().ToString();
}

TEST(ListKeysArgumentsTest, PageSizePrefixAndCursorAreChecked) {
  ServerProcess server;
  ASSERT_TRUE(server.Start().ok());
  auto client = ClientFor({&server});
  for (size_t bad : {size_t{0}, size_t{1025}}) {
    Result<KeyListPage> r = client->ListKeys("", "", bad);
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("allowed: 1..1024"), std::string::npos) << r.status().ToString();
  }
  EXPECT_EQ(client->ListKeys(std::string(1025, 'p'), "", 10).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(client->ListKeys("", std::string(1025, 'c'), 10).status().code(), StatusCode::kInvalidArgument);
}

TEST(ListKeysCliTest, LsPrintsEveryKeyUnderThePrefixOnePerLine) {
  ServerSpec spec;
  spec.memory_block_size = "4 KiB";
  ServerProcess server;
  ASSERT_TRUE(server.Start(spec).ok());
  auto client = ClientFor({&server});
  const std::vector<std::string> keys = PutKeys(*client, "ls/", 1500);  // two pages of the CLI's 1000
  PutKeys(*client, "other/", 3);
  const std::map<std::string, std::string> env = {{"MEMKV_SERVERS", server.address()},
                                                   {"MEMKV_AUTH_KEY", kTestKeyHex}};
  CommandResult r = RunMemkv({"ls", "ls/"}, env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string want;
  for (const std::string& k : keys) want += k + "\n";
  EXPECT_EQ(r.out, want);
  r = RunMemkv({"ls", "nothing/"}, env);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "");
  r = RunMemkv({"ls", "a", "b"}, env);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("at most one PREFIX"), std::string::npos) << r.err;
}

// A fleet of two with one server stopped: ls prints the keys of the server
// it reached, names the one it could not list on stderr, and exits 4 (not 0
// with a list that silently lacks a server's keys). A server that holds
// another key is named too, as refusing the client's key (exit 5).
TEST(ListKeysCliTest, LsWithAServerOfTheFleetDownPrintsTheRestNamesItAndExitsFour) {
  ServerSpec spec;
  spec.memory_block_size = "4 KiB";
  // A fixed port for the server that stops, so that the same address comes
  // back later served with another key.
  ServerSpec down_spec = spec;
  down_spec.port = FreeServerPort();
  ASSERT_NE(down_spec.port, 0);
  ServerProcess up, down;
  ASSERT_TRUE(up.Start(spec).ok()) << up.Stderr();
  ASSERT_TRUE(down.Start(down_spec).ok()) << down.Stderr();
  std::vector<std::string> on_up;
  {
    auto client = ClientFor({&up, &down});
    const std::vector<std::string> keys = PutKeys(*client, "fleet/", 40);
    for (const std::string& k : keys) {
      if (client->ServerFor(k) == 0) on_up.push_back(k);
    }
    ASSERT_FALSE(on_up.empty());
    ASSERT_LT(on_up.size(), keys.size()) << "both servers must hold keys";
  }
  const std::string down_address = down.address();
  EXPECT_EQ(down.Stop(), 0);
  std::map<std::string, std::string> env = {{"MEMKV_SERVERS", up.address() + "," + down_address},
                                            {"MEMKV_AUTH_KEY", kTestKeyHex},
                                            {"MEMKV_CONNECT_TIMEOUT_MS", "2000"}};
  CommandResult r = RunMemkv({"ls", "fleet/"}, env);
  EXPECT_EQ(r.exit_code, 4) << r.err;
  std::string want;
  for (const std::string& k : on_up) want += k + "\n";
  EXPECT_EQ(r.out, want) << "the keys of the server that answered, and only those";
  EXPECT_NE(r.err.find("server " + down_address + " could not be listed"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find(up.address()), std::string::npos) << r.err;

  // The same address now served with another key: refused, exit 5.
  ServerSpec other_key = down_spec;
  other_key.auth_key_hex = std::string(64, 'e');
  ServerProcess refusing;
  ASSERT_TRUE(refusing.Start(other_key).ok()) << refusing.Stderr();
  r = RunMemkv({"ls", "fleet/"}, env);
  EXPECT_EQ(r.exit_code, 5) << r.err;
  EXPECT_EQ(r.out, want);
  EXPECT_NE(r.err.find("server " + down_address + " could not be listed"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("auth key differs from the server's"), std::string::npos) << r.err;

  // Every server up and holding the key: the whole list, exit 0.
  env["MEMKV_SERVERS"] = up.address();
  r = RunMemkv({"ls", "fleet/"}, env);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, want);
  EXPECT_EQ(r.err, "");
}

}  // namespace
}  // namespace memkv::testing
