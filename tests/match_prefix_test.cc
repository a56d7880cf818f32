// MatchPrefix and puts with options against real server processes: a chain
// spread over four servers with a hole at various positions, options
// accepted and stored, bad options refused with a clear status, and the new
// opcodes as raw frames beside the old ones.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/checksum.h"
#include "proto/messages.h"
#include "tests/harness.h"
#include "tests/raw_connection.h"

namespace memkv::testing {
namespace {

class MatchPrefixTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    for (auto& s : servers_) {
      s = new ServerProcess();
      Status started = s->Start();
      ASSERT_TRUE(started.ok()) << started.ToString();
    }
  }
  static void TearDownTestSuite() {
    for (auto& s : servers_) {
      delete s;
      s = nullptr;
    }
  }

  static std::unique_ptr<Client> AllServers() {
    return ClientFor({servers_[0], servers_[1], servers_[2], servers_[3]});
  }

  static std::unique_ptr<RawConnection> Authenticated(size_t server) {
    auto c = RawConnection::Open(servers_[server]->port());
    EXPECT_TRUE(c.ok());
    auto hello = (*c)->Handshake(kTestKeyHex);
    EXPECT_TRUE(hello.ok() && hello->header.status == StatusCode::kOk);
    return std::move(c).value();
  }

  static inline ServerProcess* servers_[4] = {};
};

struct Chain {
  Chain(const std::string& prefix, size_t n) {
    for (size_t i = 0; i < n; ++i) names.push_back(prefix + "/block" + std::to_string(i));
    keys.assign(names.begin(), names.end());
  }
  std::vector<std::string> names;
  std::vector<std::string_view> keys;
};

TEST_F(MatchPrefixTest, HolesAtVariousPositionsOverFourServers) {
  auto client = AllServers();
  ASSERT_NE(client, nullptr);
  const std::vector<uint8_t> value = Pattern(512, 3);
  Chain chain("holes", 64);
  std::vector<size_t> per_server(4, 0);
  for (std::string_view key : chain.keys) ++per_server[client->ServerFor(key)];
  for (size_t n : per_server) ASSERT_GT(n, 0u) << "the chain should span all four servers";
  for (size_t hole : {size_t{0}, size_t{1}, size_t{17}, size_t{40}, size_t{63}, size_t{64}}) {
    for (size_t i = 0; i < chain.keys.size(); ++i) {
      if (i == hole) {
        (void)client->Delete(chain.keys[i]);
      } else {
        ASSERT_TRUE(client->Put(chain.keys[i], value).ok());
      }
    }
    Result<size_t> matched = client->MatchPrefix(chain.keys);
    ASSERT_TRUE(matched.ok()) << matched.status().ToString();
    EXPECT_EQ(*matched, hole);
    EXPECT_EQ(client->BatchExists(chain.keys).present_prefix, hole);
  }
  // Two holes: the first decides, whichever server holds it.
  ASSERT_TRUE(client->Delete(chain.keys[50]).ok());
  ASSERT_TRUE(client->Delete(chain.keys[9]).ok());
  EXPECT_EQ(*client->MatchPrefix(chain.keys), 9u);
  EXPECT_EQ(*client->MatchPrefix(std::span(chain.keys).first(9)), 9u);
  EXPECT_EQ(client->Stats().put_options_dropped, 0u);
}

TEST_F(MatchPrefixTest, PutsWithOptionsAreStored) {
  auto client = AllServers();
  ASSERT_NE(client, nullptr);
  Chain chain("options", 16);
  std::vector<std::vector<uint8_t>> data;
  std::vector<std::span<const uint8_t>> values;
  std::vector<PutOptions> options(chain.keys.size());
  for (size_t i = 0; i < chain.keys.size(); ++i) data.push_back(Pattern(1000 + i, i));
  for (size_t i = 0; i < chain.keys.size(); ++i) {
    values.emplace_back(data[i]);
    options[i].ttl_ms = 3'600'000;
    options[i].retention = i % 2 ? Retention::kEvictFirst : Retention::kNormal;
    if (i > 0) options[i].parent_key = chain.names[i - 1];
    options[i].block_hash = std::string(8, static_cast<char>(i));
    options[i].hash_kind = HashKind::kInt64;
  }
  BatchResult r = client->BatchPutWith(chain.keys, values, options);
  EXPECT_EQ(r.present_prefix, chain.keys.size()) << r.statuses[r.present_prefix].ToString();
  for (size_t i = 0; i < chain.keys.size(); ++i) {
    auto got = client->Get(chain.keys[i]);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(*got, data[i]);
  }
  PutOptions pinned;
  pinned.retention = Retention::kPinned;
  pinned.parent_key = chain.names.back();
  ASSERT_TRUE(client->PutWith("options/tail", data[0], pinned).ok());
  EXPECT_EQ(*client->Get("options/tail"), data[0]);
  EXPECT_EQ(client->Stats().put_options_dropped, 0u);
}

TEST_F(MatchPrefixTest, BadOptionsInARawFrameAreRefusedNamingTheAllowedValues) {
  auto c = Authenticated(0);
  PutOptions bad;
  bad.retention = static_cast<Retention>(7);
  const std::vector<uint8_t> value = Pattern(100, 1);
  const proto::PutItem item{"raw/bad", value.size(), Checksum(value.data(), value.size())};
  const std::vector<proto::PutItem> items = {item};
  const std::vector<PutOptions> options = {bad};
  ASSERT_TRUE(c->SendBytes(c->BuildFrame(proto::Opcode::kBatchPutWith,
                                         proto::EncodeBatchPutWithRequest(items, options), value, 1))
                  .ok());
  auto r = c->Read();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->header.status, StatusCode::kInvalidArgument);
  EXPECT_NE(r->message().find("retention 7 is not a retention class; allowed: 0 (normal), 1 (pinned), 2 "
                              "(evict_first)"),
            std::string::npos)
      << r->message();
  // The payload was consumed: the connection stays in sync and usable.
  ASSERT_TRUE(c->SendBytes(c->BuildFrame(proto::Opcode::kPing, "", {}, 2)).ok());
  auto pong = c->Read();
  ASSERT_TRUE(pong.ok());
  EXPECT_EQ(pong->header.status, StatusCode::kOk);
}

TEST_F(MatchPrefixTest, NewAndOldOpcodesSideBySideOnOneConnection) {
  auto c = Authenticated(1);
  const std::vector<uint8_t> value = Pattern(64, 9);
  const uint64_t sum = Checksum(value.data(), value.size());
  // An old client's BatchPut and BatchExists, unchanged.
  const std::vector<proto::PutItem> items = {{"raw/a", value.size(), sum}, {"raw/b", value.size(), sum}};
  std::vector<uint8_t> payload = value;
  payload.insert(payload.end(), value.begin(), value.end());
  ASSERT_TRUE(c->SendBytes(c->BuildFrame(proto::Opcode::kBatchPut, proto::EncodeBatchPutRequest(items), payload, 1))
                  .ok());
  auto put = c->Read();
  ASSERT_TRUE(put.ok());
  ASSERT_EQ(put->header.status, StatusCode::kOk);
  const std::vector<std::string_view> keys = {"raw/a", "raw/b", "raw/missing", "raw/a"};
  ASSERT_TRUE(c->SendBytes(c->BuildFrame(proto::Opcode::kBatchExists, proto::EncodeKeyList(keys), {}, 2)).ok());
  auto exists = c->Read();
  ASSERT_TRUE(exists.ok());
  std::vector<StatusCode> codes;
  ASSERT_TRUE(proto::DecodeStatusList(exists->meta, 4, &codes).ok());
  EXPECT_EQ(codes, (std::vector<StatusCode>{StatusCode::kOk, StatusCode::kOk, StatusCode::kNotFound,
                                            StatusCode::kOk}));
  // MatchPrefix stops at the first miss.
  ASSERT_TRUE(c->SendBytes(c->BuildFrame(proto::Opcode::kMatchPrefix, proto::EncodeKeyList(keys), {}, 3)).ok());
  auto match = c->Read();
  ASSERT_TRUE(match.ok());
  ASSERT_EQ(match->header.status, StatusCode::kOk) << match->message();
  uint32_t matched = 0;
  ASSERT_TRUE(proto::DecodeMatchPrefixResponse(match->meta, 4, &matched).ok());
  EXPECT_EQ(matched, 2u);
}

}  // namespace
}  // namespace memkv::testing
