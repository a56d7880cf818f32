// Membership as a caller meets it: servers that join, leave, drain, shed,
// go down and come back, and servers that report ids and weights, against
// FakeServers (which answer ServerInfo, Draining and Busy on demand) and a
// resolver the test controls (the server list is "dns:fleet.test:9900").
#include "client/membership.h"

#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <iostream>
#include <mutex>
#include <map>
#include <thread>

#include "base/bytes.h"
#include "client/client_from_config.h"
#include "client/fake_server.h"
#include "verbs/fake.h"

namespace memkv::client {
namespace {

using client::testing::FakeServer;

using client::testing::TestKey;

// The servers "dns:fleet.test:9900" resolves to, as the test sets them.
class FleetDns {
 public:
  void Set(const std::vector<const FakeServer*>& servers) {
    std::lock_guard<std::mutex> lock(mu_);
    servers_.clear();
    for (const FakeServer* s : servers) {
      servers_.push_back(ResolvedServer{"127.0.0.1", s->port(), s->address(), "dns:fleet.test:9900"});
    }
  }
  ResolverFactory Factory() {
    return [this](const std::string&) -> Result<std::unique_ptr<Resolver>> {
      return std::unique_ptr<Resolver>(std::make_unique<Fake>(this));
    };
  }

 private:
  struct Fake final : Resolver {
    explicit Fake(FleetDns* dns) : dns_(dns) {}
    std::vector<ResolvedServer> Resolve(std::span<const config::ServerSource>, uint32_t,
                                        std::vector<Status>*) override {
      std::lock_guard<std::mutex> lock(dns_->mu_);
      return dns_->servers_;
    }
    FleetDns* dns_;
  };
  std::mutex mu_;
  std::vector<ResolvedServer> servers_;
};

proto::ServerInfo Info(std::string id, uint64_t weight = 1) {
  proto::ServerInfo info;
  info.id = std::move(id);
  info.capacity_bytes = 1 << 30;
  info.weight = weight;
  return info;
}

class MembershipTest : public ::testing::Test {
 protected:
  // Fakes answering ServerInfo with ids s0, s1, ... and `weights`.
  void StartFakes(size_t n, std::vector<uint64_t> weights = {}) {
    for (size_t i = 0; i < n; ++i) {
      fakes_.push_back(FakeServer::Start(TestKey()));
      fakes_.back()->set_info(Info("s" + std::to_string(i), weights.empty() ? 1 : weights[i]));
    }
  }
  std::vector<const FakeServer*> Fakes(std::vector<size_t> which) const {
    std::vector<const FakeServer*> out;
    for (size_t i : which) out.push_back(fakes_[i].get());
    return out;
  }
  std::unique_ptr<Client> MakeClient(uint32_t grace_ms = 300'000, uint32_t interval_ms = 20) {
    ClientOptions o;
    o.servers = {"dns:fleet.test:9900"};
    o.auth_key_hex = HexEncode(TestKey().data(), TestKey().size());
    o.timeout_ms = 3000;
    o.connect_timeout_ms = 1000;
    o.transport = "tcp";
    o.discovery_interval_ms = interval_ms;
    o.rebalance_grace_ms = grace_ms;
    auto c = CreateClientWithVerbs(o, fabric_, dns_.Factory());
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? std::move(c).value() : nullptr;
  }
  // Polls until `done` or 10 s pass.
  static bool Eventually(const std::function<bool()>& done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!done()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::yield();
    }
    return true;
  }
  static bool Placed(const Client& c, size_t n) {
    size_t up = 0;
    for (const ServerView& v : c.Servers()) up += v.share > 0 ? 1 : 0;
    return up == n;
  }
  static std::string OwnerName(const Client& c, std::string_view key) {
    std::vector<ServerView> servers = c.Servers();
    return servers[c.ServerFor(key)].name;
  }
  static std::string Key(int i) { return "block-" + std::to_string(i * 2654435761u); }

  verbs::FakeFabric fabric_;
  FleetDns dns_;
  std::vector<std::unique_ptr<FakeServer>> fakes_;
  const std::vector<uint8_t> value_ = std::vector<uint8_t>(64, 7);
};

TEST_F(MembershipTest, WeightedServersGetTheirShareOfKeys) {
  StartFakes(3, {1, 1, 2});
  dns_.Set(Fakes({0, 1, 2}));
  auto c = MakeClient();
  ASSERT_NE(c, nullptr);
  std::vector<ServerView> servers = c->Servers();
  ASSERT_EQ(servers.size(), 3u);
  std::map<std::string, double> share;
  for (const ServerView& v : servers) {
    EXPECT_EQ(v.state, "up") << v.name << ": " << v.detail;
    share[v.id] = v.share;
  }
  EXPECT_DOUBLE_EQ(share["s2"], 0.5);
  constexpr int kKeys = 4000;
  for (int i = 0; i < kKeys; ++i) ASSERT_TRUE(c->Put(Key(i), value_).ok());
  EXPECT_NEAR(fakes_[0]->stored_keys() / double(kKeys), 0.25, 0.03);
  EXPECT_NEAR(fakes_[1]->stored_keys() / double(kKeys), 0.25, 0.03);
  EXPECT_NEAR(fakes_[2]->stored_keys() / double(kKeys), 0.50, 0.03);
}

// 4 threads of puts and gets run while a 5th server joins and then one of
// the first four leaves: no call fails except by a miss, and the keys that
// change owner are those rendezvous hashing moves.
TEST_F(MembershipTest, JoinAndLeaveUnderLoadMoveOnlyTheirShare) {
  StartFakes(5);
  dns_.Set(Fakes({0, 1, 2, 3}));
  auto c = MakeClient();
  ASSERT_NE(c, nullptr);
  constexpr int kKeys = 5000;
  std::vector<std::string> owner(kKeys);
  for (int i = 0; i < kKeys; ++i) {
    ASSERT_TRUE(c->Put(Key(i), value_).ok());
    owner[i] = OwnerName(*c, Key(i));
  }
  std::atomic<bool> stop{false};
  std::atomic<int> failures{0};
  std::vector<std::thread> load;
  for (int t = 0; t < 4; ++t) {
    load.emplace_back([&, t] {
      for (int n = 0; !stop.load(); ++n) {
        const std::string key = "load-" + std::to_string(t) + "-" + std::to_string(n % 500);
        if (!c->Put(key, value_).ok()) failures.fetch_add(1);
        Result<std::vector<uint8_t>> got = c->Get(Key((n * 7 + t) % kKeys));
        if (!got.ok() && got.status().code() != StatusCode::kNotFound) failures.fetch_add(1);
      }
    });
  }
  auto moved_fraction = [&] {
    int moved = 0;
    for (int i = 0; i < kKeys; ++i) moved += OwnerName(*c, Key(i)) != owner[i] ? 1 : 0;
    return static_cast<double>(moved) / kKeys;
  };
  dns_.Set(Fakes({0, 1, 2, 3, 4}));
  ASSERT_TRUE(Eventually([&] { return Placed(*c, 5); }));
  const double joined = moved_fraction();
  EXPECT_NEAR(joined, 1.0 / 5, 0.02);
  for (int i = 0; i < kKeys; ++i) {
    const std::string now = OwnerName(*c, Key(i));
    if (now != owner[i]) {
      EXPECT_EQ(now, fakes_[4]->address()) << "key moved between servers that stayed";
    }
    owner[i] = now;
  }
  dns_.Set(Fakes({0, 2, 3, 4}));  // server 1 leaves
  ASSERT_TRUE(Eventually([&] { return c->Servers().size() == 4; }));
  const double left = moved_fraction();
  EXPECT_NEAR(left, 1.0 / 5, 0.02);
  stop = true;
  for (std::thread& t : load) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_GE(c->Stats().placement_changes, 2u);
}

// Keys stored before a join, read after it: with the grace window every
// one is found (on its previous owner); without, the moved ones are misses.
// (docs/fleet.md quotes the figures this prints.)
TEST_F(MembershipTest, GraceWindowFindsKeysOnTheirPreviousOwner) {
  StartFakes(5);
  constexpr int kKeys = 3000;
  auto hit_rate = [&](uint32_t grace_ms, const std::string& prefix, ClientStats* stats) {
    dns_.Set(Fakes({0, 1, 2, 3}));
    auto c = MakeClient(grace_ms);
    EXPECT_NE(c, nullptr);
    for (int i = 0; i < kKeys; ++i) EXPECT_TRUE(c->Put(prefix + Key(i), value_).ok());
    dns_.Set(Fakes({0, 1, 2, 3, 4}));
    EXPECT_TRUE(Eventually([&] { return Placed(*c, 5); }));
    int hits = 0;
    for (int i = 0; i < kKeys; ++i) hits += c->Get(prefix + Key(i)).ok() ? 1 : 0;
    *stats = c->Stats();
    return static_cast<double>(hits) / kKeys;
  };
  ClientStats with_stats, without_stats;
  const double with_grace = hit_rate(300'000, "a/", &with_stats);
  const double without_grace = hit_rate(0, "b/", &without_stats);
  std::cout << "hit rate of keys stored before a join of a 5th server: with grace " << with_grace
            << ", without " << without_grace << "\n";
  EXPECT_EQ(with_grace, 1.0);
  EXPECT_LT(without_grace, with_grace);
  EXPECT_NEAR(without_grace, 1.0 - 1.0 / 5, 0.03);
  EXPECT_GT(with_stats.grace_lookups, 0u);
  EXPECT_EQ(with_stats.grace_hits, with_stats.grace_lookups);
  EXPECT_EQ(without_stats.grace_lookups, 0u);
}

TEST_F(MembershipTest, ADrainingServerGetsNoNewKeysAndItsKeysAreStillRead) {
  StartFakes(3);
  dns_.Set(Fakes({0, 1, 2}));
  // Refreshed rarely: the client learns of the drain from a put's answer
  // (its ServerInfo, saying otherwise, would clear it).
  auto c = MakeClient(300'000, /*interval_ms=*/3'600'000);
  ASSERT_NE(c, nullptr);
  constexpr int kKeys = 600;
  for (int i = 0; i < kKeys; ++i) ASSERT_TRUE(c->Put(Key(i), value_).ok());
  const size_t before = fakes_[0]->stored_keys();
  ASSERT_GT(before, 0u);
  fakes_[0]->set_put_answer(StatusCode::kDraining);
  for (int i = 0; i < kKeys; ++i) ASSERT_TRUE(c->Put("new-" + Key(i), value_).ok()) << i;
  std::vector<std::string_view> batch_keys;
  std::vector<std::string> batch_names;
  for (int i = 0; i < 200; ++i) batch_names.push_back("batch-" + Key(i));
  for (const std::string& k : batch_names) batch_keys.push_back(k);
  std::vector<std::span<const uint8_t>> values(batch_keys.size(), value_);
  BatchResult r = c->BatchPut(batch_keys, values);
  for (const Status& s : r.statuses) ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(fakes_[0]->stored_keys(), before);  // no new key on the draining server
  for (int i = 0; i < kKeys; ++i) ASSERT_TRUE(c->Get(Key(i)).ok()) << i;
  for (int i = 0; i < kKeys; ++i) ASSERT_TRUE(c->Get("new-" + Key(i)).ok()) << i;
  BatchResult exists = c->BatchExists(batch_keys);
  for (const Status& s : exists.statuses) ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_GT(c->Stats().fallback_writes, 0u);
  EXPECT_GT(c->Stats().grace_hits, 0u);  // the new keys, found on the next server
  bool draining = false;
  for (const ServerView& v : c->Servers()) draining = draining || (v.name == fakes_[0]->address() && v.state == "draining");
  EXPECT_TRUE(draining);
}

TEST_F(MembershipTest, ABusyServerShedsThePutAndStillServesGets) {
  StartFakes(2);
  dns_.Set(Fakes({0, 1}));
  auto c = MakeClient();
  ASSERT_NE(c, nullptr);
  std::string key;
  for (int i = 0; key.empty(); ++i) {
    if (OwnerName(*c, Key(i)) == fakes_[0]->address()) key = Key(i);
  }
  ASSERT_TRUE(c->Put(key, value_).ok());
  fakes_[0]->set_put_answer(StatusCode::kBusy);
  EXPECT_EQ(c->Put(key, value_).code(), StatusCode::kBusy);
  EXPECT_FALSE(fakes_[1]->Has(key));  // not stored elsewhere
  ASSERT_TRUE(c->Get(key).ok());
  EXPECT_GE(c->Stats().stores_shed, 1u);
  bool busy = false;
  for (const ServerView& v : c->Servers()) busy = busy || (v.name == fakes_[0]->address() && v.state == "busy");
  EXPECT_TRUE(busy);
}

TEST_F(MembershipTest, ADownServersKeysAreMissesAndItIsUsedAgainAfterARestart) {
  StartFakes(3);
  dns_.Set(Fakes({0, 1, 2}));
  auto c = MakeClient(/*grace_ms=*/0);
  ASSERT_NE(c, nullptr);
  constexpr int kKeys = 300;
  std::vector<std::string> on_first;
  for (int i = 0; i < kKeys; ++i) {
    ASSERT_TRUE(c->Put(Key(i), value_).ok());
    if (OwnerName(*c, Key(i)) == fakes_[0]->address()) on_first.push_back(Key(i));
  }
  ASSERT_FALSE(on_first.empty());
  const uint16_t port = fakes_[0]->port();
  fakes_[0].reset();  // stopped
  for (const std::string& key : on_first) {
    Result<std::vector<uint8_t>> got = c->Get(key);
    EXPECT_EQ(got.status().code(), StatusCode::kNotFound) << got.status().ToString();
  }
  for (const std::string& key : on_first) ASSERT_TRUE(c->Put("while-down-" + key, value_).ok());
  for (const std::string& key : on_first) ASSERT_TRUE(c->Get("while-down-" + key).ok());
  fakes_[0] = FakeServer::Start(TestKey(), FakeServer::Mode::kNormal, 128, port);
  ASSERT_NE(fakes_[0], nullptr);
  fakes_[0]->set_info(Info("s0"));
  ASSERT_TRUE(Eventually([&] {
    for (const ServerView& v : c->Servers()) {
      if (v.name == fakes_[0]->address()) return v.state == "up";
    }
    return false;
  }));
  // Its keys are its own again (it came back empty: a restart of a memory
  // server).
  for (const std::string& key : on_first) ASSERT_TRUE(c->Put(key, value_).ok());
  EXPECT_EQ(fakes_[0]->stored_keys(), on_first.size());
  for (const std::string& key : on_first) EXPECT_TRUE(fakes_[0]->Has(key)) << key;
}

TEST_F(MembershipTest, TwoServersWithOneIdLeaveTheSecondOutOfPlacement) {
  StartFakes(2);
  fakes_[1]->set_info(Info("s0"));
  dns_.Set(Fakes({0, 1}));
  auto c = MakeClient();
  ASSERT_NE(c, nullptr);
  std::vector<ServerView> servers = c->Servers();
  ASSERT_EQ(servers.size(), 2u);
  const bool first_wins = fakes_[0]->address() < fakes_[1]->address();
  const ServerView& dup = servers[first_wins ? 1 : 0];
  EXPECT_EQ(dup.state, "duplicate");
  EXPECT_EQ(dup.share, 0);
  EXPECT_NE(dup.detail.find("same data directory or drive copied"), std::string::npos) << dup.detail;
  EXPECT_NE(dup.detail.find(servers[first_wins ? 0 : 1].name), std::string::npos) << dup.detail;
  EXPECT_NE(dup.detail.find("s0"), std::string::npos) << dup.detail;
  EXPECT_EQ(servers[first_wins ? 0 : 1].state, "up");
  EXPECT_DOUBLE_EQ(servers[first_wins ? 0 : 1].share, 1.0);
  EXPECT_EQ(c->Stats().server_problems, 1u);
}

TEST_F(MembershipTest, AnIdChangedBehindAnAddressIsReportedAndPlacedAnew) {
  StartFakes(2);
  dns_.Set(Fakes({0, 1}));
  auto c = MakeClient();
  ASSERT_NE(c, nullptr);
  fakes_[0]->set_info(Info("s0-reformatted"));
  ASSERT_TRUE(Eventually([&] {
    for (const ServerView& v : c->Servers()) {
      if (v.id == "s0-reformatted") return true;
    }
    return false;
  }));
  EXPECT_GE(c->Stats().server_problems, 1u);
  EXPECT_GE(c->Stats().placement_changes, 1u);
}

TEST_F(MembershipTest, NoReachableServerAnswersUnavailableNamingThem) {
  StartFakes(1);
  const std::string address = fakes_[0]->address();
  const uint16_t port = fakes_[0]->port();
  dns_.Set(Fakes({0}));
  fakes_[0].reset();
  auto c = MakeClient();
  ASSERT_NE(c, nullptr);  // Create does not fail because a server is down
  Status s = c->Put("k", value_);
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_NE(s.message().find(address), std::string::npos) << s.ToString();
  ASSERT_EQ(c->Servers().size(), 1u);
  EXPECT_EQ(c->Servers()[0].state, "pending");
  fakes_[0] = FakeServer::Start(TestKey(), FakeServer::Mode::kNormal, 128, port);
  ASSERT_NE(fakes_[0], nullptr);
  ASSERT_TRUE(Eventually([&] { return c->Put("k", value_).ok(); }));
}

TEST_F(MembershipTest, OldServersArePlacedByAddressAsBefore) {
  fakes_.push_back(FakeServer::Start(TestKey()));
  fakes_.push_back(FakeServer::Start(TestKey()));
  fakes_[0]->set_no_info();
  fakes_[1]->set_info(Info("new-one", 5));  // one weighted server among old ones: weights equal
  dns_.Set(Fakes({0, 1}));
  auto c = MakeClient();
  ASSERT_NE(c, nullptr);
  std::vector<ServerView> servers = c->Servers();
  ASSERT_EQ(servers.size(), 2u);
  EXPECT_EQ(servers[0].id, fakes_[0]->address());
  EXPECT_EQ(servers[0].weight, 1u);
  EXPECT_EQ(servers[1].weight, 1u);
  EXPECT_DOUBLE_EQ(servers[0].share, 0.5);
}

}  // namespace
}  // namespace memkv::client
