// Crash safety of the drive tier, end to end: clients run a mixed workload of
// puts and deletes against a real `memkv start` (storage.mode file, two
// drives, a DRAM pool smaller than the data) and the server is killed with
// SIGKILL at a random moment, many times over. After each restart every key
// must read as its last acknowledged state (docs/storage.md, "What put
// promises"): the acknowledged value byte-exact, or absent after an
// acknowledged delete. A key with an operation in flight at the kill may read
// as before or after that operation (or absent, for a put in flight), but
// never as anything else: no torn, stale or mixed bytes.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tests/harness.h"

namespace memkv::testing {
namespace {

constexpr int kRounds = 30;
constexpr int kThreads = 3;
constexpr int kKeysPerThread = 12;

// A key's state: a version of its value, or absent (version 0).
struct KeyState {
  uint64_t acked = 0;                  // last acknowledged version; 0 = absent
  std::optional<uint64_t> in_flight;   // a put (version) or delete (0) with no answer
};

size_t SizeFor(uint64_t version) {
  static const size_t kSizes[] = {4096, 100 * 1024, (1 << 20) + 3, (5 << 20) / 2};
  return kSizes[version % 4];
}
std::vector<uint8_t> Bytes(const std::string& key, uint64_t version) {
  return Pattern(SizeFor(version), std::hash<std::string>{}(key) ^ (version * 0x9e3779b97f4a7c15ull));
}

class Workload {
 public:
  explicit Workload(uint64_t seed) : seed_(seed) {
    for (int t = 0; t < kThreads; ++t) {
      for (int k = 0; k < kKeysPerThread; ++k) states_["crash/" + std::to_string(t) + "/" + std::to_string(k)];
    }
  }

  // Runs until a request fails (the server is gone): kThreads clients, each
  // owning its own keys, so each key's operations are sequential.
  void Run(const ServerProcess& server, int round) {
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([this, &server, round, t] { RunClient(server, round, t); });
    }
    for (std::thread& th : threads) th.join();
  }

  uint64_t acknowledged() const { return acknowledged_.load(); }

  // Checks every key against the model after a restart; settles the model to
  // what was read (an in-flight operation either happened or not).
  void Verify(const ServerProcess& server) {
    auto client = ClientFor({&server}, 20000);
    for (auto& [key, st] : states_) {
      Result<std::vector<uint8_t>> got = client->Get(key);
      std::vector<uint64_t> allowed = {st.acked};
      if (st.in_flight) allowed.push_back(*st.in_flight);
      if (!got.ok()) {
        ASSERT_EQ(got.status().code(), StatusCode::kNotFound) << key << ": " << got.status().ToString();
        const bool absent_ok = st.acked == 0 || (st.in_flight.has_value());
        ASSERT_TRUE(absent_ok) << key << ": acknowledged version " << st.acked << " is missing after the crash\n"
                               << server.Stderr();
        st.acked = 0;
      } else {
        std::optional<uint64_t> match;
        for (uint64_t v : allowed) {
          if (v != 0 && *got == Bytes(key, v)) match = v;
        }
        ASSERT_TRUE(match.has_value()) << key << ": " << got->size() << " bytes that are neither acknowledged version "
                                       << st.acked << " nor the one in flight";
        st.acked = *match;
      }
      st.in_flight.reset();
    }
  }

 private:
  void RunClient(const ServerProcess& server, int round, int t) {
    auto client = ClientFor({&server}, 5000);
    std::mt19937_64 rng(seed_ * 1000 + uint64_t(round) * 10 + uint64_t(t));
    for (;;) {
      const std::string key = "crash/" + std::to_string(t) + "/" + std::to_string(rng() % kKeysPerThread);
      KeyState& st = states_.at(key);  // only this thread touches its keys
      const bool del = rng() % 5 == 0;
      const uint64_t version = del ? 0 : next_version_.fetch_add(1);
      st.in_flight = version;
      Status s = del ? client->Delete(key) : client->Put(key, Bytes(key, version));
      if (!s.ok() && !(del && s.code() == StatusCode::kNotFound)) return;  // server gone: outcome unknown
      st.acked = version;
      st.in_flight.reset();
      acknowledged_.fetch_add(1);
    }
  }

  uint64_t seed_;
  std::map<std::string, KeyState> states_;  // keys fixed at construction
  std::atomic<uint64_t> next_version_{1};
  std::atomic<uint64_t> acknowledged_{0};
};

TEST(TierCrashTest, KillNineAtRandomMomentsNeverLosesAcknowledgedWritesOrReturnsWrongBytes) {
  TempDir dir;
  const ServerSpec spec = FileModeSpec(dir.path(), 2, "256 MiB", "24 MiB");
  std::mt19937_64 rng(20261123);
  Workload workload(rng());
  for (int round = 0; round < kRounds; ++round) {
    ServerProcess server;
    Status started = server.Start(spec);
    ASSERT_TRUE(started.ok()) << "round " << round << ": " << started.ToString();
    if (round > 0) {
      workload.Verify(server);
      if (::testing::Test::HasFatalFailure()) return;
    }
    // Kill after a random number of further acknowledged operations, while
    // the clients are mid-flight.
    const uint64_t kill_at = workload.acknowledged() + 5 + rng() % 60;
    std::thread killer([&] {
      PollUntil([&] { return workload.acknowledged() >= kill_at; }, 60000);
      server.Kill();
    });
    workload.Run(server, round);
    killer.join();
  }
  ServerProcess server;
  ASSERT_TRUE(server.Start(spec).ok());
  workload.Verify(server);
  EXPECT_GT(workload.acknowledged(), uint64_t(kRounds) * 5);
}

}  // namespace
}  // namespace memkv::testing
