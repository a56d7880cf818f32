// The asynchronous client (memkv/async.h) against a real server process:
// results equal the blocking calls', many batches in flight from several
// threads each complete exactly once, and destroying the client with work
// in flight completes every submission once (run, or cancelled).
#include <gtest/gtest.h>
#include <poll.h>

#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/harness.h"
#include "tests/shared_server.h"

namespace memkv::testing {
namespace {

class AsyncClientTest : public SharedServerTest {
 protected:
  void SetUp() override {
    client_ = ClientFor({server_}, 20000);
    ASSERT_NE(client_, nullptr);
    auto q = client_->NewAsyncQueue();
    ASSERT_TRUE(q.ok()) << q.status().ToString();
    queue_ = std::move(q).value();
  }

  static std::string Prefix() {
    return std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "/";
  }

  // Waits on the queue's fd, as an event loop would, until `n` completions
  // arrived or 20 s passed.
  std::vector<AsyncCompletion> Collect(size_t n) {
    std::vector<AsyncCompletion> out;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (out.size() < n && std::chrono::steady_clock::now() < deadline) {
      pollfd p{queue_->fd(), POLLIN, 0};
      if (::poll(&p, 1, 100) == 1) queue_->Poll(&out, n - out.size());
    }
    return out;
  }

  std::unique_ptr<Client> client_;
  std::unique_ptr<AsyncQueue> queue_;
};

// Keys and values that stay put while a submission holds them.
struct Batch {
  Batch(const std::string& prefix, size_t n, size_t value_bytes) {
    for (size_t i = 0; i < n; ++i) {
      names.push_back(prefix + std::to_string(i));
      data.push_back(Pattern(value_bytes + i, i + 1));
      room.emplace_back(value_bytes + n);
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

TEST_F(AsyncClientTest, ResultsEqualTheBlockingCalls) {
  Batch put(Prefix(), 64, 4096);
  queue_->SubmitPut(std::span(put.keys).first(32), std::span(put.values).first(32), 1);
  std::vector<AsyncCompletion> done = Collect(1);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].present_prefix, 32u);

  Batch async_get(Prefix(), 64, 4096), blocking_get(Prefix(), 64, 4096);
  std::vector<size_t> sizes;
  const BatchResult want = client_->BatchGetInto(blocking_get.keys, blocking_get.buffers, &sizes);
  const BatchResult want_exists = client_->BatchExists(put.keys);
  queue_->SubmitGet(async_get.keys, async_get.buffers, 2);
  queue_->SubmitExists(put.keys, 3);
  done = Collect(2);
  ASSERT_EQ(done.size(), 2u);
  for (const AsyncCompletion& c : done) {
    const BatchResult& w = c.tag == 2 ? want : want_exists;
    ASSERT_EQ(c.statuses.size(), 64u);
    for (size_t i = 0; i < 64; ++i) EXPECT_EQ(c.statuses[i].code(), w.statuses[i].code()) << i;
    EXPECT_EQ(c.present_prefix, 32u);
  }
  const AsyncCompletion& get = done[0].tag == 2 ? done[0] : done[1];
  EXPECT_EQ(get.sizes, sizes);
  for (size_t i = 0; i < 32; ++i) {
    EXPECT_TRUE(std::equal(put.data[i].begin(), put.data[i].end(), async_get.room[i].begin())) << i;
    EXPECT_EQ(async_get.room[i], blocking_get.room[i]) << i;
  }

  queue_->SubmitDelete(put.keys, 4);
  done = Collect(1);
  ASSERT_EQ(done.size(), 1u);
  for (size_t i = 0; i < 64; ++i) {
    EXPECT_EQ(done[0].statuses[i].code(), i < 32 ? StatusCode::kOk : StatusCode::kNotFound) << i;
  }
  const BatchResult after = client_->BatchExists(put.keys);
  EXPECT_EQ(after.present_prefix, 0u);
}

TEST_F(AsyncClientTest, ManyInFlightFromSeveralThreadsCompleteOnce) {
  constexpr size_t kThreads = 4, kPerThread = 50;
  std::vector<std::unique_ptr<Batch>> batches(kThreads * kPerThread);
  std::vector<std::vector<AsyncId>> ids(kThreads);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (size_t j = 0; j < kPerThread; ++j) {
        const size_t k = t * kPerThread + j;
        batches[k] = std::make_unique<Batch>(Prefix() + std::to_string(k) + "-", 16, 1024);
        ids[t].push_back(queue_->SubmitPut(batches[k]->keys, batches[k]->values, k));
      }
    });
  }
  for (std::thread& t : threads) t.join();
  std::vector<AsyncCompletion> done = Collect(kThreads * kPerThread);
  ASSERT_EQ(done.size(), kThreads * kPerThread);
  std::set<uint64_t> tags;
  for (const AsyncCompletion& c : done) {
    EXPECT_TRUE(tags.insert(c.tag).second) << "tag " << c.tag << " completed twice";
    EXPECT_EQ(c.present_prefix, 16u);
  }
  EXPECT_EQ(queue_->outstanding(), 0u);
  std::vector<AsyncCompletion> none;
  EXPECT_EQ(queue_->Poll(&none), 0u);
}

TEST_F(AsyncClientTest, DestroyingTheClientWithWorkInFlightCompletesEachOnce) {
  constexpr size_t kBatches = 100;
  std::vector<std::unique_ptr<Batch>> batches;
  for (size_t k = 0; k < kBatches; ++k) {
    batches.push_back(std::make_unique<Batch>(Prefix() + std::to_string(k) + "-", 8, 64 * 1024));
    queue_->SubmitPut(batches[k]->keys, batches[k]->values, k);
  }
  client_.reset();
  std::vector<AsyncCompletion> done;
  EXPECT_EQ(queue_->Poll(&done), kBatches);
  std::set<uint64_t> tags;
  for (const AsyncCompletion& c : done) {
    EXPECT_TRUE(tags.insert(c.tag).second);
    for (const Status& s : c.statuses) {
      // Ran to the end, or never started.
      EXPECT_TRUE(c.cancelled ? s.code() == StatusCode::kUnavailable : s.ok()) << s.ToString();
    }
  }
  EXPECT_EQ(queue_->outstanding(), 0u);
}

}  // namespace
}  // namespace memkv::testing
