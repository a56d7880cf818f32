// Connection framing against a scripted peer on a socketpair: the window,
// request order, and tags on later frames.
#include "client/connection.h"

#include <gtest/gtest.h>
#include <linux/sockios.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <thread>

#include "base/checksum.h"
#include "client/ops.h"
#include "io/socket.h"
#include "proto/frame.h"

namespace memkv::client {
namespace {

constexpr Nanos kMs = 1'000'000;

struct Pair {
  std::unique_ptr<Connection> conn;
  UniqueFd peer;
  std::unique_ptr<proto::FrameAuth> peer_auth;  // signs server->client, verifies client->server
};

Pair MakePair(uint32_t max_inflight, ClientCounters* counters) {
  int sv[2];
  EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
  Key32 c2s{}, s2c{};
  c2s.fill(1);
  s2c.fill(2);
  Pair p;
  p.conn = Connection::Adopt(UniqueFd(sv[0]), "peer", proto::FrameAuth::Create(c2s, s2c).value(),
                             max_inflight, counters);
  p.peer = UniqueFd(sv[1]);
  p.peer_auth = proto::FrameAuth::Create(s2c, c2s).value();
  return p;
}

struct ReadFrame {
  uint8_t raw[proto::kHeaderSize];
  proto::FrameHeader header;
  std::vector<uint8_t> meta;
};

Status ReadOne(int fd, ReadFrame* f) {
  const Nanos deadline = MonotonicNanos() + 5000 * kMs;
  MEMKV_RETURN_IF_ERROR(io::RecvAll(fd, f->raw, sizeof(f->raw), deadline));
  MEMKV_RETURN_IF_ERROR(proto::DecodeFields(f->raw, &f->header));
  f->meta.resize(f->header.meta_len);
  if (!f->meta.empty()) MEMKV_RETURN_IF_ERROR(io::RecvAll(fd, f->meta.data(), f->meta.size(), deadline));
  return Status::Ok();
}

// Reads the next request from the client and checks its tag.
bool ReadSigned(Pair& p, ReadFrame* f) {
  if (!ReadOne(p.peer.get(), f).ok()) return false;
  Tag tag;
  std::memcpy(tag.data(), f->raw + proto::kFieldsSize, tag.size());
  return p.peer_auth->VerifyNext(f->raw, f->meta, tag);
}

// A response frame to `request`, tagged, with `payload` and `meta`.
std::vector<uint8_t> EncodeAnswer(proto::FrameAuth& auth, const proto::FrameHeader& request, StatusCode status,
                                  const std::vector<uint8_t>& payload = {}, uint64_t checksum = 0,
                                  std::string_view meta = {}) {
  proto::FrameHeader h;
  h.opcode = request.opcode;
  h.flags = proto::kFlagResponse;
  h.request_id = request.request_id;
  h.status = status;
  h.meta_len = static_cast<uint32_t>(meta.size());
  h.payload_len = payload.size();
  h.payload_checksum = checksum;
  std::vector<uint8_t> frame(proto::kHeaderSize);
  proto::EncodeFields(h, frame.data());
  const auto* meta_bytes = reinterpret_cast<const uint8_t*>(meta.data());
  Tag tag = auth.SignNext(frame.data(), {meta_bytes, meta.size()});
  std::memcpy(frame.data() + proto::kFieldsSize, tag.data(), tag.size());
  frame.insert(frame.end(), meta_bytes, meta_bytes + meta.size());
  frame.insert(frame.end(), payload.begin(), payload.end());
  return frame;
}

Status SendBytes(int fd, const uint8_t* data, size_t size) {
  iovec v{const_cast<uint8_t*>(data), size};
  return io::SendAll(fd, std::span<iovec>(&v, 1), MonotonicNanos() + 5000 * kMs);
}

Status Answer(int fd, proto::FrameAuth& auth, const proto::FrameHeader& request, StatusCode status,
              const std::vector<uint8_t>& payload = {}, uint64_t checksum = 0) {
  const std::vector<uint8_t> frame = EncodeAnswer(auth, request, status, payload, checksum);
  return SendBytes(fd, frame.data(), frame.size());
}

TEST(ConnectionTest, NeverPutsMoreThanMaxInflightRequestsOnTheWire) {
  ClientCounters counters;
  Pair p = MakePair(3, &counters);
  std::vector<std::string> keys;
  for (int i = 0; i < 10; ++i) keys.push_back("key-" + std::to_string(i));
  std::vector<std::unique_ptr<SingleExchange>> xs;
  for (const std::string& key : keys) {
    xs.push_back(std::make_unique<SingleExchange>(proto::Opcode::kExists, key, "peer"));
    p.conn->Enqueue(xs.back().get());
  }
  Connection* c = p.conn.get();
  const Nanos start = MonotonicNanos();
  DriveConnections(std::span<Connection* const>(&c, 1), start + 100 * kMs);
  EXPECT_LT(MonotonicNanos() - start, 1000 * kMs);

  int frames = 0;
  ReadFrame f;
  pollfd pfd{p.peer.get(), POLLIN, 0};
  while (::poll(&pfd, 1, 0) > 0 && (pfd.revents & POLLIN) != 0 && ReadOne(p.peer.get(), &f).ok()) {
    EXPECT_TRUE(p.peer_auth->VerifyNext(f.raw, f.meta, *reinterpret_cast<Tag*>(f.raw + proto::kFieldsSize)));
    ++frames;
  }
  EXPECT_EQ(frames, 3);
  for (auto& x : xs) EXPECT_EQ(x->status().code(), StatusCode::kDeadlineExceeded) << x->status().ToString();
  EXPECT_FALSE(c->Reusable());
  EXPECT_TRUE(c->Lost());
  EXPECT_EQ(counters.timeouts.load(), 1u);
}

TEST(ConnectionTest, PipelinesManyRequestsThroughASmallWindow) {
  ClientCounters counters;
  Pair p = MakePair(4, &counters);
  constexpr int kRequests = 300;
  int max_unanswered = 0;
  std::thread peer([&] {
    std::vector<proto::FrameHeader> unanswered;
    int answered = 0;
    while (answered < kRequests) {
      pollfd pfd{p.peer.get(), POLLIN, 0};
      bool readable = ::poll(&pfd, 1, unanswered.empty() ? 5000 : 0) > 0;
      if (readable) {
        ReadFrame f;
        if (!ReadSigned(p, &f)) return;
        unanswered.push_back(f.header);
        max_unanswered = std::max<int>(max_unanswered, static_cast<int>(unanswered.size()));
        continue;
      }
      if (unanswered.empty()) return;
      const proto::FrameHeader h = unanswered.front();
      unanswered.erase(unanswered.begin());
      StatusCode status = h.request_id % 2 == 0 ? StatusCode::kOk : StatusCode::kNotFound;
      if (!Answer(p.peer.get(), *p.peer_auth, h, status).ok()) return;
      ++answered;
    }
  });
  std::vector<std::string> keys;
  for (int i = 0; i < kRequests; ++i) keys.push_back("key-" + std::to_string(i));
  std::vector<std::unique_ptr<SingleExchange>> xs;
  for (const std::string& key : keys) {
    xs.push_back(std::make_unique<SingleExchange>(proto::Opcode::kExists, key, "peer"));
    p.conn->Enqueue(xs.back().get());
  }
  Connection* c = p.conn.get();
  DriveConnections(std::span<Connection* const>(&c, 1), MonotonicNanos() + 10'000 * kMs);
  peer.join();
  for (int i = 0; i < kRequests; ++i) {
    // Request ids start at 1: odd ids were answered NotFound.
    StatusCode want = (i + 1) % 2 == 0 ? StatusCode::kOk : StatusCode::kNotFound;
    EXPECT_EQ(xs[i]->status().code(), want) << i << ": " << xs[i]->status().ToString();
  }
  EXPECT_LE(max_unanswered, 4);
  EXPECT_TRUE(c->Reusable());
}

// The peer reads one request, then writes its whole response before reading
// the next, like a server under backpressure. A client that finished writing
// before it started reading would deadlock: it would block writing a big put
// while the peer blocks writing a big get's value.
TEST(ConnectionTest, BigPutsAndGetsInOnePipelineDoNotDeadlock) {
  ClientCounters counters;
  Pair p = MakePair(16, &counters);
  constexpr int kPairs = 6;
  constexpr size_t kValueBytes = 4 << 20;
  std::vector<uint8_t> value(kValueBytes);
  for (size_t i = 0; i < value.size(); ++i) value[i] = static_cast<uint8_t>(i * 13);
  const uint64_t sum = Checksum(value.data(), value.size());
  std::thread peer([&] {
    std::vector<uint8_t> sink(kValueBytes);
    for (int i = 0; i < 2 * kPairs; ++i) {
      ReadFrame f;
      if (!ReadSigned(p, &f)) return;
      if (f.header.payload_len > 0 &&
          !io::RecvAll(p.peer.get(), sink.data(), f.header.payload_len, MonotonicNanos() + 5000 * kMs).ok()) {
        return;
      }
      bool get = f.header.opcode == static_cast<uint8_t>(proto::Opcode::kGet);
      if (!Answer(p.peer.get(), *p.peer_auth, f.header, StatusCode::kOk, get ? value : std::vector<uint8_t>{},
                  sum)
               .ok()) {
        return;
      }
    }
  });
  std::vector<std::vector<uint8_t>> buffers(kPairs, std::vector<uint8_t>(kValueBytes));
  std::vector<std::unique_ptr<SingleExchange>> xs;
  for (int i = 0; i < kPairs; ++i) {
    xs.push_back(std::make_unique<SingleExchange>(proto::Opcode::kPut, "k", "peer", value));
    xs.push_back(std::make_unique<SingleExchange>(proto::Opcode::kGet, "k", "peer", std::span<const uint8_t>{},
                                                  std::span<uint8_t>(buffers[i])));
  }
  for (auto& x : xs) p.conn->Enqueue(x.get());
  Connection* c = p.conn.get();
  DriveConnections(std::span<Connection* const>(&c, 1), MonotonicNanos() + 10'000 * kMs);
  peer.join();
  for (auto& x : xs) EXPECT_TRUE(x->status().ok()) << x->status().ToString();
  for (auto& b : buffers) EXPECT_TRUE(b == value);
  EXPECT_TRUE(c->Reusable());
}

// The client reads ahead: one read may hold the end of one response, several
// whole ones and the start of the next. Responses of every size, written as
// one stream cut at awkward places, each land whole in their own buffers; one
// whose bytes do not match its checksum is a miss and the others are not
// disturbed.
TEST(ConnectionTest, ResponsesReadAheadAcrossAnyCutLandInTheirOwnBuffers) {
  ClientCounters counters;
  Pair p = MakePair(64, &counters);
  const std::vector<size_t> sizes = {0, 1, 100, 4095, 4096, 4097, 8192, 9000, 70000, 3, 300000, 17};
  constexpr size_t kCorrupt = 4;  // its checksum is of other bytes
  std::vector<std::vector<uint8_t>> values;
  for (size_t i = 0; i < sizes.size(); ++i) {
    std::vector<uint8_t> v(sizes[i]);
    for (size_t j = 0; j < v.size(); ++j) v[j] = static_cast<uint8_t>(j * 7 + i);
    values.push_back(std::move(v));
  }
  std::thread peer([&] {
    // Every response into one stream, then the stream to the client in
    // pieces of 1, 7, 65, 4000, 9001, ... bytes.
    std::vector<uint8_t> stream;
    for (size_t i = 0; i < sizes.size(); ++i) {
      ReadFrame f;
      if (!ReadSigned(p, &f)) return;
      const uint64_t sum = Checksum(values[i].data(), values[i].size()) + (i == kCorrupt ? 1 : 0);
      const std::vector<uint8_t> frame = EncodeAnswer(*p.peer_auth, f.header, StatusCode::kOk, values[i], sum);
      stream.insert(stream.end(), frame.begin(), frame.end());
    }
    const size_t cuts[] = {1, 7, 65, 4000, 9001, 72, 130000};
    size_t at = 0;
    for (size_t k = 0; at < stream.size(); ++k) {
      const size_t n = std::min(cuts[k % std::size(cuts)], stream.size() - at);
      if (!SendBytes(p.peer.get(), stream.data() + at, n).ok()) return;
      at += n;
    }
  });
  std::vector<std::vector<uint8_t>> buffers;
  for (size_t size : sizes) buffers.emplace_back(size + 10, 0xee);
  std::vector<std::unique_ptr<SingleExchange>> xs;
  for (size_t i = 0; i < sizes.size(); ++i) {
    xs.push_back(std::make_unique<SingleExchange>(proto::Opcode::kGet, "k", "peer", std::span<const uint8_t>{},
                                                  std::span<uint8_t>(buffers[i])));
    p.conn->Enqueue(xs.back().get());
  }
  Connection* c = p.conn.get();
  DriveConnections(std::span<Connection* const>(&c, 1), MonotonicNanos() + 10'000 * kMs);
  peer.join();
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (i == kCorrupt) {
      EXPECT_EQ(xs[i]->status().code(), StatusCode::kNotFound) << xs[i]->status().ToString();
      continue;
    }
    ASSERT_TRUE(xs[i]->status().ok()) << i << ": " << xs[i]->status().ToString();
    EXPECT_EQ(xs[i]->value_size(), sizes[i]);
    EXPECT_TRUE(std::equal(values[i].begin(), values[i].end(), buffers[i].begin())) << i;
    EXPECT_EQ(buffers[i][sizes[i]], 0xee) << "nothing past the value is written, " << i;
  }
  EXPECT_TRUE(c->Reusable());
}

// A lone connection waits for its answer in a blocking read cut into
// slices (Connection::kWaitSliceNs). An answer whose payload stops for
// longer than a slice, and a read that comes back empty, must neither end
// the wait early nor lose or misplace a byte.
TEST(ConnectionTest, AnAnswerThatStallsForSeveralWaitSlicesArrivesWhole) {
  ClientCounters counters;
  Pair p = MakePair(8, &counters);
  std::vector<uint8_t> value(300000);
  for (size_t j = 0; j < value.size(); ++j) value[j] = static_cast<uint8_t>(j * 13);
  std::thread peer([&] {
    ReadFrame f;
    if (!ReadSigned(p, &f)) return;
    const std::vector<uint8_t> frame =
        EncodeAnswer(*p.peer_auth, f.header, StatusCode::kOk, value, Checksum(value.data(), value.size()));
    const size_t half = proto::kHeaderSize + value.size() / 2;
    if (!SendBytes(p.peer.get(), frame.data(), half).ok()) return;
    // The stall under test: two and a half wait slices with nothing sent.
    pollfd none{-1, 0, 0};
    ::poll(&none, 1, static_cast<int>(Connection::kWaitSliceNs * 5 / 2 / kMs));
    (void)SendBytes(p.peer.get(), frame.data() + half, frame.size() - half);
  });
  std::vector<uint8_t> buffer(value.size(), 0xee);
  SingleExchange x(proto::Opcode::kGet, "k", "peer", std::span<const uint8_t>{}, std::span<uint8_t>(buffer));
  p.conn->Enqueue(&x);
  Connection* c = p.conn.get();
  DriveConnections(std::span<Connection* const>(&c, 1), MonotonicNanos() + 10'000 * kMs);
  peer.join();
  ASSERT_TRUE(x.status().ok()) << x.status().ToString();
  EXPECT_EQ(x.value_size(), value.size());
  EXPECT_EQ(buffer, value);
  EXPECT_TRUE(c->Reusable());
}

// Waits until the client has read everything sent to it on `fd` (the
// socket's send queue is empty), so that the next bytes reach it in a read
// of their own.
bool WaitUntilRead(int fd) {
  const Nanos deadline = MonotonicNanos() + 5000 * kMs;
  for (;;) {
    int queued = 0;
    if (::ioctl(fd, SIOCOUTQ, &queued) != 0) return false;
    if (queued == 0) return true;
    if (MonotonicNanos() > deadline) return false;
    pollfd none{-1, 0, 0};
    ::poll(&none, 1, 1);
  }
}

// A lone get reads its answer's header and payload in one read, the payload
// straight into the caller's buffer (Connection::InPlaceDestination). Every
// kind of answer must come out as the read-ahead path gives it, whatever the
// buffer's size and wherever the stream is cut.
TEST(ConnectionTest, ALoneGetsAnswerOfEveryKindLandsInPlace) {
  struct Case {
    const char* what;
    StatusCode status;
    size_t value;   // payload bytes of the answer
    size_t buffer;  // the caller's buffer
    std::string meta;
    std::vector<size_t> cuts;  // the answer is sent in pieces ending here
    bool corrupt;
    StatusCode want;
  };
  const std::vector<Case> cases = {
      {"a value smaller than the buffer", StatusCode::kOk, 5000, 8192, "", {}, false, StatusCode::kOk},
      {"a value that fills the buffer", StatusCode::kOk, 4096, 4096, "", {}, false, StatusCode::kOk},
      {"an empty value", StatusCode::kOk, 0, 64, "", {}, false, StatusCode::kOk},
      {"a header cut in two", StatusCode::kOk, 300000, 300000, "", {30, 1072}, false, StatusCode::kOk},
      {"a header cut a byte short", StatusCode::kOk, 100, 200, "", {71}, false, StatusCode::kOk},
      {"a miss with a reason", StatusCode::kNotFound, 0, 64, "evicted", {}, false, StatusCode::kNotFound},
      {"an error whose text is longer than the buffer", StatusCode::kInternal, 0, 16, std::string(300, 'x'),
       {}, false, StatusCode::kInternal},
      {"an error whose text is cut", StatusCode::kInternal, 0, 4096, std::string(300, 'y'), {100}, false,
       StatusCode::kInternal},
      {"a value too large for the buffer", StatusCode::kOk, 10000, 4096, "", {}, false, StatusCode::kTooLarge},
      {"a value that fails its checksum", StatusCode::kOk, 5000, 8192, "", {}, true, StatusCode::kNotFound},
  };
  ClientCounters counters;
  Pair p = MakePair(8, &counters);
  Connection* c = p.conn.get();
  for (const Case& k : cases) {
    SCOPED_TRACE(k.what);
    std::vector<uint8_t> value(k.value);
    for (size_t j = 0; j < value.size(); ++j) value[j] = static_cast<uint8_t>(j * 11 + 5);
    std::thread peer([&] {
      ReadFrame f;
      if (!ReadSigned(p, &f)) return;
      const uint64_t sum = Checksum(value.data(), value.size()) + (k.corrupt ? 1 : 0);
      const std::vector<uint8_t> frame = EncodeAnswer(*p.peer_auth, f.header, k.status, value, sum, k.meta);
      size_t at = 0;
      for (size_t cut : k.cuts) {
        if (!SendBytes(p.peer.get(), frame.data() + at, cut - at).ok() || !WaitUntilRead(p.peer.get())) return;
        at = cut;
      }
      (void)SendBytes(p.peer.get(), frame.data() + at, frame.size() - at);
    });
    std::vector<uint8_t> buffer(k.buffer + 1, 0xee);  // one byte past the buffer, never written
    SingleExchange x(proto::Opcode::kGet, "k", "peer", std::span<const uint8_t>{},
                     std::span<uint8_t>(buffer.data(), k.buffer));
    p.conn->Enqueue(&x);
    DriveConnections(std::span<Connection* const>(&c, 1), MonotonicNanos() + 10'000 * kMs);
    peer.join();
    EXPECT_EQ(x.status().code(), k.want) << x.status().ToString();
    if (k.want == StatusCode::kOk) {
      EXPECT_EQ(x.value_size(), k.value);
      EXPECT_TRUE(std::equal(value.begin(), value.end(), buffer.begin()));
    }
    if (!k.meta.empty()) {
      EXPECT_NE(x.status().message().find(k.meta), std::string::npos) << x.status().ToString();
    }
    EXPECT_EQ(buffer[k.buffer], 0xee);
    ASSERT_TRUE(c->Reusable());
  }
}

// Bytes after a lone get's answer were never asked for: the stream is out
// of step and the connection must not be used again.
TEST(ConnectionTest, BytesPastALoneGetsAnswerMakeTheConnectionUnusable) {
  for (size_t extra : {size_t{10}, proto::kHeaderSize + 10}) {
    ClientCounters counters;
    Pair p = MakePair(8, &counters);
    std::vector<uint8_t> value(100, 0x42);
    std::thread peer([&] {
      ReadFrame f;
      if (!ReadOne(p.peer.get(), &f).ok()) return;
      std::vector<uint8_t> frame =
          EncodeAnswer(*p.peer_auth, f.header, StatusCode::kOk, value, Checksum(value.data(), value.size()));
      frame.insert(frame.end(), extra, 0x99);
      (void)SendBytes(p.peer.get(), frame.data(), frame.size());
    });
    std::vector<uint8_t> buffer(4096);
    SingleExchange x(proto::Opcode::kGet, "k", "peer", std::span<const uint8_t>{}, std::span<uint8_t>(buffer));
    p.conn->Enqueue(&x);
    Connection* c = p.conn.get();
    DriveConnections(std::span<Connection* const>(&c, 1), MonotonicNanos() + 10'000 * kMs);
    peer.join();
    EXPECT_FALSE(c->Reusable()) << extra << " bytes past the answer";
  }
}

TEST(ConnectionTest, ResponseTaggedWithAnotherKeyIsAuthFailed) {
  ClientCounters counters;
  Pair p = MakePair(8, &counters);
  std::thread peer([&] {
    ReadFrame f;
    if (!ReadOne(p.peer.get(), &f).ok()) return;
    Key32 other{};
    other.fill(9);
    auto wrong = proto::FrameAuth::Create(other, other).value();
    (void)Answer(p.peer.get(), *wrong, f.header, StatusCode::kOk);
  });
  SingleExchange x(proto::Opcode::kExists, "k", "peer");
  p.conn->Enqueue(&x);
  Connection* c = p.conn.get();
  DriveConnections(std::span<Connection* const>(&c, 1), MonotonicNanos() + 5000 * kMs);
  peer.join();
  EXPECT_EQ(x.status().code(), StatusCode::kAuthFailed) << x.status().ToString();
  EXPECT_FALSE(c->Reusable());
  EXPECT_FALSE(c->Lost());
}

// Regression: a call that reached a connection with its deadline already
// spent (waiting for another server) sent its request anyway, then timed it
// out, and the connection counted as lost: a live server was marked down.
TEST(ConnectionTest, PastDeadlineSendsNothingAndLeavesTheConnectionUsable) {
  ClientCounters counters;
  Pair p = MakePair(8, &counters);
  SingleExchange x(proto::Opcode::kExists, "k", "peer");
  p.conn->Enqueue(&x);
  Connection* c = p.conn.get();
  DriveConnections(std::span<Connection* const>(&c, 1), MonotonicNanos() - 1);

  EXPECT_EQ(x.status().code(), StatusCode::kDeadlineExceeded) << x.status().ToString();
  EXPECT_NE(x.status().message().find("not sent"), std::string::npos) << x.status().ToString();
  EXPECT_TRUE(c->Reusable());
  EXPECT_FALSE(c->Lost());
  EXPECT_EQ(counters.bytes_sent.load(), 0u);
  pollfd pfd{p.peer.get(), POLLIN, 0};
  EXPECT_EQ(::poll(&pfd, 1, 0), 0) << "the peer was sent something";

  // Still in sync: the next call on it works.
  SingleExchange next(proto::Opcode::kExists, "k", "peer");
  c->Enqueue(&next);
  std::thread peer([&] {
    ReadFrame f;
    ASSERT_TRUE(ReadOne(p.peer.get(), &f).ok());
    EXPECT_TRUE(p.peer_auth->VerifyNext(f.raw, f.meta, *reinterpret_cast<Tag*>(f.raw + proto::kFieldsSize)));
    ASSERT_TRUE(Answer(p.peer.get(), *p.peer_auth, f.header, StatusCode::kOk).ok());
  });
  DriveConnections(std::span<Connection* const>(&c, 1), MonotonicNanos() + 5000 * kMs);
  peer.join();
  EXPECT_TRUE(next.status().ok()) << next.status().ToString();
  EXPECT_TRUE(c->Reusable());
}

// The other side of that rule: a request the server was sent and did not
// answer is the server's failure.
TEST(ConnectionTest, RequestSentAndUnansweredByTheDeadlineIsLost) {
  ClientCounters counters;
  Pair p = MakePair(8, &counters);
  SingleExchange x(proto::Opcode::kExists, "k", "peer");
  p.conn->Enqueue(&x);
  Connection* c = p.conn.get();
  DriveConnections(std::span<Connection* const>(&c, 1), MonotonicNanos() + 50 * kMs);
  EXPECT_EQ(x.status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_NE(x.status().message().find("did not answer 1 outstanding"), std::string::npos)
      << x.status().ToString();
  EXPECT_FALSE(c->Reusable());
  EXPECT_TRUE(c->Lost());
  EXPECT_EQ(counters.timeouts.load(), 1u);
}

// Regression: a batch held every connection until its slowest server was
// done. on_done reports each connection once, as soon as it has finished,
// while the loop goes on for the others.
TEST(ConnectionTest, OnDoneReportsEachConnectionOnceAsSoonAsItFinishes) {
  ClientCounters counters;
  Pair fast = MakePair(8, &counters);
  Pair silent = MakePair(8, &counters);
  SingleExchange answered(proto::Opcode::kExists, "a", "fast");
  SingleExchange unanswered(proto::Opcode::kExists, "b", "silent");
  fast.conn->Enqueue(&answered);
  silent.conn->Enqueue(&unanswered);
  std::thread peer([&] {
    ReadFrame f;
    ASSERT_TRUE(ReadOne(fast.peer.get(), &f).ok());
    EXPECT_TRUE(fast.peer_auth->VerifyNext(f.raw, f.meta, *reinterpret_cast<Tag*>(f.raw + proto::kFieldsSize)));
    ASSERT_TRUE(Answer(fast.peer.get(), *fast.peer_auth, f.header, StatusCode::kOk).ok());
  });
  Connection* conns[] = {fast.conn.get(), silent.conn.get()};
  const Nanos start = MonotonicNanos();
  const Nanos deadline = start + 300 * kMs;
  std::vector<std::pair<size_t, Nanos>> done;
  DriveConnections(conns, deadline, [&](size_t i) {
    done.emplace_back(i, MonotonicNanos());
    if (i == 0) {
      // Done means done: its exchange has its outcome and it can go back.
      EXPECT_TRUE(answered.status().ok()) << answered.status().ToString();
      EXPECT_TRUE(conns[0]->Reusable());
    }
  });
  peer.join();
  ASSERT_EQ(done.size(), 2u);
  EXPECT_EQ(done[0].first, 0u);
  EXPECT_LT(done[0].second, deadline - 100 * kMs) << "the answered connection waited for the silent one";
  EXPECT_EQ(done[1].first, 1u);
  EXPECT_GE(done[1].second, deadline);
  EXPECT_EQ(unanswered.status().code(), StatusCode::kDeadlineExceeded);
}

// An exchange that records what became of it (the connection owns it once
// queued detached).
class Recorded final : public Exchange {
 public:
  struct Log {
    int answers = 0;
    int failures = 0;
    bool deleted = false;
  };
  explicit Recorded(Log* log) : log_(log) {}
  ~Recorded() override { log_->deleted = true; }
  RequestFrame BuildRequest() override {
    RequestFrame frame;
    frame.opcode = proto::Opcode::kExists;
    frame.meta = "released";
    return frame;
  }
  Status OnResponse(const proto::FrameHeader&, std::span<const uint8_t>, std::vector<PayloadSegment>*) override {
    ++log_->answers;
    return Status::Ok();
  }
  void OnSegment(const PayloadSegment&, bool) override {}
  void OnFailure(const Status&) override { ++log_->failures; }

 private:
  Log* log_;
};

// Queues a Recorded exchange detached on `p`, drives the connection (a
// deadline far enough that waiting for the answer would show), and reads the
// request at the peer.
ReadFrame SendDetached(Pair& p, Recorded::Log* log, Nanos wait = 5000 * kMs) {
  p.conn->EnqueueDetached(std::make_unique<Recorded>(log));
  Connection* c = p.conn.get();
  DriveConnections(std::span<Connection* const>(&c, 1), MonotonicNanos() + wait);
  ReadFrame released;
  EXPECT_TRUE(ReadSigned(p, &released));
  return released;
}

// A call after a detached request: the peer answers the detached request,
// then the call's Exists. Returns the call's status.
Status AnswerDetachedThenCall(Pair& p, const ReadFrame& released) {
  SingleExchange next(proto::Opcode::kExists, "k", "peer");
  Connection* c = p.conn.get();
  c->Enqueue(&next);
  std::thread peer([&] {
    ASSERT_TRUE(Answer(p.peer.get(), *p.peer_auth, released.header, StatusCode::kOk).ok());
    ReadFrame f;
    ASSERT_TRUE(ReadSigned(p, &f));
    ASSERT_TRUE(Answer(p.peer.get(), *p.peer_auth, f.header, StatusCode::kOk).ok());
  });
  DriveConnections(std::span<Connection* const>(&c, 1), MonotonicNanos() + 5000 * kMs);
  peer.join();
  return next.status();
}

// A detached request (an RDMA get's release) is sent, but nobody waits for
// its answer: the call returns with the connection reusable, and the answer
// is read before the next call's.
TEST(ConnectionTest, ADetachedRequestIsSentButItsAnswerNotWaitedFor) {
  ClientCounters counters;
  Pair p = MakePair(8, &counters);
  Recorded::Log log;
  // Nobody answers yet: waiting for the answer would run into this deadline
  // and fail the connection.
  const ReadFrame released = SendDetached(p, &log, 10'000 * kMs);
  Connection* c = p.conn.get();
  EXPECT_FALSE(c->HasWork());
  EXPECT_TRUE(c->Reusable());
  EXPECT_FALSE(c->IsStale()) << "an answer on its way is no sign of a closed connection";
  EXPECT_EQ(std::string(released.meta.begin(), released.meta.end()), "released");
  EXPECT_EQ(log.answers, 0);

  // The next call: the peer answers the detached request, then the call's.
  const Status next = AnswerDetachedThenCall(p, released);
  EXPECT_TRUE(next.ok()) << next.ToString();
  EXPECT_EQ(log.answers, 1);
  EXPECT_TRUE(log.deleted);
  EXPECT_TRUE(c->Reusable());
}

// A call whose deadline passed before it was sent, on a connection whose
// detached request is still unanswered: the server is not blamed for the
// detached answer, and the connection stays in sync for the next call.
TEST(ConnectionTest, ALateCallDoesNotBlameTheServerForADetachedAnswer) {
  ClientCounters counters;
  Pair p = MakePair(8, &counters);
  Recorded::Log log;
  const ReadFrame released = SendDetached(p, &log);
  Connection* c = p.conn.get();

  SingleExchange late(proto::Opcode::kExists, "k", "peer");
  c->Enqueue(&late);
  DriveConnections(std::span<Connection* const>(&c, 1), MonotonicNanos() - 1);
  EXPECT_EQ(late.status().code(), StatusCode::kDeadlineExceeded) << late.status().ToString();
  EXPECT_NE(late.status().message().find("not sent"), std::string::npos) << late.status().ToString();
  EXPECT_FALSE(c->Lost());
  EXPECT_EQ(counters.timeouts.load(), 0u);
  EXPECT_TRUE(c->Reusable());

  const Status next = AnswerDetachedThenCall(p, released);
  EXPECT_TRUE(next.ok()) << next.ToString();
  EXPECT_EQ(log.answers, 1);
}

// An idle connection's staleness check reads the detached answers that have
// arrived, and still tells a closed connection from a live one.
TEST(ConnectionTest, TheStalenessCheckReadsDetachedAnswersFirst) {
  for (const bool close_after : {false, true}) {
    ClientCounters counters;
    Pair p = MakePair(8, &counters);
    Recorded::Log log;
    const ReadFrame released = SendDetached(p, &log);
    Connection* c = p.conn.get();
    ASSERT_TRUE(Answer(p.peer.get(), *p.peer_auth, released.header, StatusCode::kOk).ok());
    if (close_after) p.peer.Reset();
    // The answer (and the hang-up) crossed a socketpair: they are there.
    EXPECT_EQ(c->IsStale(), close_after);
    EXPECT_EQ(log.answers, 1);
    EXPECT_TRUE(log.deleted);
  }
}

// A connection dropped with detached answers outstanding frees their exchanges.
TEST(ConnectionTest, ClosingWithDetachedRequestsOutstandingFreesThem) {
  ClientCounters counters;
  Pair p = MakePair(8, &counters);
  Recorded::Log sent, queued;
  SendDetached(p, &sent);
  p.conn->EnqueueDetached(std::make_unique<Recorded>(&queued));
  p.conn.reset();
  EXPECT_TRUE(sent.deleted);
  EXPECT_TRUE(queued.deleted);
  EXPECT_EQ(sent.answers + queued.answers, 0);
}

}  // namespace
}  // namespace memkv::client
