// RdmaChannel and the registration cache against the fault-injecting fake:
// what the layers above the NIC do with completions, errors and memory.
#include "client/rdma.h"

#include <gtest/gtest.h>

#include <vector>

#include "client/rdma_ops.h"
#include "verbs/fake.h"

namespace memkv::client {
namespace {

class RegistrationCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fabric_.AddDevice("dev0");
    context_ = std::move(fabric_.Open("dev0", 1)).value();
  }
  void TearDown() override {
    context_.reset();
    EXPECT_EQ(fabric_.LiveRegistrations(), 0u);
  }
  verbs::FakeFabric fabric_;
  std::unique_ptr<verbs::Context> context_;
};

TEST_F(RegistrationCacheTest, SmallBuffersAreLeftToTheBouncePool) {
  RegistrationCache cache(context_.get(), 1 << 30);
  std::vector<uint8_t> small(RegistrationCache::kMinBytes - 1);
  EXPECT_FALSE(cache.Acquire(small.data(), small.size()).has_value());
  EXPECT_EQ(fabric_.LiveRegistrations(), 0u);
}

TEST_F(RegistrationCacheTest, ReusesARegistrationForAnySliceInside) {
  RegistrationCache cache(context_.get(), 1 << 30);
  std::vector<uint8_t> buf(4 << 20);
  auto a = cache.Acquire(buf.data(), buf.size());
  ASSERT_TRUE(a.has_value());
  auto b = cache.Acquire(buf.data() + 100, 1 << 20);
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(a->id, b->id);
  EXPECT_EQ(fabric_.LiveRegistrations(), 1u);
  EXPECT_EQ(cache.leases(), 2u);
  cache.Release(*a);
  cache.Release(*b);
  EXPECT_EQ(cache.leases(), 0u);
  EXPECT_EQ(fabric_.LiveRegistrations(), 1u);  // cached
}

TEST_F(RegistrationCacheTest, InvalidatedRegistrationsAreReplacedOnceUnused) {
  RegistrationCache cache(context_.get(), 1 << 30);
  std::vector<uint8_t> buf(1 << 20);
  auto a = cache.Acquire(buf.data(), buf.size());
  ASSERT_TRUE(a.has_value());
  cache.Invalidate(*a);
  cache.Release(*a);
  EXPECT_EQ(fabric_.LiveRegistrations(), 0u);  // dropped, not reused
  auto b = cache.Acquire(buf.data(), buf.size());
  ASSERT_TRUE(b.has_value());
  EXPECT_NE(a->id, b->id);
  cache.Release(*b);
}

TEST_F(RegistrationCacheTest, TrimsLeastRecentlyUsedButNeverOneInUseOrPinned) {
  RegistrationCache cache(context_.get(), 3 << 20);  // room for about three 1 MiB buffers
  std::vector<std::vector<uint8_t>> bufs(5, std::vector<uint8_t>(1 << 20));
  std::vector<uint8_t> pinned(1 << 20);
  ASSERT_TRUE(cache.Pin(pinned.data(), pinned.size()).ok());
  auto held = cache.Acquire(bufs[0].data(), bufs[0].size());
  ASSERT_TRUE(held.has_value());
  for (size_t i = 1; i < bufs.size(); ++i) {
    auto l = cache.Acquire(bufs[i].data(), bufs[i].size());
    ASSERT_TRUE(l.has_value());
    cache.Release(*l);
  }
  EXPECT_LE(cache.registered_bytes(), (3u << 20) + 3 * 4096u);
  // The held and the pinned ones survived the trimming.
  auto again = cache.Acquire(bufs[0].data(), bufs[0].size());
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->id, held->id);
  cache.Release(*again);
  cache.Release(*held);
  EXPECT_FALSE(cache.Pin(pinned.data(), pinned.size()).ok());  // already pinned
  EXPECT_TRUE(cache.Unpin(pinned.data()).ok());
  EXPECT_EQ(cache.Unpin(pinned.data()).code(), StatusCode::kNotFound);
}

TEST(TransferWrsTest, CoversAWindowOfTheValueSplittingLongSegments) {
  const std::vector<proto::RemoteSegment> segments = {{1000, 100}, {5000, 50}, {9000, 10}};
  uint8_t local[200];
  // Bytes 30..130 of the value: the tail of the first segment, most of the second.
  std::vector<verbs::WorkRequest> wrs =
      TransferWrs(segments, 30, 100, verbs::WrOpcode::kRead, local, 7, 9, /*max_wr_bytes=*/40);
  ASSERT_EQ(wrs.size(), 3u);
  EXPECT_EQ(wrs[0].remote_addr, 1030u);
  EXPECT_EQ(wrs[0].length, 40u);
  EXPECT_EQ(wrs[0].local, local);
  EXPECT_EQ(wrs[1].remote_addr, 1070u);
  EXPECT_EQ(wrs[1].length, 30u);
  EXPECT_EQ(wrs[1].local, local + 40);
  EXPECT_EQ(wrs[2].remote_addr, 5000u);
  EXPECT_EQ(wrs[2].length, 30u);
  EXPECT_EQ(wrs[2].local, local + 70);
  for (const verbs::WorkRequest& wr : wrs) {
    EXPECT_EQ(wr.opcode, verbs::WrOpcode::kRead);
    EXPECT_EQ(wr.lkey, 7u);
    EXPECT_EQ(wr.rkey, 9u);
  }
  // The whole value in one window: every byte once, in order.
  wrs = TransferWrs(segments, 0, 160, verbs::WrOpcode::kWrite, local, 1, 2, 64);
  uint64_t total = 0;
  for (const verbs::WorkRequest& wr : wrs) {
    EXPECT_EQ(wr.local, local + total);
    EXPECT_LE(wr.length, 64u);
    total += wr.length;
  }
  EXPECT_EQ(total, 160u);
  EXPECT_EQ(wrs.size(), 4u);  // 64 + 36, 50, 10
  EXPECT_TRUE(TransferWrs(segments, 160, 0, verbs::WrOpcode::kWrite, local, 1, 2).empty());
}

TEST(TransferWrsTest, NoWrCarriesMoreThanTheDeviceLimit) {
  // One 3 GiB run of the pool (a server older than its 1 GiB grant segments
  // could not say so, but nothing here depends on the segment size).
  const std::vector<proto::RemoteSegment> segments = {{0x10000, 0xC0000000u}};
  std::vector<verbs::WorkRequest> wrs =
      TransferWrs(segments, 0, 0xC0000000u, verbs::WrOpcode::kWrite, nullptr, 1, 2);
  ASSERT_EQ(wrs.size(), 3u);
  for (size_t i = 0; i < wrs.size(); ++i) {
    EXPECT_EQ(wrs[i].length, kMaxWrBytes);
    EXPECT_EQ(wrs[i].remote_addr, 0x10000 + i * kMaxWrBytes);
  }
}

TEST_F(RegistrationCacheTest, BounceBuffersAreNeverLargerThanTheLargestClass) {
  BouncePool pool(context_.get());
  Result<BounceBuffer> largest = pool.Acquire(BouncePool::kMaxBufferBytes);
  ASSERT_TRUE(largest.ok()) << largest.status().ToString();
  EXPECT_EQ(largest->capacity, BouncePool::kMaxBufferBytes);
  Result<BounceBuffer> whole = pool.Acquire(BouncePool::kMaxBufferBytes + 1);
  EXPECT_EQ(whole.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(pool.buffers_in_use(), 1u);
  pool.Release(*largest);
  EXPECT_EQ(pool.buffers_in_use(), 0u);
}

// A channel whose QPs are connected to a peer context's QPs.
class RdmaChannelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fabric_.AddDevice("a");
    fabric_.AddDevice("b");
    local_ = std::move(fabric_.Open("a", 1)).value();
    remote_ = std::move(fabric_.Open("b", 1)).value();
    remote_cq_ = std::move(remote_->CreateCq(8)).value();
    bounce_ = std::make_unique<BouncePool>(local_.get());
    registrations_ = std::make_unique<RegistrationCache>(local_.get(), 1 << 30);
    auto cq = std::move(local_->CreateCq(256)).value();
    std::vector<std::unique_ptr<verbs::QueuePair>> qps;
    for (int i = 0; i < 2; ++i) qps.push_back(std::move(local_->CreateQp(cq.get(), 128)).value());
    RdmaSettings settings;
    channel_ = std::make_unique<RdmaChannel>(std::move(cq), std::move(qps), verbs::Gid{}, settings, 1, bounce_.get(),
                                             registrations_.get(), &counters_);
    proto::RdmaOffer offer = channel_->Offer();
    proto::RdmaAnswer answer;
    answer.result = proto::RdmaAnswerResult::kAccepted;
    answer.mtu = 4096;
    remote_memory_.resize(8 << 20);
    remote_mr_ = std::move(remote_->Register(remote_memory_.data(), remote_memory_.size(), true)).value();
    answer.rkey = remote_mr_->rkey();
    for (const proto::RdmaQp& q : offer.qps) {
      auto qp = std::move(remote_->CreateQp(remote_cq_.get(), 4)).value();
      verbs::QpAddress to{q.qpn, q.psn, {}};
      verbs::PathOptions path;
      path.gid_index = 1;
      ASSERT_TRUE(qp->Connect(to, path).ok());
      answer.qps.push_back({qp->local().qpn, qp->local().psn});
      remote_qps_.push_back(std::move(qp));
    }
    ASSERT_TRUE(channel_->Connect(answer, "peer").ok());
  }

  void TearDown() override {
    channel_.reset();
    remote_qps_.clear();
    remote_mr_.reset();
    EXPECT_EQ(bounce_->buffers_in_use(), 0u);
    registrations_.reset();
    bounce_.reset();
    remote_cq_.reset();
    local_.reset();
    remote_.reset();
    EXPECT_EQ(fabric_.LiveRegistrations(), 0u);
    EXPECT_EQ(fabric_.LiveQps(), 0u);
    EXPECT_EQ(fabric_.OutstandingWrs(), 0u);
  }

  struct Sink : RdmaSink {
    int calls = 0;
    Status status;
    bool lost = false;
    void OnRdmaDone(const Status& s, bool connection_lost) override {
      ++calls;
      status = s;
      lost = connection_lost;
    }
  };

  std::vector<verbs::WorkRequest> Writes(const BounceBuffer& b, int n, uint32_t len) {
    std::vector<verbs::WorkRequest> wrs;
    for (int i = 0; i < n; ++i) {
      verbs::WorkRequest wr;
      wr.opcode = verbs::WrOpcode::kWrite;
      wr.local = b.data + i * len;
      wr.length = len;
      wr.lkey = b.lkey;
      wr.remote_addr = reinterpret_cast<uint64_t>(remote_memory_.data()) + static_cast<uint64_t>(i) * len;
      wr.rkey = remote_mr_->rkey();
      wrs.push_back(wr);
    }
    return wrs;
  }

  void DrainUntilIdle() {
    for (int i = 0; i < 1000 && channel_->outstanding() > 0; ++i) channel_->Progress();
  }

  verbs::FakeFabric fabric_;
  ClientCounters counters_;
  std::unique_ptr<verbs::Context> local_, remote_;
  std::unique_ptr<verbs::CompletionQueue> remote_cq_;
  std::unique_ptr<BouncePool> bounce_;
  std::unique_ptr<RegistrationCache> registrations_;
  std::unique_ptr<RdmaChannel> channel_;
  std::vector<uint8_t> remote_memory_;
  std::unique_ptr<verbs::Registration> remote_mr_;
  std::vector<std::unique_ptr<verbs::QueuePair>> remote_qps_;
};

TEST_F(RdmaChannelTest, TellsEachOperationOnceWhenAllItsWrsAreDone) {
  BounceBuffer b = std::move(bounce_->Acquire(1 << 20)).value();
  std::fill(b.data, b.data + (1 << 20), 0x5a);
  Sink sink;
  channel_->Submit(&sink, Writes(b, 16, 64 << 10), "write");
  EXPECT_EQ(sink.calls, 0);
  DrainUntilIdle();
  EXPECT_EQ(sink.calls, 1);
  EXPECT_TRUE(sink.status.ok()) << sink.status.ToString();
  EXPECT_EQ(remote_memory_[(1 << 20) - 1], 0x5a);
  EXPECT_TRUE(channel_->ready());
  bounce_->Release(b);
}

TEST_F(RdmaChannelTest, MoreWrsThanTheSendQueuesHoldAreQueuedNotFailed) {
  BounceBuffer b = std::move(bounce_->Acquire(1 << 20)).value();
  Sink sink;
  channel_->Submit(&sink, Writes(b, 400, 1024), "many");  // 2 QPs x 128 slots
  DrainUntilIdle();
  EXPECT_EQ(sink.calls, 1);
  EXPECT_TRUE(sink.status.ok()) << sink.status.ToString();
  bounce_->Release(b);
}

TEST_F(RdmaChannelTest, ACompletionErrorFailsEveryOperationAndBreaksTheChannel) {
  BounceBuffer b = std::move(bounce_->Acquire(1 << 20)).value();
  fabric_.HoldCompletions(true);
  Sink first, second;
  channel_->Submit(&first, Writes(b, 4, 1024), "first");
  fabric_.FailCompletions(1, verbs::kWcRetryExcErr);
  channel_->Submit(&second, Writes(b, 4, 1024), "second");
  fabric_.HoldCompletions(false);
  DrainUntilIdle();
  EXPECT_EQ(first.calls, 1);
  EXPECT_EQ(second.calls, 1);
  EXPECT_FALSE(second.status.ok());
  EXPECT_NE(second.status.message().find("IBV_WC_RETRY_EXC_ERR (status 12)"), std::string::npos)
      << second.status.ToString();
  EXPECT_FALSE(second.lost);
  EXPECT_TRUE(channel_->broken());
  EXPECT_EQ(counters_.completion_errors[verbs::kWcRetryExcErr].load(), 1u);
  // Work submitted to a broken channel fails at once, naming the first failure.
  Sink third;
  channel_->Submit(&third, Writes(b, 2, 1024), "third");
  DrainUntilIdle();
  EXPECT_EQ(third.calls, 1);
  EXPECT_NE(third.status.message().find("IBV_WC_RETRY_EXC_ERR"), std::string::npos);
  bounce_->Release(b);
}

TEST_F(RdmaChannelTest, AFailedPostFailsItsOperation) {
  BounceBuffer b = std::move(bounce_->Acquire(1 << 20)).value();
  fabric_.FailPosts(1, ENOMEM);
  Sink sink;
  channel_->Submit(&sink, Writes(b, 3, 1024), "post");
  DrainUntilIdle();
  EXPECT_EQ(sink.calls, 1);
  EXPECT_NE(sink.status.message().find("post"), std::string::npos) << sink.status.ToString();
  EXPECT_TRUE(channel_->broken());
  bounce_->Release(b);
}

TEST_F(RdmaChannelTest, AbortTellsOutstandingOperationsAndIgnoresLateCompletions) {
  BounceBuffer b = std::move(bounce_->Acquire(1 << 20)).value();
  fabric_.HoldCompletions(true);
  Sink sink;
  channel_->Submit(&sink, Writes(b, 4, 1024), "held");
  EXPECT_EQ(channel_->outstanding(), 1u);
  channel_->Abort(DeadlineExceeded("deadline"));
  EXPECT_EQ(sink.calls, 1);
  EXPECT_TRUE(sink.lost);
  EXPECT_EQ(sink.status.code(), StatusCode::kDeadlineExceeded);
  fabric_.HoldCompletions(false);  // late: their QP is gone
  EXPECT_EQ(channel_->outstanding(), 0u);
  EXPECT_EQ(sink.calls, 1);
  bounce_->Release(b);
}

TEST_F(RdmaChannelTest, HoldsOneSpareSlotAskedForOnceAtATime) {
  proto::RdmaGrant spare;
  spare.token = 9;
  spare.value_len = 64 << 10;
  spare.segments = {{4096, 64 << 10}};
  EXPECT_FALSE(channel_->WantsSpare(0));
  EXPECT_FALSE(channel_->WantsSpare(proto::kMaxRdmaSpareBytes + 1));
  ASSERT_TRUE(channel_->WantsSpare(64 << 10));
  EXPECT_EQ(channel_->AskingSpare(), 0u);
  EXPECT_FALSE(channel_->WantsSpare(64 << 10));  // asked: not again until answered
  EXPECT_FALSE(channel_->WantsSpare(4096));
  channel_->OnSpareAnswer(spare, /*again=*/true);
  EXPECT_FALSE(channel_->WantsSpare(64 << 10));  // held
  EXPECT_FALSE(channel_->TakeSpare(4096).has_value());
  // A put of another size asks for its own; the held one is handed back.
  EXPECT_TRUE(channel_->WantsSpare(4096));
  EXPECT_EQ(channel_->AskingSpare(), 9u);
  EXPECT_FALSE(channel_->TakeSpare(64 << 10).has_value());
  channel_->OnSpareAnswer(spare, /*again=*/true);
  std::optional<proto::RdmaGrant> taken = channel_->TakeSpare(64 << 10);
  ASSERT_TRUE(taken.has_value());
  EXPECT_EQ(taken->token, 9u);
  EXPECT_FALSE(channel_->TakeSpare(64 << 10).has_value());  // the caller's now
  // Refused for now (a full pool): asked again later; for good: never.
  EXPECT_EQ(channel_->AskingSpare(), 0u);
  channel_->OnSpareAnswer(std::nullopt, /*again=*/true);
  EXPECT_TRUE(channel_->WantsSpare(64 << 10));
  channel_->AskingSpare();
  channel_->OnSpareAnswer(std::nullopt, /*again=*/false);
  EXPECT_FALSE(channel_->WantsSpare(64 << 10));
  EXPECT_FALSE(channel_->WantsSpare(4096));
}

TEST_F(RdmaChannelTest, OfferCarriesEveryQpAndTheMtu) {
  proto::RdmaOffer offer = channel_->Offer();
  EXPECT_EQ(offer.qps.size(), 2u);
  EXPECT_EQ(offer.mtu, 4096u);
}

}  // namespace
}  // namespace memkv::client
