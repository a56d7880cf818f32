// The Client against FakeServer (fake_server.h) on loopback: the public API's
// behaviour as a caller sees it, including dead, silent and lying servers.
#include "memkv/client.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/mman.h>

#include <functional>
#include <thread>

#include "base/bytes.h"
#include "client/client_from_config.h"
#include "client/fake_server.h"
#include "verbs/fake.h"
#include "io/socket.h"
#include "proto/frame.h"

namespace memkv::client {
namespace {

using client::testing::FakeServer;
using Mode = FakeServer::Mode;

constexpr Nanos kMs = 1'000'000;

Key32 TestKey(uint8_t seed = 0) {
  Key32 key;
  for (size_t i = 0; i < key.size(); ++i) key[i] = static_cast<uint8_t>(i * 7 + seed);
  return key;
}

std::string Hex(const Key32& key) { return HexEncode(key.data(), key.size()); }

ClientOptions Options(std::vector<std::string> servers) {
  ClientOptions o;
  o.servers = std::move(servers);
  o.auth_key_hex = Hex(TestKey());
  o.timeout_ms = 3000;
  o.connect_timeout_ms = 2000;
  return o;
}

std::unique_ptr<Client> MakeClient(const ClientOptions& o) {
  auto c = Client::Create(o);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return c.ok() ? std::move(c).value() : nullptr;
}

// A loopback port with nothing listening on it.
std::string ClosedAddress() {
  UniqueFd fd = io::ListenTcp("127.0.0.1", 0, 1).value();
  uint16_t port = io::LocalPort(fd.get()).value();
  return "127.0.0.1:" + std::to_string(port);  // closed when fd goes
}

std::vector<uint8_t> Bytes(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i * 31 + seed);
  return v;
}

std::span<const uint8_t> AsSpan(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

bool Contains(const Status& s, std::string_view text) { return s.message().find(text) != std::string::npos; }

Nanos ElapsedSince(Nanos start) { return MonotonicNanos() - start; }

// ---- Create ----

TEST(ClientCreateTest, RejectsBadOptionsNamingThem) {
  ClientOptions o = Options({"127.0.0.1:9900"});
  o.servers = {"127.0.0.1"};
  Status s = Client::Create(o).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(s, "servers: '127.0.0.1'")) << s.ToString();

  o = Options({"a:1", "b:99999"});
  s = Client::Create(o).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(s, "servers: 'b:99999'")) << s.ToString();

  o = Options({"a:1", "a:1"});
  EXPECT_EQ(Client::Create(o).status().code(), StatusCode::kInvalidArgument);

  o = Options({});
  EXPECT_EQ(Client::Create(o).status().code(), StatusCode::kInvalidArgument);

  o = Options({"a:1"});
  o.auth_key_hex = "abcd";
  s = Client::Create(o).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(s, "auth_key: ")) << s.ToString();
  o.auth_key_hex = std::string(63, 'a') + "g";
  EXPECT_EQ(Client::Create(o).status().code(), StatusCode::kInvalidArgument);

  o = Options({"a:1"});
  o.num_connections = 0;
  EXPECT_EQ(Client::Create(o).status().code(), StatusCode::kInvalidArgument);

  o = Options({"a:1"});
  o.transport = "carrier-pigeon";
  EXPECT_EQ(Client::Create(o).status().code(), StatusCode::kInvalidArgument);
}

TEST(ClientCreateTest, RdmaTransportWithoutADeviceIsAFailedPrecondition) {
  ClientOptions o = Options({"127.0.0.1:9900"});
  o.transport = "rdma";
  verbs::FakeFabric no_devices;
  Status s = CreateClientWithVerbs(o, no_devices).status();
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(Contains(s, "no RDMA device")) << s.ToString();
  EXPECT_TRUE(Contains(s, "auto or tcp")) << s.ToString();
  for (const char* t : {"auto", "tcp"}) {
    o.transport = t;
    EXPECT_TRUE(CreateClientWithVerbs(o, no_devices).ok()) << t;
  }
  o.transport = "auto";
  ClientStats stats = (*CreateClientWithVerbs(o, no_devices))->Stats();
  EXPECT_EQ(stats.transport, "tcp");
  // A host without a NIC is a normal state with its own name, not a fallback:
  // an alert on fallbacks must not fire on every such host.
  EXPECT_EQ(stats.rdma_state, "no_device");
  EXPECT_EQ(stats.fallbacks, 0u);
  EXPECT_NE(stats.fallback_reason.find("no RDMA device"), std::string::npos) << stats.fallback_reason;
  o.transport = "tcp";
  EXPECT_EQ((*CreateClientWithVerbs(o, no_devices))->Stats().rdma_state, "off");
}

TEST(ClientLogTest, NothingBelowWarnReachesStderrByDefaultAndTheCallbackGetsItsLevel) {
  ClientOptions o = Options({"127.0.0.1:9900"});
  verbs::FakeFabric no_devices;  // auto on a host without a NIC logs one INFO line
  ::testing::internal::CaptureStderr();
  EXPECT_TRUE(CreateClientWithVerbs(o, no_devices).ok());
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");

  std::vector<std::string> lines;
  o.log_level = ClientLogLevel::kInfo;
  o.log_callback = [&](ClientLogLevel level, std::string_view component, std::string_view message) {
    lines.push_back(std::string(ClientLogLevelName(level)) + " [" + std::string(component) + "] " +
                    std::string(message));
  };
  ::testing::internal::CaptureStderr();
  EXPECT_TRUE(CreateClientWithVerbs(o, no_devices).ok());
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");  // the callback took it
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(lines[0].starts_with("info [client] no RDMA device")) << lines[0];

  lines.clear();
  o.log_level = ClientLogLevel::kWarn;
  EXPECT_TRUE(CreateClientWithVerbs(o, no_devices).ok());
  EXPECT_TRUE(lines.empty());

  o.log_level = static_cast<ClientLogLevel>(9);
  Status bad = CreateClientWithVerbs(o, no_devices).status();
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(bad, "log_level")) << bad.ToString();
}

TEST(ClientCreateTest, FromEnvironment) {
  auto server = FakeServer::Start(TestKey());
  ::unsetenv("MEMKV_CONFIG");
  ::setenv("MEMKV_SERVERS", server->address().c_str(), 1);
  ::setenv("MEMKV_AUTH_KEY", Hex(TestKey()).c_str(), 1);
  ::setenv("MEMKV_TRANSPORT", "tcp", 1);
  auto c = Client::CreateFromEnvironment();
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE((*c)->Put("k", AsSpan("v")).ok());
  ::setenv("MEMKV_TRANSPORT", "bogus", 1);
  EXPECT_EQ(Client::CreateFromEnvironment().status().code(), StatusCode::kInvalidArgument);
  ::unsetenv("MEMKV_SERVERS");
  ::unsetenv("MEMKV_AUTH_KEY");
  ::unsetenv("MEMKV_TRANSPORT");
}

// ---- Validation before anything is sent ----

TEST(ClientValidationTest, BadKeysAndValuesFailBeforeSending) {
  auto c = MakeClient(Options({ClosedAddress()}));
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->Put("", AsSpan("v")).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(c->Get("").status().code(), StatusCode::kInvalidArgument);
  std::string long_key(proto::kMaxKeyBytes + 1, 'k');
  EXPECT_EQ(c->Exists(long_key).status().code(), StatusCode::kTooLarge);

  // An inaccessible mapping: any attempt to read the value would crash, so
  // this also shows the size is checked before a byte is touched.
  // (Over the protocol's ceiling: refused with no server to ask for its limit.)
  const size_t size = proto::kMaxValueBytesCeiling + 1;
  void* region = ::mmap(nullptr, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  ASSERT_NE(region, MAP_FAILED);
  std::span<const uint8_t> huge(static_cast<const uint8_t*>(region), size);
  Status s = c->Put("k", huge);
  EXPECT_EQ(s.code(), StatusCode::kTooLarge);
  EXPECT_TRUE(Contains(s, std::to_string(size)) && Contains(s, std::to_string(proto::kMaxValueBytesCeiling)))
      << s.ToString();
  std::string_view keys[] = {"k"};
  std::span<const uint8_t> values[] = {huge};
  EXPECT_EQ(c->BatchPut(keys, values).statuses[0].code(), StatusCode::kTooLarge);
  ::munmap(region, size);

  EXPECT_EQ(c->Stats().bytes_sent, 0u);
  EXPECT_EQ(c->Stats().connections_opened, 0u);
}

TEST(ClientValidationTest, BatchSizeMismatchIsInvalidArgument) {
  auto c = MakeClient(Options({ClosedAddress()}));
  ASSERT_NE(c, nullptr);
  std::string_view keys[] = {"a", "b"};
  std::span<const uint8_t> values[] = {AsSpan("x")};
  BatchResult r = c->BatchPut(keys, values);
  ASSERT_EQ(r.statuses.size(), 2u);
  EXPECT_EQ(r.statuses[0].code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.present_prefix, 0u);
}

// ---- Unreachable, silent and lying servers ----

TEST(ClientFailureTest, NothingListeningIsUnavailableFastThenFailsFast) {
  ClientOptions o = Options({ClosedAddress()});
  o.timeout_ms = 5000;
  auto c = MakeClient(o);
  ASSERT_NE(c, nullptr);
  Nanos start = MonotonicNanos();
  Status s = c->Put("k", AsSpan("v"));
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
  EXPECT_LT(ElapsedSince(start), 1000 * kMs);

  start = MonotonicNanos();
  s = c->Get("k").status();
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_TRUE(Contains(s, o.servers[0])) << s.ToString();
  EXPECT_LT(ElapsedSince(start), 50 * kMs);
  // Servers() says why: it is marked down and when it is tried again.
  std::vector<ServerView> servers = c->Servers();
  ASSERT_EQ(servers.size(), 1u);
  EXPECT_EQ(servers[0].state, "pending");
  EXPECT_TRUE(Contains(Status(StatusCode::kUnavailable, servers[0].detail), o.servers[0])) << servers[0].detail;
}

TEST(ClientFailureTest, ServerThatNeverAnswersTheHandshakeIsDeadlineExceeded) {
  auto server = FakeServer::Start(TestKey(), Mode::kSilent);
  ClientOptions o = Options({server->address()});
  o.timeout_ms = 300;
  o.connect_timeout_ms = 300;
  // Create asks the server who it is, within connect_timeout_ms; the call
  // then answers why it got no answer, without waiting again.
  const Nanos start = MonotonicNanos();
  auto c = MakeClient(o);
  ASSERT_NE(c, nullptr);
  Status s = c->Get("k").status();
  const Nanos took = ElapsedSince(start);
  EXPECT_EQ(s.code(), StatusCode::kDeadlineExceeded) << s.ToString();
  EXPECT_GE(took, 290 * kMs);
  EXPECT_LT(took, 800 * kMs);
  EXPECT_EQ(c->Stats().timeouts, 1u);
}

TEST(ClientFailureTest, ServerThatNeverAnswersARequestIsDeadlineExceeded) {
  auto server = FakeServer::Start(TestKey(), Mode::kSilentAfterHandshake);
  ClientOptions o = Options({server->address()});
  o.timeout_ms = 300;
  o.connect_timeout_ms = 300;  // Create's ServerInfo request waits this long
  const Nanos start = MonotonicNanos();
  auto c = MakeClient(o);
  ASSERT_NE(c, nullptr);
  Status s = c->Put("k", AsSpan("v"));
  const Nanos took = ElapsedSince(start);
  EXPECT_EQ(s.code(), StatusCode::kDeadlineExceeded) << s.ToString();
  EXPECT_GE(took, 290 * kMs);
  EXPECT_LT(took, 800 * kMs);
  EXPECT_EQ(c->Stats().connections_opened, 1u);
  // Marked down: the next call does not wait out another timeout.
  const Nanos again = MonotonicNanos();
  EXPECT_FALSE(c->Exists("k").ok());
  EXPECT_LT(ElapsedSince(again), 100 * kMs);
}

TEST(ClientFailureTest, WrongConnectTagIsAuthFailed) {
  auto server = FakeServer::Start(TestKey(), Mode::kBadConnectTag);
  auto c = MakeClient(Options({server->address()}));
  ASSERT_NE(c, nullptr);
  Status s = c->Put("k", AsSpan("v"));
  EXPECT_EQ(s.code(), StatusCode::kAuthFailed) << s.ToString();
  EXPECT_EQ(server->requests_seen(), 0);
}

TEST(ClientFailureTest, RefusedConnectSurfacesTheServersMessage) {
  auto server = FakeServer::Start(TestKey(), Mode::kRefuseConnect);
  auto c = MakeClient(Options({server->address()}));
  ASSERT_NE(c, nullptr);
  Status s = c->Put("k", AsSpan("v"));
  EXPECT_EQ(s.code(), StatusCode::kAuthFailed) << s.ToString();
  EXPECT_TRUE(Contains(s, "auth key differs from the server's")) << s.ToString();
  // A refusal is not an outage: the next call asks again and hears it again.
  s = c->Put("k", AsSpan("v"));
  EXPECT_EQ(s.code(), StatusCode::kAuthFailed) << s.ToString();
}

TEST(ClientFailureTest, ClientWithAnotherKeyIsRefused) {
  auto server = FakeServer::Start(TestKey(1));
  auto c = MakeClient(Options({server->address()}));
  ASSERT_NE(c, nullptr);
  Status s = c->Get("k").status();
  EXPECT_EQ(s.code(), StatusCode::kAuthFailed) << s.ToString();
  EXPECT_TRUE(Contains(s, "Connect tag does not verify")) << s.ToString();
}

TEST(ClientFailureTest, ResponseForAnotherRequestIsAProtocolErrorAndDropsTheConnection) {
  auto server = FakeServer::Start(TestKey(), Mode::kWrongRequestId);
  auto c = MakeClient(Options({server->address()}));
  ASSERT_NE(c, nullptr);
  Status s = c->Put("k", AsSpan("v"));
  EXPECT_EQ(s.code(), StatusCode::kProtocolError) << s.ToString();
  server->set_mode(Mode::kNormal);
  const uint64_t opened = c->Stats().connections_opened;
  EXPECT_TRUE(c->Put("k", AsSpan("v")).ok());
  // The connection that heard the stray answer was dropped: a new one.
  EXPECT_GT(c->Stats().connections_opened, opened);
}

TEST(ClientFailureTest, ChecksumMismatchIsAMissAndCounted) {
  auto server = FakeServer::Start(TestKey());
  auto c = MakeClient(Options({server->address()}));
  ASSERT_NE(c, nullptr);
  std::vector<uint8_t> value = Bytes(4096, 3);
  ASSERT_TRUE(c->Put("k", value).ok());
  const uint64_t opened = c->Stats().connections_opened;
  server->set_mode(Mode::kCorruptValues);
  EXPECT_EQ(c->Get("k").status().code(), StatusCode::kNotFound);
  std::vector<uint8_t> buffer(8192);
  Result<size_t> got = c->GetInto("k", buffer);
  EXPECT_EQ(got.status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(Contains(got.status(), "checksum")) << got.status().ToString();
  std::string_view keys[] = {"k"};
  std::span<uint8_t> buffers[] = {buffer};
  std::vector<size_t> sizes;
  BatchResult r = c->BatchGetInto(keys, buffers, &sizes);
  EXPECT_EQ(r.statuses[0].code(), StatusCode::kNotFound);
  EXPECT_EQ(r.present_prefix, 0u);
  EXPECT_EQ(c->Stats().checksum_failures, 3u);
  // A corrupt value does not poison the connection.
  EXPECT_EQ(c->Stats().connections_opened, opened);
}

TEST(ClientFailureTest, KeysOnHealthyServersSucceedWhenAnotherIsDead) {
  auto alive = FakeServer::Start(TestKey());
  for (Mode dead_mode : {Mode::kNormal, Mode::kSilent}) {
    std::unique_ptr<FakeServer> silent;
    std::string dead = ClosedAddress();
    if (dead_mode == Mode::kSilent) {
      silent = FakeServer::Start(TestKey(), Mode::kSilent);
      dead = silent->address();
    }
    ClientOptions o = Options({alive->address(), dead});
    o.timeout_ms = 500;
    o.connect_timeout_ms = 500;
    auto c = MakeClient(o);
    ASSERT_NE(c, nullptr);
    std::vector<std::string> names;
    for (int i = 0; i < 200; ++i) names.push_back("key-" + std::to_string(i));
    std::vector<std::string_view> keys(names.begin(), names.end());
    std::vector<std::vector<uint8_t>> data;
    std::vector<std::span<const uint8_t>> values;
    for (int i = 0; i < 200; ++i) data.push_back(Bytes(100, static_cast<uint8_t>(i)));
    for (auto& d : data) values.push_back(d);
    const Nanos start = MonotonicNanos();
    BatchResult r = c->BatchPut(keys, values);
    EXPECT_LT(ElapsedSince(start), 1000 * kMs);
    // The dead server never answered: it is pending, out of placement, and
    // every key goes to the live one.
    for (size_t i = 0; i < keys.size(); ++i) {
      EXPECT_TRUE(r.statuses[i].ok()) << r.statuses[i].ToString();
      EXPECT_EQ(c->ServerFor(keys[i]), 0u);
    }
    std::vector<ServerView> servers = c->Servers();
    ASSERT_EQ(servers.size(), 2u);
    EXPECT_EQ(servers[0].state, "up");
    EXPECT_EQ(servers[1].state, "pending");
    EXPECT_TRUE(Contains(Status(StatusCode::kUnavailable, servers[1].detail), "ServerInfo")) << servers[1].detail;
  }
}

// ---- Working server ----

TEST(ClientTest, SingleKeyRoundTrip) {
  auto server = FakeServer::Start(TestKey());
  auto c = MakeClient(Options({server->address()}));
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->Get("absent").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(c->Exists("absent").value(), false);
  EXPECT_EQ(c->Delete("absent").code(), StatusCode::kNotFound);

  std::vector<uint8_t> value = Bytes(10'000, 1);
  ASSERT_TRUE(c->Put("k", value).ok());
  Result<std::vector<uint8_t>> got = c->Get("k");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, value);
  std::vector<uint8_t> buffer(20'000);
  Result<size_t> n = c->GetInto("k", buffer);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, value.size());
  EXPECT_TRUE(std::equal(value.begin(), value.end(), buffer.begin()));
  EXPECT_TRUE(c->Exists("k").value());
  EXPECT_TRUE(c->Delete("k").ok());
  EXPECT_FALSE(c->Exists("k").value());

  ASSERT_TRUE(c->Put("empty", {}).ok());
  got = c->Get("empty");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_TRUE(got->empty());

  ClientStats stats = c->Stats();
  EXPECT_EQ(stats.connections_opened, 1u);
  EXPECT_GT(stats.bytes_sent, 10'000u);
  EXPECT_GT(stats.bytes_received, 20'000u);
  EXPECT_EQ(stats.ops, 11u);
}

TEST(ClientTest, GetIntoASmallBufferIsTooLargeAndKeepsTheConnection) {
  auto server = FakeServer::Start(TestKey());
  auto c = MakeClient(Options({server->address()}));
  ASSERT_NE(c, nullptr);
  ASSERT_TRUE(c->Put("k", Bytes(5000, 2)).ok());
  std::vector<uint8_t> small(100);
  Status s = c->GetInto("k", small).status();
  EXPECT_EQ(s.code(), StatusCode::kTooLarge);
  EXPECT_TRUE(Contains(s, "5000") && Contains(s, "100")) << s.ToString();
  EXPECT_TRUE(c->Get("k").ok());
  EXPECT_EQ(c->Stats().connections_opened, 1u);
}

TEST(ClientTest, LargeValueRoundTrip) {
  auto server = FakeServer::Start(TestKey());
  auto c = MakeClient(Options({server->address()}));
  ASSERT_NE(c, nullptr);
  std::vector<uint8_t> value = Bytes(16 << 20, 9);
  ASSERT_TRUE(c->Put("big", value).ok());
  std::vector<uint8_t> buffer(value.size());
  Result<size_t> n = c->GetInto("big", buffer);
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(buffer, value);
}

TEST(ClientTest, BatchesSpanFramesAndConnections) {
  auto server = FakeServer::Start(TestKey(), Mode::kNormal, /*max_inflight=*/2);
  ClientOptions o = Options({server->address()});
  o.num_connections = 3;
  auto c = MakeClient(o);
  ASSERT_NE(c, nullptr);
  constexpr size_t kItems = 2500;  // more than two frames' worth of items
  std::vector<std::string> names;
  std::vector<std::vector<uint8_t>> data;
  for (size_t i = 0; i < kItems; ++i) {
    names.push_back("block-" + std::to_string(i));
    data.push_back(Bytes(1000 + i % 7, static_cast<uint8_t>(i)));
  }
  std::vector<std::string_view> keys(names.begin(), names.end());
  std::vector<std::span<const uint8_t>> values(data.begin(), data.end());
  BatchResult put = c->BatchPut(keys, values);
  EXPECT_EQ(put.present_prefix, kItems);
  EXPECT_EQ(server->stored_keys(), kItems);

  std::vector<std::vector<uint8_t>> out(kItems, std::vector<uint8_t>(2000));
  std::vector<std::span<uint8_t>> buffers(out.begin(), out.end());
  std::vector<size_t> sizes;
  BatchResult get = c->BatchGetInto(keys, buffers, &sizes);
  ASSERT_EQ(get.present_prefix, kItems) << get.statuses[get.present_prefix].ToString();
  for (size_t i = 0; i < kItems; ++i) {
    ASSERT_EQ(sizes[i], data[i].size());
    ASSERT_TRUE(std::equal(data[i].begin(), data[i].end(), out[i].begin())) << i;
  }

  std::vector<std::string_view> probe(keys.begin(), keys.begin() + 10);
  probe.insert(probe.begin() + 6, "missing");
  BatchResult exists = c->BatchExists(probe);
  EXPECT_EQ(exists.present_prefix, 6u);
  EXPECT_EQ(exists.statuses[6].code(), StatusCode::kNotFound);
  EXPECT_TRUE(exists.statuses[7].ok());
  EXPECT_LE(c->Stats().connections_opened, 3u);
}

TEST(ClientTest, BatchGetItemTooBigForItsBufferFailsAlone) {
  auto server = FakeServer::Start(TestKey());
  auto c = MakeClient(Options({server->address()}));
  ASSERT_NE(c, nullptr);
  ASSERT_TRUE(c->Put("a", Bytes(10, 1)).ok());
  ASSERT_TRUE(c->Put("b", Bytes(500, 2)).ok());
  ASSERT_TRUE(c->Put("c", Bytes(10, 3)).ok());
  std::string_view keys[] = {"a", "b", "c", "d"};
  std::vector<std::vector<uint8_t>> out(4, std::vector<uint8_t>(100));
  std::span<uint8_t> buffers[] = {out[0], out[1], out[2], out[3]};
  std::vector<size_t> sizes;
  BatchResult r = c->BatchGetInto(keys, buffers, &sizes);
  EXPECT_TRUE(r.statuses[0].ok());
  EXPECT_EQ(r.statuses[1].code(), StatusCode::kTooLarge);
  EXPECT_TRUE(r.statuses[2].ok());
  EXPECT_EQ(r.statuses[3].code(), StatusCode::kNotFound);
  EXPECT_EQ(r.present_prefix, 1u);
  EXPECT_EQ(sizes[2], 10u);
  EXPECT_EQ(out[2], [] { auto v = Bytes(10, 3); v.resize(100); return v; }());
  EXPECT_EQ(c->Stats().connections_opened, 1u);
}

TEST(ClientTest, IdleConnectionClosedByTheServerIsReplacedQuietly) {
  auto server = FakeServer::Start(TestKey());
  auto c = MakeClient(Options({server->address()}));
  ASSERT_NE(c, nullptr);
  ASSERT_TRUE(c->Put("k", AsSpan("v")).ok());
  server->DropConnections();
  Status s = c->Put("k", AsSpan("w"));
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(c->Stats().connections_opened, 2u);
}

TEST(ClientTest, ConcurrentCallsShareAPool) {
  auto server = FakeServer::Start(TestKey());
  ClientOptions o = Options({server->address()});
  o.num_connections = 2;
  auto c = MakeClient(o);
  ASSERT_NE(c, nullptr);
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        std::string key = "t" + std::to_string(t) + "-" + std::to_string(i);
        std::vector<uint8_t> value = Bytes(256, static_cast<uint8_t>(i));
        if (!c->Put(key, value).ok()) ++failures;
        Result<std::vector<uint8_t>> got = c->Get(key);
        if (!got.ok() || *got != value) ++failures;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_LE(c->Stats().connections_opened, 2u);
}

// ---- A stalled server must not hold up calls on a live one ----

// The first key (by name) placed on server `index`.
std::string KeyOn(const Client& c, size_t index) {
  for (int i = 0;; ++i) {
    std::string key = "key-" + std::to_string(i);
    if (c.ServerFor(key) == index) return key;
  }
}

bool PollFor(const std::function<bool()>& condition, Nanos timeout) {
  const Nanos deadline = MonotonicNanos() + timeout;
  while (!condition()) {
    if (MonotonicNanos() >= deadline) return false;
    std::this_thread::yield();
  }
  return true;
}

// Single calls on the live server, each well within the time a stalled
// batch would have held its connection.
void ExpectLiveCallsAreFast(Client& c, const std::string& key) {
  for (int i = 0; i < 5; ++i) {
    const Nanos start = MonotonicNanos();
    Result<bool> e = c.Exists(key);
    EXPECT_LT(ElapsedSince(start), 500 * kMs) << "call " << i << " on the live server waited";
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    EXPECT_TRUE(*e);
  }
}

bool IsOutage(const Status& s) {
  return s.code() == StatusCode::kDeadlineExceeded || s.code() == StatusCode::kUnavailable;
}

// Regression: a batch held every connection it used until its slowest
// server was done, so the live server's only connection sat idle for the
// whole deadline while the batch waited on a silent server.
TEST(ClientFailureTest, BatchHandsBackTheLiveServersConnectionWhileAnotherStaysSilent) {
  auto live = FakeServer::Start(TestKey());
  auto silent = FakeServer::Start(TestKey());
  ClientOptions o = Options({live->address(), silent->address()});
  o.num_connections = 1;
  o.timeout_ms = 2000;
  auto c = MakeClient(o);
  ASSERT_NE(c, nullptr);
  // Placed (it answered ServerInfo), then silent: it reads and never answers.
  silent->set_mode(Mode::kSilentAfterHandshake);
  const int seen = silent->requests_seen();
  const std::string on_live = KeyOn(*c, 0);
  const std::string on_silent = KeyOn(*c, 1);
  ASSERT_TRUE(c->Put(on_live, AsSpan("v")).ok());

  BatchResult batch;
  std::thread batcher([&] {
    std::vector<std::string_view> keys = {on_live, on_silent};
    batch = c->BatchExists(keys);
  });
  // The batch has sent to both servers; the silent one will not answer.
  ASSERT_TRUE(PollFor([&] { return silent->requests_seen() > seen; }, 5000 * kMs));
  ExpectLiveCallsAreFast(*c, on_live);
  batcher.join();
  ASSERT_EQ(batch.statuses.size(), 2u);
  EXPECT_TRUE(batch.statuses[0].ok()) << batch.statuses[0].ToString();
  EXPECT_EQ(batch.statuses[1].code(), StatusCode::kDeadlineExceeded) << batch.statuses[1].ToString();
  ExpectLiveCallsAreFast(*c, on_live);
}

// Regression: a batch took the live server's connection and then blocked
// waiting for the silent server's (held by another call) until its deadline.
TEST(ClientFailureTest, BatchWaitingForABusyServerHoldsNoOtherServersConnection) {
  auto live = FakeServer::Start(TestKey());
  auto silent = FakeServer::Start(TestKey());
  ClientOptions o = Options({live->address(), silent->address()});
  o.num_connections = 1;
  o.timeout_ms = 2000;
  auto c = MakeClient(o);
  ASSERT_NE(c, nullptr);
  // Placed (it answered ServerInfo), then silent: it reads and never answers.
  silent->set_mode(Mode::kSilentAfterHandshake);
  const int seen = silent->requests_seen();
  const std::string on_live = KeyOn(*c, 0);
  const std::string on_silent = KeyOn(*c, 1);
  ASSERT_TRUE(c->Put(on_live, AsSpan("v")).ok());

  // H holds the silent server's only connection until its deadline.
  std::thread holder([&] { (void)c->Get(on_silent); });
  ASSERT_TRUE(PollFor([&] { return silent->requests_seen() > seen; }, 5000 * kMs));
  const uint64_t ops = c->Stats().ops;
  BatchResult batch;
  std::thread batcher([&] {
    std::vector<std::string_view> keys = {on_live, on_silent};
    batch = c->BatchExists(keys);
  });
  ASSERT_TRUE(PollFor([&] { return c->Stats().ops >= ops + 2; }, 5000 * kMs));  // the batch has begun
  ExpectLiveCallsAreFast(*c, on_live);
  batcher.join();
  holder.join();
  ASSERT_EQ(batch.statuses.size(), 2u);
  EXPECT_TRUE(batch.statuses[0].ok()) << batch.statuses[0].ToString();
  // An outage, or (the silent server marked down by then) a miss on the
  // next server: its keys become misses.
  EXPECT_TRUE(IsOutage(batch.statuses[1]) || batch.statuses[1].code() == StatusCode::kNotFound)
      << batch.statuses[1].ToString();
  ExpectLiveCallsAreFast(*c, on_live);
}

}  // namespace
}  // namespace memkv::client
