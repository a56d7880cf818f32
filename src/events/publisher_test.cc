// The Publisher against real ZeroMQ SUB and DEALER sockets on loopback.
// Waits poll a condition against a deadline; nothing sleeps.
#include "events/publisher.h"

#include <gtest/gtest.h>
#include <msgpack.h>
#include <zmq.h>

#include <chrono>
#include <future>

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
  Socket(void* ctx, int type, const std::string& endpoint) : s_(zmq_socket(ctx, type)) {
    int linger = 0;
    zmq_setsockopt(s_, ZMQ_LINGER, &linger, sizeof(linger));
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

 private:
  void* s_;
};

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
