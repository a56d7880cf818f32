// The request pipeline against a real server process with tenants: every
// opcode of the rules table sent by every kind of peer (the administrator,
// a tenant, another tenant naming the same key, a read-only tenant, a peer
// with no credentials), and the quota ledger under puts that run at once.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/checksum.h"
#include "memkv/client.h"
#include "proto/messages.h"
#include "server/request.h"
#include "tests/harness.h"
#include "tests/raw_connection.h"

namespace memkv {
namespace {

using testing::RawConnection;
using testing::RawResponse;
using testing::ServerProcess;
using testing::ServerSpec;

const std::string kAHex(64, 'b');
const std::string kBHex(64, 'd');
const std::string kReaderHex(64, 'e');

std::string TenantYaml(const std::string& name, const std::string& prefix, const std::string& key_hex,
                       const std::string& more = "") {
  return "  - name: " + name + "\n    prefix: \"" + prefix + "\"\n    key: \"" + key_hex + "\"\n" + more;
}

std::unique_ptr<Client> ClientWith(const ServerProcess& server, const std::string& key_hex) {
  ClientOptions o = testing::OptionsFor({&server});
  o.auth_key_hex = key_hex;
  Result<std::unique_ptr<Client>> client = Client::Create(o);
  EXPECT_TRUE(client.ok()) << client.status().ToString();
  return client.ok() ? std::move(client).value() : nullptr;
}

std::vector<uint8_t> Bytes(std::string_view s) { return {s.begin(), s.end()}; }

// A peer: what it authenticates with, and whose stored key "walk" names.
struct Peer {
  std::string name;
  std::string key_hex;  // empty: no credentials (no Connect)
  std::string stored;   // what "walk" is stored as for it
  bool read_only = false;
};

// A well-formed request of `rule`'s shape naming the key "walk" (and a new
// value for the puts), as a signed frame.
std::vector<uint8_t> RequestFor(RawConnection& raw, const server::OpRule& rule, const std::vector<uint8_t>& value,
                                uint64_t id) {
  const std::string key = "walk";
  const std::vector<std::string_view> keys = {key};
  const uint64_t checksum = Checksum(value.data(), value.size());
  std::string meta;
  std::vector<uint8_t> payload;
  switch (rule.shape) {
    case server::Shape::kNothing: break;
    case server::Shape::kKey: meta = key; break;
    case server::Shape::kPut:
      meta = key;
      payload = value;
      break;
    case server::Shape::kKeyList: meta = proto::EncodeKeyList(keys); break;
    case server::Shape::kPutItems: {
      const proto::PutItem item{key, value.size(), checksum};
      meta = proto::EncodeBatchPutRequest(std::span<const proto::PutItem>(&item, 1));
      payload = value;
      break;
    }
    case server::Shape::kPutItemsWith: {
      const proto::PutItem item{key, value.size(), checksum};
      const PutOptions options;
      meta = proto::EncodeBatchPutWithRequest(std::span<const proto::PutItem>(&item, 1),
                                              std::span<const PutOptions>(&options, 1));
      payload = value;
      break;
    }
    case server::Shape::kRdmaPut: meta = proto::EncodeRdmaPutRequest(key, value.size(), checksum); break;
    case server::Shape::kRdmaPutWith:
      meta = proto::EncodeRdmaPutWithRequest(key, value.size(), checksum, PutOptions());
      break;
    case server::Shape::kRdmaCommitTo:
      meta = proto::EncodeRdmaCommitToRequest(1, key, value.size(), checksum, PutOptions());
      break;
    case server::Shape::kList: meta = proto::EncodeListRequest({.prefix = "wa", .after = "", .limit = 10}); break;
    case server::Shape::kToken: meta = proto::EncodeToken(1); break;
    case server::Shape::kMeta: {
      CacheIdentity identity;
      identity.model = "walk-model";
      meta = rule.opcode == proto::Opcode::kIdentify ? identity.Canonical()
                                                     : proto::EncodeClientReport({.fetched_in_time = 1});
      break;
    }
  }
  std::vector<uint8_t> frame = raw.BuildFrame(rule.opcode, meta, payload, id);
  if (rule.shape == server::Shape::kPut) {
    // A single put's checksum travels in the header (bytes 32..40 of the fields).
    proto::FrameHeader h;
    EXPECT_TRUE(proto::DecodeFields(frame.data(), &h).ok());
    EXPECT_EQ(h.payload_checksum, checksum);
  }
  return frame;
}

class PipelineServer {
 public:
  PipelineServer() {
    ServerSpec spec;
    spec.memory_max_size = "64 MiB";
    spec.extra_yaml = "tenants:\n" + TenantYaml("team-a", "team-a/", kAHex) + TenantYaml("team-b", "team-b/", kBHex) +
                      TenantYaml("reader", "reader/", kReaderHex, "    read_only: true\n");
    status_ = server_.Start(spec);
  }
  Status status() const { return status_; }
  ServerProcess& server() { return server_; }

 private:
  ServerProcess server_;
  Status status_;
};

TEST(RequestPipelineTest, EveryOpcodeOfTheTableAgainstEveryKindOfPeer) {
  PipelineServer fixture;
  ASSERT_TRUE(fixture.status().ok()) << fixture.status().ToString();
  ServerProcess& server = fixture.server();
  auto admin = ClientWith(server, testing::kTestKeyHex);
  ASSERT_TRUE(admin);

  const std::vector<Peer> peers = {
      {"administrator", testing::kTestKeyHex, "walk"},
      {"tenant", kAHex, "team-a/walk"},
      {"another tenant", kBHex, "team-b/walk"},
      {"read-only tenant", kReaderHex, "reader/walk", true},
      {"no credentials", "", ""},
  };
  // What each owner's "walk" holds before each request: its own bytes.
  const std::map<std::string, std::string> before = {
      {"walk", "admin's"}, {"team-a/walk", "team-a's"}, {"team-b/walk", "team-b's"}, {"reader/walk", "reader's"}};

  uint64_t id = 1;
  for (const server::OpRule& rule : server::AllRules()) {
    for (const Peer& peer : peers) {
      SCOPED_TRACE(std::string(rule.verb) + " (" + proto::OpcodeName(static_cast<uint8_t>(rule.opcode)) + ") by " +
                   peer.name);
      for (const auto& [stored, text] : before) ASSERT_TRUE(admin->Put(stored, Bytes(text)).ok());
      Result<std::unique_ptr<RawConnection>> raw = RawConnection::Open(server.port());
      ASSERT_TRUE(raw.ok()) << raw.status().ToString();
      if (!peer.key_hex.empty()) {
        ASSERT_TRUE((*raw)->Handshake(peer.key_hex).ok());
      }
      const std::vector<uint8_t> value = Bytes("new from " + peer.name);
      ASSERT_TRUE((*raw)->SendBytes(RequestFor(**raw, rule, value, id++)).ok());
      Result<RawResponse> answer = (*raw)->Read();
      ASSERT_TRUE(answer.ok()) << answer.status().ToString();
      const StatusCode code = answer->header.status;

      if (peer.key_hex.empty()) {
        EXPECT_EQ(code, StatusCode::kAuthFailed) << answer->message();
        EXPECT_TRUE((*raw)->ClosedByPeer());
      } else if (rule.rdma) {
        EXPECT_EQ(code, StatusCode::kFailedPrecondition) << answer->message();
        EXPECT_NE(answer->message().find("needs RDMA"), std::string::npos) << answer->message();
      } else if (peer.read_only && rule.access == server::Access::kWrite) {
        EXPECT_EQ(code, StatusCode::kPermissionDenied) << answer->message();
        EXPECT_NE(answer->message().find(std::string(rule.verb) + " refused"), std::string::npos);
      } else {
        EXPECT_EQ(code, StatusCode::kOk) << answer->message();
      }

      // What the peer's request reached: its own "walk" and nothing else.
      const bool wrote = code == StatusCode::kOk && rule.access == server::Access::kWrite;
      for (const auto& [stored, text] : before) {
        Result<std::vector<uint8_t>> now = admin->Get(stored);
        if (stored != peer.stored || !wrote) {
          ASSERT_TRUE(now.ok()) << stored << ": " << now.status().ToString();
          EXPECT_EQ(std::string(now->begin(), now->end()), text) << stored << " changed";
        } else if (rule.opcode == proto::Opcode::kDelete) {
          EXPECT_EQ(now.status().code(), StatusCode::kNotFound) << stored;
        } else {
          ASSERT_TRUE(now.ok()) << stored;
          EXPECT_EQ(*now, value) << stored;
        }
      }
      if (code != StatusCode::kOk || peer.key_hex.empty()) continue;
      // What the peer read: its own value, under the key it named.
      const std::string own = before.at(peer.stored);
      switch (rule.opcode) {
        case proto::Opcode::kGet:
          EXPECT_EQ(std::string(answer->payload.begin(), answer->payload.end()), own);
          break;
        case proto::Opcode::kStat: {
          uint64_t size = 0;
          ASSERT_TRUE(proto::DecodeStatResponse(answer->meta, &size).ok());
          EXPECT_EQ(size, own.size());
          break;
        }
        case proto::Opcode::kBatchGet: {
          std::vector<proto::GetItem> items;
          ASSERT_TRUE(proto::DecodeBatchGetResponse(answer->meta, 1, answer->payload.size(), &items).ok());
          EXPECT_EQ(items[0].status, StatusCode::kOk);
          EXPECT_EQ(std::string(answer->payload.begin(), answer->payload.end()), own);
          break;
        }
        case proto::Opcode::kMatchPrefix: {
          uint32_t matched = 0;
          ASSERT_TRUE(proto::DecodeMatchPrefixResponse(answer->meta, 1, &matched).ok());
          EXPECT_EQ(matched, 1u);
          break;
        }
        case proto::Opcode::kList: {
          proto::ListResponse list;
          ASSERT_TRUE(proto::DecodeListResponse(answer->meta, 10, &list).ok());
          ASSERT_EQ(list.keys.size(), 1u);
          EXPECT_EQ(list.keys[0], "walk");
          break;
        }
        default: break;
      }
    }
  }
}

TEST(RequestPipelineTest, AnAdministratorKeyNamedLikeATenantsPrefixDoesNotBreakItsListing) {
  PipelineServer fixture;
  ASSERT_TRUE(fixture.status().ok()) << fixture.status().ToString();
  auto admin = ClientWith(fixture.server(), testing::kTestKeyHex);
  auto a = ClientWith(fixture.server(), kAHex);
  ASSERT_TRUE(admin && a);
  ASSERT_TRUE(admin->Put("team-a/", Bytes("the administrator's")).ok());
  ASSERT_TRUE(a->Put("k1", Bytes("1")).ok());
  ASSERT_TRUE(a->Put("k2", Bytes("2")).ok());
  Result<KeyListPage> page = a->ListKeys("", "", 10);
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  EXPECT_EQ(page->keys, (std::vector<std::string>{"k1", "k2"}));
  const testing::CommandResult ls =
      testing::RunMemkv({"ls"}, {{"MEMKV_SERVERS", fixture.server().address()}, {"MEMKV_AUTH_KEY", kAHex}});
  EXPECT_EQ(ls.exit_code, 0) << ls.err;
  EXPECT_EQ(ls.out, "k1\nk2\n") << ls.err;
}

// Six 40 MiB values sent at once by a tenant whose drive quota is 48 MiB:
// each goes to the drives in pieces (over a quarter of the 64 MiB pool).
// The quota is held before any payload byte is read, so at most one of them
// is taken at a time and the others are refused at once; the tenant never
// holds more than its quota, and another tenant's values all stay.
TEST(RequestPipelineTest, StreamedPutsAtOnceNeverPassATenantsDriveQuota) {
  testing::TempDir dir;
  ServerSpec spec = testing::FileModeSpec(dir.path(), 1, "512 MiB", "64 MiB");
  spec.extra_yaml = "tenants:\n" + TenantYaml("team-a", "team-a/", kAHex, "    drive_quota: 48MiB\n") +
                    TenantYaml("team-b", "team-b/", kBHex);
  ServerProcess server;
  ASSERT_TRUE(server.Start(spec).ok());
  auto b = ClientWith(server, kBHex);
  ASSERT_TRUE(b);
  constexpr int kOthers = 25;
  for (int i = 0; i < kOthers; ++i) {
    ASSERT_TRUE(b->Put("b" + std::to_string(i), testing::Pattern(4 << 20, i)).ok()) << i;
  }

  constexpr size_t kValue = 40 << 20;
  std::atomic<int> stored{0};
  std::atomic<int> refused{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 6; ++i) {
    threads.emplace_back([&, i] {
      auto a = ClientWith(server, kAHex);
      if (!a) return;
      Status s = a->Put("a" + std::to_string(i), testing::Pattern(kValue, 100 + i));
      if (s.ok()) {
        stored.fetch_add(1);
      } else {
        EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << s.ToString();
        EXPECT_NE(s.message().find("tenants[].drive_quota"), std::string::npos) << s.ToString();
        refused.fetch_add(1);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_GE(stored.load(), 1);
  EXPECT_EQ(stored.load() + refused.load(), 6);

  const std::map<std::string, double> samples =
      testing::PrometheusSamples(testing::HttpRequestTo(server.AdminPort(), "GET", "/metrics").body);
  const double a_drive = samples.at("memkv_tenant_bytes{tenant=\"team-a\",tier=\"drive\"}");
  EXPECT_LE(a_drive, 48.0 * (1 << 20));
  EXPECT_GE(a_drive, double(kValue));
  // B's values outgrow the pool (DRAM keeps what fits); the drives keep all.
  EXPECT_EQ(samples.at("memkv_tenant_keys{tenant=\"team-b\",tier=\"drive\"}"), double(kOthers));
  for (int i = 0; i < kOthers; ++i) {
    Result<std::vector<uint8_t>> v = b->Get("b" + std::to_string(i));
    ASSERT_TRUE(v.ok()) << i << ": " << v.status().ToString();
    EXPECT_EQ(*v, testing::Pattern(4 << 20, i)) << i;
  }
}

// Batches of a tenant with a DRAM quota, sent at once from several
// connections: every batch holds its items' room before reading them, so
// the tenant's bytes never pass the quota, however the puts interleave.
TEST(RequestPipelineTest, BatchesAtOnceNeverPassATenantsDramQuota) {
  ServerSpec spec;
  spec.memory_max_size = "64 MiB";
  spec.extra_yaml = "tenants:\n" + TenantYaml("team-a", "team-a/", kAHex, "    dram_quota: 8MiB\n") +
                    TenantYaml("team-b", "team-b/", kBHex);
  ServerProcess server;
  ASSERT_TRUE(server.Start(spec).ok());
  auto b = ClientWith(server, kBHex);
  ASSERT_TRUE(b);
  for (int i = 0; i < 16; ++i) ASSERT_TRUE(b->Put("b" + std::to_string(i), testing::Pattern(256 << 10, i)).ok());

  std::atomic<bool> stop{false};
  std::atomic<double> most{0};
  std::thread watcher([&] {
    while (!stop.load()) {
      const std::map<std::string, double> samples =
          testing::PrometheusSamples(testing::HttpRequestTo(server.AdminPort(), "GET", "/metrics").body);
      auto it = samples.find("memkv_tenant_bytes{tenant=\"team-a\",tier=\"dram\"}");
      if (it != samples.end() && it->second > most.load()) most.store(it->second);
    }
  });
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      auto a = ClientWith(server, kAHex);
      if (!a) return;
      for (int round = 0; round < 20; ++round) {
        std::vector<std::string> names;
        std::vector<std::vector<uint8_t>> values;
        for (int i = 0; i < 8; ++i) {
          names.push_back("t" + std::to_string(t) + "-" + std::to_string(round) + "-" + std::to_string(i));
          values.push_back(testing::Pattern(512 << 10, t * 1000 + round * 10 + i));
        }
        std::vector<std::string_view> keys(names.begin(), names.end());
        std::vector<std::span<const uint8_t>> spans(values.begin(), values.end());
        BatchResult r = a->BatchPut(keys, spans);
        for (const Status& s : r.statuses) {
          if (!s.ok()) {
            EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << s.ToString();
          }
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  stop.store(true);
  watcher.join();
  EXPECT_LE(most.load(), 8.0 * (1 << 20));
  const std::map<std::string, double> samples =
      testing::PrometheusSamples(testing::HttpRequestTo(server.AdminPort(), "GET", "/metrics").body);
  EXPECT_LE(samples.at("memkv_tenant_bytes{tenant=\"team-a\",tier=\"dram\"}"), 8.0 * (1 << 20));
  EXPECT_EQ(samples.at("memkv_tenant_evictions_total{tenant=\"team-b\"}"), 0.0);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(*b->Get("b" + std::to_string(i)), testing::Pattern(256 << 10, i)) << i;
}

}  // namespace
}  // namespace memkv
