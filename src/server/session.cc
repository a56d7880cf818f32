#include "server/session.h"

#include "proto/messages.h"

#include <linux/sockios.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

#include "base/log.h"
#include "io/socket.h"

namespace memkv::server {
namespace {

constexpr size_t kDiscardBytes = 1 << 20;
// A connection that has read nothing for this long gives its buffers back.
constexpr Nanos kIdleTrimNs = 1'000'000'000;
// Meta scratch kept across requests (a batch meta can be ~1 MiB).
constexpr size_t kKeptMetaBytes = 64 * 1024;
// Work done per readiness event before yielding to other connections.
constexpr int kMaxFramesPerEvent = 64;
constexpr size_t kMaxErrorMessageBytes = 1024;

}  // namespace

uint8_t* InputBuffer::Space(bool grow, size_t* room) {
  *room = 0;
  if (start_ == end_) start_ = end_ = 0;
  if (capacity_ == 0 && !Resize(grow ? wanted_ : kInitialBytes)) return nullptr;
  if (grow && capacity_ < wanted_) Resize(wanted_);  // keeps the smaller buffer on failure
  if (end_ == capacity_ && start_ > 0) {
    std::memmove(data_, data_ + start_, end_ - start_);
    end_ -= start_;
    start_ = 0;
  }
  if (end_ == capacity_ && grow && capacity_ < kMaxBytes) Resize(capacity_ * 2);
  *room = capacity_ - end_;
  return *room == 0 ? nullptr : data_ + end_;
}

void InputBuffer::FitFrames(size_t bytes) {
  if (bytes > kSmallFrameBytes) return;
  wanted_ = std::max(wanted_, std::bit_ceil(2 * bytes));
}

bool InputBuffer::Release() {
  if (start_ != end_) return false;
  Free();
  return true;
}

bool InputBuffer::Resize(size_t capacity) {
  uint8_t* bigger = nullptr;
  if (capacity <= kMaxMallocBytes) {
    bigger = static_cast<uint8_t*>(std::malloc(capacity));
  } else {
    void* p = ::mmap(nullptr, capacity, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p != MAP_FAILED) bigger = static_cast<uint8_t*>(p);
  }
  if (bigger == nullptr) return false;  // keep the buffer we have
  if (end_ > start_) std::memcpy(bigger, data_ + start_, end_ - start_);
  end_ -= start_;
  start_ = 0;
  Free();
  data_ = bigger;
  capacity_ = capacity;
  return true;
}

void InputBuffer::Free() {
  if (data_ != nullptr) {
    if (capacity_ <= kMaxMallocBytes) {
      std::free(data_);
    } else {
      ::munmap(data_, capacity_);
    }
  }
  data_ = nullptr;
  capacity_ = 0;
}

Session::Session(uint64_t id, UniqueFd fd, std::string peer, const SessionContext& ctx, Nanos now)
    : id_(id),
      fd_(std::move(fd)),
      peer_(std::move(peer)),
      ctx_(ctx),
      accepted_at_(now),
      last_write_progress_(now),
      reply_{ctx.inbox, id, ctx.turn},
      last_read_(now) {
  ctx_.metrics->connections_accepted.Add(1);
  ctx_.metrics->connections_active.fetch_add(1, std::memory_order_relaxed);
}

Session::~Session() {
  std::fill(key_.begin(), key_.end(), 0);
  if (ctx_.limits != nullptr) ctx_.limits->Release(authenticated());
  if (open_of_tenant_ != nullptr) open_of_tenant_->fetch_sub(1, std::memory_order_relaxed);
  ctx_.metrics->connections_active.fetch_sub(1, std::memory_order_relaxed);
}

bool Session::WantsRead() const {
  return !closing_ && !storage_wait_ && get_stream_ == nullptr && out_.size() < proto::kMaxInflightPerConnection;
}

bool Session::HasBufferedRequests() const {
  if (!WantsRead()) return false;
  if (state_ == ReadState::kHeader) return in_.size() >= proto::kHeaderSize;
  return !in_.empty();
}

void Session::TrimIdle(Nanos now) {
  if (now - last_read_ < kIdleTrimNs || state_ != ReadState::kHeader) return;
  in_.Release();
  if (meta_.capacity() > kKeptMetaBytes) std::vector<uint8_t>().swap(meta_);
  discard_.reset();
}

bool Session::OnReadable(bool socket_ready) {
  // The socket has something to say when this runs from a readiness event;
  // a read that comes back short of the room it was given leaves it empty,
  // and the next one would only be an EAGAIN: the event loop reports what
  // arrives later (level-triggered), so stop there rather than ask.
  socket_drained_ = !socket_ready;
  turn_payload_bytes_ = 0;
  for (int i = 0; i < kMaxFramesPerEvent; ++i) {
    // At the in-flight limit, answers that leave now make room for the
    // requests behind them (buffered or still in the socket).
    if (out_.size() >= proto::kMaxInflightPerConnection && !Flush()) return false;
    if (!WantsRead()) break;
    if (state_ == ReadState::kPayload) {
      if (!ReceivePayload()) return false;
      if (state_ == ReadState::kPayload) break;  // socket drained, or the turn's payload budget spent
      continue;
    }
    ParseFrames();
    if (state_ == ReadState::kPayload || !WantsRead()) continue;
    if (socket_drained_) break;
    size_t before = in_.size();
    if (!FillInput()) return false;
    if (in_.size() == before) break;  // socket drained
  }
  return Flush();
}

bool Session::OnWritable() { return Flush(); }

bool Session::OnStorageDone(tier::CompletionInbox::Closure& done) {
  // After a wait for the end of the turn the worker still polls the socket
  // (PollsInput): what arrived meanwhile is reported by its next poll.
  const bool socket_ready = !turn_wait_;
  storage_wait_ = false;
  turn_wait_ = false;
  done();
  return OnReadable(socket_ready);
}

// Reads what the socket has into the input buffer. False on EOF or error.
// Only an authenticated connection that keeps filling its buffer makes it grow.
bool Session::FillInput() {
  size_t room = 0;
  uint8_t* space = in_.Space(authenticated(), &room);
  if (space == nullptr) return true;  // full (parser consumes first) or no memory (retried on the next event)
  ssize_t n = ::recv(fd_.get(), space, room, 0);
  if (n > 0) {
    socket_drained_ = static_cast<size_t>(n) < room;
    in_.Commit(static_cast<size_t>(n));
    last_read_ = MonotonicNanos();
    if (frame_started_ == 0) frame_started_ = last_read_;
    ctx_.metrics->bytes_received.Add(static_cast<uint64_t>(n));
    return true;
  }
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return true;
  if (state_ != ReadState::kHeader || !in_.empty()) {
    LOG_INFO_C("server") << "connection " << peer_ << " closed mid-frame";
  }
  return false;
}

// Consumes complete headers and metas from the input buffer.
void Session::ParseFrames() {
  while (WantsRead()) {
    size_t avail = in_.size();
    if (state_ == ReadState::kHeader) {
      if (avail < proto::kHeaderSize) return;
      std::memcpy(cur_raw_.data(), in_.data(), proto::kHeaderSize);
      in_.Consume(proto::kHeaderSize);
      if (!OnHeader()) return;  // Fail() queued a response and set closing_
      continue;
    }
    if (state_ == ReadState::kMeta) {
      size_t need = cur_.meta_len - meta_.size();
      size_t take = std::min(need, avail);
      meta_.insert(meta_.end(), in_.data(), in_.data() + take);
      in_.Consume(take);
      if (meta_.size() < cur_.meta_len) return;
      OnMeta();
      if (state_ == ReadState::kPayload) return;
      FrameDone();
      continue;
    }
    return;  // kPayload handled by ReceivePayload
  }
  return;
}

bool Session::OnHeader() {
  Status s = proto::DecodeFields(cur_raw_.data(), &cur_);
  request_start_ = MonotonicNanos();
  if (!s.ok()) {
    if (s.code() == StatusCode::kUnsupportedVersion) {
      ctx_.metrics->unsupported_version.Add(1);
    } else {
      ctx_.metrics->protocol_errors.Add(1);
    }
    Fail(s);
    return false;
  }
  if (cur_.is_response()) {
    ctx_.metrics->protocol_errors.Add(1);
    Fail(ProtocolError("a client sent a frame flagged as a response"));
    return false;
  }
  if (authenticated() && revoked_) {
    // A reload removed this connection's key: the request is answered
    // (the client matches it to its call) and the connection closed.
    ctx_.metrics->auth_failures.Add(1);
    Fail(AuthFailed("credential removed by a reload"));
    return false;
  }
  if (!authenticated()) {
    // Nothing but a well-shaped Connect is read from an unauthenticated peer,
    // so it cannot make us buffer a large meta or payload.
    if (cur_.opcode != static_cast<uint8_t>(proto::Opcode::kConnect)) {
      ctx_.metrics->auth_failures.Add(1);
      Fail(AuthFailed("connection not authenticated: the first frame must be Connect (0x06), got " +
                      proto::OpcodeName(cur_.opcode)));
      return false;
    }
    if (cur_.meta_len < proto::kNonceSize || cur_.meta_len > proto::kMaxConnectMeta || cur_.payload_len != 0) {
      ctx_.metrics->protocol_errors.Add(1);
      Fail(ProtocolError("Connect must carry a 32-byte nonce (and optionally an RDMA offer, at most " +
                         std::to_string(proto::kMaxConnectMeta) + " bytes in all) as meta and no payload"));
      return false;
    }
  }
  // A value over this server's limit is refused and its body consumed, as
  // long as the body is no larger than any other frame's may be.
  if (cur_.payload_len > std::max(ctx_.max_value_bytes, proto::kMaxPayloadBytes)) {
    ctx_.metrics->protocol_errors.Add(1);
    Fail(CheckValueSize(cur_.payload_len, ctx_.max_value_bytes));
    return false;
  }
  if (authenticated()) in_.FitFrames(proto::kHeaderSize + cur_.meta_len + cur_.payload_len);
  meta_.clear();
  meta_.reserve(cur_.meta_len);
  state_ = ReadState::kMeta;
  return true;
}

void Session::OnMeta() {
  state_ = ReadState::kHeader;
  if (!authenticated()) {
    HandleConnect();
    return;
  }
  Tag tag;
  std::memcpy(tag.data(), cur_raw_.data() + proto::kFieldsSize, proto::kTagSize);
  if (!auth_->VerifyNext(cur_raw_.data(), meta_, tag)) {
    ctx_.metrics->auth_failures.Add(1);
    Fail(AuthFailed("frame tag does not verify (tampered, replayed or signed with another key)"));
    return;
  }
  DispatchAuthenticated();
}

void Session::StartPayload(PayloadSink sink) {
  sink_ = std::move(sink);
  payload_iov_.clear();
  payload_first_ = 0;
  payload_left_ = cur_.payload_len;
  if (!sink_.frame_error.ok()) {
    AddDiscard(cur_.payload_len);
  } else {
    for (PayloadSink::Item& item : sink_.items) {
      if (item.status.ok()) {
        for (const iovec& v : item.put.iov()) payload_iov_.push_back(v);
      } else {
        AddDiscard(item.size);
      }
    }
  }
  hash_.Reset();
  hash_item_ = 0;
  hash_offset_ = 0;
  HashArrived(0);  // completes empty items
  state_ = ReadState::kPayload;
}

// Hashes the next `n` payload bytes, which have just landed in their items'
// chunks: verifying while the bytes are still in cache costs a fraction of a
// second pass over them once the frame is complete.
void Session::HashArrived(uint64_t n) {
  if (!sink_.frame_error.ok()) return;
  auto& items = sink_.items;
  while (hash_item_ < items.size()) {
    PayloadSink::Item& item = items[hash_item_];
    uint64_t take = std::min(n, item.size - hash_offset_);
    if (hash_offset_ == 0 && take == item.size) {
      // The whole value at once (small values): one pass, no stream state.
      if (item.status.ok()) item.received_checksum = ChecksumIov(item.put.iov());
      n -= take;
      ++hash_item_;
      continue;
    }
    if (item.status.ok() && take > 0) {
      uint64_t skip = hash_offset_;
      uint64_t left = take;
      for (const iovec& v : item.put.iov()) {
        if (skip >= v.iov_len) {
          skip -= v.iov_len;
          continue;
        }
        size_t piece = static_cast<size_t>(std::min<uint64_t>(v.iov_len - skip, left));
        hash_.Update(static_cast<const uint8_t*>(v.iov_base) + skip, piece);
        left -= piece;
        skip = 0;
        if (left == 0) break;
      }
    }
    hash_offset_ += take;
    n -= take;
    if (hash_offset_ < item.size) return;
    item.received_checksum = hash_.Digest();
    hash_.Reset();
    hash_offset_ = 0;
    ++hash_item_;
  }
}

// Adds iovecs that read `bytes` into the scratch buffer (bytes we must
// consume to stay in sync but will not keep).
void Session::AddDiscard(uint64_t bytes) {
  if (bytes == 0) return;
  if (!discard_) discard_ = std::make_unique_for_overwrite<uint8_t[]>(kDiscardBytes);
  while (bytes > 0) {
    size_t n = static_cast<size_t>(std::min<uint64_t>(bytes, kDiscardBytes));
    payload_iov_.push_back({discard_.get(), n});
    bytes -= n;
  }
}

uint64_t Session::TurnRoom() const {
  if (ctx_.store_turn_bytes == 0) return UINT64_MAX;
  return turn_payload_bytes_ >= ctx_.store_turn_bytes ? 0 : ctx_.store_turn_bytes - turn_payload_bytes_;
}

// Moves payload bytes (buffered first, then straight from the socket) into
// their destinations, at most TurnRoom() of them: with loads first, the
// worker gets back to connections waiting on a load. False on EOF or error.
bool Session::ReceivePayload() {
  size_t buffered = in_.size();
  while (buffered > 0 && payload_first_ < payload_iov_.size()) {
    const uint64_t room = TurnRoom();
    if (room == 0) {
      ctx_.metrics->store_turns_yielded.Add(1);
      return true;  // the rest is buffered: the worker runs this connection again (HasBufferedRequests)
    }
    iovec& v = payload_iov_[payload_first_];
    size_t take = static_cast<size_t>(std::min<uint64_t>(std::min(buffered, v.iov_len), room));
    turn_payload_bytes_ += take;
    std::memcpy(v.iov_base, in_.data(), take);
    in_.Consume(take);
    buffered -= take;
    payload_left_ -= take;
    HashArrived(take);
    payload_first_ = io::AdvanceIov(payload_iov_, payload_first_, take);
  }
  while (payload_first_ < payload_iov_.size()) {
    if (socket_drained_) return true;
    const uint64_t room = TurnRoom();
    if (room == 0) {
      ctx_.metrics->store_turns_yielded.Add(1);
      return true;  // the socket stays readable: the next epoll_wait reports it again
    }
    int count = static_cast<int>(std::min<size_t>(payload_iov_.size() - payload_first_, IOV_MAX));
    const iovec* iov = payload_iov_.data() + payload_first_;
    uint64_t asked = payload_left_;
    std::array<iovec, 64> clamped;  // the first iovecs, cut at the turn's room
    if (room < payload_left_) {
      uint64_t left = room;
      int used = 0;
      for (; used < count && used < static_cast<int>(clamped.size()) && left > 0; ++used) {
        clamped[static_cast<size_t>(used)] = iov[used];
        clamped[static_cast<size_t>(used)].iov_len = static_cast<size_t>(std::min<uint64_t>(iov[used].iov_len, left));
        left -= clamped[static_cast<size_t>(used)].iov_len;
      }
      iov = clamped.data();
      count = used;
      asked = room - left;
    }
    ssize_t n = ::readv(fd_.get(), iov, count);
    if (n > 0) {
      socket_drained_ = static_cast<uint64_t>(n) < asked;
      turn_payload_bytes_ += static_cast<uint64_t>(n);
      ctx_.metrics->bytes_received.Add(static_cast<uint64_t>(n));
      payload_left_ -= static_cast<uint64_t>(n);
      payload_first_ = io::AdvanceIov(payload_iov_, payload_first_, static_cast<size_t>(n));
      HashArrived(static_cast<uint64_t>(n));
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return true;
    LOG_INFO_C("server") << "connection " << peer_ << " closed mid-payload (" << payload_left_ << " bytes missing)";
    return false;
  }
  if (put_stream_ != nullptr) {
    // A window of a put in pieces is full: to the drives with it.
    Await(tier::Completion::kPending);
    ctx_.store->MoveStreamPiece(put_stream_, reply_, [this](Status s) { OnStreamPieceWritten(std::move(s)); });
    return true;
  }
  EndPayload();
  return true;
}

void Session::EndPayload() {
  state_ = ReadState::kHeader;
  FrameDone();
  FinishPayload();
}

void Session::FrameDone() { frame_started_ = in_.empty() ? 0 : MonotonicNanos(); }

uint64_t Session::FrameBytesReceived() const {
  switch (state_) {
    case ReadState::kHeader: return in_.size();
    case ReadState::kMeta: return proto::kHeaderSize + meta_.size();
    case ReadState::kPayload: return proto::kHeaderSize + cur_.meta_len + (cur_.payload_len - payload_left_);
  }
  return 0;
}

uint64_t Session::FrameBytesExpected() const {
  if (state_ == ReadState::kHeader) return 0;
  return proto::kHeaderSize + cur_.meta_len + cur_.payload_len;
}

bool Session::CheckFrameDeadline(Nanos now) {
  if (frame_started_ == 0 || !authenticated()) return true;  // before Connect: the handshake timeout
  if (!WantsRead()) {
    frame_started_ = now;  // the server is not reading: not the client's time
    return true;
  }
  // A large frame gets longer (proto::kDeadlineBytesPerSecond).
  const Nanos allowed = ctx_.frame_timeout_ns + proto::DeadlineAllowanceNs(FrameBytesExpected());
  if (now - frame_started_ <= allowed) return true;
  ctx_.metrics->connections_closed_frame_timeout.Add(1);
  const uint64_t expected = FrameBytesExpected();
  const std::string what = expected == 0 ? std::string("a frame header")
                                         : "a " + proto::OpcodeName(cur_.opcode) + " frame";
  const std::string of = expected == 0 ? std::to_string(proto::kHeaderSize) : std::to_string(expected);
  LOG_WARN_EVERY_C("server", 10) << "closing " << peer_ << ": " << what << " stalled mid-way, "
                                 << FrameBytesReceived() << " of " << of << " bytes arrived in "
                                 << (now - frame_started_) / 1'000'000 << " ms, of the " << allowed / 1'000'000
                                 << " ms allowed (network.frame_timeout_ms " << ctx_.frame_timeout_ns / 1'000'000
                                 << " plus 1 s per 64 MiB of the frame; the client is gone or stuck)";
  return false;
}

bool Session::WriteStalled(Nanos now, Nanos stall_ns) {
  if (!out_.empty()) {
    kernel_owed_since_ = 0;
    return now - last_write_progress_ > stall_ns;
  }
  // Everything left this process; what the kernel still holds must reach
  // the client. SIOCOUTQ: bytes not yet acknowledged by the peer.
  int unacked = 0;
  if (::ioctl(fd_.get(), SIOCOUTQ, &unacked) != 0 || unacked <= 0) {
    kernel_owed_since_ = 0;
    return false;
  }
  tcp_info info{};
  socklen_t len = sizeof(info);
  if (::getsockopt(fd_.get(), IPPROTO_TCP, TCP_INFO, &info, &len) != 0) return false;
  const uint64_t acked = info.tcpi_bytes_acked;
  if (kernel_owed_since_ == 0 || acked != kernel_acked_seen_) {
    kernel_owed_since_ = now;  // first seen owing, or the client took some since the last look
    kernel_acked_seen_ = acked;
    return false;
  }
  return now - kernel_owed_since_ > stall_ns;
}

void Session::Queue(OutFrame frame) {
  if (out_.empty()) last_write_progress_ = MonotonicNanos();
  frame.iov.insert(frame.iov.begin(), iovec{frame.head.data(), frame.head.size()});
  out_.push_back(std::move(frame));
}

namespace {
std::vector<uint8_t> ResponseHead(const proto::FrameHeader& request, StatusCode status,
                                  const std::string& meta, uint64_t payload_len, uint64_t checksum) {
  proto::FrameHeader h;
  h.opcode = request.opcode;
  h.flags = proto::kFlagResponse;
  h.request_id = request.request_id;
  h.status = status;
  h.meta_len = static_cast<uint32_t>(meta.size());
  h.payload_len = payload_len;
  h.payload_checksum = checksum;
  std::vector<uint8_t> head(proto::kHeaderSize + meta.size());
  proto::EncodeFields(h, head.data());
  std::memcpy(head.data() + proto::kHeaderSize, meta.data(), meta.size());
  return head;
}

void SetTag(std::vector<uint8_t>& head, const Tag& tag) {
  std::memcpy(head.data() + proto::kFieldsSize, tag.data(), tag.size());
}

std::span<const uint8_t> MetaOf(const std::vector<uint8_t>& head) {
  return {head.data() + proto::kHeaderSize, head.size() - proto::kHeaderSize};
}
}  // namespace

void Session::Respond(StatusCode status, std::string meta, std::vector<iovec> payload,
                      std::vector<tier::StoredValue> values, uint64_t checksum, uint64_t streamed_len) {
  uint64_t payload_len = streamed_len;
  for (const iovec& v : payload) payload_len += v.iov_len;
  OpMetrics& op = ctx_.metrics->op(cur_.opcode);
  op.requests.Add();
  if (status != StatusCode::kOk && status != StatusCode::kNotFound) op.errors.Add();
  if (payload_len > 0) op.value_bytes.Add(payload_len);  // gets; puts count in RespondPuts
  const uint64_t latency = static_cast<uint64_t>(MonotonicNanos() - request_start_);
  op.latency.Observe(latency);
  ObserveIdentityLatency(latency);
  OutFrame frame;
  frame.head = ResponseHead(cur_, status, meta, payload_len, checksum);
  // Before the handshake there is no session key: errors go out with a zero tag.
  if (auth_ != nullptr) SetTag(frame.head, auth_->SignNext(frame.head.data(), MetaOf(frame.head)));
  frame.iov = std::move(payload);
  frame.values = std::move(values);
  Queue(std::move(frame));
}

void Session::RespondConnect(std::string meta, std::span<const uint8_t> client_nonce, HmacSha256& key_mac) {
  OutFrame frame;
  frame.head = ResponseHead(cur_, StatusCode::kOk, meta, 0, 0);
  SetTag(frame.head, proto::ConnectTag(key_mac, frame.head.data(), MetaOf(frame.head), client_nonce));
  Queue(std::move(frame));
}

void Session::RespondError(const Status& status) {
  std::string message = status.message().substr(0, kMaxErrorMessageBytes);
  Respond(status.code(), std::move(message));
}

void Session::Fail(const Status& status) {
  if (!logged_error_) {
    LOG_WARN_EVERY_C("server", 10) << "closing connection " << peer_ << ": " << status.ToString();
    logged_error_ = true;
  }
  RespondError(status);
  closing_ = true;
  state_ = ReadState::kHeader;
}

bool Session::Flush() {
  while (!out_.empty()) {
    iovec iov[IOV_MAX];
    int count = 0;
    for (OutFrame& f : out_) {
      for (size_t i = f.first; i < f.iov.size() && count < IOV_MAX; ++i) iov[count++] = f.iov[i];
      if (count == IOV_MAX) break;
    }
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = static_cast<size_t>(count);
    ssize_t n = ::sendmsg(fd_.get(), &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return true;
      return false;  // peer gone; nothing more to deliver
    }
    ctx_.metrics->bytes_sent.Add(static_cast<uint64_t>(n));
    last_write_progress_ = MonotonicNanos();
    size_t left = static_cast<size_t>(n);
    while (!out_.empty()) {
      OutFrame& f = out_.front();
      while (f.first < f.iov.size() && left > 0) {
        iovec& v = f.iov[f.first];
        size_t take = std::min(left, v.iov_len);
        v.iov_base = static_cast<char*>(v.iov_base) + take;
        v.iov_len -= take;
        left -= take;
        if (v.iov_len == 0) ++f.first;
      }
      while (f.first < f.iov.size() && f.iov[f.first].iov_len == 0) ++f.first;
      if (f.first < f.iov.size()) break;
      // The bytes are in the kernel now: check those the store handed out
      // unchecked (a mismatch drops the value and is counted; the client
      // has the checksum and refuses the bytes), then release them.
      for (tier::StoredValue& v : f.values) (void)v.CheckLater();  // the store drops and counts a mismatch
      out_.pop_front();
    }
  }
  if (get_stream_ != nullptr && !storage_wait_) ContinueStreamGet();
  return true;
}

}  // namespace memkv::server
