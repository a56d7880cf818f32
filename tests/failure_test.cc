// One of two servers dies (SIGKILL) or stalls (SIGSTOP): calls on its keys
// answer within the deadline, never hang: Unavailable or DeadlineExceeded
// while the client learns of it, then, with the server marked down, as the
// other server answers them (its keys become misses there; puts are stored
// there), and calls on the other server keep succeeding. A stalled server
// that resumes is used again (docs/fleet.md, "Health and back-pressure").
//
// Durations are only checked against generous upper bounds: the client's
// deadline plus kSlackMs for scheduling on a loaded machine.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "tests/harness.h"

namespace memkv::testing {
namespace {

using Clock = std::chrono::steady_clock;

constexpr uint32_t kTimeoutMs = 1000;
constexpr int kSlackMs = 1500;
constexpr int kBoundMs = kTimeoutMs + kSlackMs;
constexpr size_t kValueBytes = 64 * 1024;

int64_t MsSince(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
}

bool IsOutage(StatusCode code) { return code == StatusCode::kUnavailable || code == StatusCode::kDeadlineExceeded; }
// What a call on a failed server's key may answer: an outage, or the other
// server's answer (a miss, or a key stored there since).
bool OutageOrServedElsewhere(StatusCode code) {
  return IsOutage(code) || code == StatusCode::kOk || code == StatusCode::kNotFound;
}

class FailureTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (ServerProcess& s : servers_) {
      Status started = s.Start();
      ASSERT_TRUE(started.ok()) << started.ToString();
    }
    client_ = ClientFor({&servers_[0], &servers_[1]}, kTimeoutMs);
    ASSERT_NE(client_, nullptr);
    // Ten keys on each server, all written.
    for (int i = 0; keys_[0].size() < 10 || keys_[1].size() < 10; ++i) {
      std::string key = "fail/" + std::to_string(i);
      std::vector<std::string>& mine = keys_[client_->ServerFor(key)];
      if (mine.size() < 10) mine.push_back(key);
    }
    for (const auto& keys : keys_) {
      for (const std::string& key : keys) {
        Status put = client_->Put(key, ValueOf(key));
        ASSERT_TRUE(put.ok()) << key << ": " << put.ToString();
      }
    }
  }

  static std::vector<uint8_t> ValueOf(const std::string& key) {
    return Pattern(kValueBytes, std::hash<std::string>()(key));
  }

  // The live server's keys still read back exactly.
  void ExpectServes(int server) {
    for (const std::string& key : keys_[server]) {
      Clock::time_point start = Clock::now();
      Result<std::vector<uint8_t>> got = client_->Get(key);
      EXPECT_LE(MsSince(start), kBoundMs);
      ASSERT_TRUE(got.ok()) << key << ": " << got.status().ToString();
      EXPECT_TRUE(*got == ValueOf(key)) << key;
    }
  }

  // Every kind of call on the failed server's keys, within the bound: the
  // first answers `first_expected` (if given), every one an outage naming
  // the server or the other server's answer.
  void ExpectFailsWithinDeadline(int server, std::optional<StatusCode> first_expected) {
    bool first = true;
    for (const std::string& key : keys_[server]) {
      for (int op = 0; op < 4; ++op) {
        Clock::time_point start = Clock::now();
        Status s;
        switch (op) {
          case 0:
            s = client_->Get(key).status();
            break;
          case 1:
            s = client_->Put(key, ValueOf(key));
            break;
          case 2:
            s = client_->Exists(key).status();
            break;
          default:
            s = client_->Delete(key);
            break;
        }
        const int64_t ms = MsSince(start);
        EXPECT_LE(ms, kBoundMs) << "op " << op << " on " << key << " took " << ms << " ms: " << s.ToString();
        if (first && first_expected) {
          EXPECT_EQ(s.code(), *first_expected) << s.ToString();
        }
        first = false;
        EXPECT_TRUE(OutageOrServedElsewhere(s.code())) << "op " << op << " on " << key << ": " << s.ToString();
        if (IsOutage(s.code())) {
          EXPECT_NE(s.message().find(servers_[server].address()), std::string::npos)
              << "the error does not name the server: " << s.ToString();
        }
      }
    }
  }

  // A batch over both servers' keys, interleaved; server `dead`'s fail, the other's succeed.
  void ExpectBatchesSplitByServer(int dead) {
    std::vector<std::string_view> keys;
    std::vector<int> owner;
    for (size_t i = 0; i < keys_[0].size(); ++i) {
      for (int s : {1 - dead, dead}) {
        keys.push_back(keys_[s][i]);
        owner.push_back(s);
      }
    }
    std::vector<std::vector<uint8_t>> values;
    for (std::string_view k : keys) values.push_back(ValueOf(std::string(k)));
    std::vector<std::span<const uint8_t>> value_views(values.begin(), values.end());
    std::vector<std::vector<uint8_t>> buffers(keys.size(), std::vector<uint8_t>(kValueBytes));
    std::vector<std::span<uint8_t>> buffer_views(buffers.begin(), buffers.end());

    for (int call = 0; call < 3; ++call) {
      SCOPED_TRACE(call == 0 ? "BatchPut" : call == 1 ? "BatchExists" : "BatchGetInto");
      Clock::time_point start = Clock::now();
      std::vector<size_t> sizes;
      BatchResult r = call == 0   ? client_->BatchPut(keys, value_views)
                      : call == 1 ? client_->BatchExists(keys)
                                  : client_->BatchGetInto(keys, buffer_views, &sizes);
      EXPECT_LE(MsSince(start), kBoundMs);
      ASSERT_EQ(r.statuses.size(), keys.size());
      EXPECT_GE(r.present_prefix, 1u);  // the first key is the live server's, the second the dead one's
      for (size_t i = 0; i < keys.size(); ++i) {
        const Status& s = r.statuses[i];
        if (owner[i] == dead) {
          EXPECT_TRUE(OutageOrServedElsewhere(s.code())) << keys[i] << ": " << s.ToString();
        } else {
          ASSERT_TRUE(s.ok()) << keys[i] << ": " << s.ToString();
          if (call == 2) {
            EXPECT_TRUE(buffers[i] == values[i]) << keys[i];
          }
        }
      }
    }
  }

  ServerProcess servers_[2];
  std::unique_ptr<Client> client_;
  std::vector<std::string> keys_[2];
};

// One call made by a worker thread during the kill.
struct Outcome {
  int server;
  Clock::time_point start;
  int64_t ms;
  Status status;
  bool data_ok;
};

TEST_F(FailureTest, KilledMidRunItsKeysAnswerFastAndTheOtherServerKeepsServing) {
  std::atomic<bool> stop{false};
  std::atomic<int> ops{0};
  std::mutex mu;
  std::vector<Outcome> outcomes;  // guarded by mu
  std::vector<std::thread> workers;
  for (int t = 0; t < 4; ++t) {
    workers.emplace_back([&, t] {
      for (int i = t; !stop.load(); ++i) {
        const int server = i % 2;
        const std::string& key = keys_[server][(i / 2) % keys_[server].size()];
        Outcome o{server, Clock::now(), 0, Status::Ok(), true};
        if (i % 3 == 0) {
          o.status = client_->Put(key, ValueOf(key));
        } else {
          Result<std::vector<uint8_t>> got = client_->Get(key);
          o.status = got.status();
          o.data_ok = !got.ok() || *got == ValueOf(key);
        }
        o.ms = MsSince(o.start);
        std::lock_guard<std::mutex> lock(mu);
        outcomes.push_back(std::move(o));
        ops.fetch_add(1);
      }
    });
  }
  ASSERT_TRUE(PollUntil([&] { return ops.load() >= 40; }, 20000));
  servers_[0].Kill();  // returns once the process is reaped
  const Clock::time_point killed = Clock::now();
  const int ops_at_kill = ops.load();
  const bool ran_on = PollUntil([&] { return ops.load() >= ops_at_kill + 200; }, 30000);
  stop.store(true);
  for (std::thread& w : workers) w.join();
  ASSERT_TRUE(ran_on) << "calls stopped completing after the kill";

  int answered_after_kill = 0;
  for (const Outcome& o : outcomes) {
    EXPECT_LE(o.ms, kBoundMs) << "server " << o.server << ": " << o.status.ToString();
    EXPECT_TRUE(o.data_ok) << "server " << o.server << " returned wrong bytes";
    if (o.server == 1) {
      EXPECT_TRUE(o.status.ok()) << "live server: " << o.status.ToString();
    } else if (o.start > killed) {
      // Marked down, its keys are the other server's: misses, or stored
      // there by the puts since.
      EXPECT_TRUE(OutageOrServedElsewhere(o.status.code())) << "dead server: " << o.status.ToString();
      ++answered_after_kill;
    } else {
      EXPECT_TRUE(OutageOrServedElsewhere(o.status.code())) << o.status.ToString();
    }
  }
  EXPECT_GT(answered_after_kill, 20);

  ExpectFailsWithinDeadline(0, std::nullopt);
  ExpectServes(1);
}

TEST_F(FailureTest, PausedServerGivesDeadlineExceededAndServesAgainAfterResume) {
  servers_[0].Pause();
  ExpectFailsWithinDeadline(0, StatusCode::kDeadlineExceeded);
  ExpectServes(1);

  // A client that never connected stalls in the handshake: also bounded.
  auto fresh = ClientFor({&servers_[0], &servers_[1]}, kTimeoutMs);
  ASSERT_NE(fresh, nullptr);
  Clock::time_point start = Clock::now();
  Status s = fresh->Get(keys_[0][0]).status();
  EXPECT_LE(MsSince(start), kBoundMs);
  // It asked the stalled server who it is when it was made: pending, so
  // the key is the other server's (a miss), or the stall cut off.
  EXPECT_TRUE(s.code() == StatusCode::kDeadlineExceeded || s.code() == StatusCode::kNotFound) << s.ToString();

  servers_[0].Resume();
  // The client backs off a failed server for a while; it must come back.
  const std::string& key = keys_[0][0];
  ASSERT_TRUE(PollUntil([&] { return client_->Get(key).ok(); }, 30000));
  ExpectServes(0);
  ExpectServes(1);
  ASSERT_TRUE(PollUntil([&] { return fresh->Get(key).ok(); }, 30000));
}

TEST_F(FailureTest, LargeTransfersToAPausedServerStillMeetTheDeadline) {
  // Far more than the socket buffers hold: the sender blocks on a full
  // window, and the deadline must still cut it off.
  const std::vector<uint8_t> big = Pattern(64 << 20, 5);
  ASSERT_TRUE(client_->Put(keys_[0][0], big).ok());
  servers_[0].Pause();
  Clock::time_point start = Clock::now();
  Status put = client_->Put(keys_[0][1], big);
  EXPECT_LE(MsSince(start), kBoundMs);
  EXPECT_EQ(put.code(), StatusCode::kDeadlineExceeded) << put.ToString();
  // A fresh client (the first one backs the server off) reading a large
  // value: bounded too. (It asked the stalled server who it is when it was
  // made, so the server is pending and the key a miss on the other one.)
  auto fresh = ClientFor({&servers_[0], &servers_[1]}, kTimeoutMs);
  start = Clock::now();
  Status get = fresh->Get(keys_[0][0]).status();
  EXPECT_LE(MsSince(start), kBoundMs);
  EXPECT_TRUE(get.code() == StatusCode::kDeadlineExceeded || get.code() == StatusCode::kNotFound) << get.ToString();
  servers_[0].Resume();
  ASSERT_TRUE(PollUntil([&] { return client_->Get(keys_[0][0]).ok(); }, 30000));
  Result<std::vector<uint8_t>> got = client_->Get(keys_[0][0]);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_TRUE(*got == big);
}

// Single calls on the live server, from `live_callers` threads, for three
// deadlines while `spanning` threads run batches over a key of each server.
// Counts the failed calls on the live server, by kind.
struct LiveServerOutcome {
  std::mutex mu;
  int calls = 0;        // guarded by mu, as are the rest
  int unavailable = 0;  // the client took the live server for down
  int other = 0;
  std::string first_unavailable, first_other;

  void Add(const std::string& key, const Result<bool>& e) {
    std::lock_guard<std::mutex> lock(mu);
    ++calls;
    if (e.ok() && *e) return;
    const std::string what = key + ": " + (e.ok() ? "absent" : e.status().ToString());
    if (e.status().code() == StatusCode::kUnavailable) {
      if (unavailable++ == 0) first_unavailable = what;
    } else if (other++ == 0) {
      first_other = what;
    }
  }
};

void CallLiveWhilePaused(Client& client, ServerProcess& paused, const std::vector<std::string>& live_keys,
                         const std::string& paused_key, int live_callers, int spanning, LiveServerOutcome* out) {
  paused.Pause();
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < spanning; ++t) {
    threads.emplace_back([&] {
      std::vector<std::string_view> keys = {live_keys[0], paused_key};
      while (!stop.load()) client.BatchExists(keys);
    });
  }
  std::vector<std::thread> callers;
  const Clock::time_point begin = Clock::now();
  for (int t = 0; t < live_callers; ++t) {
    callers.emplace_back([&] {
      while (MsSince(begin) < 3 * static_cast<int64_t>(kTimeoutMs)) {
        for (const std::string& key : live_keys) out->Add(key, client.Exists(key));
      }
    });
  }
  for (std::thread& t : callers) t.join();
  stop.store(true);
  for (std::thread& t : threads) t.join();
  paused.Resume();
}

// The first key (by name) that `client` places on server `index`.
std::string KeyOn(const Client& client, size_t index, const std::string& prefix) {
  for (int i = 0;; ++i) {
    std::string key = prefix + std::to_string(i);
    if (client.ServerFor(key) == index) return key;
  }
}

// A deadline used up waiting for a stalled server is not a live server's
// failure, and must not mark the live server down. Deterministic setup with
// one connection per server and the list [live L, paused P, paused Q]
// (a batch acquires its servers in list order):
//   1. O, a batch over {L, Q}, holds L's only connection until its deadline
//      (Q never answers);
//   2. B, a batch over {L, P}, starts and waits for L's connection;
//   3. H, a single call on P, starts after B and takes P's only connection;
//   4. O ends; B gets L's connection, then waits for P's, which H holds past
//      B's deadline; B then drives L with its deadline already passed.
// L answered everything it was ever sent, so the next call on L must work.
TEST_F(FailureTest, LiveServerIsNotMarkedDownForADeadlineSpentWaitingOnAPausedOne) {
  ServerProcess third;
  Status started = third.Start();
  ASSERT_TRUE(started.ok()) << started.ToString();
  ServerProcess& live = servers_[0];
  ServerProcess& paused = servers_[1];
  constexpr uint32_t kShortTimeoutMs = 500;
  for (int attempt = 0; attempt < 5; ++attempt) {
    SCOPED_TRACE("attempt " + std::to_string(attempt));
    ClientOptions o = OptionsFor({&live, &paused, &third}, kShortTimeoutMs);
    o.num_connections = 1;
    auto created = Client::Create(o);
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    Client& client = **created;
    const std::string on_live = KeyOn(client, 0, "L/");
    const std::string on_paused = KeyOn(client, 1, "P/");
    const std::string on_third = KeyOn(client, 2, "Q/");
    ASSERT_TRUE(client.Exists(on_live).ok());
    paused.Pause();
    third.Pause();

    // Spins (the windows are short) until the client's counters say so.
    auto spin_until = [](auto condition) {
      const Clock::time_point start = Clock::now();
      while (!condition() && MsSince(start) < 10000) std::this_thread::yield();
    };
    const ClientStats before = client.Stats();
    std::thread occupier([&] {
      std::vector<std::string_view> keys = {on_live, on_third};
      client.BatchExists(keys);
    });
    // The three calls' deadlines are kGapMs apart, more than the timer
    // slack with which a deadline fires, so they expire in this order.
    constexpr int kGapMs = 20;
    // O sends only once it holds every connection it needs.
    spin_until([&] { return client.Stats().bytes_sent > before.bytes_sent; });
    Clock::time_point mark = Clock::now();
    spin_until([&] { return MsSince(mark) >= kGapMs; });
    BatchResult batch;
    std::thread batcher([&] {
      std::vector<std::string_view> keys = {on_live, on_paused};
      batch = client.BatchExists(keys);
    });
    spin_until([&] { return client.Stats().ops >= before.ops + 4; });
    mark = Clock::now();
    spin_until([&] { return MsSince(mark) >= kGapMs; });
    // Only holds a connection to the paused server; what it returns is not the point.
    std::thread holder([&] { (void)client.Exists(on_paused); });
    batcher.join();
    // Right after the batch, before any backoff could end.
    Result<bool> after = client.Exists(on_live);
    occupier.join();
    holder.join();
    paused.Resume();
    third.Resume();

    // P was busy for B, not yet marked down (H still held it): lined up.
    if (batch.statuses.size() != 2 || batch.statuses[1].code() != StatusCode::kDeadlineExceeded) {
      continue;  // the threads did not line up as planned; try again
    }
    EXPECT_TRUE(after.ok()) << after.status().ToString()
                            << "\n(the batch reported for the live server: " << batch.statuses[0].ToString() << ")";
    return;
  }
  FAIL() << "the scenario never lined up in 5 attempts";
}

// client.h: "operations on other servers are unaffected". Batches that span
// the paused server hold live-server connections until their deadline; with
// more of them (16) than the pool has connections (4), single calls on the
// live server must still get through.
TEST_F(FailureTest, LiveServerCallsAreNotStarvedByBatchesWaitingOnAPausedOne) {
  LiveServerOutcome out;
  CallLiveWhilePaused(*client_, servers_[1], keys_[0], keys_[1][0], /*live_callers=*/1, /*spanning=*/16, &out);
  EXPECT_EQ(out.unavailable + out.other, 0)
      << "of " << out.calls << " calls on the live server, " << out.other << " failed like: " << out.first_other
      << "\nand " << out.unavailable << " like: " << out.first_unavailable;
}

TEST_F(FailureTest, BatchSpanningAKilledServerFailsOnlyItsKeys) {
  servers_[0].Kill();
  ExpectBatchesSplitByServer(0);
}

TEST_F(FailureTest, BatchSpanningAPausedServerFailsOnlyItsKeysWithinTheDeadline) {
  servers_[1].Pause();
  ExpectBatchesSplitByServer(1);
  servers_[1].Resume();
}

}  // namespace
}  // namespace memkv::testing
