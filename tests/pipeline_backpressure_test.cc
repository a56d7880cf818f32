// Pipelining beyond the in-flight limit (128 unanswered requests per
// connection, docs/wire-protocol.md "Limits"). The server stops parsing a
// connection at the limit; the requests behind it must wait and then be
// served, in order. They used to be lost: requests already read into the
// server's buffer were parsed again only when new bytes arrived, so a client
// that had sent everything waited forever (129 frames in one write got 128
// answers).
#include <gtest/gtest.h>

#include <sys/socket.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tests/harness.h"
#include "tests/shared_server.h"
#include "tests/raw_connection.h"

namespace memkv::testing {
namespace {

class PipelineBackpressureTest : public SharedServerTest {
 protected:
  static std::unique_ptr<RawConnection> Authenticated() {
    auto c = RawConnection::Open(server_->port());
    EXPECT_TRUE(c.ok());
    if (!c.ok()) return nullptr;
    auto hello = (*c)->Handshake(kTestKeyHex);
    EXPECT_TRUE(hello.ok() && hello->header.status == StatusCode::kOk);
    return std::move(c).value();
  }

};

TEST_F(PipelineBackpressureTest, Request129InOneWriteIsAnsweredNotLost) {
  auto c = Authenticated();
  ASSERT_NE(c, nullptr);
  constexpr int kRequests = 129;  // one more than the in-flight limit
  std::vector<uint8_t> burst;
  for (int i = 1; i <= kRequests; ++i) {
    std::vector<uint8_t> frame = c->BuildFrame(proto::Opcode::kPing, "", {}, static_cast<uint64_t>(i));
    burst.insert(burst.end(), frame.begin(), frame.end());
  }
  ASSERT_TRUE(c->SendBytes(burst).ok());
  for (int i = 1; i <= kRequests; ++i) {
    auto r = c->Read(5000);
    ASSERT_TRUE(r.ok()) << "answer " << i << " of " << kRequests << ": " << r.status().ToString();
    EXPECT_EQ(r->header.request_id, static_cast<uint64_t>(i));
    EXPECT_EQ(r->header.status, StatusCode::kOk);
  }
}

// Sends `requests` pipelined requests (every put followed by a get and an
// exists of its key) from another thread while reading the answers; checks
// that every one is answered, in order, with the bytes put.
void MixedPipelineIsAnsweredInOrder(RawConnection& c, int requests) {
  constexpr int kKeys = 100;
  auto key_of = [](int i) { return "pipe-" + std::to_string((i / 3) % kKeys); };
  auto value_of = [](int i) { return Pattern(200 + (i / 3) % kKeys, static_cast<uint64_t>((i / 3) % kKeys)); };
  std::vector<uint8_t> stream;
  for (int i = 0; i < requests; ++i) {
    std::vector<uint8_t> frame;
    const uint64_t id = static_cast<uint64_t>(i) + 1;
    switch (i % 3) {
      case 0: frame = c.BuildFrame(proto::Opcode::kPut, key_of(i), value_of(i), id); break;
      case 1: frame = c.BuildFrame(proto::Opcode::kGet, key_of(i), {}, id); break;
      default: frame = c.BuildFrame(proto::Opcode::kExists, key_of(i), {}, id); break;
    }
    stream.insert(stream.end(), frame.begin(), frame.end());
  }
  // Sent from another thread while this one reads: the answers must not have
  // to wait for the whole stream to be written.
  Status sent;
  std::thread sender([&] { sent = c.SendBytes(stream); });
  int answered = 0;
  for (int i = 0; i < requests; ++i) {
    auto r = c.Read(5000);
    if (!r.ok()) {
      ADD_FAILURE() << "answer " << i + 1 << " of " << requests << ": " << r.status().ToString();
      break;
    }
    ++answered;
    // (No ASSERT here: the sender must be joined.)
    bool in_order = r->header.request_id == static_cast<uint64_t>(i) + 1;
    EXPECT_TRUE(in_order) << "answer " << i + 1 << " has request id " << r->header.request_id;
    EXPECT_EQ(r->header.status, StatusCode::kOk) << "request " << i + 1 << ": " << r->message();
    if (i % 3 == 1) {
      EXPECT_EQ(r->payload, value_of(i)) << "request " << i + 1;
    }
    if (!in_order || r->header.status != StatusCode::kOk) break;
  }
  ::shutdown(c.fd(), SHUT_RDWR);  // unblocks the sender if answers stopped
  sender.join();
  EXPECT_EQ(answered, requests);
  EXPECT_TRUE(sent.ok()) << sent.ToString();
}

TEST_F(PipelineBackpressureTest, TenThousandPipelinedMixedRequestsAreAllAnsweredInOrder) {
  auto c = Authenticated();
  ASSERT_NE(c, nullptr);
  MixedPipelineIsAnsweredInOrder(*c, 10'000);
}

// A file-mode server with storage.sync: always (and `more_storage`), and an
// authenticated connection to it.
class PipelineSyncAlwaysTest : public ::testing::Test {
 protected:
  void Start(const std::string& more_storage) {
    ASSERT_TRUE(
        server_.Start(FileModeSpec(dir_.path(), 1, "256 MiB", "32 MiB", "  sync: always\n" + more_storage)).ok())
        << server_.Stderr();
    auto opened = RawConnection::Open(server_.port());
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    conn_ = std::move(opened).value();
    auto hello = conn_->Handshake(kTestKeyHex);
    ASSERT_TRUE(hello.ok() && hello->header.status == StatusCode::kOk);
  }

  TempDir dir_;
  ServerProcess server_;
  std::unique_ptr<RawConnection> conn_;
};

// With storage.sync: always every put waits for its drive commit, during
// which its connection reads nothing: the requests pipelined behind it
// arrive meanwhile (the worker stops polling that connection for input
// then) and are served once the put is answered. Then one put at a time,
// where the connection is idle while its put waits.
TEST_F(PipelineSyncAlwaysTest, RequestsPipelinedBehindPutsWaitingForTheirCommitAreAnsweredInOrder) {
  ASSERT_NO_FATAL_FAILURE(Start(""));
  RawConnection& c = *conn_;
  for (int i = 1; i <= 20; ++i) {
    const std::vector<uint8_t> value = Pattern(4096, static_cast<uint64_t>(i));
    ASSERT_TRUE(c.SendBytes(c.BuildFrame(proto::Opcode::kPut, "one-" + std::to_string(i), value, 100000 + i)).ok());
    auto r = c.Read(5000);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->header.request_id, static_cast<uint64_t>(100000 + i));
    EXPECT_EQ(r->header.status, StatusCode::kOk);
  }
  MixedPipelineIsAnsweredInOrder(c, 3'000);
}

// The same with storage.flush_on_loop_us: the worker writes and flushes its
// turns' puts itself while the drive's flushes take at most the limit (1 s
// here), and the answers still come in order.
TEST_F(PipelineSyncAlwaysTest, WithTheFlushOnTheLoopRequestsPipelinedBehindPutsAreAnsweredInOrder) {
  ASSERT_NO_FATAL_FAILURE(Start("  flush_on_loop_us: 1000000\n"));
  MixedPipelineIsAnsweredInOrder(*conn_, 3'000);
  HttpResult r = HttpRequestTo(server_.AdminPort(), "GET", "/v1/metrics");
  ASSERT_EQ(r.status, 200);
  EXPECT_GE(PrometheusSamples(r.body)["memkv_drive_loop_commits_total"], 1) << "flushed on the loop";
  EXPECT_NE(server_.Stderr().find("flushes take at most 1000000 us (storage.flush_on_loop_us)"), std::string::npos)
      << "the start log names the setting: " << server_.Stderr();
}

}  // namespace
}  // namespace memkv::testing
