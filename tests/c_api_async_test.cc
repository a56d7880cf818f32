// The C API's asynchronous batches (memkv_async_*) against a real server:
// results equal the memkv_batch_* calls', the fd is readable while
// completions wait, each submission completes once, cancel, and the
// boundary's argument checks.
#include <gtest/gtest.h>
#include <poll.h>

#include <array>
#include <chrono>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "memkv/memkv.h"
#include "tests/harness.h"
#include "tests/shared_server.h"

namespace memkv::testing {
namespace {

struct ClientCloser {
  void operator()(memkv_client_t* c) const { memkv_client_close(c); }
};
using ClientPtr = std::unique_ptr<memkv_client_t, ClientCloser>;

class CApiAsyncTest : public SharedServerTest {
 protected:
  void SetUp() override {
    memkv_client_t* c = nullptr;
    ASSERT_EQ(memkv_client_open(server_->address().c_str(), kTestKeyHex, 10000, &c), MEMKV_OK) << memkv_last_error();
    client_.reset(c);
  }

  // Polls until `n` completions came or 20 s passed, waiting on the fd.
  std::vector<memkv_async_completion_t> Collect(size_t n) {
    int fd = -1;
    EXPECT_EQ(memkv_async_fd(client_.get(), &fd), MEMKV_OK);
    std::vector<memkv_async_completion_t> out;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (out.size() < n && std::chrono::steady_clock::now() < deadline) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 100) != 1) continue;
      memkv_async_completion_t batch[8];
      size_t got = 0;
      EXPECT_EQ(memkv_async_poll(client_.get(), batch, 8, 0, &got), MEMKV_OK);
      out.insert(out.end(), batch, batch + got);
    }
    return out;
  }

  ClientPtr client_;
};

struct Keys {
  explicit Keys(std::vector<std::string> key_names) : names(std::move(key_names)) {
    for (const std::string& n : names) {
      ptrs.push_back(n.data());
      lens.push_back(n.size());
    }
  }
  std::vector<std::string> names;
  std::vector<const void*> ptrs;
  std::vector<size_t> lens;
};

TEST_F(CApiAsyncTest, ResultsEqualTheBatchCalls) {
  Keys put({"a0", "a1", "a2"});
  std::vector<std::vector<uint8_t>> values;
  std::vector<const void*> value_ptrs;
  std::vector<size_t> value_lens;
  for (size_t i = 0; i < 3; ++i) {
    values.push_back(Pattern(500 * (i + 1), i));
    value_ptrs.push_back(values[i].data());
    value_lens.push_back(values[i].size());
  }
  memkv_status_t put_statuses[3] = {99, 99, 99};
  uint64_t put_id = 0;
  ASSERT_EQ(memkv_async_put(client_.get(), put.ptrs.data(), put.lens.data(), value_ptrs.data(), value_lens.data(), 3,
                            put_statuses, 11, &put_id),
            MEMKV_OK)
      << memkv_last_error();
  std::vector<memkv_async_completion_t> done = Collect(1);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].id, put_id);
  EXPECT_EQ(done[0].tag, 11u);
  EXPECT_EQ(done[0].op, MEMKV_ASYNC_PUT);
  EXPECT_EQ(done[0].cancelled, 0);
  EXPECT_EQ(done[0].count, 3u);
  EXPECT_EQ(done[0].prefix, 3u);
  EXPECT_EQ(done[0].status, MEMKV_OK);
  for (memkv_status_t s : put_statuses) EXPECT_EQ(s, MEMKV_OK);

  // The same keys read back, a miss in the middle, a buffer too small.
  Keys get({"a0", "a-missing", "a2", "a1"});
  std::vector<std::vector<uint8_t>> bufs(4, std::vector<uint8_t>(4096, 0xee));
  bufs[3].resize(10);
  std::vector<void*> buf_ptrs;
  std::vector<size_t> buf_lens;
  for (auto& b : bufs) {
    buf_ptrs.push_back(b.data());
    buf_lens.push_back(b.size());
  }
  size_t got_lens[4] = {9, 9, 9, 9};
  memkv_status_t get_statuses[4];
  ASSERT_EQ(memkv_async_get(client_.get(), get.ptrs.data(), get.lens.data(), buf_ptrs.data(), buf_lens.data(), 4,
                            got_lens, get_statuses, 12, nullptr),
            MEMKV_OK);
  memkv_status_t exists_statuses[4];
  ASSERT_EQ(memkv_async_exists(client_.get(), get.ptrs.data(), get.lens.data(), 4, exists_statuses, 13, nullptr),
            MEMKV_OK);
  done = Collect(2);
  ASSERT_EQ(done.size(), 2u);
  for (const memkv_async_completion_t& d : done) {
    if (d.tag == 12) {
      EXPECT_EQ(d.prefix, 1u);
      EXPECT_EQ(d.status, MEMKV_TOO_LARGE);
    } else {
      EXPECT_EQ(d.op, MEMKV_ASYNC_EXISTS);
      EXPECT_EQ(d.status, MEMKV_OK);
    }
  }
  size_t want_lens[4];
  memkv_status_t want_statuses[4];
  ASSERT_EQ(memkv_batch_get(client_.get(), get.ptrs.data(), get.lens.data(), buf_ptrs.data(), buf_lens.data(), 4,
                            want_lens, want_statuses, nullptr),
            MEMKV_OK);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(get_statuses[i], want_statuses[i]) << i;
    EXPECT_EQ(got_lens[i], want_lens[i]) << i;
  }
  EXPECT_EQ(std::memcmp(bufs[0].data(), values[0].data(), values[0].size()), 0);
  EXPECT_EQ(std::memcmp(bufs[2].data(), values[2].data(), values[2].size()), 0);
  EXPECT_EQ(exists_statuses[0], MEMKV_OK);
  EXPECT_EQ(exists_statuses[1], MEMKV_NOT_FOUND);

  memkv_status_t delete_statuses[4];
  ASSERT_EQ(memkv_async_delete(client_.get(), get.ptrs.data(), get.lens.data(), 4, delete_statuses, 14, nullptr),
            MEMKV_OK);
  done = Collect(1);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].op, MEMKV_ASYNC_DELETE);
  EXPECT_EQ(delete_statuses[0], MEMKV_OK);
  EXPECT_EQ(delete_statuses[1], MEMKV_NOT_FOUND);
  int present = 1;
  ASSERT_EQ(memkv_exists(client_.get(), "a2", 2, &present), MEMKV_OK);
  EXPECT_EQ(present, 0);
}

TEST_F(CApiAsyncTest, ManySubmissionsEachCompleteOnceAndTheFdGoesQuiet) {
  constexpr size_t kSubmissions = 100;
  Keys keys({"m0", "m1", "m2", "m3"});
  std::vector<std::array<memkv_status_t, 4>> statuses(kSubmissions);
  std::set<uint64_t> ids;
  for (size_t i = 0; i < kSubmissions; ++i) {
    uint64_t id = 0;
    ASSERT_EQ(memkv_async_exists(client_.get(), keys.ptrs.data(), keys.lens.data(), 4, statuses[i].data(), i, &id),
              MEMKV_OK);
    EXPECT_TRUE(ids.insert(id).second);
  }
  std::vector<memkv_async_completion_t> done = Collect(kSubmissions);
  ASSERT_EQ(done.size(), kSubmissions);
  std::set<uint64_t> tags;
  for (const memkv_async_completion_t& d : done) {
    EXPECT_TRUE(ids.contains(d.id));
    EXPECT_TRUE(tags.insert(d.tag).second);
  }
  for (const auto& s : statuses) EXPECT_EQ(s[0], MEMKV_NOT_FOUND);
  int fd = -1;
  ASSERT_EQ(memkv_async_fd(client_.get(), &fd), MEMKV_OK);
  pollfd p{fd, POLLIN, 0};
  EXPECT_EQ(::poll(&p, 1, 0), 0);
  memkv_async_completion_t none[1];
  size_t got = 9;
  EXPECT_EQ(memkv_async_poll(client_.get(), none, 1, 0, &got), MEMKV_OK);
  EXPECT_EQ(got, 0u);
}

TEST_F(CApiAsyncTest, CancelOfAFinishedSubmissionSaysNo) {
  Keys keys({"c0"});
  memkv_status_t statuses[1];
  uint64_t id = 0;
  ASSERT_EQ(memkv_async_exists(client_.get(), keys.ptrs.data(), keys.lens.data(), 1, statuses, 0, &id), MEMKV_OK);
  ASSERT_EQ(Collect(1).size(), 1u);
  int cancelled = 7;
  ASSERT_EQ(memkv_async_cancel(client_.get(), id, &cancelled), MEMKV_OK);
  EXPECT_EQ(cancelled, 0);
  ASSERT_EQ(memkv_async_cancel(client_.get(), 123456789, &cancelled), MEMKV_OK);
  EXPECT_EQ(cancelled, 0);
}

TEST_F(CApiAsyncTest, ClosingWithSubmissionsInFlightIsSafe) {
  Keys keys({"x0", "x1"});
  std::vector<uint8_t> value = Pattern(256 * 1024, 3);
  const void* values[2] = {value.data(), value.data()};
  size_t value_lens[2] = {value.size(), value.size()};
  std::vector<std::array<memkv_status_t, 2>> statuses(50);
  for (auto& s : statuses) {
    ASSERT_EQ(memkv_async_put(client_.get(), keys.ptrs.data(), keys.lens.data(), values, value_lens, 2, s.data(), 0,
                              nullptr),
              MEMKV_OK);
  }
  client_.reset();  // cancels what has not started, waits for the rest
}

TEST_F(CApiAsyncTest, ArgumentsAreChecked) {
  memkv_status_t statuses[1];
  EXPECT_EQ(memkv_async_exists(nullptr, nullptr, nullptr, 0, nullptr, 0, nullptr), MEMKV_INVALID_ARGUMENT);
  EXPECT_NE(std::string(memkv_last_error()).find("memkv_async_exists: client is NULL"), std::string::npos)
      << memkv_last_error();
  const void* null_key[1] = {nullptr};
  size_t len[1] = {3};
  EXPECT_EQ(memkv_async_delete(client_.get(), null_key, len, 1, statuses, 0, nullptr), MEMKV_INVALID_ARGUMENT);
  EXPECT_NE(std::string(memkv_last_error()).find("keys[0] is NULL"), std::string::npos) << memkv_last_error();
  EXPECT_EQ(memkv_async_fd(client_.get(), nullptr), MEMKV_INVALID_ARGUMENT);
  EXPECT_EQ(memkv_async_poll(client_.get(), nullptr, 1, 0, nullptr), MEMKV_INVALID_ARGUMENT);
  EXPECT_EQ(memkv_async_cancel(client_.get(), 1, nullptr), MEMKV_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace memkv::testing
