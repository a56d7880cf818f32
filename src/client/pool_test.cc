#include "client/pool.h"

#include <gtest/gtest.h>

#include <thread>

#include "client/fake_server.h"

namespace memkv::client {
namespace {

constexpr Nanos kMs = 1'000'000;

TEST(ServerHealthTest, HealthyUntilAFailure) {
  ServerHealth h;
  EXPECT_TRUE(h.Check(0, "s:1").ok());
}

TEST(ServerHealthTest, DownForTheBackoffNamingServerCauseAndRetry) {
  ServerHealth h;
  h.OnFailure(1000 * kMs, Unavailable("connect to s:1: Connection refused"));
  Status s = h.Check(1050 * kMs, "s:1");
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_NE(s.message().find("s:1"), std::string::npos);
  EXPECT_NE(s.message().find("Connection refused"), std::string::npos);
  EXPECT_NE(s.message().find("retried in 150 ms"), std::string::npos) << s.message();
  EXPECT_TRUE(h.Check(1200 * kMs, "s:1").ok());
}

TEST(ServerHealthTest, TimeoutsDoubleTheBackoffToTenSecondsAndSuccessResetsIt) {
  ServerHealth h;
  Nanos expected = 200 * kMs;
  for (int i = 0; i < 10; ++i) {
    h.OnFailure(0, DeadlineExceeded("TCP connect to s:1 did not complete"));
    EXPECT_EQ(h.backoff(), expected);
    expected = std::min<Nanos>(expected * 2, 10'000 * kMs);
  }
  EXPECT_EQ(h.backoff(), 10'000 * kMs);
  h.OnSuccess();
  EXPECT_TRUE(h.Check(1, "s:1").ok());
  h.OnFailure(0, DeadlineExceeded("x"));
  EXPECT_EQ(h.backoff(), 200 * kMs);
}

// Regression: a server restarted at the same address is refused until it
// listens; the refusals doubled the backoff, so a client that kept calling
// through a 3 s restart left the server unused for 3 s more after it was back.
TEST(ServerHealthTest, RefusalsKeepTheBackoffAtItsFirstStep) {
  ServerHealth h;
  h.OnFailure(0, Unavailable("server s:1 closed the connection"));
  for (int i = 0; i < 20; ++i) {
    h.OnFailure(0, Unavailable("connect to s:1: Connection refused"), 1 * kMs);
    EXPECT_EQ(h.backoff(), 200 * kMs);
  }
  // After timeouts grew it, the first quick refusal brings it back to 200 ms.
  for (int i = 0; i < 4; ++i) h.OnFailure(0, DeadlineExceeded("x"));  // 400, 800, 1600, 3200 ms
  EXPECT_EQ(h.backoff(), 3200 * kMs);
  h.OnFailure(10'000 * kMs, Unavailable("connect to s:1: Connection refused"));
  EXPECT_EQ(h.backoff(), 200 * kMs);
  EXPECT_TRUE(h.Check(10'200 * kMs, "s:1").ok());
}

// A failure that kept its caller long (a name lookup that timed out) backs
// off like a timeout, whatever its code.
TEST(ServerHealthTest, SlowFailuresDoubleTheBackoff) {
  ServerHealth h;
  h.OnFailure(0, Unavailable("cannot resolve s:1"), 5000 * kMs);
  EXPECT_EQ(h.backoff(), 200 * kMs);
  h.OnFailure(0, Unavailable("cannot resolve s:1"), 5000 * kMs);
  EXPECT_EQ(h.backoff(), 400 * kMs);
  h.OnFailure(0, Unavailable("cannot resolve s:1"), ServerHealth::kSlowFailureNanos);
  EXPECT_EQ(h.backoff(), 200 * kMs);
}

// ---- ServerPool against a FakeServer ----

Key32 PoolKey() {
  Key32 key;
  for (size_t i = 0; i < key.size(); ++i) key[i] = static_cast<uint8_t>(i * 7);
  return key;
}

Endpoint EndpointOf(const testing::FakeServer& server) {
  const std::string address = server.address();  // "127.0.0.1:port"
  const size_t colon = address.rfind(':');
  return Endpoint{address.substr(0, colon), static_cast<uint16_t>(std::stoi(address.substr(colon + 1))),
                  address, "", nullptr};
}

// Checks out one connection, completes its handshake, and returns it.
std::vector<std::unique_ptr<Connection>> AcquireReady(ServerPool& pool) {
  auto got = pool.Acquire(1, MonotonicNanos() + 5000 * kMs, /*wait=*/true);
  EXPECT_TRUE(got.ok()) << got.status().ToString();
  if (!got.ok()) return {};
  Connection* c = got->front().get();
  DriveConnections(std::span<Connection* const>(&c, 1), MonotonicNanos() + 5000 * kMs);
  EXPECT_TRUE(c->Reusable()) << c->error().ToString();
  return std::move(got).value();
}

// Regression: a call whose deadline was spent waiting for another server
// still opened (or took) a connection to this one; the connect failed at
// once and marked this healthy server down.
TEST(ServerPoolTest, PastDeadlineIsDeadlineExceededWithoutConnectingOrMarkingDown) {
  auto server = testing::FakeServer::Start(PoolKey());
  ClientCounters counters;
  SteadyClock clock;
  ServerPool pool(EndpointOf(*server), PoolKey(), 1, 2000 * kMs, &counters, &clock);
  for (bool wait : {true, false}) {
    auto got = pool.Acquire(1, MonotonicNanos() - 1, wait);
    ASSERT_FALSE(got.ok());
    EXPECT_EQ(got.status().code(), StatusCode::kDeadlineExceeded) << got.status().ToString();
    EXPECT_NE(got.status().message().find(server->address()), std::string::npos) << got.status().ToString();
  }
  EXPECT_EQ(server->connections_accepted(), 0);
  // Not marked down: the next call with time left gets a working connection.
  pool.Release(AcquireReady(pool));
  EXPECT_EQ(server->connections_accepted(), 1);
}

TEST(ServerPoolTest, BusyPoolWithoutWaitGivesNoneAndWithWaitTimesOutLeavingHealthAlone) {
  auto server = testing::FakeServer::Start(PoolKey());
  ClientCounters counters;
  SteadyClock clock;
  ServerPool pool(EndpointOf(*server), PoolKey(), 1, 2000 * kMs, &counters, &clock);
  std::vector<std::unique_ptr<Connection>> held = AcquireReady(pool);

  const Nanos start = MonotonicNanos();
  auto none = pool.Acquire(1, start + 5000 * kMs, /*wait=*/false);
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_TRUE(none->empty());
  EXPECT_LT(MonotonicNanos() - start, 1000 * kMs);

  auto timed_out = pool.Acquire(1, MonotonicNanos() + 50 * kMs, /*wait=*/true);
  ASSERT_FALSE(timed_out.ok());
  EXPECT_EQ(timed_out.status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_NE(timed_out.status().message().find("stayed busy"), std::string::npos) << timed_out.status().ToString();

  pool.Release(std::move(held));
  auto again = pool.Acquire(1, MonotonicNanos() + 5000 * kMs, /*wait=*/false);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  ASSERT_EQ(again->size(), 1u);
  EXPECT_EQ(server->connections_accepted(), 1);  // the same connection, reused
  pool.Release(std::move(again).value());
}

// A connection opened after the call waited longer than connect_timeout
// still gets its full connect timeout (up to the call's deadline), not a
// connect deadline that passed while the call waited.
TEST(ServerPoolTest, ConnectTimeoutRunsFromWhenTheConnectionIsOpened) {
  auto server = testing::FakeServer::Start(PoolKey());
  ClientCounters counters;
  SteadyClock clock;
  constexpr Nanos kConnectTimeout = 100 * kMs;
  ServerPool pool(EndpointOf(*server), PoolKey(), 1, kConnectTimeout, &counters, &clock);
  std::vector<std::unique_ptr<Connection>> held = AcquireReady(pool);

  Result<std::vector<std::unique_ptr<Connection>>> waited = Internal("not run");
  Nanos returned_at = 0;
  const Nanos wait_start = MonotonicNanos();
  std::thread waiter([&] {
    waited = pool.Acquire(1, wait_start + 5000 * kMs, /*wait=*/true);
    returned_at = MonotonicNanos();
  });
  // Long enough that a connect deadline taken when the call started is over.
  while (MonotonicNanos() - wait_start < 2 * kConnectTimeout) std::this_thread::yield();
  // Give the slot back as a failed connection that is not the server's fault,
  // so the waiter opens a fresh one.
  held.front()->Abort(Internal("test drops the connection"));
  pool.Release(std::move(held));
  waiter.join();
  ASSERT_TRUE(waited.ok()) << waited.status().ToString();
  ASSERT_EQ(waited->size(), 1u);
  Connection* c = waited->front().get();
  EXPECT_TRUE(c->Establishing());
  EXPECT_GE(c->connect_deadline(), returned_at);
  EXPECT_LE(c->connect_deadline(), returned_at + kConnectTimeout);
  DriveConnections(std::span<Connection* const>(&c, 1), wait_start + 5000 * kMs);
  EXPECT_TRUE(c->Reusable()) << c->error().ToString();
  pool.Release(std::move(waited).value());
}

// Loads before stores: stores hold at most all connections but one, so a
// load never waits for a connection behind them; with one connection,
// stores may take it.
TEST(ServerPoolTest, StoresLeaveALoadAConnection) {
  auto server = testing::FakeServer::Start(PoolKey());
  ClientCounters counters;
  SteadyClock clock;
  ServerPool pool(EndpointOf(*server), PoolKey(), 3, 2000 * kMs, &counters, &clock);
  const Nanos deadline = MonotonicNanos() + 5000 * kMs;
  auto stores = pool.Acquire(3, deadline, /*wait=*/false, ServerPool::Use::kStore);
  ASSERT_TRUE(stores.ok()) << stores.status().ToString();
  EXPECT_EQ(stores->size(), 2u);
  auto more_stores = pool.Acquire(1, deadline, /*wait=*/false, ServerPool::Use::kStore);
  ASSERT_TRUE(more_stores.ok()) << more_stores.status().ToString();
  EXPECT_TRUE(more_stores->empty());
  auto load = pool.Acquire(1, deadline, /*wait=*/false);
  ASSERT_TRUE(load.ok()) << load.status().ToString();
  EXPECT_EQ(load->size(), 1u);
  pool.Release(std::move(load).value());
  pool.Release(std::move(stores).value(), ServerPool::Use::kStore);
  // Their share given back, stores get connections again.
  auto again = pool.Acquire(1, deadline, /*wait=*/false, ServerPool::Use::kStore);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->size(), 1u);
  pool.Release(std::move(again).value(), ServerPool::Use::kStore);

  ServerPool single(EndpointOf(*server), PoolKey(), 1, 2000 * kMs, &counters, &clock);
  auto only = single.Acquire(1, deadline, /*wait=*/false, ServerPool::Use::kStore);
  ASSERT_TRUE(only.ok()) << only.status().ToString();
  EXPECT_EQ(only->size(), 1u);
  single.Release(std::move(only).value(), ServerPool::Use::kStore);
}

}  // namespace
}  // namespace memkv::client
