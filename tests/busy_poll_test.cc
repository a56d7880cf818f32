// A worker's poll before it sleeps (network.busy_poll_us; docs/configuration.md):
// requests are answered right with it on and off, and what it did is counted
// (memkv_worker_idle_spells_total, memkv_worker_poll_seconds_total). Whether
// the poll catches a request depends on timing, so only what is certain is
// asserted: with the poll off a worker never polls and sleeps before every
// request of a lone synchronous client; with it on, its window starts at the
// maximum, so the first idle spell polls. How many puts it wins is measured
// by bench/put_syscalls.sh, never here.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tests/harness.h"

namespace memkv::testing {
namespace {

constexpr int kPuts = 200;

struct PollCounts {
  double polled = -1;
  double slept = -1;
  double poll_seconds = -1;
};

PollCounts Counts(uint16_t admin) {
  HttpResult r = HttpRequestTo(admin, "GET", "/v1/metrics");
  std::map<std::string, double> samples = PrometheusSamples(r.body);
  auto find = [&](const std::string& name) {
    auto it = samples.find(name);
    return it == samples.end() ? -1 : it->second;
  };
  return {find("memkv_worker_idle_spells_total{outcome=\"polled\"}"),
          find("memkv_worker_idle_spells_total{outcome=\"slept\"}"), find("memkv_worker_poll_seconds_total")};
}

// One server with one worker and the given busy_poll_us; kPuts puts of 4 KiB
// one after another from one connection, each read back. Returns the counts.
PollCounts PutsFromOneConnection(int busy_poll_us) {
  ServerSpec spec;
  spec.network_yaml = "  busy_poll_us: " + std::to_string(busy_poll_us) + "\n";
  spec.extra_args = {"--workers", "1"};
  ServerProcess server;
  EXPECT_TRUE(server.Start(spec).ok()) << server.Stderr();
  std::unique_ptr<Client> c = ClientFor({&server});
  EXPECT_NE(c, nullptr);
  if (c == nullptr) return {};
  const PollCounts before = Counts(server.AdminPort());
  for (int i = 0; i < kPuts; ++i) {
    EXPECT_TRUE(c->Put("k" + std::to_string(i), Pattern(4096, i)).ok()) << i;
  }
  for (int i = 0; i < kPuts; i += 17) {
    auto got = c->Get("k" + std::to_string(i));
    EXPECT_TRUE(got.ok() && *got == Pattern(4096, i)) << i;
  }
  const PollCounts after = Counts(server.AdminPort());
  EXPECT_GE(before.slept, 0) << "memkv_worker_idle_spells_total missing from /v1/metrics";
  return {after.polled - before.polled, after.slept - before.slept, after.poll_seconds};
}

TEST(BusyPollTest, WithThePollOffAWorkerSleepsBeforeEveryRequestAndNeverPolls) {
  const PollCounts counts = PutsFromOneConnection(0);
  EXPECT_EQ(counts.polled, 0);
  EXPECT_EQ(counts.poll_seconds, 0);
  // A lone synchronous client sends its next request only after the answer,
  // and the worker, with nothing else to do, sleeps in between.
  EXPECT_GE(counts.slept, kPuts);
}

TEST(BusyPollTest, WithThePollOnAWorkerPollsAndCountsHowEachSpellEnded) {
  const PollCounts counts = PutsFromOneConnection(1000);
  EXPECT_GE(counts.polled, 0);
  EXPECT_GE(counts.slept, 0);
  EXPECT_GE(counts.polled + counts.slept, 1);
  EXPECT_GT(counts.poll_seconds, 0);
}

}  // namespace
}  // namespace memkv::testing
