// A fleet found through DNS (docs/fleet.md, "Discovery"): real `memkv start`
// processes on 127.0.0.2.. sharing one port behind one name, a real dnsmasq
// on a loopback port answering for it, and clients that re-resolve the name
// while they put and get. Servers join and leave by changing the records.
//
// What must hold: the client follows the records without a restart; no call
// fails but with a miss; only the keys of the server that joined or left
// move, and their fraction is within 2 points of the ideal (the joiner's or
// leaver's weighted share); through a join, the grace lookup at the previous
// owner keeps every stored key a hit, and without it exactly the moved keys
// miss.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tests/dnsmasq_fixture.h"
#include "tests/harness.h"

namespace memkv::testing {
namespace {

constexpr char kName[] = "memkv.fleet.test";
constexpr int kKeys = 20000;   // placement only: where each key lives
constexpr int kStored = 2000;  // stored for real, for the hit rates
constexpr size_t kValueBytes = 512;

std::vector<uint8_t> ValueOf(const std::string& key) { return Pattern(kValueBytes, std::hash<std::string>{}(key)); }

std::map<std::string, std::string> Owners(const Client& client, const std::vector<std::string>& keys) {
  const std::vector<ServerView> view = client.Servers();
  std::map<std::string, std::string> owners;
  for (const std::string& k : keys) owners[k] = view.at(client.ServerFor(k)).name;
  return owners;
}

size_t UpCount(const Client& client) {
  size_t up = 0;
  for (const ServerView& v : client.Servers()) up += v.state == "up" ? 1 : 0;
  return up;
}

double ShareOf(const Client& client, const std::string& name) {
  for (const ServerView& v : client.Servers()) {
    if (v.name == name) return v.share;
  }
  return 0;
}

class FleetDiscoveryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(RaiseOpenFilesLimit(4096));
    Result<std::unique_ptr<DnsmasqServer>> dns = DnsmasqServer::Start();
    if (!dns.ok()) GTEST_SKIP() << dns.status().ToString();
    dns_ = std::move(dns).value();
    hosts_ = {"127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"};
    port_ = FreeServerPort(hosts_);
    ASSERT_NE(port_, 0);
    for (size_t i = 0; i < hosts_.size(); ++i) {
      ServerSpec spec;
      spec.host = hosts_[i];
      spec.port = port_;
      spec.memory_max_size = "64 MiB";  // equal capacity: equal weights
      servers_.push_back(std::make_unique<ServerProcess>());
      ASSERT_TRUE(servers_.back()->Start(spec).ok()) << servers_.back()->Stderr();
    }
    for (int i = 0; i < kKeys; ++i) keys_.push_back("block/" + std::to_string(i));
  }

  std::unique_ptr<Client> ClientWithGrace(uint32_t grace_ms) {
    ClientOptions o;
    o.servers = {"dns:" + std::string(kName) + ":" + std::to_string(port_)};
    o.auth_key_hex = kTestKeyHex;
    o.transport = "tcp";
    o.dns_server = dns_->address();
    o.discovery_interval_ms = 100;
    o.rebalance_grace_ms = grace_ms;
    Result<std::unique_ptr<Client>> c = Client::Create(o);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? std::move(c).value() : nullptr;
  }

  std::unique_ptr<DnsmasqServer> dns_;
  std::vector<std::string> hosts_;
  uint16_t port_ = 0;
  std::vector<std::unique_ptr<ServerProcess>> servers_;
  std::vector<std::string> keys_;
};

// Load running through every change: any failure but a miss is recorded.
class Load {
 public:
  explicit Load(Client* client) : client_(client) {
    for (int t = 0; t < 3; ++t) threads_.emplace_back([this, t] { Run(t); });
  }
  ~Load() { Stop(); }
  void Stop() {
    stop_ = true;
    for (std::thread& t : threads_) t.join();
    threads_.clear();
  }
  uint64_t ops() const { return ops_.load(); }
  std::vector<std::string> failures() {
    std::lock_guard<std::mutex> lock(mu_);
    return failures_;
  }

 private:
  void Run(int t) {
    for (uint64_t n = 0; !stop_; ++n) {
      const std::string key = "load/" + std::to_string(t) + "/" + std::to_string(n % 500);
      Status put = client_->Put(key, ValueOf(key));
      Result<std::vector<uint8_t>> got = client_->Get(key);
      ops_.fetch_add(2);
      std::lock_guard<std::mutex> lock(mu_);
      if (!put.ok()) failures_.push_back("put " + key + ": " + put.ToString());
      if (!got.ok() && got.status().code() != StatusCode::kNotFound) {
        failures_.push_back("get " + key + ": " + got.status().ToString());
      } else if (got.ok() && *got != ValueOf(key)) {
        failures_.push_back("get " + key + ": wrong bytes");
      }
    }
  }
  Client* client_;
  std::vector<std::thread> threads_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> ops_{0};
  std::mutex mu_;
  std::vector<std::string> failures_;
};

TEST_F(FleetDiscoveryTest, JoinAndLeaveThroughDnsMoveOnlyTheirKeysUnderLoad) {
  ASSERT_TRUE(dns_->SetAddresses(kName, {hosts_[0], hosts_[1], hosts_[2]}).ok());
  std::unique_ptr<Client> client = ClientWithGrace(300000);
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(PollUntil([&] { return UpCount(*client) == 3; }, 10000));
  Load load(client.get());

  // Join: a fourth address appears in DNS.
  const std::map<std::string, std::string> before = Owners(*client, keys_);
  ASSERT_TRUE(dns_->SetAddresses(kName, hosts_).ok());
  ASSERT_TRUE(PollUntil([&] { return UpCount(*client) == 4; }, 10000)) << "the client did not pick up the 4th server";
  const std::string joiner = servers_[3]->address();
  const std::map<std::string, std::string> joined = Owners(*client, keys_);
  size_t moved = 0;
  for (const std::string& k : keys_) {
    if (before.at(k) == joined.at(k)) continue;
    ++moved;
    EXPECT_EQ(joined.at(k), joiner) << k << " moved between two servers that stayed";
  }
  const double join_moved = static_cast<double>(moved) / kKeys;
  const double join_ideal = ShareOf(*client, joiner);
  std::printf("join: %.2f%% of keys moved, ideal %.2f%%\n", 100 * join_moved, 100 * join_ideal);
  EXPECT_NEAR(join_moved, join_ideal, 0.02);

  // Leave: the second address disappears.
  const std::string leaver = servers_[1]->address();
  const double leaver_share = ShareOf(*client, leaver);
  ASSERT_TRUE(dns_->SetAddresses(kName, {hosts_[0], hosts_[2], hosts_[3]}).ok());
  ASSERT_TRUE(PollUntil([&] { return client->Servers().size() == 3 && UpCount(*client) == 3; }, 10000));
  const std::map<std::string, std::string> left = Owners(*client, keys_);
  moved = 0;
  for (const std::string& k : keys_) {
    if (joined.at(k) == left.at(k)) continue;
    ++moved;
    EXPECT_EQ(joined.at(k), leaver) << k << " moved though its server stayed";
  }
  const double leave_moved = static_cast<double>(moved) / kKeys;
  std::printf("leave: %.2f%% of keys moved, ideal %.2f%%\n", 100 * leave_moved, 100 * leaver_share);
  EXPECT_NEAR(leave_moved, leaver_share, 0.02);

  const uint64_t ops = load.ops();
  ASSERT_TRUE(PollUntil([&] { return load.ops() > ops + 100; }, 10000));
  load.Stop();
  for (const std::string& f : load.failures()) ADD_FAILURE() << f;
}

TEST_F(FleetDiscoveryTest, SrvRecordsNameServersOnTheirOwnPorts) {
  // Two servers at 127.0.0.2 and .3 on the shared port, listed by SRV.
  const std::string owner = std::string("_memkv._tcp.") + kName;
  ASSERT_TRUE(dns_->SetSrv(owner, {{"a." + std::string(kName), port_, hosts_[0]},
                                   {"b." + std::string(kName), port_, hosts_[1]}})
                  .ok());
  ClientOptions o;
  o.servers = {"srv:" + std::string(kName)};
  o.auth_key_hex = kTestKeyHex;
  o.transport = "tcp";
  o.dns_server = dns_->address();
  o.discovery_interval_ms = 100;
  Result<std::unique_ptr<Client>> c = Client::Create(o);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_TRUE(PollUntil([&] { return UpCount(**c) == 2; }, 10000));
  ASSERT_TRUE((*c)->Put("srv-key", ValueOf("srv-key")).ok());
  ASSERT_TRUE(dns_->SetSrv(owner, {{"a." + std::string(kName), port_, hosts_[0]},
                                   {"b." + std::string(kName), port_, hosts_[1]},
                                   {"c." + std::string(kName), port_, hosts_[2]}})
                  .ok());
  ASSERT_TRUE(PollUntil([&] { return UpCount(**c) == 3; }, 10000));
  Result<std::vector<uint8_t>> got = (*c)->Get("srv-key");
  ASSERT_TRUE(got.ok()) << got.status().ToString();  // moved or not, the grace lookup finds it
  EXPECT_EQ(*got, ValueOf("srv-key"));
}

// The hit rate of keys stored before a join, read right after it: the
// figure docs/fleet.md quotes ("Rebalancing after a join").
TEST_F(FleetDiscoveryTest, GraceLookupKeepsEveryKeyAHitThroughAJoin) {
  double hit_rate[2] = {0, 0};
  double moved_fraction = 0;
  for (int with_grace = 0; with_grace < 2; ++with_grace) {
    ASSERT_TRUE(dns_->SetAddresses(kName, {hosts_[0], hosts_[1], hosts_[2]}).ok());
    std::unique_ptr<Client> client = ClientWithGrace(with_grace ? 300000 : 0);
    ASSERT_NE(client, nullptr);
    ASSERT_TRUE(PollUntil([&] { return client->Servers().size() == 3 && UpCount(*client) == 3; }, 10000));
    const std::string prefix = "grace" + std::to_string(with_grace) + "/";
    std::vector<std::string> stored;
    for (int i = 0; i < kStored; ++i) {
      stored.push_back(prefix + std::to_string(i));
      ASSERT_TRUE(client->Put(stored.back(), ValueOf(stored.back())).ok());
    }
    const std::map<std::string, std::string> before = Owners(*client, stored);
    ASSERT_TRUE(dns_->SetAddresses(kName, hosts_).ok());
    ASSERT_TRUE(PollUntil([&] { return UpCount(*client) == 4; }, 10000));
    const std::map<std::string, std::string> after = Owners(*client, stored);
    size_t hits = 0, moved = 0;
    for (const std::string& k : stored) {
      moved += before.at(k) != after.at(k) ? 1 : 0;
      Result<std::vector<uint8_t>> got = client->Get(k);
      if (got.ok()) {
        EXPECT_EQ(*got, ValueOf(k));
        ++hits;
      } else {
        EXPECT_EQ(got.status().code(), StatusCode::kNotFound) << got.status().ToString();
      }
    }
    hit_rate[with_grace] = static_cast<double>(hits) / kStored;
    if (!with_grace) moved_fraction = static_cast<double>(moved) / kStored;
    if (with_grace) {
      EXPECT_EQ(hits, stored.size()) << "the grace lookup missed keys the previous owner holds";
    } else {
      EXPECT_EQ(hits, stored.size() - moved) << "without the grace lookup exactly the moved keys miss";
    }
  }
  std::printf("hit rate through a join of a 4th server: %.1f%% with the grace lookup, %.1f%% without "
              "(where %.1f%% of keys moved)\n",
              100 * hit_rate[1], 100 * hit_rate[0], 100 * moved_fraction);
  EXPECT_GT(hit_rate[1], hit_rate[0]);
}

// Weighted placement with real servers: one with twice the DRAM of the
// other reports twice the capacity, and receives about twice the keys.
TEST(FleetWeightTest, AServerTwiceAsLargeOwnsAboutTwiceTheKeys) {
  ServerSpec small_spec, large_spec;
  small_spec.memory_max_size = "64 MiB";
  large_spec.memory_max_size = "128 MiB";
  ServerProcess small_server, large_server;
  ASSERT_TRUE(small_server.Start(small_spec).ok()) << small_server.Stderr();
  ASSERT_TRUE(large_server.Start(large_spec).ok()) << large_server.Stderr();
  std::unique_ptr<Client> client = ClientFor({&small_server, &large_server});
  ASSERT_TRUE(PollUntil([&] { return UpCount(*client) == 2; }, 10000));
  std::map<std::string, uint64_t> weight;
  for (const ServerView& v : client->Servers()) weight[v.name] = v.weight;
  EXPECT_EQ(weight.at(large_server.address()), 2 * weight.at(small_server.address()));
  std::map<std::string, size_t> owned;
  const std::vector<ServerView> view = client->Servers();
  for (int i = 0; i < kKeys; ++i) ++owned[view.at(client->ServerFor("block/" + std::to_string(i))).name];
  const double large_share = static_cast<double>(owned[large_server.address()]) / kKeys;
  std::printf("a server of twice the capacity owns %.2f%% of %d keys (ideal 66.67%%)\n", 100 * large_share, kKeys);
  EXPECT_NEAR(large_share, 2.0 / 3.0, 0.02);
}

}  // namespace
}  // namespace memkv::testing
