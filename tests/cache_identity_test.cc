// Cache identities against a real server process: deployments that differ
// only in KV dtype, block size or tensor-parallel rank share one server and
// never read each other's blocks; the server's identities.accept and
// identities.require; the per-identity counts in /metrics and /v1/status,
// restores reported by the client included.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "memkv/client.h"
#include "tests/harness.h"

namespace memkv {
namespace {

using testing::HttpRequestTo;
using testing::HttpResult;
using testing::ServerProcess;
using testing::ServerSpec;

const std::string kTenantHex(64, 'c');

CacheIdentity Base() {
  CacheIdentity id;
  id.model = "meta-llama/Llama-3.1-8B";
  id.revision = "0e9e39f";
  id.kv_dtype = "bfloat16";
  id.layout = "NHD";
  id.block_tokens = 16;
  id.tp_rank = 0;
  id.tp_size = 2;
  id.engine = "vllm";
  id.engine_version = "0.11.0";
  return id;
}

std::unique_ptr<Client> ClientAs(const ServerProcess& server, const CacheIdentity& identity,
                                 const std::string& key_hex = testing::kTestKeyHex) {
  ClientOptions o = testing::OptionsFor({&server});
  o.auth_key_hex = key_hex;
  o.identity = identity;
  Result<std::unique_ptr<Client>> client = Client::Create(o);
  EXPECT_TRUE(client.ok()) << client.status().ToString();
  return client.ok() ? std::move(client).value() : nullptr;
}

std::vector<uint8_t> Bytes(std::string_view s) { return {s.begin(), s.end()}; }

std::string Text(const Result<std::vector<uint8_t>>& r) {
  return r.ok() ? std::string(r->begin(), r->end()) : "<" + r.status().ToString() + ">";
}

TEST(CacheIdentityTest, TagIsStableAndEveryFieldChangesIt) {
  const CacheIdentity base = Base();
  ASSERT_TRUE(base.Check().ok()) << base.Check().ToString();
  EXPECT_EQ(base.Tag().size(), CacheIdentity::kTagChars);
  EXPECT_EQ(base.Tag(), Base().Tag());
  Result<CacheIdentity> parsed = CacheIdentity::Parse(base.Canonical());
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(*parsed, base);

  std::vector<CacheIdentity> variants(10, base);
  variants[0].model += "x";
  variants[1].revision = "1";
  variants[2].kv_dtype = "float8_e4m3fn";
  variants[3].layout = "HND";
  variants[4].block_tokens = 32;
  variants[5].tp_rank = 1;
  variants[6].tp_size = 4;
  variants[7].engine = "sglang";
  variants[8].engine_version = "0.11.1";
  variants[9].extras = {{"lora", "a"}};
  for (const CacheIdentity& v : variants) EXPECT_NE(v.Tag(), base.Tag()) << v.Canonical();

  // Extras in any order are the same identity.
  CacheIdentity ab = base, ba = base;
  ab.extras = {{"a", "1"}, {"b", "2"}};
  ba.extras = {{"b", "2"}, {"a", "1"}};
  EXPECT_EQ(ab.Tag(), ba.Tag());
}

TEST(CacheIdentityTest, BadIdentitiesAreRefusedNamingTheField) {
  CacheIdentity id = Base();
  id.tp_rank = 2;
  EXPECT_NE(id.Check().message().find("tp_rank 2 with tp_size 2"), std::string::npos) << id.Check().ToString();
  id = Base();
  id.model.clear();
  EXPECT_NE(id.Check().message().find("model is empty"), std::string::npos);
  id = Base();
  id.kv_dtype = "bf\n16";
  EXPECT_NE(id.Check().message().find("kv_dtype"), std::string::npos);
  id = Base();
  id.extras = {{"bad name", "x"}};
  EXPECT_NE(id.Check().message().find("is not a name"), std::string::npos);

  // Client::Create checks the identity as a whole.
  ClientOptions o;
  ASSERT_TRUE(SetClientOption(&o, "servers", "127.0.0.1:1").ok());
  ASSERT_TRUE(SetClientOption(&o, "auth_key", testing::kTestKeyHex).ok());
  ASSERT_TRUE(SetClientOption(&o, "identity_kv_dtype", "bfloat16").ok());
  Result<std::unique_ptr<Client>> client = Client::Create(o);
  ASSERT_FALSE(client.ok());
  EXPECT_NE(client.status().message().find("model is empty"), std::string::npos) << client.status().ToString();
  EXPECT_FALSE(SetClientOption(&o, "identity_extras", "novalue").ok());
}

// Two deployments differing only in dtype, block size or TP rank write the
// same keys; each reads back its own blocks only, by every read path.
TEST(CacheIdentityTest, DeploymentsThatDifferInOneFieldNeverHitEachOther) {
  ServerProcess server;
  ASSERT_TRUE(server.Start().ok());
  std::vector<std::pair<std::string, CacheIdentity>> deployments = {{"base", Base()}};
  deployments.push_back({"fp8", Base()});
  deployments.back().second.kv_dtype = "float8_e4m3fn";
  deployments.push_back({"block32", Base()});
  deployments.back().second.block_tokens = 32;
  deployments.push_back({"rank1", Base()});
  deployments.back().second.tp_rank = 1;

  std::vector<std::unique_ptr<Client>> clients;
  for (const auto& [name, identity] : deployments) {
    clients.push_back(ClientAs(server, identity));
    ASSERT_TRUE(clients.back());
    EXPECT_EQ(clients.back()->IdentityTag(), identity.Tag());
  }
  // Only the base deployment stores; the others find nothing.
  const std::vector<std::string_view> chain = {"vllm/llama/block-0", "vllm/llama/block-1"};
  for (std::string_view key : chain) ASSERT_TRUE(clients[0]->Put(key, Bytes("base of " + std::string(key))).ok());
  for (size_t i = 1; i < clients.size(); ++i) {
    SCOPED_TRACE(deployments[i].first);
    Client& c = *clients[i];
    EXPECT_EQ(c.Get(chain[0]).status().code(), StatusCode::kNotFound);
    Result<bool> exists = c.Exists(chain[0]);
    ASSERT_TRUE(exists.ok());
    EXPECT_FALSE(*exists);
    Result<size_t> matched = c.MatchPrefix(chain);
    ASSERT_TRUE(matched.ok());
    EXPECT_EQ(*matched, 0u);
    BatchResult batch = c.BatchExists(chain);
    for (const Status& s : batch.statuses) EXPECT_EQ(s.code(), StatusCode::kNotFound);
    Result<KeyListPage> listed = c.ListKeys("", "", 100);
    ASSERT_TRUE(listed.ok());
    EXPECT_TRUE(listed->keys.empty());
  }
  // Each then stores its own block under the same key and reads it back.
  for (size_t i = 0; i < clients.size(); ++i) {
    ASSERT_TRUE(clients[i]->Put(chain[0], Bytes(deployments[i].first)).ok());
  }
  for (size_t i = 0; i < clients.size(); ++i) {
    EXPECT_EQ(Text(clients[i]->Get(chain[0])), deployments[i].first);
  }
  // The base deployment's chain is whole; it lists its keys as it named them.
  Result<size_t> matched = clients[0]->MatchPrefix(chain);
  ASSERT_TRUE(matched.ok());
  EXPECT_EQ(*matched, 2u);
  Result<KeyListPage> listed = clients[0]->ListKeys("vllm/", "", 100);
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(listed->keys, (std::vector<std::string>{"vllm/llama/block-0", "vllm/llama/block-1"}));

  // A client with no identity sees none of them under their names; the
  // administrator sees each under its identity's segment.
  std::unique_ptr<Client> plain = testing::ClientFor({&server});
  EXPECT_EQ(plain->Get(chain[0]).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(Text(plain->Get("@" + deployments[2].second.Tag() + "/" + std::string(chain[0]))), "block32");
}

TEST(CacheIdentityTest, AcceptListAndRequireAreEnforcedAtIdentify) {
  ServerProcess server;
  ServerSpec spec;
  spec.extra_yaml = "identities:\n  require: true\n  accept:\n    - \"model=meta-llama/Llama-3.1-8B,kv_dtype=bfloat16\"\n"
                    "tenants:\n  - name: team-a\n    prefix: \"team-a/\"\n    key: \"" + kTenantHex + "\"\n";
  ASSERT_TRUE(server.Start(spec).ok());

  // Accepted: the selector's fields match.
  std::unique_ptr<Client> ok = ClientAs(server, Base(), kTenantHex);
  ASSERT_TRUE(ok);
  EXPECT_TRUE(ok->Put("k", Bytes("v")).ok());
  EXPECT_EQ(Text(ok->Get("k")), "v");

  // Refused: another dtype. Every call fails naming the list, nothing stored.
  CacheIdentity fp8 = Base();
  fp8.kv_dtype = "float8_e4m3fn";
  std::unique_ptr<Client> refused = ClientAs(server, fp8, kTenantHex);
  ASSERT_TRUE(refused);
  Status put = refused->Put("k", Bytes("fp8"));
  EXPECT_EQ(put.code(), StatusCode::kPermissionDenied) << put.ToString();
  EXPECT_NE(put.message().find("identities.accept"), std::string::npos) << put.ToString();
  EXPECT_NE(put.message().find(fp8.Tag()), std::string::npos) << put.ToString();
  EXPECT_EQ(Text(ok->Get("k")), "v");

  // A tenant connection with no identity is refused by require; the
  // administrator's is not.
  ClientOptions o = testing::OptionsFor({&server});
  o.auth_key_hex = kTenantHex;
  Result<std::unique_ptr<Client>> anonymous = Client::Create(o);
  ASSERT_TRUE(anonymous.ok());
  Status anon = (*anonymous)->Put("k2", Bytes("x"));
  EXPECT_EQ(anon.code(), StatusCode::kFailedPrecondition) << anon.ToString();
  EXPECT_NE(anon.message().find("identities.require"), std::string::npos) << anon.ToString();
  std::unique_ptr<Client> admin = testing::ClientFor({&server});
  EXPECT_TRUE(admin->Put("k3", Bytes("admin")).ok());

  // The server keeps serving: the accepted identity still works.
  EXPECT_EQ(Text(ok->Get("k")), "v");
}

// The hit-rate split per tenant and identity: lookups, found, fetched and
// (reported by the client) fetched in time and late.
TEST(CacheIdentityTest, HitRateSplitPerIdentityInMetricsAndStatus) {
  ServerProcess server;
  ASSERT_TRUE(server.Start().ok());
  const CacheIdentity id = Base();
  const std::string tag = id.Tag();
  const std::string labels = "{tenant=\"\",identity=\"" + tag + "\"}";
  auto metric = [&](const std::string& body, const std::string& name) -> std::string {
    const std::string line = name + labels + " ";
    const size_t at = body.find(line);
    if (at == std::string::npos) return "<missing>";
    return body.substr(at + line.size(), body.find('\n', at) - at - line.size());
  };
  {
    std::unique_ptr<Client> c = ClientAs(server, id);
    ASSERT_TRUE(c);
    ASSERT_TRUE(c->Put("a", Bytes("1")).ok());
    ASSERT_TRUE(c->Put("b", Bytes("2")).ok());
    EXPECT_TRUE(c->Get("a").ok());                                     // lookup, found, fetched
    EXPECT_EQ(c->Get("zz").status().code(), StatusCode::kNotFound);     // lookup
    Result<bool> e = c->Exists("b");                                    // lookup, found
    ASSERT_TRUE(e.ok() && *e);
    const std::vector<std::string_view> keys = {"a", "b", "c"};
    Result<size_t> matched = c->MatchPrefix(keys);                      // 3 lookups, 2 found
    ASSERT_TRUE(matched.ok());
    c->ReportRestores(1, 1);
    const ClientStats stats = c->Stats();
    EXPECT_EQ(stats.lookups, 6u);
    EXPECT_EQ(stats.found, 4u);
    EXPECT_EQ(stats.fetched, 1u);
    EXPECT_EQ(stats.fetched_in_time, 1u);
    EXPECT_EQ(stats.fetched_late, 1u);
    // The reporter sends it while the client lives (within about a second).
    const Nanos deadline = MonotonicNanos() + 20'000'000'000;
    std::string in_time;
    while (MonotonicNanos() < deadline) {
      in_time = metric(HttpRequestTo(server.AdminPort(), "GET", "/v1/metrics").body,
                       "memkv_identity_fetched_in_time_total");
      if (in_time == "1") break;
      std::this_thread::yield();
    }
    EXPECT_EQ(in_time, "1");
    c->ReportRestores(2, 0);
  }  // destroyed: what the reporter has not sent yet goes now

  HttpResult m = HttpRequestTo(server.AdminPort(), "GET", "/v1/metrics");
  ASSERT_EQ(m.status, 200);
  EXPECT_EQ(metric(m.body, "memkv_identity_lookups_total"), "6");
  EXPECT_EQ(metric(m.body, "memkv_identity_found_total"), "4");
  EXPECT_EQ(metric(m.body, "memkv_identity_fetched_total"), "1");
  EXPECT_EQ(metric(m.body, "memkv_identity_stores_total"), "2");
  EXPECT_EQ(metric(m.body, "memkv_identity_fetched_in_time_total"), "3");
  EXPECT_EQ(metric(m.body, "memkv_identity_fetched_late_total"), "1");
  EXPECT_NE(m.body.find("memkv_identity_info{identity=\"" + tag + "\",model=\"meta-llama/Llama-3.1-8B\""),
            std::string::npos);
  EXPECT_NE(m.body.find("memkv_identity_load_seconds_count" + labels + " 2"), std::string::npos);

  HttpResult status = HttpRequestTo(server.AdminPort(), "GET", "/v1/status");
  ASSERT_EQ(status.status, 200);
  EXPECT_NE(status.body.find("\"identity\":\"" + tag + "\""), std::string::npos) << status.body;
  EXPECT_NE(status.body.find("\"fetched_in_time\":3"), std::string::npos) << status.body;
}

}  // namespace
}  // namespace memkv
