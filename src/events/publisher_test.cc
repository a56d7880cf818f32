// The Publisher against real ZeroMQ SUB and DEALER sockets on loopback.
// Waits poll a condition against a deadline; nothing sleeps.
#include "events/publisher.h"

#include <gtest/gtest.h>
#include <msgpack.h>
#include <zmq.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <future>
#include <memory>
#include <thread>

namespace memkv::events {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kDeadline = std::chrono::seconds(20);

std::string BigEndian(int64_t v) {
  std::string out(8, '\0');
  for (int i = 7; i >= 0; --i, v >>= 8) out[i] = static_cast<char>(v & 0xff);
  return out;
}

int64_t FromBigEndian(const std::string& b) {
  uint64_t v = 0;
  for (char c : b) v = v << 8 | uint8_t(c);
  return static_cast<int64_t>(v);
}

// The first block hash of each event of a payload (encoding kArray), -1 for
// AllBlocksCleared; decoded with msgpack-c, independently of the encoder.
std::vector<int64_t> FirstHashes(const std::string& payload) {
  msgpack_zone zone;
  msgpack_zone_init(&zone, 2048);
  msgpack_object obj;
  EXPECT_EQ(msgpack_unpack(payload.data(), payload.size(), nullptr, &zone, &obj), MSGPACK_UNPACK_SUCCESS);
  std::vector<int64_t> out;
  const msgpack_object_array& batch = obj.via.array;
  EXPECT_EQ(batch.size, 3u);
  const msgpack_object_array& events = batch.ptr[1].via.array;
  for (uint32_t i = 0; i < events.size; ++i) {
    const msgpack_object_array& e = events.ptr[i].via.array;
    out.push_back(e.size > 1 ? e.ptr[1].via.array.ptr[0].via.i64 : -1);
  }
  msgpack_zone_destroy(&zone);
  return out;
}

// A ZeroMQ socket of the test's own.
class Socket {
 public:
  // `rcvhwm` > 0: at most that many messages wait on this side (and a small
  // kernel buffer), so a peer that does not read pushes back at once.
  Socket(void* ctx, int type, const std::string& endpoint, int rcvhwm = 0) : s_(zmq_socket(ctx, type)) {
    int linger = 0;
    zmq_setsockopt(s_, ZMQ_LINGER, &linger, sizeof(linger));
    if (rcvhwm > 0) {
      zmq_setsockopt(s_, ZMQ_RCVHWM, &rcvhwm, sizeof(rcvhwm));
      int rcvbuf = 4096;
      zmq_setsockopt(s_, ZMQ_RCVBUF, &rcvbuf, sizeof(rcvbuf));
    }
    if (type == ZMQ_SUB) zmq_setsockopt(s_, ZMQ_SUBSCRIBE, "", 0);
    EXPECT_EQ(zmq_connect(s_, endpoint.c_str()), 0) << endpoint;
  }
  ~Socket() { zmq_close(s_); }

  void Send(const std::vector<std::string>& frames) {
    for (size_t i = 0; i < frames.size(); ++i) {
      zmq_send(s_, frames[i].data(), frames[i].size(), i + 1 < frames.size() ? ZMQ_SNDMORE : 0);
    }
  }
  // The next message's frames; empty when none came within `ms`.
  std::vector<std::string> Receive(int ms) {
    zmq_pollitem_t item{s_, 0, ZMQ_POLLIN, 0};
    if (zmq_poll(&item, 1, ms) <= 0) return {};
    std::vector<std::string> frames;
    int more = 1;
    while (more) {
      zmq_msg_t msg;
      zmq_msg_init(&msg);
      zmq_msg_recv(&msg, s_, 0);
      frames.emplace_back(static_cast<const char*>(zmq_msg_data(&msg)), zmq_msg_size(&msg));
      more = zmq_msg_more(&msg);
      zmq_msg_close(&msg);
    }
    return frames;
  }

  void* raw() const { return s_; }

 private:
  void* s_;
};

// Replays from `start` on `dealer`: each [seq, payload] up to an end marker
// (an empty payload), and that marker's sequence in *end (-1: complete).
std::vector<std::pair<int64_t, std::string>> ReadReplay(Socket& dealer, int64_t* end, int wait_ms = 20000) {
  std::vector<std::pair<int64_t, std::string>> out;
  *end = -2;  // no end marker
  for (;;) {
    std::vector<std::string> frames = dealer.Receive(wait_ms);
    if (frames.size() != 3) return out;
    EXPECT_EQ(frames[0], "");  // the delimiter a REQ socket strips
    if (frames[2].empty()) {
      *end = FromBigEndian(frames[1]);
      return out;
    }
    out.emplace_back(FromBigEndian(frames[1]), frames[2]);
  }
}

class PublisherTest : public ::testing::Test {
 protected:
  ~PublisherTest() override { zmq_ctx_term(ctx_); }

  std::unique_ptr<Publisher> Make(PublisherOptions o) {
    o.publish = "tcp://127.0.0.1:0";
    o.encoding = Encoding::kArray;
    Result<std::unique_ptr<Publisher>> p = Publisher::Create(std::move(o));
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    return std::move(p).value();
  }

  // Publishes one batch and waits until the thread has sent it.
  static void PublishOneBatch(Publisher& p, int64_t hash) {
    const uint64_t before = p.counters().batches_published;
    p.Publish(Event::Removed(BlockHash::Int64(hash), kMediumDram));
    const auto deadline = Clock::now() + kDeadline;
    while (p.counters().batches_published == before && Clock::now() < deadline) {
      std::this_thread::yield();
    }
    ASSERT_GT(p.counters().batches_published, before);
  }

  // Replays from `start`: each [seq, payload] up to the end marker.
  std::vector<std::pair<int64_t, std::string>> Replay(const std::string& endpoint, int64_t start) {
    Socket dealer(ctx_, ZMQ_DEALER, endpoint);
    dealer.Send({"", BigEndian(start)});
    std::vector<std::pair<int64_t, std::string>> out;
    for (;;) {
      std::vector<std::string> frames = dealer.Receive(20000);
      EXPECT_EQ(frames.size(), 3u) << "no end marker";
      if (frames.size() != 3) return out;
      EXPECT_EQ(frames[0], "");  // the delimiter a REQ socket strips
      if (FromBigEndian(frames[1]) == -1) {
        EXPECT_EQ(frames[2], "");
        return out;
      }
      out.emplace_back(FromBigEndian(frames[1]), frames[2]);
    }
  }

  void* ctx_ = zmq_ctx_new();
};

TEST_F(PublisherTest, EventsArriveInOrderWithIncreasingSequence) {
  PublisherOptions o;
  o.topic = "kv";
  std::unique_ptr<Publisher> p = Make(o);
  Socket sub(ctx_, ZMQ_SUB, p->publish_endpoint());
  // A subscription takes a moment to reach the publisher: publish until one
  // message arrives.
  std::vector<std::string> first;
  const auto deadline = Clock::now() + kDeadline;
  while (first.empty() && Clock::now() < deadline) {
    p->Publish(Event::AllCleared());
    first = sub.Receive(50);
  }
  ASSERT_EQ(first.size(), 3u);
  EXPECT_EQ(first[0], "kv");
  int64_t last_seq = FromBigEndian(first[1]);
  const uint64_t primed = p->counters().events_published;

  constexpr int kEvents = 1000;
  for (int i = 0; i < kEvents; ++i) p->Publish(Event::Removed(BlockHash::Int64(i), kMediumDram));
  std::vector<int64_t> hashes;
  while (hashes.size() < size_t(kEvents)) {
    std::vector<std::string> m = sub.Receive(20000);
    ASSERT_EQ(m.size(), 3u) << "after " << hashes.size() << " events";
    const int64_t seq = FromBigEndian(m[1]);
    ASSERT_EQ(seq, last_seq + 1);
    last_seq = seq;
    for (int64_t h : FirstHashes(m[2])) {
      if (h >= 0) hashes.push_back(h);  // priming batches may still trail
    }
  }
  for (int i = 0; i < kEvents; ++i) ASSERT_EQ(hashes[i], i);
  EXPECT_GE(p->counters().events_published, primed + kEvents);
  EXPECT_EQ(p->counters().events_dropped, 0u);
}

TEST_F(PublisherTest, AFullQueueDropsAndCounts) {
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  PublisherOptions o;
  o.queue_size = 4;
  o.before_batch = [released] { released.wait(); };
  std::unique_ptr<Publisher> p = Make(o);
  // The thread waits in before_batch before it takes anything, so exactly
  // queue_size events fit.
  int accepted = 0;
  for (int i = 0; i < 10; ++i) accepted += p->Publish(Event::AllCleared()) ? 1 : 0;
  EXPECT_EQ(accepted, 4);
  EXPECT_EQ(p->counters().events_queued, 4u);
  EXPECT_EQ(p->counters().events_dropped, 6u);
  release.set_value();
  const auto deadline = Clock::now() + kDeadline;
  while (p->counters().events_published < 4 && Clock::now() < deadline) std::this_thread::yield();
  EXPECT_EQ(p->counters().events_published, 4u);
  EXPECT_EQ(p->counters().events_dropped, 6u);
}

TEST_F(PublisherTest, ReplayFromASequence) {
  PublisherOptions o;
  o.replay = "tcp://127.0.0.1:0";
  std::unique_ptr<Publisher> p = Make(o);
  ASSERT_FALSE(p->replay_endpoint().empty());
  for (int i = 0; i < 5; ++i) PublishOneBatch(*p, 100 + i);
  std::vector<std::pair<int64_t, std::string>> got = Replay(p->replay_endpoint(), 2);
  ASSERT_EQ(got.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(got[i].first, 2 + i);
    EXPECT_EQ(FirstHashes(got[i].second), std::vector<int64_t>{102 + i});
  }
  EXPECT_TRUE(Replay(p->replay_endpoint(), 5).empty());  // nothing newer: only the end marker
  EXPECT_EQ(p->counters().replay_requests, 2u);
  EXPECT_EQ(p->counters().replay_misses, 0u);
}

TEST_F(PublisherTest, ReplayOlderThanTheRingSendsWhatItHasAndCountsAMiss) {
  PublisherOptions o;
  o.replay = "tcp://127.0.0.1:0";
  o.replay_batches = 2;
  std::unique_ptr<Publisher> p = Make(o);
  for (int i = 0; i < 5; ++i) PublishOneBatch(*p, i);
  std::vector<std::pair<int64_t, std::string>> got = Replay(p->replay_endpoint(), 0);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].first, 3);
  EXPECT_EQ(got[1].first, 4);
  EXPECT_EQ(p->counters().replay_misses, 1u);
  EXPECT_EQ(p->counters().replay_requests, 1u);
}

TEST_F(PublisherTest, ReplayRingIsBoundedInBytes) {
  PublisherOptions o;
  o.replay = "tcp://127.0.0.1:0";
  o.replay_bytes = 1;  // less than any batch: the newest is dropped at once
  std::unique_ptr<Publisher> p = Make(o);
  PublishOneBatch(*p, 1);
  EXPECT_TRUE(Replay(p->replay_endpoint(), 0).empty());
  EXPECT_EQ(p->counters().replay_misses, 1u);
}

// A replay from the start of a ring of thousands of batches stopped after
// about 1,000 (ZeroMQ's high-water mark on the ROUTER dropped the rest,
// the end marker included). It is now paced by the peer and arrives whole.
TEST_F(PublisherTest, AReplayOfThousandsOfBatchesArrivesWholeWithItsEndMarker) {
  PublisherOptions o;
  o.replay = "tcp://127.0.0.1:0";
  o.max_batch_events = 1;  // one batch per event
  constexpr int kBatches = 3000;
  std::unique_ptr<Publisher> p = Make(o);
  for (int i = 0; i < kBatches; ++i) p->Publish(Event::Removed(BlockHash::Int64(i), kMediumDram));
  const auto deadline = Clock::now() + kDeadline;
  while (p->counters().batches_published < kBatches && Clock::now() < deadline) std::this_thread::yield();
  ASSERT_EQ(p->counters().batches_published, uint64_t(kBatches));

  Socket dealer(ctx_, ZMQ_DEALER, p->replay_endpoint());
  dealer.Send({"", BigEndian(0)});
  int64_t end = 0;
  std::vector<std::pair<int64_t, std::string>> got = ReadReplay(dealer, &end, 5000);
  ASSERT_EQ(got.size(), size_t(kBatches)) << "the replay stopped early";
  for (int i = 0; i < kBatches; ++i) {
    ASSERT_EQ(got[i].first, i);
    ASSERT_EQ(FirstHashes(got[i].second), std::vector<int64_t>{i});
  }
  EXPECT_EQ(end, -1) << "a complete replay ends with sequence -1";
}

// 20 peers that asked for a replay and never read grew the server by about
// 1 GiB: everything was queued in ZeroMQ at once. Each peer's queue is now
// bounded (replay_peer_bytes) and counted; the replays wait, and a peer that
// starts reading gets the rest.
TEST_F(PublisherTest, ReplayPeersThatDoNotReadHoldABoundedCountedQueue) {
  PublisherOptions o;
  o.replay = "tcp://127.0.0.1:0";
  o.max_batch_events = 1;
  o.replay_peer_bytes = 64 << 10;
  constexpr int kBatches = 3000;
  const std::string big(4000, 'h');  // ~4 KB batches: 12 MB per full replay
  std::unique_ptr<Publisher> p = Make(o);
  for (int i = 0; i < kBatches; ++i) {
    p->Publish(Event::Removed(BlockHash::Bytes(big + std::to_string(i)), kMediumDram));
  }
  auto deadline = Clock::now() + kDeadline;
  while (p->counters().batches_published < kBatches && Clock::now() < deadline) std::this_thread::yield();
  ASSERT_EQ(p->counters().batches_published, uint64_t(kBatches));

  constexpr int kPeers = 20;
  std::vector<std::unique_ptr<Socket>> peers;
  for (int i = 0; i < kPeers; ++i) {
    peers.push_back(std::make_unique<Socket>(ctx_, ZMQ_DEALER, p->replay_endpoint(), /*rcvhwm=*/1));
    peers.back()->Send({"", BigEndian(0)});
  }
  deadline = Clock::now() + kDeadline;
  while (p->counters().replays_active < kPeers && Clock::now() < deadline) std::this_thread::yield();
  ASSERT_EQ(p->counters().replays_active, uint64_t(kPeers));
  // Sampled while the peers stall: never more than each peer's bound (one
  // batch may go past it) queued in all.
  const uint64_t bound = kPeers * (o.replay_peer_bytes + 8192);
  uint64_t most = 0;
  // The replays queue their first batches on the publisher's thread, which a
  // loaded machine may not have run yet: wait for the first bytes queued.
  deadline = Clock::now() + kDeadline;
  while (most == 0 && Clock::now() < deadline) {
    most = p->counters().replay_queued_bytes;
    std::this_thread::yield();
  }
  for (int i = 0; i < 200; ++i) {
    most = std::max(most, p->counters().replay_queued_bytes);
    std::this_thread::yield();
  }
  EXPECT_LE(most, bound);
  EXPECT_GT(most, 0u) << "replay bytes queued are counted";
  EXPECT_EQ(p->counters().replays_active, uint64_t(kPeers)) << "waiting replays are kept, not dropped";
  EXPECT_EQ(p->counters().replays_cut, 0u);

  // One peer starts reading: it gets every batch and the end marker.
  int64_t end = 0;
  std::vector<std::pair<int64_t, std::string>> got = ReadReplay(*peers[0], &end, 5000);
  EXPECT_EQ(got.size(), size_t(kBatches));
  EXPECT_EQ(end, -1);
  EXPECT_LE(p->counters().replay_queued_bytes, bound);
}

// A replay whose peer takes nothing for replay_stall_ms is cut: the end
// marker names the first batch not sent, so the peer knows where its gap is.
TEST_F(PublisherTest, AStalledReplayIsCutWithAnEndMarkerNamingTheFirstBatchNotSent) {
  PublisherOptions o;
  o.replay = "tcp://127.0.0.1:0";
  o.max_batch_events = 1;
  o.replay_peer_bytes = 16 << 10;
  o.replay_stall_ms = 200;
  constexpr int kBatches = 2000;
  const std::string big(4000, 'h');
  std::unique_ptr<Publisher> p = Make(o);
  for (int i = 0; i < kBatches; ++i) {
    p->Publish(Event::Removed(BlockHash::Bytes(big + std::to_string(i)), kMediumDram));
  }
  auto deadline = Clock::now() + kDeadline;
  while (p->counters().batches_published < kBatches && Clock::now() < deadline) std::this_thread::yield();
  Socket peer(ctx_, ZMQ_DEALER, p->replay_endpoint(), /*rcvhwm=*/1);
  peer.Send({"", BigEndian(0)});
  deadline = Clock::now() + kDeadline;
  while ((p->counters().replays_cut == 0 || p->counters().replays_active != 0) && Clock::now() < deadline) {
    std::this_thread::yield();
  }
  ASSERT_EQ(p->counters().replays_cut, 1u);
  EXPECT_EQ(p->counters().replays_active, 0u);
  int64_t end = 0;
  std::vector<std::pair<int64_t, std::string>> got = ReadReplay(peer, &end, 5000);
  ASSERT_FALSE(got.empty());
  ASSERT_LT(got.size(), size_t(kBatches));
  for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i].first, int64_t(i));
  EXPECT_EQ(end, int64_t(got.size())) << "the end marker names the first batch not sent";
}

// A replay request of any size was read and held (512 MiB in one frame). A
// frame over kMaxReplayRequestBytes now disconnects its peer before it is read.
TEST_F(PublisherTest, AnOversizedReplayRequestDisconnectsItsPeerUnread) {
  PublisherOptions o;
  o.replay = "tcp://127.0.0.1:0";
  std::unique_ptr<Publisher> p = Make(o);
  Socket dealer(ctx_, ZMQ_DEALER, p->replay_endpoint());
  ASSERT_EQ(zmq_socket_monitor(dealer.raw(), "inproc://oversized-monitor", ZMQ_EVENT_DISCONNECTED), 0);
  Socket monitor(ctx_, ZMQ_PAIR, "inproc://oversized-monitor");
  dealer.Send({"", std::string(16 << 20, 'x')});
  std::vector<std::string> event = monitor.Receive(20000);
  ASSERT_EQ(event.size(), 2u) << "the peer was not disconnected";
  uint16_t id = 0;
  std::memcpy(&id, event[0].data(), sizeof(id));
  EXPECT_EQ(id, ZMQ_EVENT_DISCONNECTED);
  EXPECT_EQ(p->counters().replay_requests, 0u);
  EXPECT_EQ(p->counters().replay_bad_requests, 0u) << "never read";
  // The socket serves others meanwhile.
  EXPECT_TRUE(Replay(p->replay_endpoint(), 0).empty());
  EXPECT_EQ(p->counters().replay_requests, 1u);
}

// Each malformed request logged a WARN line; a peer sending them in a loop
// filled the log. They are counted, and logged once per 10 s.
TEST_F(PublisherTest, MalformedReplayRequestsAreCountedAndLoggedOncePer10Seconds) {
  std::atomic<int> warnings{0};
  LogTarget target;
  target.level = LogLevel::kWarn;
  target.sink = [&](LogLevel level, std::string_view component, std::string_view message) {
    if (level == LogLevel::kWarn && component == "events" && message.find("replay request") != std::string_view::npos) {
      ++warnings;
    }
  };
  PublisherOptions o;
  o.replay = "tcp://127.0.0.1:0";
  o.log_target = &target;
  std::unique_ptr<Publisher> p = Make(o);
  Socket dealer(ctx_, ZMQ_DEALER, p->replay_endpoint());
  constexpr int kBad = 100;
  for (int i = 0; i < kBad; ++i) dealer.Send({"", "short"});
  const auto deadline = Clock::now() + kDeadline;
  while (p->counters().replay_bad_requests < kBad && Clock::now() < deadline) std::this_thread::yield();
  EXPECT_EQ(p->counters().replay_bad_requests, uint64_t(kBad));
  EXPECT_EQ(warnings.load(), 1);
  EXPECT_EQ(p->counters().replay_requests, 0u);
}

TEST_F(PublisherTest, ATakenAddressFailsNamingIt) {
  std::unique_ptr<Publisher> first = Make({});
  PublisherOptions o;
  o.publish = first->publish_endpoint();
  Result<std::unique_ptr<Publisher>> second = Publisher::Create(o);
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().message().find(first->publish_endpoint()), std::string::npos)
      << second.status().message();
  EXPECT_NE(second.status().message().find("EADDRINUSE"), std::string::npos) << second.status().message();
}

}  // namespace
}  // namespace memkv::events
