// The RDMA transport end to end through the fault-injecting verbs seam: an
// in-process server (its pool registered on a FakeFabric device) and a
// client on another device of the same fabric, talking over real loopback
// TCP for control while the value bytes move by the fabric's one-sided
// WRITE / READ. Faults are injected at the seam (completion errors by status,
// failed posts, late completions, MTU mismatch, no device), and after every
// test every registration, QP and outstanding WR is accounted for.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/checksum.h"
#include "base/log.h"
#include "client/client_from_config.h"
#include "client/rdma.h"
#include "config/server_config.h"
#include "drive/extent_store.h"
#include "drive/test_util.h"
#include "memkv/client.h"
#include "nixl/transfer_engine.h"
#include "server/rdma_endpoint.h"
#include "tests/harness.h"
#include "tests/in_process_server.h"
#include "tests/raw_connection.h"
#include "verbs/fake.h"

namespace memkv {
namespace {

using drive::TempDir;
using server::GrantSegments;
using server::kMaxGrantSegmentBytes;
using server::RdmaGrantLease;

const std::string kKeyHex(64, 'a');

std::vector<uint8_t> Pattern(size_t n, uint32_t seed) {
  std::vector<uint8_t> v(n);
  uint32_t x = seed * 2654435761u + 1;
  for (size_t i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    v[i] = static_cast<uint8_t>(x >> 24);
  }
  return v;
}

bool Contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

config::RdmaConfig ServerRdma(uint32_t mtu = 4096) {
  config::RdmaConfig c;
  c.device = "srv0";
  c.mtu = mtu;
  c.traffic_class = 104;
  c.service_level = 3;
  return c;
}

class RdmaTransportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fabric_.AddDevice("srv0");
    fabric_.AddDevice("cli0");
  }

  void TearDown() override {
    // Everything handed to the NIC came back once client and server are gone.
    EXPECT_EQ(fabric_.LiveRegistrations(), 0u);
    EXPECT_EQ(fabric_.LiveQps(), 0u);
    EXPECT_EQ(fabric_.OutstandingWrs(), 0u);
  }

  std::unique_ptr<Client> MakeClient(const InProcessServer& server, const std::string& transport,
                                     uint32_t mtu = 4096, uint32_t timeout_ms = 5000, uint32_t connections = 2) {
    ClientOptions o;
    o.servers = {server.address()};
    o.auth_key_hex = kKeyHex;
    o.transport = transport;
    o.rdma_devices = {"cli0"};
    o.rdma_mtu = mtu;
    o.timeout_ms = timeout_ms;
    o.num_connections = connections;
    auto c = client::CreateClientWithVerbs(o, fabric_);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? std::move(c).value() : nullptr;
  }

  verbs::FakeFabric fabric_;
};

TEST_F(RdmaTransportTest, RoundTripsOfEveryBlockSizeMoveTheBytesByRdma) {
  InProcessServer server(fabric_, ServerRdma());
  ASSERT_TRUE(server.status().ok()) << server.status().ToString();
  auto client = MakeClient(server, "rdma");
  ASSERT_NE(client, nullptr);
  uint64_t total = 0;
  for (size_t size : {size_t{0}, size_t{1}, size_t{4096}, size_t{(2 << 20) + 1}, size_t{9 << 20}}) {
    const std::string key = "k" + std::to_string(size);
    std::vector<uint8_t> value = Pattern(size, static_cast<uint32_t>(size));
    ASSERT_TRUE(client->Put(key, value).ok()) << size;
    auto got = client->Get(key);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(*got, value) << size;
    std::vector<uint8_t> buffer(size + 10, 0xee);
    auto n = client->GetInto(key, buffer);
    ASSERT_TRUE(n.ok()) << n.status().ToString();
    ASSERT_EQ(*n, size);
    EXPECT_TRUE(std::equal(value.begin(), value.end(), buffer.begin()));
    total += 3 * size;
  }
  ClientStats stats = client->Stats();
  EXPECT_EQ(stats.transport, "rdma");
  EXPECT_EQ(stats.rdma_state, "active");
  EXPECT_EQ(stats.rdma_ops, 15u);
  EXPECT_EQ(stats.rdma_bytes, total);
  EXPECT_EQ(stats.tcp_ops, 0u);
  EXPECT_EQ(stats.tcp_bytes, 0u);
  EXPECT_EQ(stats.fallbacks, 0u);
  EXPECT_GT(fabric_.WritesCompleted(), 0u);
  EXPECT_GT(fabric_.ReadsCompleted(), 0u);
  EXPECT_EQ(fabric_.BytesMoved(), total);
  EXPECT_GT(server.metrics().rdma_connections.Value(), 0u);
  // The server's marking reached the client's QPs.
  EXPECT_EQ(fabric_.LastPath().traffic_class, 104);
  EXPECT_EQ(fabric_.LastPath().service_level, 3);
  EXPECT_EQ(fabric_.LastPath().mtu, 4096u);
  EXPECT_LE(fabric_.LastPath().retry_count, 6);
  EXPECT_TRUE(Contains(stats.rdma_path, "cli0 gid_index 1, traffic_class 104 (DSCP 26), service_level 3, mtu 4096"))
      << stats.rdma_path;
  // Misses and a value that does not fit the caller's buffer.
  EXPECT_EQ(client->Get("absent").status().code(), StatusCode::kNotFound);
  std::vector<uint8_t> small(10);
  EXPECT_EQ(client->GetInto("k4096", small).status().code(), StatusCode::kTooLarge);
}

TEST_F(RdmaTransportTest, AutoDowngradesOnRetryExhaustionAndReissuesOverTcpExactlyOnce) {
  InProcessServer server(fabric_, ServerRdma());
  ASSERT_TRUE(server.status().ok());
  auto client = MakeClient(server, "auto");
  ASSERT_TRUE(client->Put("warm", Pattern(100, 1)).ok());
  ASSERT_EQ(client->Stats().rdma_ops, 1u);

  fabric_.FailCompletions(1, verbs::kWcRetryExcErr);
  std::vector<uint8_t> value = Pattern(3 << 20, 7);
  Status s = client->Put("big", value);
  ASSERT_TRUE(s.ok()) << s.ToString();
  ClientStats stats = client->Stats();
  EXPECT_EQ(stats.transport, "tcp");
  EXPECT_EQ(stats.fallbacks, 1u);
  EXPECT_TRUE(Contains(stats.fallback_reason, "IBV_WC_RETRY_EXC_ERR (status 12)")) << stats.fallback_reason;
  EXPECT_EQ(stats.rdma_reissued, 1u);
  EXPECT_EQ(stats.tcp_ops, 1u);
  EXPECT_EQ(stats.completion_errors[verbs::kWcRetryExcErr], 1u);
  // Applied once: the RDMA slot was dropped, the TCP put committed.
  EXPECT_EQ(server.store().Stats().keys, 2u);
  EXPECT_EQ(server.metrics().rdma_put_bytes.Value(), 100u);
  auto got = client->Get("big");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, value);
  // For good: later operations stay on TCP even though the fault is gone.
  EXPECT_TRUE(client->Put("after", Pattern(10, 2)).ok());
  EXPECT_EQ(client->Stats().rdma_ops, 1u);
  EXPECT_EQ(client->Stats().fallbacks, 1u);
  EXPECT_EQ(client->Stats().rdma_state, "fallback");
}

TEST_F(RdmaTransportTest, AutoReissuesAGetWhoseReadFailed) {
  InProcessServer server(fabric_, ServerRdma());
  auto client = MakeClient(server, "auto");
  std::vector<uint8_t> value = Pattern(2 << 20, 3);
  ASSERT_TRUE(client->Put("g", value).ok());
  fabric_.FailCompletions(1, verbs::kWcRemAccessErr);
  auto got = client->Get("g");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, value);
  ClientStats stats = client->Stats();
  EXPECT_EQ(stats.rdma_reissued, 1u);
  EXPECT_TRUE(Contains(stats.fallback_reason, "IBV_WC_REM_ACCESS_ERR")) << stats.fallback_reason;
}

TEST_F(RdmaTransportTest, RdmaModeSurfacesTheVerbsStatusAndNeverFallsBack) {
  InProcessServer server(fabric_, ServerRdma());
  auto client = MakeClient(server, "rdma");
  fabric_.FailCompletions(1, verbs::kWcRetryExcErr);
  Status s = client->Put("x", Pattern(1 << 20, 1));
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_TRUE(Contains(s.message(), "IBV_WC_RETRY_EXC_ERR (status 12)")) << s.ToString();
  EXPECT_FALSE(server.store().Exists("x"));
  ClientStats stats = client->Stats();
  EXPECT_EQ(stats.fallbacks, 0u);
  EXPECT_EQ(stats.tcp_ops, 0u);
  EXPECT_EQ(stats.transport, "rdma");
  // The broken connection is retired; the next operation gets fresh QPs.
  ASSERT_TRUE(client->Put("x", Pattern(1 << 20, 1)).ok());
  EXPECT_EQ(client->Stats().rdma_ops, 1u);
}

TEST_F(RdmaTransportTest, FailedPostsFallBackInAutoAndSurfaceInRdma) {
  InProcessServer server(fabric_, ServerRdma());
  {
    auto client = MakeClient(server, "rdma");
    fabric_.FailPosts(1, ENOMEM);
    Status s = client->Put("p", Pattern(5000, 1));
    EXPECT_EQ(s.code(), StatusCode::kUnavailable);
    EXPECT_TRUE(Contains(s.message(), "post")) << s.ToString();
  }
  auto client = MakeClient(server, "auto");
  fabric_.FailPosts(1, ENOMEM);
  ASSERT_TRUE(client->Put("p", Pattern(5000, 1)).ok());
  EXPECT_EQ(client->Stats().fallbacks, 1u);
  EXPECT_EQ(client->Stats().rdma_reissued, 1u);
}

TEST_F(RdmaTransportTest, LateCompletionsHitTheDeadlineNeverAHang) {
  InProcessServer server(fabric_, ServerRdma());
  auto client = MakeClient(server, "rdma", 4096, /*timeout_ms=*/300);
  ASSERT_TRUE(client->Put("warm", Pattern(10, 1)).ok());
  fabric_.HoldCompletions(true);
  Status s = client->Put("late", Pattern(1 << 20, 1));
  EXPECT_EQ(s.code(), StatusCode::kDeadlineExceeded) << s.ToString();
  EXPECT_TRUE(Contains(s.message(), "RDMA")) << s.ToString();
  fabric_.HoldCompletions(false);  // arrives after the QP is gone: ignored
  EXPECT_FALSE(server.store().Exists("late"));
  // The server is marked down for a short backoff after the timeout; it
  // serves again, with fresh QPs, once the backoff is over.
  Status again;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  do {
    again = client->Put("late", Pattern(1 << 20, 1));
  } while (!again.ok() && std::chrono::steady_clock::now() < give_up);
  ASSERT_TRUE(again.ok()) << again.ToString();
  EXPECT_GE(client->Stats().timeouts, 1u);
}

TEST_F(RdmaTransportTest, MtuMismatchIsRefusedAtConnectNamingBothValues) {
  InProcessServer server(fabric_, ServerRdma(4096));
  auto strict = MakeClient(server, "rdma", /*mtu=*/1024);
  Status s = strict->Put("m", Pattern(10, 1));
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  EXPECT_TRUE(Contains(s.message(), "1024") && Contains(s.message(), "4096")) << s.ToString();
  EXPECT_GE(server.metrics().rdma_refused.Value(), 1u);

  auto flexible = MakeClient(server, "auto", /*mtu=*/1024);
  ASSERT_TRUE(flexible->Put("m", Pattern(10, 1)).ok());
  ClientStats stats = flexible->Stats();
  EXPECT_EQ(stats.fallbacks, 1u);
  EXPECT_TRUE(Contains(stats.fallback_reason, "1024") && Contains(stats.fallback_reason, "4096"))
      << stats.fallback_reason;
  EXPECT_EQ(stats.tcp_ops, 1u);
}

TEST_F(RdmaTransportTest, ServerWithoutRdmaServesTcpAndAutoClientsFollow) {
  config::RdmaConfig none = ServerRdma();
  none.device = "mlx5_9";  // not on this fabric: the server serves TCP only
  InProcessServer server(fabric_, none);
  ASSERT_TRUE(server.status().ok());
  EXPECT_FALSE(server.rdma());
  auto client = MakeClient(server, "auto");
  ASSERT_TRUE(client->Put("t", Pattern(100, 1)).ok());
  EXPECT_TRUE(Contains(client->Stats().fallback_reason, "TCP only")) << client->Stats().fallback_reason;
  auto strict = MakeClient(server, "rdma");
  EXPECT_EQ(strict->Put("t", Pattern(100, 1)).code(), StatusCode::kUnavailable);
}

TEST_F(RdmaTransportTest, StartRefusesAnMtuAboveThePortsActiveMtu) {
  verbs::PortInfo port = verbs::FakeFabric::HealthyPort("slow0");
  port.active_mtu = 1024;
  fabric_.AddDevice(port);
  config::RdmaConfig c = ServerRdma(4096);
  c.device = "slow0";
  InProcessServer server(fabric_, c);
  EXPECT_EQ(server.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(Contains(server.status().message(), "4096") && Contains(server.status().message(), "1024"))
      << server.status().ToString();
}

TEST_F(RdmaTransportTest, ManyThreadsPipelineOverSeveralQps) {
  InProcessServer server(fabric_, ServerRdma(), 256 << 20);
  auto client = MakeClient(server, "rdma");
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) {
        const std::string key = "t" + std::to_string(t) + "-" + std::to_string(i);
        std::vector<uint8_t> v = Pattern(static_cast<size_t>(1000 + 70000 * i), static_cast<uint32_t>(t * 100 + i));
        if (!client->Put(key, v).ok()) ++bad;
        auto got = client->Get(key);
        if (!got.ok() || *got != v) ++bad;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(client->Stats().rdma_ops, 320u);
}

TEST_F(RdmaTransportTest, LargeCallerBuffersAreRegisteredOnceAndUsedWithoutACopy) {
  InProcessServer server(fabric_, ServerRdma());
  auto client = MakeClient(server, "rdma");
  ASSERT_TRUE(client->Put("warm", Pattern(10, 1)).ok());  // small: copied through the bounce pool
  EXPECT_EQ(client->Stats().rdma_zero_copy_ops, 0u);
  const size_t base = fabric_.LiveRegistrations();
  std::vector<uint8_t> value = Pattern(1 << 20, 5);
  ASSERT_TRUE(client->Put("z", value).ok());
  EXPECT_EQ(fabric_.LiveRegistrations(), base + 1);  // the caller's buffer itself, no bounce copy
  ASSERT_TRUE(client->Put("z2", value).ok());
  EXPECT_EQ(fabric_.LiveRegistrations(), base + 1);  // cached
  std::vector<uint8_t> out(1 << 20);
  ASSERT_TRUE(client->GetInto("z", out).ok());
  EXPECT_EQ(out, value);
  EXPECT_EQ(fabric_.LiveRegistrations(), base + 2);
  EXPECT_EQ(client->Stats().rdma_zero_copy_ops, 3u);

  // Explicit registration: any slice of the region moves without a new one.
  std::vector<uint8_t> region(4 << 20);
  ASSERT_TRUE(client->RegisterMemory(region).ok());
  const size_t pinned = fabric_.LiveRegistrations();
  std::span<uint8_t> slice = std::span<uint8_t>(region).subspan(4096 + 17, 1 << 20);
  auto n = client->GetInto("z", slice);
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_TRUE(std::equal(value.begin(), value.end(), slice.begin()));
  EXPECT_EQ(fabric_.LiveRegistrations(), pinned);
  EXPECT_TRUE(client->UnregisterMemory(region.data()).ok());
  EXPECT_EQ(client->UnregisterMemory(region.data()).code(), StatusCode::kNotFound);
  EXPECT_EQ(client->Stats().rdma_ops, 5u);
  EXPECT_EQ(client->Stats().rdma_zero_copy_ops, 4u);
}

// A value past 1 GiB (the most one WR carries, client::kMaxWrBytes) and far
// past the largest bounce buffer: straight from and into the caller's
// registered buffers in WRs of at most 1 GiB, and, for Get() without a
// buffer, through one bounce buffer a piece at a time.
TEST_F(RdmaTransportTest, AValueOfOverAGiBMovesByteExactInEveryForm) {
  constexpr uint64_t kMiB = 1 << 20;
  constexpr uint64_t kSize = 1300 * kMiB;
  InProcessServer server(fabric_, ServerRdma(), 1536 * kMiB);
  ASSERT_TRUE(server.status().ok()) << server.status().ToString();
  auto client = MakeClient(server, "rdma", 4096, 120000);
  ASSERT_NE(client, nullptr);
  std::vector<uint8_t> value(kSize);
  testing::FillPattern(value, 7);

  uint64_t writes = fabric_.WritesCompleted();
  ASSERT_TRUE(client->Put("big", value).ok());
  EXPECT_EQ(fabric_.WritesCompleted() - writes, 2u);  // 1 GiB + 276 MiB, from the caller's buffer
  EXPECT_EQ(client->Stats().rdma_zero_copy_ops, 1u);

  std::vector<uint8_t> into(kSize + 1);
  uint64_t reads = fabric_.ReadsCompleted();
  auto n = client->GetInto("big", into);
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  ASSERT_EQ(*n, kSize);
  EXPECT_TRUE(std::equal(value.begin(), value.end(), into.begin()));
  EXPECT_EQ(fabric_.ReadsCompleted() - reads, 2u);
  EXPECT_EQ(client->Stats().rdma_zero_copy_ops, 2u);
  into = {};

  reads = fabric_.ReadsCompleted();
  auto got = client->Get("big");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_TRUE(*got == value);
  // Pieces of the largest bounce buffer, never a whole-value copy.
  EXPECT_EQ(fabric_.ReadsCompleted() - reads, (kSize + client::BouncePool::kMaxBufferBytes - 1) /
                                                  client::BouncePool::kMaxBufferBytes);
  ClientStats stats = client->Stats();
  EXPECT_EQ(stats.rdma_ops, 3u);
  EXPECT_EQ(stats.rdma_zero_copy_ops, 2u);
  EXPECT_EQ(stats.rdma_bytes, 3 * kSize);
  EXPECT_EQ(stats.tcp_ops, 0u);
  EXPECT_EQ(stats.fallbacks, 0u);
}

// File mode: a value over a quarter of the pool lives on the drives only and
// moves there and back in pieces over TCP; an RDMA client asks for a grant,
// is told the pool cannot stage it, and sends the same request inline.
TEST_F(RdmaTransportTest, AValueKeptOnTheDrivesOnlyMovesInlineAndSmallOnesByRdma) {
  TempDir dir;
  drive::DriveFormatOptions format;
  format.drives = {dir.File("d0"), dir.File("d1")};
  format.block_size_bytes = 1 << 20;
  format.file_size_bytes = 128 << 20;
  ASSERT_TRUE(drive::ExtentStore::Format(format).ok());
  drive::ExtentStoreOptions open;
  open.drives = format.drives;
  auto drives = drive::ExtentStore::Open(open);
  ASSERT_TRUE(drives.ok()) << drives.status().ToString();
  InProcessServer server(fabric_, ServerRdma(), 64 << 20, std::move(drives).value());
  ASSERT_TRUE(server.status().ok()) << server.status().ToString();
  for (const std::string transport : {"auto", "rdma"}) {
    SCOPED_TRACE(transport);
    auto client = MakeClient(server, transport, 4096, 30000);
    ASSERT_NE(client, nullptr);
    const uint64_t rdma_before = server.metrics().rdma_put_bytes.Value();
    const std::vector<uint8_t> small = Pattern(1 << 20, 1);
    ASSERT_TRUE(client->Put("small", small).ok());
    EXPECT_EQ(server.metrics().rdma_put_bytes.Value(), rdma_before + small.size()) << "small values move by RDMA";

    const std::vector<uint8_t> big = Pattern(80 << 20, 2);  // over the 64 MiB a drive read holds whole
    Status put = client->Put("big", big);
    ASSERT_TRUE(put.ok()) << put.ToString();
    EXPECT_EQ(server.metrics().rdma_put_bytes.Value(), rdma_before + small.size()) << "the big one inline";
    EXPECT_FALSE(server.store().Exists("big")) << "on the drives only";
    std::vector<uint8_t> back(big.size());
    Result<size_t> got = client->GetInto("big", back);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(*got, big.size());
    EXPECT_TRUE(back == big);
    EXPECT_EQ(*client->Get("small"), small);
    ASSERT_TRUE(client->Delete("big").ok());
  }
}

TEST(RdmaGrantTest, SegmentsOfAnyRunFitTheWireAndTheDevice) {
  // Addresses only: nothing is touched. A 5 GiB run and a small one.
  std::vector<iovec> iov = {{reinterpret_cast<void*>(uintptr_t{0x100000}), (5ULL << 30) + 7},
                            {reinterpret_cast<void*>(uintptr_t{0x900000000}), 4096}};
  std::vector<proto::RemoteSegment> segments = GrantSegments(iov);
  ASSERT_EQ(segments.size(), 7u);
  uint64_t total = 0;
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(segments[i].addr, 0x100000 + i * kMaxGrantSegmentBytes);
    EXPECT_EQ(segments[i].len, kMaxGrantSegmentBytes);
  }
  EXPECT_EQ(segments[5].addr, 0x100000 + (5ULL << 30));
  EXPECT_EQ(segments[5].len, 7u);
  EXPECT_EQ(segments[6].addr, 0x900000000u);
  EXPECT_EQ(segments[6].len, 4096u);
  for (const proto::RemoteSegment& s : segments) total += s.len;
  EXPECT_EQ(total, (5ULL << 30) + 7 + 4096);
}

TEST(RdmaGrantTest, TheLeaseGrowsWithTheValueAtTheFloorRate) {
  constexpr Nanos kSecond = 1'000'000'000;
  EXPECT_EQ(RdmaGrantLease(30 * kSecond, 0), 30 * kSecond);
  EXPECT_EQ(RdmaGrantLease(30 * kSecond, 4096), 30 * kSecond + 4096 * kSecond / (32 << 20));
  EXPECT_EQ(RdmaGrantLease(30 * kSecond, 32ULL << 20), 31 * kSecond);
  EXPECT_EQ(RdmaGrantLease(30 * kSecond, 16ULL << 30), (30 + 512) * kSecond);
  EXPECT_EQ(RdmaGrantLease(30 * kSecond, 64ULL << 30), (30 + 2048) * kSecond);
  EXPECT_EQ(RdmaGrantLease(30 * kSecond, UINT64_MAX), std::numeric_limits<Nanos>::max());
  EXPECT_EQ(RdmaGrantLease(std::numeric_limits<Nanos>::max(), 1 << 20), std::numeric_limits<Nanos>::max());
}

// BatchPut / BatchGetInto of `count` keys; true when every value came back byte-exact.
bool BatchRoundTrip(Client& client, const std::string& prefix, size_t count, BatchResult* put_result,
                    BatchResult* get_result) {
  std::vector<std::string> names;
  std::vector<std::vector<uint8_t>> values;
  for (size_t i = 0; i < count; ++i) {
    names.push_back(prefix + std::to_string(i));
    values.push_back(Pattern(1 + 37000 * (i % 9), static_cast<uint32_t>(i)));
  }
  std::vector<std::string_view> keys(names.begin(), names.end());
  std::vector<std::span<const uint8_t>> spans(values.begin(), values.end());
  *put_result = client.BatchPut(keys, spans);
  std::vector<std::vector<uint8_t>> out(count, std::vector<uint8_t>(400000));
  std::vector<std::span<uint8_t>> buffers(out.begin(), out.end());
  std::vector<size_t> sizes;
  *get_result = client.BatchGetInto(keys, buffers, &sizes);
  for (size_t i = 0; i < count; ++i) {
    if (!get_result->statuses[i].ok() || sizes[i] != values[i].size() ||
        !std::equal(values[i].begin(), values[i].end(), out[i].begin())) {
      return false;
    }
  }
  return true;
}

TEST_F(RdmaTransportTest, BatchesMoveEveryValueByRdma) {
  InProcessServer server(fabric_, ServerRdma(), 256 << 20);
  auto client = MakeClient(server, "rdma");
  BatchResult put, get;
  ASSERT_TRUE(BatchRoundTrip(*client, "b", 60, &put, &get));
  EXPECT_EQ(put.present_prefix, 60u);
  EXPECT_EQ(get.present_prefix, 60u);
  ClientStats stats = client->Stats();
  EXPECT_EQ(stats.rdma_ops, 120u);
  EXPECT_EQ(stats.tcp_ops, 0u);
  // Misses keep their place; the prefix stops at the first one.
  std::vector<std::string_view> keys = {"b0", "b1", "nope", "b3"};
  std::vector<std::vector<uint8_t>> out(4, std::vector<uint8_t>(400000));
  std::vector<std::span<uint8_t>> buffers(out.begin(), out.end());
  BatchResult r = client->BatchGetInto(keys, buffers, nullptr);
  EXPECT_EQ(r.present_prefix, 2u);
  EXPECT_EQ(r.statuses[2].code(), StatusCode::kNotFound);
  EXPECT_TRUE(r.statuses[3].ok());
  EXPECT_EQ(client->BatchExists(keys).present_prefix, 2u);
}

TEST_F(RdmaTransportTest, PutsWithOptionsMoveByRdmaAndFallBackToTcpWithTheirOptions) {
  InProcessServer server(fabric_, ServerRdma());
  ASSERT_TRUE(server.status().ok()) << server.status().ToString();
  auto client = MakeClient(server, "auto");
  ASSERT_NE(client, nullptr);
  PutOptions options;
  options.ttl_ms = 60'000;
  options.retention = Retention::kEvictFirst;
  options.parent_key = "opt/parent";
  const std::vector<uint8_t> value = Pattern(64 << 10, 5);
  ASSERT_TRUE(client->PutWith("opt/a", value, options).ok());
  EXPECT_EQ(client->Stats().rdma_ops, 1u);
  EXPECT_EQ(*client->Get("opt/a"), value);
  const std::vector<std::string_view> keys = {"opt/b", "opt/c"};
  const std::vector<std::span<const uint8_t>> values = {value, value};
  const std::vector<PutOptions> per_key(2, options);
  EXPECT_EQ(client->BatchPutWith(keys, values, per_key).present_prefix, 2u);
  EXPECT_EQ(client->Stats().rdma_ops, 4u);  // the get above, and the two puts
  // An RDMA failure re-issues the put over TCP, as a BatchPutWith.
  fabric_.FailCompletions(1, verbs::kWcRetryExcErr);
  Status s = client->PutWith("opt/d", value, options);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(*client->Get("opt/d"), value);
  ClientStats stats = client->Stats();
  EXPECT_EQ(stats.transport, "tcp");
  EXPECT_EQ(stats.put_options_dropped, 0u);
  const std::vector<std::string_view> chain = {"opt/a", "opt/b", "opt/c", "opt/d", "opt/e"};
  EXPECT_EQ(*client->MatchPrefix(chain), 4u);
}

TEST_F(RdmaTransportTest, ABatchCaughtByAnRdmaFailureCompletesOverTcpInAuto) {
  InProcessServer server(fabric_, ServerRdma(), 256 << 20);
  auto client = MakeClient(server, "auto");
  ASSERT_TRUE(client->Put("warm", Pattern(10, 1)).ok());
  fabric_.FailCompletions(1, verbs::kWcRetryExcErr);
  BatchResult put, get;
  ASSERT_TRUE(BatchRoundTrip(*client, "f", 40, &put, &get));
  EXPECT_EQ(put.present_prefix, 40u);
  ClientStats stats = client->Stats();
  EXPECT_EQ(stats.fallbacks, 1u);
  EXPECT_GE(stats.rdma_reissued, 1u);
  EXPECT_EQ(stats.rdma_ops + stats.tcp_ops, 81u);
  EXPECT_EQ(server.store().Stats().keys, 41u);  // each put applied once
}

// A put of the size the connection's spare slot has WRITEs into it at once
// and commits it with RdmaCommitTo, asking for the next spare on the way.
TEST_F(RdmaTransportTest, SpareSlotsCarryEveryPutOfTheirSizeAfterTheFirst) {
  InProcessServer server(fabric_, ServerRdma());
  ASSERT_TRUE(server.status().ok()) << server.status().ToString();
  auto client = MakeClient(server, "rdma", 4096, 5000, /*connections=*/1);
  ASSERT_NE(client, nullptr);
  std::vector<std::vector<uint8_t>> values;
  for (uint32_t i = 0; i < 8; ++i) {
    values.push_back(Pattern(64 << 10, 100 + i));
    ASSERT_TRUE(client->Put("s/" + std::to_string(i), values.back()).ok()) << i;
  }
  EXPECT_EQ(client->Stats().rdma_spare_puts, 7u);
  // Options ride RdmaCommitTo; an overwrite through a spare replaces the value.
  PutOptions pinned;
  pinned.retention = Retention::kPinned;
  ASSERT_TRUE(client->PutWith("s/pinned", values[0], pinned).ok());
  EXPECT_EQ(server.store().Stats().pinned_values, 1u);
  ASSERT_TRUE(client->Put("s/3", values[5]).ok());
  values[3] = values[5];
  EXPECT_EQ(client->Stats().rdma_spare_puts, 9u);
  // Another size: the spare of 64 KiB goes back, one of 4 KiB is asked for.
  ASSERT_TRUE(client->Put("small/0", Pattern(4096, 1)).ok());
  ASSERT_TRUE(client->Put("small/1", Pattern(4096, 2)).ok());
  EXPECT_EQ(client->Stats().rdma_spare_puts, 10u);
  for (uint32_t i = 0; i < 8; ++i) {
    auto got = client->Get("s/" + std::to_string(i));
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(*got, values[i]) << i;
  }
  EXPECT_EQ(*client->Get("small/1"), Pattern(4096, 2));
  EXPECT_EQ(server.store().Stats().keys, 11u);
  EXPECT_EQ(server.metrics().rdma_commit_checksum_failures.Value(), 0u);
}

// What the server allows of spare slots, asked for the way no client library
// would: two per connection, of 1 byte to kMaxRdmaSpareBytes, published only
// by RdmaCommitTo, and gone after any answer to it.
TEST_F(RdmaTransportTest, TheServerHoldsOneSpareSlotPerConnectionAndSaysWhatItRefuses) {
  InProcessServer server(fabric_, ServerRdma());
  ASSERT_TRUE(server.status().ok()) << server.status().ToString();
  // A Connect that offers one QP of the client's device.
  auto context = fabric_.Open("cli0", 1);
  ASSERT_TRUE(context.ok());
  auto cq = (*context)->CreateCq(8);
  ASSERT_TRUE(cq.ok());
  auto qp = (*context)->CreateQp(cq->get(), 4);
  ASSERT_TRUE(qp.ok());
  proto::RdmaOffer offer;
  offer.qps.push_back({(*qp)->local().qpn, (*qp)->local().psn});
  const std::string address = server.address();
  auto raw = testing::RawConnection::Open(static_cast<uint16_t>(std::stoi(address.substr(address.rfind(':') + 1))));
  ASSERT_TRUE(raw.ok()) << raw.status().ToString();
  testing::RawConnection& c = **raw;
  auto connected = c.Handshake(kKeyHex, proto::kProtocolVersion, proto::EncodeRdmaOffer(offer));
  ASSERT_TRUE(connected.ok()) << connected.status().ToString();
  ASSERT_EQ(connected->header.status, StatusCode::kOk) << connected->message();
  uint64_t id = 2;
  auto ask = [&](proto::Opcode opcode, const std::string& meta) {
    EXPECT_TRUE(c.SendBytes(c.BuildFrame(opcode, meta, {}, id++)).ok());
    auto r = c.Read();
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : testing::RawResponse{};
  };
  auto spare = [&](uint64_t size) {
    return ask(proto::Opcode::kRdmaSpare, proto::EncodeRdmaPutRequest("sp/a", size, 0));
  };
  testing::RawResponse r = spare(64 << 10);
  ASSERT_EQ(r.header.status, StatusCode::kOk) << r.message();
  proto::RdmaGrant grant;
  ASSERT_TRUE(proto::DecodeRdmaGrant(r.meta, &grant).ok());
  EXPECT_EQ(grant.value_len, uint64_t{64} << 10);
  proto::RdmaGrant second;
  r = spare(64 << 10);
  ASSERT_EQ(r.header.status, StatusCode::kOk) << r.message();
  ASSERT_TRUE(proto::DecodeRdmaGrant(r.meta, &second).ok());
  r = spare(64 << 10);
  EXPECT_EQ(r.header.status, StatusCode::kFailedPrecondition);
  EXPECT_TRUE(Contains(r.message(), "holds 2 spare RDMA slots already")) << r.message();
  EXPECT_EQ(ask(proto::Opcode::kRdmaRelease, proto::EncodeToken(second.token)).header.status, StatusCode::kOk);
  r = ask(proto::Opcode::kRdmaCommit, proto::EncodeToken(grant.token));
  EXPECT_EQ(r.header.status, StatusCode::kFailedPrecondition);
  EXPECT_TRUE(Contains(r.message(), "is a spare: RdmaCommitTo names the key")) << r.message();
  // A value of another size: refused, and the slot is gone.
  const std::string wrong_size = proto::EncodeRdmaCommitToRequest(grant.token, "sp/b", 4096, 1, PutOptions());
  r = ask(proto::Opcode::kRdmaCommitTo, wrong_size);
  EXPECT_EQ(r.header.status, StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(r.message(), "a value of 4096 bytes was committed to spare slot")) << r.message();
  r = ask(proto::Opcode::kRdmaCommitTo, wrong_size);
  EXPECT_EQ(r.header.status, StatusCode::kNotFound);
  EXPECT_TRUE(Contains(r.message(), "no spare RDMA slot with token")) << r.message();
  for (uint64_t size : {uint64_t{0}, proto::kMaxRdmaSpareBytes + 1}) {
    r = spare(size);
    EXPECT_EQ(r.header.status, StatusCode::kInvalidArgument) << size;
    EXPECT_TRUE(Contains(r.message(), "spares hold 1 to 16777216 bytes")) << r.message();
  }
  // Bytes that were never written do not match the checksum the commit names.
  r = spare(4096);
  ASSERT_EQ(r.header.status, StatusCode::kOk) << r.message();
  ASSERT_TRUE(proto::DecodeRdmaGrant(r.meta, &grant).ok());
  const std::vector<uint8_t> value = Pattern(4096, 9);
  r = ask(proto::Opcode::kRdmaCommitTo, proto::EncodeRdmaCommitToRequest(grant.token, "sp/c", 4096,
                                                                          Checksum(value.data(), value.size()),
                                                                          PutOptions()));
  EXPECT_EQ(r.header.status, StatusCode::kCorruption) << r.message();
  EXPECT_FALSE(server.store().Exists("sp/c"));
  // A released spare makes room for the next.
  EXPECT_EQ(spare(4096).header.status, StatusCode::kOk);
  r = spare(4096);
  ASSERT_EQ(r.header.status, StatusCode::kOk) << r.message();
  ASSERT_TRUE(proto::DecodeRdmaGrant(r.meta, &grant).ok());
  EXPECT_EQ(spare(4096).header.status, StatusCode::kFailedPrecondition);
  EXPECT_EQ(ask(proto::Opcode::kRdmaRelease, proto::EncodeToken(grant.token)).header.status, StatusCode::kOk);
  EXPECT_EQ(spare(4096).header.status, StatusCode::kOk);
  EXPECT_EQ(server.metrics().rdma_commit_checksum_failures.Value(), 1u);
}

// A spare holds the quotas of the tenant whose key it was asked under: a
// put of another tenant's key is refused into it and goes the usual way.
TEST_F(RdmaTransportTest, ASpareSlotNeverCarriesAnotherTenantsKey) {
  auto tenants = [](config::ServerConfig& c) {
    for (const char* name : {"team-a", "team-b"}) {
      config::TenantConfig t;
      t.name = name;
      t.prefix = std::string(name) + "/";
      t.key.assign(32, name[5] == 'a' ? 0xbb : 0xcc);
      t.rdma = true;
      c.tenants.push_back(t);
    }
  };
  InProcessServer server(fabric_, ServerRdma(), 64 << 20, nullptr, tenants);
  ASSERT_TRUE(server.status().ok()) << server.status().ToString();
  auto client = MakeClient(server, "rdma", 4096, 5000, /*connections=*/1);
  ASSERT_NE(client, nullptr);
  const std::vector<uint8_t> a = Pattern(8192, 1), b = Pattern(8192, 2), c = Pattern(8192, 3);
  ASSERT_TRUE(client->Put("team-a/x", a).ok());
  ASSERT_TRUE(client->Put("team-b/x", b).ok());  // the spare was asked under team-a/x
  EXPECT_EQ(client->Stats().rdma_spare_puts, 0u);
  ASSERT_TRUE(client->Put("team-b/y", c).ok());  // team-b/x asked for this one
  EXPECT_EQ(client->Stats().rdma_spare_puts, 1u);
  EXPECT_EQ(*client->Get("team-a/x"), a);
  EXPECT_EQ(*client->Get("team-b/x"), b);
  EXPECT_EQ(*client->Get("team-b/y"), c);
  EXPECT_EQ(client->Stats().tcp_ops, 0u);
}

}  // namespace
}  // namespace memkv

namespace memkv {
namespace {

// The NIXL backend's engine over RDMA: DRAM regions registered once
// (registerMem(DRAM_SEG)), blocks moved in batches straight from and into them.
TEST_F(RdmaTransportTest, TheNixlEngineMovesBlocksOfRegisteredRegionsWithoutACopy) {
  InProcessServer server(fabric_, ServerRdma());
  ASSERT_TRUE(server.status().ok()) << server.status().ToString();
  nixl::EngineSettings settings;
  settings.batch_size = 8;
  auto engine = nixl::TransferEngine::Create(settings, MakeClient(server, "rdma"));
  ASSERT_TRUE(engine.ok()) << engine.status().ToString();
  constexpr size_t kBlocks = 32;
  constexpr size_t kBlock = 64 << 10;
  std::vector<uint8_t> source = Pattern(kBlocks * kBlock, 7);
  std::vector<uint8_t> sink(kBlocks * kBlock, 0);
  ASSERT_TRUE((*engine)->RegisterBuffer(source).ok());
  ASSERT_TRUE((*engine)->RegisterBuffer(sink).ok());
  size_t registrations = 0;
  std::vector<nixl::LocalSpan> from, into;
  std::vector<nixl::ObjectSpan> objects;
  for (size_t i = 0; i < kBlocks; ++i) {
    ASSERT_TRUE((*engine)->RegisterObject(i, "").ok());
    from.push_back({reinterpret_cast<uintptr_t>(source.data() + i * kBlock), kBlock});
    into.push_back({reinterpret_cast<uintptr_t>(sink.data() + i * kBlock), kBlock});
    objects.push_back({i, 0, kBlock});
  }
  for (auto* local : {&from, &into}) {
    auto t = (*engine)->Prepare(local == &from ? nixl::Direction::kWrite : nixl::Direction::kRead, *local, objects);
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    ASSERT_TRUE((*engine)->Post(**t).ok());
    nixl::TransferStatus st;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while ((st = (*engine)->Poll(**t)).state == nixl::TransferState::kInProgress &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::yield();
    }
    ASSERT_EQ(st.state, nixl::TransferState::kDone) << st.error.ToString();
    // The write set up the connections; the read of 32 blocks adds no registration.
    if (local == &into) {
      EXPECT_EQ(fabric_.LiveRegistrations(), registrations);
    }
    registrations = fabric_.LiveRegistrations();
  }
  EXPECT_EQ(sink, source);
  const ClientStats stats = (*engine)->client().Stats();
  EXPECT_EQ(stats.rdma_ops, 2 * kBlocks);
  EXPECT_EQ(stats.rdma_zero_copy_ops, 2 * kBlocks);  // no bounce copies
  EXPECT_TRUE((*engine)->UnregisterBuffer(source.data()).ok());
  EXPECT_TRUE((*engine)->UnregisterBuffer(sink.data()).ok());
}

}  // namespace
}  // namespace memkv
