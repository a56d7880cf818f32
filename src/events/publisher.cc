#include "events/publisher.h"

#include <sys/eventfd.h>
#include <unistd.h>
#include <zmq.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>

#include "base/errno_text.h"
#include "base/log.h"
#include "base/thread_name.h"

namespace memkv::events {
namespace {

// The end of a replay: sequence -1 (8 bytes big-endian) and an empty payload.
constexpr char kEndSeq[8] = {'\xff', '\xff', '\xff', '\xff', '\xff', '\xff', '\xff', '\xff'};

std::string BigEndian(uint64_t v) {
  std::string out(8, '\0');
  for (int i = 7; i >= 0; --i, v >>= 8) out[i] = static_cast<char>(v & 0xff);
  return out;
}

uint64_t FromBigEndian(std::string_view b) {
  uint64_t v = 0;
  for (char c : b) v = v << 8 | uint8_t(c);
  return v;
}

std::string ZmqErrorText(int err) {
  // libzmq's own codes lie above the system's; strerror does not know them.
  return err < 4096 ? ErrnoText(err) : std::string(zmq_strerror(err));
}

double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Port 0 is libzmq's "*": any free port.
std::string BindSpelling(const std::string& endpoint) {
  if (endpoint.size() > 2 && endpoint.ends_with(":0")) return endpoint.substr(0, endpoint.size() - 1) + "*";
  return endpoint;
}

Result<std::string> BindSocket(void* socket, const std::string& endpoint, std::string_view what) {
  if (zmq_bind(socket, BindSpelling(endpoint).c_str()) != 0) {
    int err = zmq_errno();
    return Status(StatusCode::kUnavailable, "cannot bind the events " + std::string(what) + " socket to " + endpoint +
                                                ": " + ZmqErrorText(err));
  }
  char bound[256];
  size_t size = sizeof(bound);
  if (zmq_getsockopt(socket, ZMQ_LAST_ENDPOINT, bound, &size) != 0) return endpoint;
  return std::string(bound);
}

void SetInt(void* socket, int option, int value) { zmq_setsockopt(socket, option, &value, sizeof(value)); }

bool SendFrame(void* socket, std::string_view frame, bool more) {
  return zmq_send(socket, frame.data(), frame.size(), ZMQ_DONTWAIT | (more ? ZMQ_SNDMORE : 0)) >= 0;
}

// All frames of the next message; empty when none was waiting.
std::vector<std::string> ReceiveMessage(void* socket) {
  std::vector<std::string> frames;
  int more = 1;
  while (more) {
    zmq_msg_t msg;
    zmq_msg_init(&msg);
    if (zmq_msg_recv(&msg, socket, ZMQ_DONTWAIT) < 0) {
      zmq_msg_close(&msg);
      break;
    }
    frames.emplace_back(static_cast<const char*>(zmq_msg_data(&msg)), zmq_msg_size(&msg));
    more = zmq_msg_more(&msg);
    zmq_msg_close(&msg);
  }
  return frames;
}

}  // namespace

Result<std::unique_ptr<Publisher>> Publisher::Create(PublisherOptions options) {
  std::unique_ptr<Publisher> p(new Publisher(std::move(options)));
  MEMKV_RETURN_IF_ERROR(p->Bind());
  p->thread_ = std::thread([raw = p.get()] { raw->Loop(); });
  return p;
}

Status Publisher::Bind() {
  wake_ = UniqueFd(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  {
    MutexLock lock(account_->mu);
    account_->wake_fd = wake_.get();
  }
  if (wake_.get() < 0) {
    return Status(StatusCode::kInternal, "eventfd for the events publisher: " + ErrnoText(errno));
  }
  context_ = zmq_ctx_new();
  if (context_ == nullptr) return Status(StatusCode::kInternal, "zmq_ctx_new: " + ZmqErrorText(zmq_errno()));
  pub_ = zmq_socket(context_, ZMQ_PUB);
  SetInt(pub_, ZMQ_SNDHWM, 100000);
  MEMKV_ASSIGN_OR_RETURN(publish_endpoint_, BindSocket(pub_, options_.publish, "PUB"));
  if (!options_.replay.empty()) {
    router_ = zmq_socket(context_, ZMQ_ROUTER);
    // A full peer answers EAGAIN (and a gone one EHOSTUNREACH) instead of
    // losing the message silently: replays are paced by the peer.
    SetInt(router_, ZMQ_ROUTER_MANDATORY, 1);
    // Kernel buffering per peer, on top of replay_peer_bytes queued in ZeroMQ.
    SetInt(router_, ZMQ_SNDBUF, 256 << 10);
    // A request is 8 bytes: a larger frame disconnects its peer unread.
    const int64_t max_request = kMaxReplayRequestBytes;
    zmq_setsockopt(router_, ZMQ_MAXMSGSIZE, &max_request, sizeof(max_request));
    MEMKV_ASSIGN_OR_RETURN(replay_endpoint_, BindSocket(router_, options_.replay, "replay (ROUTER)"));
  }
  return Status::Ok();
}

Publisher::~Publisher() {
  if (thread_.joinable()) {
    {
      MutexLock lock(mu_);
      stopping_ = true;
    }
    Wake();
    thread_.join();
  }
  // The last batches get a moment to leave; a replay answer does not.
  if (pub_ != nullptr) {
    SetInt(pub_, ZMQ_LINGER, 100);
    zmq_close(pub_);
  }
  if (router_ != nullptr) {
    SetInt(router_, ZMQ_LINGER, 0);
    zmq_close(router_);
  }
  {
    MutexLock lock(account_->mu);
    account_->wake_fd = -1;  // wake_ closes with this object
  }
  // zmq_ctx_term waits until libzmq has finished closing every pipe. With
  // replay peers that stopped reading, that wait has been seen never to end
  // (libzmq 4.3), so it runs on a thread of its own: destroying the
  // publisher (stopping the server) never waits on it.
  if (context_ != nullptr) {
    std::thread([context = context_] {
      SetThreadName("memkv-zmq-term");
      zmq_ctx_term(context);
    }).detach();
  }
}

bool Publisher::Publish(Event event) {
  bool was_empty;
  {
    MutexLock lock(mu_);
    if (queue_.size() >= options_.queue_size) {
      dropped_.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    was_empty = queue_.empty();
    queue_.push_back(std::move(event));
    queued_.fetch_add(1, std::memory_order_relaxed);
  }
  // Only the first event wakes the thread; it drains the rest.
  if (was_empty) Wake();
  return true;
}

PublisherCounters Publisher::counters() const {
  PublisherCounters c;
  c.events_queued = queued_.load(std::memory_order_relaxed);
  c.events_published = published_.load(std::memory_order_relaxed);
  c.batches_published = batches_.load(std::memory_order_relaxed);
  c.events_dropped = dropped_.load(std::memory_order_relaxed);
  c.replay_requests = replay_requests_.load(std::memory_order_relaxed);
  c.replay_misses = replay_misses_.load(std::memory_order_relaxed);
  c.replay_bad_requests = replay_bad_requests_.load(std::memory_order_relaxed);
  c.replays_cut = replays_cut_.load(std::memory_order_relaxed);
  c.replays_active = replays_active_.load(std::memory_order_relaxed);
  c.replay_queued_bytes = account_->queued_bytes.load(std::memory_order_relaxed);
  return c;
}

void Publisher::Wake() {
  uint64_t one = 1;
  ssize_t n = write(wake_.get(), &one, sizeof(one));
  (void)n;  // EAGAIN: the counter is already non-zero, the thread wakes anyway
}

void Publisher::Loop() {
  SetThreadName("memkv-events");
  ScopedLogTarget log_scope(options_.log_target);
  for (;;) {
    WaitForEvents();
    if (options_.before_batch) options_.before_batch();
    std::vector<Event> batch = TakeBatch();
    if (batch.empty()) return;  // stopping, and the queue is drained
    SendBatch(std::move(batch));
  }
}

// Serves replay requests until events are queued (or stop is asked), then
// lets batch_window_ms pass so that a burst leaves as one batch.
void Publisher::WaitForEvents() {
  zmq_pollitem_t items[2] = {{nullptr, wake_.get(), ZMQ_POLLIN, 0}, {router_, 0, ZMQ_POLLIN, 0}};
  const int n = router_ != nullptr ? 2 : 1;
  for (;;) {
    {
      MutexLock lock(mu_);
      if (stopping_) return;
      if (!queue_.empty()) break;
    }
    // The wake eventfd also fires when libzmq has written a replay payload:
    // the peer drained, so its replay may go on.
    if (zmq_poll(items, n, ReplayPollTimeoutMs()) < 0) continue;  // EINTR
    if (items[0].revents & ZMQ_POLLIN) {
      uint64_t count;
      ssize_t r = read(wake_.get(), &count, sizeof(count));
      (void)r;
    }
    if (n == 2 && (items[1].revents & ZMQ_POLLIN)) ServeReplay();
    if (!replays_.empty()) PumpReplays();
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.batch_window_ms);
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return;
    {
      MutexLock lock(mu_);
      if (stopping_ || queue_.size() >= options_.max_batch_events) return;
    }
    if (zmq_poll(&items[1], n - 1, static_cast<long>(left.count())) > 0) ServeReplay();
  }
}

std::vector<Event> Publisher::TakeBatch() {
  MutexLock lock(mu_);
  const size_t n = std::min(queue_.size(), std::max<size_t>(options_.max_batch_events, 1));
  std::vector<Event> batch(std::make_move_iterator(queue_.begin()), std::make_move_iterator(queue_.begin() + n));
  queue_.erase(queue_.begin(), queue_.begin() + n);
  return batch;
}

void Publisher::SendBatch(std::vector<Event> batch) {
  const uint64_t seq = next_seq_++;
  std::string payload = EncodeBatch(NowSeconds(), batch, options_.encoding);
  // Counted before the send, so a subscriber that sees the batch sees the counters too.
  published_.fetch_add(batch.size(), std::memory_order_relaxed);
  batches_.fetch_add(1, std::memory_order_relaxed);
  // PUB never blocks: a subscriber past its high-water mark loses the
  // message and heals the gap through replay.
  if (!SendFrame(pub_, options_.topic, true) || !SendFrame(pub_, BigEndian(seq), true) ||
      !SendFrame(pub_, payload, false)) {
    LOG_WARN_C("events") << "sending batch " << seq << " failed: " << ZmqErrorText(zmq_errno());
  }
  if (options_.replay_batches == 0) return;
  ring_bytes_ += payload.size();
  ring_.emplace_back(seq, std::make_shared<const std::string>(std::move(payload)));
  while (!ring_.empty() && (ring_.size() > options_.replay_batches || ring_bytes_ > options_.replay_bytes)) {
    ring_bytes_ -= ring_.front().second->size();
    ring_.pop_front();
  }
}

// One replay in progress. Owned by replays_ and by each of its payloads
// queued in ZeroMQ (QueuedPayload), so the I/O thread's count never outlives it.
struct Publisher::ReplayPeer {
  std::string id;
  uint64_t next_seq = 0;   // the next batch to send
  uint64_t end_seq = 0;    // one past the newest batch when the request came
  Nanos last_sent = 0;     // the request, or the last message the peer took
  std::atomic<size_t> queued_bytes{0};  // its payloads not yet written by libzmq
};

// The hint of a zero-copy payload frame: freed by libzmq once written.
struct Publisher::QueuedPayload {
  std::shared_ptr<const std::string> payload;
  std::shared_ptr<ReplayPeer> peer;
  std::shared_ptr<ReplayAccount> account;
};

// libzmq calls this (on its I/O thread, or on ours when a send fails) when it
// no longer needs the payload: the peer's socket took it.
void Publisher::FreeQueuedPayload(void*, void* hint) {
  auto* q = static_cast<QueuedPayload*>(hint);
  const size_t n = q->payload->size();
  q->peer->queued_bytes.fetch_sub(n, std::memory_order_relaxed);
  q->account->queued_bytes.fetch_sub(n, std::memory_order_relaxed);
  {
    MutexLock lock(q->account->mu);
    if (q->account->wake_fd >= 0) {
      uint64_t one = 1;
      ssize_t written = write(q->account->wake_fd, &one, sizeof(one));
      (void)written;  // EAGAIN: the counter is already non-zero, the thread wakes anyway
    }
  }
  delete q;
}

// A request is [identity, empty, start sequence]: what a REQ socket, or a
// DEALER sending an empty delimiter first, delivers to the ROUTER.
void Publisher::ServeReplay() {
  std::vector<std::string> frames = ReceiveMessage(router_);
  if (frames.empty()) return;
  if (frames.size() != 3 || frames[2].size() != 8) {
    replay_bad_requests_.fetch_add(1, std::memory_order_relaxed);
    const int64_t suppressed = bad_request_warnings_.Allow(MonotonicNanos(), 10'000'000'000);
    if (suppressed != LogRateLimiter::kNotAllowed && GetLogLevel() <= LogLevel::kWarn) {
      internal::LogMessage(LogLevel::kWarn, "events", suppressed).stream()
          << "ignoring a replay request of " << frames.size() << " frames ("
          << (frames.size() == 3 ? std::to_string(frames[2].size()) + "-byte start"
                                 : std::string("not 3"))
          << "); expected [identity, empty, 8-byte start sequence]";
    }
    return;
  }
  replay_requests_.fetch_add(1, std::memory_order_relaxed);
  const std::string& id = frames[0];
  const uint64_t start = FromBigEndian(frames[2]);
  const uint64_t oldest = ring_.empty() ? next_seq_ : ring_.front().first;
  if (start < oldest) replay_misses_.fetch_add(1, std::memory_order_relaxed);
  auto it = replays_.find(id);
  if (it == replays_.end() && replays_.size() >= std::max<size_t>(options_.replay_peers, 1)) {
    // Refused: the end marker names the start, the first batch not sent.
    replays_cut_.fetch_add(1, std::memory_order_relaxed);
    LOG_WARN_EVERY_C("events", 10) << "refusing a replay: " << replays_.size()
                                   << " replays in progress, the most allowed; the peer may ask again";
    SendReplayEnd(id, start);
    return;
  }
  // A new request from a peer with a replay in progress replaces it.
  std::shared_ptr<ReplayPeer>& peer = replays_[id];
  if (peer == nullptr) {
    peer = std::make_shared<ReplayPeer>();
    peer->id = id;
  }
  peer->next_seq = std::max(start, oldest);  // the first batch answered shows what was missed
  peer->end_seq = next_seq_;
  peer->last_sent = MonotonicNanos();
  replays_active_.store(replays_.size(), std::memory_order_relaxed);
  PumpReplays();
}

void Publisher::PumpReplays() {
  const Nanos now = MonotonicNanos();
  for (auto it = replays_.begin(); it != replays_.end();) {
    it = PumpReplay(it->second, now) ? replays_.erase(it) : std::next(it);
  }
  replays_active_.store(replays_.size(), std::memory_order_relaxed);
}

bool Publisher::PumpReplay(const std::shared_ptr<ReplayPeer>& peer, Nanos now) {
  ReplayPeer& p = *peer;
  while (p.next_seq < p.end_seq) {
    const uint64_t oldest = ring_.empty() ? next_seq_ : ring_.front().first;
    if (p.next_seq < oldest) {
      // Left the ring while this peer was slow: skipped; the jump in the
      // sequence numbers it receives is the gap.
      replay_misses_.fetch_add(1, std::memory_order_relaxed);
      p.next_seq = oldest;
      continue;
    }
    const auto& [seq, payload] = ring_[p.next_seq - oldest];
    const size_t queued = p.queued_bytes.load(std::memory_order_relaxed);
    if (queued > 0 && queued + payload->size() > options_.replay_peer_bytes) break;  // until it drains
    const Sent sent = SendReplayBatch(p, payload, seq, peer);
    if (sent == Sent::kGone) return true;
    if (sent == Sent::kFull) break;
    p.last_sent = now;
    ++p.next_seq;
  }
  if (p.next_seq >= p.end_seq) {
    const Sent sent = SendReplayEnd(p.id, uint64_t(-1));
    if (sent != Sent::kFull) return true;
  }
  if (now - p.last_sent >= Nanos(options_.replay_stall_ms) * 1'000'000) {
    // The peer took nothing for replay_stall_ms: cut, naming the first batch not sent.
    replays_cut_.fetch_add(1, std::memory_order_relaxed);
    LOG_WARN_EVERY_C("events", 10) << "cutting a replay at sequence " << p.next_seq << ": the peer took nothing for "
                                   << options_.replay_stall_ms << " ms";
    SendReplayEnd(p.id, p.next_seq);
    return true;
  }
  return false;
}

Publisher::Sent Publisher::SendReplayBatch(ReplayPeer& peer, const std::shared_ptr<const std::string>& payload,
                                           uint64_t seq, const std::shared_ptr<ReplayPeer>& owner) {
  // Only the first frame can fail for a full or gone peer; the rest follow it.
  if (zmq_send(router_, peer.id.data(), peer.id.size(), ZMQ_DONTWAIT | ZMQ_SNDMORE) < 0) {
    return zmq_errno() == EAGAIN ? Sent::kFull : Sent::kGone;
  }
  SendFrame(router_, "", true);
  SendFrame(router_, BigEndian(seq), true);
  // Zero-copy: the frame points into the ring's payload; FreeQueuedPayload
  // counts it off when libzmq is done with it.
  const size_t n = payload->size();
  peer.queued_bytes.fetch_add(n, std::memory_order_relaxed);
  account_->queued_bytes.fetch_add(n, std::memory_order_relaxed);
  auto* hint = new QueuedPayload{payload, owner, account_};
  zmq_msg_t msg;
  zmq_msg_init_data(&msg, const_cast<char*>(payload->data()), n, &FreeQueuedPayload, hint);
  if (zmq_msg_send(&msg, router_, ZMQ_DONTWAIT) < 0) zmq_msg_close(&msg);  // frees (and counts off) at once
  return Sent::kOk;
}

Publisher::Sent Publisher::SendReplayEnd(const std::string& id, uint64_t seq) {
  if (zmq_send(router_, id.data(), id.size(), ZMQ_DONTWAIT | ZMQ_SNDMORE) < 0) {
    return zmq_errno() == EAGAIN ? Sent::kFull : Sent::kGone;
  }
  SendFrame(router_, "", true);
  SendFrame(router_, seq == uint64_t(-1) ? std::string(kEndSeq, 8) : BigEndian(seq), true);
  SendFrame(router_, "", false);
  return Sent::kOk;
}

long Publisher::ReplayPollTimeoutMs() const {
  if (replays_.empty()) return -1;
  const Nanos now = MonotonicNanos();
  Nanos first = INT64_MAX;
  for (const auto& [id, peer] : replays_) first = std::min(first, peer->last_sent);
  const Nanos due = first + Nanos(options_.replay_stall_ms) * 1'000'000;
  // A drained payload wakes the thread; the 100 ms bound is for a peer whose
  // room shows only once libzmq's pipe bookkeeping has caught up.
  return due <= now ? 0 : std::min<long>(100, static_cast<long>((due - now + 999'999) / 1'000'000));
}

}  // namespace memkv::events
