// A client that stalls in the middle of a frame (network.frame_timeout_ms).
// A 48 MiB put stalled after 1 MiB used to hold the pool space reserved for
// its value for as long as its connection stayed open: an honest 32 MiB put
// failed with ResourceExhausted whatever the server's timeouts.
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tests/harness.h"
#include "tests/raw_connection.h"

namespace memkv::testing {
namespace {

constexpr int kFrameTimeoutMs = 2000;

class StalledFrameTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerSpec spec;
    spec.memory_max_size = "64 MiB";
    spec.network_yaml = "  frame_timeout_ms: " + std::to_string(kFrameTimeoutMs) + "\n";
    Status s = server_.Start(spec);
    ASSERT_TRUE(s.ok()) << s.ToString();
    admin_ = server_.AdminPort();
    ASSERT_NE(admin_, 0) << server_.Stderr();
  }
  std::unique_ptr<RawConnection> Authenticated() {
    auto c = RawConnection::Open(server_.port());
    EXPECT_TRUE(c.ok());
    if (!c.ok()) return nullptr;
    auto hello = (*c)->Handshake(kTestKeyHex);
    EXPECT_TRUE(hello.ok() && hello->header.status == StatusCode::kOk);
    return std::move(c).value();
  }
  double Metric(const std::string& sample) {
    HttpResult r = HttpRequestTo(admin_, "GET", "/v1/metrics");
    std::map<std::string, double> samples = PrometheusSamples(r.body);
    auto it = samples.find(sample);
    return it == samples.end() ? -1 : it->second;
  }

  ServerProcess server_;
  uint16_t admin_ = 0;
};

TEST_F(StalledFrameTest, StalledPutReleasesItsPoolSpaceAtTheFrameDeadline) {
  // Authenticated and idle between frames the whole time: never closed.
  auto idle = Authenticated();
  ASSERT_NE(idle, nullptr);

  auto stalled = Authenticated();
  ASSERT_NE(stalled, nullptr);
  std::vector<uint8_t> frame = stalled->BuildFrame(proto::Opcode::kPut, "stalled", Pattern(48 << 20, 1), 2);
  frame.resize(proto::kHeaderSize + std::string("stalled").size() + (1 << 20));
  ASSERT_TRUE(stalled->SendBytes(frame).ok());

  // While the stalled put holds 48 of the 64 MiB, an honest 32 MiB put does
  // not fit...
  auto client = ClientFor({&server_});
  ASSERT_NE(client, nullptr);
  const std::vector<uint8_t> honest = Pattern(32 << 20, 2);
  EXPECT_EQ(client->Put("honest", honest).code(), StatusCode::kResourceExhausted);

  // ...and once the frame deadline passes, the stalled connection is closed,
  // its space released and the honest put stored.
  EXPECT_TRUE(stalled->ClosedByPeer(kFrameTimeoutMs + 15000)) << server_.Stderr();
  Status put = Status::Ok();
  EXPECT_TRUE(PollUntil([&] { return (put = client->Put("honest", honest)).ok(); }, 10000)) << put.ToString();
  EXPECT_EQ(*client->Get("honest"), honest);
  EXPECT_EQ(client->Get("stalled").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(Metric("memkv_connections_closed_total{reason=\"frame_timeout\"}"), 1);
  const std::string log = server_.Stderr();
  EXPECT_NE(log.find("a TcpPut frame stalled mid-way"), std::string::npos) << log;
  EXPECT_NE(log.find("(network.frame_timeout_ms " + std::to_string(kFrameTimeoutMs) + " plus 1 s per 64 MiB"), std::string::npos) << log;

  // The connection that sat between frames for longer than the deadline is
  // still served.
  ASSERT_TRUE(idle->SendBytes(idle->BuildFrame(proto::Opcode::kPing, "", {}, 3)).ok());
  auto pong = idle->Read();
  ASSERT_TRUE(pong.ok()) << pong.status().ToString();
  EXPECT_EQ(pong->header.status, StatusCode::kOk);
}

TEST_F(StalledFrameTest, AHeaderCutShortIsClosedToo) {
  auto c = Authenticated();
  ASSERT_NE(c, nullptr);
  std::vector<uint8_t> frame = c->BuildFrame(proto::Opcode::kPing, "", {}, 2);
  frame.resize(10);
  ASSERT_TRUE(c->SendBytes(frame).ok());
  EXPECT_TRUE(c->ClosedByPeer(kFrameTimeoutMs + 15000)) << server_.Stderr();
  EXPECT_TRUE(PollUntil([&] { return Metric("memkv_connections_closed_total{reason=\"frame_timeout\"}") == 1; }, 5000));
  EXPECT_NE(server_.Stderr().find("a frame header stalled mid-way, 10 of"), std::string::npos) << server_.Stderr();
}

TEST(StalledFrameConfigTest, FrameTimeoutOutOfRangeStopsStartNamingTheField) {
  ServerProcess server;
  ServerSpec spec;
  spec.network_yaml = "  frame_timeout_ms: 5\n";
  Status s = server.Start(spec);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("network.frame_timeout_ms: 5 is out of range; allowed: 100..3600000 (milliseconds)"),
            std::string::npos)
      << s.message();
}

}  // namespace
}  // namespace memkv::testing

namespace memkv::testing {
namespace {

constexpr int kWriteStallMs = 1000;

// A client that pipelines puts and never reads their answers. The answers
// are small: they all fit in the server's socket send buffer, so nothing
// waits in the server's own queue, yet the client, whose receive window is
// tiny, takes none of them. The write-stall timeout applies all the same.
TEST(WriteStallTest, ClientThatNeverReadsSmallAnswersIsClosedAtTheWriteStallDeadline) {
  ServerProcess server;
  ServerSpec spec;
  spec.extra_args = {"--write-stall-timeout-ms", std::to_string(kWriteStallMs), "--workers", "1"};
  ASSERT_TRUE(server.Start(spec).ok()) << server.Stderr();
  const uint16_t admin = server.AdminPort();

  // An honest idle connection: owes nothing, so it stays open throughout.
  auto idle = RawConnection::Open(server.port());
  ASSERT_TRUE(idle.ok());
  ASSERT_TRUE((*idle)->Handshake(kTestKeyHex).ok());

  auto hostile = RawConnection::Open(server.port());
  ASSERT_TRUE(hostile.ok());
  ASSERT_TRUE((*hostile)->Handshake(kTestKeyHex).ok());
  // The smallest receive buffer the kernel allows: the client's TCP soon
  // stops taking the answers it is not reading.
  const int tiny = 1;
  ASSERT_EQ(::setsockopt((*hostile)->fd(), SOL_SOCKET, SO_RCVBUF, &tiny, sizeof(tiny)), 0);
  // 100 puts of 16 KiB (fewer than the in-flight limit, so the server reads
  // them all): answers of under a hundred bytes each, which leave the
  // server's own queue for its socket send buffer.
  std::vector<uint8_t> batch;
  for (uint64_t i = 0; i < 100; ++i) {
    std::vector<uint8_t> f =
        (*hostile)->BuildFrame(proto::Opcode::kPut, "silent-" + std::to_string(i), Pattern(16 << 10, i), i + 1);
    batch.insert(batch.end(), f.begin(), f.end());
  }
  ASSERT_TRUE((*hostile)->SendBytes(batch).ok());
  // Then silence: no reads, no writes. The server closes it once the stall
  // deadline passes (bounded generously: the sweep runs every 100 ms). Its
  // FIN waits behind the answers the client does not read, so the server's
  // count says so; reading then drains the answers and meets the close.
  auto stalled_closes = [&] {
    HttpResult r = HttpRequestTo(admin, "GET", "/v1/metrics");
    return PrometheusSamples(r.body)["memkv_connections_closed_total{reason=\"write_stall\"}"];
  };
  EXPECT_TRUE(PollUntil([&] { return stalled_closes() >= 1; }, kWriteStallMs + 20000)) << server.Stderr();
  EXPECT_NE(server.Stderr().find("it has not read its responses"), std::string::npos) << server.Stderr();
  EXPECT_TRUE((*hostile)->ClosedByPeer(10000));

  // The idle connection was not touched, and still works.
  auto client = ClientFor({&server});
  ASSERT_NE(client, nullptr);
  EXPECT_TRUE(client->Put("after", Pattern(100, 3)).ok());
  std::vector<uint8_t> ping = (*idle)->BuildFrame(proto::Opcode::kExists, "after", {}, 1);
  ASSERT_TRUE((*idle)->SendBytes(ping).ok());
  auto answer = (*idle)->Read(5000);
  ASSERT_TRUE(answer.ok()) << answer.status().ToString();
  EXPECT_EQ(answer->header.status, StatusCode::kOk);
}

}  // namespace
}  // namespace memkv::testing
