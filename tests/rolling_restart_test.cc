// A rolling restart of three file-mode servers under load, the procedure of
// docs/operations.md ("Rolling restart"): for each server in turn, drain it
// (`memkv admin drain`), stop it, start it again on its data directory, wait
// for /v1/ready. Real `memkv start` processes on loopback, several clients
// putting and getting all the while.
//
// What must hold: no request fails with anything but a miss, and a miss only
// for a key whose owner is the server being restarted (or one its client
// does not see up yet); every key stored before is served again, with its
// bytes, once its server is back; each restart is bounded.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "base/temp_dir.h"
#include "tests/harness.h"

namespace memkv::testing {
namespace {

constexpr size_t kValueBytes = 2048;
constexpr int kPreloaded = 600;
constexpr int kLoadThreads = 4;
constexpr int kLoadKeysPerThread = 300;
// A restart (stop, start, index loaded, ready) must end within this; it is
// a bound on a hang, not a speed target.
constexpr int kRestartBoundMs = 60000;

// Values are a function of their key, as KV-cache blocks named by a hash of
// their content are: a key written twice holds the same bytes.
std::vector<uint8_t> ValueOf(const std::string& key) {
  return Pattern(kValueBytes, std::hash<std::string>{}(key));
}

ClientOptions FleetOptions(const std::vector<const ServerProcess*>& servers) {
  ClientOptions o = OptionsFor(servers, 5000);
  o.discovery_interval_ms = 200;  // drain and return noticed within 200 ms
  return o;
}

// The state `client` shows for the server at `name` ("" when it has none).
std::string StateOf(const Client& client, const std::string& name) {
  for (const ServerView& v : client.Servers()) {
    if (v.name == name) return v.state;
  }
  return "";
}

std::string OwnerOf(const Client& client, const std::string& key) {
  const std::vector<ServerView> view = client.Servers();
  const size_t i = client.ServerFor(key);
  return i < view.size() ? view[i].name : "";
}

bool AllUp(const Client& client, size_t n) {
  const std::vector<ServerView> view = client.Servers();
  size_t up = 0;
  for (const ServerView& v : view) up += v.state == "up" ? 1 : 0;
  return view.size() == n && up == n;
}

class Load {
 public:
  Load(const std::vector<const ServerProcess*>& servers, const std::vector<std::string>& preloaded)
      : preloaded_(preloaded) {
    for (int t = 0; t < kLoadThreads; ++t) {
      Result<std::unique_ptr<Client>> c = Client::Create(FleetOptions(servers));
      EXPECT_TRUE(c.ok()) << c.status().ToString();
      if (!c.ok()) return;
      clients_.push_back(std::move(c).value());
    }
    for (int t = 0; t < kLoadThreads; ++t) {
      threads_.emplace_back([this, t] { Run(t); });
    }
  }
  ~Load() { Stop(); }

  void Stop() {
    stop_ = true;
    for (std::thread& t : threads_) t.join();
    threads_.clear();
  }
  // The server being restarted: misses of its keys are expected meanwhile.
  void set_restarting(const std::string& name) {
    std::lock_guard<std::mutex> lock(mu_);
    restarting_ = name;
  }
  uint64_t ops() const { return ops_.load(); }
  uint64_t misses() const { return misses_.load(); }
  std::vector<std::string> violations() {
    std::lock_guard<std::mutex> lock(mu_);
    return violations_;
  }
  // Every load key some put stored.
  std::vector<std::string> stored() {
    std::lock_guard<std::mutex> lock(mu_);
    return {stored_.begin(), stored_.end()};
  }

 private:
  void Violation(std::string what) {
    std::lock_guard<std::mutex> lock(mu_);
    if (violations_.size() < 20) violations_.push_back(std::move(what));
  }
  // A miss is expected when the key's owner is being restarted or this
  // client does not see it up (yet, or any more).
  bool MissExpected(const Client& client, const std::string& key) {
    const std::string owner = OwnerOf(client, key);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (owner == restarting_) return true;
    }
    return StateOf(client, owner) != "up";
  }

  void Run(int t) {
    Client& client = *clients_[t];
    uint64_t n = 0;
    while (!stop_) {
      ++n;
      const std::string key = "load/" + std::to_string(t) + "/" + std::to_string(n % kLoadKeysPerThread);
      const std::vector<uint8_t> value = ValueOf(key);
      Status put = client.Put(key, value);
      ops_.fetch_add(1);
      if (put.ok()) {
        std::lock_guard<std::mutex> lock(mu_);
        stored_.insert(key);
      } else {
        Violation("put " + key + ": " + put.ToString());
      }
      const std::string& pre = preloaded_[(n * 7919 + static_cast<uint64_t>(t)) % preloaded_.size()];
      Result<std::vector<uint8_t>> got = client.Get(pre);
      ops_.fetch_add(1);
      if (got.ok()) {
        if (*got != ValueOf(pre)) Violation("get " + pre + " returned wrong bytes");
      } else if (got.status().code() == StatusCode::kNotFound) {
        misses_.fetch_add(1);
        if (!MissExpected(client, pre)) {
          Violation("get " + pre + " missed while its owner " + OwnerOf(client, pre) + " is up: " +
                    got.status().ToString());
        }
      } else {
        Violation("get " + pre + ": " + got.status().ToString());
      }
    }
  }

  const std::vector<std::string>& preloaded_;
  std::vector<std::unique_ptr<Client>> clients_;
  std::vector<std::thread> threads_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> ops_{0};
  std::atomic<uint64_t> misses_{0};
  std::mutex mu_;
  std::string restarting_;             // guarded by mu_
  std::vector<std::string> violations_;  // guarded by mu_
  std::set<std::string> stored_;       // guarded by mu_
};

TEST(RollingRestartTest, ThreeFileModeServersRestartInTurnUnderLoadWithNoFailureAndNoLostKey) {
  ASSERT_TRUE(RaiseOpenFilesLimit(4096));
  constexpr int kServers = 3;
  TempDir dirs[kServers];
  ServerSpec specs[kServers];
  ServerProcess servers[kServers];
  std::vector<const ServerProcess*> all;
  for (int i = 0; i < kServers; ++i) {
    specs[i] = FileModeSpec(dirs[i].path(), 1, "256 MiB", "32 MiB");
    specs[i].data_dir = dirs[i].path() + "/data";
    // A fixed port below the ephemeral range, so the restart finds its data
    // and admin ports free and comes back on the same address.
    specs[i].port = FreeServerPort();
    ASSERT_NE(specs[i].port, 0);
    ASSERT_TRUE(servers[i].Start(specs[i]).ok()) << servers[i].Stderr();
    all.push_back(&servers[i]);
  }

  Result<std::unique_ptr<Client>> probe = Client::Create(FleetOptions(all));
  ASSERT_TRUE(probe.ok()) << probe.status().ToString();
  Client& client = **probe;
  ASSERT_TRUE(PollUntil([&] { return AllUp(client, kServers); }, 10000));
  std::vector<std::string> preloaded;
  for (int i = 0; i < kPreloaded; ++i) {
    preloaded.push_back("pre/" + std::to_string(i));
    ASSERT_TRUE(client.Put(preloaded.back(), ValueOf(preloaded.back())).ok());
  }

  Load load(all, preloaded);
  const std::map<std::string, std::string> admin_env = {{"MEMKV_AUTH_KEY", kTestKeyHex}};
  for (int i = 0; i < kServers; ++i) {
    const std::string name = servers[i].address();
    // 1. Drain: clients stop placing new keys on it; it still serves gets.
    const std::string admin_url = "http://127.0.0.1:" + std::to_string(servers[i].AdminPort());
    CommandResult drain = RunMemkv({"admin", "drain", admin_url}, admin_env);
    ASSERT_EQ(drain.exit_code, 0) << drain.out << drain.err;
    EXPECT_TRUE(PollUntil([&] { return StateOf(client, name) == "draining"; }, 5000)) << StateOf(client, name);
    EXPECT_EQ(HttpRequestTo(servers[i].AdminPort(), "GET", "/v1/ready").status, 503);
    const uint64_t ops_before = load.ops();
    EXPECT_TRUE(PollUntil([&] { return load.ops() > ops_before + 100; }, 10000)) << "load stalled while draining";

    // 2. Stop and start it on its data directory, as a deploy would.
    load.set_restarting(name);
    const Nanos t0 = MonotonicNanos();
    ASSERT_EQ(servers[i].Stop(), 0) << servers[i].Stderr();
    ASSERT_TRUE(servers[i].Start(specs[i]).ok()) << servers[i].Stderr();
    ASSERT_TRUE(PollUntil([&] { return HttpRequestTo(servers[i].AdminPort(), "GET", "/v1/ready").status == 200; },
                          kRestartBoundMs));
    const double restart_ms = static_cast<double>(MonotonicNanos() - t0) / 1e6;
    EXPECT_LT(restart_ms, kRestartBoundMs);
    std::printf("restart of %s: stop to ready in %.0f ms\n", name.c_str(), restart_ms);

    // 3. Back in placement on its first good answer; everything it held is
    // served again.
    ASSERT_TRUE(PollUntil([&] { return StateOf(client, name) == "up"; }, 10000)) << StateOf(client, name);
    load.set_restarting("");
    for (const std::string& key : preloaded) {
      if (OwnerOf(client, key) != name) continue;
      Result<std::vector<uint8_t>> got = client.Get(key);
      ASSERT_TRUE(got.ok()) << key << " held by " << name << " before its restart: " << got.status().ToString();
      EXPECT_EQ(*got, ValueOf(key)) << key;
    }
    const uint64_t ops_after = load.ops();
    EXPECT_TRUE(PollUntil([&] { return load.ops() > ops_after + 100; }, 10000)) << "load stalled after the restart";
  }
  load.Stop();
  for (const std::string& v : load.violations()) ADD_FAILURE() << v;
  std::printf("%llu operations, %llu expected misses\n", static_cast<unsigned long long>(load.ops()),
              static_cast<unsigned long long>(load.misses()));

  // Every key the load stored, wherever it was placed while a server was
  // away, is served with its bytes (the grace lookup finds the ones stored on
  // the next server while the owner was down).
  for (const std::string& key : load.stored()) {
    Result<std::vector<uint8_t>> got = client.Get(key);
    ASSERT_TRUE(got.ok()) << key << ": " << got.status().ToString();
    EXPECT_EQ(*got, ValueOf(key)) << key;
  }
}

}  // namespace
}  // namespace memkv::testing
