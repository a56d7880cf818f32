// Tenants against a real server on loopback (the Daemon, as memkv start
// builds it, from a config file in a temporary directory), driven by the
// client library and a raw protocol peer: isolation by prefix, read-only
// credentials, the shorter key limit, an older client's Connect without a
// key hint, and key rotation by Daemon::Reload under continuous load.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/temp_dir.h"
#include "client/client_from_config.h"
#include "config/server_config.h"
#include "memkv/client.h"
#include "proto/messages.h"
#include "server/daemon.h"
#include "tests/harness.h"
#include "tests/raw_connection.h"
#include "verbs/fake.h"

namespace memkv {
namespace {

using testing::TempDir;

const std::string kAdminHex(64, 'a');
const std::string kAHex(64, 'b');
const std::string kA2Hex(64, 'c');
const std::string kBHex(64, 'd');
const std::string kReaderHex(64, 'e');

std::string Config(const std::string& tenants_yaml) {
  return "network:\n  address: 127.0.0.1:0\n  auth_key: \"" + kAdminHex +
         "\"\n"
         "memory:\n  max_size: 32MiB\n  block_size: 1MiB\n  prefault: false\n"
         "storage:\n  mode: memory\n"
         "rdma:\n  device: srv0\n" +
         tenants_yaml;
}

std::string Tenant(const std::string& name, const std::string& prefix, const std::string& key_hex,
                   const std::string& more = "") {
  return "  - name: " + name + "\n    prefix: \"" + prefix + "\"\n    key: \"" + key_hex + "\"\n" + more;
}

std::vector<uint8_t> Bytes(std::string_view s) { return {s.begin(), s.end()}; }
std::string Text(const std::vector<uint8_t>& b) { return {b.begin(), b.end()}; }

// A Daemon started from a config file it can reload.
class TenantServer {
 public:
  // `rdma`: the fabric has the server's device (srv0) and a client's (cli0).
  explicit TenantServer(const std::string& yaml, bool rdma = false) {
    if (rdma) {
      fabric_.AddDevice("srv0");
      fabric_.AddDevice("cli0");
    }
    path_ = dir_.Write("config.yaml", yaml);
    Result<config::ServerConfig> c = config::LoadServerConfigFile(path_);
    status_ = c.status();
    if (!c.ok()) return;
    server::DaemonOptions options;
    options.config = *c;
    options.auth_key = *c->network.auth_key;
    options.config_path = path_;
    options.workers = 2;
    // A pool registered on a fake device need not be pinned.
    options.hugepages = rdma ? storage::HugePagePolicy::kAuto : storage::HugePagePolicy::kNever;
    server::DaemonSeams seams;
    seams.verbs = &fabric_;
    Result<std::unique_ptr<server::Daemon>> daemon = server::Daemon::Create(std::move(options), seams);
    status_ = daemon.status();
    if (!daemon.ok()) return;
    daemon_ = std::move(daemon).value();
    daemon_->Start();
  }

  const Status& status() const { return status_; }
  server::Daemon& daemon() { return *daemon_; }
  void Rewrite(const std::string& yaml) { dir_.Write("config.yaml", yaml); }

  std::unique_ptr<Client> ClientWith(const std::string& key_hex) {
    ClientOptions o;
    o.servers = {daemon_->address()};
    o.auth_key_hex = key_hex;
    o.transport = "tcp";
    o.timeout_ms = 5000;
    o.num_connections = 2;
    Result<std::unique_ptr<Client>> client = Client::Create(o);
    EXPECT_TRUE(client.ok()) << client.status().ToString();
    return client.ok() ? std::move(client).value() : nullptr;
  }

  // A client on the fake fabric's cli0 device.
  std::unique_ptr<Client> RdmaClientWith(const std::string& key_hex, const std::string& transport) {
    ClientOptions o;
    o.servers = {daemon_->address()};
    o.auth_key_hex = key_hex;
    o.transport = transport;
    o.rdma_devices = {"cli0"};
    o.timeout_ms = 5000;
    o.num_connections = 2;
    Result<std::unique_ptr<Client>> client = client::CreateClientWithVerbs(o, fabric_);
    EXPECT_TRUE(client.ok()) << client.status().ToString();
    return client.ok() ? std::move(client).value() : nullptr;
  }

 private:
  TempDir dir_;
  std::string path_;
  verbs::FakeFabric fabric_;  // declared first among what the Daemon uses: it outlives the Daemon
  Status status_;
  std::unique_ptr<server::Daemon> daemon_;
};

std::vector<std::string> AllKeys(Client& client, size_t page_size = 2) {
  std::vector<std::string> out;
  std::string cursor;
  for (int pages = 0; pages < 100; ++pages) {
    Result<KeyListPage> page = client.ListKeys("", cursor, page_size);
    EXPECT_TRUE(page.ok()) << page.status().ToString();
    if (!page.ok()) break;
    out.insert(out.end(), page->keys.begin(), page->keys.end());
    if (page->next_cursor.empty()) break;
    cursor = page->next_cursor;
  }
  return out;
}

const std::string kTwoTenants =
    "tenants:\n" + Tenant("team-a", "team-a/", kAHex) + Tenant("team-b", "team-b/", kBHex) +
    Tenant("reader", "shared/", kReaderHex, "    read_only: true\n");

TEST(TenantsTest, EachTenantReachesOnlyItsOwnKeys) {
  TenantServer server(Config(kTwoTenants));
  ASSERT_TRUE(server.status().ok()) << server.status().ToString();
  auto a = server.ClientWith(kAHex);
  auto b = server.ClientWith(kBHex);
  auto admin = server.ClientWith(kAdminHex);
  ASSERT_TRUE(a && b && admin);

  ASSERT_TRUE(a->Put("k", Bytes("from-a")).ok());
  EXPECT_EQ(b->Get("k").status().code(), StatusCode::kNotFound) << "A's k is a miss for B";
  ASSERT_TRUE(b->Put("k", Bytes("from-b")).ok());
  EXPECT_EQ(Text(*a->Get("k")), "from-a");
  EXPECT_EQ(Text(*b->Get("k")), "from-b");
  // The administrator sees the stored keys as they are.
  EXPECT_EQ(Text(*admin->Get("team-a/k")), "from-a");
  EXPECT_EQ(Text(*admin->Get("team-b/k")), "from-b");

  ASSERT_TRUE(a->Put("x1", Bytes("1")).ok());
  ASSERT_TRUE(a->Put("x2", Bytes("2")).ok());
  // Listing, paged through the cursor: each tenant's keys without its prefix.
  EXPECT_EQ(AllKeys(*a), (std::vector<std::string>{"k", "x1", "x2"}));
  EXPECT_EQ(AllKeys(*b), (std::vector<std::string>{"k"}));
  EXPECT_EQ(AllKeys(*admin, 10), (std::vector<std::string>{"team-a/k", "team-a/x1", "team-a/x2", "team-b/k"}));
  Result<KeyListPage> prefixed = a->ListKeys("x", "", 10);
  ASSERT_TRUE(prefixed.ok());
  EXPECT_EQ(prefixed->keys, (std::vector<std::string>{"x1", "x2"}));

  // Exists, Stat, prefix match.
  EXPECT_TRUE(*a->Exists("x1"));
  EXPECT_FALSE(*b->Exists("x1"));
  EXPECT_EQ(*a->ValueSize("x1"), 1u);
  EXPECT_EQ(b->ValueSize("x1").status().code(), StatusCode::kNotFound);
  const std::vector<std::string_view> chain = {"k", "x1", "x2"};
  EXPECT_EQ(*a->MatchPrefix(chain), 3u);
  EXPECT_EQ(*b->MatchPrefix(chain), 1u) << "B has its own k only";

  // Batches.
  const std::vector<std::string_view> bkeys = {"b1", "b2"};
  const std::vector<uint8_t> v1 = Bytes("v1"), v2 = Bytes("v2");
  const std::vector<std::span<const uint8_t>> values = {v1, v2};
  BatchResult put = b->BatchPut(bkeys, values);
  ASSERT_TRUE(put.statuses[0].ok() && put.statuses[1].ok());
  BatchResult a_sees = a->BatchExists(bkeys);
  EXPECT_EQ(a_sees.statuses[0].code(), StatusCode::kNotFound);
  EXPECT_EQ(a_sees.present_prefix, 0u);
  std::vector<uint8_t> buf1(16), buf2(16);
  const std::vector<std::span<uint8_t>> buffers = {buf1, buf2};
  std::vector<size_t> sizes;
  BatchResult got = b->BatchGetInto(bkeys, buffers, &sizes);
  ASSERT_EQ(got.present_prefix, 2u);
  EXPECT_EQ(std::string(buf1.begin(), buf1.begin() + static_cast<long>(sizes[0])), "v1");
  EXPECT_EQ(a->BatchGetInto(bkeys, buffers, &sizes).present_prefix, 0u);

  // B deleting "k" deletes its own; A's stays. B cannot delete A's x1.
  EXPECT_TRUE(b->Delete("k").ok());
  EXPECT_EQ(b->Get("k").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(Text(*a->Get("k")), "from-a");
  EXPECT_EQ(b->Delete("x1").code(), StatusCode::kNotFound);
  EXPECT_TRUE(*a->Exists("x1"));

  // The counts land in each tenant's slot.
  uint64_t a_puts = 0, b_lookups = 0;
  for (const server::TenantCountsRow& row : server.daemon().tenant_stats().Snapshot()) {
    if (row.name == "team-a") a_puts = row.puts;
    if (row.name == "team-b") b_lookups = row.lookups;
  }
  EXPECT_EQ(a_puts, 3u);
  EXPECT_GE(b_lookups, 3u);
}

TEST(TenantsTest, AReadOnlyCredentialReadsButEveryWriteIsPermissionDenied) {
  TenantServer server(Config(kTwoTenants));
  ASSERT_TRUE(server.status().ok()) << server.status().ToString();
  auto admin = server.ClientWith(kAdminHex);
  auto reader = server.ClientWith(kReaderHex);
  ASSERT_TRUE(admin && reader);
  ASSERT_TRUE(admin->Put("shared/doc", Bytes("original")).ok());
  EXPECT_EQ(Text(*reader->Get("doc")), "original");

  Status put = reader->Put("doc", Bytes("changed"));
  EXPECT_EQ(put.code(), StatusCode::kPermissionDenied) << put.ToString();
  EXPECT_NE(put.message().find("read-only"), std::string::npos) << put.message();
  EXPECT_EQ(put.message().find("team-"), std::string::npos) << "names no other tenant: " << put.message();
  EXPECT_EQ(reader->Put("new", Bytes("x")).code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(reader->Delete("doc").code(), StatusCode::kPermissionDenied);
  const std::vector<std::string_view> keys = {"doc", "other"};
  const std::vector<uint8_t> v = Bytes("v");
  const std::vector<std::span<const uint8_t>> values = {v, v};
  BatchResult batch = reader->BatchPut(keys, values);
  for (const Status& s : batch.statuses) EXPECT_EQ(s.code(), StatusCode::kPermissionDenied) << s.ToString();

  // Nothing stored changed; the connection still serves reads.
  EXPECT_EQ(Text(*admin->Get("shared/doc")), "original");
  EXPECT_EQ(admin->Get("shared/new").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(admin->Get("shared/other").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(Text(*reader->Get("doc")), "original");
  uint64_t refusals = 0;
  for (const server::TenantCountsRow& row : server.daemon().tenant_stats().Snapshot()) {
    if (row.name == "reader") refusals = row.read_only_refusals;
  }
  EXPECT_EQ(refusals, 4u);
}

TEST(TenantsTest, AnOlderClientsNonceWithoutHintStillAuthenticatesAndTheKeyLimitIsShorter) {
  TenantServer server(Config(kTwoTenants));
  ASSERT_TRUE(server.status().ok()) << server.status().ToString();
  // RawConnection's nonce is 32 random bytes: no key hint.
  for (const auto& [hex, max_key] : std::vector<std::pair<std::string, uint32_t>>{
           {kAHex, 1024 - 7}, {kReaderHex, 1024 - 7}, {kAdminHex, 1024}}) {
    auto raw = testing::RawConnection::Open(server.daemon().port());
    ASSERT_TRUE(raw.ok());
    Result<testing::RawResponse> hello = (*raw)->Handshake(hex);
    ASSERT_TRUE(hello.ok()) << hello.status().ToString();
    ASSERT_EQ(hello->header.status, StatusCode::kOk) << hello->message();
    proto::ConnectResponse response;
    std::span<const uint8_t> rest;
    ASSERT_TRUE(proto::DecodeConnectResponse(hello->meta, &response, &rest).ok());
    EXPECT_EQ(response.max_key_bytes, max_key);
  }
  auto wrong = testing::RawConnection::Open(server.daemon().port());
  ASSERT_TRUE(wrong.ok());
  Result<testing::RawResponse> refused = (*wrong)->Handshake(std::string(64, 'f'));
  ASSERT_TRUE(refused.ok());
  EXPECT_EQ(refused->header.status, StatusCode::kAuthFailed);

  // A key that fits 1024 bytes but not with the tenant's prefix in front.
  auto a = server.ClientWith(kAHex);
  ASSERT_TRUE(a);
  Status too_long = a->Put(std::string(1024 - 6, 'k'), Bytes("v"));
  EXPECT_EQ(too_long.code(), StatusCode::kTooLarge) << too_long.ToString();
  EXPECT_NE(too_long.message().find("1017"), std::string::npos) << too_long.message();
  EXPECT_TRUE(a->Put(std::string(1024 - 7, 'k'), Bytes("v")).ok());
}

TEST(TenantsTest, ReloadOfAFileWithProblemsChangesNothingAndAGoodOneReports) {
  TenantServer server(Config(kTwoTenants));
  ASSERT_TRUE(server.status().ok()) << server.status().ToString();
  server.Rewrite(Config("tenants:\n" + Tenant("team-a", "team-a/", kAHex) + Tenant("team-b", "team-", kAHex)));
  Result<server::ReloadReport> bad = server.daemon().Reload();
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("tenants[1].prefix"), std::string::npos) << bad.status().message();
  EXPECT_NE(bad.status().message().find("tenants[1].key"), std::string::npos) << bad.status().message();
  EXPECT_EQ(bad.status().message().find(kAHex), std::string::npos) << "never shows a key";
  // Still the old credentials: B works.
  auto b = server.ClientWith(kBHex);
  ASSERT_TRUE(b);
  EXPECT_TRUE(b->Put("still", Bytes("here")).ok());

  server.Rewrite(Config(kTwoTenants + "    rdma: true\n") + "log:\n  level: debug\n");
  Result<server::ReloadReport> good = server.daemon().Reload();
  ASSERT_TRUE(good.ok()) << good.status().ToString();
  EXPECT_EQ(good->tenants, 3u);
  EXPECT_EQ(good->keys, 4u);
  EXPECT_EQ(good->connections_closed, 0u);
  EXPECT_EQ(good->restart_needed, std::vector<std::string>{"log"});
  EXPECT_NE(good->ToJson().find("\"restart_needed\":[\"log\"]"), std::string::npos) << good->ToJson();
  EXPECT_TRUE(b->Put("still", Bytes("here")).ok());
}

TEST(TenantsTest, RdmaIsRefusedToATenantUnlessItsCredentialAllowsIt) {
  TenantServer server(Config("tenants:\n" + Tenant("tcp-only", "t/", kAHex) +
                             Tenant("fast", "f/", kBHex, "    rdma: true\n")),
                      /*rdma=*/true);
  ASSERT_TRUE(server.status().ok()) << server.status().ToString();
  const std::vector<uint8_t> value(64 << 10, 0x5a);

  // rdma: false: the offer is refused, an auto client goes on over TCP.
  auto tcp_only = server.RdmaClientWith(kAHex, "auto");
  ASSERT_TRUE(tcp_only);
  ASSERT_TRUE(tcp_only->Put("v", value).ok());
  EXPECT_EQ(*tcp_only->Get("v"), value);
  ClientStats stats = tcp_only->Stats();
  EXPECT_EQ(stats.rdma_ops, 0u);
  EXPECT_NE(stats.fallback_reason.find("tenants[].rdma"), std::string::npos) << stats.fallback_reason;

  // rdma: true: puts and gets move by RDMA, under the tenant's prefix.
  auto fast = server.RdmaClientWith(kBHex, "rdma");
  ASSERT_TRUE(fast);
  ASSERT_TRUE(fast->Put("v", value).ok());
  EXPECT_EQ(*fast->Get("v"), value);
  EXPECT_GE(fast->Stats().rdma_ops, 2u);
  auto admin = server.ClientWith(kAdminHex);
  ASSERT_TRUE(admin);
  EXPECT_EQ(*admin->Get("f/v"), value);
  EXPECT_EQ(*admin->Get("t/v"), value);
  EXPECT_EQ(AllKeys(*fast), std::vector<std::string>{"v"});
}

TEST(TenantsTest, ANewAdministratorKeyClosesTheOldKeysConnections) {
  TenantServer server(Config(kTwoTenants));
  ASSERT_TRUE(server.status().ok()) << server.status().ToString();
  auto admin = server.ClientWith(kAdminHex);
  auto a = server.ClientWith(kAHex);
  ASSERT_TRUE(admin && a);
  ASSERT_TRUE(admin->Put("x", Bytes("1")).ok());
  ASSERT_TRUE(a->Put("x", Bytes("2")).ok());
  const std::string next_admin(64, '9');
  std::string yaml = Config(kTwoTenants);
  yaml.replace(yaml.find(kAdminHex), kAdminHex.size(), next_admin);
  server.Rewrite(yaml);
  Result<server::ReloadReport> report = server.daemon().Reload();
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->connections_closed, 1u) << "the old administrator key's connection; A's stays";
  Result<std::vector<uint8_t>> refused = admin->Get("x");
  EXPECT_EQ(refused.status().code(), StatusCode::kAuthFailed) << refused.status().ToString();
  EXPECT_EQ(Text(*a->Get("x")), "2");
  EXPECT_EQ(Text(*server.ClientWith(next_admin)->Get("team-a/x")), "2");
}

// tenants[].max_connections: a tenant holding its limit of connections open
// is refused one more, naming the limit, while another tenant and the
// administrator still connect; a connection that closes gives its slot back,
// and /metrics counts what is open and what was refused.
TEST(TenantsTest, ATenantAtItsConnectionLimitIsRefusedAndCannotLockOthersOut) {
  TenantServer server(Config("tenants:\n" + Tenant("team-a", "team-a/", kAHex, "    max_connections: 3\n") +
                             Tenant("team-b", "team-b/", kBHex)));
  ASSERT_TRUE(server.status().ok()) << server.status().ToString();
  auto open = [&](const std::string& hex) -> std::pair<std::unique_ptr<testing::RawConnection>, StatusCode> {
    auto raw = testing::RawConnection::Open(server.daemon().port());
    EXPECT_TRUE(raw.ok()) << raw.status().ToString();
    if (!raw.ok()) return {nullptr, StatusCode::kUnavailable};
    Result<testing::RawResponse> hello = (*raw)->Handshake(hex);
    EXPECT_TRUE(hello.ok()) << hello.status().ToString();
    if (!hello.ok()) return {nullptr, StatusCode::kUnavailable};
    if (hello->header.status != StatusCode::kOk) {
      EXPECT_NE(hello->message().find("tenant 'team-a' has 3 connections open, its limit "
                                      "(tenants[].max_connections 3)"),
                std::string::npos)
          << hello->message();
      EXPECT_TRUE((*raw)->ClosedByPeer()) << "a refused Connect closes its connection";
    }
    return {std::move(raw).value(), hello->header.status};
  };
  auto sample = [&](const std::string& name) {
    return testing::PrometheusSamples(server.daemon().admin().MetricsText())[name];
  };
  std::vector<std::unique_ptr<testing::RawConnection>> a;
  for (int i = 0; i < 3; ++i) {
    auto [conn, code] = open(kAHex);
    ASSERT_EQ(code, StatusCode::kOk) << "connection " << i << " is within the limit";
    a.push_back(std::move(conn));
  }
  for (int i = 0; i < 2; ++i) EXPECT_EQ(open(kAHex).second, StatusCode::kResourceExhausted);
  // The others are not limited by team-a's connections.
  std::vector<std::unique_ptr<testing::RawConnection>> b;
  for (int i = 0; i < 5; ++i) {
    auto [conn, code] = open(kBHex);
    EXPECT_EQ(code, StatusCode::kOk);
    b.push_back(std::move(conn));
  }
  EXPECT_EQ(open(kAdminHex).second, StatusCode::kOk);
  EXPECT_EQ(sample("memkv_tenant_connections{tenant=\"team-a\"}"), 3);
  EXPECT_EQ(sample("memkv_tenant_connections{tenant=\"team-b\"}"), 5);
  EXPECT_EQ(sample("memkv_tenant_refusals_total{tenant=\"team-a\",reason=\"max_connections\"}"), 2);
  EXPECT_EQ(sample("memkv_tenant_refusals_total{tenant=\"team-b\",reason=\"max_connections\"}"), 0);
  EXPECT_NE(server.daemon().admin().StatusJson().find("\"connections_open\":3,\"connections_refused\":2"),
            std::string::npos);

  // One closes: its slot is free once the server has seen it go.
  a.pop_back();
  ASSERT_TRUE(testing::PollUntil([&] { return sample("memkv_tenant_connections{tenant=\"team-a\"}") == 2; }, 5000));
  auto [again, code] = open(kAHex);
  EXPECT_EQ(code, StatusCode::kOk) << "a closed connection's slot is free again";
  // The client library names the limit in the error of the call it could not make.
  auto client = server.ClientWith(kAHex);
  ASSERT_TRUE(client);
  Status refused = client->Put("k", Bytes("v"));
  EXPECT_EQ(refused.code(), StatusCode::kResourceExhausted) << refused.ToString();
  EXPECT_NE(refused.message().find("tenants[].max_connections"), std::string::npos) << refused.ToString();
}

TEST(TenantsTest, AServerWithoutAConfigFileHasNothingToReload) {
  verbs::FakeFabric fabric;
  server::DaemonOptions options;
  options.config.network.port = 0;
  options.config.memory.max_size_bytes = 16 << 20;
  options.config.memory.block_size_bytes = 1 << 20;
  options.config.memory.prefault = false;
  options.config.storage.mode = config::StorageMode::kMemory;
  options.auth_key.assign(32, 0xaa);
  options.hugepages = storage::HugePagePolicy::kNever;
  server::DaemonSeams seams;
  seams.verbs = &fabric;
  Result<std::unique_ptr<server::Daemon>> daemon = server::Daemon::Create(std::move(options), seams);
  ASSERT_TRUE(daemon.ok()) << daemon.status().ToString();
  Result<server::ReloadReport> report = (*daemon)->Reload();
  EXPECT_EQ(report.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(report.status().message().find("without a config file"), std::string::npos) << report.status().message();
}

// Runs puts and gets of its own keys until stopped, checking every value.
class Load {
 public:
  explicit Load(std::string name) : name_(std::move(name)) {}
  ~Load() { Stop(); }

  void Start(std::unique_ptr<Client> client) {
    client_ = std::move(client);
    thread_ = std::thread([this] { Run(); });
  }
  // The client is swapped between operations.
  void Swap(std::unique_ptr<Client> next) {
    std::lock_guard<std::mutex> lock(mu_);
    client_ = std::move(next);
  }
  void Stop() {
    stop_.store(true);
    if (thread_.joinable()) thread_.join();
  }
  uint64_t ok() const { return ok_.load(); }
  // Waits until `more` further operations succeeded (false at the deadline).
  bool Progress(uint64_t more) const {
    const uint64_t target = ok() + more;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (ok() < target) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));  // poll interval
    }
    return true;
  }
  std::vector<Status> failures() const {
    std::lock_guard<std::mutex> lock(mu_);
    return failures_;
  }
  uint64_t wrong_data() const { return wrong_.load(); }

 private:
  void Run() {
    for (uint64_t i = 0; !stop_.load(); ++i) {
      const std::string key = name_ + "-" + std::to_string(i % 64);
      const std::string value = name_ + "/" + std::to_string(i);
      std::lock_guard<std::mutex> lock(mu_);
      Status put = client_->Put(key, Bytes(value));
      if (!put.ok()) {
        failures_.push_back(put);
        continue;
      }
      Result<std::vector<uint8_t>> got = client_->Get(key);
      if (!got.ok()) {
        failures_.push_back(got.status());
        continue;
      }
      if (Text(*got) != value) wrong_.fetch_add(1);
      ok_.fetch_add(1);
    }
  }

  std::string name_;
  mutable std::mutex mu_;
  std::unique_ptr<Client> client_;  // guarded by mu_
  std::vector<Status> failures_;    // guarded by mu_
  std::atomic<uint64_t> ok_{0};
  std::atomic<uint64_t> wrong_{0};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

TEST(TenantsTest, RotatingAKeyUnderLoadLosesNoRequestAndARemovedKeyIsRefused) {
  TenantServer server(Config("tenants:\n" + Tenant("team-a", "team-a/", kAHex) + Tenant("team-b", "team-b/", kBHex)));
  ASSERT_TRUE(server.status().ok()) << server.status().ToString();
  Load a("a"), b("b");
  a.Start(server.ClientWith(kAHex));
  b.Start(server.ClientWith(kBHex));
  ASSERT_TRUE(a.Progress(200));
  ASSERT_TRUE(b.Progress(200));

  // 1. A gets a next key; B's tenant is removed.
  server.Rewrite(Config("tenants:\n" + Tenant("team-a", "team-a/", kAHex, "    next_key: \"" + kA2Hex + "\"\n")));
  Result<server::ReloadReport> first = server.daemon().Reload();
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->keys, 3u);
  ASSERT_TRUE(a.Progress(200));
  // B's client is refused (AuthFailed, saying why) within the deadline.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  bool refused = false;
  while (!refused && std::chrono::steady_clock::now() < deadline) {
    for (const Status& s : b.failures()) {
      if (s.code() == StatusCode::kAuthFailed) refused = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // poll interval
  }
  ASSERT_TRUE(refused);
  const uint64_t b_ok = b.ok();

  // 2. A's client switches to the next key; the old one is removed.
  a.Swap(server.ClientWith(kA2Hex));
  ASSERT_TRUE(a.Progress(200));
  server.Rewrite(Config("tenants:\n" + Tenant("team-a", "team-a/", kA2Hex)));
  Result<server::ReloadReport> second = server.daemon().Reload();
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(second->keys, 2u);
  EXPECT_EQ(second->connections_closed, 0u) << "A's connections all use the key that stays";
  ASSERT_TRUE(a.Progress(200));
  a.Stop();
  b.Stop();

  EXPECT_TRUE(a.failures().empty()) << a.failures().front().ToString();
  EXPECT_EQ(a.wrong_data(), 0u);
  EXPECT_EQ(b.wrong_data(), 0u);
  EXPECT_EQ(b.ok(), b_ok) << "nothing B did succeeded after its refusal";
  for (const Status& s : b.failures()) {
    // The removed key's connections are answered AuthFailed (or, closed
    // while idle, noticed as lost before the reconnect is refused).
    EXPECT_TRUE(s.code() == StatusCode::kAuthFailed || s.code() == StatusCode::kUnavailable) << s.ToString();
    if (s.code() == StatusCode::kAuthFailed) {
      EXPECT_NE(s.message().find("reload"), std::string::npos) << s.ToString();
    }
  }
}

// A tenant writing ten times its DRAM quota through the server evicts only
// its own values: every byte of the other tenant's and the administrator's
// is still there, and the tenant's rows in /metrics and /v1/status say what
// happened.
TEST(TenantsTest, ATenantWritingTenTimesItsQuotaNeverEvictsAnotherTenantsBytes) {
  TenantServer server(Config("tenants:\n" + Tenant("team-a", "team-a/", kAHex, "    dram_quota: 2MiB\n") +
                             Tenant("team-b", "team-b/", kBHex)));
  ASSERT_TRUE(server.status().ok()) << server.status().ToString();
  auto a = server.ClientWith(kAHex);
  auto b = server.ClientWith(kBHex);
  auto admin = server.ClientWith(kAdminHex);
  ASSERT_TRUE(a && b && admin);

  constexpr size_t kValueBytes = 64 << 10;
  auto value = [](char tag, int i) {
    std::vector<uint8_t> v(kValueBytes);
    for (size_t j = 0; j < v.size(); ++j) v[j] = static_cast<uint8_t>(tag + i * 7 + j % 251);
    return v;
  };
  for (int i = 0; i < 32; ++i) ASSERT_TRUE(b->Put("b" + std::to_string(i), value('b', i)).ok());
  for (int i = 0; i < 16; ++i) ASSERT_TRUE(admin->Put("admin/" + std::to_string(i), value('z', i)).ok());
  // 10 x 2 MiB in 64 KiB values.
  for (int i = 0; i < 320; ++i) {
    ASSERT_TRUE(a->Put("a" + std::to_string(i), value('a', i)).ok()) << i;
  }

  for (int i = 0; i < 32; ++i) EXPECT_EQ(*b->Get("b" + std::to_string(i)), value('b', i)) << i;
  for (int i = 0; i < 16; ++i) EXPECT_EQ(*admin->Get("admin/" + std::to_string(i)), value('z', i)) << i;
  EXPECT_EQ(*a->Get("a319"), value('a', 319)) << "the newest of A's values stays";
  EXPECT_EQ(a->Get("a0").status().code(), StatusCode::kNotFound) << "the oldest made room";

  const std::vector<TenantUsage> usage = server.daemon().tier().TenantUsages();
  ASSERT_EQ(usage.size(), 2u);
  EXPECT_LE(usage[0].dram_bytes, 2u << 20);
  EXPECT_GT(usage[0].quota_evictions, 0u);
  EXPECT_EQ(usage[1].dram_bytes, 32 * kValueBytes);
  EXPECT_EQ(usage[1].evictions, 0u);

  const std::string metrics = server.daemon().admin().MetricsText();
  EXPECT_NE(metrics.find("memkv_tenant_quota_bytes{tenant=\"team-a\",tier=\"dram\"} 2097152\n"), std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("memkv_tenant_evictions_total{tenant=\"team-b\"} 0\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("memkv_tenant_puts_total{tenant=\"team-a\"} 320\n"), std::string::npos) << metrics;
  const std::string status = server.daemon().admin().StatusJson();
  EXPECT_NE(status.find("\"name\":\"team-a\",\"configured\":true"), std::string::npos) << status;
}

}  // namespace
}  // namespace memkv
