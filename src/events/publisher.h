// Publisher: sends the server's block events to cache-aware routers on a
// ZeroMQ PUB socket, in the wire format of vLLM's KV-events publisher
// (docs/events.md), and serves missed batches again on an optional ROUTER
// socket.
//
// Publish queues an event and returns at once: it takes a short lock and
// never waits on the network. A full queue drops the event (counted in
// dropped). The Publisher's own thread takes queued events, up to
// max_batch_events at a time and after waiting batch_window_ms for more,
// encodes them as one batch with the next sequence number (from 0), sends
// [topic, sequence as 8 bytes big-endian, payload] on the PUB socket and keeps
// [sequence, payload] in a replay ring bounded both in batches and in bytes.
//
// Replay: a request (the start sequence as 8 bytes big-endian) is answered
// with every kept batch from that sequence up to the newest one sent when the
// request came, then the end marker (sequence -1, empty payload). The answer
// is paced by the peer: at most replay_peer_bytes of its payloads are queued
// in ZeroMQ at once (counted until libzmq has written them to the socket),
// and the rest is sent as the peer drains, so a peer that never reads costs
// a bounded amount of memory and a long replay is never cut by a high-water
// mark. A batch that left the ring while its peer was slow is skipped: the
// jump in the sequence numbers is the gap. A replay cut short (no progress
// for replay_stall_ms, or more than replay_peers replays at once) ends with
// an end marker whose sequence is the first batch not sent (still an empty
// payload, so subscribers written for vLLM see an end). Requests are at most
// kMaxReplayRequestBytes a frame (larger ones disconnect the peer before they
// are read); malformed ones are counted and logged once per 10 s.
//
// Ownership and threads: Create binds both sockets (a taken address fails it,
// naming the address and errno) and starts the thread; the destructor sends
// what is queued, then stops the thread and closes the sockets. Publish and
// counters may be called from any thread.
#ifndef MEMKV_EVENTS_PUBLISHER_H_
#define MEMKV_EVENTS_PUBLISHER_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "base/log.h"
#include "base/mutex.h"
#include "base/unique_fd.h"
#include "events/encoder.h"
#include "events/event.h"
#include "memkv/status.h"

namespace memkv::events {

struct PublisherOptions {
  // "tcp://HOST:PORT"; port 0 binds any free port (publish_endpoint() says which).
  std::string publish;
  std::string replay;            // "tcp://HOST:PORT", or empty: no replay socket
  std::string topic;             // the first frame of every message; empty like vLLM's default
  size_t queue_size = 100000;    // events waiting for the thread; more are dropped
  size_t replay_batches = 10000; // batches kept for replay ...
  size_t replay_bytes = 64 << 20;  // ... and their payload bytes at most
  size_t max_batch_events = 512;
  uint32_t batch_window_ms = 2;
  Encoding encoding = Encoding::kMap;
  // Per replay peer: payload bytes queued in ZeroMQ at once (one batch goes
  // even when it alone is larger).
  size_t replay_peer_bytes = 1 << 20;
  size_t replay_peers = 32;          // replays in progress at once; more are refused
  uint32_t replay_stall_ms = 30000;  // a replay that sends nothing for this long is cut
  // Where the Publisher thread's log lines go; null: the process-wide logging.
  const LogTarget* log_target = nullptr;
  // Called on the Publisher's thread before it takes each batch (tests:
  // holds the thread so the queue fills).
  std::function<void()> before_batch;
};

// Monotonic counts since Create (docs/metrics.md, memkv_events_*).
struct PublisherCounters {
  uint64_t events_queued = 0;     // accepted by Publish (sent, or waiting to be)
  uint64_t events_published = 0;
  uint64_t batches_published = 0;
  uint64_t events_dropped = 0;    // the queue was full
  uint64_t replay_requests = 0;
  uint64_t replay_misses = 0;     // asked for a sequence older than the ring holds, or fell behind it
  uint64_t replay_bad_requests = 0;  // malformed replay requests (not answered)
  uint64_t replays_cut = 0;       // ended early (stalled or refused): the end marker names the first unsent batch
  uint64_t replays_active = 0;    // gauge: replays in progress
  uint64_t replay_queued_bytes = 0;  // gauge: replay payload bytes queued in ZeroMQ, all peers
};

// The largest replay request frame read; a peer sending more is disconnected.
inline constexpr int64_t kMaxReplayRequestBytes = 64;

class Publisher {
 public:
  static Result<std::unique_ptr<Publisher>> Create(PublisherOptions options);
  ~Publisher();
  Publisher(const Publisher&) = delete;
  Publisher& operator=(const Publisher&) = delete;

  // Queues `event`; false when the queue was full and it was dropped.
  bool Publish(Event event);
  PublisherCounters counters() const;

  // The bound endpoints, "tcp://HOST:PORT" with the port the bound one.
  const std::string& publish_endpoint() const { return publish_endpoint_; }
  const std::string& replay_endpoint() const { return replay_endpoint_; }  // empty: none

 private:
  explicit Publisher(PublisherOptions options) : options_(std::move(options)) {}
  Status Bind();
  void Loop();
  void WaitForEvents();
  std::vector<Event> TakeBatch();
  void SendBatch(std::vector<Event> batch);
  void ServeReplay();
  // Sends what each replay in progress may send now; drops finished ones.
  void PumpReplays();
  // Milliseconds until the first replay stalls (for zmq_poll), or -1.
  long ReplayPollTimeoutMs() const;
  void Wake();

  struct ReplayPeer;
  struct QueuedPayload;
  enum class Sent { kOk, kFull, kGone };
  Sent SendReplayBatch(ReplayPeer& peer, const std::shared_ptr<const std::string>& payload, uint64_t seq,
                       const std::shared_ptr<ReplayPeer>& owner);
  Sent SendReplayEnd(const std::string& id, uint64_t seq);
  // True when the replay is over (sent whole, cut, or the peer is gone).
  bool PumpReplay(const std::shared_ptr<ReplayPeer>& peer, Nanos now);
  static void FreeQueuedPayload(void* data, void* hint);

  PublisherOptions options_;
  void* context_ = nullptr;  // zmq context; sockets below are used only by thread_
  void* pub_ = nullptr;
  void* router_ = nullptr;   // null: no replay
  UniqueFd wake_;            // eventfd: the queue became non-empty, or stop
  std::string publish_endpoint_;
  std::string replay_endpoint_;

  Mutex mu_;
  std::deque<Event> queue_ MEMKV_GUARDED_BY(mu_);
  bool stopping_ MEMKV_GUARDED_BY(mu_) = false;

  // Only thread_ touches these.
  uint64_t next_seq_ = 0;
  // Payloads are shared with the replay messages queued in ZeroMQ, which
  // keep a batch alive after the ring lets it go.
  std::deque<std::pair<uint64_t, std::shared_ptr<const std::string>>> ring_;
  size_t ring_bytes_ = 0;
  std::map<std::string, std::shared_ptr<ReplayPeer>> replays_;  // by peer identity
  LogRateLimiter bad_request_warnings_;

  std::atomic<uint64_t> queued_{0}, published_{0}, batches_{0}, dropped_{0}, replay_requests_{0}, replay_misses_{0};
  std::atomic<uint64_t> replay_bad_requests_{0}, replays_cut_{0}, replays_active_{0};
  // What libzmq's threads touch when they free a replay frame (FreeQueuedPayload):
  // each frame keeps it alive, so a frame freed after the publisher is gone
  // (its context ends on a thread of its own, see ~Publisher) touches none of it.
  struct ReplayAccount {
    std::atomic<uint64_t> queued_bytes{0};
    Mutex mu;
    int wake_fd MEMKV_GUARDED_BY(mu) = -1;  // -1 once the publisher is gone
  };
  std::shared_ptr<ReplayAccount> account_ = std::make_shared<ReplayAccount>();
  std::thread thread_;
};

}  // namespace memkv::events

#endif  // MEMKV_EVENTS_PUBLISHER_H_
