// Connection, part two: request and response framing on a ready connection.
#include <fcntl.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

#include "base/checksum.h"
#include "client/connection.h"
#include "io/socket.h"

namespace memkv::client {
namespace {

// iovecs gathered per refill: several small frames go out in one sendmsg.
constexpr size_t kRefillIov = 512;
// Bytes read per readiness event before yielding to the other connections
// of the poll loop, so one fast server cannot starve the rest's pipelines.
constexpr size_t kReadBudgetBytes = 16 << 20;
constexpr size_t kDiscardBytes = 256 << 10;
constexpr int kReadIov = 64;
// The read-ahead buffer, and the payload left from which the rest of a
// payload is read straight into its destinations instead (no copy). Small:
// what lands in it is copied out, and a large response should pay for a
// header and a few KiB of copying, not for a whole buffer (a 64 KiB read
// ahead cost a batch of sixteen 4 KiB values more in copying than it saved
// in system calls).
constexpr size_t kReadAheadBytes = 8 << 10;
constexpr uint64_t kDirectPayloadBytes = 4 << 10;
constexpr size_t kShownErrorBytes = 256;

bool ServerClosesAfter(StatusCode code) {
  // docs/wire-protocol.md "What the server does with a bad frame".
  return code == StatusCode::kAuthFailed || code == StatusCode::kProtocolError ||
         code == StatusCode::kCorruption || code == StatusCode::kUnsupportedVersion;
}

}  // namespace

bool Connection::Refill() {
  if (state_ != State::kReady) return false;
  send_iov_.clear();
  send_first_ = 0;
  while (!pending_.empty() && inflight_.size() < max_inflight_ && send_iov_.size() < kRefillIov) {
    Exchange* x = pending_.front();
    pending_.pop_front();
    if (const uint64_t value_bytes = x->RequestValueBytes(); value_bytes > max_value_bytes_) {
      // Refused here, before a checksum pass or a byte on the wire: the
      // server would refuse it too.
      x->OnFailure(TooLarge("value of " + std::to_string(value_bytes) + " bytes exceeds the limit of " +
                            std::to_string(max_value_bytes_) + " bytes that server " + name_ +
                            " announced at Connect (its memory.max_value_size)"));
      DropIfDetached(x);
      continue;
    }
    if (x->StartsWithoutFrame()) continue;
    RequestFrame frame = x->BuildRequest();
    proto::FrameHeader header;
    header.opcode = static_cast<uint8_t>(frame.opcode);
    header.request_id = next_request_id_++;
    header.meta_len = static_cast<uint32_t>(frame.meta.size());
    header.payload_len = frame.payload_len;
    header.payload_checksum = frame.payload_checksum;
    x->request_id_ = header.request_id;
    x->sent_opcode_ = frame.opcode;
    x->stream_offset_ = bytes_queued_;
    x->head_.assign(proto::kHeaderSize + frame.meta.size(), '\0');
    auto* head = reinterpret_cast<uint8_t*>(x->head_.data());
    proto::EncodeFields(header, head);
    std::memcpy(head + proto::kHeaderSize, frame.meta.data(), frame.meta.size());
    Tag tag = auth_->SignNext(head, {head + proto::kHeaderSize, frame.meta.size()});
    std::memcpy(head + proto::kFieldsSize, tag.data(), tag.size());
    send_iov_.push_back(iovec{head, x->head_.size()});
    bytes_queued_ += x->head_.size();
    for (const iovec& v : frame.payload) {
      if (v.iov_len > 0) send_iov_.push_back(v);
      bytes_queued_ += v.iov_len;
    }
    // In flight from its first byte on: the window counts what the server
    // may be holding, and a response (even an early error) may follow.
    inflight_.push_back(x);
    if (x->detached_) ++detached_inflight_;
  }
  return !send_iov_.empty();
}

Status Connection::Send() {
  for (;;) {
    if (send_first_ == send_iov_.size() && !Refill()) return Status::Ok();
    msghdr msg{};
    msg.msg_iov = send_iov_.data() + send_first_;
    msg.msg_iovlen = std::min<size_t>(send_iov_.size() - send_first_, IOV_MAX);
    ssize_t n = ::sendmsg(fd_.get(), &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n >= 0) {
      ClientCounters::Add(counters_->bytes_sent, static_cast<uint64_t>(n));
      bytes_written_ += static_cast<uint64_t>(n);
      send_first_ = io::AdvanceIov(send_iov_, send_first_, static_cast<size_t>(n));
      continue;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return Status::Ok();
    return Unavailable("send to " + name_ + ": " + std::strerror(errno));
  }
}

Status Connection::Receive(bool block_first) {
  size_t budget = kReadBudgetBytes;
  // A read that came back short emptied the socket: asking again would only
  // return EAGAIN, a system call per wakeup. The poll loop reports what
  // arrives later (poll is level-triggered).
  bool drained = false;
  while (state_ != State::kFailed &&
         (state_ == State::kHandshake || !inflight_.empty() || phase_ != RecvPhase::kHeader)) {
    // Bytes already read are used whatever the budget: the poll loop waits
    // on the socket, and would not come back for them.
    if (rx_pos_ < rx_end_) {
      MEMKV_ASSIGN_OR_RETURN(size_t used, Consume(rx_buf_.get() + rx_pos_, rx_end_ - rx_pos_));
      rx_pos_ += used;
      if (rx_pos_ == rx_end_) rx_pos_ = rx_end_ = 0;
      continue;
    }
    if (budget == 0 || drained) break;
    size_t asked = 0;
    const int flags = block_first ? 0 : MSG_DONTWAIT;
    const std::span<uint8_t> in_place = InPlaceDestination();
    const ssize_t n = in_place.empty() ? ReadSocket(&asked, flags) : ReadAnswerInPlace(in_place, &asked, flags);
    block_first = false;
    if (n > 0) bytes_read_ += static_cast<uint64_t>(n);
    if (n == 0) {
      if (state_ == State::kHandshake) {
        return Unavailable("server " + name_ + " closed the connection during the Connect handshake");
      }
      return Unavailable("server " + name_ + " closed the connection with " +
                         std::to_string(inflight_.size()) + " request(s) outstanding" +
                         (phase_ != RecvPhase::kHeader || header_got_ != 0 ? ", mid-frame" : ""));
    }
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return Status::Ok();
      return Unavailable("receive from " + name_ + ": " + std::strerror(errno));
    }
    const auto got = static_cast<size_t>(n);
    ClientCounters::Add(counters_->bytes_received, got);
    if (!in_place.empty()) MEMKV_RETURN_IF_ERROR(LandAnswerInPlace(in_place, got));
    budget -= std::min(budget, got);
    drained = got < asked;
  }
  return Status::Ok();
}

ssize_t Connection::ReadSocket(size_t* asked, int flags) {
  uint64_t payload_left = 0;
  if (phase_ == RecvPhase::kPayload) {
    for (size_t i = segment_index_; i < segments_.size(); ++i) {
      payload_left += segments_[i].size - (i == segment_index_ ? segment_offset_ : 0);
    }
  }
  if (payload_left < kDirectPayloadBytes) {
    if (!rx_buf_) rx_buf_ = std::make_unique<uint8_t[]>(kReadAheadBytes);
    *asked = kReadAheadBytes;
    const ssize_t n = ::recv(fd_.get(), rx_buf_.get(), kReadAheadBytes, flags);
    if (n > 0) {
      rx_pos_ = 0;
      rx_end_ = static_cast<size_t>(n);
    }
    return n;
  }
  // Straight into the destinations: no staging buffer, no copy.
  *asked = 0;
  iovec iov[kReadIov];
  int count = 0;
  for (size_t i = segment_index_; i < segments_.size() && count < kReadIov; ++i) {
    const PayloadSegment& s = segments_[i];
    const uint64_t left = s.size - (i == segment_index_ ? segment_offset_ : 0);
    if (left == 0) continue;
    if (s.discard) {
      if (!discard_) discard_ = std::make_unique<uint8_t[]>(kDiscardBytes);
      const size_t take = static_cast<size_t>(std::min<uint64_t>(left, kDiscardBytes));
      iov[count++] = iovec{discard_.get(), take};
      *asked += take;
      if (take < left) break;  // the next iovec must start where this segment ends
    } else {
      iov[count++] = iovec{s.dst + (s.size - left), static_cast<size_t>(left)};
      *asked += static_cast<size_t>(left);
    }
  }
  msghdr msg{};
  msg.msg_iov = iov;
  msg.msg_iovlen = static_cast<size_t>(count);
  const ssize_t n = ::recvmsg(fd_.get(), &msg, flags);
  if (n > 0) AdvancePayload(static_cast<uint64_t>(n));
  return n;
}

std::span<uint8_t> Connection::InPlaceDestination() const {
  // Only with one request outstanding: no other answer can follow this
  // one's bytes, so a read of at most a header and the buffer takes nothing
  // that belongs to the next.
  if (state_ != State::kReady || inflight_.size() != 1 || phase_ != RecvPhase::kHeader || header_got_ != 0 ||
      rx_pos_ != rx_end_) {
    return {};
  }
  const Exchange* x = inflight_.front();
  return x->sent_opcode_ == proto::Opcode::kGet ? x->ExpectedDestination() : std::span<uint8_t>();
}

ssize_t Connection::ReadAnswerInPlace(std::span<uint8_t> dst, size_t* asked, int flags) {
  iovec iov[2] = {{header_.data(), header_.size()}, {dst.data(), dst.size()}};
  msghdr msg{};
  msg.msg_iov = iov;
  msg.msg_iovlen = 2;
  *asked = header_.size() + dst.size();
  return ::recvmsg(fd_.get(), &msg, flags);
}

Status Connection::LandAnswerInPlace(std::span<uint8_t> dst, size_t n) {
  header_got_ = std::min(n, header_.size());
  // A header cut short is finished through the read-ahead buffer.
  if (header_got_ < header_.size()) return Status::Ok();
  MEMKV_RETURN_IF_ERROR(OnHeader());
  const size_t landed = n - header_.size();
  size_t used = 0;
  // An Ok get (no meta, the value into the buffer): its bytes are in place.
  if (phase_ == RecvPhase::kPayload && segment_index_ < segments_.size() && segment_offset_ == 0) {
    const PayloadSegment& s = segments_[segment_index_];
    if (!s.discard && s.dst == dst.data()) {
      used = static_cast<size_t>(std::min<uint64_t>(landed, s.size));
      AdvancePayload(used);
    }
  }
  // Anything else (an error's text, a value too large for the buffer, which
  // is dropped, or bytes nobody asked for) is parsed from where it landed;
  // none of it is copied into the buffer it sits in.
  while (used < landed) {
    MEMKV_ASSIGN_OR_RETURN(size_t took, Consume(dst.data() + used, landed - used));
    if (took == 0) return ProtocolError("server " + name_ + " sent bytes past the end of its answer");
    used += took;
  }
  return Status::Ok();
}

void Connection::WaitAndReceive(Nanos deadline) {
  if (Status s = Receive(/*block_first=*/true); !s.ok()) {
    Fail(s);
    return;
  }
  // An answer may have opened the window for a queued request; the read may
  // have slept up to the deadline, so that is checked again first.
  if (CanSend() && MonotonicNanos() < deadline) OnEvents(0, /*may_send=*/true);
}

void Connection::EnableWaitInRead() {
  const int flags = ::fcntl(fd_.get(), F_GETFL, 0);
  timeval slice{0, static_cast<suseconds_t>(kWaitSliceNs / 1000)};
  wait_in_read_ = flags >= 0 && ::setsockopt(fd_.get(), SOL_SOCKET, SO_RCVTIMEO, &slice, sizeof(slice)) == 0 &&
                  ::fcntl(fd_.get(), F_SETFL, flags & ~O_NONBLOCK) == 0;
}

Result<size_t> Connection::Consume(const uint8_t* p, size_t n) {
  switch (phase_) {
    case RecvPhase::kHeader: {
      const size_t take = std::min(n, header_.size() - header_got_);
      std::memcpy(header_.data() + header_got_, p, take);
      header_got_ += take;
      if (header_got_ == header_.size()) MEMKV_RETURN_IF_ERROR(OnHeader());
      return take;
    }
    case RecvPhase::kMeta: {
      const size_t take = std::min(n, meta_.size() - meta_got_);
      std::memcpy(meta_.data() + meta_got_, p, take);
      meta_got_ += take;
      if (meta_got_ == meta_.size()) MEMKV_RETURN_IF_ERROR(OnMeta());
      return take;
    }
    case RecvPhase::kPayload: {
      // One segment at a time: AdvancePayload finishes it (and the response
      // after its last segment), so what is left belongs to the next.
      size_t used = 0;
      while (used < n && phase_ == RecvPhase::kPayload && segment_index_ < segments_.size()) {
        const PayloadSegment& s = segments_[segment_index_];
        const size_t take = static_cast<size_t>(std::min<uint64_t>(n - used, s.size - segment_offset_));
        if (!s.discard) std::memcpy(s.dst + segment_offset_, p + used, take);
        used += take;
        AdvancePayload(take);
      }
      return used;
    }
  }
  return size_t{0};
}

Status Connection::OnHeader() {
  header_got_ = 0;
  Status decoded = proto::DecodeFields(header_.data(), &rx_);
  if (!decoded.ok()) {
    if (decoded.code() == StatusCode::kUnsupportedVersion) {
      return UnsupportedVersion("server " + name_ + " answered in protocol version " +
                                std::to_string(rx_.version) + "; this client speaks 1.." +
                                std::to_string(proto::kProtocolVersion));
    }
    // Whatever DecodeFields called it, a malformed answer is a protocol error.
    return ProtocolError("malformed response from " + name_ + ": " + decoded.message());
  }
  if (!rx_.is_response()) {
    return ProtocolError("server " + name_ + " sent a frame without the response flag");
  }
  uint64_t expected_id = 0;
  auto expected_opcode = proto::Opcode::kConnect;
  if (state_ != State::kHandshake) {
    if (inflight_.empty()) return ProtocolError("server " + name_ + " sent an unsolicited response");
    expected_id = inflight_.front()->request_id_;
    expected_opcode = inflight_.front()->sent_opcode_;
  }
  if (rx_.request_id != expected_id || rx_.opcode != static_cast<uint8_t>(expected_opcode)) {
    return ProtocolError("server " + name_ + " answered request " + std::to_string(rx_.request_id) +
                         " (" + proto::OpcodeName(rx_.opcode) + ") where request " +
                         std::to_string(expected_id) + " (" +
                         proto::OpcodeName(static_cast<uint8_t>(expected_opcode)) +
                         ") was next; responses must come in request order");
  }
  if (rx_.payload_len > std::max(max_value_bytes_, proto::kMaxPayloadBytes)) {
    return ProtocolError("server " + name_ + " sent a " + std::to_string(rx_.payload_len) +
                         "-byte payload, over the value limit of " + std::to_string(max_value_bytes_) +
                         " bytes it announced at Connect");
  }
  meta_.resize(rx_.meta_len);
  meta_got_ = 0;
  if (rx_.meta_len == 0) return OnMeta();
  phase_ = RecvPhase::kMeta;
  return Status::Ok();
}

Status Connection::OnMeta() {
  phase_ = RecvPhase::kHeader;
  Tag tag;
  std::memcpy(tag.data(), header_.data() + proto::kFieldsSize, tag.size());
  if (state_ == State::kHandshake) return OnConnectResponse(tag);
  if (!auth_->VerifyNext(header_.data(), meta_, tag)) {
    std::string message = "response from " + name_ +
                          " failed tag verification (tampered, replayed, or tagged with another key)";
    if (rx_.status != StatusCode::kOk && !meta_.empty()) {
      // Unauthenticated, but usually the real reason (e.g. the server's own
      // error path); worth showing, marked as such.
      size_t n = std::min(meta_.size(), kShownErrorBytes);
      message += "; unauthenticated text: " + std::string(meta_.begin(), meta_.begin() + n);
    }
    return AuthFailed(message);
  }
  return StartPayload();
}

Status Connection::StartPayload() {
  segments_.clear();
  rx_hash_.Reset();
  segment_index_ = 0;
  segment_offset_ = 0;
  MEMKV_RETURN_IF_ERROR(inflight_.front()->OnResponse(rx_, meta_, &segments_));
  uint64_t planned = 0;
  for (const PayloadSegment& s : segments_) planned += s.size;
  if (planned != rx_.payload_len) {
    return ProtocolError("response from " + name_ + " has payload_len " + std::to_string(rx_.payload_len) +
                         " but its items account for " + std::to_string(planned) + " bytes");
  }
  if (rx_.status != StatusCode::kOk && ServerClosesAfter(rx_.status)) {
    server_closing_ = Status(rx_.status, std::string(meta_.begin(), meta_.end()));
  }
  phase_ = RecvPhase::kPayload;
  AdvancePayload(0);
  return Status::Ok();
}

void Connection::AdvancePayload(uint64_t n) {
  while (segment_index_ < segments_.size()) {
    const PayloadSegment& s = segments_[segment_index_];
    const uint64_t take = std::min(n, s.size - segment_offset_);
    // Hashed as the bytes land, while they are still in cache: in one pass
    // when the whole segment came at once (small values, read ahead), else
    // piece by piece.
    const bool whole = segment_offset_ == 0 && take == s.size;
    if (!s.discard && take > 0 && !whole) rx_hash_.Update(s.dst + segment_offset_, take);
    segment_offset_ += take;
    n -= take;
    if (segment_offset_ < s.size) return;
    if (!s.discard) {
      const bool ok = (whole ? Checksum(s.dst, s.size) : rx_hash_.Digest()) == s.checksum;
      if (!ok) ClientCounters::Add(counters_->checksum_failures, 1);
      inflight_.front()->OnSegment(s, ok);
    }
    rx_hash_.Reset();
    ++segment_index_;
    segment_offset_ = 0;
  }
  FinishResponse();
}

void Connection::FinishResponse() {
  Exchange* answered = inflight_.front();
  inflight_.pop_front();
  if (answered->detached_) {
    --detached_inflight_;
    delete answered;
  }
  segments_.clear();
  segment_index_ = 0;
  segment_offset_ = 0;
  phase_ = RecvPhase::kHeader;
}

}  // namespace memkv::client
