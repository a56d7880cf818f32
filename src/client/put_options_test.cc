// PutWith, BatchPutWith and MatchPrefix against FakeServer, which predates
// them (it answers their opcodes "unknown opcode", as an older MemKV server
// does): the client falls back and remembers it per server.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/bytes.h"
#include "client/fake_server.h"
#include "memkv/client.h"

namespace memkv::client {
namespace {

using client::testing::FakeServer;

using client::testing::TestKey;

std::unique_ptr<Client> MakeClient(std::vector<std::string> servers) {
  ClientOptions o;
  o.servers = std::move(servers);
  o.auth_key_hex = HexEncode(TestKey().data(), TestKey().size());
  o.timeout_ms = 3000;
  o.log_level = ClientLogLevel::kOff;
  auto c = Client::Create(o);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return c.ok() ? std::move(c).value() : nullptr;
}

std::span<const uint8_t> AsSpan(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

struct OldServers {
  std::vector<std::unique_ptr<FakeServer>> servers;
  std::vector<std::string> addresses;
  explicit OldServers(size_t n) {
    for (size_t i = 0; i < n; ++i) {
      servers.push_back(FakeServer::Start(TestKey()));
      addresses.push_back(servers.back()->address());
    }
  }
};

PutOptions SomeOptions() {
  PutOptions o;
  o.ttl_ms = 60'000;
  o.retention = Retention::kPinned;
  o.parent_key = "parent";
  o.block_hash = "hash";
  return o;
}

TEST(MatchPrefixFallbackTest, OldServersAreAskedWithBatchExists) {
  OldServers old(3);
  auto client = MakeClient(old.addresses);
  std::vector<std::string> names;
  for (int i = 0; i < 24; ++i) names.push_back("chain/" + std::to_string(i));
  std::vector<std::string_view> keys(names.begin(), names.end());
  for (size_t hole : {size_t{0}, size_t{7}, size_t{23}, size_t{24}}) {
    for (size_t i = 0; i < keys.size(); ++i) {
      if (i == hole) {
        (void)client->Delete(keys[i]);
      } else {
        ASSERT_TRUE(client->Put(keys[i], AsSpan(names[i])).ok());
      }
    }
    Result<size_t> matched = client->MatchPrefix(keys);
    ASSERT_TRUE(matched.ok()) << matched.status().ToString();
    EXPECT_EQ(*matched, hole) << "hole at " << hole;
  }
}

TEST(MatchPrefixFallbackTest, TheFallbackIsRememberedPerServer) {
  OldServers old(1);
  auto client = MakeClient(old.addresses);
  const std::vector<std::string_view> keys = {"a", "b"};
  ASSERT_TRUE(client->MatchPrefix(keys).ok());
  const int after_first = old.servers[0]->requests_seen();
  ASSERT_TRUE(client->MatchPrefix(keys).ok());
  // Only the BatchExists: no MatchPrefix the server would refuse again.
  EXPECT_EQ(old.servers[0]->requests_seen() - after_first, 1);
  const std::string v = "v";
  ASSERT_TRUE(client->PutWith("a", AsSpan(v), SomeOptions()).ok());
  const int after_put = old.servers[0]->requests_seen();
  ASSERT_TRUE(client->PutWith("b", AsSpan(v), SomeOptions()).ok());
  EXPECT_EQ(old.servers[0]->requests_seen() - after_put, 1);
  EXPECT_EQ(client->Stats().put_options_dropped, 2u);
  // Bad options are refused also where they would be dropped.
  PutOptions bad;
  bad.retention = static_cast<Retention>(9);
  EXPECT_EQ(client->PutWith("c", AsSpan(v), bad).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(client->Stats().put_options_dropped, 2u);
}

TEST(PutOptionsFallbackTest, AsyncSubmissionsCarryOptionsToo) {
  OldServers old(1);
  auto client = MakeClient(old.addresses);
  auto queue = client->NewAsyncQueue();
  ASSERT_TRUE(queue.ok());
  const std::string v = "value";
  const std::vector<std::string_view> keys = {"x", "y"};
  const std::vector<std::span<const uint8_t>> values = {AsSpan(v), AsSpan(v)};
  const std::vector<PutOptions> options(2, SomeOptions());
  (*queue)->SubmitPutWith(keys, values, options, 7);
  std::vector<AsyncCompletion> done;
  while (done.empty()) (*queue)->Wait(&done, 1, -1);
  EXPECT_EQ(done[0].tag, 7u);
  EXPECT_EQ(done[0].op, AsyncOp::kPut);
  EXPECT_EQ(done[0].present_prefix, 2u);
  EXPECT_EQ(client->Stats().put_options_dropped, 2u);
}

TEST(MatchPrefixTest, BadKeysAndTooManyKeysAreRefused) {
  OldServers old(1);
  auto client = MakeClient(old.addresses);
  std::vector<std::string_view> keys = {"a", ""};
  Result<size_t> r = client->MatchPrefix(keys);
  ASSERT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("MatchPrefix key 1"), std::string::npos) << r.status().ToString();
  std::vector<std::string_view> many(1025, "k");
  EXPECT_EQ(client->MatchPrefix(many).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(*client->MatchPrefix({}), 0u);
}

TEST(PutOptionsFallbackTest, OldServerStoresPlainPutsAndCountsTheDroppedOptions) {
  OldServers old(2);
  auto client = MakeClient(old.addresses);
  const std::string value = "block bytes";
  ASSERT_TRUE(client->PutWith("k0", AsSpan(value), SomeOptions()).ok());
  EXPECT_EQ(client->Stats().put_options_dropped, 1u);
  auto got = client->Get("k0");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(std::string(got->begin(), got->end()), value);

  std::vector<std::string> names = {"k1", "k2", "k3", "k4"};
  std::vector<std::string_view> keys(names.begin(), names.end());
  std::vector<std::span<const uint8_t>> values(keys.size(), AsSpan(value));
  std::vector<PutOptions> options(keys.size(), SomeOptions());
  BatchResult r = client->BatchPutWith(keys, values, options);
  EXPECT_EQ(r.present_prefix, keys.size());
  EXPECT_EQ(client->Stats().put_options_dropped, 5u);
  // Plain options (none set) are a plain put: nothing dropped.
  ASSERT_TRUE(client->PutWith("k5", AsSpan(value), PutOptions()).ok());
  EXPECT_EQ(client->Stats().put_options_dropped, 5u);
}

TEST(PutOptionsTest, BadOptionsAreRefusedNamingTheField) {
  OldServers old(1);
  auto client = MakeClient(old.addresses);
  PutOptions o;
  o.retention = static_cast<Retention>(3);
  Status s = client->PutWith("k", AsSpan(std::string("v")), o);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("retention 3"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("allowed: 0 (normal), 1 (pinned), 2 (evict_first)"), std::string::npos);
  o = PutOptions();
  o.block_hash.assign(65, 'h');
  s = client->PutWith("k", AsSpan(std::string("v")), o);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("block_hash of 65 bytes"), std::string::npos) << s.ToString();
  o = PutOptions();
  o.parent_key.assign(1025, 'p');
  EXPECT_EQ(client->PutWith("k", AsSpan(std::string("v")), o).code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(*client->Exists("k"));
  // Options must be none or one per key.
  std::vector<std::string_view> keys = {"a", "b"};
  const std::string v = "v";
  std::vector<std::span<const uint8_t>> values(2, AsSpan(v));
  std::vector<PutOptions> one(1);
  BatchResult r = client->BatchPutWith(keys, values, one);
  EXPECT_EQ(r.statuses[0].code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace memkv::client
