// Loads before stores (docs/operations.md, "Loads before stores"): the
// server answers every request right with network.loads_first on and off
// while stores saturate it, and cuts a long put's turns (counted); the
// client sheds a store, answering Busy and counting it, instead of waiting
// behind the stores already in flight. Behaviour only: how much sooner the
// loads come back is measured by memkv-loads-first-bench, never here.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tests/harness.h"

namespace memkv::testing {
namespace {

double Metric(uint16_t admin, const std::string& sample) {
  HttpResult r = HttpRequestTo(admin, "GET", "/v1/metrics");
  std::map<std::string, double> samples = PrometheusSamples(r.body);
  auto it = samples.find(sample);
  return it == samples.end() ? -1 : it->second;
}

ServerSpec LoadsFirst(bool on) {
  ServerSpec spec;
  spec.memory_max_size = "256 MiB";
  spec.network_yaml = std::string("  loads_first: ") + (on ? "true" : "false") + "\n";
  spec.extra_args = {"--workers", "1"};  // every connection on one event loop
  return spec;
}

// Four clients put 1 MiB values while one gets 64 KiB values, each checked
// byte for byte: nothing is lost, reordered or refused either way.
void StoresAndLoadsAllAnswered(bool loads_first) {
  ServerProcess server;
  ASSERT_TRUE(server.Start(LoadsFirst(loads_first)).ok()) << server.Stderr();
  std::unique_ptr<Client> loader = ClientFor({&server}, 30000);
  ASSERT_NE(loader, nullptr);
  constexpr int kLoadKeys = 16;
  for (int k = 0; k < kLoadKeys; ++k) {
    ASSERT_TRUE(loader->Put("load/" + std::to_string(k), Pattern(64 << 10, k)).ok());
  }
  std::atomic<int> store_failures{0};
  std::vector<std::thread> stores;
  for (int t = 0; t < 4; ++t) {
    stores.emplace_back([&, t] {
      std::unique_ptr<Client> c = ClientFor({&server}, 30000);
      if (c == nullptr) {
        store_failures.fetch_add(1);
        return;
      }
      for (int n = 0; n < 24; ++n) {
        const std::string key = "store/" + std::to_string(t) + "/" + std::to_string(n % 6);
        if (!c->Put(key, Pattern(1 << 20, t * 100 + n)).ok()) store_failures.fetch_add(1);
      }
      // The last value of each key reads back whole.
      for (int n = 18; n < 24; ++n) {
        auto got = c->Get("store/" + std::to_string(t) + "/" + std::to_string(n % 6));
        if (!got.ok() || *got != Pattern(1 << 20, t * 100 + n)) store_failures.fetch_add(1);
      }
    });
  }
  int load_failures = 0;
  std::vector<uint8_t> buffer(64 << 10);
  for (int n = 0; n < 200; ++n) {
    const int k = n % kLoadKeys;
    auto got = loader->GetInto("load/" + std::to_string(k), buffer);
    if (!got.ok() || *got != buffer.size() || buffer != Pattern(64 << 10, k)) ++load_failures;
  }
  for (std::thread& t : stores) t.join();
  EXPECT_EQ(store_failures.load(), 0);
  EXPECT_EQ(load_failures, 0);
  const uint16_t admin = server.AdminPort();
  ASSERT_NE(admin, 0);
  EXPECT_GE(Metric(admin, "memkv_store_turns_yielded_total"), 0);
  EXPECT_GE(Metric(admin, "memkv_loads_served_first_total"), 0);
  if (!loads_first) {
    EXPECT_EQ(Metric(admin, "memkv_store_turns_yielded_total"), 0);
    EXPECT_EQ(Metric(admin, "memkv_loads_served_first_total"), 0);
  }
}

TEST(LoadsFirstTest, EveryStoreAndLoadIsAnsweredWithLoadsFirstOn) { StoresAndLoadsAllAnswered(true); }

TEST(LoadsFirstTest, EveryStoreAndLoadIsAnsweredWithLoadsFirstOff) { StoresAndLoadsAllAnswered(false); }

// A put far larger than a turn's 256 KiB is taken in several turns, each
// counted, and stored whole.
TEST(LoadsFirstTest, ALargePutIsTakenInBoundedTurns) {
  ServerProcess server;
  ASSERT_TRUE(server.Start(LoadsFirst(true)).ok()) << server.Stderr();
  std::unique_ptr<Client> c = ClientFor({&server}, 30000);
  ASSERT_NE(c, nullptr);
  const uint16_t admin = server.AdminPort();
  ASSERT_NE(admin, 0);
  const std::vector<uint8_t> value = Pattern(16 << 20, 7);
  // Each put arrives faster than one turn takes it, unless the scheduler
  // keeps the client behind the server the whole time: put until a turn
  // was cut.
  int puts = 0;
  EXPECT_TRUE(PollUntil(
      [&] {
        EXPECT_TRUE(c->Put("big/" + std::to_string(puts++ % 4), value).ok());
        return Metric(admin, "memkv_store_turns_yielded_total") > 0;
      },
      20000));
  auto got = c->Get("big/0");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, value);
}

// With store_shed_inflight 1 and the server stalled (SIGSTOP), the second
// of two concurrent puts is shed at once: Busy, saying the client shed it
// and naming the option, counted in stores_shed; the first is stored once
// the server runs again, and loads are never shed.
TEST(LoadsFirstTest, ClientShedsAStoreBeyondStoreShedInflight) {
  ServerProcess server;
  ASSERT_TRUE(server.Start(LoadsFirst(true)).ok()) << server.Stderr();
  ClientOptions options = OptionsFor({&server}, 30000);
  options.store_shed_inflight = 1;
  options.store_shed_latency_ms = 0;
  auto created = Client::Create(options);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  std::unique_ptr<Client> c = std::move(created).value();
  ASSERT_TRUE(c->Put("before", Pattern(4096, 1)).ok());

  server.Pause();
  std::atomic<int> done{0};
  Status results[2];
  std::vector<std::thread> puts;
  for (int i = 0; i < 2; ++i) {
    puts.emplace_back([&, i] {
      results[i] = c->Put("shed/" + std::to_string(i), Pattern(4096, 10 + i));
      done.fetch_add(1);
    });
  }
  // One put waits on the stalled server; the other is shed without waiting.
  EXPECT_TRUE(PollUntil([&] { return done.load() >= 1; }, 10000));
  server.Resume();
  for (std::thread& t : puts) t.join();

  int shed = 0, stored = 0;
  for (int i = 0; i < 2; ++i) {
    if (results[i].ok()) {
      ++stored;
      auto got = c->Get("shed/" + std::to_string(i));
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      EXPECT_EQ(*got, Pattern(4096, 10 + i));
      continue;
    }
    ++shed;
    EXPECT_EQ(results[i].code(), StatusCode::kBusy) << results[i].ToString();
    EXPECT_NE(results[i].message().find("shed by the client"), std::string::npos) << results[i].ToString();
    EXPECT_NE(results[i].message().find("store_shed_inflight"), std::string::npos) << results[i].ToString();
    EXPECT_EQ(c->Get("shed/" + std::to_string(i)).status().code(), StatusCode::kNotFound);
  }
  EXPECT_EQ(shed, 1);
  EXPECT_EQ(stored, 1);
  EXPECT_EQ(c->Stats().stores_shed, 1u);
  auto before = c->Get("before");
  ASSERT_TRUE(before.ok()) << before.status().ToString();
}

}  // namespace
}  // namespace memkv::testing
