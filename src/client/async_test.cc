// AsyncQueue (memkv/async.h) against FakeServer: exactly-once completion,
// many submissions in flight, cancel, destruction with work running, the
// fd's readiness, and results equal to the blocking batch calls.
#include "memkv/async.h"

#include <gtest/gtest.h>
#include <poll.h>

#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "base/bytes.h"
#include "base/clock.h"
#include "client/driver.h"
#include "client/fake_server.h"
#include "memkv/client.h"

namespace memkv::client {
namespace {

using client::testing::FakeServer;
using Mode = FakeServer::Mode;

constexpr Nanos kMs = 1'000'000;

using client::testing::TestKey;

std::unique_ptr<Client> MakeClient(std::vector<std::string> servers, uint32_t timeout_ms = 3000) {
  ClientOptions o;
  o.servers = std::move(servers);
  o.auth_key_hex = HexEncode(TestKey().data(), TestKey().size());
  o.timeout_ms = timeout_ms;
  o.connect_timeout_ms = 2000;
  auto c = Client::Create(o);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return c.ok() ? std::move(c).value() : nullptr;
}

std::unique_ptr<AsyncQueue> MakeQueue(Client& client) {
  auto q = client.NewAsyncQueue();
  EXPECT_TRUE(q.ok()) << q.status().ToString();
  return q.ok() ? std::move(q).value() : nullptr;
}

bool Readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 0) == 1 && (p.revents & POLLIN) != 0;
}

// Takes completions until `n` arrived or 10 s passed.
std::vector<AsyncCompletion> Collect(AsyncQueue& q, size_t n) {
  std::vector<AsyncCompletion> out;
  const Nanos deadline = MonotonicNanos() + 10'000 * kMs;
  while (out.size() < n && MonotonicNanos() < deadline) q.Wait(&out, n - out.size(), 100);
  return out;
}

// Keys, values and buffers that stay put while a submission holds them.
struct Batch {
  explicit Batch(size_t n, const std::string& prefix, size_t value_bytes = 100) {
    for (size_t i = 0; i < n; ++i) {
      names.push_back(prefix + std::to_string(i));
      data.emplace_back(value_bytes + i, static_cast<uint8_t>(i));
      room.emplace_back(value_bytes + n, 0xAB);
    }
    for (size_t i = 0; i < n; ++i) {
      keys.push_back(names[i]);
      values.emplace_back(data[i]);
      buffers.emplace_back(room[i]);
    }
  }
  std::vector<std::string> names;
  std::vector<std::vector<uint8_t>> data, room;
  std::vector<std::string_view> keys;
  std::vector<std::span<const uint8_t>> values;
  std::vector<std::span<uint8_t>> buffers;
};

TEST(AsyncQueueTest, ResultsEqualTheBlockingCalls) {
  auto a = FakeServer::Start(TestKey());
  auto b = FakeServer::Start(TestKey());
  auto client = MakeClient({a->address(), b->address()});
  auto q = MakeQueue(*client);
  Batch batch(40, "k");
  const AsyncId put = q->SubmitPut(batch.keys, batch.values, 7);
  std::vector<AsyncCompletion> done = Collect(*q, 1);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].id, put);
  EXPECT_EQ(done[0].tag, 7u);
  EXPECT_EQ(done[0].op, AsyncOp::kPut);
  EXPECT_FALSE(done[0].cancelled);
  EXPECT_EQ(done[0].present_prefix, 40u);

  // Half the keys present: get, exists and delete against the blocking calls.
  Batch mixed(40, "k");
  for (size_t i = 20; i < 40; ++i) mixed.names[i] = "absent" + std::to_string(i);
  for (size_t i = 0; i < 40; ++i) mixed.keys[i] = mixed.names[i];
  Batch blocking_room(40, "k");
  std::vector<size_t> blocking_sizes;
  BatchResult want_get = client->BatchGetInto(mixed.keys, blocking_room.buffers, &blocking_sizes);
  BatchResult want_exists = client->BatchExists(mixed.keys);
  q->SubmitGet(mixed.keys, mixed.buffers, 1);
  q->SubmitExists(mixed.keys, 2);
  done = Collect(*q, 2);
  ASSERT_EQ(done.size(), 2u);
  for (const AsyncCompletion& c : done) {
    const BatchResult& want = c.tag == 1 ? want_get : want_exists;
    ASSERT_EQ(c.statuses.size(), 40u);
    for (size_t i = 0; i < 40; ++i) EXPECT_EQ(c.statuses[i].code(), want.statuses[i].code()) << i;
    EXPECT_EQ(c.present_prefix, want.present_prefix);
    if (c.tag == 1) {
      EXPECT_EQ(c.sizes, blocking_sizes);
      for (size_t i = 0; i < 20; ++i) {
        EXPECT_TRUE(std::equal(batch.data[i].begin(), batch.data[i].end(), mixed.room[i].begin())) << i;
      }
    } else {
      EXPECT_TRUE(c.sizes.empty());
    }
  }
  q->SubmitDelete(mixed.keys, 3);
  done = Collect(*q, 1);
  ASSERT_EQ(done.size(), 1u);
  for (size_t i = 0; i < 40; ++i) {
    EXPECT_EQ(done[0].statuses[i].code(), i < 20 ? StatusCode::kOk : StatusCode::kNotFound) << i;
  }
  // The blocking delete now finds nothing.
  BatchResult again = client->BatchDelete(mixed.keys);
  for (const Status& s : again.statuses) EXPECT_EQ(s.code(), StatusCode::kNotFound) << s.ToString();
  EXPECT_EQ(a->stored_keys() + b->stored_keys(), 20u);  // k20..k39 were never named for deletion
}

TEST(AsyncQueueTest, ManyInFlightEachCompletesExactlyOnce) {
  auto a = FakeServer::Start(TestKey());
  auto b = FakeServer::Start(TestKey());
  auto client = MakeClient({a->address(), b->address()});
  auto q = MakeQueue(*client);
  constexpr size_t kBatches = 200;
  std::vector<std::unique_ptr<Batch>> batches;
  std::map<AsyncId, uint64_t> tag_of;
  for (size_t i = 0; i < kBatches; ++i) {
    batches.push_back(std::make_unique<Batch>(8, "m" + std::to_string(i) + "-", 64));
    const AsyncId id = i % 2 == 0 ? q->SubmitPut(batches[i]->keys, batches[i]->values, i)
                                  : q->SubmitExists(batches[i]->keys, i);
    EXPECT_TRUE(tag_of.emplace(id, i).second) << "id " << id << " handed out twice";
  }
  std::vector<AsyncCompletion> done = Collect(*q, kBatches);
  ASSERT_EQ(done.size(), kBatches);
  std::set<AsyncId> seen;
  for (const AsyncCompletion& c : done) {
    EXPECT_TRUE(seen.insert(c.id).second) << "id " << c.id << " completed twice";
    ASSERT_TRUE(tag_of.contains(c.id));
    EXPECT_EQ(c.tag, tag_of[c.id]);
    EXPECT_EQ(c.statuses.size(), 8u);
  }
  // Nothing more ever arrives, and the fd says so.
  EXPECT_EQ(q->outstanding(), 0u);
  EXPECT_FALSE(Readable(q->fd()));
  std::vector<AsyncCompletion> extra;
  EXPECT_EQ(q->Poll(&extra), 0u);
}

TEST(AsyncQueueTest, FdIsReadableExactlyWhileCompletionsWait) {
  auto server = FakeServer::Start(TestKey());
  auto client = MakeClient({server->address()});
  auto q = MakeQueue(*client);
  EXPECT_FALSE(Readable(q->fd()));
  Batch batch(4, "fd");
  q->SubmitPut(batch.keys, batch.values, 1);
  q->SubmitExists(batch.keys, 2);
  // Waits on the fd itself, as an event loop would.
  const Nanos deadline = MonotonicNanos() + 10'000 * kMs;
  while (q->outstanding() > 0 && MonotonicNanos() < deadline) {
    pollfd p{q->fd(), POLLIN, 0};
    ASSERT_GE(::poll(&p, 1, 100), 0);
    if (p.revents & POLLIN) break;
  }
  ASSERT_TRUE(Readable(q->fd()));
  std::vector<AsyncCompletion> done = Collect(*q, 1);
  ASSERT_EQ(done.size(), 1u);
  // One left: outstanding until it is taken; the fd readable once it is posted.
  while (q->outstanding() == 1 && !Readable(q->fd()) && MonotonicNanos() < deadline) {
    pollfd p{q->fd(), POLLIN, 0};
    ::poll(&p, 1, 100);
  }
  EXPECT_TRUE(Readable(q->fd()));
  EXPECT_EQ(q->Poll(&done), 1u);
  EXPECT_FALSE(Readable(q->fd()));
  EXPECT_EQ(q->outstanding(), 0u);
}

TEST(AsyncQueueTest, CancelBeforeStartCompletesCancelledAndLeavesBuffersAlone) {
  auto server = FakeServer::Start(TestKey());
  auto client = MakeClient({server->address()}, /*timeout_ms=*/300);
  server->set_mode(Mode::kSilentAfterHandshake);  // placed, then never answers
  auto q = MakeQueue(*client);
  // Every driver thread is held by a batch to a server that never answers,
  // so the submissions after them wait their turn.
  constexpr size_t kBatches = Driver::kDefaultThreads + 3;
  std::vector<std::unique_ptr<Batch>> batches;
  std::vector<AsyncId> ids;
  for (size_t i = 0; i < kBatches; ++i) {
    batches.push_back(std::make_unique<Batch>(2, "c" + std::to_string(i) + "-"));
    ids.push_back(q->SubmitGet(batches[i]->keys, batches[i]->buffers, i));
  }
  const AsyncId last = ids.back();
  EXPECT_TRUE(q->Cancel(last));
  EXPECT_FALSE(q->Cancel(last));  // already taken back
  EXPECT_FALSE(q->Cancel(999'999));
  std::vector<AsyncCompletion> done = Collect(*q, kBatches);
  ASSERT_EQ(done.size(), kBatches);
  for (const AsyncCompletion& c : done) {
    if (c.id == last) {
      EXPECT_TRUE(c.cancelled);
      ASSERT_EQ(c.statuses.size(), 2u);
      for (const Status& s : c.statuses) {
        EXPECT_EQ(s.code(), StatusCode::kUnavailable);
        EXPECT_NE(s.message().find("cancelled"), std::string::npos) << s.ToString();
      }
      for (const std::vector<uint8_t>& room : batches.back()->room) {
        EXPECT_TRUE(std::all_of(room.begin(), room.end(), [](uint8_t x) { return x == 0xAB; }));
      }
    } else {
      // Ran: the deadline, or (once the server is marked down) Unavailable.
      EXPECT_FALSE(c.cancelled);
      for (const Status& s : c.statuses) {
        EXPECT_TRUE(s.code() == StatusCode::kDeadlineExceeded || s.code() == StatusCode::kUnavailable);
        EXPECT_EQ(s.message().find("cancelled"), std::string::npos) << s.ToString();
      }
    }
  }
  EXPECT_FALSE(q->Cancel(ids.front()));  // done
}

TEST(AsyncQueueTest, DestroyingTheQueueCancelsWaitingAndWaitsForRunning) {
  auto server = FakeServer::Start(TestKey());
  auto client = MakeClient({server->address()}, /*timeout_ms=*/300);
  server->set_mode(Mode::kSilentAfterHandshake);  // placed, then never answers
  auto q = MakeQueue(*client);
  std::vector<std::unique_ptr<Batch>> batches;
  for (size_t i = 0; i < 20; ++i) {
    batches.push_back(std::make_unique<Batch>(2, "d" + std::to_string(i) + "-"));
    q->SubmitGet(batches[i]->keys, batches[i]->buffers, i);
  }
  const Nanos start = MonotonicNanos();
  q.reset();  // returns once the running ones ended: the buffers are free now
  EXPECT_LT(MonotonicNanos() - start, 5'000 * kMs);
  batches.clear();
  // The client takes a new queue, whose submissions run.
  auto q2 = MakeQueue(*client);
  Batch b(3, "after");
  q2->SubmitPut(b.keys, b.values);
  std::vector<AsyncCompletion> done = Collect(*q2, 1);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_FALSE(done[0].cancelled);
}

TEST(AsyncQueueTest, DestroyingTheClientCompletesEverySubmissionOnce) {
  auto server = FakeServer::Start(TestKey());
  auto client = MakeClient({server->address()}, /*timeout_ms=*/300);
  server->set_mode(Mode::kSilentAfterHandshake);  // placed, then never answers
  auto q = MakeQueue(*client);
  constexpr size_t kBatches = 20;
  std::vector<std::unique_ptr<Batch>> batches;
  for (size_t i = 0; i < kBatches; ++i) {
    batches.push_back(std::make_unique<Batch>(2, "e" + std::to_string(i) + "-"));
    q->SubmitExists(batches[i]->keys, i);
  }
  client.reset();  // waits for the running batches
  std::vector<AsyncCompletion> done;
  EXPECT_EQ(q->Poll(&done), kBatches);
  std::set<uint64_t> tags;
  size_t cancelled = 0;
  for (const AsyncCompletion& c : done) {
    EXPECT_TRUE(tags.insert(c.tag).second);
    if (c.cancelled) ++cancelled;
  }
  EXPECT_GE(cancelled, kBatches - Driver::kDefaultThreads);
  // A submission to a queue whose client is gone completes at once, cancelled.
  q->SubmitExists(batches[0]->keys, 99);
  done.clear();
  ASSERT_EQ(q->Poll(&done), 1u);
  EXPECT_TRUE(done[0].cancelled);
  EXPECT_EQ(done[0].tag, 99u);
}

TEST(AsyncQueueTest, MismatchedCountsCompleteWithInvalidArgument) {
  auto server = FakeServer::Start(TestKey());
  auto client = MakeClient({server->address()});
  auto q = MakeQueue(*client);
  const int seen = server->requests_seen();  // Create asked who it is
  Batch batch(3, "x");
  q->SubmitPut(batch.keys, std::span(batch.values).first(2));
  std::vector<AsyncCompletion> done = Collect(*q, 1);
  ASSERT_EQ(done.size(), 1u);
  ASSERT_EQ(done[0].statuses.size(), 3u);
  for (const Status& s : done[0].statuses) EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(server->requests_seen(), seen);
}

TEST(AsyncQueueTest, DriverStartsThreadsOnlyWhenSubmittedTo) {
  size_t ran = 0;
  Driver driver([&](BatchJob*) { ++ran; }, 2);
  EXPECT_EQ(driver.threads_started(), 0u);
  auto core = QueueCore::Create().value();
  auto job = std::make_unique<BatchJob>();
  job->completion.id = driver.NextId();
  driver.Submit(core, std::move(job));
  std::vector<AsyncCompletion> done;
  const Nanos deadline = MonotonicNanos() + 10'000 * kMs;
  while (done.empty() && MonotonicNanos() < deadline) {
    core->WaitReady(100);
    core->Take(&done, 1);
  }
  EXPECT_EQ(done.size(), 1u);
  EXPECT_EQ(ran, 1u);
  EXPECT_EQ(driver.threads_started(), 1u);
}

TEST(AsyncQueueTest, WaitRunsASubmissionNoDriverThreadHasTaken) {
  // One driver thread, held by the first batch until released; the second
  // batch is then run by the thread that waits for it.
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  std::atomic<bool> first_started{false};
  std::map<uint64_t, std::thread::id> ran_on;  // guarded by mu
  auto driver = std::make_shared<client::Driver>(
      [&](client::BatchJob* job) {
        std::unique_lock<std::mutex> lock(mu);
        ran_on[job->completion.tag] = std::this_thread::get_id();
        if (job->completion.tag == 1) {
          first_started = true;
          cv.wait(lock, [&] { return release; });
        }
      },
      1);
  client::DriverQueue q(driver, client::QueueCore::Create().value());
  const std::vector<std::string_view> keys = {"k"};
  q.SubmitExists(keys, 1);
  const Nanos deadline = MonotonicNanos() + 10'000 * kMs;
  while (!first_started && MonotonicNanos() < deadline) std::this_thread::yield();
  ASSERT_TRUE(first_started);
  const AsyncId second = q.SubmitExists(keys, 2);
  std::vector<AsyncCompletion> done;
  ASSERT_EQ(q.Wait(&done, 1, 10'000), 1u);
  EXPECT_EQ(done[0].id, second);
  EXPECT_FALSE(q.Cancel(second));  // it ran
  {
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_EQ(ran_on.at(2), std::this_thread::get_id());
    EXPECT_NE(ran_on.at(1), std::this_thread::get_id());
    release = true;
  }
  cv.notify_all();
  done.clear();
  while (done.empty() && MonotonicNanos() < deadline) q.Wait(&done, 1, 100);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].tag, 1u);
}

TEST(AsyncQueueTest, ShutdownWaitsForABatchAWaitingCallerRuns) {
  // Batch 1 holds the one driver thread; batch 2 is run by the thread that
  // waits for it, and holds it until released. Shutdown (the client going)
  // must not return while batch 2 runs: the runner uses the client.
  std::mutex mu;
  std::condition_variable cv;
  bool release_first = false, release_second = false;
  std::atomic<bool> first_started{false}, second_started{false}, second_done{false};
  auto driver = std::make_shared<client::Driver>(
      [&](client::BatchJob* job) {
        std::unique_lock<std::mutex> lock(mu);
        if (job->completion.tag == 1) first_started = true;
        if (job->completion.tag == 2) second_started = true;
        bool& release = job->completion.tag == 1 ? release_first : release_second;
        cv.wait(lock, [&] { return release; });
        if (job->completion.tag == 2) second_done = true;
      },
      1);
  client::DriverQueue q(driver, client::QueueCore::Create().value());
  const std::vector<std::string_view> keys = {"k"};
  const Nanos deadline = MonotonicNanos() + 10'000 * kMs;
  q.SubmitExists(keys, 1);
  while (!first_started && MonotonicNanos() < deadline) std::this_thread::yield();
  q.SubmitExists(keys, 2);
  std::thread waiter([&] {
    std::vector<AsyncCompletion> done;
    q.Wait(&done, 1, 10'000);
  });
  while (!second_started && MonotonicNanos() < deadline) std::this_thread::yield();
  ASSERT_TRUE(second_started);
  std::atomic<bool> shut{false};
  std::thread closer([&] {
    driver->Shutdown();
    shut = true;
  });
  // The driver thread's batch ends, so only batch 2 can hold Shutdown up:
  // give it a while to show that it does.
  {
    std::lock_guard<std::mutex> lock(mu);
    release_first = true;
  }
  cv.notify_all();
  const Nanos window = MonotonicNanos() + 200 * kMs;
  while (!shut && MonotonicNanos() < window) std::this_thread::yield();
  EXPECT_FALSE(shut);
  {
    std::lock_guard<std::mutex> lock(mu);
    release_second = true;
  }
  cv.notify_all();
  closer.join();
  waiter.join();
  EXPECT_TRUE(shut);
  EXPECT_TRUE(second_done);
}

}  // namespace
}  // namespace memkv::client
