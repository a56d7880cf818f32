#include "verbs/fake.h"

#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace memkv::verbs {
namespace {

// One end of a connection: destroyed QP first, then CQ, then Context, as the
// seam requires (members go in reverse order).
struct Side {
  std::unique_ptr<Context> ctx;
  std::unique_ptr<CompletionQueue> cq;
  std::unique_ptr<QueuePair> qp;
};

bool Readable(int fd) {
  pollfd pfd{fd, POLLIN, 0};
  return ::poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLIN) != 0;
}

class FakeFabricTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fabric_.AddDevice("fake0");
    fabric_.AddDevice("fake1");
  }

  Side Open(const std::string& device, uint32_t max_send_wr = 16) {
    Side side;
    auto ctx = fabric_.Open(device, 1);
    EXPECT_TRUE(ctx.ok()) << ctx.status().ToString();
    side.ctx = std::move(ctx).value();
    auto cq = side.ctx->CreateCq(64);
    EXPECT_TRUE(cq.ok()) << cq.status().ToString();
    side.cq = std::move(cq).value();
    auto qp = side.ctx->CreateQp(side.cq.get(), max_send_wr);
    EXPECT_TRUE(qp.ok()) << qp.status().ToString();
    side.qp = std::move(qp).value();
    return side;
  }

  static void Connect(Side& a, Side& b, PathOptions path = {}) {
    path.gid_index = 1;
    ASSERT_TRUE(a.qp->Connect(b.qp->local(), path).ok());
    ASSERT_TRUE(b.qp->Connect(a.qp->local(), path).ok());
  }

  static std::unique_ptr<Registration> Register(Side& side, std::vector<uint8_t>& buf, bool remote) {
    auto reg = side.ctx->Register(buf.data(), buf.size(), remote);
    EXPECT_TRUE(reg.ok()) << reg.status().ToString();
    return std::move(reg).value();
  }

  static WorkRequest Wr(uint64_t id, WrOpcode op, const Registration& local, uint64_t local_off, uint32_t length,
                        const Registration& remote, uint64_t remote_off) {
    WorkRequest wr;
    wr.wr_id = id;
    wr.opcode = op;
    wr.local = local.addr() + local_off;
    wr.length = length;
    wr.lkey = local.lkey();
    wr.remote_addr = reinterpret_cast<uintptr_t>(remote.addr()) + remote_off;
    wr.rkey = remote.rkey();
    return wr;
  }

  // The one completion now on `cq`; fails the test if there is not exactly one.
  static Completion PollOne(CompletionQueue& cq) {
    Completion out[2];
    auto n = cq.Poll(out);
    EXPECT_TRUE(n.ok());
    EXPECT_EQ(n.value(), 1u);
    return out[0];
  }

  static size_t PollCount(CompletionQueue& cq) {
    Completion out[8];
    auto n = cq.Poll(out);
    EXPECT_TRUE(n.ok());
    return n.value();
  }

  FakeFabric fabric_;
};

std::vector<uint8_t> Pattern(size_t size, uint8_t seed) {
  std::vector<uint8_t> v(size);
  for (size_t i = 0; i < size; ++i) v[i] = static_cast<uint8_t>(seed + i * 7);
  return v;
}

TEST_F(FakeFabricTest, WriteThenReadRoundTripMovesTheBytes) {
  Side client = Open("fake0");
  Side server = Open("fake1");
  Connect(client, server);
  std::vector<uint8_t> src = Pattern(8192, 3);
  std::vector<uint8_t> dst(8192, 0);
  std::vector<uint8_t> pool(65536, 0xee);
  auto src_reg = Register(client, src, false);
  auto dst_reg = Register(client, dst, false);
  auto pool_reg = Register(server, pool, true);

  ASSERT_TRUE(client.qp->Post(Wr(7, WrOpcode::kWrite, *src_reg, 100, 4096, *pool_reg, 1000)).ok());
  Completion w = PollOne(*client.cq);
  EXPECT_EQ(w.status, kWcSuccess);
  EXPECT_EQ(w.wr_id, 7u);
  EXPECT_EQ(w.opcode, WrOpcode::kWrite);
  EXPECT_EQ(w.byte_len, 4096u);
  EXPECT_EQ(w.qp_num, client.qp->local().qpn);
  EXPECT_EQ(0, std::memcmp(pool.data() + 1000, src.data() + 100, 4096));
  EXPECT_EQ(pool[999], 0xee);
  EXPECT_EQ(pool[1000 + 4096], 0xee);
  EXPECT_EQ(PollCount(*server.cq), 0u);  // one-sided: the responder sees nothing

  ASSERT_TRUE(client.qp->Post(Wr(8, WrOpcode::kRead, *dst_reg, 0, 4096, *pool_reg, 1000)).ok());
  Completion r = PollOne(*client.cq);
  EXPECT_EQ(r.status, kWcSuccess);
  EXPECT_EQ(r.wr_id, 8u);
  EXPECT_EQ(r.opcode, WrOpcode::kRead);
  EXPECT_EQ(0, std::memcmp(dst.data(), src.data() + 100, 4096));
  EXPECT_EQ(dst[4096], 0);

  EXPECT_EQ(fabric_.WritesCompleted(), 1u);
  EXPECT_EQ(fabric_.ReadsCompleted(), 1u);
  EXPECT_EQ(fabric_.BytesMoved(), 8192u);
  EXPECT_EQ(fabric_.OutstandingWrs(), 0u);
}

TEST_F(FakeFabricTest, RkeyRangeOutsideRegistrationIsRemoteAccessErrorAndLaterWrsFlush) {
  Side client = Open("fake0");
  Side server = Open("fake1");
  Connect(client, server);
  std::vector<uint8_t> src = Pattern(4096, 1);
  std::vector<uint8_t> pool(4096, 0);
  auto src_reg = Register(client, src, false);
  auto pool_reg = Register(server, pool, true);

  // Starts inside the pool, ends one byte past it.
  ASSERT_TRUE(client.qp->Post(Wr(1, WrOpcode::kWrite, *src_reg, 0, 1025, *pool_reg, 3072)).ok());
  EXPECT_EQ(PollOne(*client.cq).status, kWcRemAccessErr);
  EXPECT_EQ(pool, std::vector<uint8_t>(4096, 0));

  // A valid WR on the QP now in error flushes and moves nothing.
  ASSERT_TRUE(client.qp->Post(Wr(2, WrOpcode::kWrite, *src_reg, 0, 16, *pool_reg, 0)).ok());
  Completion flushed = PollOne(*client.cq);
  EXPECT_EQ(flushed.status, kWcWrFlushErr);
  EXPECT_EQ(flushed.wr_id, 2u);
  EXPECT_EQ(pool, std::vector<uint8_t>(4096, 0));
  EXPECT_EQ(fabric_.WritesCompleted(), 0u);

  // The responder went to error too (QP_ACCESS_ERR): its own WRs flush.
  ASSERT_TRUE(server.qp->Post(Wr(3, WrOpcode::kWrite, *pool_reg, 0, 16, *src_reg, 0)).ok());
  EXPECT_EQ(PollOne(*server.cq).status, kWcWrFlushErr);
}

TEST_F(FakeFabricTest, UnknownRkeyAndLocalOnlyRegistrationAreRemoteAccessErrors) {
  std::vector<uint8_t> src = Pattern(64, 1);
  std::vector<uint8_t> target(64, 0);
  {
    Side client = Open("fake0");
    Side server = Open("fake1");
    Connect(client, server);
    auto src_reg = Register(client, src, false);
    auto local_only = Register(server, target, false);
    ASSERT_TRUE(client.qp->Post(Wr(1, WrOpcode::kWrite, *src_reg, 0, 64, *local_only, 0)).ok());
    EXPECT_EQ(PollOne(*client.cq).status, kWcRemAccessErr);
  }
  {
    Side client = Open("fake0");
    Side server = Open("fake1");
    Connect(client, server);
    auto src_reg = Register(client, src, false);
    auto pool_reg = Register(server, target, true);
    WorkRequest wr = Wr(1, WrOpcode::kWrite, *src_reg, 0, 64, *pool_reg, 0);
    wr.rkey = pool_reg->rkey() + 1000;
    ASSERT_TRUE(client.qp->Post(wr).ok());
    EXPECT_EQ(PollOne(*client.cq).status, kWcRemAccessErr);
  }
  EXPECT_EQ(target, std::vector<uint8_t>(64, 0));
}

TEST_F(FakeFabricTest, LocalRangeOutsideLkeyIsLocalProtectionError) {
  Side client = Open("fake0");
  Side server = Open("fake1");
  Connect(client, server);
  std::vector<uint8_t> src = Pattern(128, 1);
  std::vector<uint8_t> pool(4096, 0);
  auto src_reg = Register(client, src, false);
  auto pool_reg = Register(server, pool, true);

  ASSERT_TRUE(client.qp->Post(Wr(1, WrOpcode::kRead, *src_reg, 64, 65, *pool_reg, 0)).ok());
  EXPECT_EQ(PollOne(*client.cq).status, kWcLocProtErr);
  EXPECT_EQ(src, Pattern(128, 1));
  ASSERT_TRUE(client.qp->Post(Wr(2, WrOpcode::kRead, *src_reg, 0, 8, *pool_reg, 0)).ok());
  EXPECT_EQ(PollOne(*client.cq).status, kWcWrFlushErr);
}

TEST_F(FakeFabricTest, LkeyFromAnotherContextIsLocalProtectionError) {
  Side client = Open("fake0");
  Side server = Open("fake1");
  Connect(client, server);
  auto other_ctx = fabric_.Open("fake0", 1);
  ASSERT_TRUE(other_ctx.ok());
  std::vector<uint8_t> src = Pattern(64, 1);
  std::vector<uint8_t> pool(64, 0);
  auto other_pd_reg = (*other_ctx)->Register(src.data(), src.size(), false);
  ASSERT_TRUE(other_pd_reg.ok());
  auto pool_reg = Register(server, pool, true);

  ASSERT_TRUE(client.qp->Post(Wr(1, WrOpcode::kWrite, **other_pd_reg, 0, 64, *pool_reg, 0)).ok());
  EXPECT_EQ(PollOne(*client.cq).status, kWcLocProtErr);
  EXPECT_EQ(pool, std::vector<uint8_t>(64, 0));
}

TEST_F(FakeFabricTest, FailPostsFailsTheNextPostsWithErrnoAndPostsNothing) {
  Side client = Open("fake0");
  Side server = Open("fake1");
  Connect(client, server);
  std::vector<uint8_t> src = Pattern(64, 1);
  std::vector<uint8_t> pool(64, 0);
  auto src_reg = Register(client, src, false);
  auto pool_reg = Register(server, pool, true);

  fabric_.FailPosts(2, ENOMEM);
  for (int i = 0; i < 2; ++i) {
    Status s = client.qp->Post(Wr(1, WrOpcode::kWrite, *src_reg, 0, 64, *pool_reg, 0));
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.message().find("ibv_post_send"), std::string::npos) << s.ToString();
    EXPECT_NE(s.message().find("Cannot allocate memory (ENOMEM)"), std::string::npos) << s.ToString();
  }
  EXPECT_EQ(PollCount(*client.cq), 0u);
  EXPECT_EQ(fabric_.OutstandingWrs(), 0u);
  EXPECT_EQ(pool, std::vector<uint8_t>(64, 0));

  ASSERT_TRUE(client.qp->Post(Wr(2, WrOpcode::kWrite, *src_reg, 0, 64, *pool_reg, 0)).ok());
  EXPECT_EQ(PollOne(*client.cq).status, kWcSuccess);
  EXPECT_EQ(pool, src);
}

TEST_F(FakeFabricTest, FailCompletionsMovesNoDataPutsTheQpInErrorAndLaterWrsFlush) {
  Side client = Open("fake0");
  Side server = Open("fake1");
  Connect(client, server);
  std::vector<uint8_t> src = Pattern(64, 1);
  std::vector<uint8_t> pool(64, 0);
  auto src_reg = Register(client, src, false);
  auto pool_reg = Register(server, pool, true);

  fabric_.FailCompletions(1, kWcRetryExcErr);
  ASSERT_TRUE(client.qp->Post(Wr(1, WrOpcode::kWrite, *src_reg, 0, 64, *pool_reg, 0)).ok());
  ASSERT_TRUE(client.qp->Post(Wr(2, WrOpcode::kWrite, *src_reg, 0, 64, *pool_reg, 0)).ok());
  Completion out[4];
  auto n = client.cq->Poll(out);
  ASSERT_TRUE(n.ok());
  ASSERT_EQ(n.value(), 2u);
  EXPECT_EQ(out[0].wr_id, 1u);
  EXPECT_EQ(out[0].status, kWcRetryExcErr);
  EXPECT_EQ(out[1].wr_id, 2u);
  EXPECT_EQ(out[1].status, kWcWrFlushErr);
  EXPECT_EQ(pool, std::vector<uint8_t>(64, 0));
  EXPECT_EQ(fabric_.WritesCompleted(), 0u);
  EXPECT_EQ(fabric_.BytesMoved(), 0u);
}

TEST_F(FakeFabricTest, HeldCompletionsArriveLateAndStaySuccessfulAfterSetError) {
  Side client = Open("fake0");
  Side server = Open("fake1");
  Connect(client, server);
  std::vector<uint8_t> src = Pattern(64, 1);
  std::vector<uint8_t> pool(64, 0);
  auto src_reg = Register(client, src, false);
  auto pool_reg = Register(server, pool, true);

  fabric_.HoldCompletions(true);
  ASSERT_TRUE(client.cq->Arm().ok());
  ASSERT_TRUE(client.qp->Post(Wr(1, WrOpcode::kWrite, *src_reg, 0, 64, *pool_reg, 0)).ok());
  EXPECT_EQ(pool, src);  // the data moved...
  EXPECT_EQ(PollCount(*client.cq), 0u);  // ...but nothing reported it yet
  EXPECT_FALSE(Readable(client.cq->fd()));
  EXPECT_EQ(fabric_.OutstandingWrs(), 1u);

  ASSERT_TRUE(client.qp->SetError().ok());
  ASSERT_TRUE(client.qp->Post(Wr(2, WrOpcode::kWrite, *src_reg, 0, 64, *pool_reg, 0)).ok());
  EXPECT_EQ(PollCount(*client.cq), 0u);
  EXPECT_EQ(fabric_.OutstandingWrs(), 2u);

  fabric_.HoldCompletions(false);
  EXPECT_TRUE(Readable(client.cq->fd()));
  Completion out[4];
  auto n = client.cq->Poll(out);
  ASSERT_TRUE(n.ok());
  ASSERT_EQ(n.value(), 2u);
  EXPECT_EQ(out[0].wr_id, 1u);
  EXPECT_EQ(out[0].status, kWcSuccess);
  EXPECT_EQ(out[1].wr_id, 2u);
  EXPECT_EQ(out[1].status, kWcWrFlushErr);
  EXPECT_EQ(fabric_.OutstandingWrs(), 0u);
}

TEST_F(FakeFabricTest, CqFdTurnsReadableOnlyForCompletionsAfterArm) {
  Side client = Open("fake0");
  Side server = Open("fake1");
  Connect(client, server);
  std::vector<uint8_t> src = Pattern(64, 1);
  std::vector<uint8_t> pool(64, 0);
  auto src_reg = Register(client, src, false);
  auto pool_reg = Register(server, pool, true);
  const int fd = client.cq->fd();
  ASSERT_GE(fd, 0);

  // Not armed: a completion raises no event.
  ASSERT_TRUE(client.qp->Post(Wr(1, WrOpcode::kWrite, *src_reg, 0, 64, *pool_reg, 0)).ok());
  EXPECT_FALSE(Readable(fd));
  // Arming does not report the completion already queued; polling does.
  ASSERT_TRUE(client.cq->Arm().ok());
  EXPECT_FALSE(Readable(fd));
  EXPECT_EQ(PollOne(*client.cq).wr_id, 1u);

  ASSERT_TRUE(client.qp->Post(Wr(2, WrOpcode::kWrite, *src_reg, 0, 64, *pool_reg, 0)).ok());
  EXPECT_TRUE(Readable(fd));
  client.cq->DrainEvents();
  EXPECT_FALSE(Readable(fd));
  EXPECT_EQ(PollOne(*client.cq).wr_id, 2u);

  // One event per Arm: the next completion is silent until armed again.
  ASSERT_TRUE(client.qp->Post(Wr(3, WrOpcode::kWrite, *src_reg, 0, 64, *pool_reg, 0)).ok());
  EXPECT_FALSE(Readable(fd));
  EXPECT_EQ(PollOne(*client.cq).wr_id, 3u);
  client.cq->DrainEvents();  // nothing pending: must not block or fail
}

TEST_F(FakeFabricTest, AccountingReturnsToZeroAfterObjectsAreDestroyed) {
  std::vector<uint8_t> src = Pattern(64, 1);
  std::vector<uint8_t> pool(64, 0);
  {
    Side client = Open("fake0");
    Side server = Open("fake1");
    Connect(client, server);
    auto src_reg = Register(client, src, false);
    auto pool_reg = Register(server, pool, true);
    EXPECT_EQ(fabric_.LiveQps(), 2u);
    EXPECT_EQ(fabric_.LiveRegistrations(), 2u);

    ASSERT_TRUE(client.qp->Post(Wr(1, WrOpcode::kWrite, *src_reg, 0, 64, *pool_reg, 0)).ok());
    fabric_.HoldCompletions(true);
    ASSERT_TRUE(client.qp->Post(Wr(2, WrOpcode::kWrite, *src_reg, 0, 64, *pool_reg, 0)).ok());
    EXPECT_EQ(fabric_.OutstandingWrs(), 2u);

    // The QP goes first: its held completion is dropped, the one already on
    // the CQ stays there and still counts until polled.
    const uint32_t qpn = client.qp->local().qpn;
    client.qp.reset();
    EXPECT_EQ(fabric_.LiveQps(), 1u);
    EXPECT_EQ(fabric_.OutstandingWrs(), 1u);
    fabric_.HoldCompletions(false);
    Completion c = PollOne(*client.cq);
    EXPECT_EQ(c.wr_id, 1u);
    EXPECT_EQ(c.qp_num, qpn);
    EXPECT_EQ(fabric_.OutstandingWrs(), 0u);

    // A CQ destroyed with completions on it gives them back too.
    ASSERT_TRUE(server.qp->Post(Wr(3, WrOpcode::kRead, *pool_reg, 0, 8, *src_reg, 0)).ok());
    EXPECT_EQ(PollOne(*server.cq).status, kWcRetryExcErr);  // its peer is gone
    ASSERT_TRUE(server.qp->Post(Wr(4, WrOpcode::kRead, *pool_reg, 0, 8, *src_reg, 0)).ok());
    EXPECT_EQ(fabric_.OutstandingWrs(), 1u);
    server.qp.reset();
    server.cq.reset();
    EXPECT_EQ(fabric_.OutstandingWrs(), 0u);
  }
  EXPECT_EQ(fabric_.LiveRegistrations(), 0u);
  EXPECT_EQ(fabric_.LiveQps(), 0u);
  EXPECT_EQ(fabric_.OutstandingWrs(), 0u);
}

TEST_F(FakeFabricTest, WrToADestroyedPeerIsRetryExceeded) {
  Side client = Open("fake0");
  Side server = Open("fake1");
  Connect(client, server);
  std::vector<uint8_t> src = Pattern(64, 1);
  std::vector<uint8_t> pool(64, 0);
  auto src_reg = Register(client, src, false);
  auto pool_reg = Register(server, pool, true);

  server.qp.reset();
  ASSERT_TRUE(client.qp->Post(Wr(1, WrOpcode::kWrite, *src_reg, 0, 64, *pool_reg, 0)).ok());
  EXPECT_EQ(PollOne(*client.cq).status, kWcRetryExcErr);
  EXPECT_EQ(pool, std::vector<uint8_t>(64, 0));
  ASSERT_TRUE(client.qp->Post(Wr(2, WrOpcode::kWrite, *src_reg, 0, 64, *pool_reg, 0)).ok());
  EXPECT_EQ(PollOne(*client.cq).status, kWcWrFlushErr);
}

TEST_F(FakeFabricTest, PeerNotConnectedBackIsRetryExceeded) {
  Side client = Open("fake0");
  Side server = Open("fake1");
  PathOptions path;
  path.gid_index = 1;
  ASSERT_TRUE(client.qp->Connect(server.qp->local(), path).ok());
  std::vector<uint8_t> src = Pattern(64, 1);
  std::vector<uint8_t> pool(64, 0);
  auto src_reg = Register(client, src, false);
  auto pool_reg = Register(server, pool, true);

  ASSERT_TRUE(client.qp->Post(Wr(1, WrOpcode::kWrite, *src_reg, 0, 64, *pool_reg, 0)).ok());
  EXPECT_EQ(PollOne(*client.cq).status, kWcRetryExcErr);
}

TEST_F(FakeFabricTest, ConnectRejectsPathMtuAboveThePortsActiveMtu) {
  PortInfo small = FakeFabric::HealthyPort("small0");
  small.active_mtu = 1024;
  fabric_.AddDevice(small);
  Side client = Open("small0");
  Side server = Open("fake1");

  PathOptions path;
  path.gid_index = 1;
  path.mtu = 4096;
  Status s = client.qp->Connect(server.qp->local(), path);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("EINVAL"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("small0"), std::string::npos) << s.ToString();
  EXPECT_EQ(fabric_.LastPath().mtu, 4096u);

  path.mtu = 3000;  // not an IB MTU
  EXPECT_FALSE(client.qp->Connect(server.qp->local(), path).ok());

  path.mtu = 1024;
  path.traffic_class = 26 << 2;
  path.service_level = 3;
  ASSERT_TRUE(client.qp->Connect(server.qp->local(), path).ok());
  EXPECT_EQ(fabric_.LastPath().mtu, 1024u);
  EXPECT_EQ(fabric_.LastPath().traffic_class, 26 << 2);
  EXPECT_EQ(fabric_.LastPath().service_level, 3);
  EXPECT_FALSE(client.qp->Connect(server.qp->local(), path).ok()) << "a second Connect";
}

TEST_F(FakeFabricTest, ConnectRejectsUnknownRemoteQpnAndMissingGidIndex) {
  Side client = Open("fake0");
  Side server = Open("fake1");
  PathOptions path;
  path.gid_index = 1;
  QpAddress bogus = server.qp->local();
  bogus.qpn += 1000;
  EXPECT_FALSE(client.qp->Connect(bogus, path).ok());
  path.gid_index = 7;
  EXPECT_FALSE(client.qp->Connect(server.qp->local(), path).ok());
  path.gid_index = 1;
  EXPECT_TRUE(client.qp->Connect(server.qp->local(), path).ok());
}

TEST_F(FakeFabricTest, PathMaxMtuDropsMessagesLargerThanTheFabricCarries) {
  fabric_.SetPathMaxMtu(1024);
  Side client = Open("fake0");
  Side server = Open("fake1");
  Connect(client, server);  // path mtu 4096: the NIC accepts it, the switch drops big frames
  std::vector<uint8_t> src = Pattern(4096, 1);
  std::vector<uint8_t> pool(4096, 0);
  auto src_reg = Register(client, src, false);
  auto pool_reg = Register(server, pool, true);

  ASSERT_TRUE(client.qp->Post(Wr(1, WrOpcode::kWrite, *src_reg, 0, 512, *pool_reg, 0)).ok());
  EXPECT_EQ(PollOne(*client.cq).status, kWcSuccess);
  ASSERT_TRUE(client.qp->Post(Wr(2, WrOpcode::kWrite, *src_reg, 0, 2048, *pool_reg, 0)).ok());
  EXPECT_EQ(PollOne(*client.cq).status, kWcRetryExcErr);
  ASSERT_TRUE(client.qp->Post(Wr(3, WrOpcode::kWrite, *src_reg, 0, 512, *pool_reg, 0)).ok());
  EXPECT_EQ(PollOne(*client.cq).status, kWcWrFlushErr);
}

TEST_F(FakeFabricTest, FullSendQueueFailsPostUntilACompletionIsPolled) {
  Side client = Open("fake0", /*max_send_wr=*/2);
  Side server = Open("fake1");
  Connect(client, server);
  std::vector<uint8_t> src = Pattern(64, 1);
  std::vector<uint8_t> pool(64, 0);
  auto src_reg = Register(client, src, false);
  auto pool_reg = Register(server, pool, true);

  ASSERT_TRUE(client.qp->Post(Wr(1, WrOpcode::kWrite, *src_reg, 0, 8, *pool_reg, 0)).ok());
  ASSERT_TRUE(client.qp->Post(Wr(2, WrOpcode::kWrite, *src_reg, 0, 8, *pool_reg, 0)).ok());
  Status full = client.qp->Post(Wr(3, WrOpcode::kWrite, *src_reg, 0, 8, *pool_reg, 0));
  EXPECT_EQ(full.code(), StatusCode::kResourceExhausted) << full.ToString();
  EXPECT_NE(full.message().find("ENOMEM"), std::string::npos) << full.ToString();
  Completion one[1];
  ASSERT_EQ(client.cq->Poll(one).value(), 1u);
  EXPECT_TRUE(client.qp->Post(Wr(4, WrOpcode::kWrite, *src_reg, 0, 8, *pool_reg, 0)).ok());
}

TEST_F(FakeFabricTest, PostOnAnUnconnectedQpFails) {
  Side client = Open("fake0");
  std::vector<uint8_t> src = Pattern(64, 1);
  auto src_reg = Register(client, src, false);
  Status s = client.qp->Post(Wr(1, WrOpcode::kWrite, *src_reg, 0, 8, *src_reg, 0));
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("EINVAL"), std::string::npos) << s.ToString();
  EXPECT_EQ(fabric_.OutstandingWrs(), 0u);
}

TEST_F(FakeFabricTest, OpenListsDevicesAndReportsUnknownOnesAndInjectedFailures) {
  auto devices = fabric_.Devices();
  ASSERT_TRUE(devices.ok());
  EXPECT_EQ(devices.value(), (std::vector<std::string>{"fake0", "fake1"}));

  auto missing = fabric_.Open("mlx5_9", 1);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("fake0, fake1"), std::string::npos) << missing.status().ToString();
  EXPECT_FALSE(fabric_.Open("fake0", 2).ok());

  fabric_.FailOpen(Unavailable("device removed"));
  EXPECT_EQ(fabric_.Open("fake0", 1).status().code(), StatusCode::kUnavailable);
  fabric_.FailOpen(Status::Ok());
  auto ctx = fabric_.Open("fake0", 1);
  ASSERT_TRUE(ctx.ok());
  EXPECT_EQ((*ctx)->port().device, "fake0");
  EXPECT_TRUE((*ctx)->port().active);
  EXPECT_EQ((*ctx)->port().active_mtu, 4096u);
}

TEST_F(FakeFabricTest, QpNumbersAndKeysAreUniqueAndLocalCarriesTheRoceV2Gid) {
  Side a = Open("fake0");
  Side b = Open("fake1");
  Side c = Open("fake0");
  EXPECT_NE(a.qp->local().qpn, b.qp->local().qpn);
  EXPECT_NE(a.qp->local().qpn, c.qp->local().qpn);
  EXPECT_NE(b.qp->local().qpn, c.qp->local().qpn);
  EXPECT_LE(a.qp->local().psn, 0xffffffu);

  const PortInfo& port = a.ctx->port();
  ASSERT_EQ(port.gids.size(), 2u);
  EXPECT_EQ(port.gids[1].type, GidType::kRoceV2);
  EXPECT_EQ(a.qp->local().gid, port.gids[1].gid);
  EXPECT_NE(a.qp->local().gid, Gid{});

  std::vector<uint8_t> buf(64);
  auto r1 = Register(a, buf, true);
  auto r2 = Register(b, buf, true);
  std::vector<uint32_t> keys = {r1->lkey(), r1->rkey(), r2->lkey(), r2->rkey()};
  std::sort(keys.begin(), keys.end());
  EXPECT_EQ(std::adjacent_find(keys.begin(), keys.end()), keys.end());
  EXPECT_FALSE(a.ctx->Register(nullptr, 64, true).ok());
  EXPECT_FALSE(a.ctx->Register(buf.data(), 0, true).ok());
}

// Two connections driven from two threads at once: the one mutex keeps the
// shared state consistent (run under TSan as well).
TEST_F(FakeFabricTest, ConcurrentConnectionsAccountEveryWr) {
  constexpr int kWrs = 500;
  std::vector<uint8_t> pools[2] = {std::vector<uint8_t>(4096, 0), std::vector<uint8_t>(4096, 0)};
  std::vector<uint8_t> srcs[2] = {Pattern(4096, 1), Pattern(4096, 2)};
  Side clients[2] = {Open("fake0"), Open("fake0")};
  Side servers[2] = {Open("fake1"), Open("fake1")};
  std::unique_ptr<Registration> src_regs[2];
  std::unique_ptr<Registration> pool_regs[2];
  for (int i = 0; i < 2; ++i) {
    Connect(clients[i], servers[i]);
    src_regs[i] = Register(clients[i], srcs[i], false);
    pool_regs[i] = Register(servers[i], pools[i], true);
  }
  int ok[2] = {0, 0};
  auto drive = [&](int i) {
    for (int n = 0; n < kWrs; ++n) {
      if (!clients[i].qp->Post(Wr(n, WrOpcode::kWrite, *src_regs[i], 0, 4096, *pool_regs[i], 0)).ok()) return;
      Completion c[1];
      auto got = clients[i].cq->Poll(c);
      if (!got.ok() || got.value() != 1 || c[0].status != kWcSuccess) return;
      ++ok[i];
    }
  };
  std::thread t0(drive, 0);
  std::thread t1(drive, 1);
  t0.join();
  t1.join();
  EXPECT_EQ(ok[0], kWrs);
  EXPECT_EQ(ok[1], kWrs);
  EXPECT_EQ(pools[0], srcs[0]);
  EXPECT_EQ(pools[1], srcs[1]);
  EXPECT_EQ(fabric_.WritesCompleted(), 2u * kWrs);
  EXPECT_EQ(fabric_.BytesMoved(), 2u * kWrs * 4096);
  EXPECT_EQ(fabric_.OutstandingWrs(), 0u);
}

}  // namespace
}  // namespace memkv::verbs
